"""The seam of :mod:`maev_kit.traces` for the other packages of maev_kit (not part of the user
API): the conversation view (what a judge, an annotator and the report read), the Parquet reader
and writer, and the hook that registers a trace's HTML view.
"""

from __future__ import annotations

from maev_kit.traces._model import register_html_view
from maev_kit.traces._parquet import (
    is_parquet_file,
    load_parquet,
    read_row_groups,
    table_to_traces,
    traces_to_table,
)
from maev_kit.traces._view import MESSAGE_KINDS, conversation_view

__all__ = ["MESSAGE_KINDS", "conversation_view", "is_parquet_file", "load_parquet",
           "read_row_groups", "register_html_view", "table_to_traces", "traces_to_table"]
