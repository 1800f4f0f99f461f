"""Label stores side by side: labels.jsonl, SQLite and PostgreSQL.

For each backend:

- **ack latency**: one writer adds ``--n`` labels one by one through ``LabelStore.add``; the
  time from the call to its return (the acknowledgement: fsync-ed line, committed transaction)
  is recorded per label, and p50 / p95 / p99 are printed;
- **10k load**: a store holding ``--load`` labels (10,000 by default, written in one
  ``extend``) is read by a fresh ``LabelStore`` (new connection) — ``records()`` and
  ``latest()`` — best of ``--repeat``.

PostgreSQL runs on a throw-away server started from this machine's binaries (initdb + pg_ctl,
as the tests do: ``tests/labels/conftest.py``), or on ``--postgres URL``. Its password never
shows. Run from the repository root::

    python benchmarks/bench_label_store.py               # 2,000 acks, 10,000 loaded
    python benchmarks/bench_label_store.py --n 500 --load 10000 --repeat 5
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from maev_kit.labels import LabelRecord, LabelStore

REPO = Path(__file__).resolve().parent.parent


def _pg_server():
    """A started ``PostgresServer`` from the tests' conftest, or (None, why not)."""
    spec = importlib.util.spec_from_file_location(
        "maev_label_pg_server", REPO / "tests" / "labels" / "conftest.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    bindir, why = mod.find_pg_bin()
    if bindir is None:
        return None, why
    return mod.PostgresServer(bindir).start(), ""


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def ack_latencies(store: LabelStore, n: int) -> list[float]:
    store.add("warm-up", "skip", annotator="bench")  # connect, create the schema
    out = []
    for i in range(n):
        t = time.perf_counter()
        store.add(f"c{i // 10}/h0/f{i % 10}", ("retained", "lost", "contradicted")[i % 3],
                  annotator=f"annotator-{i % 4}", note="checked the billing agent's reply")
        out.append((time.perf_counter() - t) * 1000)
    return out


def load_times(url: str, n: int, repeat: int) -> tuple[float, float, float]:
    """(seconds to write n labels in one extend, best read of records(), best latest())."""
    recs = [LabelRecord(item_id=f"c{i // 10}/h{i % 3}/f{i % 10}", annotator=f"a{i % 5}",
                        label=("retained", "lost", "contradicted", "skip")[i % 4],
                        note="n" * (i % 30), created_at="2026-12-05T10:00:00.000Z")
            for i in range(n)]
    t = time.perf_counter()
    LabelStore(url).extend(recs)
    write = time.perf_counter() - t
    reads, latests = [], []
    for _ in range(repeat):
        store = LabelStore(url)
        t = time.perf_counter()
        got = store.records()
        reads.append(time.perf_counter() - t)
        assert len(got) == n
        t = time.perf_counter()
        store.latest()
        latests.append(time.perf_counter() - t)
        store.close()
    return write, min(reads), min(latests)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="labels added one by one (ack latency)")
    ap.add_argument("--load", type=int, default=10_000, help="labels in the store that is read")
    ap.add_argument("--repeat", type=int, default=3, help="reads of that store (best kept)")
    ap.add_argument("--postgres", help="a postgresql:// URL of an empty database to use")
    args = ap.parse_args(argv)

    folder = Path(tempfile.mkdtemp(prefix="maev-bench-labels-"))
    server, why = (None, "")
    pg = args.postgres
    if pg is None:
        server, why = _pg_server()
        pg = server.create_database("bench") if server is not None else None
    targets = {"jsonl": (str(folder / "a.jsonl"), str(folder / "b.jsonl")),
               "sqlite": (f"sqlite:///{folder}/a.db", f"sqlite:///{folder}/b.db")}
    if pg is not None:
        targets["postgresql"] = (pg, pg if args.postgres else server.create_database("bench_load"))
    rows = []
    try:
        for kind, (ack_url, load_url) in targets.items():
            store = LabelStore(ack_url)
            lat = ack_latencies(store, args.n)
            store.close()
            if kind == "postgresql" and args.postgres:  # one database: read what is there
                load_url = ack_url
            write, read, latest = load_times(load_url, args.load, args.repeat)
            rows.append((kind, store.location, lat, write, read, latest))
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, load average "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; {args.n} acks, {args.load:,} loaded")
    if pg is None:
        print(f"postgresql: skipped ({why})")
    print(f"{'backend':<11} {'ack p50 ms':>10} {'p95 ms':>8} {'p99 ms':>8} {'mean ms':>8} "
          f"{'write s':>11} {'records() s':>11} {'latest() s':>10}  (latest() reads again)")
    for kind, _, lat, write, read, latest in rows:
        print(f"{kind:<11} {statistics.median(lat):>10.3f} {_pct(lat, 0.95):>8.3f} "
              f"{_pct(lat, 0.99):>8.3f} {statistics.fmean(lat):>8.3f} {write:>11.3f} "
              f"{read:>11.3f} {latest:>10.3f}")
    for kind, location, *_ in rows:
        print(f"  {kind}: {location}")


if __name__ == "__main__":
    sys.exit(main())
