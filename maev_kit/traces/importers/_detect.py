"""Which format a parsed export is in: cheap structural checks, no full parse."""

from __future__ import annotations

from typing import Any

_LC_TYPES = {"human", "ai", "tool", "system", "HumanMessage", "AIMessage", "ToolMessage",
             "SystemMessage"}
_CREW_EVENTS = {"crew_kickoff_started", "agent_execution_started", "tool_usage_started",
                "task_started", "agent_execution_completed"}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _otlp_flavour(data: dict[str, Any]) -> str:
    for rs in _list(data.get("resourceSpans")):
        rs = _dict(rs)
        for ss in _list(rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans")):
            for s in _list(_dict(ss).get("spans")):
                for kv in _list(_dict(s).get("attributes")):
                    if isinstance(kv, dict) and kv.get("key") == "openinference.span.kind":
                        return "openinference"
    return "otel"


def _message_flavour(msgs: list[Any]) -> str | None:
    for m in msgs[:20]:
        if not isinstance(m, dict):
            return None
        if "source" in m and "type" in m:
            return "autogen"
        if (m.get("lc") == 1 or ("type" in m and "data" in m)
                or m.get("type") in _LC_TYPES):
            return "langgraph"
    if msgs and all(isinstance(m, dict) and ("role" in m or "name" in m) for m in msgs[:20]):
        return "chat"
    return None


def detect_format(data: Any) -> str | None:
    """The format name for parsed JSON ``data``, or None when nothing matches.

    >>> detect_format({"resourceSpans": []})
    'otel'
    >>> detect_format([{"role": "user", "content": "hi"}, {"name": "bot", "content": "hello"}])
    'chat'
    """
    if isinstance(data, dict):
        if "resourceSpans" in data:
            return _otlp_flavour(data)
        if "openinference.span.kind" in data:
            return "openinference"
        if any(isinstance(k, str) and k.startswith("gen_ai.") for k in data):
            return "otel"
        if ("spans" in data and ("trace" in data or isinstance(data.get("spans"), list))) \
                or "new_items" in data or "$schemaVersion" in data \
                or "session_items" in data or (
                isinstance(data.get("data"), list) and data["data"]
                and isinstance(data["data"][0], dict) and "object" in data["data"][0]):
            return "openai-agents"
        if data.get("type") == "TeamState":
            return "autogen"
        if "run_type" in data:
            return "langgraph"
        if isinstance(data.get("events"), list):
            if any(isinstance(e, dict) and e.get("type") in _CREW_EVENTS
                   for e in data["events"]):
                return "crewai"
            return None
        if "chat_history" in data:
            return "chat"
        if isinstance(data.get("messages"), list):
            return _message_flavour(data["messages"])
        return None
    if isinstance(data, list) and data:
        first = data[0]
        if isinstance(first, list) and len(first) == 2 and isinstance(first[1], dict):
            return "langgraph"  # stream updates with subgraph namespaces
        if not isinstance(first, dict):
            return None
        if isinstance(first.get("data"), list) or first.get("object") in ("trace", "trace.span"):
            return "openai-agents"
        if "raw_item" in first and str(first.get("type", "")).endswith("_item"):
            return "openai-agents"
        if "run_type" in first:
            return "langgraph"
        if first.get("type") in _CREW_EVENTS or ("emission_sequence" in first
                                                  and "event_id" in first):
            return "crewai"
        if "messages" in first or "chat_history" in first:
            inner = first.get("messages", first.get("chat_history"))
            flavour = _message_flavour(inner) if isinstance(inner, list) else None
            return flavour if flavour not in (None, "autogen", "langgraph") else "chat"
        if all(isinstance(v, dict) and "messages" in v for v in first.values()) and first:
            return "langgraph"  # stream updates without namespaces
        return _message_flavour(data)
    return None
