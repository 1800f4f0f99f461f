"""A deterministic scripted judge model for the prompt/example tests, and a small labeled set.

The model's answer depends only on the prompt: every fact is "retained" when the system prompt
holds the word ``MARKER-RETAIN`` or the user message holds a worked-examples block, else
"lost". So a test can see, from the verdicts alone, which prompt and whether examples reached
the model. It checks mechanics, not the quality of any prompt.

The module-scoped fixtures ``server`` (the scripted model over HTTP), ``set_dir`` (a small set)
and ``labeled`` (that set, loaded) are used by importing them into a test module.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maev_kit.backends import LiteLLMBackend
from maev_kit.datasets import load_labeled_set
from maev_kit.judges._prompts import extract_prompt_data
from maev_kit.testing import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "labeled_sets" / "support_desk"
MARKER = "MARKER-RETAIN"


def scripted(body: dict) -> str:
    system = next(m["content"] for m in body["messages"] if m["role"] == "system")
    user = body["messages"][-1]["content"]
    label = "retained" if MARKER in system or "<<<EXAMPLES" in user else "lost"
    data = extract_prompt_data(body["messages"])
    return json.dumps({fid: {"status": label, "reason": "scripted"} for fid, _ in data.facts})


def small_set(out: Path, n: int = 4) -> Path:
    """``n`` dev and ``n`` test conversations of support_desk, with expectations and labels."""
    out.mkdir(parents=True)
    manifest = json.loads((BUNDLED / "manifest.json").read_text())
    splits = {s: ids[:n] for s, ids in manifest["splits"].items()}
    keep = {cid for ids in splits.values() for cid in ids}
    manifest.update(name="small_desk", splits=splits)
    manifest.pop("counts", None)
    (out / "manifest.json").write_text(json.dumps(manifest))
    for name in ("traces.jsonl", "expectations.jsonl", "labels.jsonl"):
        key = "item_id" if name == "labels.jsonl" else "conversation_id"
        lines = [ln for ln in (BUNDLED / name).read_text().splitlines()
                 if json.loads(ln)[key].split("/")[0] in keep]
        (out / name).write_text("\n".join(lines) + "\n")
    return out


def marked_template(tmp_path: Path, name: str = "mine") -> Path:
    """The v1 template with the marker word in its system section, as a file."""
    from maev_kit.judges import PromptTemplate

    text = PromptTemplate.builtin("v1").text.replace(
        "You evaluate", f"{MARKER}. You evaluate", 1)
    path = tmp_path / f"{name}.txt"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def server():
    """The scripted model behind a local OpenAI-compatible server."""
    with FakeOpenAIServer(responder=scripted) as s:
        yield s


@pytest.fixture(scope="module")
def set_dir(tmp_path_factory):
    """A :func:`small_set` folder."""
    return small_set(tmp_path_factory.mktemp("set") / "small")


@pytest.fixture(scope="module")
def labeled(set_dir):
    """The :func:`small_set`, loaded."""
    return load_labeled_set(set_dir)


def scripted_backend(server, **params) -> LiteLLMBackend:
    """The real litellm backend pointed at ``server``."""
    return LiteLLMBackend("openai/scripted", api_base=server.base_url, api_key="sk-local",
                          **params)
