"""Human labels: the append-only labels file, the label store and the labeling session."""

from maev_kit.labels._records import (
    LABEL_VALUES,
    LabelFile,
    LabelRecord,
    latest_labels,
    read_label_file,
)

__all__ = ["LABEL_VALUES", "LabelFile", "LabelRecord", "latest_labels", "read_label_file"]
