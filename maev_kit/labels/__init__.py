"""Human labels: the append-only labels file, the label store and the labeling session.

Nothing here imports a widget library; :mod:`maev_kit.widgets` is a view over these. A label
whose item is gone (its fact rejected in review or removed) is set aside, never deleted:
:func:`label_status` lists where each label stands and :func:`reattach_labels` moves set-aside
labels to another item by appending lines.

:class:`LabelStore` keeps labels in ``labels.jsonl`` (the default and the interchange format)
or, given a URL, in SQLite (``sqlite:///labels.db``) or PostgreSQL (``postgresql://…``) with
the same semantics (docs/label-stores.md); :func:`open_label_store` and :func:`copy_labels`.
"""

from maev_kit.labels._adjudicate import (
    ADJUDICATED_SOURCE,
    AdjudicationSession,
    Disagreement,
    disagreements,
    settled_human_labels,
    settled_labels,
)
from maev_kit.labels._attach import LabelStatus, SetAsideLabel, label_status, reattach_labels
from maev_kit.labels._backends import LabelStoreError
from maev_kit.labels._plan import (
    PLAN_FILE,
    SessionPlan,
    annotator_labels,
    load_session_plan,
    plan_session,
)
from maev_kit.labels._records import (
    LABEL_VALUES,
    LabelFile,
    LabelRecord,
    check_annotator,
    latest_labels,
    read_label_file,
)
from maev_kit.labels._sample import SAMPLE_FILE, LabelSample, draw_label_sample, population_hash
from maev_kit.labels._session import LabelingSession, ShownVerdict
from maev_kit.labels._store import LabelStore, LabelStoreWarning, copy_labels, open_label_store

__all__ = [
    "ADJUDICATED_SOURCE",
    "LABEL_VALUES",
    "PLAN_FILE",
    "SAMPLE_FILE",
    "AdjudicationSession",
    "Disagreement",
    "LabelFile",
    "LabelRecord",
    "LabelSample",
    "LabelStatus",
    "LabelStore",
    "LabelStoreError",
    "LabelStoreWarning",
    "LabelingSession",
    "SessionPlan",
    "SetAsideLabel",
    "ShownVerdict",
    "annotator_labels",
    "check_annotator",
    "copy_labels",
    "disagreements",
    "draw_label_sample",
    "label_status",
    "latest_labels",
    "load_session_plan",
    "open_label_store",
    "plan_session",
    "population_hash",
    "read_label_file",
    "reattach_labels",
    "settled_human_labels",
    "settled_labels",
]
