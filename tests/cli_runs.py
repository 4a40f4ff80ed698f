"""``genbound``'s command line run in this process, its output captured (one helper for the test files that
read what a command prints)."""

import contextlib
import io

from genbound import cli


def run_cli(argv) -> tuple[int, str, str]:
    """``genbound ARGV`` in this process: ``(exit code, standard output, standard error)``."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(argv)
    return rc, out.getvalue(), err.getvalue()
