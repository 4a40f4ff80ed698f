"""Sphinx extension of the genbound book: executed notebooks and claim links on every page.

Loaded by ``_config.yml`` (``sphinx.local_extensions``). It does three things, for the HTML builder only:

* **Executed notebooks.** MyST-NB writes every executed chapter, with its outputs, to
  ``_build/jupyter_execute/<docname>.ipynb``. At the end of the build they are copied into the site as
  ``_build/html/_notebooks/<docname>.ipynb``; each such page gets a line under its title linking the
  file, and the theme's download menu gets a ``.ipynb (executed)`` entry.
* **Statement -> claim row.** Every ``{prf:lemma}``, ``{prf:theorem}``, ``{prf:corollary}`` and
  ``{prf:proposition}`` whose label is a claim in :mod:`genbound.claims` gets a "claim" link in its title
  bar, to the row ``#claim-<label>`` of the claims index (the row anchors come from
  :func:`genbound.claims._links.claims_index_table`). A statement of those kinds without a claim is a
  warning, so ``-W`` fails.
* **CSS** (``tools/static/genbound.css``): the two links above and the claims table.

It also drops repeated ``<script>`` tags (see :func:`dedupe_scripts`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from docutils import nodes
from sphinx.util import logging
from sphinx.util.osutil import relative_uri

logger = logging.getLogger(__name__)

NOTEBOOK_DIR = "_notebooks"
CLAIM_KINDS = ("lemma", "theorem", "corollary", "proposition")
STATIC = Path(__file__).resolve().parent / "static"


def executed_notebook(app, docname: str) -> Path | None:
    """The notebook MyST-NB executed for ``docname`` (with outputs), or ``None`` if it is no notebook."""
    path = Path(app.outdir).parent / "jupyter_execute" / f"{docname}.ipynb"
    return path if path.is_file() else None


def notebook_uri(docname: str) -> str:
    """Site-relative path of the executed notebook of ``docname``: ``_notebooks/<docname>.ipynb``."""
    return f"{NOTEBOOK_DIR}/{docname}.ipynb"


def _is_html(app) -> bool:
    return getattr(app.builder, "format", "") == "html"


def _claim_labels(app) -> set[str]:
    if not hasattr(app.env, "genbound_claim_labels"):
        from genbound import claims

        app.env.genbound_claim_labels = set(claims.labels())
    return app.env.genbound_claim_labels


def add_notebook_line(app, doctree, docname: str) -> None:
    """Insert "this page as an executed notebook" under the page title."""
    if executed_notebook(app, docname) is None:
        return
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None or not isinstance(section[0], nodes.title):
        return
    page = app.builder.get_target_uri(docname)
    href = relative_uri(page, notebook_uri(docname))
    name = Path(docname).name
    para = nodes.paragraph(classes=["genbound-notebook-link"])
    para += nodes.Text("Run this page: ")
    ref = nodes.reference("", "", internal=False, refuri=href, classes=["genbound-download"])
    ref += nodes.literal(text=f"{name}.ipynb")
    para += ref
    para += nodes.Text(" is the notebook this build executed, with its outputs (")
    intro = relative_uri(page, app.builder.get_target_uri(app.config.genbound_intro_page))
    para += nodes.reference(
        "", "how to open it", internal=True, refuri=f"{intro}#{app.config.genbound_notebook_anchor}"
    )
    para += nodes.Text(").")
    section.insert(1, para)


def add_claim_links(app, doctree, docname: str) -> None:
    """Put a link to the claim's row of the claims index in the title bar of each claimed statement."""
    labels = _claim_labels(app)
    index_page = app.config.genbound_claims_page
    page = app.builder.get_target_uri(docname)
    index_uri = relative_uri(page, app.builder.get_target_uri(index_page))
    for node in doctree.findall(nodes.Element):
        if node.get("realtype") not in CLAIM_KINDS or not node.get("label"):
            continue
        label = node["label"]
        if label not in labels:
            logger.warning(
                f"prf:{node['realtype']} {label!r} has no claim in genbound.claims", location=node
            )
            continue
        title = next(iter(node.findall(nodes.title)), None)
        if title is None:
            continue
        ref = nodes.reference(
            "",
            "",
            internal=True,
            refuri=f"{index_uri}#claim-{label}",
            reftitle=f"the executable claim {label} in the claims index",
        )
        ref += nodes.Text("claim \u2197")
        title += nodes.inline("", "", ref, classes=["genbound-claim-link"])


def on_doctree_resolved(app, doctree, docname: str) -> None:
    if not _is_html(app):
        return
    add_notebook_line(app, doctree, docname)
    add_claim_links(app, doctree, docname)


def add_download_entry(app, pagename, templatename, context, doctree) -> None:
    """Add ``.ipynb (executed)`` at the top of the theme's download menu."""
    if doctree is None or executed_notebook(app, pagename) is None:
        return
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            group["buttons"].insert(
                0,
                {
                    "type": "link",
                    "url": context["pathto"](notebook_uri(pagename), 1),
                    "text": ".ipynb (executed)",
                    "tooltip": "Download the executed notebook of this page",
                    "icon": "fas fa-code",
                    "label": "download-executed-notebook-button",
                },
            )


def dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    """Drop repeated ``<script>`` entries.

    sphinx-thebe adds its inline configuration (``const THEBE_JS_URL = ...``) at every
    ``env-before-read-docs``, which Jupyter Book emits twice; the second copy is a JavaScript error
    ("Identifier 'THEBE_JS_URL' has already been declared") on every page.
    """
    seen, kept = set(), []
    for js in context.get("script_files") or []:
        attrs = getattr(js, "attributes", {}) or {}
        # the second copy has filename "" where the first has None
        key = (str(getattr(js, "filename", js) or ""), attrs.get("body"), attrs.get("src"))
        if key not in seen:  # same file or same inline body: the same script
            seen.add(key)
            kept.append(js)
    if kept:
        context["script_files"] = kept


def cache_dir(app) -> Path | None:
    """The jupyter-cache folder of ``execute_notebooks: cache`` (``None`` when there is none)."""
    configured = getattr(app.config, "nb_execution_cache_path", "") or ""
    for cand in ([Path(app.srcdir) / configured] if configured else []) + [
        Path(app.outdir).parent / ".jupyter_cache"
    ]:
        if cand.is_dir():
            return cand
    return None


def executed_copy(src: Path, dst: Path, cache: Path | None) -> str:
    """Copy the notebook ``src`` to ``dst`` with its outputs; returns ``"executed"`` or ``"cache"``.

    MyST-NB 1.4 writes ``jupyter_execute/<doc>.ipynb`` from the notebook *before* the cached outputs are
    merged in, so on a cache hit (``make book`` after an edit elsewhere) the file has no outputs and no
    execution counts, although the page shows the outputs. Such a notebook is merged with its cache
    record here (jupyter-cache matches it by its code), so the linked file is the executed notebook.
    Raises ``RuntimeError`` when a notebook was not executed and has no cache record.
    """
    import nbformat

    nb = nbformat.read(str(src), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    if all(c.get("execution_count") is not None for c in code):
        shutil.copy2(src, dst)
        return "executed"
    if cache is None:
        raise RuntimeError(
            f"{src}: not executed, and there is no jupyter-cache to take its outputs from"
        )
    from jupyter_cache import get_cache

    try:
        _, merged = get_cache(str(cache)).merge_match_into_notebook(nb)
    except KeyError as exc:
        raise RuntimeError(
            f"{src}: not executed, and no record in {cache} matches its code"
        ) from exc
    nbformat.write(merged, str(dst))
    return "cache"


def copy_notebooks(app, exception) -> None:
    """Copy every executed notebook into ``<outdir>/_notebooks/`` (the files the pages link), taking the
    outputs of notebooks served from the jupyter-cache from their cache record (:func:`executed_copy`)."""
    if exception is not None or not _is_html(app):
        return
    n, from_cache, cache = 0, 0, cache_dir(app)
    for docname in sorted(app.env.found_docs):
        src = executed_notebook(app, docname)
        if src is None:
            continue
        dst = Path(app.outdir) / notebook_uri(docname)
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            from_cache += executed_copy(src, dst, cache) == "cache"
        except RuntimeError as exc:
            logger.warning(f"genbound: {exc}")
            continue
        n += 1
    logger.info(
        f"genbound: copied {n} executed notebooks to {NOTEBOOK_DIR}/ ({from_cache} with outputs "
        f"from the jupyter-cache)"
    )


def _add_static(app, config) -> None:
    config.html_static_path.append(str(STATIC))


def setup(app):
    app.add_config_value("genbound_claims_page", "book/claims_index", "env")
    app.add_config_value("genbound_intro_page", "book/intro", "env")
    app.add_config_value("genbound_notebook_anchor", "notebooks", "env")
    app.connect("config-inited", _add_static)
    app.add_css_file("genbound.css")
    app.connect("doctree-resolved", on_doctree_resolved)
    # after sphinx-book-theme's add_header_buttons (priority 501) has built the download menu
    app.connect("html-page-context", add_download_entry, priority=502)
    app.connect("html-page-context", dedupe_scripts)
    app.connect("build-finished", copy_notebooks)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
