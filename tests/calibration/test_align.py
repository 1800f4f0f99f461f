"""align: the prompt search, through the real litellm client over HTTP to FakeOpenAIServer.

The scripted model's answers depend on the prompt: it labels every fact correctly only when the
system prompt holds the marker word of the "careful" template, gets half right when worked
examples are shown, and says "retained" to everything otherwise. These tests check the search's
mechanics (what it scores where, what it picks, what it sends), not any real prompt's quality.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import pytest
from cli_helpers import run_cli

from maev_kit.agreement import majority_labels
from maev_kit.calibration import AlignmentResult, Budget, align
from maev_kit.calibration._human import load_human_labels
from maev_kit.datasets import load_labeled_set
from maev_kit.errors import InputError, JudgeErrorsExceeded
from maev_kit.judges import PromptTemplate
from maev_kit.judges._prompts import extract_prompt_data
from maev_kit.testing import FakeOpenAIServer

MARKER = "Weigh-every-word."
LS = load_labeled_set("support_desk")
HUMAN = load_human_labels(LS)


def _sig(fact: str, said: list[str]) -> str:
    return hashlib.sha256(json.dumps([fact, said]).encode()).hexdigest()


def _truth(items):
    out = {}
    for it in items:
        votes = HUMAN.get(it.item_id)
        if votes:
            out[_sig(it.fact, [m.content for m in it.after])] = majority_labels(
                {a: [lab] for a, lab in votes.items()})[0]
    return out


def _subset(split: str, n: int) -> list[str]:
    return sorted({it.conversation_id for it in LS.items_in(split)})[:n]


DEV, TEST = _subset("dev", 12), _subset("test", 12)
TRUTH = _truth(LS.items)


class Model:
    """A deterministic scripted judge model that records every prompt it is sent."""

    def __init__(self, rewrite: str | None = None) -> None:
        self.seen: list[list[dict]] = []
        self.rewrite = rewrite
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        msgs = body["messages"]
        with self.lock:
            self.seen.append(msgs)
        system, user = msgs[0]["content"], msgs[-1]["content"]
        if "<<<DISAGREEMENTS" in user:
            text = self.rewrite if self.rewrite is not None else f"{MARKER} Judge each fact."
            return f"Here you go.\n<<<INSTRUCTIONS\n{text}\nINSTRUCTIONS>>>"
        data = extract_prompt_data(msgs)
        said = [m["text"] for m in data.messages]
        out = {}
        for n, (fid, fact) in enumerate(data.facts):
            right = TRUTH.get(_sig(fact, said), "retained")
            if MARKER in system:
                label = right
            elif "<<<EXAMPLES" in user:
                label = right if n % 2 == 0 else "retained"
            else:
                label = "retained"
            out[fid] = {"status": label, "reason": "scripted"}
        return json.dumps(out)


@pytest.fixture
def careful(tmp_path: Path) -> Path:
    text = PromptTemplate.builtin("v1").text.replace("You evaluate", f"{MARKER} You evaluate", 1)
    path = tmp_path / "careful.txt"
    path.write_text(text, encoding="utf-8")
    return path


def _align(server: FakeOpenAIServer, **kw) -> AlignmentResult:
    args = dict(models=["openai/scripted"], dev_split=DEV, test_split=TEST,
                backend_params={"api_base": server.base_url, "api_key": "sk-local"},
                cache=False, progress=False, n_resamples=300, echo=lambda s: None)
    args.update(kw)
    return align(LS.items, LS, **args)


def _test_sigs() -> set[str]:
    test_ids = set(TEST)
    return {_sig(it.fact, [m.content for m in it.after]) for it in LS.items
            if it.conversation_id in test_ids}


def _holds_test_text(msgs: list[dict]) -> bool:
    if "<<<DISAGREEMENTS" in msgs[-1]["content"]:
        return any(it.fact in msgs[-1]["content"] for it in LS.items
                   if it.conversation_id in set(TEST))
    data = extract_prompt_data(msgs)
    said = [m["text"] for m in data.messages]
    return any(_sig(f, said) in _test_sigs() for _, f in data.facts)


def test_search_picks_the_candidate_better_on_dev_and_tests_it_once(careful: Path,
                                                                   tmp_path: Path) -> None:
    model = Model()
    with FakeOpenAIServer(model) as server:
        res = _align(server, candidates=[careful], examples=(0, 2))
    board = res.candidates.set_index("candidate")
    assert list(board.index) == ["openai/scripted [v4]", "openai/scripted [v4 +2 stratified]",
                                 "openai/scripted [careful]",
                                 "openai/scripted [careful +2 stratified]"]
    assert (board["status"] == "ok").all()
    # dev: the marker prompt beats examples, which beat the bare base prompt
    k = board["dev_kappa"]
    assert k["openai/scripted [careful]"] > k["openai/scripted [v4 +2 stratified]"] \
        > k["openai/scripted [v4]"]
    assert res.winner == "openai/scripted [careful]"
    assert res.dev.split == "dev" and res.test.split == "test"
    # test is scored separately: two judges, only test items, its own κ
    assert set(res.test.runs) == {"openai/scripted [v4]", "openai/scripted [careful]"}
    test_convs = {it.conversation_id for run in res.test.runs.values() for it in run.items}
    assert test_convs <= set(TEST) and not test_convs & set(DEV)
    dev_convs = {it.conversation_id for it in res.dev.runs[res.winner].items}
    assert dev_convs <= set(DEV)
    kappa, low, high = res.test_kappa()
    n_test = sum(1 for it in LS.items if it.conversation_id in set(TEST) and HUMAN.get(it.item_id))
    test_row = res.test.leaderboard.set_index("key").loc[res.winner]
    assert test_row["n_items"] == n_test and kappa == pytest.approx(1.0)
    base_k = res.test_kappa(res.base)[0]
    assert base_k < 0.1 and low <= kappa <= high
    cmp = res.comparison()
    assert cmp.delta > 0.5 and cmp.delta_low > 0 and cmp.mcnemar_p < 0.01
    assert cmp.n_broke == 0 and cmp.n_fixed == len(cmp.changed) > 0
    assert MARKER in cmp.text_b and MARKER not in cmp.text_a
    # the examples never came from the scored dev items
    ex_ids = board.loc["openai/scripted [v4 +2 stratified]", "example_ids"]
    scored = {it.item_id for it in res.dev.runs["openai/scripted [v4]"].items}
    assert len(ex_ids) == 2 and not set(ex_ids) & scored
    # requests counted per candidate add up to what the server saw
    assert board["requests"].sum() + sum(r.stats["requests"] for r in res.test.runs.values()) \
        == len(model.seen) == res.spent["requests"]
    # the card is the winner's, with its test κ
    card = res.card()
    assert card.prompt == "careful" and card.split == "test"
    assert card.kappa == pytest.approx(kappa)
    assert MARKER in card.prompt_text and "api_base" in card.params
    files = {p.name for p in res.save(tmp_path / "out")}
    assert files == {"candidates.csv", "alignment.json", "winner_prompt.txt", "judge_card.json"}
    saved = json.loads((tmp_path / "out" / "alignment.json").read_text())
    assert saved["winner"] == res.winner and saved["test"]["delta_kappa"] == pytest.approx(
        cmp.delta)
    assert MARKER in (tmp_path / "out" / "winner_prompt.txt").read_text()


def test_test_items_never_reach_the_search(careful: Path) -> None:
    model = Model()
    with FakeOpenAIServer(model) as server:
        res = _align(server, candidates=[careful], rewrites=1)
    flags = [_holds_test_text(m) for m in model.seen]
    first = flags.index(True)
    # every request before the final test scoring is free of test text; every one after is test
    assert not any(flags[:first]) and all(flags[first:])
    assert len(model.seen) - first == sum(r.stats["requests"] for r in res.test.runs.values())
    rewrite_at = [i for i, m in enumerate(model.seen) if "<<<DISAGREEMENTS" in m[-1]["content"]]
    assert len(rewrite_at) == 1 and rewrite_at[0] < first


def test_rewrite_from_dev_disagreements_becomes_a_candidate() -> None:
    model = Model()
    with FakeOpenAIServer(model) as server:
        res = _align(server, rewrites=1)
    row = res.candidates.set_index("candidate").loc["openai/scripted [rewrite-1]"]
    assert row["status"] == "ok" and row["source"] == "rewrite-1"
    assert res.winner == "openai/scripted [rewrite-1]"
    assert MARKER in res.templates[res.winner].text
    # the rewrite request showed dev disagreements (base says "retained" to lost facts)
    req = next(m for m in model.seen if "<<<DISAGREEMENTS" in m[-1]["content"])
    assert '"people": "lost"' in req[-1]["content"] or '"people": "contradicted"' in \
        req[-1]["content"]


def test_an_invalid_rewrite_is_logged_not_run() -> None:
    model = Model(rewrite="Judge {{facts}} now.")
    with FakeOpenAIServer(model) as server:
        res = _align(server, rewrites=1)
    row = res.candidates.set_index("candidate").loc["openai/scripted [rewrite-1]"]
    assert row["status"].startswith("invalid")
    assert "{{facts}}" in row["note"] and "rewrite-1" in row["note"]
    assert row["requests"] == 0 and res.winner == "openai/scripted [v4]"


def test_budget_stops_sending_at_the_limit(careful: Path) -> None:
    model = Model()
    with FakeOpenAIServer(model) as server:
        full = _align(server, candidates=[careful], dry_run=True)
        per = int(full.candidates["est_requests"].iloc[0])
        limit = per + per // 2
        res = _align(server, candidates=[careful], budget=Budget(max_requests=limit))
        assert len(server.completed) <= limit
    assert len(model.seen) == per <= limit
    status = dict(zip(res.candidates["candidate"], res.candidates["status"]))
    assert status == {"openai/scripted [v4]": "ok",
                      "openai/scripted [careful]": "skipped: budget"}
    assert res.test is None and res.spent["requests"] == per
    with pytest.raises(JudgeErrorsExceeded, match="not scored on the test split"):
        res.card()


def test_budget_guard_refuses_requests_past_the_limit_inside_a_run() -> None:
    model = Model()
    with FakeOpenAIServer(model) as server:
        # estimates say a candidate needs `per` requests; allow fewer than that for the test
        # phase by spending most of it on dev
        full = _align(server, dry_run=True)
        per = int(full.candidates["est_requests"].iloc[0])
        res = _align(server, budget={"max_requests": per + 3})
    assert len(model.seen) == per  # the test phase did not fit: nothing more was sent
    assert res.test is None


def test_dry_run_sends_nothing_and_estimates(careful: Path) -> None:
    model = Model()
    with FakeOpenAIServer(model) as server:
        res = _align(server, candidates=[careful], examples=(0, 3), rewrites=2, dry_run=True)
        assert len(server.completed) == 0
    assert model.seen == []
    assert (res.candidates["status"] == "not run: dry run").all()
    est = res.estimate
    groups = len({(it.conversation_id, it.handoff_index) for it in LS.items
                  if it.conversation_id in set(DEV) and HUMAN.get(it.item_id)})
    assert est["requests"] > 4 * (groups // 2) and est["tokens"] > est["requests"] * 100
    assert est["cost"] is None and est["models_unpriced"] == ["openai/scripted"]


def test_estimate_prices_tokens_with_given_prices() -> None:
    with FakeOpenAIServer(Model()) as server:
        res = _align(server, dry_run=True, backend_params={
            "api_base": server.base_url, "api_key": "sk-local", "input_cost_per_token": 1e-6,
            "output_cost_per_token": 2e-6})
    est = res.estimate
    # the dev candidate's estimate plus the two test runs (priced the same way)
    assert est["cost"] > res.candidates["est_cost"].sum() > 0
    assert 1e-6 * est["tokens"] < est["cost"] < 2e-6 * est["tokens"]


def test_max_cost_needs_a_price() -> None:
    with FakeOpenAIServer(Model()) as server:
        with pytest.raises(InputError, match="no price is known for model openai/scripted"):
            _align(server, budget=Budget(max_cost=0.01))
        assert len(server.completed) == 0


@pytest.mark.parametrize("kw, message", [
    ({"examples": (-1,)}, "`examples` must be counts >= 0"),
    ({"strategies": ("best",)}, "unknown example strategy 'best'"),
    ({"models": []}, "`models` must name at least one model"),
    ({"rewrites": -1}, "`rewrites` must be a whole number"),
    ({"dev_split": ["sd-001"], "test_split": ["sd-001"]}, "share 1 conversation"),
    ({"examples": (0, 500)}, "fewer than the 500 asked for"),
])
def test_bad_arguments_are_one_input_error(kw, message) -> None:
    with FakeOpenAIServer(Model()) as server:
        with pytest.raises(InputError, match=message.replace("(", r"\(")):
            _align(server, **kw)
        assert len(server.completed) == 0


# --------------------------------------------------------------------------- the CLI

def test_cli_dry_run_prints_the_estimate_and_sends_nothing(careful: Path, tmp_path: Path,
                                                           capsys) -> None:
    with FakeOpenAIServer(Model()) as server:
        code, out, err = run_cli(["align", "support_desk", "--judge", "openai/scripted",
                                  "--api-base", server.base_url, "--prompt", "v1", "--prompt",
                                  str(careful), "--examples", "0", "--examples", "2", "--dry-run",
                                  "--no-progress", "--out", str(tmp_path / "o")], capsys)
        assert len(server.completed) == 0
    assert code == 0, err
    assert "estimate: 4 candidate(s)" in err and "cost unknown" in err
    assert "dry run: nothing sent" in out and not (tmp_path / "o").exists()


def test_cli_writes_candidates_and_card(careful: Path, tmp_path: Path, capsys) -> None:
    out_dir = tmp_path / "out"
    with FakeOpenAIServer(Model()) as server:
        code, out, err = run_cli(["align", "support_desk", "--judge", "openai/scripted",
                                  "--api-base", server.base_url, "--prompt", "v1", "--prompt",
                                  str(careful), "--no-progress", "--no-cache", "--resamples", "200",
                                  "--out", str(out_dir)], capsys)
    assert code == 0, err
    assert err.startswith("estimate: 2 candidate(s)")
    assert "winner on dev: openai/scripted [careful]" in out
    assert f"written: {out_dir / 'judge_card.json'}" in out
    card = json.loads((out_dir / "judge_card.json").read_text())
    assert card["prompt"] == "careful" and card["split"] == "test"
    lines = (out_dir / "candidates.csv").read_text().splitlines()
    assert lines[0].startswith("candidate,model,prompt,prompt_sha256") and len(lines) == 3


def test_cli_budget_exhausted_is_exit_1(careful: Path, capsys) -> None:
    with FakeOpenAIServer(Model()) as server:
        dry = align(LS, models=["openai/scripted"], candidates=[careful], dry_run=True,
                    backend_params={"api_base": server.base_url}, cache=False, progress=False)
        per = int(dry.candidates["est_requests"].iloc[0])
        limit = per + per // 2
        code, out, err = run_cli(["align", "support_desk", "--judge", "openai/scripted",
                                  "--api-base", server.base_url, "--prompt", "v1", "--prompt",
                                  str(careful), "--no-progress", "--no-cache", "--resamples", "200",
                                  "--max-requests", str(limit)], capsys)
        assert len(server.completed) == per <= limit
    assert code == 1
    assert "warning: candidate openai/scripted [careful]: skipped: budget" in err
    assert err.strip().splitlines()[-1].startswith("error: the winner was not scored")


@pytest.mark.parametrize("args, message", [
    (["--judge", "heuristic"], "align searches the prompts of a model judge"),
    (["--judge", "openai/x", "--prompt", "nope.txt"], "unknown prompt 'nope.txt'"),
    (["--judge", "openai/x", "--dev-split", "train"], "has no split 'train'"),
])
def test_cli_bad_input_is_exit_2_one_line(args, message, capsys) -> None:
    code, out, err = run_cli(["align", "support_desk", *args, "--no-progress"], capsys)
    assert code == 2
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and message in lines[0]
