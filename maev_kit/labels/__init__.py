"""Human labels: the append-only labels file, the label store and the labeling session.

Nothing here imports a widget library; :mod:`maev_kit.widgets` is a view over these.
"""

from maev_kit.labels._records import (
    LABEL_VALUES,
    LabelFile,
    LabelRecord,
    latest_labels,
    read_label_file,
)
from maev_kit.labels._session import LabelingSession, ShownVerdict
from maev_kit.labels._store import LabelStore, LabelStoreWarning

__all__ = [
    "LABEL_VALUES",
    "LabelFile",
    "LabelRecord",
    "LabelStore",
    "LabelStoreWarning",
    "LabelingSession",
    "ShownVerdict",
    "latest_labels",
    "read_label_file",
]
