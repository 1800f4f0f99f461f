"""The HTML report: sections, escaping, self-containment, formatting, API."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from maev_kit.reporting import Report, report
from maev_kit.reporting._report import _ceiling

from ._factories import XSS, make_calibration, make_evaluation

URL_ATTRS = {"src", "href", "xlink:href", "srcset", "action", "formaction", "data", "poster",
             "background", "srcdoc"}


class _Collector(HTMLParser):
    """Tags, attributes and text of a page, as a browser's tokenizer would see them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.ends: Counter[str] = Counter()
        self._in_style = False
        self.styles: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        self.ends[tag] += 1
        self._in_style = False

    def handle_data(self, data):
        (self.styles if self._in_style else self.text).append(data)


def parse(page: str) -> _Collector:
    c = _Collector()
    c.feed(page)
    c.close()
    return c


@pytest.fixture(scope="module")
def page() -> str:
    return report(make_evaluation(), calibration=make_calibration(),
                  title="Report <i>x</i>").html


@pytest.fixture(scope="module")
def plain() -> Report:
    """A report without calibration."""
    return report(make_evaluation(6, xss=False))


# --------------------------------------------------------------------------- content
def test_sections_and_key_content(page):
    doc = parse(page)
    ids = [a.get("id") for _, a in doc.tags]
    for anchor in ("summary", "calibration", "coordination", "provenance"):
        assert anchor in ids
    text = " ".join(doc.text)
    for needle in ("Composite coordination", "Routing accuracy", "90 % target", "95 % target",
                   "Leaderboard", "Human ceiling κ = 0.780", "Confusion matrices",
                   "Label about 230 more items", "Handoffs by agent pair", "Agent pairs",
                   "lowest composite score", "Circular handoffs", "Contract violations",
                   "Per-fact retention ledger", "maev-kit version (report)", "support_desk"):
        assert needle in text, needle
    # One inline SVG per plot: summary forest, routing, κ forest, 4 confusions, handoff
    # counts and retention rates by agent pair.
    assert sum(1 for t, _ in doc.tags if t == "svg") == 9


def test_title_is_escaped(page):
    assert "<title>Report &lt;i&gt;x&lt;/i&gt;</title>" in page
    assert "<i>" not in page


def test_worst_conversations_with_traces(evaluation):
    page = report(evaluation, max_worst=3).html
    worst = evaluation.per_conversation.nsmallest(3, "composite")["conversation_id"]
    assert re.findall(r'<summary>(c-\d{3})<span class="meta">composite', page) == list(worst)
    # The traces are rendered (the widgets renderer marks each handoff with an arrow).
    assert page.count('class="maev-tv"') >= 3 or page.count('class="transcript"') >= 3
    assert not re.search(r"lowest composite score", report(evaluation, max_worst=0).html)


def test_numbers_have_three_decimals(page):
    no_svg = re.sub(r"<svg.*?</svg>", "", page, flags=re.S)
    text = html.unescape(re.sub(r"<[^>]+>", " ", no_svg))
    assert not re.findall(r"\b\d+\.\d{5,}\b", text)
    assert "0.620" in text and "<0.001" in text  # leaderboard κ and a small p-value
    assert "0.0123" in text  # cost keeps 4 decimals


def test_without_calibration_says_how_to_add_one(plain):
    page = plain.html
    assert "No calibration in this report" in page
    assert "calibration=" in page


@pytest.mark.parametrize("ceiling, expected", [
    ({"kappa": 0.8, "ci": [0.7, 0.9]}, (0.8, 0.7, 0.9)),
    ({"kappa": 0.8, "kappa_low": 0.7, "kappa_high": 0.9}, (0.8, 0.7, 0.9)),
    (pd.Series({"kappa": 0.8, "ci_low": 0.7, "ci_high": 0.9}), (0.8, 0.7, 0.9)),
    ({"kappa": 0.8}, (0.8, 0.8, 0.8)),
    ({"kappa": float("nan")}, None),
    (None, None),
])
def test_ceiling_shapes(ceiling, expected):
    assert _ceiling(ceiling) == expected


def test_ceiling_from_human_ceiling_object():
    from maev_kit.agreement import human_ceiling

    labels = {"a": ["retained", "lost", "retained", "contradicted", "lost", "retained"],
              "b": ["retained", "lost", "lost", "contradicted", "lost", "retained"]}
    hc = human_ceiling(labels, n_resamples=200)
    k, lo, hi = _ceiling(hc)
    assert k == pytest.approx(hc.kappa) and (lo, hi) == pytest.approx(hc.ci)


def test_calibration_without_ceiling_or_leaderboard(evaluation):
    cal = make_calibration(xss=False)
    cal.ceiling = None
    cal.labels_needed = None
    page = report(evaluation, calibration=cal).html
    assert "No human ceiling" in page
    # Not given: estimated from the best judge's κ and the human label shares.
    assert "How many more labels" in page and "For the best judge, gpt-4o-mini" in page
    cal.leaderboard = pd.DataFrame()
    cal.confusions = {}
    page = report(evaluation, calibration=cal).html
    assert "Judge calibration" in page and "How many more labels" not in page


def test_labels_needed_figure_is_inlined(evaluation):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 2))
    fig.add_subplot().set_title("labels needed <probe>")
    cal = make_calibration(xss=False)
    cal.labels_needed = fig
    page = report(evaluation, calibration=cal).html
    assert "labels needed &lt;probe&gt;" in page


def test_empty_evaluation_still_builds():
    from maev_kit.evaluation import EvaluationResult

    empty = pd.DataFrame()
    ev = EvaluationResult(empty, empty, empty, empty, empty, [], [], None, {}, {})
    r = report(ev, calibration=make_calibration(xss=False))
    assert "<!DOCTYPE html>" in r.html and "0 conversations" in r.html


def test_provenance_shows_labeled_set_and_judge_card(evaluation):
    class FakeSet:
        name, version, content_hash, labels_hash = "my-set", "2.1", "f" * 64, "e" * 64

    page = report(evaluation, labeled_set=FakeSet(), judge_card={"judge": "heuristic",
                                                                   "kappa": 0.61234}).html
    assert "my-set" in page and "f" * 64 in page and "e" * 64 in page
    assert "0.612" in page and "0.61234" not in page


# --------------------------------------------------------------------------- escaping
def test_xss_strings_show_as_text_everywhere(page):
    doc = parse(page)
    tags = {t for t, _ in doc.tags}
    assert "script" not in tags and "img" not in tags and "i" not in tags
    assert not [a for _, attrs in doc.tags for a in attrs if a.startswith("on")]
    text = "".join(doc.text)
    # The attack string appears as readable text in the trace, the tables, the leaderboard,
    # the recommendation, the routing confusion (a DataFrame index) and the ledger.
    assert text.count("<script>window.__pwned=1</script>") >= 8
    # `</div>`, `</table>` and `</details>` inside trace text did not close anything.
    opened = Counter(t for t, _ in doc.tags)
    for tag in ("div", "table", "details", "section"):
        assert opened[tag] == doc.ends[tag], tag


def test_svg_text_is_escaped(page):
    svgs = re.findall(r"<svg.*?</svg>", page, flags=re.S)
    heat = [s for s in svgs if "Handoffs by agent pair" in s]
    assert heat and "&lt;b&gt;evil&lt;/b&gt;$x$" in heat[0]  # `$` not read as mathtext
    kappa = [s for s in svgs if "Judge κ against the human labels" in s]
    assert kappa and "&lt;script&gt;" in kappa[0] and "<script" not in kappa[0]


def test_fallback_transcript_escapes(evaluation, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("an odd trace")

    monkeypatch.setattr("maev_kit.reporting._report.trace_html", broken)
    page = report(evaluation, max_worst=len(evaluation.per_conversation)).html
    assert 'class="transcript"' in page and 'class="maev-tv"' not in page
    doc = parse(page)
    assert "script" not in {t for t, _ in doc.tags}
    assert "img" not in {t for t, _ in doc.tags}
    assert "window.__pwned=2" in "".join(doc.text)


# --------------------------------------------------------------------------- self-contained
def test_no_network_loads(page):
    doc = parse(page)
    tags = {t for t, _ in doc.tags}
    assert not tags & {"script", "link", "iframe", "object", "embed", "img", "video", "audio"}
    for tag, attrs in doc.tags:
        for name, value in attrs.items():
            if name in URL_ATTRS and value:
                # in-page anchors and inline data only
                assert value.startswith(("#", "data:")), (tag, name, value[:80])
            if name == "style" and value:
                assert "url(" not in value.replace("url(#", ""), (tag, value)
    css = " ".join(doc.styles)
    assert "@import" not in css and not re.search(r"url\((?!#)", css)
    assert "@font-face" not in css


def test_ids_are_unique(page):
    ids = [a["id"] for _, a in parse(page).tags if a.get("id")]
    dupes = [i for i, n in Counter(ids).items() if n > 1]
    assert not dupes


# --------------------------------------------------------------------------- API
def test_save_writes_utf8_and_returns_path(page, tmp_path):
    r = Report(page)
    out = r.save(tmp_path / "sub" / "report.html")
    assert isinstance(out, Path) and out == tmp_path / "sub" / "report.html"
    assert out.read_text(encoding="utf-8") == r.html
    assert "κ" in out.read_bytes().decode("utf-8")
    with pytest.raises(IsADirectoryError, match="report.html"):
        r.save(tmp_path)


def test_repr_html_is_a_sandboxed_iframe(plain):
    r = plain
    out = r._repr_html_()
    assert out.startswith("<iframe srcdoc=") and 'sandbox=""' in out
    assert "<script" not in out and "<svg" not in out  # all of the page is in the attribute
    srcdoc = html.unescape(re.search(r'srcdoc="([^"]*)"', out).group(1))
    assert srcdoc == r.html
    assert repr(r).startswith("Report('maev-kit coordination report'")


def test_bad_arguments():
    with pytest.raises(TypeError, match="`evaluation` must be an EvaluationResult"):
        report(pd.DataFrame())
    ev = make_evaluation(2, xss=False)
    with pytest.raises(ValueError, match="`max_worst`"):
        report(ev, max_worst=-1)
    with pytest.raises(TypeError, match="`title`"):
        report(ev, title=None)


def test_import_stays_light():
    code = ("import sys, maev_kit.reporting, maev_kit; maev_kit.reporting; "
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("first", ["import maev_kit.reporting", "from maev_kit.reporting import Report",
                                   "import maev_kit"])
def test_top_level_name_in_any_import_order(first):
    # `from maev_kit import report` is the function whatever was imported before it.
    code = (f"{first}\nimport pandas as pd\nfrom maev_kit import report\n"
            "from maev_kit.evaluation import EvaluationResult\n"
            "e = pd.DataFrame()\n"
            "r = report(EvaluationResult(e, e, e, e, e, [], [], None, {}, {}), title='ok')\n"
            "print(type(r).__name__, r.title)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Report ok"


def test_judge_card_mismatch_is_flagged(evaluation):
    page = report(evaluation, judge_card={"judge_name": "tfidf-logreg", "kappa": 0.7}).html
    assert "The judge card pins tfidf-logreg, but this evaluation was scored with heuristic" \
        in page
    page = report(evaluation, judge_card={"judge_name": "heuristic"}).html
    assert "The judge card pins" not in page


def test_dataframe_tables_escape_headers_index_and_cells():
    from maev_kit.reporting._html import table

    df = pd.DataFrame({XSS: [XSS, 0.123456789]}, index=pd.Index([XSS, "b"], name="<i>"))
    out = table(df, index=True)
    doc = parse(out)
    assert {t for t, _ in doc.tags} <= {"div", "table", "thead", "tbody", "tr", "th", "td"}
    assert "".join(doc.text).count("<script>window.__pwned=1</script>") == 3
    assert "0.123" in out and "0.1234" not in out


def test_missing_values_show_as_na_not_nan():
    ev = make_evaluation(5, xss=False)
    agg = ev.aggregates.copy()
    agg.loc[agg["metric"] == "routing_exact", ["mean", "ci_low", "ci_high"]] = float("nan")
    ev.aggregates = agg
    ev.routing = None
    page = report(ev).html
    assert "n/a" in page  # drawn in the forest plot
    no_svg = re.sub(r"<svg.*?</svg>", "", page, flags=re.S)
    assert ">nan<" not in no_svg and ">NaN<" not in no_svg and "—" in no_svg
    assert "Routing accuracy" not in page  # no routing cases: no routing plot


def test_ci_level_comes_from_the_evaluation(page):
    assert "95 % CI 0." in page  # provenance says confidence 0.95
    ev = make_evaluation(3, xss=False)
    ev.provenance["confidence"] = 0.9
    assert "90 % CI" in report(ev).html and "95 % CI" not in report(ev).html.split("Routing")[0]
