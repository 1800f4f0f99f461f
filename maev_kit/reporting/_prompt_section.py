"""The report's prompt-comparison section: why one judge prompt beats another.

Static HTML (the report has no scripts): the two prompt texts side by side, κ with CIs, the
paired Δκ and McNemar p, the confusion-matrix difference, and each item whose verdict changed
with the human label and, in a ``<details>``, the trace excerpt around its handoff.
"""

from __future__ import annotations

from typing import Any

from maev_kit.rendering import esc as _e
from maev_kit.rendering.internal import (
    PROMPT_CSS,
    changed_rows_html,
    comparison_summary_html,
    prompt_diff_html,
)

__all__ = ["as_comparison", "prompt_comparison_html"]


def as_comparison(obj: Any) -> Any:
    """A PromptComparison from itself or from an AlignmentResult (None when it has none)."""
    if obj is None or (hasattr(obj, "changed") and hasattr(obj, "confusion_delta")):
        return obj
    if callable(getattr(obj, "comparison", None)):
        return obj.comparison()
    raise TypeError("`prompt_comparison` must be a PromptComparison (maev_kit.calibration."
                    f"compare_prompts) or an AlignmentResult, got {type(obj).__name__}")


def prompt_comparison_html(comparison: Any, *, max_items: int = 40) -> str:
    """The section body for ``comparison`` (a PromptComparison or an AlignmentResult).

    >>> prompt_comparison_html(None)
    '<p>No prompt comparison.</p>'
    """
    cmp = as_comparison(comparison)
    if cmp is None:
        return "<p>No prompt comparison.</p>"
    where = f" on the {_e(cmp.split)} split" if cmp.split else ""
    intro = (f"<p>Prompt b (<b>{_e(cmp.b)}</b>) against prompt a (<b>{_e(cmp.a)}</b>){where}. "
             "When b was chosen by a search on the dev split, these test-split numbers — not "
             "the dev κ the search maximised — say whether b is really better.</p>")
    return (f'<style>{PROMPT_CSS}</style><div class="maev-pc">{intro}'
            + comparison_summary_html(cmp)
            + "<h3>Prompt text (a left, b right)</h3>"
            + prompt_diff_html(cmp.text_a, cmp.text_b, cmp.a, cmp.b)
            + f"<h3>Verdicts that changed ({len(cmp.changed)})</h3>"
            + changed_rows_html(cmp, excerpts=True, limit=max_items) + "</div>")
