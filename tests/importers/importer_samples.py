"""Where the importer tests find the shared samples: ``../shared/trace_samples`` beside the repo."""

from __future__ import annotations

from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[2].parent / "shared" / "trace_samples"
HAVE_SAMPLES = SAMPLES.is_dir()
SKIP_REASON = ("the shared trace samples are not present: expected ../shared/trace_samples "
               "beside the repository clone")


def sample_files() -> list[str]:
    """Every sample file, relative to the samples folder (empty when the folder is absent)."""
    if not HAVE_SAMPLES:
        return []
    return sorted(str(p.relative_to(SAMPLES)) for p in SAMPLES.rglob("*.json"))
