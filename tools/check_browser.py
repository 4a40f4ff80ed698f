"""Render every page of the built book in headless Chromium and fail on what a reader would see broken.

Usage (``make check-browser`` runs it after ``make book``)::

    python tools/check_browser.py [--site _build/html] [--screens _build/screens] [--full-page]

The site is served from a local HTTP server (127.0.0.1, a free port), as a reader's web server would;
every request to another host is blocked and reported, so a page that needs the network fails. Each
page is loaded in Debian's ``chromium`` (driven by Playwright, which talks to the browser over the
DevTools protocol; no browser is downloaded), MathJax is awaited, and the page fails on:

* a MathJax error (``mjx-merror``), or math left as raw TeX: ``$...$``, ``\\(``, ``\\[``, ``\\begin{``
  or an unresolved ``{glue`` role in the text outside code blocks;
* a broken image (not loaded, or zero natural width), any same-site request answered 4xx/5xx;
* an internal link to a page that does not exist, or to an anchor (``#id``) that the target page,
  as rendered, does not have; links to other files (notebooks, sources) must exist;
* a JavaScript error, a request to another host;
* a visible code cell (``div.cell_input``) wider than its box, or a page wider than the window;
* a table, a table caption or a figure wider than the page column, also when it sits in a scroll
  container (the theme and MyST-NB put output tables in ``overflow: auto`` boxes, where an overflow does
  not widen the page but cuts the table at the column's edge), and any scroll container holding a
  table or an image whose content is wider than the container;
* a literal ``nan`` (``+nan``, ``NaN``, ``-nan``) in a rendered table cell: a missing value shown as
  a number;
* a chapter page (``book/part*/``) that does not link its executed notebook ``_notebooks/…ipynb``;
  and for every linked notebook: a code cell that was not executed (no execution count), or a cell
  whose output the page shows but the notebook lacks. A cell that prints nothing needs no output:
  the criterion is "executed", not "has outputs".

One screenshot per page goes to ``--screens`` (``book__part1__rademacher.png``; the first screen of the
page, or the whole page with ``--full-page``). The report lists every failure by page; exit status 1 if
there is any, 0 otherwise.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlparse

CHROMIUM_CANDIDATES = (
    "/usr/lib/chromium/chromium",
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SKIP_DIRS = ("_static", "_sources", "_notebooks", "_images")
VIEWPORT = {"width": 1280, "height": 900}
# Console errors that are no fault of a page: a failed request is reported by its HTTP status instead
# (same site) or as a blocked request (other hosts); pydata-sphinx-theme logs "invalid theme mode" on
# a reader's first visit (empty localStorage) and then sets "auto".
CONSOLE_NOISE = ("Failed to load resource", "Got invalid theme mode")

# Runs in the page after load. Returns what the checks need; see the module docstring.
PAGE_PROBE = r"""
async () => {
  const out = {mathjax: null, merrors: [], raw: [], images: [], links: [], ids: [], overflow: [],
               pageWidth: document.documentElement.scrollWidth, windowWidth: window.innerWidth};
  const hasMath = document.querySelector('.math, mjx-container') !== null;
  if (window.MathJax && window.MathJax.startup && window.MathJax.startup.promise) {
    await window.MathJax.startup.promise;
    out.mathjax = 'ok';
  } else if (hasMath) {
    out.mathjax = 'missing';
  }
  for (const e of document.querySelectorAll('mjx-merror, [data-mjx-error]')) {
    out.merrors.push((e.getAttribute('data-mjx-error') || e.textContent || '').slice(0, 120));
  }
  // raw TeX left in the text (outside code and rendered math)
  const skip = new Set(['SCRIPT', 'STYLE', 'PRE', 'CODE', 'TEXTAREA', 'MJX-CONTAINER', 'KBD', 'SAMP']);
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
    acceptNode(node) {
      for (let p = node.parentElement; p; p = p.parentElement) {
        if (skip.has(p.tagName) || p.classList.contains('highlight')) return NodeFilter.FILTER_REJECT;
      }
      return NodeFilter.FILTER_ACCEPT;
    }});
  const rawRe = /\$[^$\s][^$]*\$|\\\(|\\\)|\\\[|\\\]|\\begin\{|\{glue/;
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const m = n.textContent.match(rawRe);
    if (m) {
      const i = Math.max(0, m.index - 30);
      out.raw.push(n.textContent.slice(i, m.index + 50).replace(/\s+/g, ' '));
    }
  }
  // images: load lazy ones too, then check
  const imgs = [...document.images];
  await Promise.all(imgs.map(i => { i.loading = 'eager'; return i.decode().catch(() => null); }));
  for (const i of imgs) {
    if (!i.complete || i.naturalWidth === 0) out.images.push(i.getAttribute('src'));
  }
  for (const a of document.querySelectorAll('a[href]')) {
    out.links.push({href: a.href, raw: a.getAttribute('href'), text: (a.textContent || '').trim().slice(0, 40)});
  }
  for (const e of document.querySelectorAll('[id]')) out.ids.push(e.id);
  for (const e of document.querySelectorAll('a[name]')) out.ids.push(e.getAttribute('name'));
  // sideways scrolling: visible code cells and the claims table
  const visible = e => e.offsetParent !== null && e.getClientRects().length > 0;
  for (const pre of document.querySelectorAll('div.cell_input pre')) {
    if (visible(pre) && pre.scrollWidth > pre.clientWidth + 1) {
      const longest = pre.textContent.split('\n').reduce((a, b) => (b.length > a.length ? b : a), '');
      out.overflow.push(`code cell: ${pre.scrollWidth}px > ${pre.clientWidth}px, longest line ` +
                        `${longest.length} chars: ${longest.trim().slice(0, 60)}`);
    }
  }
  // the page column: the article's content box (the whole body on a page without the theme)
  const article = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const cs = getComputedStyle(article);
  const column = article.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  out.column = column;
  const describe = e => {
    const t = (e.querySelector('caption') || e.querySelector('th') || e).textContent || '';
    return t.trim().replace(/\s+/g, ' ').slice(0, 50);
  };
  // width of an element's content, whatever box clips it: its own scroll width or its box
  const contentWidth = e => Math.max(e.scrollWidth, Math.round(e.getBoundingClientRect().width));
  for (const e of article.querySelectorAll('table, caption, figure, img')) {
    if (!visible(e) && e.tagName !== 'CAPTION') continue;
    if (e.tagName === 'CAPTION' && !visible(e.closest('table'))) continue;
    const w = contentWidth(e);
    if (w > column + 1) {
      const what = e.classList.contains('genbound-claims') ? 'claims table' : e.tagName.toLowerCase();
      const inScroll = (() => {
        for (let p = e.parentElement; p && p !== article; p = p.parentElement) {
          const ox = getComputedStyle(p).overflowX;
          if (ox === 'auto' || ox === 'scroll' || ox === 'hidden') return true;
        }
        return false;
      })();
      out.overflow.push(`${what}${inScroll ? ' (in a scroll container, cut at the column edge)' : ''}: ` +
                        `${w}px > ${Math.round(column)}px: ${describe(e)}`);
    }
  }
  for (const e of article.querySelectorAll('*')) {
    const ox = getComputedStyle(e).overflowX;
    if (!(ox === 'auto' || ox === 'scroll' || ox === 'hidden') || !visible(e)) continue;
    if (e.tagName === 'PRE' || e.closest('div.cell_input')) continue;  // code: the rule above
    if (!e.querySelector('table, img, figure')) continue;
    if (e.scrollWidth > e.clientWidth + 1) {
      out.overflow.push(`scroll container (${e.tagName.toLowerCase()}.${[...e.classList].join('.')}): content ` +
                        `${e.scrollWidth}px > ${e.clientWidth}px: ${describe(e)}`);
    }
  }
  // a literal nan in a rendered table
  out.nans = [];
  for (const c of article.querySelectorAll('table td, table th')) {
    const t = (c.textContent || '').trim();
    if (/(^|[^A-Za-z])[+-]?nan([^A-Za-z]|$)/i.test(t)) {
      const row = c.closest('tr');
      out.nans.push(`${t.slice(0, 20)} in row: ${(row ? row.textContent : t).trim().replace(/\s+/g, ' ').slice(0, 60)}`);
    }
  }
  // code cells as the page shows them, in order: input shown, output shown
  out.cells = [];
  for (const c of article.querySelectorAll('div.cell')) {
    const o = c.querySelector(':scope > div.cell_output');
    out.cells.push({input: !!c.querySelector(':scope > div.cell_input'),
                    output: !!(o && (o.textContent.trim() || o.querySelector('img, svg, table, mjx-container')))});
  }
  return out;
}
"""


def find_chromium(explicit: str | None = None) -> str:
    """Path of the Chromium binary (``--chromium`` wins; then Debian's locations)."""
    for cand in ([explicit] if explicit else []) + list(CHROMIUM_CANDIDATES):
        if cand and Path(cand).is_file():
            return cand
    raise SystemExit(
        "check_browser: no chromium found; install Debian's: apt-get install -y chromium"
    )


def site_pages(site: Path) -> list[str]:
    """Every HTML page of the site (relative POSIX paths), without the theme's and copied files."""
    return sorted(
        p.relative_to(site).as_posix()
        for p in site.rglob("*.html")
        if p.relative_to(site).parts[0] not in SKIP_DIRS
    )


def screenshot_name(page: str) -> str:
    """``book/part1/rademacher.html`` -> ``book__part1__rademacher.png``."""
    return page.removesuffix(".html").replace("/", "__") + ".png"


def notebook_outputs(path: Path) -> int:
    """Number of outputs in a notebook file (0 if it is not a readable notebook)."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    return sum(
        len(c.get("outputs", [])) for c in nb.get("cells", []) if c.get("cell_type") == "code"
    )


def _tags(cell) -> set[str]:
    tags = cell.get("metadata", {}).get("tags", [])
    return set(tags) if isinstance(tags, list) else set()


def notebook_problems(path: Path, page_cells: list[dict] | None = None) -> list[str]:
    """What is wrong with the executed notebook ``path`` of a page.

    Every code cell must have been executed (a non-null ``execution_count``). ``page_cells`` (from the
    page: one ``{"input": bool, "output": bool}`` per code cell it shows, in order) pairs the page's
    cells with the notebook's code cells that the page shows (all but ``remove-cell``); a cell whose
    output the page shows must have outputs in the notebook. A cell that shows nothing needs none.
    """
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except OSError:
        return [f"linked notebook {path.name} is missing"]
    except ValueError:
        return [f"linked notebook {path.name} is not valid JSON"]
    code = [c for c in nb.get("cells", []) if c.get("cell_type") == "code"]
    out = []
    unexecuted = [i for i, c in enumerate(code) if c.get("execution_count") is None]
    if unexecuted:
        out.append(
            f"linked notebook {path.name}: {len(unexecuted)} of {len(code)} code cells not executed "
            f"(no execution count; code cells {unexecuted[:5]})"
        )
    if page_cells is not None:
        shown = [c for c in code if "remove-cell" not in _tags(c)]
        if len(shown) != len(page_cells):
            out.append(
                f"linked notebook {path.name}: the page shows {len(page_cells)} code cells, the notebook "
                f"has {len(shown)} (without remove-cell); not the notebook of this page?"
            )
        else:
            missing = [
                i
                for i, (c, pc) in enumerate(zip(shown, page_cells))
                if pc["output"] and not c.get("outputs")
            ]
            if missing:
                out.append(
                    f"linked notebook {path.name}: {len(missing)} cells show an output on the page but "
                    f"have none in the notebook (page cells {missing[:5]})"
                )
    return out


def redirect_target(path: Path) -> str | None:
    """The URL of a ``<meta http-equiv="refresh">`` redirect page, or ``None`` for a normal page."""
    m = re.search(
        r'<meta\s+http-equiv="refresh"\s+content="\d+;\s*url=([^"]+)"',
        path.read_text(encoding="utf-8", errors="replace"),
        flags=re.I,
    )
    return m.group(1) if m else None


def is_chapter(page: str) -> bool:
    """A chapter page: ``book/part<N>/<name>.html``."""
    parts = page.split("/")
    return len(parts) == 3 and parts[0] == "book" and parts[1].startswith("part")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no access log on stderr
        pass


def serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Serve ``site`` on 127.0.0.1 (free port) in a daemon thread; returns the server and base URL."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def check_links(results: dict, site: Path, base: str) -> dict[str, list[str]]:
    """Internal links -> missing pages, files or anchors, per page."""
    ids = {page: set(r["ids"]) for page, r in results.items()}
    problems: dict[str, list[str]] = {}
    for page, r in results.items():
        for link in r["links"]:
            href = link["href"]
            if not href.startswith(base):
                continue  # another host (not fetched offline) or mailto:, javascript:
            url, frag = urldefrag(href)
            target = unquote(urlparse(url).path).lstrip("/") or "index.html"
            if target.endswith("/"):
                target += "index.html"
            what = f"{link['raw']!r} ({link['text']!r})"
            if not (site / target).is_file():
                problems.setdefault(page, []).append(f"link to a missing file: {what}")
            elif frag and target.endswith(".html"):
                if target not in ids:
                    problems.setdefault(page, []).append(
                        f"anchor not checked, page not rendered: {what}"
                    )
                elif unquote(frag) not in ids[target]:
                    problems.setdefault(page, []).append(f"link to a missing anchor: {what}")
    return problems


def check_notebook_links(results: dict, site: Path, base: str) -> dict[str, list[str]]:
    """Every chapter page links ``_notebooks/…ipynb``; every linked notebook passes :func:`notebook_problems`."""
    problems: dict[str, list[str]] = {}
    for page, r in results.items():
        nbs = {
            unquote(urlparse(l["href"]).path).lstrip("/")
            for l in r["links"]
            if l["href"].startswith(base)
            and urlparse(l["href"]).path.endswith(".ipynb")
            and "/_notebooks/" in urlparse(l["href"]).path
        }
        if not nbs and is_chapter(page):
            problems.setdefault(page, []).append(
                "no link to its executed notebook (_notebooks/…ipynb)"
            )
        for nb in sorted(nbs):
            problems_nb = notebook_problems(site / nb, r.get("cells"))
            if problems_nb:
                problems.setdefault(page, []).extend(problems_nb)
    return problems


def render_all(site: Path, screens: Path, chromium: str, full_page: bool) -> tuple[dict, dict]:
    from playwright.sync_api import sync_playwright

    server, base = serve(site)
    pages = site_pages(site)
    results, problems = {}, {}
    screens.mkdir(parents=True, exist_ok=True)
    profile = Path(tempfile.mkdtemp(prefix="genbound-chromium-"))
    try:
        with sync_playwright() as pw:
            # a fresh profile directory each run (persistent context: the directory is ours to remove)
            ctx = pw.chromium.launch_persistent_context(
                str(profile),
                executable_path=chromium,
                headless=True,
                args=CHROMIUM_ARGS,
                viewport=VIEWPORT,
                service_workers="block",
            )
            external: list[str] = []

            def route(r):
                if r.request.url.startswith(base) or r.request.url.startswith(("data:", "blob:")):
                    r.continue_()
                else:
                    external.append(r.request.url)
                    r.abort()

            ctx.route("**/*", route)
            for rel in pages:
                target = redirect_target(site / rel)
                if (
                    target is not None
                ):  # index.html: a meta refresh to the root page, nothing to render
                    results[rel] = {
                        "links": [
                            {
                                "href": urljoin(base + rel, target),
                                "raw": target,
                                "text": "meta refresh",
                            }
                        ],
                        "ids": [],
                    }
                    continue
                page_problems: list[str] = []
                external.clear()
                page = ctx.new_page()
                page.on(
                    "pageerror", lambda e, pp=page_problems: pp.append(f"JavaScript error: {e}")
                )
                page.on(
                    "console",
                    lambda m, pp=page_problems: (
                        pp.append(f"console error: {m.text}")
                        if m.type == "error" and not m.text.startswith(CONSOLE_NOISE)
                        else None
                    ),
                )
                page.on(
                    "response",
                    lambda resp, pp=page_problems: (
                        pp.append(f"HTTP {resp.status} for {resp.url.removeprefix(base)}")
                        if resp.status >= 400 and resp.url.startswith(base)
                        else None
                    ),
                )
                page.goto(base + rel, wait_until="load", timeout=120_000)
                probe = page.evaluate(PAGE_PROBE)
                page.screenshot(path=str(screens / screenshot_name(rel)), full_page=full_page)
                page.close()
                if probe["mathjax"] == "missing":
                    page_problems.append("math on the page but MathJax did not load")
                page_problems += [f"MathJax error: {m}" for m in probe["merrors"]]
                page_problems += [f"raw TeX or glue in text: …{t}…" for t in probe["raw"]]
                page_problems += [f"broken image: {s}" for s in probe["images"]]
                page_problems += [f"wider than the page column: {o}" for o in probe["overflow"]]
                page_problems += [f"nan in a rendered table: {t}" for t in probe["nans"]]
                if probe["pageWidth"] > probe["windowWidth"]:
                    page_problems.append(
                        f"page scrolls sideways: {probe['pageWidth']}px > {probe['windowWidth']}px"
                    )
                page_problems += [
                    f"request to another host (blocked): {u}" for u in dict.fromkeys(external)
                ]
                if page_problems:
                    problems[rel] = page_problems
                results[rel] = probe
            ctx.close()
    finally:
        server.shutdown()
        shutil.rmtree(profile, ignore_errors=True)
    for extra in (check_links(results, site, base), check_notebook_links(results, site, base)):
        for page, ps in extra.items():
            problems.setdefault(page, []).extend(ps)
    return results, problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", default="_build/html", type=Path)
    ap.add_argument("--screens", default="_build/screens", type=Path)
    ap.add_argument("--chromium", default=None, help="path of the Chromium binary")
    ap.add_argument(
        "--full-page", action="store_true", help="screenshot whole pages, not the first screen"
    )
    args = ap.parse_args(argv)
    if not (args.site / "index.html").is_file():
        print(
            f"check_browser: {args.site}/index.html not found; run `make book` first",
            file=sys.stderr,
        )
        return 2
    t0 = time.perf_counter()
    results, problems = render_all(
        args.site, args.screens, find_chromium(args.chromium), args.full_page
    )
    n_links = sum(len(r["links"]) for r in results.values())
    for page in sorted(problems):
        print(f"FAIL {page}")
        for p in problems[page]:
            print(f"     {p}")
    print(
        f"check_browser: {len(results)} pages, {n_links} links, {len(problems)} with problems; "
        f"screenshots in {args.screens}/ ({time.perf_counter() - t0:.1f} s)"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
