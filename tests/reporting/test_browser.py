"""Open the report in headless Chromium: nothing runs, nothing is fetched, XSS shows as text."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from maev_kit.reporting import report

from ._factories import make_calibration, make_evaluation

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = pytest.mark.slow


def _sync_api():
    """playwright's sync API, or skip (fail where ``CI``/``MAEV_REQUIRE_BROWSER`` is set)."""
    missing = None
    if not Path(CHROMIUM).exists():
        missing = f"{CHROMIUM} not installed (apt-get install -y chromium)"
    else:
        try:
            import playwright.sync_api as sync_api

            return sync_api
        except ImportError:
            missing = "the `playwright` Python package is not installed"
    if os.environ.get("CI") or os.environ.get("MAEV_REQUIRE_BROWSER"):
        pytest.fail(f"browser test required here but {missing}")
    pytest.skip(missing)


def _launch(playwright):
    """Debian's Chromium, headless, with nothing that would reach the network by itself."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=[
        "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"])


@contextlib.contextmanager
def _page(requests: list[str]) -> Iterator:
    """A new page of headless Chromium; every URL it requests is appended to ``requests``."""
    sync_api = _sync_api()
    with sync_api.sync_playwright() as p:
        browser = _launch(p)
        try:
            page = browser.new_page()
            page.on("request", lambda r: requests.append(r.url))
            yield page
        finally:
            browser.close()


def test_report_in_a_real_browser(tmp_path):
    _sync_api()
    path = report(make_evaluation(), calibration=make_calibration()).save(tmp_path / "r.html")
    requests: list[str] = []
    with _page(requests) as page:
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri(), wait_until="load")
        # Open every collapsed block so the trace text is laid out too.
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        page.wait_for_timeout(200)
        assert page.evaluate("window.__pwned") is None
        assert page.evaluate("document.scripts.length") == 0
        assert page.evaluate("document.images.length") == 0
        body = page.inner_text("body")
        assert '<img src=x onerror="window.__pwned=2">' in body
        assert "<script>window.__pwned=1</script>" in body
        assert page.evaluate("document.querySelectorAll('svg').length") == 9
        # Sections laid out: the page is long, and wider content scrolls inside its box.
        assert page.evaluate("document.body.scrollHeight") > 2000
        assert not errors
    assert requests == [path.as_uri()], requests


def _cjk_report(tmp_path: Path) -> tuple[Path, list[str]]:
    """A report on two support_desk conversations whose agents have CJK names."""
    import json

    from maev_kit import evaluate
    from maev_kit.datasets import bundled_set_path

    names = {"triage": "分诊台", "billing": "账单专员", "technical_support": "技术サポート"}
    lines = (bundled_set_path("support_desk") / "traces.jsonl").read_text().splitlines()[:2]
    text = "\n".join(lines)
    for old, new in names.items():
        text = text.replace(f'"{old}"', json.dumps(new, ensure_ascii=False))
    traces = tmp_path / "cjk.jsonl"
    traces.write_text(text + "\n", encoding="utf-8")
    ev = evaluate(str(traces), judge="heuristic", progress=False, n_resamples=200)
    return report(ev).save(tmp_path / "cjk.html"), list(names.values())


def test_cjk_agent_names_render_from_the_embedded_font(tmp_path):
    """The report embeds the glyphs of its CJK text (no network): the browser loads them from
    the page's own ``maev-fallback`` face, and a screenshot of the page is taken."""
    from maev_kit.reporting._fonts import fallback_font_css

    if not fallback_font_css("分诊台"):
        if os.environ.get("MAEV_REQUIRE_BROWSER") == "1":  # CI installs the font
            pytest.fail("no font with CJK glyphs: .ci/run installs fonts-wqy-microhei")
        pytest.skip("no font with CJK glyphs on this machine to embed from "
                    "(apt-get install -y fonts-wqy-microhei)")
    _sync_api()
    path, names = _cjk_report(tmp_path)
    html = path.read_text(encoding="utf-8")
    assert "maev-fallback" in html and all(n in html for n in names)
    requests: list[str] = []
    with _page(requests) as page:
        page.goto(path.as_uri(), wait_until="load")
        for name in names:  # the embedded face holds every glyph of every agent's name
            loaded = page.evaluate(f"document.fonts.load('16px \"maev-fallback\"', "
                                   f"{name!r}).then(fs => fs.length)")
            assert loaded >= 1, name
            assert page.evaluate(f"document.fonts.check('16px \"maev-fallback\"', "
                                 f"{name!r})"), name
        assert page.get_by_text(names[0]).first.is_visible()
        page.screenshot(path=str(tmp_path / "cjk.png"), full_page=False)
    assert (tmp_path / "cjk.png").stat().st_size > 10_000
    assert requests == [path.as_uri()], requests  # the font came from the page itself
