"""Fonts for the report: every script a trace may hold drawn as letters, not empty boxes, with
no network access.

The report's font stack names the system fonts that cover CJK, Arabic and emoji on the usual
systems (macOS, Windows, Linux with Noto); Latin, Greek and Cyrillic are in every system UI
font. A reader's machine may lack the others (a bare Linux desktop, a CI browser), so the
report also embeds, as the stack's last fallback (``maev-fallback``), a subset of a font found
on the machine that writes the report: only the glyphs of the report's own characters in those
scripts (:data:`_FALLBACK_RANGES`: Hebrew, Arabic, Indic, Thai, CJK, kana, Hangul), so the file
stays small. Measured with WenQuanYi Micro Hei (Debian ``fonts-wqy-microhei``): 6.1 KB for 5
distinct CJK characters, 9.8 KB for 22 (about 5 KB of tables, then ~0.2 KB a glyph); a report
on 6 conversations with CJK agent names embedded 9.9 KB in a 125 KB file; nothing at all for a
report without those scripts. When no font there covers a character, nothing is embedded for
it and the system fonts of the stack are all there is. Colour emoji are left to the system's
emoji font (named in the stack).
"""

from __future__ import annotations

import base64
import io
import os
from functools import lru_cache
from pathlib import Path

__all__ = ["FONT_STACK", "fallback_font_css"]

#: The report's font stack: system UI fonts, then fonts with CJK, Arabic and emoji glyphs,
#: then the embedded subset.
FONT_STACK = ('system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans",'
              '"DejaVu Sans","PingFang SC","Hiragino Sans","Microsoft YaHei","Yu Gothic",'
              '"Malgun Gothic","Noto Sans CJK SC","Source Han Sans SC","WenQuanYi Micro Hei",'
              '"Noto Sans Arabic","Geeza Pro","Segoe UI Emoji","Apple Color Emoji",'
              '"Noto Color Emoji","maev-fallback",sans-serif')

#: Font files tried for the fallback subset, best first (name fragments, lower case).
_CANDIDATES = ("notosanscjk", "sourcehansans", "wqy-microhei", "wqy-zenhei", "droidsansfallback",
               "notosansarabic", "dejavusans.ttf")
_DIRS = ("/usr/share/fonts", "/usr/local/share/fonts", "~/.fonts", "~/.local/share/fonts",
         "/Library/Fonts", "/System/Library/Fonts", "C:/Windows/Fonts")


#: Scripts a reader's fonts may lack (Latin, Greek, Cyrillic and the usual symbols are in
#: every system UI font): Hebrew, Arabic, the Indic scripts, Thai, CJK, kana, Hangul, full
#: width forms.
_FALLBACK_RANGES = ((0x0590, 0x08FF), (0x0900, 0x0DFF), (0x0E00, 0x0E7F), (0x2E80, 0x9FFF),
                    (0xA960, 0xA97F), (0xAC00, 0xD7AF), (0xF900, 0xFAFF), (0xFB1D, 0xFDFF),
                    (0xFE30, 0xFE4F), (0xFE70, 0xFEFF), (0xFF00, 0xFFEF))


def _needs_fallback(ch: str) -> bool:
    """Characters of a script a reader's system fonts may lack (:data:`_FALLBACK_RANGES`)."""
    o = ord(ch)
    return any(lo <= o <= hi for lo, hi in _FALLBACK_RANGES)


@lru_cache(maxsize=1)
def _font_files() -> tuple[Path, ...]:
    """Candidate font files on this machine, in :data:`_CANDIDATES` order."""
    found: list[tuple[int, Path]] = []
    for d in _DIRS:
        root = Path(os.path.expanduser(d))
        if not root.is_dir():
            continue
        for p in root.rglob("*"):
            name = p.name.lower().replace(" ", "")
            for rank, frag in enumerate(_CANDIDATES):
                if frag in name and p.suffix.lower() in (".ttf", ".otf", ".ttc"):
                    found.append((rank, p))
                    break
    return tuple(p for _, p in sorted(found))


def _subset(path: Path, chars: set[str]) -> tuple[bytes, set[str]]:
    """A TrueType/OpenType subset of ``path`` holding the glyphs it has of ``chars``."""
    import logging

    from fontTools import subset
    from fontTools.ttLib import TTFont

    logging.getLogger("fontTools").setLevel(logging.ERROR)  # "FFTM NOT subset" is no news

    font = TTFont(str(path), fontNumber=0, lazy=False)
    cmap = font.getBestCmap() or {}
    have = {c for c in chars if ord(c) in cmap}
    if not have:
        return b"", set()
    opts = subset.Options()
    opts.layout_features = ["*"]
    opts.name_IDs = ["*"]
    opts.notdef_outline = False
    sub = subset.Subsetter(opts)
    sub.populate(unicodes=[ord(c) for c in have])
    sub.subset(font)
    buf = io.BytesIO()
    font.flavor = None
    font.save(buf)
    return buf.getvalue(), have


def fallback_font_css(text: str) -> str:
    """``@font-face`` rules embedding the glyphs of ``text``'s non-Latin characters from the
    fonts on this machine (empty when there are none, or no font has them).

    >>> fallback_font_css("plain ASCII text, κ → Δκ, Привет")
    ''
    """
    chars = {c for c in set(text) if _needs_fallback(c)}
    rules = []
    for path in _font_files():
        if not chars:
            break
        try:
            data, have = _subset(path, chars)
        except Exception:  # noqa: BLE001 - a font this fontTools cannot read is skipped
            continue
        if data:
            chars -= have
            b64 = base64.b64encode(data).decode("ascii")
            rules.append('@font-face{font-family:"maev-fallback";'
                         f'src:url(data:font/ttf;base64,{b64}) format("truetype");'
                         "font-display:swap}")
    return "".join(rules)
