"""Benchmark the llm fact proposer against judging, on the same runner and the same fake server.

Measures, in one run (so both share the machine's state): H handoffs, each one request, server
latency L, concurrency C, through the openai client and through litellm —

- judging: ``run_judge(RetentionJudge("v1"), ...)`` over H handoffs of 5 facts each;
- proposing: ``propose_facts(traces, method="llm", ...)`` over H handoffs (one per
  conversation, the user's messages before it holding identifiers, amounts and dates);

each as wall time against the latency-bound ideal ``H * L / C``, alternating judge and
proposer so neither gets a quieter machine; then a warm rerun of the proposer (requests sent:
should be 0).

The server runs in its own process (this script with ``--serve``: the kit's
``FakeOpenAIServer`` answering retention prompts with the heuristic judge, as ``maev
serve-fake`` does, and extraction prompts with the offline extractor) so its threads do not
compete with the runner for this process's GIL.

Usage::

    python benchmarks/bench_fact_proposer_llm.py            # 400 handoffs, 500 ms, C=16
    python benchmarks/bench_fact_proposer_llm.py --quick    # 80 handoffs, 200 ms
    python benchmarks/bench_fact_proposer_llm.py --latency 0.2
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_judge import ServerProcess, make_items, timed  # noqa: E402

from maev_kit import AgentTurn, Handoff, MultiAgentTrace  # noqa: E402

CITIES = ["Lyon", "Porto", "Leeds", "Graz", "Turin", "Ghent", "Malmo", "Brno", "Cork", "Bergen"]


def make_traces(n: int) -> list[MultiAgentTrace]:
    """``n`` conversations, one handoff each, after two user messages with key facts."""
    out = []
    for k in range(n):
        user = [f"Hi, my account is ACCT-{k:04d} and I was charged ${10 + k % 90}.99 twice.",
                f"I moved to {CITIES[k % len(CITIES)]} on March {1 + k % 28}; order "
                f"ORD-{5000 + k} never arrived."]
        from maev_kit.traces._model import UserMessage

        out.append(MultiAgentTrace(
            f"c{k}", user_messages=[UserMessage(user[0], 0), UserMessage(user[1], 2)],
            turns=[AgentTurn("triage", "router", "Let me look into that.", turn_index=1),
                   AgentTurn("triage", "router", "Passing you to billing.", turn_index=3)],
            handoffs=[Handoff("triage", "billing", None, turn_index=4)]))
    return out


def respond(body: dict) -> str:
    """A retention prompt gets the heuristic judge's answer; an extraction prompt the offline
    extractor's."""
    from maev_kit.facts._llm import answer_extraction_prompt
    from maev_kit.judges import answer_retention_prompt

    messages = list(body.get("messages") or [])
    content = str(messages[-1].get("content", "")) if messages else ""
    if "<<<FACTS" in content:
        return answer_retention_prompt(messages)
    return answer_extraction_prompt(messages)


def serve(latency: float) -> None:
    from maev_kit.testing import FakeOpenAIServer

    server = FakeOpenAIServer(responder=respond, latency=latency, port=0)
    server.start()
    print(f"serving at {server.base_url}", flush=True)
    try:
        server.serve_until_stopped()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="80 handoffs at 200 ms")
    ap.add_argument("--handoffs", type=int, help="handoffs; default 400")
    ap.add_argument("--latency", type=float, help="server latency in seconds; default 0.5")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds; default 2")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    latency = args.latency if args.latency is not None else (0.2 if args.quick else 0.5)
    if args.serve:
        return serve(latency)
    handoffs = args.handoffs or (80 if args.quick else 400)
    conc = args.concurrency

    from openai import AsyncOpenAI

    from maev_kit.backends import LiteLLMBackend, OpenAIClientBackend
    from maev_kit.backends._litellm import import_litellm
    from maev_kit.facts import propose_facts
    from maev_kit.judges import RetentionJudge
    from maev_kit.runner import run_judge

    _, import_s = timed(import_litellm)
    items = make_items(handoffs)
    traces = make_traces(handoffs)
    judge = RetentionJudge("v1")
    ideal = handoffs * latency / conc
    print(f"maev-kit llm fact proposer vs judging: {handoffs} handoffs (one request each), "
          f"server latency {latency * 1000:.0f} ms, concurrency {conc}, Python "
          f"{sys.version.split()[0]}, {os.cpu_count()} cores")
    print(f"(litellm import took {import_s:.1f} s, outside every timing; load average "
          f"{os.getloadavg()[0]:.1f} at start)")
    print(f"latency-bound ideal: {handoffs} × {latency} s / {conc} = {ideal:.2f} s\n")

    # this script's --serve mode: the fake server answering extraction and retention prompts
    server = ServerProcess(latency, [sys.executable, os.path.abspath(__file__), "--serve"])
    best: dict[tuple[str, str], float] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            client = AsyncOpenAI(base_url=server.base_url, api_key="sk-local")
            backends = {"openai client": OpenAIClientBackend(client, "fake-model"),
                        "litellm": LiteLLMBackend("openai/fake-model", api_base=server.base_url,
                                                  api_key="sk-local")}
            for backend in backends.values():  # warm-up: connections, first-call costs
                run_judge(judge, make_items(2), backend, cache=False, progress=False)
                propose_facts(make_traces(2), method="llm", backend=backend, cache=False,
                              progress=False)

            def judge_run(backend, cache):
                run = run_judge(judge, items, backend, max_concurrency=conc, cache=cache,
                                progress=False)
                assert run.stats["requests"] == handoffs and run.stats["errors"] == 0, run.stats
                return run.stats

            def propose_run(backend, cache):
                got = propose_facts(traces, method="llm", backend=backend,
                                    max_concurrency=conc, cache=cache, progress=False)
                s = got.stats
                assert s["requests"] == handoffs and s["errors"] == 0, s
                assert len(got) >= 4 * handoffs, len(got)  # account, amount, date, order
                return s

            for r in range(args.rounds):
                for bname, backend in backends.items():
                    for what, fn in (("judging", judge_run), ("proposing", propose_run)):
                        cache = os.path.join(tmp, f"{r}-{bname}-{what}".replace(" ", "-"))
                        cpu = time.process_time()
                        s, wall = timed(lambda: fn(backend, cache))  # noqa: B023
                        cpu = time.process_time() - cpu
                        key = (what, bname)
                        best[key] = min(best.get(key, wall), wall)
                        print(f"round {r + 1}, {what:9s} {bname:13s}: {wall:6.2f} s = "
                              f"{ideal / wall:.3f} of ideal  (p50 "
                              f"{s['latency_p50'] * 1000:.0f} ms, p95 "
                              f"{s['latency_p95'] * 1000:.0f} ms, {s['tokens']} tokens, "
                              f"runner CPU {cpu / handoffs * 1000:.1f} ms/request)")

            print("\nbest of the rounds, fraction of the latency-bound ideal:")
            for bname in backends:
                j, p = ideal / best[("judging", bname)], ideal / best[("proposing", bname)]
                print(f"  {bname:13s}: judging {j:.3f}, proposing {p:.3f} "
                      f"(proposing / judging = {p / j:.3f})")

            cache = os.path.join(tmp, "0-openai-client-proposing")
            warm, warm_wall = timed(lambda: propose_facts(
                traces, method="llm", backend=backends["openai client"], max_concurrency=conc,
                cache=cache, progress=False))
            print(f"\nwarm rerun of the proposer (openai client): {warm.stats['requests']} "
                  f"requests, {warm.stats['cache_hits']} cache hits, {warm_wall:.3f} s")
    finally:
        server.close()
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
