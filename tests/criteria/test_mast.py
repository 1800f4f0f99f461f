"""The MAST failure modes as built-in criteria, one by one and as a group."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from maev_kit.criteria import (MAST_SOURCE, builtin, builtins, find_mast_modes, mast_mode,
                               mast_modes, resolve)
from maev_kit.errors import InputError
from maev_kit.testing import FakeOpenAIServer
from maev_kit.traces import AgentTurn, MultiAgentTrace

CODES = ["1.1", "1.2", "1.3", "1.4", "1.5", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6",
         "3.1", "3.2", "3.3"]


def test_fourteen_modes_with_stable_names_and_the_source_cited():
    modes = mast_modes()
    assert len(modes) == 14 == len({m.name for m in modes})
    for code, m in zip(CODES, modes):
        assert m.name.startswith(f"mast-{code.replace('.', '-')}-")
        assert (m.scope, m.labels, m.positive) == ("conversation", ("yes", "no"), "yes")
        assert f"MAST {code}" in m.question and MAST_SOURCE in m.guidelines
        assert builtin(m.name) is m and resolve(m.name) == [m]
        assert mast_mode(code) is m and mast_mode(f"FM-{code}") is m and mast_mode(m.name) is m
    assert set(builtins()) >= {m.name for m in modes}
    assert mast_mode("1.1").name == "mast-1-1-disobey-task-specification"
    assert mast_mode("3.3").name == "mast-3-3-incorrect-verification"
    with pytest.raises(InputError, match="no MAST mode '4.1'"):
        mast_mode("4.1")


def test_names_are_the_same_in_another_process():
    code = "from maev_kit.criteria import mast_modes; print([m.name for m in mast_modes()])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == str([m.name for m in mast_modes()])


def traces():
    looping = MultiAgentTrace("loop", turns=[AgentTurn("a", "", "Let me search."),
                                             AgentTurn("b", "", "Search again."),
                                             AgentTurn("a", "", "Let me search.")])
    clean = MultiAgentTrace("clean", turns=[AgentTurn("a", "", "Done, verified: 4."),
                                            AgentTurn("b", "", "Confirmed.")])
    return [looping, clean]


def repeats_and_no_check(item):
    """Step repetition when a message comes twice; no verification when none says verified."""
    said = [t.message for t in item.trace.turns]
    if item.criterion == mast_mode("1.3").name:
        return "yes" if len(set(said)) < len(said) else "no"
    if item.criterion == mast_mode("3.2").name:
        return "no" if any("verified" in s for s in said) else "yes"
    if item.criterion == mast_mode("2.4").name and item.conversation_id == "clean":
        raise RuntimeError("judge failed")
    return "no"


def test_which_modes_occur_in_each_trace():
    found = find_mast_modes(traces(), repeats_and_no_check, progress=False)
    assert found.present("loop") == {mast_mode("1.3").name, mast_mode("3.2").name}
    assert found.present("clean") == frozenset()
    # a failed judge call is neither present nor absent
    assert found.unjudged("clean") == {mast_mode("2.4").name}
    frame = found.to_frame()
    assert frame.shape == (2, 14) and list(frame.index) == ["loop", "clean"]
    assert frame.loc["loop", mast_mode("1.3").name]
    assert pd.isna(frame.loc["clean", mast_mode("2.4").name])
    assert not frame.loc["clean", mast_mode("1.3").name]
    assert int(frame.sum().sum()) == 2


def test_some_modes_and_a_judge_per_mode():
    found = find_mast_modes(traces(), {"1.3": repeats_and_no_check, "FM-3.2": lambda it: "yes"},
                            modes=["1.3", "3.2"], progress=False)
    assert list(found.runs) == [mast_mode("1.3").name, mast_mode("3.2").name]
    assert found.present("clean") == {mast_mode("3.2").name}
    with pytest.raises(InputError, match="no judge for MAST mode"):
        find_mast_modes(traces(), {"1.3": repeats_and_no_check}, progress=False)


def _model(body):
    """The fake model: step repetition when the rendered conversation repeats a line; 'no'
    on every other mode, except a reply outside the labels on information withholding."""
    user = body["messages"][-1]["content"]
    conv = user.split("<<<CONVERSATION\n", 1)[1].split("\nCONVERSATION>>>", 1)[0]
    if "'Information withholding'" in user:
        return '{"label": "perhaps", "reason": "unsure"}'
    repeated = conv.count("Let me search.") > 1
    label = "yes" if "'Step repetition'" in user and repeated else "no"
    return json.dumps({"label": label, "evidence": None, "reason": "read it"})


def test_a_model_judge_through_the_fake_server(litellm_module):
    with FakeOpenAIServer(responder=_model) as srv:
        found = find_mast_modes(traces(), "openai/fake-judge", progress=False, cache=False,
                                max_retries=0,
                                backend_params={"api_base": srv.base_url, "api_key": "sk-test"})
        asked = [r.messages[-1]["content"] for r in srv.requests]
    assert len(asked) == 14 * 2  # each mode asked of each conversation
    assert all(MAST_SOURCE in a for a in asked)  # the definition and its source reach the model
    assert found.present("loop") == {mast_mode("1.3").name}
    assert found.present("clean") == frozenset()
    # a reply outside yes/no is a failed call: unjudged, not "no"
    assert found.unjudged("loop") == found.unjudged("clean") == {mast_mode("2.4").name}
