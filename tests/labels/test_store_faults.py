"""8 annotator processes write to one PostgreSQL store while they are SIGKILLed at random and
the server is restarted once: no acknowledged label is lost, none is stored twice.

Each writer appends labels with unique ids (``label_id`` = ``w<writer>-n<incarnation>-i<k>``,
one item per label), writes its *intent* (id and record) to its own log before each append and
the id to its own *ack* log after the append returned — both fsync-ed. A restarted writer first
sends its last unacknowledged intent again with the same id (it may or may not have reached the
server before the kill). The parent kills a random writer every 0.3-1.2 s and restarts it,
restarts the server once (``pg_ctl restart -m fast``) mid-run, then lets every writer finish and
read the store. Then: every acknowledged id is in the store exactly once, no item twice, each
writer's labels in its order, and every writer's final view equals the store.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from maev_kit.labels import LabelStore

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")]

WRITERS = 8
CHAOS_SECONDS = 16.0
SERVER_RESTART_AT = 7.0

WRITER = r'''
import json, os, sys, time
from pathlib import Path
from maev_kit.labels import LabelRecord, LabelStore, LabelStoreError

url, w, n, folder = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
acks_path, intents_path, stop = folder / f"acks-{w}.log", folder / f"intents-{w}.log", folder / "stop"

def complete_lines(path):
    data = path.read_bytes() if path.exists() else b""
    cut = data.rfind(b"\n") + 1
    if cut != len(data):  # a line torn by a kill: cut it before appending
        with open(path, "r+b") as f:
            f.truncate(cut)
    return data[:cut].decode().splitlines()

def log(fd, line):
    os.write(fd, (line + "\n").encode())
    os.fsync(fd)

acked = set(complete_lines(acks_path))
intents = complete_lines(intents_path)
acks = os.open(acks_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
intent_fd = os.open(intents_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
events = os.open(folder / f"events-{w}.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
store = LabelStore(url, retry_for=30)

def send(label_id, rec):
    while True:
        try:
            return store.database.append([rec], [label_id])  # 0: it was already stored
        except LabelStoreError as exc:  # e.g. the first connection while the server restarts
            if exc.cause != "unreachable":
                raise
            log(events, "retry")
            time.sleep(0.1)

if intents:  # the previous incarnation's last label may or may not be stored: send it again
    label_id, data = intents[-1].split("\t", 1)
    if label_id not in acked:
        inserted = send(label_id, LabelRecord.model_validate_json(data))
        log(acks, label_id)
        log(events, "resend-" + ("inserted" if inserted else "already-stored"))
i = 0
while not stop.exists():
    label_id = f"w{w}-n{n}-i{i}"
    rec = LabelRecord(item_id=f"item-{label_id}", annotator=f"annotator-{w}",
                      label=("retained", "lost", "contradicted")[i % 3], note="x" * (i % 40),
                      created_at=f"{time.time():.6f}")
    log(intent_fd, label_id + "\t" + rec.model_dump_json())
    send(label_id, rec)
    log(acks, label_id)
    i += 1
(folder / f"done-{w}").touch()  # wait until every writer has stopped writing, then read
deadline = time.monotonic() + 60
while len(list(folder.glob("done-*"))) < int(sys.argv[5]) and time.monotonic() < deadline:
    time.sleep(0.02)
ids = [label_id for label_id, _ in store.database.entries()]
view = {"n": len(ids), "sha256": __import__("hashlib").sha256("\n".join(ids).encode()).hexdigest(),
        "records": len(store.records())}
(folder / f"view-{w}.json").write_text(json.dumps(view))
'''


def _start(url: str, w: int, n: int, folder: Path) -> subprocess.Popen:
    out = open(folder / f"out-{w}-{n}.txt", "wb")  # noqa: SIM115 - closed with the process
    try:
        return subprocess.Popen([sys.executable, "-c", WRITER, url, str(w), str(n), str(folder),
                                 str(WRITERS)],
                                stdout=out, stderr=subprocess.STDOUT)
    finally:
        out.close()


def _lines(path: Path) -> list[str]:
    data = path.read_bytes() if path.exists() else b""
    return data[:data.rfind(b"\n") + 1].decode().splitlines()


def _chaos(url: str, folder: Path, rng: random.Random, pg_server) -> dict:
    procs = {w: _start(url, w, 0, folder) for w in range(WRITERS)}
    incarnation = dict.fromkeys(procs, 0)
    kills, restarted_server = 0, False
    start = time.monotonic()
    while time.monotonic() - start < CHAOS_SECONDS:
        time.sleep(rng.uniform(0.3, 1.2))
        if not restarted_server and time.monotonic() - start >= SERVER_RESTART_AT:
            pg_server.restart()
            restarted_server = True
        w = rng.randrange(WRITERS)
        p = procs[w]
        if p.poll() is not None:
            raise AssertionError(f"writer {w} died on its own: "
                                 f"{(folder / f'out-{w}-{incarnation[w]}.txt').read_text()}")
        p.send_signal(signal.SIGKILL)
        p.wait()
        kills += 1
        incarnation[w] += 1
        procs[w] = _start(url, w, incarnation[w], folder)
    assert restarted_server
    (folder / "stop").touch()
    for w, p in procs.items():
        code = p.wait(timeout=60)
        assert code == 0, (folder / f"out-{w}-{incarnation[w]}.txt").read_text()
    return {"kills": kills, "incarnations": sum(incarnation.values()) + WRITERS}


def test_killed_writers_and_a_server_restart_lose_and_duplicate_nothing(pg_server, pg_url,
                                                                        tmp_path):
    t0 = time.monotonic()
    LabelStore(pg_url).database.create()  # the schema, before the writers race for it
    stats = _chaos(pg_url, tmp_path, random.Random(28), pg_server)

    entries = LabelStore(pg_url).database.entries()
    ids = [label_id for label_id, _ in entries]
    id_counts = Counter(ids)
    item_counts = Counter(rec.item_id for _, rec in entries)
    acked = [a for w in range(WRITERS) for a in _lines(tmp_path / f"acks-{w}.log")]
    acked_set = set(acked)
    assert len(acked_set) == len(acked)  # each label acknowledged once
    lost = [a for a in acked_set if id_counts[a] == 0]
    duplicated = [a for a, c in id_counts.items() if c > 1] + \
        [i for i, c in item_counts.items() if c > 1]
    stored_unacked = [i for i in id_counts if i not in acked_set]
    assert not lost, f"acknowledged labels lost: {lost[:5]}"
    assert not duplicated, f"labels stored twice: {duplicated[:5]}"
    assert all(rec.item_id == f"item-{i}" for i, rec in entries)
    assert len(stored_unacked) <= stats["kills"]  # at most the label in flight at each kill

    def order(label_id: str) -> tuple[int, int]:
        _, n, i = label_id.split("-")
        return int(n[1:]), int(i[1:])

    for w in range(WRITERS):  # each writer's labels are stored in the order it wrote them
        mine = [i for i in ids if i.startswith(f"w{w}-")]
        assert mine == sorted(mine, key=order)

    want = {"n": len(ids), "sha256": hashlib.sha256("\n".join(ids).encode()).hexdigest(),
            "records": len(ids)}
    views = [json.loads((tmp_path / f"view-{w}.json").read_text()) for w in range(WRITERS)]
    assert all({k: v[k] for k in want} == want for v in views)

    events = Counter(e for w in range(WRITERS) for e in _lines(tmp_path / f"events-{w}.log"))
    cut = pg_server.server_log().count("terminating connection due to administrator command")
    print(f"\nfault test: {WRITERS} writers, {stats['kills']} SIGKILLs, 1 server restart "
          f"({cut} connections cut), {len(acked)} labels acknowledged, {len(ids)} stored, "
          f"{len(stored_unacked)} stored unacknowledged; 0 lost, 0 duplicated; "
          f"{events['resend-already-stored']} of "
          f"{events['resend-already-stored'] + events['resend-inserted']} in-flight labels "
          f"resent after a kill were already stored (kept once by their label_id); "
          f"{events['retry']} writer-level retries; every final view equals the store; "
          f"{time.monotonic() - t0:.1f} s")
    assert len(acked) > 10 * WRITERS  # the writers really wrote
