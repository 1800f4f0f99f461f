"""Score millions of traces on Ray Data, with the same numbers as ``evaluate``.

``evaluate_dataset(source, judge=..., output_dir=...)`` maps the per-conversation stage of
:func:`~maev_kit.evaluation.evaluate` over blocks of conversations on a Ray cluster (a local one
unless ``address`` is given), judges each block's facts through the same runner, writes the
per-conversation scores and the retention ledger as Parquet under ``output_dir`` as each block
finishes, and aggregates them with the same aggregate stage. Needs the ``scale`` extra
(``pip install "maev-kit[scale]"``); importing this package imports neither Ray nor pyarrow.
"""

from maev_kit.scale._ray import ShardFailure, evaluate_dataset

__all__ = ["ShardFailure", "evaluate_dataset"]
