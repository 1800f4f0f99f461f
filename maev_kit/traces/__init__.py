"""Traces: the data model, JSONL input/output and validation; importers in ``traces.importers``."""

from maev_kit.traces._io import (
    SUPPORTED_SCHEMA_VERSIONS,
    check_trace,
    handoffs_to_frame,
    save_traces,
    trace_from_dict,
    trace_to_dict,
    traces_to_frame,
    validate_trace_file,
)
from maev_kit.traces._load import load_traces
from maev_kit.traces._model import (
    AgentTurn,
    Handoff,
    HandoffMode,
    HandoffReason,
    Message,
    MultiAgentTrace,
    UserMessage,
)

__all__ = [
    "SUPPORTED_SCHEMA_VERSIONS",
    "AgentTurn",
    "Handoff",
    "HandoffMode",
    "HandoffReason",
    "Message",
    "MultiAgentTrace",
    "UserMessage",
    "check_trace",
    "handoffs_to_frame",
    "load_traces",
    "save_traces",
    "trace_from_dict",
    "trace_to_dict",
    "traces_to_frame",
    "validate_trace_file",
]
