"""`import maev_kit` stays light: no litellm, ipywidgets, matplotlib or scikit-learn."""

import json
import subprocess
import sys

HEAVY = ["litellm", "openai", "ipywidgets", "matplotlib", "sklearn", "IPython", "scipy"]

PROBE = """
import json, sys
import pandas  # the kit needs it anyway; measure what comes on top
before = set(sys.modules)
import maev_kit; {extra}
print(json.dumps({{"mods": sorted(set(sys.modules) - before)}}))
"""


def _probe(extra: str = "pass") -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE.format(extra=extra)], capture_output=True,
                         text=True, check=True, timeout=120).stdout
    return json.loads(out)


def _heavy(mods):
    return sorted({m.split(".")[0] for m in mods} & set(HEAVY))


def test_import_maev_kit_pulls_in_no_heavy_dependency():
    assert _heavy(_probe()["mods"]) == []


def test_trace_model_and_metrics_stay_light():
    mods = _probe("from maev_kit import load_traces, score_handoff_accuracy, "
                  "detect_circular_handoffs, build_retention_items")["mods"]
    assert _heavy(mods) == []


def test_offline_judge_needs_no_llm_package():
    mods = _probe("from maev_kit import HeuristicJudge")["mods"]
    assert not {"litellm", "openai"} & {m.split(".")[0] for m in mods}
