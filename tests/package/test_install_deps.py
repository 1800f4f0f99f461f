"""A plain install is the design card: pandas, scikit-learn, ipywidgets, anywidget, openai and
litellm come with `pip install maev-kit`; JupyterLab is the `[lab]` extra."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[2]
DESIGN_CARD = {"pandas", "scikit-learn", "ipywidgets", "anywidget", "openai", "litellm"}


def _project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _names(reqs):
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in reqs}


def test_plain_install_brings_the_design_card_packages():
    assert DESIGN_CARD <= _names(_project()["dependencies"])


def test_jupyterlab_is_the_lab_extra_and_the_only_way_to_get_it():
    project = _project()
    extras = project["optional-dependencies"]
    assert "jupyterlab" not in _names(project["dependencies"])
    assert "jupyterlab" in _names(extras["lab"])
    assert not {"llm", "notebook"} & set(extras), "one way to install each thing: [lab]"
    assert any(r.startswith("maev-kit[") and "lab" in r for r in extras["test"])
    # no extra repeats a plain dependency
    for name, reqs in extras.items():
        assert not (_names(reqs) & DESIGN_CARD), name


def test_import_maev_kit_loads_no_widget_or_llm_client():
    code = ("import sys, maev_kit; print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'litellm', 'openai', 'ipywidgets', 'anywidget'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
