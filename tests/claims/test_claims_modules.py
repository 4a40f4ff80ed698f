"""One claims module per chapter, named after it.

Every public module of :mod:`genbound.claims` that registers claims registers claims of one chapter only,
``book/part<N>/<chapter>.md``, and is named ``part<N>_<chapter>``; every registered claim is made by one of
them. What the modules of a part share lives in an underscored module (``_part<N>``), which registers none.
The modules are read with :mod:`ast` (the ``chapter=`` of each ``Claim(...)``, resolved in the imported
module), so the test needs no claim to run.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import genbound.claims as C

_NAME = re.compile(r"^book/part(\d+)/(\w+)\.md$")


def claims_made(module) -> dict[str, str]:
    """``label -> chapter`` of every ``Claim(label=..., chapter=...)`` written in ``module``'s source."""
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Claim":
            kw = {k.arg: k.value for k in node.keywords}
            label = ast.literal_eval(kw["label"])
            ch = kw["chapter"]
            out[label] = ch.value if isinstance(ch, ast.Constant) else getattr(module, ch.id)
    return out


def module_of_chapter(chapter: str) -> str:
    """``book/part2/tt_covers.md`` -> ``part2_tt_covers``."""
    m = _NAME.match(chapter)
    assert m, f"chapter path {chapter!r} is not book/part<N>/<name>.md"
    return f"part{m.group(1)}_{m.group(2)}"


def claims_modules() -> dict[str, object]:
    return {
        m.name: importlib.import_module(f"genbound.claims.{m.name}")
        for m in pkgutil.iter_modules(C.__path__)
    }


def layout_problems(modules: dict[str, object]) -> tuple[list[str], dict[str, str]]:
    """``(problems, label -> module)`` of the claims modules ``modules`` (name -> module)."""
    made, bad = {}, []
    for name, mod in sorted(modules.items()):
        labels = claims_made(mod)
        if name.startswith("_"):
            if labels:
                bad.append(f"{name} (shared) registers {sorted(labels)}")
            continue
        chapters = set(labels.values())
        if len(chapters) > 1:
            bad.append(f"{name} covers {len(chapters)} chapters: {sorted(chapters)}")
        for ch in sorted(chapters):
            if module_of_chapter(ch) != name:
                bad.append(
                    f"{name} registers claims of {ch}: they belong in {module_of_chapter(ch)}"
                )
        for label in labels:
            if label in made:
                bad.append(f"{label} made in {made[label]} and {name}")
            made[label] = name
    return bad, made


def test_each_claims_module_covers_one_chapter_and_is_named_after_it():
    bad, made = layout_problems(claims_modules())
    assert not bad, bad
    registered = {c.label: c.chapter for c in C.all_claims()}
    assert set(made) == set(registered), sorted(set(made) ^ set(registered))
    assert len(made) >= 70


def test_the_check_fails_on_planted_modules(tmp_path):
    """The check can fail: a module with claims of two chapters, one named after another chapter, a shared
    module that registers a claim, and a label made twice are each reported."""
    import types

    def fake(name, src, **consts):
        path = tmp_path / f"{name}.py"
        path.write_text(src, encoding="utf-8")
        mod = types.ModuleType(name)
        mod.__file__ = str(path)
        for k, v in consts.items():
            setattr(mod, k, v)
        return mod

    two = fake(
        "part2_tt_covers",
        'register(Claim(label="a", chapter=CH))\n'
        'register(Claim(label="b", chapter="book/part2/single_layer.md"))\n',
        CH="book/part2/tt_covers.md",
    )
    misnamed = fake(
        "trauger_tewari",
        'register(Claim(label="c", chapter=CH_SINGLE))\n',
        CH_SINGLE="book/part2/single_layer.md",
    )
    shared = fake("_part2", 'register(Claim(label="d", chapter="book/part2/tt_covers.md"))\n')
    again = fake(
        "part2_single_layer", 'register(Claim(label="a", chapter="book/part2/single_layer.md"))\n'
    )
    bad, made = layout_problems({m.__name__: m for m in (two, misnamed, shared, again)})
    assert sorted(bad) == [
        "_part2 (shared) registers ['d']",
        "a made in part2_single_layer and part2_tt_covers",
        "part2_tt_covers covers 2 chapters: ['book/part2/single_layer.md', 'book/part2/tt_covers.md']",
        "part2_tt_covers registers claims of book/part2/single_layer.md: they belong in part2_single_layer",
        "trauger_tewari registers claims of book/part2/single_layer.md: they belong in part2_single_layer",
    ]
    good = fake(
        "part2_single_layer",
        'register(Claim(label="e", chapter=CH))\n',
        CH="book/part2/single_layer.md",
    )
    assert layout_problems({"part2_single_layer": good}) == ([], {"e": "part2_single_layer"})
