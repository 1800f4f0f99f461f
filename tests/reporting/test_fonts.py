"""The report's fonts: a stack naming CJK, Arabic and emoji system fonts, and the glyphs of the
report's own non-Latin text embedded, small (#36 E)."""

from __future__ import annotations

import base64
import os
import re

import pytest

from maev_kit.reporting._fonts import FONT_STACK, fallback_font_css
from maev_kit.reporting._html import CSS, page


def _embedded_bytes(css: str) -> int:
    return sum(len(base64.b64decode(b)) for b in re.findall(r"base64,([A-Za-z0-9+/=]+)", css))


def test_the_stack_names_fonts_for_every_script_and_ends_in_the_embedded_face():
    for family in ("Noto Sans CJK SC", "Microsoft YaHei", "PingFang SC", "Noto Sans Arabic",
                   "Noto Color Emoji", "Segoe UI Emoji"):
        assert f'"{family}"' in FONT_STACK
    assert FONT_STACK.endswith('"maev-fallback",sans-serif')
    assert "__FONT_STACK__" not in CSS and f"--font:{FONT_STACK}" in CSS


def test_latin_text_embeds_nothing():
    assert fallback_font_css("Account ACCT-4471, refund of $129.00 — done") == ""
    assert "@font-face" not in page("t", "s", [], "<p>plain</p>", "f")


def test_cjk_text_embeds_a_small_subset_of_only_its_glyphs():
    few, more = "分诊台账单", "分诊台账单" + "技术支持退款处理客服代理升级工单订单发票"
    css = fallback_font_css(few)
    if not css:
        if os.environ.get("MAEV_REQUIRE_BROWSER") == "1":  # CI installs the font
            pytest.fail("no font with CJK glyphs: .ci/run installs fonts-wqy-microhei")
        pytest.skip("no font with CJK glyphs on this machine (apt-get install -y "
                    "fonts-wqy-microhei)")
    small, large = _embedded_bytes(css), _embedded_bytes(fallback_font_css(more))
    assert 0 < small < 20_000  # a subset, not the 5 MB font
    assert small < large < small + 3_000 * (len(set(more)) - len(set(few)))
    html = page("t", "s", [], "<p>分诊台 → 账单专员</p>", "f")
    assert html.count("@font-face") >= 1 and "maev-fallback" in html
