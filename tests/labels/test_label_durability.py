"""Kill a labeling process at random moments: every acknowledged label survives."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
import warnings

from maev_kit.labels import LabelStore, read_label_file

LABELER = """
import sys
from maev_kit.labels import LabelStore
store = LabelStore(sys.argv[1])
run = sys.argv[2]
print("ready", flush=True)
i = 0
while True:
    rec = store.add(f"{run}/item-{i}", "retained", annotator="ana", note="x" * (i % 300))
    sys.stdout.write(f"ack {rec.item_id}\\n")
    sys.stdout.flush()
    i += 1
"""


def test_sigkill_at_random_moments_loses_no_acknowledged_label(tmp_path):
    path = tmp_path / "labels.jsonl"
    rng = random.Random(5)
    acked: list[str] = []
    for run in range(20):
        p = subprocess.Popen([sys.executable, "-c", LABELER, str(path), f"r{run}"],
                             stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline() == "ready\n"
        time.sleep(rng.uniform(0.0, 0.15))
        p.send_signal(signal.SIGKILL)
        out, _ = p.communicate(timeout=30)
        assert p.returncode == -signal.SIGKILL
        acked += [line[4:] for line in out.splitlines() if line.startswith("ack ")]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a torn last line is allowed (and reported)
            on_disk = {r.item_id for r in LabelStore(path).records()}
        missing = [a for a in acked if a not in on_disk]
        assert not missing, f"run {run}: acknowledged labels lost: {missing[:5]}"
    assert len(acked) > 20  # the loop really labeled (not killed before the first label)
    lf = read_label_file(path)
    assert lf.problems == []
