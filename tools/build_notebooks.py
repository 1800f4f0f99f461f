"""Write the notebooks under notebooks/ from the cell sources below (outputs stripped).

Each notebook writes only under ``maev-work/`` beside ``notebooks/`` (never into
``notebooks/``), and none records a label: labels come from a person clicking in the Labeler.

Run: python tools/build_notebooks.py. Editing the .ipynb files in JupyterLab is fine too; strip
outputs before committing (tests check that).
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "notebooks"


def md(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text.strip("\n")}


def code(text: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
            "source": text.strip("\n")}


WORK_MD = md("""
**Where files go.** Everything these notebooks write (labels, judge cards, reports, the judge
reply cache) goes to a `maev-work/` folder beside `notebooks/` (the repository root in a clone;
the current folder if you copied a notebook elsewhere), never into `notebooks/` itself.
`maev-work/` is in `.gitignore`; delete it whenever you like.
""")
WORK_CODE = code("""
from pathlib import Path

here = Path.cwd()
WORK = (here.parent if here.name == "notebooks" else here) / "maev-work"
WORK.mkdir(exist_ok=True)
print("working folder:", WORK)
""")


NOTEBOOKS = {
    "01_explore_traces": [
        md("""
# 1 · Explore multi-agent traces

Load a labeled set (traces + expectations + labels), look at a conversation, and run the
deterministic coordination metrics: handoff accuracy, routing, circular handoffs, contracts.
Everything here runs offline.
"""),
        WORK_MD,
        WORK_CODE,
        code("""
import maev_kit as mk

ls = mk.load_labeled_set("support_desk")   # a bundled set; or a path to your own folder
ls
"""),
        md("Every conversation is a `MultiAgentTrace`. In a notebook it renders as a timeline: one lane per agent, handoff markers with the context passed."),
        code("""
trace = max(ls.traces, key=lambda t: t.handoff_count())
print(trace.conversation_id, trace.agents_involved(), trace.turns_per_agent())
mk.show(trace)
"""),
        md("""
## The conversation view: what judges and annotators read

A receiving agent often works through tools. Judges, the Labeler, the fact proposers and the
report all read one view of a trace, `trace.messages()`: user and agent text, **tool calls**
(name and arguments), **tool results** and **handoffs** with their context, each marked by
kind, in order. For handoff A→B only B's entries are evidence (`item.evidence`); the user's and
other agents' are context. Here billing never writes the account number; it uses it in a tool
call, so the judge calls the fact retained and points at the argument.
"""),
        code("""
import pandas as pd
from maev_kit.expectations import ConversationExpectations, KeyFact
from maev_kit.judges import HeuristicJudge
from maev_kit.retention import build_retention_items

t = mk.MultiAgentTrace(
    "tool-demo",
    user_messages=["I was charged twice. My account is ACCT-4471-9920."],
    turns=[mk.AgentTurn("triage", "router", "Passing you to billing.", turn_index=1),
           mk.AgentTurn("billing", "specialist", "", [{
               "name": "lookup_invoices", "arguments": {"account_number": "ACCT-4471-9920"},
               "output": {"invoice": "INV-88213", "amount": "49.00"}}], turn_index=3),
           mk.AgentTurn("billing", "specialist", "Refund RF-5521 is on its way.", turn_index=4)],
    handoffs=[mk.Handoff("triage", "billing", None, {"reason": "duplicate charge"}, turn_index=2)])
pd.DataFrame([(m.turn_index, m.part, m.kind, m.speaker, m.content) for m in t.messages()],
             columns=["turn", "part", "kind", "speaker", "content"])
"""),
        code("""
exp = {"tool-demo": ConversationExpectations(
    "tool-demo", key_facts=[KeyFact("acct", 0, "Account number is ACCT-4471-9920")])}
item, = build_retention_items([t], exp)
verdict, = HeuristicJudge().judge_items([item])
print(verdict.label, "·", verdict.span.describe())
mk.show(t)
"""),
        md("DataFrames for your own analysis: one row per turn, one per handoff."),
        code("""
turns = mk.traces_to_frame(ls.traces)
handoffs = mk.handoffs_to_frame(ls.traces)
handoffs.groupby(["from_agent", "to_agent"]).size().unstack(fill_value=0)
"""),
        md("## Handoff accuracy\n\nThe default matching aligns actual to expected handoffs in order, so one extra early handoff doesn't mark every later one wrong. `matching=\"positional\"` gives the article's behaviour."),
        code("""
exp = ls.expectations[trace.conversation_id]
aligned = mk.score_handoff_accuracy(trace.handoffs, exp.handoffs)
positional = mk.score_handoff_accuracy(trace.handoffs, exp.handoffs, matching="positional")
{k: (getattr(aligned, k), getattr(positional, k)) for k in ["target_accuracy", "reason_accuracy", "context_completeness", "unexpected_handoffs"]}
"""),
        md("## Loops and contracts"),
        code("""
loops = [mk.detect_circular_handoffs(t) for t in ls.traces]
flagged = [r for r in loops if r.should_escalate]
print(f"{len(flagged)} of {len(loops)} conversations should escalate to a human")
[r.to_dict() for r in flagged[:2]]
"""),
        code("""
from maev_kit.metrics import parse_contracts
contracts = parse_contracts(ls.manifest.contracts)
violations = [(t.conversation_id, v) for t in ls.traces for v in mk.check_handoff_contracts(t, contracts)]
print(len(violations), "contract violations")
violations[:3]
"""),
        md("## Routing\n\nThe triage agent's first handoff is its routing decision."),
        code("""
cases, routes = [], []
for t in ls.traces:
    for case in ls.expectations[t.conversation_id].routing:
        cases.append(case)
        routes.append(t.handoffs[0].to_agent if t.handoffs else None)
mk.score_routing(cases, routes).to_dict()
"""),
        code("mk.routing_confusion(cases, routes)"),
        md("## Import from an agent framework\n\nExports of OpenAI Agents SDK, OTel GenAI, OpenInference, LangGraph, AutoGen and CrewAI load with `maev_kit.traces.importers.import_traces(path)`. A generic chat log works too:"),
        code("""
import json
from maev_kit.traces.importers import import_traces

chat = [{"role": "user", "content": "My invoice is wrong, account ACCT-4471"},
        {"role": "assistant", "name": "triage", "content": "Sending you to billing."},
        {"role": "assistant", "name": "billing", "content": "I see account ACCT-4471. Fixing the invoice."}]
path = WORK / "chat.json"
path.write_text(json.dumps(chat), encoding="utf-8")
traces, unmapped = import_traces(path, format="chat", speaker_change_handoffs=True)
traces[0].handoffs, unmapped
"""),
    ],
    "02_label_retention": [
        md("""
# 2 · Label information retention

For each key fact stated before a handoff: after the handoff, was it **retained**, **lost**
(ignored or asked again) or **contradicted**? The `Labeler` shows one item at a time and writes
every click to an append-only `labels.jsonl` (flushed and fsynced before it is acknowledged), so
a dead kernel loses nothing and you resume where you stopped.

Keys: `1` retained · `2` lost · `3` contradicted · `s` skip · `←`/`→` move · `u` undo.
Judge verdicts stay hidden until you have labeled an item (blind labeling).

Running this notebook labels nothing: a label is written only when you click (or press a key)
in the widget, under the name in `ANNOTATOR`.
"""),
        WORK_MD,
        WORK_CODE,
        code("""
import getpass

import maev_kit as mk
from maev_kit.labels import LabelStore
from maev_kit.widgets import Labeler

ANNOTATOR = getpass.getuser()   # your name in the labels file: change it to what you want shown
ls = mk.load_labeled_set("support_desk")
items = ls.items_in("dev")[:25]
store = LabelStore(WORK / "labels.jsonl")   # shared by every annotator; one line per click
labeler = Labeler(items, store, annotator=ANNOTATOR)
labeler
"""),
        md("""
The widget is a view over a `LabelingSession` (`labeler.session`), which you can also drive
from code, for example to bring in labels you made elsewhere:

```python
labeler.session.label("lost", note="agent asked for the account number again")
labeler.session.progress()
```

That is not run here: a label written from code is recorded under `ANNOTATOR` exactly as a
click would be, so only do it with labels that are really yours.
"""),
        md("Your labels so far (empty until you click):"),
        code("""
store.to_frame().tail()
"""),
        md("""
## How much do two people agree?

Compare your labels with the set's **reference labels** (written by the maev-kit authors). Until
you have labeled some items, the heuristic judge stands in as the second rater, so you can see
what the comparison looks like; its verdicts are shown here, never saved as labels.
"""),
        code("""
from maev_kit.agreement import agreement_report
from maev_kit.judges import HeuristicJudge

reference = {d["item_id"]: d["label"] for d in ls.labels()}
mine = {r.item_id: r.label for r in store.latest(annotator=ANNOTATOR).values()}
if mine:
    other, who = mine, ANNOTATOR
else:
    other = {v.item_id: v.label for v in HeuristicJudge().judge_items(items)}
    who = "the heuristic judge (label some items to see your own agreement)"
ids = [i for i in other if i in reference]
print(f"reference labels vs {who}: {len(ids)} items")
agreement_report([reference[i] for i in ids], [other[i] for i in ids], n_resamples=2000)
"""),
    ],
    "03_calibrate_judges": [
        md("""
# 3 · Calibrate judges before trusting them

A judge's retention labels are worth something only once it agrees with people. `calibrate`
runs every judge × prompt variant on the same labeled items and ranks them by Cohen's κ with a
bootstrap CI, next to the human–human ceiling, with a paired test of each judge against the best.

This notebook runs offline: the two offline judges, and the LLM judge's prompt variants served
by the kit's local OpenAI-compatible server.
"""),
        WORK_MD,
        WORK_CODE,
        code("""
import maev_kit as mk
from maev_kit.calibration import calibrate

ls = mk.load_labeled_set("support_desk")
cal = calibrate(ls, judges=["heuristic", "tfidf-logreg"], progress=False)
cal.leaderboard[["judge", "prompt", "kappa", "kappa_low", "kappa_high", "accuracy", "recall_contradicted"]]
"""),
        code("print(cal.recommendation)"),
        code("""
from maev_kit.widgets import CalibrationDashboard
CalibrationDashboard(cal)
"""),
        md("""
## Real LLM judges

Any litellm model string is a judge; API keys come from the environment:

```python
import os
os.environ["OPENAI_API_KEY"] = "..."          # or ANTHROPIC_API_KEY, …
cal = calibrate(ls, judges=["heuristic", "gpt-4o-mini", "anthropic/claude-3-5-haiku-20241022"],
                prompts=["v1", "v2"])
```

Any OpenAI-compatible server (vLLM, llama.cpp, Ollama's `/v1`, …) works with an `openai/<name>`
model and `api_base`. Below, the kit's own local server stands in for one, so this runs offline:
the server answers the retention prompt with the heuristic judge, so expect similar numbers.
Replies are cached in `maev-work/cache/` (the `cache=` argument): a rerun sends no request.
"""),
        code("""
from maev_kit.testing import FakeOpenAIServer

with FakeOpenAIServer() as server:
    cal_llm = calibrate(ls, judges=["heuristic", "openai/local-model"], prompts=["v1", "v2"],
                        backend_params={"api_base": server.base_url, "api_key": "not-needed"},
                        cache=WORK / "cache", progress=False)
cal_llm.leaderboard[["judge", "prompt", "kappa", "kappa_low", "kappa_high", "requests", "cache_hits"]]
"""),
        md("""
## Your own prompt

A prompt is a text file with a `=== system ===` and a `=== user ===` section and the same
placeholders as the shipped ones (see `docs/prompts.md`). It is checked when loaded, named by
its file's stem (or `name=`) and identified by a hash of its text; `--prompt FILE` takes one on
the command line. Here: v1 with one more sentence.
"""),
        code("""
from maev_kit.judges import PromptTemplate

v1 = PromptTemplate.builtin("v1")
extra = (" A fact the receiving agent asks for again was lost, even if the user then repeats "
         "it.")
text = v1.text.replace("lost or contradicted.\\n", "lost or contradicted." + extra + "\\n", 1)
careful = PromptTemplate.from_text(text, name="careful")   # from a file: PromptTemplate.from_file(path)
careful.name, careful.sha256[:12], careful.sha256 != v1.sha256
"""),
        md("""
## A short alignment search

`align` tries candidate judges — prompts × worked examples × models — on the **dev** split
only, picks the one whose κ CI has the highest lower bound, then scores the winner and the base
prompt once on the **test** split. The Δκ on test, with its paired CI and McNemar p, is the
number to trust (the dev κ of the winner is biased upward by the choice). An estimate is printed
before anything is sent; `budget=` caps the requests.

The local server answers with the heuristic judge whatever the prompt says, so here every
candidate ties and the base prompt stays; with a real model the candidates differ, and the
dashboard shows the two prompts side by side with every verdict that changed.
"""),
        code("""
from maev_kit.calibration import align

with FakeOpenAIServer() as server:
    aligned = align(ls, base_prompt="v1", models=["openai/local-model"],
                    candidates=[careful], examples=(0, 2),
                    backend_params={"api_base": server.base_url, "api_key": "not-needed"},
                    budget={"max_requests": 2000}, cache=WORK / "cache", progress=False,
                    echo=print)
aligned.candidates[["candidate", "status", "dev_kappa", "dev_kappa_low", "dev_kappa_high",
                    "requests", "est_requests"]]
"""),
        code("""
print(aligned)
CalibrationDashboard(aligned, traces=ls.traces)
"""),
        md("## Pin the winner\n\nA judge card records the judge, prompt hash, labeled-set hash and κ. Scoring with a card warns when any of them no longer matches."),
        code("""
card = cal.card()
card.save(WORK / "judge_card.json")
print("wrote", WORK / "judge_card.json")
card
"""),
        md("## Where to label next\n\nItems where judges disagree most narrow the CIs fastest — for calibrating a judge. They are *not* a random sample: never use them for a corrected rate (next section)."),
        code("""
from maev_kit.calibration import next_items_to_label
next_items_to_label(ls.items, list(cal.runs.values()), k=5)
"""),
        md("""
## Numbers you can cite: judge-only, human-only, corrected

A rate from the judge alone carries the judge's error; its interval narrows around the wrong
value. Label a **random sample** of the judged items (`maev sample`, or `draw_label_sample`) and
the kit gives three estimates of each rate: the judge's, the labels' alone, and PPI++ — the
judge's rate corrected by its error on the sample (docs/estimates.md). The SNLI set has five
real crowd labels per item (CC BY-SA 4.0), so we can draw 100 of its 800 items as if only they
were labeled, and see all three.
"""),
        code("""
from maev_kit.labels import draw_label_sample

snli = mk.evaluate("snli_calibration", judge="heuristic", progress=False, n_resamples=200)
sample = draw_label_sample(list(snli.ledger["item_id"]), 100, seed=3)
snli = mk.evaluate("snli_calibration", judge="heuristic", progress=False, n_resamples=200,
                   label_sample=sample)
overall = snli.estimates[snli.estimates["scope"] == "all"]
overall[["rate", "method", "estimate", "ci_low", "ci_high", "n", "N", "lam"]].round(3)
"""),
        code("""
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(7, 3.2))
colors = {"judge-only": "#8c959f", "human-only": "#1f77b4", "ppi++": "#d95f02"}
for j, (rate, part) in enumerate(overall.groupby("rate", sort=False)):
    for k, row in enumerate(part.itertuples()):
        y = j * 4 + k
        ax.errorbar(row.estimate, y, xerr=[[row.estimate - row.ci_low], [row.ci_high - row.estimate]],
                    fmt="o", color=colors[row.method], capsize=3,
                    label=row.method if j == 0 else None)
    ax.text(-0.02, j * 4 + 1, rate, ha="right", va="center")
ax.set_yticks([]); ax.set_xlim(0, 0.7); ax.invert_yaxis()
ax.set_xlabel("share of facts (95 % CI)"); ax.legend(loc="lower right", frameon=False)
ax.set_title("The heuristic under-calls contradictions; the corrected rate follows the people")
plt.tight_layout()
"""),
        md("How many labels would ±0.05 take? The planner uses the labels so far as a pilot:"),
        code("""
snli.label_budget[["rate", "labels_needed", "more_labels", "expected_half_width",
                   "labels_needed_without_judge"]]
"""),
    ],
    "04_coordination_report": [
        md("""
# 4 · Coordination report

Score every conversation with the chosen judge, look at the aggregates (with bootstrap CIs), the
worst conversations and the agent pairs, then write one self-contained HTML file to share.
"""),
        WORK_MD,
        WORK_CODE,
        code("""
import maev_kit as mk

ls = mk.load_labeled_set("support_desk")
result = mk.evaluate(ls, judge="heuristic", progress=False)
result.summary()
"""),
        code("result.worst(5)[['conversation_id', 'composite', 'target_accuracy', 'retention_rate', 'contradicted', 'n_loops', 'contract_violations']]"),
        code("result.pair_stats.sort_values('handoffs', ascending=False).head(10)"),
        md("""
## Each fact, hop by hop

A key fact belongs to the conversation: it is judged at the handoff where it was stated and at
every later one. `result.fact_ledger` follows each fact: its path (`R` retained, `L` lost,
`C` contradicted), the first handoff where it was lost, and whether a later agent got it back.
`result.ledger` has one row per fact per handoff, with where the evidence is.
"""),
        code("""
facts = result.fact_ledger
print(f"{len(facts)} facts, {len(result.ledger)} verdicts; "
      f"{int(facts.first_lost_handoff.notna().sum())} lost somewhere, "
      f"{int(facts.reacquired.fillna(False).sum())} re-acquired")
facts.sort_values("hops", ascending=False).head(8)[["conversation_id", "fact", "hops", "path", "first_lost_handoff", "reacquired"]]
"""),
        code("result.ledger.dropna(subset=['evidence_at'])[['item_id', 'label', 'evidence_at']].head(5)"),
        md("## How much do the weights matter?"),
        code("""
row = result.per_conversation.mean(numeric_only=True)
mk.weight_sensitivity({"target_accuracy": row.target_accuracy, "context_completeness": row.context_completeness},
                      {"retention_rate": row.retention_rate, "contradicted": row.contradicted},
                      {"acceptable_routing_accuracy": row.routing_acceptable})
"""),
        md("## The report"),
        code("""
from maev_kit.calibration import calibrate

cal = calibrate(ls, judges=["heuristic", "tfidf-logreg"], progress=False)
path = mk.report(result, calibration=cal, labeled_set=ls).save(WORK / "report.html")
print("wrote", path)
"""),
    ],
    "05_team_session": [
        md("""
# 5 · A team labeling session, scripted end to end

A team session (docs/team-sessions.md) in five steps: **plan** who labels which item (20 % of
the items labeled twice) → three annotators **label** their own queues → an adjudicator
**settles** the items they disagree on → **calibrate** the heuristic judge against the settled
labels → the **report**. The whole session runs twice, once on a SQLite store and once on a
`labels.jsonl` file, and the figures must be equal: the store changes where labels live, never
what they say.

**Nobody labels here.** The three "annotators" and the adjudicator are scripted, named
`simulated-…` so that nothing passes for a person's work. A scripted annotator gives the
set's **reference label** (written by the maev-kit authors, not by independent human
annotators) except on a seeded share of its items, where it gives another class instead:
that perturbation is what makes disagreements to settle. Real sessions use the `Labeler`
(notebook 2) and the `Adjudicator` widget shown below.
"""),
        WORK_MD,
        WORK_CODE,
        md("""
This notebook's files go to `maev-work/team-session/` (started afresh on every run): the plan,
`labels.db`, `labels.jsonl` and the reports. It never touches `maev-work/labels.jsonl`, where
notebook 2 keeps *your* labels.
"""),
        code("""
import shutil

SESSION = WORK / "team-session"
shutil.rmtree(SESSION, ignore_errors=True)   # only this notebook's scripted session
SESSION.mkdir()
STORES = {"sqlite": f"sqlite:///{SESSION / 'labels.db'}", "jsonl": str(SESSION / "labels.jsonl")}
STORES
"""),
        md("""
## 1 · Plan

The test split's items that have a reference label; three annotators, overlap 0.2, seed 0.
The plan goes beside the labels as `session_plan.json`, where `maev session status` finds it.
"""),
        code("""
import maev_kit as mk
from maev_kit.labels import plan_session

ls = mk.load_labeled_set("support_desk")
reference = {d["item_id"]: d["label"] for d in ls.labels()}   # by the maev-kit authors
items = [it for it in ls.items_in("test") if it.item_id in reference]
ANNOTATORS = ["simulated-ana", "simulated-ben", "simulated-cleo"]
plan = plan_session([it.item_id for it in items], ANNOTATORS, overlap=0.2, seed=0)
plan.save(SESSION)
print(len(items), "items,", len(plan.overlap_items()), "labeled twice;", plan.counts())
"""),
        md("""
## 2 · Label — scripted annotators, each through their own `LabelingSession`

`SLIP` is each scripted annotator's share of items labeled with another class than the
reference: the class is drawn by a `random.Random` seeded with the annotator's name and the
item id, so every run (and both stores) get the same labels. Each label line's note says it
was scripted.
"""),
        code("""
import random

from maev_kit.labels import LabelingSession

SLIP = {"simulated-ana": 0.15, "simulated-ben": 0.20, "simulated-cleo": 0.25}
CLASSES = ("retained", "lost", "contradicted")

def scripted_label(annotator, item_id):
    \"\"\"The reference label, or with probability SLIP[annotator] one of the other two.\"\"\"
    rng = random.Random(f"{annotator}|{item_id}")
    ref = reference[item_id]
    if rng.random() < SLIP[annotator]:
        return rng.choice([c for c in CLASSES if c != ref])
    return ref

def label_queues(store):
    for ann in ANNOTATORS:
        s = LabelingSession(items, store, annotator=ann, order=plan.queue(ann))
        while not s.done:
            s.label(scripted_label(ann, s.current.item_id),
                    note="scripted: reference label with a seeded perturbation")
    return plan.progress(store)

label_queues(STORES["sqlite"])
"""),
        md("""
## 3 · Adjudicate

The items labeled twice where the two scripted annotators differ. The `Adjudicator` widget is
how a person settles them (nothing is settled by displaying it); here the scripted adjudicator
drives the same `AdjudicationSession` by a stated rule: **the settled label is the reference
label**.
"""),
        code("""
from maev_kit.labels import AdjudicationSession, disagreements
from maev_kit.widgets import Adjudicator

ADJUDICATOR = "simulated-adjudicator"
print(len(disagreements(STORES["sqlite"], plan)), "disagreements")
Adjudicator(items, STORES["sqlite"], adjudicator=ADJUDICATOR, plan=plan)
"""),
        code("""
def settle_all(store):
    s = AdjudicationSession(items, store, ADJUDICATOR, plan=plan)
    while not s.done:
        s.settle(reference[s.current.item_id], note="scripted rule: the reference label")
    return s.progress()

settle_all(STORES["sqlite"])
"""),
        md("""
`maev session status` shows progress, disagreements and α / AC1 across the annotators on the
items labeled twice (the human ceiling):
"""),
        code("""
import json
import subprocess
import sys

def session_status(store, *args):
    cmd = [sys.executable, "-m", "maev_kit.cli", "session", "status", str(SESSION),
           "--store", store, *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout

print(session_status(STORES["sqlite"]))
"""),
        md("""
## 4 · Calibrate the judge against the settled labels

`settled_human_labels` gives `{item_id: {"settled": label}}`. The settled items are the hard
ones (those two annotators disagreed on) and few, so expect a wide CI.
"""),
        code("""
from maev_kit.calibration import calibrate
from maev_kit.labels import settled_human_labels

def calibrate_settled(store):
    settled = settled_human_labels(store)
    return calibrate([it for it in items if it.item_id in settled], settled,
                     judges=["heuristic"], n_resamples=2000, seed=0, progress=False)

cal = calibrate_settled(STORES["sqlite"])
cal.leaderboard[["judge", "kappa", "kappa_low", "kappa_high", "accuracy", "n_items"]]
"""),
        md("## 5 · Report\n\nAn evaluation of the test split with the heuristic judge, and that calibration."),
        code("""
result = mk.evaluate(ls, judge="heuristic", split="test", progress=False)

def save_report(cal, name):
    return mk.report(result, calibration=cal, labeled_set=ls).save(SESSION / name)

print("wrote", save_report(cal, "report-sqlite.html"))
"""),
        md("""
## The same session on `labels.jsonl`

Every step again, on the JSONL store; then the figures of both runs side by side.
"""),
        code("""
import math

def figures(store, cal):
    row = cal.leaderboard.iloc[0]
    ag = json.loads(session_status(store, "--json"))["agreement"]
    return {"kappa": float(row.kappa), "kappa_ci": (float(row.kappa_low), float(row.kappa_high)),
            "accuracy": float(row.accuracy), "n_items": int(row.n_items),
            "alpha": ag["krippendorff_alpha"], "ac1": ag["gwet_ac1"],
            "settled": settled_human_labels(store)}

label_queues(STORES["jsonl"])
settle_all(STORES["jsonl"])
cal_jsonl = calibrate_settled(STORES["jsonl"])
print("wrote", save_report(cal_jsonl, "report-jsonl.html"))
runs = {"sqlite": figures(STORES["sqlite"], cal), "jsonl": figures(STORES["jsonl"], cal_jsonl)}
{k: {name: v for name, v in f.items() if name != "settled"} for k, f in runs.items()}
"""),
        code("""
assert runs["sqlite"]["settled"], "no settled labels: nothing was compared"
assert all(math.isfinite(x) for x in (runs["sqlite"]["kappa"], *runs["sqlite"]["kappa_ci"]))
assert runs["sqlite"] == runs["jsonl"], "the two stores gave different figures"
print(f"equal on both stores: κ, its CI, accuracy, α / AC1 and "
      f"{len(runs['sqlite']['settled'])} settled labels")
"""),
    ],
}


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for name, cells in NOTEBOOKS.items():
        cells = [dict(c) for c in cells]  # the shared work-folder cells get one id each
        nb = {"cells": cells, "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
        for i, c in enumerate(nb["cells"]):
            c["id"] = f"{name[:2]}-{i:02d}"
        (OUT / f"{name}.ipynb").write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n",
                                           encoding="utf-8")
        print("wrote", OUT / f"{name}.ipynb")


if __name__ == "__main__":
    main()
