"""Fonts for the report: every script a trace may hold drawn as letters, not empty boxes, with
no network access.

The report's font stack names the system fonts that cover CJK, Cyrillic, Arabic and emoji on
the usual systems (macOS, Windows, Linux with Noto). A reader's machine may have none of them
(a bare Linux desktop, a CI browser), so the report also embeds, as a last fallback
(``maev-fallback``), a subset of a font found on the machine that writes the report: only the
glyphs of the report's own non-Latin characters, so the file stays small. Measured with
WenQuanYi Micro Hei (Debian ``fonts-wqy-microhei``): 6.1 KB for 5 distinct CJK characters,
9.8 KB for 22 (about 5 KB of tables, then ~0.2 KB a glyph); a report on 6 conversations with
CJK agent names embedded 24 KB in a 144 KB file; nothing at all for a report in Latin script.
When no font there covers a character, nothing is embedded for it and the system fonts of the
stack are all there is. Colour emoji are left to the system's emoji font (named in the stack).
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


def _needs_fallback(ch: str) -> bool:
    """Characters beyond Latin (and its punctuation) that a basic font may lack."""
    o = ord(ch)
    return o >= 0x0370 and not 0x2000 <= o <= 0x206F and not 0xFE00 <= o <= 0xFE0F


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

    >>> fallback_font_css("plain ASCII text")
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
