"""OpenAI Agents SDK exports → traces.

Four shapes, all produced by the SDK's own serialisation:

- span exports ``{"trace": Trace.export(), "spans": [Span.export(), ...]}``;
- ingest payloads ``{"data": [trace, span, ...]}`` (or a list of them), as the SDK's
  exporter posts them;
- run items: ``RunResult.new_items`` as dicts (``{"new_items": [...], "to_input_list": [...]}``
  or a bare list of items);
- run state: ``RunResult.to_state().to_json()`` (``{"$schemaVersion", "session_items", ...}``).

Spans: ``agent`` spans own the spans below them; each ``generation`` span is a turn (its output
text and tool calls); a ``response`` span (Responses API) carries only a response id, so its
turn has message ``""`` and the trace gets ``metadata["text_unavailable"] = True``; ``function``
spans fill tool outputs; ``handoff`` spans are handoffs, their context taken from the arguments
of the matching ``transfer_to_<agent>`` tool call (present when the handoff has an
``input_type``). An agent run as a tool (``Agent.as_tool``) nests under the ``function`` span;
it becomes a ``delegate`` handoff with the tool's arguments as context (see ``_spantree``).

Run items / run state: items of one model response form a turn; ``handoff_output_item`` is a
handoff whose context is the ``handoff_call_item``'s arguments. A handoff hidden by an
``input_filter`` (the agent changes with no handoff item) is inferred, and reported. An agent
run as a tool is not in them (the SDK keeps only the calling run's items): its call is a plain
tool call.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from typing import Any, cast

from maev_kit.traces._model import AgentTurn
from maev_kit.traces.importers._common import (
    ImportIssue,
    ImportResult,
    Reader,
    TraceBuilder,
    as_dict,
    as_list,
    chat_tool_calls,
    check_options,
    content_text,
    parse_jsonish,
    slug,
    str_or_none,
    tool_call,
    transfer_target,
    handoff_types_option,
    zero_handoff_issue,
)
from maev_kit.traces.importers._otlp import Span
from maev_kit.traces.importers._spantree import build_trace

FORMAT = "openai-agents"


def _ns(value: Any) -> int:
    if not isinstance(value, str):
        return 0
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1e9)
    except ValueError:
        return 0


class AgentsSpanDialect:
    format = FORMAT

    def __init__(self, handoff_types: tuple[str, ...] = ()) -> None:
        #: span types read as handoffs besides ``handoff`` (the ``handoff_type`` option)
        self.handoff_types = frozenset(handoff_types)

    def t(self, s: Span) -> str:
        return str(s.attrs.get("type", ""))

    def agent_name(self, s: Span) -> str | None:
        n = s.attrs.get("name") if self.t(s) == "agent" else None
        return n if isinstance(n, str) and n else None

    def own_agent(self, s: Span) -> str | None:
        data = s.attrs.get("data") if self.t(s) == "custom" else None
        n = data.get("agent_name") if isinstance(data, dict) else None
        return n if isinstance(n, str) and n else None

    def kind(self, s: Span) -> str | None:
        if self.t(s) in self.handoff_types:
            return "handoff"
        return _SPAN_KINDS.get(self.t(s))

    def llm_io(self, s: Span) -> tuple[list[str], str | None, list[dict[str, Any]]]:
        if self.t(s) == "response":
            return _response_io(s.attrs)
        inputs = as_list(s.attrs.get("input"))
        users = [content_text(m.get("content")) for m in inputs
                 if isinstance(m, dict) and m.get("role") == "user"]
        outputs = s.attrs.get("output")
        if outputs is None:
            return users, None, []
        texts, calls = [], []
        for m in outputs if isinstance(outputs, list) else [outputs]:
            if isinstance(m, dict):
                texts.append(content_text(m.get("content")))
                calls.extend(chat_tool_calls(m))
        return users, "\n".join(t for t in texts if t), calls

    def input_calls(self, s: Span) -> list[dict[str, Any]]:
        if self.t(s) == "response":
            return [c for it in _response_input(s.attrs) for c in _item_calls(it)]
        inputs = as_list(s.attrs.get("input"))
        return [c for m in inputs if isinstance(m, dict) for c in chat_tool_calls(m)]

    def input_results(self, s: Span) -> dict[str, Any]:
        """Tool results in a generation span's input, by call id (``role: tool`` messages)."""
        out: dict[str, Any] = {}
        if self.t(s) == "response":
            for it in _response_input(s.attrs):
                cid = str_or_none(it.get("call_id"))
                if it.get("type") == "function_call_output" and cid:
                    out.setdefault(cid, parse_jsonish(it.get("output")))
            return out
        for m in as_list(s.attrs.get("input")):
            if isinstance(m, dict) and m.get("role") == "tool":
                cid = str_or_none(m.get("tool_call_id"))
                if cid:
                    out.setdefault(cid, parse_jsonish(content_text(m.get("content"))))
        return out

    def tool_info(self, s: Span) -> dict[str, Any]:
        out = s.attrs.get("output")
        return tool_call(str(s.attrs.get("name", "")), s.attrs.get("input"),
                         output=parse_jsonish(out) if out is not None else None)

    def handoff_info(self, s: Span) -> tuple[str | None, str | None, dict[str, Any], str]:
        return s.attrs.get("from_agent"), s.attrs.get("to_agent"), {}, "transfer"

    def agent_output(self, s: Span) -> str | None:
        return None

    def root_users(self, s: Span) -> list[str]:
        return []

    def extra(self, s: Span, b: TraceBuilder, owner: str | None,
              issues: list[ImportIssue]) -> None:
        return None


#: span_data.type → what the span tree walk makes of it
_SPAN_KINDS = {"agent": "agent", "generation": "llm", "response": "llm", "function": "tool",
               "handoff": "handoff"}

#: The run-state ``$schemaVersion`` majors this importer reads (openai-agents writes "1.x").
SUPPORTED_RUN_STATE_VERSIONS = ("1",)


def _response_input(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The input items of a ``response`` span, when the export carries them (the SDK's own
    ``ResponseSpanData.export()`` does not; other exporters may, as ``input`` / ``_input``)."""
    value = data.get("input", data.get("_input"))
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    return [it for it in as_list(value) if isinstance(it, dict)]


def _response_output(data: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The output items of a ``response`` span (``response.output`` / ``output``), or None
    when the span carries none (only the response id)."""
    resp = data.get("response", data.get("_response"))
    value = resp.get("output") if isinstance(resp, dict) else data.get("output")
    if not isinstance(value, list):
        return None
    return [it for it in value if isinstance(it, dict)]


def _item_calls(item: dict[str, Any]) -> list[dict[str, Any]]:
    """A Responses-API ``function_call`` item as a tool-call list (else ``[]``)."""
    if item.get("type") != "function_call":
        return []
    return [tool_call(str(item.get("name", "")), item.get("arguments"),
                      id=str_or_none(item.get("call_id")))]


def _response_io(data: dict[str, Any]) -> tuple[list[str], str | None, list[dict[str, Any]]]:
    """(user messages, output text or None, tool calls) of a ``response`` span.

    Reads Responses-API items where the span carries them: ``message`` items (``role: user``
    input; ``output_text`` output) and ``function_call`` items. A span with only its response
    id gives ``([], None, [])``: the text is unavailable, not empty.
    """
    users = [content_text(it.get("content")) for it in _response_input(data)
             if it.get("role") == "user" and it.get("type", "message") == "message"]
    outputs = _response_output(data)
    if outputs is None:
        return users, None, []
    texts = [content_text(it.get("content")) for it in outputs
             if it.get("type") == "message" and it.get("role", "assistant") == "assistant"]
    calls = [c for it in outputs for c in _item_calls(it)]
    return users, "\n".join(t for t in texts if t), calls


def _spans_to_traces(records: list[tuple[str, Any]], r: Reader,
                     d: AgentsSpanDialect | None = None) -> ImportResult:
    """``records``: (where, exported object) pairs, traces and spans mixed."""
    traces_meta: dict[str, dict[str, Any]] = {}
    spans: dict[str, list[Span]] = {}
    issues: list[ImportIssue] = []
    for where, rec in records:
        rec = r.obj(rec, where)
        obj = rec.get("object")
        if obj == "trace":
            tid = r.str_(r.key(rec, "id", where), f"{where}.id")
            traces_meta[tid] = rec
        elif obj == "trace.span":
            tid = r.str_(r.key(rec, "trace_id", where), f"{where}.trace_id")
            sid = r.str_(r.key(rec, "id", where), f"{where}.id")
            data = r.obj(r.key(rec, "span_data", where), f"{where}.span_data")
            typ = r.str_(r.key(data, "type", f"{where}.span_data"), f"{where}.span_data.type")
            name = f"{typ}:{data['name']}" if isinstance(data.get("name"), str) else typ
            parent = rec.get("parent_id")
            spans.setdefault(tid, []).append(Span(
                tid, sid, parent if isinstance(parent, str) else None, name,
                _ns(rec.get("started_at")), _ns(rec.get("ended_at")), data, where))
            if rec.get("error"):
                issues.append(ImportIssue(FORMAT, where, f"span recorded an error: "
                                          f"{json.dumps(rec['error'])[:200]}"))
        else:
            raise r.fail(f"{where}.object", f"expected 'trace' or 'trace.span', got {obj!r}")
    if not spans:
        raise r.fail("", "no spans ('object': 'trace.span') in the export")
    d = d or AgentsSpanDialect()
    out = []
    for tid, group in spans.items():
        by_id = {s.span_id: s for s in group}
        order = {id(s): i for i, s in enumerate(group)}
        for s in group:
            s.parent = by_id.get(s.parent_id) if s.parent_id else None
            if s.parent is not None:
                s.parent.children.append(s)
        for s in group:
            s.children.sort(key=lambda c: (c.start, order[id(c)]))
        group.sort(key=lambda s: (s.start, order[id(s)]))
        meta_src = traces_meta.get(tid, {})
        conv = meta_src.get("group_id") or tid
        meta = {"trace_id": tid, "workflow_name": meta_src.get("workflow_name"),
                "group_id": meta_src.get("group_id")}
        if meta_src.get("metadata"):
            meta["trace_metadata"] = meta_src["metadata"]
        t = build_trace(group, d, str(conv), issues, meta)
        if t is not None:
            bare = [s for s in group if s.attrs.get("type") == "response"
                    and _response_output(s.attrs) is None]
            if bare:
                issues.append(ImportIssue(
                    FORMAT, bare[0].where, f"content absent: {len(bare)} Responses-API "
                    "'response' span(s) carry only a response id (and usage) — the SDK's "
                    "ResponseSpanData.export() leaves the model input and output out of the "
                    "export — so their message text, the user input and the handoff tool calls "
                    "and arguments are not in the file; structure imported (agents, handoffs, "
                    "function-tool calls with outputs). Export RunResult.new_items or the run "
                    "state to get the text", t.conversation_id))
            out.append(t)
    unmapped = Counter(d.t(s) for group in spans.values() for s in group
                       if d.kind(s) is None and d.t(s) != "custom")
    hint = zero_handoff_issue(FORMAT, out, unmapped, "span type", d.handoff_types)
    if hint is not None:
        issues.append(hint)
    # one conversation can span several traces with the same group_id: keep ids unique
    seen: Counter[str] = Counter()
    for t in out:
        seen[t.conversation_id] += 1
        if seen[t.conversation_id] > 1:
            t.conversation_id = f"{t.conversation_id}#{seen[t.conversation_id]}"
    return ImportResult(out, issues)


# ---- run items / run state -------------------------------------------------------------

def _agent_name(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("name")
    return value if isinstance(value, str) and value else None


def _items_to_trace(items: list[Any], where0: str, users: list[str], conv: str,
                    meta: dict[str, Any], r: Reader, issues: list[ImportIssue],
                    spare_calls: list[dict[str, Any]] | None = None):
    b = TraceBuilder(conv, FORMAT, metadata=meta)
    for u in users:
        b.user(u)
    calls_by_id: dict[str, dict[str, Any]] = {}
    current: AgentTurn | None = None
    current_resp: str | None = None
    after_output = False
    last_agent: str | None = None
    pending_handoff_to: str | None = None
    unmapped: Counter[str] = Counter()
    seen_call_ids: set[str] = set()

    def turn_for(agent: str, resp: str | None, is_message: bool) -> AgentTurn:
        nonlocal current, current_resp, after_output, last_agent, pending_handoff_to
        if last_agent is not None and agent != last_agent and pending_handoff_to != agent:
            _infer_handoff(b, last_agent, agent, spare_calls or [], seen_call_ids, issues)
        pending_handoff_to = None
        same = (current is not None and current.agent_id == agent and (
            (resp is not None and resp == current_resp) or
            (resp is None and current_resp is None and not after_output
             and not (is_message and current.message))))
        if not same:
            current = b.turn(agent, "")
            current_resp = resp
        after_output = False
        last_agent = agent
        assert current is not None
        return current

    for i, item in enumerate(items):
        where = f"{where0}[{i}]"
        item = r.obj(item, where)
        typ = r.str_(r.key(item, "type", where), f"{where}.type")
        raw = (cast("dict[str, Any]", item.get("raw_item")) if isinstance(item.get("raw_item"), dict)
               else {})
        agent = _agent_name(item.get("agent"))
        resp = str_or_none(as_dict(raw.get("provider_data")).get("response_id"))
        if typ in ("message_output_item", "tool_call_item", "handoff_call_item"):
            if agent is None:
                raise r.fail(f"{where}.agent", "the item names no agent")
            t = turn_for(agent, resp, typ == "message_output_item")
            if typ == "message_output_item":
                text = content_text(raw.get("content"))
                t.message = f"{t.message}\n{text}" if t.message else text
            else:
                call: dict[str, Any] | None  # None: no call of that id (below)
                call = tool_call(str(raw.get("name", raw.get("type", ""))), raw.get("arguments"),
                                 id=raw.get("call_id"))
                t.tool_calls.append(call)
                if "id" in call:
                    calls_by_id[call["id"]] = call
                    seen_call_ids.add(call["id"])
        elif typ == "tool_call_output_item":
            call = calls_by_id.get(str_or_none(raw.get("call_id")) or "")
            if call is not None:
                call["output"] = parse_jsonish(item.get("output", raw.get("output")))
            after_output = True
        elif typ == "handoff_output_item":
            src = _agent_name(item.get("source_agent")) or agent
            dst = _agent_name(item.get("target_agent"))
            if not src or not dst:
                raise r.fail(where, "handoff_output_item needs source_agent and target_agent")
            call = calls_by_id.get(str_or_none(raw.get("call_id")) or "")
            ctx = call.get("arguments") if call else {}
            if call is not None:
                call["output"] = parse_jsonish(raw.get("output"))
            b.handoff(src, dst, ctx if isinstance(ctx, dict) else {"input": ctx})
            pending_handoff_to = dst
            after_output = True
        else:
            unmapped[typ] += 1
    if unmapped:
        issues.append(ImportIssue(FORMAT, where0, "item types not mapped: " + ", ".join(
            f"{k} ×{v}" for k, v in unmapped.most_common()), conv))
    return b.build()


def _infer_handoff(b: TraceBuilder, frm: str, to: str, spare: list[dict[str, Any]],
                   seen: set[str], issues: list[ImportIssue]) -> None:
    """A handoff ``frm → to`` the items do not record (an ``input_filter`` removed it).

    When the model's ``transfer_to_<to>`` call is known from ``model_responses`` (run state),
    it is restored as a tool call of ``frm``'s last turn and its arguments are the context.
    """
    ctx: dict[str, Any] = {}
    restored = None
    for call in spare:
        tgt = transfer_target(call.get("name", ""))
        if tgt and slug(tgt) == slug(to) and call.get("id") not in seen:
            args = call.get("arguments")
            ctx = args if isinstance(args, dict) else {}
            restored = dict(call)
            if call.get("id"):
                seen.add(call["id"])
            break
    last = next((t for t in reversed(b.turns) if t.agent_id == frm), None)
    if restored is not None and last is not None:
        last.tool_calls.append(restored)
    b.handoff(frm, to, ctx)
    b.metadata.setdefault("inferred_handoffs", []).append(len(b.handoffs) - 1)
    src = ("; its transfer call and context read from the model response" if restored else "")
    issues.append(ImportIssue(FORMAT, "", f"handoff {frm} → {to} inferred from a change of "
                              f"agent (no handoff item; an input_filter removes it){src}",
                              b.conversation_id))


def _input_users(items: Any) -> list[str]:
    if isinstance(items, str):
        return [items]
    out = []
    for m in as_list(items):
        if isinstance(m, dict) and m.get("role") == "user":
            out.append(content_text(m.get("content")))
    return out


def _run_items(data: Any, name: str, r: Reader) -> ImportResult:
    issues: list[ImportIssue] = []
    if isinstance(data, list):
        items, users, meta, where = data, [], {}, ""
    else:
        items = r.arr(r.key(data, "new_items", ""), "new_items")
        where = "new_items"
        inputs = data.get("to_input_list") or data.get("input") or []
        users = _input_users(inputs)
        meta = {k: data[k] for k in ("last_agent", "final_output") if k in data}
        if isinstance(data.get("context_after_run"), dict):
            meta["run_context"] = data["context_after_run"]
    if not users:
        issues.append(ImportIssue(FORMAT, "", "no user input in the file (run items hold only "
                                  "generated items)", name))
    t = _items_to_trace(items, where, users, name, meta, r, issues)
    return ImportResult([t], issues)


def _run_state(data: dict[str, Any], name: str, r: Reader) -> ImportResult:
    issues: list[ImportIssue] = []
    if "session_items" in data:
        key = "session_items"
    elif "generated_items" in data:
        key = "generated_items"
        issues.append(ImportIssue(FORMAT, "generated_items", "no session_items: only the "
                                  "last run's items are imported", name))
    else:
        raise r.fail("", "run state has neither session_items nor generated_items")
    items = r.arr(data[key], key)
    spare = []
    for resp in r.arr(data.get("model_responses") or [], "model_responses"):
        for out in as_list(as_dict(resp).get("output")):
            if isinstance(out, dict) and out.get("type") == "function_call":
                spare.append(tool_call(str(out.get("name", "")), out.get("arguments"),
                                       id=out.get("call_id")))
    check_run_state_version(data, r)
    conv = data.get("conversation_id") or name
    meta = {"schema_version": data.get("$schemaVersion"),
            "current_agent": _agent_name(data.get("current_agent"))}
    ctx = as_dict(data.get("context")).get("context")
    if ctx:
        meta["run_context"] = ctx
    users = _input_users(data.get("original_input"))
    t = _items_to_trace(items, key, users, str(conv), meta, r, issues, spare)
    return ImportResult([t], issues)


def check_run_state_version(data: dict[str, Any], r: Reader) -> None:
    """Refuse a ``$schemaVersion`` this importer does not know, naming the version found and
    the versions read (a newer SDK may have moved what the importer reads).

    >>> check_run_state_version({"$schemaVersion": "9.0"}, Reader(FORMAT))
    Traceback (most recent call last):
    ...
    maev_kit.traces.importers._common.TraceImportError: cannot import as 'openai-agents' at $schemaVersion: unsupported run-state schema version '9.0'; this version of maev-kit reads 1.x (openai-agents run state, RunResult.to_state().to_json())
    """
    if "$schemaVersion" not in data:
        return
    version = data["$schemaVersion"]
    major = str(version).split(".")[0] if isinstance(version, (str, int, float)) \
        and not isinstance(version, bool) else None
    if major not in SUPPORTED_RUN_STATE_VERSIONS:
        supported = ", ".join(f"{v}.x" for v in SUPPORTED_RUN_STATE_VERSIONS)
        raise r.fail("$schemaVersion", f"unsupported run-state schema version {version!r}; "
                                       f"this version of maev-kit reads {supported} "
                                       "(openai-agents run state, RunResult.to_state()"
                                       ".to_json())")


def import_openai_agents(data: Any, *, name: str = "run", handoff_type: Any = None,
                         **options: Any) -> ImportResult:
    """Any of the four OpenAI Agents SDK shapes (see the module docstring) → (traces, issues).

    ``handoff_type``: a span type (or a list of them) to read as a handoff besides
    ``handoff``, for an export whose handoff spans carry another ``span_data.type``.
    """
    check_options(options, FORMAT, ("handoff_type",))
    r = Reader(FORMAT)
    d = AgentsSpanDialect(handoff_types_option(handoff_type))
    if isinstance(data, dict):
        check_run_state_version(data, r)
        if "spans" in data:
            records = [("trace", data["trace"])] if isinstance(data.get("trace"), dict) else []
            records += [(f"spans[{i}]", s) for i, s in enumerate(r.arr(data["spans"], "spans"))]
            return _spans_to_traces(records, r, d)
        if "data" in data:
            return _spans_to_traces([(f"data[{i}]", s) for i, s in
                                     enumerate(r.arr(data["data"], "data"))], r, d)
        if "new_items" in data:
            return _run_items(data, name, r)
        if "$schemaVersion" in data or "session_items" in data or "generated_items" in data:
            return _run_state(data, name, r)
        raise r.fail("", "expected span exports ({\"trace\", \"spans\"}), an ingest payload "
                         "({\"data\": [...]}), run items ({\"new_items\": [...]}) or a run "
                         "state ({\"$schemaVersion\", \"session_items\", ...})")
    items = r.arr(data, "")
    if not items:
        raise r.fail("", "the file holds an empty list")
    first = r.obj(items[0], "[0]")
    if "data" in first:
        records = []
        for i, payload in enumerate(items):
            payload = r.obj(payload, f"[{i}]")
            records += [(f"[{i}].data[{j}]", s) for j, s in
                        enumerate(r.arr(r.key(payload, "data", f"[{i}]"), f"[{i}].data"))]
        return _spans_to_traces(records, r, d)
    if first.get("object") in ("trace", "trace.span"):
        return _spans_to_traces([(f"[{i}]", s) for i, s in enumerate(items)], r, d)
    return _run_items(items, name, r)
