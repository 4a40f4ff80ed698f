"""The protocol every experiment package keeps, one list of checks turned into test ids.

In the style of scikit-learn's ``parametrize_with_checks``: each ``check_*`` function takes an experiment
package (the imported module) and raises ``AssertionError`` naming what is wrong; :data:`CHECKS` crossed
with :data:`PACKAGES` are the test ids ``test_experiment_package[<package>-<check>]``. The packages are
listed and the list is held against the subpackages of :mod:`genbound.experiments` (a new experiment
package that is not listed fails :func:`test_every_experiment_package_is_listed`). Each check is shown to
fail on a deliberately broken package written to a temporary folder
(:func:`test_each_check_fails_on_a_broken_package`).

Where a package does not keep a check today, the pair is in :data:`KNOWN_FAILURES` with the reason, and
marked ``xfail(strict=True)``: fixing the package makes the test pass unexpectedly, which fails until the
pair is removed from the list.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import inspect
import io
import pkgutil
import re
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

import genbound.experiments
from genbound.cli import build_parser, main
from genbound.experiments.runtime.paths import data_path
from genbound.experiments.runtime.results import Schema

#: The package's source folder (a constant an experiment re-exports is documented where it is defined).
GENBOUND = Path(genbound.experiments.__file__).parents[1]
#: The experiment packages of :mod:`genbound.experiments` (module names under it).
PACKAGES = ("sparse_majority", "predict_gap", "certify", "certify_lm", "bert_grid")
#: Subpackages of :mod:`genbound.experiments` that are not experiments.
NOT_EXPERIMENTS = ("runtime",)
#: The most names a package's ``__all__`` may list (its public entry points; the rest stays importable
#: from its modules).
MAX_ALL = 12
#: What the note beside a saved data file must name: the command that made it, the commit and the machine.
NOTE_COMMAND = re.compile(r"(?m)^.*\b(genbound experiment [a-z]|python3? (-m |-c |tools/))")
NOTE_COMMIT = re.compile(r"\bcommits?\b[^\n]{0,80}?\b[0-9a-f]{7,40}\b", re.IGNORECASE)
NOTE_MACHINE = re.compile(r"\bmachine\b|\bCPU\b|Xeon|EPYC", re.IGNORECASE)


# --------------------------------------------------------------------------- what a package holds


def package_root(pkg: ModuleType) -> Path:
    return Path(pkg.__file__).parent


def submodules(pkg: ModuleType) -> list[ModuleType]:
    """The package and every module in it (imported), ``__main__`` left out (it runs a command)."""
    out = [pkg]
    for info in pkgutil.iter_modules([str(package_root(pkg))], pkg.__name__ + "."):
        if not info.name.endswith(".__main__"):
            out.append(importlib.import_module(info.name))
    return out


def sources(pkg: ModuleType) -> dict[str, Path]:
    """``{module name: source file}`` of the package's modules (``__init__`` as the package's name)."""
    root = package_root(pkg)
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join([pkg.__name__, *parts])] = path
    return out


def imports_from(module: str, path: Path) -> list[tuple[str, str, int]]:
    """``(imported module, imported name, line)`` of every ``from ... import`` in a source file,
    top-level and inside functions, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = module.split(".")
            if not is_package:
                base = base[:-1]
            base = base[: len(base) - (node.level - 1)]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        out += [(mod, a.name, node.lineno) for a in node.names]
    return out


def documented_constants(paths) -> set[str]:
    """Names assigned right below a ``#:`` comment (Sphinx's attribute documentation) in ``paths``."""
    out = set()
    for path in paths:
        lines = path.read_text(encoding="utf-8").splitlines()
        for prev, line in zip(lines, lines[1:]):
            if prev.lstrip().startswith("#:"):
                m = re.match(r"^([A-Za-z_][\w\s,]*?)\s*(?::[^=]*)?=", line)
                if m:
                    out |= {t.strip() for t in m.group(1).split(",") if t.strip()}
    return out


def saved_data_files(pkg: ModuleType) -> set[Path]:
    """The saved data the package reads: every module-level path under ``genbound/data/`` of its modules,
    and every file name (alone or in a tuple) that names a file there."""
    data = data_path()
    out = set()
    for mod in submodules(pkg):
        for name, value in vars(mod).items():
            if name.startswith("__"):
                continue
            values = value if isinstance(value, tuple) else (value,)
            for v in values:
                if isinstance(v, Path) and v != data and data in v.parents:
                    out.add(v)
                elif isinstance(v, str) and re.fullmatch(r"[\w.-]+\.(csv|npz|json)", v):
                    if (data / v).exists():
                        out.add(data / v)
    return out


def note_of(path: Path) -> Path | None:
    """The note beside a saved data file: ``NAME.md``, else the ``PREFIX.md`` of the longest prefix of
    its name (``certify_lm_xxl.csv`` -> ``certify_lm.md``); a file in a subfolder of the data folder
    takes the subfolder's note."""
    data = data_path()
    top = path.relative_to(data).parts[0] if data in path.parents else path.name
    stem = Path(top).stem
    parts = stem.split("_")
    for k in range(len(parts), 0, -1):
        note = path.parent.__class__(data / ("_".join(parts[:k]) + ".md"))
        if note.exists():
            return note
    return None


# --------------------------------------------------------------------------- the checks


def check_short_all(pkg: ModuleType) -> None:
    """A short ``__all__`` (at most :data:`MAX_ALL` names), every name in it defined."""
    names = getattr(pkg, "__all__", None)
    assert names is not None, f"{pkg.__name__} has no __all__"
    assert len(names) == len(set(names)), f"{pkg.__name__}.__all__ lists a name twice"
    missing = [n for n in names if not hasattr(pkg, n)]
    assert not missing, f"{pkg.__name__}.__all__ names what it does not define: {missing}"
    assert len(names) <= MAX_ALL, (
        f"{pkg.__name__}.__all__ lists {len(names)} names (at most {MAX_ALL}: its public entry points; "
        f"the rest stays importable from its modules)"
    )


def _has_own_doc(obj) -> bool:
    doc = inspect.getdoc(obj) or ""
    if inspect.isclass(obj) and doc.startswith(f"{obj.__name__}("):  # a dataclass's generated text
        return False
    return bool(doc.strip())


def check_all_documented(pkg: ModuleType) -> None:
    """Every name of ``__all__`` documented: a function or class by its own docstring, a constant by a
    ``#:`` comment where it is assigned (in the package, or in the genbound module it comes from)."""
    names = [n for n in getattr(pkg, "__all__", ()) if hasattr(pkg, n)]
    consts = documented_constants([*sources(pkg).values(), *GENBOUND.rglob("*.py")])
    bad = []
    for n in names:
        obj = getattr(pkg, n)
        if inspect.isclass(obj) or inspect.isroutine(obj):
            if not _has_own_doc(obj):
                bad.append(n)
        elif n not in consts:
            bad.append(n)
    assert not bad, f"{pkg.__name__}: undocumented names in __all__: {bad}"


def _subcommand(pkg: ModuleType) -> str:
    """The one ``genbound experiment`` subcommand that the package's ``_cli.add_<name>`` registers."""
    short = pkg.__name__.rsplit(".", 1)[-1]
    try:
        cli = importlib.import_module(pkg.__name__ + "._cli")
    except ModuleNotFoundError:
        raise AssertionError(f"{pkg.__name__} has no _cli module") from None
    add = getattr(cli, f"add_{short}", None)
    assert callable(add), f"{cli.__name__} defines no add_{short}(psub)"
    sub = argparse.ArgumentParser().add_subparsers()
    add(sub)
    names = list(sub.choices)
    assert len(names) == 1, (
        f"{cli.__name__}.add_{short} registers {len(names)} subcommands: {names}"
    )
    return names[0]


def check_one_subcommand(pkg: ModuleType) -> None:
    """Its ``_cli`` module registers exactly one subcommand, ``genbound experiment`` lists it, and its
    ``--help`` prints a usage and exits 0."""
    name = _subcommand(pkg)
    parser = build_parser("experiment")
    experiment = parser._subparsers._group_actions[0].choices["experiment"]
    listed = experiment._subparsers._group_actions[0].choices
    assert name in listed, (
        f"genbound experiment does not list {name!r} (register it in genbound/experiments/_cli.py)"
    )
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["experiment", name, "--help"])
        except SystemExit as exc:
            code = exc.code
    assert code in (0, None), f"genbound experiment {name} --help: exit {code}, {err.getvalue()}"
    assert out.getvalue().startswith("usage: genbound experiment " + name), out.getvalue()[:200]


def check_results_files(pkg: ModuleType) -> None:
    """Its results files go through :mod:`genbound.experiments.runtime.results` (a module-level
    ``Schema``) and record the machine (a call of ``environment()`` of the runtime floor)."""
    schemas = [
        f"{m.__name__}.{n}"
        for m in submodules(pkg)
        for n, v in vars(m).items()
        if isinstance(v, Schema)
    ]
    assert schemas, (
        f"{pkg.__name__} defines no results-file Schema (genbound.experiments.runtime.results)"
    )
    calls = []
    for module, path in sources(pkg).items():
        runtime_names = {
            name
            for mod, name, _ in imports_from(module, path)
            if mod.startswith("genbound.experiments.runtime") and name == "environment"
        }
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls += [
            module
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in runtime_names
        ]
    assert calls, (
        f"{pkg.__name__} never calls the runtime floor's environment() (the machine record)"
    )


def check_no_private_imports(pkg: ModuleType) -> None:
    """It imports no underscored name from another package (top-level or inside functions)."""
    bad = []
    for module, path in sources(pkg).items():
        for mod, name, line in imports_from(module, path):
            inside = mod == pkg.__name__ or mod.startswith(pkg.__name__ + ".")
            if name.startswith("_") and not name.startswith("__") and not inside:
                bad.append(f"{path.name}:{line} {name} from {mod}")
    assert not bad, f"{pkg.__name__} imports underscored names of other packages: {bad}"


def check_saved_data_noted(pkg: ModuleType) -> None:
    """Its saved data files exist, each with a note (``.md``) beside it that names the command, the
    commit and the machine."""
    files = saved_data_files(pkg)
    assert files, f"{pkg.__name__} names no saved data file under genbound/data/"
    bad = []
    for f in sorted(files):
        if not f.exists():
            bad.append(f"{f.name}: missing")
            continue
        note = note_of(f)
        if note is None:
            bad.append(f"{f.name}: no .md beside it")
            continue
        text = note.read_text(encoding="utf-8")
        lacks = [
            what
            for what, rx in (
                ("command", NOTE_COMMAND),
                ("commit", NOTE_COMMIT),
                ("machine", NOTE_MACHINE),
            )
            if not rx.search(text)
        ]
        if lacks:
            bad.append(f"{f.name}: {note.name} names no {', '.join(lacks)}")
    assert not bad, f"{pkg.__name__}: {bad}"


#: The protocol, in order.
CHECKS = (
    check_short_all,
    check_all_documented,
    check_one_subcommand,
    check_results_files,
    check_no_private_imports,
    check_saved_data_noted,
)

#: ``(package, check) -> reason``: what a package does not keep today (each marked xfail, strict).
KNOWN_FAILURES = {
    ("sparse_majority", "check_short_all"): "__all__ lists 75 names (the package's whole surface)",
    ("predict_gap", "check_short_all"): "__all__ lists 82 names (the package's whole surface)",
    ("bert_grid", "check_results_files"): "the grid's saved data is a compressed .npz of spectra "
    "(metrics.json per model with environment()), not a results file; it must stay byte-identical",
    ("sparse_majority", "check_no_private_imports"): "files.py imports _atomic_create, _fmt, "
    "_header_text of runtime.results; verify.py _show of runtime.machine",
    ("predict_gap", "check_saved_data_noted"): "predict_gap_pilots/ has no note and "
    "predict_gap_earlier_family_moves.md (made by a tools script) names no machine; files under "
    "genbound/data/ are not edited here",
}


def _params():
    out = []
    for name in PACKAGES:
        for check in CHECKS:
            marks = ()
            reason = KNOWN_FAILURES.get((name, check.__name__))
            if reason:
                marks = (pytest.mark.xfail(reason=reason, strict=True, raises=AssertionError),)
            out.append(pytest.param(name, check, id=f"{name}-{check.__name__}", marks=marks))
    return out


@pytest.mark.parametrize("name, check", _params())
def test_experiment_package(name, check):
    check(importlib.import_module(f"genbound.experiments.{name}"))


def test_every_experiment_package_is_listed():
    found = {
        i.name
        for i in pkgutil.iter_modules(genbound.experiments.__path__)
        if i.ispkg and i.name not in NOT_EXPERIMENTS
    }
    assert found == set(PACKAGES)


def test_known_failures_name_real_pairs():
    checks = {c.__name__ for c in CHECKS}
    assert all(p in PACKAGES and c in checks for p, c in KNOWN_FAILURES)


# --------------------------------------------------------------------------- every check can fail

BROKEN = {
    "__init__.py": '''
        """A deliberately broken experiment package."""
        from .config import Config, helper
        from . import files
        __all__ = ["Config", "helper", "LIMIT", "missing"] + [f"name{i}" for i in range(20)]
        LIMIT = 3
        ''',
    "config.py": """
        from dataclasses import dataclass
        from genbound.experiments.runtime.results import _fmt
        @dataclass
        class Config:
            steps: int = 1
        def helper():
            return _fmt
        """,
    "files.py": """
        from pathlib import Path
        from genbound.experiments.runtime.paths import data_path
        SAVED = data_path("fake_exp_never_saved.csv")
        environment = dict
        RECORD = environment()
        """,
    "_cli.py": """
        def add_fake_exp(psub):
            psub.add_parser("fake-one")
            psub.add_parser("fake-two")
        """,
}


_counter = iter(range(10**6))


def make_package(tmp_path, monkeypatch, files: dict) -> ModuleType:
    """A package ``fake_exp`` written from ``{file name: source}`` into a fresh folder, imported."""
    folder = tmp_path / f"p{next(_counter)}"
    root = folder / "fake_exp"
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    for name in [m for m in sys.modules if m == "fake_exp" or m.startswith("fake_exp.")]:
        del sys.modules[name]
    monkeypatch.syspath_prepend(str(folder))
    return importlib.import_module("fake_exp")


@pytest.fixture
def broken_package(tmp_path, monkeypatch):
    yield make_package(tmp_path, monkeypatch, BROKEN)
    for name in [m for m in sys.modules if m == "fake_exp" or m.startswith("fake_exp.")]:
        del sys.modules[name]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_each_check_fails_on_a_broken_package(check, broken_package):
    with pytest.raises(AssertionError):
        check(broken_package)


#: One fault at a time: ``(check, files replaced in BROKEN, what the failure says)``.
FAULTS = [
    (
        check_short_all,
        {
            "__init__.py": "__all__ = [f'n{i}' for i in range(13)]\nfor _n in __all__: globals()[_n] = 1\n"
        },
        "lists 13 names",
    ),
    (
        check_results_files,
        {
            "files.py": """
            from genbound.experiments.runtime.results import Schema
            SCHEMA = Schema("fake", (("n", int),), key=("n",))
            """
        },
        "never calls the runtime floor's environment",
    ),
    (
        check_saved_data_noted,
        {"files.py": "from genbound.experiments.runtime.paths import data_path\n"},
        "names no saved data file",
    ),
    (
        check_one_subcommand,
        {"_cli.py": "def add_fake_exp(psub):\n    psub.add_parser('fake-one')\n"},
        "does not list 'fake-one'",
    ),
    (
        check_one_subcommand,
        {"_cli.py": "def add_other(psub):\n    pass\n"},
        "defines no add_fake_exp",
    ),
]


@pytest.mark.parametrize(
    "check, files, said", FAULTS, ids=[f"{c.__name__}-{i}" for i, (c, _, _) in enumerate(FAULTS)]
)
def test_each_fault_is_named(check, files, said, broken_package, tmp_path, monkeypatch):
    pkg = make_package(tmp_path, monkeypatch, {**BROKEN, **files})
    with pytest.raises(AssertionError, match=re.escape(said)):
        check(pkg)


def test_a_saved_file_without_a_note_fails(monkeypatch):
    """A saved data file with no .md beside it, or a note that names no machine, fails."""
    pkg = importlib.import_module("genbound.experiments.certify_lm")
    monkeypatch.setitem(globals(), "note_of", lambda path: None)
    with pytest.raises(AssertionError, match="no .md beside it"):
        check_saved_data_noted(pkg)
    monkeypatch.setitem(globals(), "NOTE_MACHINE", re.compile("no machine named like this"))
    monkeypatch.setitem(globals(), "note_of", lambda path: data_path("certify_lm.md"))
    with pytest.raises(AssertionError, match="names no machine"):
        check_saved_data_noted(pkg)
