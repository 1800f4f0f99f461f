"""The report's section per criterion: question, shares with CIs, failures said, escaped."""

from maev_kit.criteria import Criterion
from maev_kit.evaluation import evaluate
from maev_kit.reporting import report

from criteria.conftest import make_traces, says_amount


def test_a_section_per_criterion():
    c = Criterion("grounded", scope="conversation", labels=("yes", "no"), positive="yes",
                  question="Is the <b>final</b> answer grounded?")
    ev = evaluate(make_traces(12, handoffs=False), criteria=[c], judge=says_amount,
                  progress=False, n_resamples=200)
    page = report(ev).html
    assert 'id="criterion-0"' in page and "Criterion: grounded" in page
    assert "Is the &lt;b&gt;final&lt;/b&gt; answer grounded?" in page
    assert "<b>final</b>" not in page
    assert "0.667" in page and "12 conversation item(s)" in page
    # the section comes after Retention and before Judge calibration
    assert page.index('id="retention"') < page.index('id="criterion-0"') < page.index(
        'id="calibration"')


def test_failure_attribution_section_has_a_row_per_agent_named():
    from maev_kit.criteria import failure_attribution

    from criteria.conftest import blames_on_amount

    ev = evaluate(make_traces(12, handoffs=False), criteria=[failure_attribution()],
                  judge=blames_on_amount, progress=False, n_resamples=200)
    page = report(ev).html
    assert "Criterion: failure-attribution" in page
    assert "12 which-agent item(s) of 12 conversation(s)" in page
    assert "the answers are the agents of each conversation" in page
    assert "0.667" in page and "0.333" in page  # billing 8 of 12, triage 4 of 12
