"""Test helpers for the runner: a tiny LLM judge whose prompt the fake server can answer, and
items whose expected labels are known."""

from __future__ import annotations

import json

from maev_kit.judges import Verdict
from maev_kit.retention import LABELS, RetentionItem


class EchoJudge:
    """Prompt: a JSON object naming the handoff and its facts; reply: ``{fact_id: label}``."""

    name, version, offline = "echo", "1", False

    def build_messages(self, items):
        first = items[0]
        payload = {"handoff": f"{first.conversation_id}/h{first.handoff_index}",
                   "facts": {it.fact_id: it.fact for it in items}}
        return [{"role": "system", "content": "Label each fact."},
                {"role": "user", "content": json.dumps(payload, sort_keys=True)}]

    def parse(self, reply, items):
        try:
            data = json.loads(reply)
        except ValueError:
            data = None
        out = []
        for it in items:
            label = data.get(it.fact_id) if isinstance(data, dict) else None
            if label in LABELS:
                out.append(Verdict(it.item_id, label))
            else:
                out.append(Verdict(it.item_id, None, error=f"no valid label for {it.fact_id}",
                                   raw=reply))
        return out


def request_payload(body: dict) -> dict:
    """The EchoJudge payload inside a chat-completions request body (its first user message:
    a repair request after an unreadable reply has the same one)."""
    return json.loads(next(m for m in body["messages"] if m["role"] == "user")["content"])


def echo_responder(body: dict) -> str:
    """Answer an EchoJudge prompt: each fact's text starts with its expected label."""
    facts = request_payload(body)["facts"]
    return json.dumps({fid: text.split()[0] for fid, text in facts.items()})


def make_items(n_handoffs: int, facts_per_handoff: int = 2) -> list[RetentionItem]:
    items = []
    for h in range(n_handoffs):
        for f in range(facts_per_handoff):
            label = LABELS[(h + f) % 3]
            items.append(RetentionItem(f"c{h}/h0/f{f}", f"c{h}", 0, f"f{f}",
                                       f"{label} fact {h}.{f}", (), ()))
    return items


def expected_labels(items: list[RetentionItem]) -> list[str]:
    return [it.fact.split()[0] for it in items]


def labeled_handoffs(ls, split: str = "test") -> list[list[RetentionItem]]:
    """The items of ``ls``'s ``split`` that carry a label, one list per handoff, in order."""
    labeled = {r["item_id"] for r in ls.labels()}
    groups: dict = {}
    for it in ls.items_in(split):
        if it.item_id in labeled:
            groups.setdefault((it.conversation_id, it.handoff_index), []).append(it)
    return list(groups.values())
