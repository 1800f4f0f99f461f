"""run_judge in a real Jupyter kernel, whose event loop is running while cells execute."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_run_judge_in_a_jupyter_kernel(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    cells = [
        "import asyncio\n"
        "from openai import AsyncOpenAI\n"
        "from maev_kit.backends import OpenAIClientBackend\n"
        "from maev_kit.judges import RetentionJudge\n"
        "from maev_kit.retention import RetentionItem\n"
        "from maev_kit.runner import run_judge, arun_judge\n"
        "from maev_kit.testing import FakeOpenAIServer\n"
        "from maev_kit.traces import Message\n"
        "asyncio.get_running_loop()  # the kernel's loop is running\n"
        "server = FakeOpenAIServer().start()\n"
        "backend = OpenAIClientBackend(AsyncOpenAI(base_url=server.base_url, api_key='x'), 'm')\n"
        "after = (Message('billing', 'Refund started for account ACCT-4471.', 3),)\n"
        "items = [RetentionItem(f'c{k}/h0/f1', f'c{k}', 0, 'f1', 'Account number is ACCT-4471',"
        " (), after) for k in range(3)]",
        "first = run_judge(RetentionJudge('v1'), items, backend, cache=False)\n"
        "second = run_judge(RetentionJudge('v1'), items, backend, cache=False)\n"
        "third = await arun_judge(RetentionJudge('v1'), items, backend, cache=False,"
        " progress=False)\n"
        "print([v.label for r in (first, second, third) for v in r.verdicts],"
        " len(server.requests))\n"
        "server.stop()",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = nb.cells[1].outputs
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream"
                   and o.name == "stdout")
    assert text.strip() == str(["retained"] * 9) + " 9"
    assert not [o for o in outputs if o.output_type == "error"]
    # The progress bars were displayed in this cell (widgets in a notebook).
    assert sum(o.output_type == "display_data" for o in outputs) == 2
