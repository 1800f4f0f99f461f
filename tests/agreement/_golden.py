"""Golden vectors of tests/data/golden/agreement.md, built from their confusion matrices."""

from __future__ import annotations

LAB = ("retained", "lost", "contradicted")
CODE = {"R": "retained", "L": "lost", "C": "contradicted", "-": None, "?": "unsure"}


def s(text: str) -> list:
    """``"RRL-C"`` → labels (``-`` = missing, ``?`` = 'unsure')."""
    return [CODE[ch] for ch in text.replace(" ", "")]


def expand(matrix: list[list[int]], labels=LAB) -> tuple[list[str], list[str]]:
    """Row-major expansion of a confusion matrix (rows human, columns judge)."""
    human, judge = [], []
    for i, row in enumerate(matrix):
        for j, n in enumerate(row):
            human += [labels[i]] * n
            judge += [labels[j]] * n
    return human, judge


V1 = expand([[8, 1, 1], [1, 5, 1], [0, 1, 2]])
V2 = expand([[100, 10, 4], [8, 40, 6], [2, 5, 25]])

_M1 = {
    "a1": [0, 0, 1, 2, 0, 1, 2, 0, 1, -1],
    "a2": [0, 0, 1, 2, 1, 1, 2, 0, -1, 2],
    "a3": [0, 1, 1, 2, 0, 1, 1, 0, 1, 2],
}
M1 = {k: [LAB[c] if c >= 0 else None for c in v] for k, v in _M1.items()}
M1_JUDGE = [LAB[c] for c in [0, 0, 1, 2, 0, 2, 2, 0, 1, 1]]

P1_HUMAN = s("RRRRRRRRRRRRRRRRRRRRLLLLLLLLLLLLCCCCCCCC")
P1_A = s("RRRRRRRRRRRRRRRRRRLRLLLLLLLLLLRLCCCCCCLC")
P1_B = s("RRRRRRRRRRRRRRRLLRLCLLLLLLLRRLCCCCCLLCRC")
