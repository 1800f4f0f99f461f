"""How well the offline fact proposer finds the values a person would list: precision and
recall per source.

Run from the repository root::

    python benchmarks/bench_fact_recall.py                          # support_desk + samples
    python benchmarks/bench_fact_recall.py --samples DIR --misses   # + what was missed / extra

Two sources:

- ``support_desk`` (the bundled labeled set), its key facts hidden from the proposer. The
  reference values of a conversation are the *value runs* of its key facts' texts (see
  ``bench_facts.value_runs``: maximal runs of words holding a digit, an ``@`` or a capital
  letter, the first word excepted — ``"Account number: ACCT-5949."`` → ``ACCT-5949``,
  ``"…booked for Tuesday at 10:00 am."`` → ``Tuesday`` and ``10:00``). Key facts with no run
  ("has already restarted the router") have no value and are left out.
- the sample framework exports (``--samples DIR``; every ``*.json`` under it but
  ``third_party/``), imported with ``maev_kit.traces.importers.import_traces``. They all tell
  one support story; its reference values are in ``benchmarks/data/fact_reference.json``,
  written by the maev-kit authors. A file's reference is the story values that occur in that
  file's trace at or before its last handoff — in a message, a tool call's arguments or its
  output — (some exports carry no message text, or lose a tool call).

Matching rule (both sources). Values are normalised (Unicode NFKC, case-folded, every
character but letters, digits, ``@ . + -`` made a space, runs of space collapsed, dots and
hyphens at either end dropped: ``"$49.00"`` → ``"49.00"``). A reference value and a proposed
value *match* when one, normalised, occurs in the other as whole words (not inside a longer
token: ``4471`` does not match ``ACCT-4471-9920``). A story value may list aliases
(``"March"`` / ``"2025-03"``); any alias matching counts.

Counts are per conversation and distinct: a value proposed at three handoffs counts once, so
the numbers do not depend on how facts are mapped to handoffs. **Recall** = reference values
matched by some value proposed for that conversation / reference values. **Precision** =
distinct proposed values that match a reference value of their conversation / distinct proposed
values. support_desk's key facts do not list every value said (an account number not chosen as
a key fact, the customer's name), so its precision is a lower bound; the story list is meant to
be complete, so the samples' precision is not.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
import warnings
from collections import defaultdict
from pathlib import Path

import maev_kit
from maev_kit.facts import propose_facts

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_facts import value_runs  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO / "benchmarks" / "data" / "fact_reference.json"


def norm(value: str) -> str:
    """The normalised form values are compared in.

    >>> norm("$49.00"), norm("ACCT-4471-9920."), norm("3-5 business days")
    ('49.00', 'acct-4471-9920', '3-5 business days')
    """
    text = unicodedata.normalize("NFKC", value).casefold()
    text = re.sub(r"\s+", " ", re.sub(r"[^\w@.+\- ]|_", " ", text)).strip()
    return text.strip(" .-")


def _within(small: str, big: str) -> bool:
    if not small:
        return False
    return re.search(rf"(?<![\w@.+-]){re.escape(small)}(?![\w@+-]|\.\w)", big) is not None


def match(a: str, b: str) -> bool:
    """Whether two values match: one inside the other as whole words (see the docstring).

    >>> match("$49.00", "49.00"), match("Tuesday", "Tuesday at 10:00 am")
    (True, True)
    >>> match("4471", "ACCT-4471-9920"), match("March", "2025-03")
    (False, False)
    """
    na, nb = norm(a), norm(b)
    return _within(na, nb) or _within(nb, na)


def score(reference: dict[str, list[list[str]]], proposed: dict[str, list[str]]) -> dict:
    """``reference``: conversation → reference values (each a list of aliases);
    ``proposed``: conversation → proposed values. Distinct per conversation."""
    n_ref = found = n_prop = right = 0
    misses: list[tuple[str, str]] = []
    extra: list[tuple[str, str]] = []
    for cid in sorted(set(reference) | set(proposed)):
        refs = reference.get(cid, [])
        props = list(dict.fromkeys(norm(v) for v in proposed.get(cid, []) if norm(v)))
        for aliases in refs:
            n_ref += 1
            if any(match(a, p) for a in aliases for p in props):
                found += 1
            else:
                misses.append((cid, aliases[0]))
        for p in props:
            n_prop += 1
            if any(match(a, p) for aliases in refs for a in aliases):
                right += 1
            else:
                extra.append((cid, p))
    return {"reference": n_ref, "found": found, "proposed": n_prop, "right": right,
            "misses": misses, "extra": extra}


def _proposed(traces) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for f in propose_facts(traces):
        if f.value:
            out[f.conversation_id].append(f.value)
    return out


def support_desk() -> dict:
    labeled = maev_kit.load_labeled_set("support_desk")
    reference: dict[str, list[list[str]]] = {}
    for t in labeled.traces:
        exp = labeled.expectations.get(t.conversation_id)
        runs = [r for kf in (exp.key_facts if exp else []) for r in value_runs(kf.text)]
        unique = list(dict.fromkeys(norm(r) for r in runs))
        reference[t.conversation_id] = [[r] for r in unique]
    return score(reference, _proposed(labeled.traces))


def _trace_text(trace) -> str:
    """Everything said or returned at or before the last handoff: messages, tool arguments,
    tool outputs (JSON-dumped)."""
    from maev_kit.traces import AgentTurn, UserMessage

    last = max((h.turn_index for h in trace.handoffs), default=-1)
    parts = []
    for e in trace.timeline():
        if e.turn_index > last:
            break
        if isinstance(e, UserMessage):
            parts.append(e.content)
        elif isinstance(e, AgentTurn):
            parts.append(e.message)
            for call in e.tool_calls or []:
                for key in ("arguments", "output"):
                    v = call.get(key) if isinstance(call, dict) else None
                    if v is not None:
                        parts.append(v if isinstance(v, str) else json.dumps(v, default=str))
    return "\n".join(parts)


def _in_text(alias: str, text: str) -> bool:
    return _within(norm(alias), norm(text))


def samples(folder: Path, story: dict) -> list[tuple[str, dict]]:
    from maev_kit.traces.importers import import_traces

    rows = []
    values = story["values"]
    for path in sorted(folder.rglob("*.json")):
        rel = path.relative_to(folder)
        if rel.parts[0] == "third_party":
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traces, _ = import_traces(path)
        reference, proposed = {}, {}
        for t in traces:
            key = f"{rel}:{t.conversation_id}"
            text = _trace_text(t)
            reference[key] = [v["aliases"] for v in values
                              if any(_in_text(a, text) for a in v["aliases"])]
            proposed[key] = _proposed([t]).get(t.conversation_id, [])
        rows.append((str(rel), score(reference, proposed)))
    return rows


def _fmt(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def _row(name: str, s: dict) -> str:
    return (f"| {name} | {s['reference']} | {s['found']} | {_fmt(s['found'], s['reference'])} "
            f"| {s['proposed']} | {s['right']} | {_fmt(s['right'], s['proposed'])} |")


def _total(scores: list[dict]) -> dict:
    out = {k: sum(s[k] for s in scores) for k in ("reference", "found", "proposed", "right")}
    out["misses"] = [m for s in scores for m in s["misses"]]
    out["extra"] = [m for s in scores for m in s["extra"]]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", default=str(REPO / "tests" / "data" / "trace_samples"),
                    help="folder of sample exports (default tests/data/trace_samples)")
    ap.add_argument("--reference", default=str(REFERENCE))
    ap.add_argument("--per-file", action="store_true", help="one row per sample file")
    ap.add_argument("--misses", action="store_true",
                    help="list reference values missed and proposed values not in a reference")
    args = ap.parse_args()

    head = ["| source | reference values | found | recall | proposed values | match a "
            "reference value | precision |", "|---|---:|---:|---:|---:|---:|---:|"]
    lines = list(head)
    sd = support_desk()
    lines.append(_row("support_desk (85 conversations, key facts)", sd))
    folder = Path(args.samples)
    story = json.loads(Path(args.reference).read_text(encoding="utf-8"))
    rows = samples(folder, story["stories"][0]) if folder.is_dir() else []
    if rows:
        total = _total([s for _, s in rows])
        lines.append(_row(f"sample exports ({len(rows)} files)", total))
    else:
        print(f"(no sample folder at {folder}: samples skipped)")
    print("\n".join(lines))
    if args.per_file and rows:
        print()
        print("\n".join([*head] + [_row(f"`{name}`", s) for name, s in rows]))
    if args.misses:
        for name, s in [("support_desk", sd), *(
                [("samples", _total([s for _, s in rows]))] if rows else [])]:
            print(f"\n{name}: missed {len(s['misses'])}")
            for cid, v in s["misses"]:
                print(f"  missed  {cid}: {v}")
            print(f"{name}: proposed, in no reference: {len(s['extra'])}")
            for cid, v in s["extra"]:
                print(f"  extra   {cid}: {v}")


if __name__ == "__main__":
    main()
