"""Convert tau-bench historical trajectories into maev trace JSONL.

tau-bench (Sierra, MIT licence, https://github.com/sierra-research/tau-bench) publishes the
conversations its agents had with a simulated user: ``historical_trajectories/<model>-<domain>.json``,
a list of ``{task_id, reward, trial, info: {task: {user_id, actions, instruction}}, traj}`` where
``traj`` is an OpenAI chat transcript (``role`` system / user / assistant / tool,
``tool_calls``, ``tool_call_id``).

Run from the repository root::

    git -C <tau-bench clone> show HEAD:historical_trajectories/gpt-4o-airline.json > airline.json
    python benchmarks/convert_tau_bench.py airline.json --out tau_airline.jsonl
    python benchmarks/convert_tau_bench.py airline.json --out t.jsonl --only-transfers --limit 5

The conversion:

- one trace per trajectory, ``conversation_id`` ``tau-<domain>-<task_id>-t<trial>``; the system
  prompt (the agent's policy) is left out;
- each user message is a ``user_messages`` entry; each assistant message is a turn of one agent,
  ``<domain>_agent`` (role ``agent``), its ``tool_calls`` as ``{"name", "arguments", "id",
  "output"}`` with the ``output`` of the matching ``tool`` message (parsed when it is JSON);
- a ``transfer_to_human_agents`` call ends the agent's part: it becomes a handoff to
  ``human_agent`` (mode ``transfer``, reason ``escalation``) at the turn after the call, with
  ``context_passed`` = the call's arguments (``{"summary": ...}``); the call stays in the turn's
  ``tool_calls`` too. A trajectory without a transfer gets no handoff (``--last-turn-hop`` adds
  one to ``human_agent`` after the last agent turn, with an empty context, for measuring);
- ``metadata`` keeps the task id, trial, reward, the user id and the task's gold ``actions``
  (what the task's author expected the agent to do), for benchmarks; never the instruction.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

TRANSFER_TOOL = "transfer_to_human_agents"


def _parse(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _outputs(traj: list[dict], pos: int) -> dict:
    """The tool messages that answer the assistant message at ``pos``: those right after it,
    by ``tool_call_id`` (tau-bench reuses call ids across turns, so only the messages that
    follow this one are looked at)."""
    out = {}
    for m in traj[pos + 1:]:
        if m.get("role") != "tool":
            break
        out.setdefault(m.get("tool_call_id"), m.get("content"))
    return out


def convert(record: dict, domain: str, *, last_turn_hop: bool = False) -> dict:
    """One tau-bench trajectory as a maev trace dict (see the module docstring).

    >>> rec = {"task_id": 3, "trial": 0, "reward": 1.0,
    ...        "info": {"task": {"user_id": "u_1", "actions": []}},
    ...        "traj": [{"role": "system", "content": "policy"},
    ...                 {"role": "user", "content": "Hi, I am u_1"},
    ...                 {"role": "assistant", "content": None, "tool_calls": [
    ...                     {"id": "c1", "function": {"name": "transfer_to_human_agents",
    ...                                               "arguments": '{"summary": "u_1"}'}}]},
    ...                 {"role": "tool", "tool_call_id": "c1", "content": "Transfer successful"}]}
    >>> t = convert(rec, "airline")
    >>> t["conversation_id"], t["handoffs"][0]["to_agent"], t["handoffs"][0]["context_passed"]
    ('tau-airline-3-t0', 'human_agent', {'summary': 'u_1'})
    """
    agent = f"{domain}_agent"
    traj = record["traj"]
    turns: list[dict] = []
    users: list[dict] = []
    handoffs: list[dict] = []
    index = 0
    for pos, m in enumerate(traj):
        role = m.get("role")
        if role == "user":
            users.append({"content": m.get("content") or "", "turn_index": index})
            index += 1
        elif role == "assistant":
            calls = []
            transfer = None
            outputs = _outputs(traj, pos)
            for tc in m.get("tool_calls") or ():
                fn = tc.get("function") or {}
                args = _parse(fn.get("arguments") or "{}")
                call = {"name": fn.get("name", ""), "arguments": args if isinstance(args, dict)
                        else {"input": args}, "id": tc.get("id")}
                if tc.get("id") in outputs:
                    call["output"] = _parse(outputs[tc.get("id")])
                calls.append(call)
                if call["name"] == TRANSFER_TOOL:
                    transfer = call["arguments"]
            turns.append({"agent_id": agent, "agent_role": "agent",
                          "message": m.get("content") or "", "tool_calls": calls,
                          "turn_index": index})
            index += 1
            if transfer is not None and not handoffs:
                handoffs.append({"from_agent": agent, "to_agent": "human_agent",
                                 "reason": "escalation", "context_passed": transfer,
                                 "turn_index": index, "mode": "transfer"})
                index += 1
    if last_turn_hop and not handoffs and turns:
        handoffs.append({"from_agent": agent, "to_agent": "human_agent", "reason": None,
                         "context_passed": {}, "turn_index": index, "mode": "transfer"})
    task = (record.get("info") or {}).get("task") or {}
    return {"schema_version": 1,
            "conversation_id": f"tau-{domain}-{record['task_id']}-t{record.get('trial', 0)}",
            "turns": turns, "handoffs": handoffs, "user_messages": users,
            "metadata": {"source": "tau-bench historical_trajectories", "domain": domain,
                         "task_id": record["task_id"], "trial": record.get("trial"),
                         "reward": record.get("reward"), "user_id": task.get("user_id"),
                         "gold_actions": task.get("actions") or []}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trajectories", help="a tau-bench historical_trajectories/*.json file")
    ap.add_argument("--out", required=True, help="the maev trace JSONL to write")
    ap.add_argument("--domain", help="airline or retail (default: from the file name)")
    ap.add_argument("--only-transfers", action="store_true",
                    help="keep only trajectories with a transfer_to_human_agents call")
    ap.add_argument("--last-turn-hop", action="store_true",
                    help="give a trajectory without a transfer a handoff after its last turn")
    ap.add_argument("--limit", type=int, help="keep at most this many trajectories")
    ap.add_argument("--ids", help="comma-separated conversation ids to keep")
    args = ap.parse_args(argv)
    path = Path(args.trajectories)
    domain = args.domain or ("retail" if "retail" in path.name else "airline")
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        print(f"{path}: cannot read tau-bench trajectories: {e}", file=sys.stderr)
        return 2
    if not isinstance(records, list):
        print(f"{path}: expected a list of trajectories", file=sys.stderr)
        return 2
    keep = set(args.ids.split(",")) if args.ids else None
    out = []
    for rec in records:
        t = convert(rec, domain, last_turn_hop=args.last_turn_hop)
        if args.only_transfers and not any(h["context_passed"] for h in t["handoffs"]):
            continue
        if keep is not None and t["conversation_id"] not in keep:
            continue
        out.append(t)
        if args.limit and len(out) >= args.limit:
            break
    Path(args.out).write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in out),
                              encoding="utf-8")
    print(f"wrote {len(out)} traces to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
