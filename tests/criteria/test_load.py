"""Criteria from TOML files and by name."""

from pathlib import Path

import pytest

from maev_kit.criteria import Criterion, builtin, builtins, load, register, resolve
from maev_kit.errors import InputError

GOOD = (Path(__file__).parent / "data" / "two_criteria.toml").read_text(encoding="utf-8")


def test_load_reads_every_table_in_order(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text(GOOD)
    a, b = load(p)
    assert a == Criterion("escalation", scope="conversation", labels=("yes", "no"),
                          positive="yes", question="Did the agents follow the escalation policy?",
                          guidelines="Refunds above 500 EUR go to a human.")
    assert (b.name, b.labels, b.ordinal, b.positive) == ("quality", ("good", "ok", "bad"), True,
                                                         None)


def test_single_table_form(tmp_path):
    p = tmp_path / "one.toml"
    p.write_text('[criterion]\nname = "x"\nscope = "agent"\nlabels = ["a", "b"]\nquestion = "?"\n')
    assert [c.name for c in load(p)] == ["x"]


def test_an_agent_criterion_with_no_labels_asks_which_agent(tmp_path):
    p = tmp_path / "who.toml"
    p.write_text('[[criterion]]\nname = "broke-policy"\nscope = "agent"\nlabels = []\n'
                 'question = "Which agent broke the policy first?"\n')
    (c,) = load(p)
    assert c.names_agents and c.labels == () and c.scope == "agent"
    assert "failure-attribution" in builtins()


@pytest.mark.parametrize("text, message", [
    ('[[criterion]\nname = "x"', "not valid TOML"),
    ('title = "x"', "no \\[\\[criterion\\]\\] table"),
    ('[[criterion]]\nname = "x"\nscope = "turn"\nquestion = "?"', r"criterion\[0\] › labels: field required"),
    ('[[criterion]]\nname = "x"\nscope = "turn"\nlabels = "yes"\nquestion = "?"', r"labels: must be a list"),
    ('[[criterion]]\nname = "x"\nscope = "turn"\nlabels = ["a", "b"]\nquestion = "?"\nlabel = 1', r"label: unknown field"),
    ('[[criterion]]\nname = "x"\nscope = "when"\nlabels = ["a", "b"]\nquestion = "?"', r"criterion\[0\]: criterion 'x': scope must be one of"),
    ('[[criterion]]\nname = "x"\nscope = "turn"\nlabels = ["a", 2]\nquestion = "?"', "non-empty strings"),
    ('[[criterion]]\nname = "x"\nscope = "turn"\nlabels = []\nquestion = "?"', r"criterion\[0\]: .*agent scope only"),
    (GOOD + GOOD, "appear more than once"),
])
def test_bad_files_name_the_file_and_field(tmp_path, text, message):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(InputError, match=message) as e:
        load(p)
    assert "bad.toml" in str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such criteria file"):
        load(tmp_path / "nope.toml")


def test_builtins_and_resolve(tmp_path):
    assert "final-answer-grounded" in builtins()
    assert resolve("final-answer-grounded") == [builtin("final-answer-grounded")]
    with pytest.raises(InputError, match="no built-in criterion named 'nope'"):
        builtin("nope")
    p = tmp_path / "c.toml"
    p.write_text(GOOD)
    assert [c.name for c in resolve(str(p))] == ["escalation", "quality"]
    c = Criterion("mine-test-only", scope="turn", labels=("a", "b"), question="?")
    assert register(c) is c and builtin("mine-test-only") is c
    with pytest.raises(InputError, match="exists already"):
        register(Criterion("mine-test-only", scope="turn", labels=("a", "c"), question="?"))
