"""The per-fact ledger: each key fact of a conversation followed hop by hop."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FACT_LEDGER_COLUMNS", "fact_ledger"]

#: The columns of :func:`fact_ledger`, in order.
FACT_LEDGER_COLUMNS = ("conversation_id", "fact_key", "fact", "fact_source", "first_handoff",
                       "hops", "path", "retained", "lost", "contradicted", "judge_errors",
                       "first_lost_handoff", "reacquired", "final")

_MARK = {"retained": "R", "lost": "L", "contradicted": "C"}


def fact_ledger(ledger: pd.DataFrame) -> pd.DataFrame:
    """One row per key fact of a conversation, from the per-item ledger (one row per fact per
    handoff).

    A fact is stated once and judged at its first handoff and at every later one. Columns:
    ``conversation_id``, ``fact_key`` (the fact's id where first stated), ``fact``,
    ``fact_source``, ``first_handoff`` (the handoff index of its first hop), ``hops`` (handoffs
    it was judged at), ``path`` (its verdicts hop by hop in conversation order: ``R`` retained,
    ``L`` lost, ``C`` contradicted, ``?`` a judge error — ``"RLR"``), the counts ``retained``,
    ``lost``, ``contradicted`` and ``judge_errors``, ``first_lost_handoff`` (the handoff index
    of the first hop where it was lost or contradicted; missing when never), ``reacquired``
    (True when a later hop retained it again after it was lost; missing when it was never
    lost) and ``final`` (the verdict at its last judged hop; None when none was judged).

    Examples
    --------
    >>> import pandas as pd
    >>> led = pd.DataFrame({"conversation_id": ["c"] * 3, "handoff_index": [0, 1, 2],
    ...     "hop": [0, 1, 2], "fact_key": ["f1"] * 3, "fact": ["Ref BK-1"] * 3,
    ...     "fact_source": ["expectations"] * 3, "label": ["retained", "lost", "retained"]})
    >>> row = fact_ledger(led).iloc[0]
    >>> row["path"], int(row["first_lost_handoff"]), bool(row["reacquired"]), row["final"]
    ('RLR', 1, True, 'retained')
    """
    import pandas as pd

    if ledger is None or not len(ledger):
        return pd.DataFrame(columns=list(FACT_LEDGER_COLUMNS))
    led = ledger
    if "fact_key" not in led.columns:  # a ledger of an earlier version: one fact per item
        led = led.assign(fact_key=led["fact_id"])
    if "hop" not in led.columns:
        led = led.assign(hop=led["handoff_index"])
    rows: list[tuple[Any, ...]] = []
    order = led.sort_values(["hop"], kind="stable")
    for (cid, key), g in order.groupby(["conversation_id", "fact_key"], sort=False):
        labels = [lab if isinstance(lab, str) else None for lab in g["label"]]
        hops = list(g["handoff_index"])
        path = "".join(_MARK.get(lab, "?") if lab else "?" for lab in labels)
        first_lost = next((h for h, lab in zip(hops, labels)
                           if lab in ("lost", "contradicted")), None)
        reacquired: Any = None
        if first_lost is not None:
            at = hops.index(first_lost)
            reacquired = any(lab == "retained" for lab in labels[at + 1:])
        judged = [lab for lab in labels if lab]
        source = g["fact_source"].iloc[0] if "fact_source" in g.columns else None
        rows.append((cid, key, g["fact"].iloc[0], source, int(hops[0]), len(hops), path,
                     labels.count("retained"), labels.count("lost"),
                     labels.count("contradicted"), labels.count(None), first_lost, reacquired,
                     judged[-1] if judged else None, int(g["hop"].iloc[0])))
    frame = pd.DataFrame(rows, columns=[*FACT_LEDGER_COLUMNS, "_hop"])
    frame["first_lost_handoff"] = frame["first_lost_handoff"].astype("Int64")
    frame["reacquired"] = frame["reacquired"].astype("boolean")
    # conversations in the ledger's order, facts by first hop
    conv = {c: i for i, c in enumerate(dict.fromkeys(ledger["conversation_id"]))}
    frame["_conv"] = frame["conversation_id"].map(conv)
    frame = frame.sort_values(["_conv", "_hop"], kind="stable")
    return frame.drop(columns=["_conv", "_hop"]).reset_index(drop=True)
