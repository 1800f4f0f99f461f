"""Tokens per judge request, measured on the real prompts, and what a judge run costs.

Run: ``python benchmarks/bench_tokens.py`` (about 15 s; never touches the network).

For every bundled labeled set with key facts (``labeled_sets/*``) and for the prompts ``v1``
and ``v2`` this builds the requests the runner sends — the set's retention items (as the
evaluation pipeline builds them from the key facts), grouped one request per handoff and
rendered by the same :class:`~maev_kit.runner._run._JudgeTask` that ``run_judge`` uses, i.e.
``RetentionJudge(prompt).build_messages(facts of one handoff)`` — and counts their tokens with
the counter litellm uses for its own accounting, ``litellm.token_counter(model, messages=...)``
(tiktoken ``o200k_base`` for ``gpt-4o-mini``, plus OpenAI's per-message overhead).

Completion tokens are those of a reply written for each request, counted with
``litellm.token_counter(model, text=reply)``:

- **reference** — the reply the prompt asks for, with the right answer: one JSON object, one key
  per fact id, ``{"status": <the set's reference label>, "reason": <a short rationale>}``; the
  rationale is the heuristic judge's for that fact followed by its evidence in parentheses
  (``"the messages hold a different value (money conflict: fact '$49.99', messages
  '$59.99')"``): a sentence that names the values, as a one-sentence reason would. Compact JSON
  (``json.dumps``), as the prompt's own example is written.
- **pretty** — the same object pretty-printed (indent 2) inside a ```` ```json ```` fence, as chat
  models often answer when no ``response_format`` is set (the runner sets none).
- **echo** — what the kit's fake OpenAI server answers (``answer_retention_prompt``: the heuristic
  judge's label, rationale and an extra ``evidence`` list per fact).

Prices are litellm's price map (``litellm.model_cost``, read from the copy bundled with litellm:
``LITELLM_LOCAL_MODEL_COST_MAP=True``). Batch prices are the map's ``*_cost_per_token_batches``
when it has them, else half the synchronous price (what the providers charge).

Options: ``--model`` (default ``gpt-4o-mini``), ``--sets NAME ...`` (default every bundled set
with key facts), ``--examples K`` (also measure ``v1``/``v2`` with K worked examples drawn from
the dev split, scoring the other splits), ``--handoffs N`` (the run size priced, default 10
million).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from maev_kit.datasets import load_labeled_set
from maev_kit.judges import HeuristicJudge, RetentionJudge, answer_retention_prompt
from maev_kit.judges._prompts import render_facts, render_messages
from maev_kit.runner._run import _group, _JudgeTask

REPO = Path(__file__).resolve().parent.parent
PROMPTS = ("v1", "v2", "v3", "v4")
REPLIES = ("reference", "pretty", "echo")
_REFERENCE_KINDS = ("reference", "gold")


def _no_network() -> None:
    """Make every outgoing connection of this process fail loudly (the benchmark is offline)."""
    def refuse(*_a: Any, **_k: Any) -> None:
        raise RuntimeError("bench_tokens.py must not touch the network")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse  # type: ignore[method-assign]
    socket.create_connection = refuse  # type: ignore[assignment]


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from maev_kit.backends._litellm import import_litellm  # sets the variable too, quiets logs

    return import_litellm()


def bundled_sets() -> list[str]:
    """Names of the labeled sets under ``labeled_sets/``."""
    root = REPO / "labeled_sets"
    return sorted(p.name for p in root.iterdir() if (p / "manifest.json").is_file())


def reference_labels(ls: Any) -> tuple[dict[str, str], str]:
    """``{item_id: label}`` from the set's reference (or gold) labeler, and that labeler's name.

    Without one, the most common label over the annotators (ties: the first seen)."""
    labelers = getattr(ls.manifest, "labelers", None) or {}
    chosen = [name for name, info in labelers.items()
              if isinstance(info, dict) and info.get("kind") in _REFERENCE_KINDS]
    rows = ls.labels(exclude_sources=())
    if chosen:
        name = chosen[0]
        return {r["item_id"]: r["label"] for r in rows if r["annotator"] == name}, name
    votes: dict[str, Counter[str]] = {}
    for r in rows:
        votes.setdefault(r["item_id"], Counter())[r["label"]] += 1
    return {iid: c.most_common(1)[0][0] for iid, c in votes.items()}, "majority of annotators"


def reference_reply(group: list[Any], labels: dict[str, str], verdicts: dict[str, Any]
                    ) -> dict[str, dict[str, str]]:
    """The reply object the prompt asks for, with the reference label per fact (see the module
    docstring); a fact without a reference label gets the heuristic judge's."""
    out = {}
    for k, it in enumerate(group, start=1):
        v = verdicts[it.item_id]
        reason = v.rationale or ""
        if v.evidence:
            reason += " (" + "; ".join(v.evidence) + ")"
        out[f"F{k}"] = {"status": labels.get(it.item_id) or v.label or "lost", "reason": reason}
    return out


def _stats(values: list[int]) -> dict[str, float]:
    a = np.asarray(values, dtype=float)
    return {"mean": float(a.mean()), "median": float(np.median(a)),
            "p95": float(np.percentile(a, 95)), "max": float(a.max())}


def _line_fit(y: list[int], x: list[int]) -> tuple[float, float]:
    """``y ≈ a + b·x`` by least squares; ``(mean of y, NaN)`` when ``x`` never varies."""
    if len(set(x)) < 2:
        return float(np.mean(y)), float("nan")
    b, a = np.polyfit(np.asarray(x, dtype=float), np.asarray(y, dtype=float), 1)
    return float(a), float(b)


def measure(litellm: Any, model: str, name: str, items: list[Any], labels: dict[str, str],
            judge: RetentionJudge) -> dict[str, Any]:
    """Token counts of every request ``judge`` makes for ``items`` (one per handoff)."""
    task = _JudgeTask(judge)  # what run_judge renders each handoff's request with
    groups = _group(items)
    verdicts = {v.item_id: v for v in HeuristicJudge().judge_items(items)}
    prompt, system, facts, fact_tokens, message_tokens, after = [], [], [], [], [], []
    handoff_line: list[int] = []
    completion: dict[str, list[int]] = {r: [] for r in REPLIES}
    for group in groups:
        messages = task.build_messages(group)
        prompt.append(litellm.token_counter(model=model, messages=messages))
        system.append(litellm.token_counter(model=model, text=messages[0]["content"]))
        facts.append(len(group))
        # the data the template fences (as PromptTemplate.render renders it); the rest of the
        # prompt is the template's own text, the same for every request of a prompt
        fact_tokens.append(litellm.token_counter(model=model, text=render_facts(group)))
        rendered = render_messages(group[0], judge.template.view)
        message_tokens.append(litellm.token_counter(model=model, text=rendered))
        handoff_line.append(litellm.token_counter(model=model, text=rendered.split("\n")[0]))
        after.append(len(group[0].after))
        ref = reference_reply(group, labels, verdicts)
        texts = {"reference": json.dumps(ref, ensure_ascii=False),
                 "pretty": "```json\n" + json.dumps(ref, ensure_ascii=False, indent=2) + "\n```",
                 "echo": answer_retention_prompt(messages)}
        for kind, text in texts.items():
            completion[kind].append(litellm.token_counter(model=model, text=text))
    template = [p - f - m for p, f, m in zip(prompt, fact_tokens, message_tokens)]
    return {"set": name, "prompt": judge.name.removeprefix("retention-"),
            "examples": judge.n_examples, "requests": len(groups), "facts": len(items),
            "facts_per_request": statistics.fmean(facts), "prompt_tokens": _stats(prompt),
            "system_tokens": _stats(system), "fact_tokens": _stats(fact_tokens),
            "message_tokens": _stats(message_tokens),
            "template_tokens": _stats(template),
            "messages_after": statistics.fmean(after),
            # per-part costs for your own sum: the template grows with the facts (reply
            # example, fact ids); each fact adds its line; the messages block is a handoff line
            # plus one line per message
            "template_fit": _line_fit(template, facts),
            "tokens_per_fact_line": sum(fact_tokens) / sum(facts),
            "handoff_line": statistics.fmean(handoff_line),
            "tokens_per_message": (sum(message_tokens) - sum(handoff_line)) / max(1, sum(after)),
            "output_per_fact": sum(completion["reference"]) / sum(facts),
            # what one judged item costs: the request's prompt spread over its facts
            "prompt_per_fact": sum(prompt) / sum(facts),
            "completion_tokens": {k: _stats(v) for k, v in completion.items()}}


def prices(litellm: Any, model: str) -> dict[str, Any]:
    """Per-token prices of ``model`` in litellm's map: sync, and batch (the map's or half)."""
    entry = litellm.model_cost.get(model)
    if not entry or "input_cost_per_token" not in entry:
        raise SystemExit(f"bench_tokens.py: litellm's price map has no price for {model!r}")
    p_in, p_out = float(entry["input_cost_per_token"]), float(entry["output_cost_per_token"])
    b_in, b_out = entry.get("input_cost_per_token_batches"), entry.get(
        "output_cost_per_token_batches")
    in_map = b_in is not None and b_out is not None
    return {"in": p_in, "out": p_out,
            "batch_in": float(b_in) if in_map else p_in / 2,
            "batch_out": float(b_out) if in_map else p_out / 2,
            "batch_source": "litellm's map (*_cost_per_token_batches)" if in_map
            else "not in litellm's map: half the synchronous price"}


def _money(x: float) -> str:
    return f"${x:,.0f}" if x >= 100 else f"${x:,.2f}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="gpt-4o-mini", help="litellm model name to count and price")
    ap.add_argument("--sets", nargs="*", default=None,
                    help="bundled labeled sets (default: every one with key facts)")
    ap.add_argument("--examples", type=int, default=0,
                    help="also measure the prompts with K worked examples from the dev split")
    ap.add_argument("--handoffs", type=float, default=1e7, help="run size to price (handoffs)")
    args = ap.parse_args(argv)

    _no_network()
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    litellm = _litellm()
    try:
        from litellm.litellm_core_utils.token_counter import openai_tokenizer_encoding_name

        encoding = openai_tokenizer_encoding_name(args.model)
    except Exception:  # a private helper of litellm: only used to name the encoding
        encoding = "?"
    version = getattr(litellm, "__version__", None)
    if not version:
        from importlib.metadata import version as _v

        version = _v("litellm")
    print(f"bench_tokens.py — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"tokens: litellm {version} token_counter(model={args.model!r}) → tiktoken {encoding}")

    rows = []
    for name in args.sets or bundled_sets():
        ls = load_labeled_set(REPO / "labeled_sets" / name)
        items = ls.items
        if not items:
            print(f"{name}: no key facts, skipped")
            continue
        labels, source = reference_labels(ls)
        missing = sum(1 for it in items if it.item_id not in labels)
        print(f"{name}: {len(ls.traces)} conversations, {len(items)} facts, reference labels "
              f"from {source!r}" + (f" ({missing} facts without one: heuristic label)"
                                    if missing else ""))
        for prompt in PROMPTS:
            rows.append(measure(litellm, args.model, name, items, labels, RetentionJudge(prompt)))
        if args.examples:
            scored = [s for s in ls.manifest.splits if s != "dev"]
            if "dev" not in ls.manifest.splits or not scored:
                print(f"{name}: no dev split and another split: --examples skipped")
                continue
            for prompt in PROMPTS:
                judge = RetentionJudge(prompt, examples=args.examples)
                judge.bind_examples(items, labels, scored_split=scored[0], split_of=ls.split_of)
                rows.append(measure(litellm, args.model, f"{name} ({scored[0]})",
                                    ls.items_in(scored[0]), labels, judge))

    p = prices(litellm, args.model)
    print(f"\nprices ({args.model}, litellm.model_cost): input ${p['in'] * 1e6:.3f}/M tokens, "
          f"output ${p['out'] * 1e6:.3f}/M; batch input ${p['batch_in'] * 1e6:.4f}/M, output "
          f"${p['batch_out'] * 1e6:.3f}/M — batch prices: {p['batch_source']}")

    print("\nprompt tokens per request (one request per handoff); of the mean: the system "
          "message (the shared prefix),\nthe fenced facts, the fenced messages after the handoff "
          "(msgs: how many) and\nthe template: everything else, system message included "
          "(instructions, reply example, worked examples, chat overhead)")
    print(f"{'set':<28} {'prompt':<7} {'requests':>8} {'facts/req':>9} {'mean':>7} "
          f"{'median':>7} {'p95':>7} {'max':>7} {'system':>7} {'facts':>6} {'messages':>8} "
          f"{'msgs':>5} {'template':>8}")
    for r in rows:
        pt, label = r["prompt_tokens"], r["prompt"] + (f"+{r['examples']}ex" if r["examples"]
                                                       else "")
        print(f"{r['set']:<28} {label:<7} {r['requests']:>8} {r['facts_per_request']:>9.2f} "
              f"{pt['mean']:>7.0f} {pt['median']:>7.0f} {pt['p95']:>7.0f} {pt['max']:>7.0f} "
              f"{r['system_tokens']['mean']:>7.0f} {r['fact_tokens']['mean']:>6.0f} "
              f"{r['message_tokens']['mean']:>8.0f} {r['messages_after']:>5.1f} "
              f"{r['template_tokens']['mean']:>8.0f}")

    print("\ntokens per judged item (a request's prompt spread over its facts; completion = "
          "reference reply): v1/v2 show the text of the user and the agents only (the view "
          "before tool calls were shown); v3 the whole conversation view")
    print(f"{'set':<28} {'prompt':<7} {'prompt/item':>11} {'reply/item':>10} {'total/item':>10}")
    for r in rows:
        label = r["prompt"] + (f"+{r['examples']}ex" if r["examples"] else "")
        print(f"{r['set']:<28} {label:<7} {r['prompt_per_fact']:>11.1f} "
              f"{r['output_per_fact']:>10.1f} {r['prompt_per_fact'] + r['output_per_fact']:>10.1f}")

    print("\nfor your own sum: prompt tokens ≈ template (with no fact) + per fact (its line + "
          "template growth) + handoff line\n+ per message after the handoff; reply ≈ per fact "
          "(reference reply)")
    print(f"{'set':<28} {'prompt':<7} {'template':>8} {'per fact':>8} {'handoff':>7} "
          f"{'per message':>11} {'reply per fact':>14}")
    for r in rows:
        label = r["prompt"] + (f"+{r['examples']}ex" if r["examples"] else "")
        a, b = r["template_fit"]
        # one fact in every request: the template's fixed part and its growth per fact
        # cannot be told apart
        fixed = f"{a:8.0f}" if b == b else f"{'n/a':>8}"
        per_fact = f"{r['tokens_per_fact_line'] + b:8.1f}" if b == b else f"{'n/a':>8}"
        print(f"{r['set']:<28} {label:<7} {fixed} {per_fact} {r['handoff_line']:>7.1f} "
              f"{r['tokens_per_message']:>11.1f} {r['output_per_fact']:>14.1f}")

    print("\ncompletion tokens per request (mean / median / p95) of the replies counted")
    print(f"{'set':<28} {'prompt':<7} " + " ".join(f"{k:>20}" for k in REPLIES))
    for r in rows:
        label = r["prompt"] + (f"+{r['examples']}ex" if r["examples"] else "")
        cells = [f"{c['mean']:.0f} / {c['median']:.0f} / {c['p95']:.0f}"
                 for c in (r["completion_tokens"][k] for k in REPLIES)]
        print(f"{r['set']:<28} {label:<7} " + " ".join(f"{c:>20}" for c in cells))

    n = args.handoffs
    print(f"\ncost per 1M handoffs (mean tokens; completion = reference reply, [pretty reply]) "
          f"and for {n:,.0f} handoffs")
    print(f"{'set':<28} {'prompt':<7} {'sync / 1M':>20} {'batch / 1M':>20} "
          f"{'sync / run':>22} {'batch / run':>22}")
    for r in rows:
        label = r["prompt"] + (f"+{r['examples']}ex" if r["examples"] else "")
        tin = r["prompt_tokens"]["mean"]
        cost = {}
        for kind in ("reference", "pretty"):
            tout = r["completion_tokens"][kind]["mean"]
            cost[kind] = (tin * p["in"] + tout * p["out"],
                          tin * p["batch_in"] + tout * p["batch_out"])
        cells = [f"{_money(cost['reference'][i] * m)} [{_money(cost['pretty'][i] * m)}]"
                 for m, i in ((1e6, 0), (1e6, 1), (n, 0), (n, 1))]
        print(f"{r['set']:<28} {label:<7} {cells[0]:>20} {cells[1]:>20} {cells[2]:>22} "
              f"{cells[3]:>22}")
    print(f"\n{len(rows)} measurements in {time.perf_counter() - start_wall:.1f} s wall, "
          f"{time.process_time() - start_cpu:.1f} s CPU; load average at the end "
          f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
