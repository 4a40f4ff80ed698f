"""What the hostile tests share: run a call in a thread and fail, instead of hanging, when it blocks
(a FIFO, a lock, a device file)."""

from __future__ import annotations

import threading


def in_thread(fn, timeout: float = 10.0) -> dict:
    """Run ``fn`` in a daemon thread; ``{"value": ...}`` or ``{"error": exc}``; fail if still running."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "blocked"
    return box
