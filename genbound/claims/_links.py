"""Links of the claims index: label -> statement in the chapter, label -> API entry, row anchors.

The book's claims index (``book/claims_index.md``) builds one :class:`pandas.DataFrame` of claims (one
row per claim, with at least the columns ``label`` and ``chapter``) and renders it with
:func:`claims_index_html`. Each row gets the anchor ``claim-<label>`` (the "claim" link in the title bar
of every statement points there), its label links to the statement (``<chapter>.html#<label>``, the id
sphinx-proof gives the block), and a ``code`` column links the API entries of the public functions
whose docstrings cite the label with ``:prf:ref:`` (see :func:`implementing_objects`).

All links are relative to the index page, so they work in the built site wherever it is served.
"""

from __future__ import annotations

import html
import importlib
import inspect
import pkgutil
import posixpath
import re
from functools import lru_cache
from ..errors import ParameterError

__all__ = ["page_href", "statement_href", "api_href", "implementing_objects", "claims_index_html"]

INDEX_PAGE = "book/claims_index.md"
API_PAGE = "book/api.md"
_PRF_REF = re.compile(r":prf:ref:`([\w-]+)`")
# modules whose objects are not implementations of book statements (the checks themselves, the CLI)
_SKIP = ("genbound.claims", "genbound.cli")


def page_href(target: str, *, from_page: str = INDEX_PAGE) -> str:
    """Relative URL of the HTML page built from the book file ``target``, seen from ``from_page``.

    >>> page_href("book/part1/rademacher.md")
    'part1/rademacher.html'
    >>> page_href("book/api.md", from_page="book/part1/rademacher.md")
    '../api.html'
    """
    rel = posixpath.relpath(posixpath.splitext(target)[0], posixpath.dirname(from_page))
    return rel + ".html"


def statement_href(label: str, chapter: str, *, from_page: str = INDEX_PAGE) -> str:
    """URL of the statement ``label`` in ``chapter`` (sphinx-proof gives the block the id ``label``).

    >>> statement_href("lem-mcdiarmid", "book/part1/rademacher.md")
    'part1/rademacher.html#lem-mcdiarmid'
    """
    return f"{page_href(chapter, from_page=from_page)}#{label}"


def api_href(qualname: str, *, is_module: bool = False, from_page: str = INDEX_PAGE) -> str:
    """URL of an API entry of ``book/api.md``: ``#<qualname>``, or ``#module-<qualname>`` for a module.

    >>> api_href("genbound.covering.allocate_scales")
    'api.html#genbound.covering.allocate_scales'
    """
    anchor = f"module-{qualname}" if is_module else qualname
    return f"{page_href(API_PAGE, from_page=from_page)}#{anchor}"


def _public_modules() -> list[str]:
    import genbound

    names = []
    for mod in pkgutil.walk_packages(genbound.__path__, prefix="genbound."):
        parts = mod.name.split(".")
        if any(p.startswith("_") for p in parts) or mod.name.startswith(_SKIP):
            continue
        names.append(mod.name)
    return sorted(names)


def _documented_name(module: str, attr: str, obj) -> str:
    """Where the API page documents ``obj``: the shallowest package below ``genbound`` that re-exports
    it in its ``__all__`` (a subpackage split into modules, e.g. ``experiments.sparse_majority``), else
    its own module. A package whose API section documents each module (``__api_by_module__ = True``,
    as ``genbound.analysis``) is passed over."""
    parts = module.split(".")
    for k in range(2, len(parts)):
        pkg = importlib.import_module(".".join(parts[:k]))
        if getattr(pkg, "__api_by_module__", False):
            continue
        if attr in getattr(pkg, "__all__", ()) and getattr(pkg, attr, None) is obj:
            return f"{pkg.__name__}.{attr}"
    return f"{module}.{attr}"


@lru_cache(maxsize=None)
def _citations() -> dict[str, tuple[tuple[str, bool], ...]]:
    out: dict[str, list[tuple[str, bool]]] = {}
    for name in _public_modules():
        module = importlib.import_module(name)
        objs = [(name, module, True)]
        for attr, obj in vars(module).items():
            if attr.startswith("_") or getattr(obj, "__module__", None) != name:
                continue
            if inspect.isfunction(obj) or inspect.isclass(obj):
                objs.append((_documented_name(name, attr, obj), obj, False))
        for qualname, obj, is_module in objs:
            for label in dict.fromkeys(_PRF_REF.findall(inspect.getdoc(obj) or "")):
                out.setdefault(label, []).append((qualname, is_module))
    return {k: tuple(v) for k, v in out.items()}


def implementing_objects(label: str) -> list[tuple[str, bool]]:
    """``(qualname, is_module)`` of the public objects whose docstrings cite ``label`` with ``:prf:ref:``.

    Functions and classes come first; a module is listed only when no function or class of any module
    cites the label (a module docstring that names a theorem it is built around). An empty list means
    that no public function implements the statement: it is checked by its claim only (a textbook fact
    such as McDiarmid's inequality, used in a proof but not computed).

    >>> [q for q, _ in implementing_objects("lem-allocation")]
    ['genbound.covering.allocate_scales']
    """
    found = list(_citations().get(label, ()))
    objects = [f for f in found if not f[1]]
    return objects or [f for f in found if f[1]]


def _esc(value) -> str:
    return html.escape(str(value), quote=True)


def _code_cell(label: str, from_page: str) -> str:
    objs = implementing_objects(label)
    if not objs:
        return '<span class="check-only" title="no function implements it; the claim checks it">check only</span>'
    links = []
    for qualname, is_module in objs:
        short = qualname.removeprefix("genbound.")
        text = short if is_module else short.rsplit(".", 1)[-1] + "()"
        links.append(
            f'<a href="{_esc(api_href(qualname, is_module=is_module, from_page=from_page))}" '
            f'title="{_esc(qualname)}"><code>{_esc(text)}</code></a>'
        )
    return ", ".join(links)


def claims_index_html(
    table,
    *,
    formats: dict | None = None,
    numeric: tuple[str, ...] = (),
    from_page: str = INDEX_PAGE,
) -> str:
    """The claims table as HTML, with links both ways.

    ``table`` is a DataFrame with one row per claim and at least the columns ``label`` and ``chapter``.
    The ``label`` cell becomes a link to the statement, the ``chapter`` column is dropped (the link
    carries it; it is the link's tooltip), a ``code`` column with links to the implementing API entries
    is inserted after ``label``, and each row gets ``id="claim-<label>"``. Headers show ``_`` as spaces
    (so that they can wrap). Other cells are escaped text,
    formatted with ``formats[column]`` (a format string) when given; ``numeric`` columns are right-aligned.

    >>> import pandas as pd
    >>> t = pd.DataFrame([{"label": "lem-allocation", "chapter": "book/part1/covering.md", "worst_ratio": 0.5}])
    >>> out = claims_index_html(t, formats={"worst_ratio": "{:.2f}"})
    >>> 'id="claim-lem-allocation"' in out, 'href="part1/covering.html#lem-allocation"' in out
    (True, True)
    >>> 'href="api.html#genbound.covering.allocate_scales"' in out, "<td>0.50</td>" in out
    (True, True)
    """

    missing = {"label", "chapter"} - set(table.columns)
    if missing:
        raise ParameterError(f"claims table lacks the column(s) {sorted(missing)}")
    formats = dict(formats or {})
    columns = [c for c in table.columns if c != "chapter"]
    columns.insert(columns.index("label") + 1, "code")
    head = "".join(
        f"<th>{_esc(c.replace('_', ' '))}</th>" for c in columns
    )  # headers wrap at spaces
    rows = []
    for rec in table.to_dict("records"):
        label, chapter = rec["label"], rec["chapter"]
        cells = []
        for col in columns:
            if col == "label":
                cells.append(
                    f'<td><a href="{_esc(statement_href(label, chapter, from_page=from_page))}" '
                    f'title="{_esc(chapter)}">{_esc(label)}</a></td>'
                )
            elif col == "code":
                cells.append(f"<td>{_code_cell(label, from_page)}</td>")
            else:
                value = rec[col]
                text = formats[col].format(value) if col in formats else value
                cls = ' class="num"' if col in numeric else ""
                cells.append(f"<td{cls}>{_esc(text)}</td>")
        rows.append(f'<tr id="claim-{_esc(label)}">{"".join(cells)}</tr>')
    return (
        f'<table class="genbound-claims"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
