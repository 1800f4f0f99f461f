"""Where the importer tests find the framework samples: ``tests/data/trace_samples``."""

from __future__ import annotations

from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "trace_samples"
HAVE_SAMPLES = SAMPLES.is_dir()
SKIP_REASON = "the trace samples are not present: expected tests/data/trace_samples"


def sample_files() -> list[str]:
    """Every sample file, relative to the samples folder (empty when the folder is absent)."""
    if not HAVE_SAMPLES:
        return []
    return sorted(str(p.relative_to(SAMPLES)) for p in SAMPLES.rglob("*.json"))
