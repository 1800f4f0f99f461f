"""OTLP JSON: spans out of ``resourceSpans``, ids normalised, spans grouped into conversations.

Shared by the OTel GenAI and OpenInference importers. Also reads a *flat attribute map* (one
span's attributes as a JSON object, as in the OpenInference test fixtures) as a one-span trace.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from maev_kit.traces.importers._common import Reader, as_dict, as_list

_HEX = re.compile(r"^[0-9a-fA-F]+$")


@dataclass
class Span:
    """One span, format-neutral: hex ids, flat attributes, nanosecond times."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int
    end: int
    attrs: dict[str, Any]
    where: str
    events: list[dict[str, Any]] = field(default_factory=list)
    links: list[str] = field(default_factory=list)  # linked trace ids
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str = ""
    children: list[Span] = field(default_factory=list)
    parent: Span | None = None

    def ancestors(self) -> list[Span]:
        out, p = [], self.parent
        while p is not None:
            out.append(p)
            p = p.parent
        return out

    def descendants(self) -> list[Span]:
        out: list[Span] = []
        stack = list(reversed(self.children))
        while stack:
            s = stack.pop()
            out.append(s)
            stack.extend(reversed(s.children))
        return out


def norm_id(value: Any, nbytes: int, where: str, r: Reader) -> str | None:
    """An OTLP id as lower-case hex: accepts hex (the OTLP JSON rule) and base64 (protobuf JSON)."""
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise r.fail(where, f"expected a hex or base64 id string, got {type(value).__name__}")
    if len(value) == 2 * nbytes and _HEX.match(value):
        return value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) == nbytes:
        return raw.hex()
    raise r.fail(where, f"{value!r} is neither {2 * nbytes} hex digits nor base64 of "
                        f"{nbytes} bytes")


def any_value(v: Any) -> Any:
    """Decode an OTLP ``AnyValue`` (``{"stringValue": ...}``) into a plain Python value."""
    if not isinstance(v, dict) or not v:
        return v
    if "stringValue" in v:
        return v["stringValue"]
    if "boolValue" in v:
        return v["boolValue"]
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            return v["intValue"]
    if "doubleValue" in v:
        return v["doubleValue"]
    if "arrayValue" in v:
        return [any_value(x) for x in as_list(as_dict(v["arrayValue"]).get("values"))]
    if "kvlistValue" in v:
        return {kv.get("key"): any_value(kv.get("value"))
                for kv in as_list(as_dict(v["kvlistValue"]).get("values")) if isinstance(kv, dict)}
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def attributes(items: Any, where: str, r: Reader) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, kv in enumerate(r.arr(items or [], where)):
        kv = r.obj(kv, f"{where}[{i}]")
        key = r.str_(r.key(kv, "key", f"{where}[{i}]"), f"{where}[{i}].key")
        out[key] = any_value(kv.get("value"))
    return out


def _time(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def parse_otlp(data: Any, r: Reader) -> list[Span]:
    """All spans of an OTLP JSON export (``{"resourceSpans": [...]}``), in file order."""
    data = r.obj(data, "")
    spans: list[Span] = []
    for i, rs in enumerate(r.arr(r.key(data, "resourceSpans", ""), "resourceSpans")):
        w_rs = f"resourceSpans[{i}]"
        rs = r.obj(rs, w_rs)
        resource = attributes(as_dict(rs.get("resource")).get("attributes"),
                              f"{w_rs}.resource.attributes", r)
        scope_key = "scopeSpans" if "scopeSpans" in rs else "instrumentationLibrarySpans"
        for j, ss in enumerate(r.arr(rs.get(scope_key, []), f"{w_rs}.{scope_key}")):
            w_ss = f"{w_rs}.{scope_key}[{j}]"
            ss = r.obj(ss, w_ss)
            scope = str((as_dict(ss.get("scope")) or as_dict(ss.get("instrumentationLibrary")))
                        .get("name") or "")
            for k, s in enumerate(r.arr(r.key(ss, "spans", w_ss), f"{w_ss}.spans")):
                w = f"{w_ss}.spans[{k}]"
                s = r.obj(s, w)
                trace_id = norm_id(r.key(s, "traceId", w), 16, f"{w}.traceId", r)
                span_id = norm_id(r.key(s, "spanId", w), 8, f"{w}.spanId", r)
                if trace_id is None or span_id is None:
                    raise r.fail(f"{w}.traceId" if trace_id is None else f"{w}.spanId",
                                 "id is empty")
                parent = norm_id(s.get("parentSpanId"), 8, f"{w}.parentSpanId", r)
                links = []
                for m, link in enumerate(r.arr(s.get("links") or [], f"{w}.links")):
                    link = r.obj(link, f"{w}.links[{m}]")
                    tid = norm_id(link.get("traceId"), 16, f"{w}.links[{m}].traceId", r)
                    if tid:
                        links.append(tid)
                events = []
                for m, ev in enumerate(r.arr(s.get("events") or [], f"{w}.events")):
                    ev = r.obj(ev, f"{w}.events[{m}]")
                    events.append({"name": ev.get("name"),
                                   "attrs": attributes(ev.get("attributes"),
                                                       f"{w}.events[{m}].attributes", r)})
                spans.append(Span(
                    trace_id, span_id, parent, r.str_(r.key(s, "name", w), f"{w}.name"),
                    _time(s.get("startTimeUnixNano")), _time(s.get("endTimeUnixNano")),
                    attributes(s.get("attributes"), f"{w}.attributes", r), w, events, links,
                    resource, scope))
    if not spans:
        raise r.fail("resourceSpans", "the export holds no spans")
    return spans


def flat_span(data: dict[str, Any], r: Reader) -> list[Span]:
    """A flat attribute map (one span's attributes, no ids) as a one-span list."""
    r.obj(data, "")
    return [Span("0" * 32, "0" * 16, None, str(data.get("gen_ai.operation.name")
                                               or data.get("openinference.span.kind") or "span"),
                 0, 0, dict(data), "attributes")]


_CONV_KEYS = ("gen_ai.conversation.id", "session.id", "conversation.id")


def group_traces(spans: list[Span]) -> list[list[Span]]:
    """Spans grouped into conversations, each linked into a tree and sorted by start time.

    Traces joined by span links, or sharing a ``gen_ai.conversation.id`` / ``session.id``,
    form one conversation. A span whose parent is not in the file becomes a root.
    """
    parent_of: dict[str, str] = {}

    def find(x: str) -> str:
        while parent_of.get(x, x) != x:
            parent_of[x] = parent_of.get(parent_of[x], parent_of[x])
            x = parent_of[x]
        return x

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent_of[rb] = ra

    conv_first: dict[str, str] = {}
    for s in spans:
        parent_of.setdefault(s.trace_id, s.trace_id)
        for t in s.links:
            parent_of.setdefault(t, t)
            union(s.trace_id, t)
        for key in _CONV_KEYS:
            conv = s.attrs.get(key)
            if isinstance(conv, str) and conv:
                if conv in conv_first:
                    union(conv_first[conv], s.trace_id)
                else:
                    conv_first[conv] = s.trace_id
    groups: dict[str, list[Span]] = defaultdict(list)
    for s in spans:
        groups[find(s.trace_id)].append(s)
    out = []
    for group in groups.values():
        by_id = {(s.trace_id, s.span_id): s for s in group}
        by_span = {s.span_id: s for s in group}
        for s in group:
            s.children = []
        for s in group:
            p = by_id.get((s.trace_id, s.parent_id)) if s.parent_id else None
            if p is None and s.parent_id:
                p = by_span.get(s.parent_id)
            s.parent = p
            if p is not None:
                p.children.append(s)
        order = {id(s): i for i, s in enumerate(group)}
        for s in group:
            s.children.sort(key=lambda c: (c.start, order[id(c)]))
        group.sort(key=lambda s: (s.start, order[id(s)]))
        out.append(group)
    out.sort(key=lambda g: g[0].start)
    return out


def conversation_id(group: list[Span], default: str) -> str:
    for s in group:
        for key in _CONV_KEYS:
            v = s.attrs.get(key)
            if isinstance(v, str) and v:
                return v
    return default
