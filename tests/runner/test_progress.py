"""The progress bar of a judge run: it counts facts (each request advances it by its own facts
when it completes), shows requests queued / in flight / done, and leaves cache hits out of its
rate so the ETA is the server's pace."""

from __future__ import annotations

import io

from runner.runner_helpers import EchoJudge, echo_responder
from tqdm import tqdm

from maev_kit.retention import LABELS, RetentionItem
from maev_kit.runner._requests import RunSettings, run_on_background_loop
from maev_kit.runner._run import _arun
from maev_kit.testing import FakeOpenAIServer


def _items(sizes: list[int]) -> list[RetentionItem]:
    """Handoff ``h`` with ``sizes[h]`` facts each."""
    return [RetentionItem(f"c{h}/h0/f{f}", f"c{h}", 0, f"f{f}", f"{LABELS[f % 3]} fact {h}.{f}",
                          (), ()) for h, n in enumerate(sizes) for f in range(n)]


class RecordingBar(tqdm):  # type: ignore[misc]
    """A real tqdm bar (written to a string) that records its updates and postfixes."""

    def __init__(self, total: int) -> None:
        self.updates: list[int] = []
        self.postfixes: list[str] = []
        super().__init__(total=total, file=io.StringIO(), smoothing=0.05, mininterval=0)

    def update(self, n: float | None = 1) -> bool | None:
        if n:
            self.updates.append(int(n))
        return super().update(n)

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfixes.append(s)
        super().set_postfix_str(s, refresh)


def _run(server: FakeOpenAIServer, items: list[RetentionItem], bar: RecordingBar,
         cache: object = False, ceiling: int = 2) -> object:
    from maev_kit.backends import OpenAIClientBackend
    from openai import AsyncOpenAI

    backend = OpenAIClientBackend(AsyncOpenAI(base_url=server.base_url, api_key="x"), "m")
    settings = RunSettings(ceiling, 0, 10, cache, 0.01, True)
    return run_on_background_loop(lambda: _arun(EchoJudge(), items, backend, settings, bar))


def test_the_bar_counts_facts_one_request_at_a_time():
    sizes = [3, 1, 5, 2]
    items = _items(sizes)
    with FakeOpenAIServer(echo_responder, slots=1, latency=0.05) as server:
        bar = RecordingBar(len(items))
        run = _run(server, items, bar)
    assert run.stats["errors"] == 0
    # one update per request, by that handoff's facts — never by 1 per handoff
    assert sorted(bar.updates) == sorted(sizes) and bar.n == len(items) == 11
    # requests queued, in flight and done beside it, ending with all four done
    assert bar.postfixes[0] == "3 queued · 1 in flight · 0 done"  # the first goes out alone
    assert any(p.endswith("· 3 done") for p in bar.postfixes)


def test_cache_hits_show_as_done_but_stay_out_of_the_rate(tmp_path):
    first, rest = _items([2, 2]), _items([2, 2, 3, 3])
    with FakeOpenAIServer(echo_responder, latency=0.2) as server:
        _run(server, first, RecordingBar(len(first)), cache=tmp_path)
        bar = RecordingBar(len(rest))
        run = _run(server, rest, bar, cache=tmp_path)
    assert run.stats["cache_hits"] == 2
    # the 4 cached facts are the bar's starting point, not 4 facts done in no time
    assert bar.initial == 4 and bar.n == 10
    elapsed = bar.format_dict["elapsed"]
    # the clock restarted after the cache hits: 6 facts from the server in about one 0.2 s
    # round trip, tens of facts a second at most
    assert elapsed >= 0.2 and (bar.n - bar.initial) / elapsed < 6 / 0.2 * 1.5
