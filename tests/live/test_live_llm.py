"""Opt-in: a real provider, through litellm. Run with `pytest --live tests/live` and a key.

Never runs in CI (no `--live`), never without an API key. Costs a fraction of a cent.
"""

import os

import pytest

pytestmark = pytest.mark.live

MODEL = os.environ.get("MAEV_LIVE_MODEL", "gpt-4o-mini")


@pytest.fixture
def api_key():
    key = os.environ.get("OPENAI_API_KEY")
    if not key:
        pytest.skip("set OPENAI_API_KEY (and optionally MAEV_LIVE_MODEL) for the live test")
    return key


def test_real_model_judges_support_desk_items(api_key, tmp_path):
    from maev_kit import RetentionJudge, load_labeled_set, run_judge

    ls = load_labeled_set("support_desk")
    items = [i for i in ls.items_in("test") if i.handoff_index == 0][:6]
    run = run_judge(RetentionJudge(prompt="v2"), items, MODEL, cache=tmp_path, progress=False,
                    max_concurrency=4, timeout=60)
    assert run.stats["requests"] >= 1
    assert all(v.label in ("retained", "lost", "contradicted") or v.error for v in run.verdicts)
    assert sum(v.label is not None for v in run.verdicts) >= len(items) // 2
    again = run_judge(RetentionJudge(prompt="v2"), items, MODEL, cache=tmp_path, progress=False)
    assert again.stats["requests"] == 0


def test_real_model_alignment_on_snli_calibration(api_key, tmp_path):
    """A small alignment with a real model: v1 and v2, one rewrite, capped at 300 requests."""
    from maev_kit import load_labeled_set
    from maev_kit.calibration import align

    ls = load_labeled_set("snli_calibration")
    dev = sorted({i.conversation_id for i in ls.items_in("dev")})[:40]
    test = sorted({i.conversation_id for i in ls.items_in("test")})[:40]
    res = align(ls, models=[MODEL], base_prompt="v1", candidates=["v2"], rewrites=1,
                dev_split=dev, test_split=test, budget={"max_requests": 300},
                cache=tmp_path / "cache", progress=False, max_concurrency=4, n_resamples=2000)
    assert res.spent["requests"] <= 300
    assert res.winner in set(res.candidates["candidate"])
    assert res.test is not None and res.test.split == "test"
    test_items = {it.conversation_id for r in res.test.runs.values() for it in r.items}
    assert test_items <= set(test) and not test_items & set(dev)
    files = {p.name for p in res.save(tmp_path / "out")}
    assert {"candidates.csv", "judge_card.json"} <= files
