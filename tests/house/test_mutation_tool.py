"""The scope of ``tools/mutation.py``: numeric code is drawn from; validation, messages and the
conformance fixtures (``examples()``, ``_example*``) are not."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("mutation_tool", ROOT / "tools" / "mutation.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


SOURCE = """
import math


def value(x):
    if x < 0:
        raise ValueError("x must be >= 0")
    return math.sqrt(x) * 2.0 + 1.0


def _example_inputs(seed):
    return [seed * 2.0, seed + 1.0]


class Result:
    @classmethod
    def examples(cls):
        return [value(4.0) * 3.0]
"""


def test_sites_skip_guards_and_fixtures(tmp_path, monkeypatch):
    tool = _tool()
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    path = tmp_path / "mod.py"
    path.write_text(SOURCE, encoding="utf-8")
    sites = tool.enumerate_sites(path)
    lines = {s.line for s in sites}
    body = SOURCE.splitlines()
    value_line = next(i for i, t in enumerate(body, 1) if "math.sqrt(x)" in t)
    assert value_line in lines  # the computation is drawn from
    fixture_lines = {i for i, t in enumerate(body, 1) if "seed" in t or "value(4.0)" in t}
    assert not (lines & fixture_lines), "a conformance fixture was drawn from"
    guard_line = next(i for i, t in enumerate(body, 1) if "if x < 0" in t)
    assert guard_line not in lines  # `if bad: raise` is validation


def test_targeted_table_matches_the_sources():
    """Every edit of the targeted set (``tools/mutation.py --targeted``) finds its text exactly once, and each
    entry has every factor of ``TARGETED_FACTORS`` (the sources and the table move together)."""
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("mutation_tool", root / "tools" / "mutation.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    for name, edits in mod.TARGETED:
        for file, old, new in edits:
            assert (root / file).read_text().count(old) == 1, (name, file, old)
            assert "{f}" in new, (name, file)
    sites = mod.targeted_sites()
    assert len(sites) == len(mod.TARGETED) * len(mod.TARGETED_FACTORS)
