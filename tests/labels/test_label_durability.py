"""Kill a labeling process at random moments: every acknowledged label survives.

Each round forks a child that labels in a loop through :class:`LabelStore` and reports every
label *after* ``add`` returned (the acknowledgement) on a pipe; the parent SIGKILLs it at a
random moment, then checks that every acknowledged label is on disk and the file loads. The
20 rounds share one file, so later rounds also append after whatever an earlier kill left.
"""

from __future__ import annotations

import os
import random
import signal
import time
import warnings

import pytest

from maev_kit.labels import LabelStore, read_label_file

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")


def _label_forever(path, run: int, wfd: int) -> None:
    """The child: label in a loop, acknowledge each label on the pipe after it returned."""
    try:
        store = LabelStore(path)
        os.write(wfd, b"ready\n")
        i = 0
        while True:
            rec = store.add(f"r{run}/item-{i}", ("retained", "lost", "contradicted")[i % 3],
                            annotator="ana", note="x" * (i % 300))
            os.write(wfd, f"ack {rec.item_id}\n".encode())
            i += 1
    finally:
        os._exit(1)  # never return into pytest


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_sigkill_at_random_moments_loses_no_acknowledged_label(tmp_path):
    path = tmp_path / "labels.jsonl"
    rng = random.Random(5)
    acked: list[str] = []
    for run in range(20):
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os.close(rfd)
            _label_forever(path, run, wfd)
        os.close(wfd)
        try:
            assert os.read(rfd, 6) == b"ready\n"
            time.sleep(rng.uniform(0.0, 0.1))
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            out = _read_all(rfd)
        finally:
            os.close(rfd)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        acked += [line[4:].decode() for line in out.split(b"\n")[:-1]  # complete lines only
                  if line.startswith(b"ack ")]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a torn last line is allowed (and reported)
            on_disk = {r.item_id for r in LabelStore(path).records()}
        missing = [a for a in acked if a not in on_disk]
        assert not missing, f"round {run}: acknowledged labels lost: {missing[:5]}"
    assert len(acked) > 20  # the loop really labeled (not killed before the first label)
    lf = read_label_file(path)
    assert lf.problems == []
    assert len({(r.item_id) for r in lf.records}) == len(lf.records)  # no line written twice
