"""LangGraph (swarm, supervisor) message lists and LangSmith run trees → traces.

Accepted shapes:

- a final graph state ``{"messages": [...], "active_agent": ...}`` or a bare message list, the
  messages in any LangChain serialisation (``messages_to_dict``'s ``{"type", "data"}``,
  ``model_dump()``'s flat dict, the ``{"lc": 1, "kwargs"}`` constructor form, or
  ``{"role", "content"}``);
- ``graph.stream(..., stream_mode="updates")`` output saved as a list (with or without
  ``subgraphs=True`` namespaces);
- a LangSmith-style run tree (``{"run_type", "inputs", "outputs", "child_runs"}``, or a list of
  root runs): the root run's output messages.

``AIMessage.name`` is the agent. A ``transfer_to_<agent>`` tool call is a handoff; its arguments
(when the handoff tool takes any) become ``context_passed``. With a supervisor
(``transfer_back_to_<supervisor>`` calls present), the supervisor's ``transfer_to_<worker>``
calls are ``delegate`` handoffs, and the workers' ``transfer_back_to_*`` calls are the returns of
those delegations: kept as tool calls, not as separate handoffs.
"""

from __future__ import annotations

from typing import Any

from maev_kit.traces.importers._common import (
    ImportIssue,
    ImportResult,
    Reader,
    TraceBuilder,
    as_dict,
    as_list,
    check_options,
    content_text,
    parse_jsonish,
    resolve_agent,
    str_or_none,
    tool_call,
    transfer_target,
    type_name,
)

FORMAT = "langgraph"
_ROLE = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system",
         "user": "user", "assistant": "assistant", "function": "tool",
         "HumanMessage": "user", "AIMessage": "assistant", "ToolMessage": "tool",
         "SystemMessage": "system", "AIMessageChunk": "assistant",
         "HumanMessageChunk": "user", "ToolMessageChunk": "tool"}


def normalize_message(m: Any, where: str, r: Reader) -> dict[str, Any]:
    """One LangChain message in any serialisation → ``{role, name, content, tool_calls, ...}``."""
    m = r.obj(m, where)
    if m.get("lc") == 1 and isinstance(m.get("kwargs"), dict):
        ids = as_list(m.get("id"))
        kw = dict(m["kwargs"])
        kw.setdefault("type", ids[-1] if ids else None)
        m = kw
    elif "data" in m and isinstance(m.get("data"), dict) and "type" in m:
        m = {**m["data"], "type": m["type"]}
    kind = m.get("type") if "type" in m else m.get("role")
    role = _ROLE.get(str(kind))
    if role is None:
        raise r.fail(f"{where}.type", f"unknown message type {kind!r} (expected human, ai, "
                                      "tool or system)")
    calls = []
    for j, tc in enumerate(as_list(m.get("tool_calls"))):
        tc = r.obj(tc, f"{where}.tool_calls[{j}]")
        if "function" in tc:  # OpenAI shape
            fn = as_dict(tc.get("function"))
            calls.append(tool_call(str(fn.get("name", "")), fn.get("arguments"), id=tc.get("id")))
        else:
            calls.append(tool_call(str(r.key(tc, "name", f"{where}.tool_calls[{j}]")),
                                   tc.get("args", {}), id=tc.get("id")))
    return {"role": role, "name": str_or_none(m.get("name")),
            "content": content_text(m.get("content")),
            "tool_calls": calls, "tool_call_id": m.get("tool_call_id"), "id": m.get("id")}


def _dedupe_key(m: dict[str, Any]) -> Any:
    if m["role"] == "tool" and str_or_none(m.get("tool_call_id")):
        return ("tool", m["tool_call_id"])
    if str_or_none(m.get("id")):
        return m["id"]
    return (m["role"], str(m.get("name")), m["content"])


def messages_to_trace(msgs: list[dict[str, Any]], conv: str, meta: dict[str, Any],
                      issues: list[ImportIssue], fmt: str = FORMAT):
    """Normalised messages → one trace (shared with the generic chat importer)."""
    b = TraceBuilder(conv, fmt, metadata=meta)
    names = [m["name"] for m in msgs if m["role"] == "assistant" and m.get("name")]
    supervisors = {resolve_agent(t, names) for m in msgs for c in m["tool_calls"]
                   if (c["name"] or "").startswith("transfer_back_to_")
                   for t in [transfer_target(c["name"])] if t}
    calls_by_id: dict[str, dict[str, Any]] = {}
    active: str | None = None
    anonymous = returns = 0
    for m in msgs:
        if m["role"] == "user":
            b.user(m["content"])
        elif m["role"] == "assistant":
            agent = m.get("name") or active
            if not agent:
                agent, anonymous = "assistant", anonymous + 1
            b.turn(agent, m["content"], m["tool_calls"])
            active = agent
            for c in m["tool_calls"]:
                if "id" in c:
                    calls_by_id[c["id"]] = c
                name = c["name"] or ""
                target = transfer_target(name)
                if not target:
                    continue
                to = resolve_agent(target, names)
                if name.startswith("transfer_back_to_") and supervisors:
                    returns += 1
                    active = to
                    continue
                args = c.get("arguments")
                ctx = args if isinstance(args, dict) else ({"input": args} if args else {})
                mode = "delegate" if agent in supervisors else "transfer"
                b.handoff(agent, to, ctx, mode=mode)
                active = to
        elif m["role"] == "tool":
            c = calls_by_id.get(str_or_none(m.get("tool_call_id")) or "")
            if c is not None:
                c["output"] = parse_jsonish(m["content"])
            else:
                issues.append(ImportIssue(fmt, "", f"tool message for unknown call "
                                          f"{m.get('tool_call_id')!r} dropped", conv))
        elif m["role"] == "system":
            b.metadata.setdefault("system_messages", []).append(m["content"])
    if anonymous:
        issues.append(ImportIssue(fmt, "", f"{anonymous} AI message(s) without a name and "
                                  "before any handoff: attributed to agent 'assistant'", conv))
    if returns:
        issues.append(ImportIssue(fmt, "", f"{returns} transfer_back_to_* call(s) read as the "
                                  "return of a delegation, not as handoffs", conv))
    return b.build()


def _is_run(d: Any) -> bool:
    return isinstance(d, dict) and "run_type" in d and ("outputs" in d or "child_runs" in d)


def _run_messages(run: dict[str, Any], r: Reader) -> list[Any]:
    outputs = run.get("outputs") or {}
    if isinstance(outputs.get("messages"), list):
        return outputs["messages"]
    raise r.fail("outputs.messages", "the root run has no output messages (export the run "
                                     "with its outputs)")


def import_langgraph(data: Any, *, name: str = "graph", **options: Any) -> ImportResult:
    """LangGraph state / message list / stream updates / LangSmith run tree → (traces, issues)."""
    check_options(options, FORMAT)
    r = Reader(FORMAT)
    issues: list[ImportIssue] = []
    meta: dict[str, Any] = {}
    raw: list[tuple[str, Any]]
    if _is_run(data) or (isinstance(data, list) and data and _is_run(data[0])):
        runs = data if isinstance(data, list) else [data]
        traces = []
        for i, run in enumerate(runs):
            w = f"[{i}]" if isinstance(data, list) else ""
            run = r.obj(run, w)
            msgs = [normalize_message(m, f"{w}.outputs.messages[{j}]", r)
                    for j, m in enumerate(_run_messages(run, r))]
            conv = str(run.get("trace_id") or run.get("id") or name)
            m = {"run_name": run.get("name"), "run_id": run.get("id")}
            if isinstance(run.get("outputs"), dict) and run["outputs"].get("active_agent"):
                m["active_agent"] = run["outputs"]["active_agent"]
            traces.append(messages_to_trace(msgs, conv, m, issues))
        return ImportResult(traces, issues)
    if isinstance(data, dict):
        msgs_raw = r.arr(r.key(data, "messages", ""), "messages")
        raw = [(f"messages[{j}]", m) for j, m in enumerate(msgs_raw)]
        if data.get("active_agent"):
            meta["active_agent"] = data["active_agent"]
    else:
        items = r.arr(data, "")
        if items and _is_update(items[0]):
            raw = _stream_messages(items, r)
            meta["source_shape"] = "stream updates"
        else:
            raw = [(f"[{j}]", m) for j, m in enumerate(items)]
    if not raw:
        raise r.fail("messages", "no messages found")
    seen: set[Any] = set()
    msgs = []
    for where, m in raw:
        nm = normalize_message(m, where, r)
        key = _dedupe_key(nm)
        if key in seen:
            continue
        seen.add(key)
        msgs.append(nm)
    return ImportResult([messages_to_trace(msgs, name, meta, issues)], issues)


def _is_update(item: Any) -> bool:
    if isinstance(item, list) and len(item) == 2 and isinstance(item[0], list) \
            and isinstance(item[1], dict):
        return True
    return isinstance(item, dict) and bool(item) and all(
        isinstance(v, dict) and "messages" in v for v in item.values() if v is not None) \
        and "messages" not in item and "type" not in item and "role" not in item


def _stream_messages(items: list[Any], r: Reader) -> list[tuple[str, Any]]:
    """Messages of ``stream_mode="updates"`` chunks; root-graph updates preferred."""
    root: list[tuple[str, Any]] = []
    sub: list[tuple[str, Any]] = []
    for i, item in enumerate(items):
        if isinstance(item, list):
            if len(item) != 2:
                raise r.fail(f"[{i}]", "expected a [namespace, update] pair")
            ns, upd = item
        else:
            ns, upd = [], item
        if not isinstance(upd, dict):
            raise r.fail(f"[{i}]", f"expected an update object, got {type_name(upd)}")
        for node, u in upd.items():
            for j, m in enumerate(as_list(as_dict(u).get("messages"))):
                (sub if ns else root).append((f"[{i}].{node}.messages[{j}]", m))
    return root or sub
