"""tools/check_browser.py on small hand-made pages in headless Chromium.

Skipped where Debian's chromium or Playwright is absent (``apt-get install -y chromium``; CI installs
it through ``make check-browser``).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import check_browser as cb  # noqa: E402

pytest.importorskip("playwright.sync_api")
CHROMIUM = next((c for c in cb.CHROMIUM_CANDIDATES if Path(c).is_file()), None) or shutil.which(
    "chromium"
)
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed"),
]

PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>
body {{ margin: 0; font: 16px sans-serif; }}
article.bd-article {{ width: 600px; padding: 0 20px; }}
div.cell_output {{ overflow-x: auto; }}
td, th {{ white-space: nowrap; padding: 2px 6px; }}
</style></head><body><main><article class="bd-article">
<h1 id="t">Page</h1>
{body}
</article></main></body></html>"""

WIDE_TABLE = (
    "<div class='cell'><div class='cell_input'><pre>show</pre></div><div class='cell_output'>"
    "<table><caption>a caption that is long but wraps</caption><tr>"
    + "".join(f"<th>column_number_{i}</th>" for i in range(12))
    + "</tr><tr>"
    + "".join(f"<td>+0.{i:03d}</td>" for i in range(12))
    + "</tr></table></div></div>"
)
NARROW_TABLE = (
    "<div class='cell_output'><table><tr><th>measure</th><th>tau</th></tr>"
    "<tr><td>tt_bound</td><td>+0.12</td></tr></table></div>"
)
NAN_TABLE = (
    "<div class='cell_output'><table><tr><th>measure</th><th>psi</th><th>nanoseconds</th></tr>"
    "<tr><td>tt_bound</td><td>+nan</td><td>3</td></tr></table></div>"
)


def _site(tmp_path, pages: dict[str, str]) -> Path:
    site = tmp_path / "html"
    site.mkdir()
    (site / "index.html").write_text(
        '<html><head><meta http-equiv="refresh" content="0; url=book/ok.html"></head></html>'
    )
    for rel, body in pages.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(PAGE.format(body=body))
    return site


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("site")
    site = _site(
        tmp,
        {
            "book/ok.html": "<p>fine</p>" + NARROW_TABLE,
            "book/wide.html": WIDE_TABLE,
            "book/nan.html": NAN_TABLE,
        },
    )
    results, problems = cb.render_all(site, tmp / "screens", CHROMIUM, False)
    return results, problems


def test_table_wider_than_column_inside_scroll_container_is_flagged(checked):
    results, problems = checked
    text = "\n".join(problems.get("book/wide.html", []))
    assert "table (in a scroll container, cut at the column edge)" in text, text
    assert "scroll container (div.cell_output)" in text
    # the page itself does not scroll sideways: the old check could not see this
    assert results["book/wide.html"]["pageWidth"] <= results["book/wide.html"]["windowWidth"]
    assert results["book/wide.html"]["column"] == 600


def test_rendered_nan_is_flagged(checked):
    _, problems = checked
    nans = [p for p in problems.get("book/nan.html", []) if p.startswith("nan in a rendered table")]
    assert len(nans) == 1 and "+nan" in nans[0] and "tt_bound" in nans[0]  # "nanoseconds" is no nan


def test_clean_page_passes(checked):
    results, problems = checked
    assert "book/ok.html" not in problems, problems.get("book/ok.html")
    assert results["book/ok.html"]["cells"] == []
    assert results["book/wide.html"]["cells"] == [{"input": True, "output": True}]
