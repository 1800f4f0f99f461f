"""A learned offline retention judge: logistic regression on heuristic signals + TF-IDF words."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from maev_kit.errors import InputError, MaevError
from maev_kit.judges._heuristic import (
    HeuristicJudge,
    _analyze,
    _compare,
    _content_stems,
    _unaddressed,
)
from maev_kit.judges._verdict import Verdict
from maev_kit.retention import LABELS, RetentionItem

__all__ = ["LearnedJudge", "NotFittedError", "TrainingOverlapError"]

_REVISION = "3"  # 2: reads the receiving agent's evidence (its text, tool calls and results,
#   the context it hands on), not every agent's text; 3: not how much it said (no length
#   signals: small talk must not move a verdict), nor what it addressed to a judge
#: The heuristic's signals left out: they measure how much the receiver said, not what.
_LENGTH_SIGNALS = ("n_agent_messages", "text_words")


class NotFittedError(MaevError, ValueError):
    """A judge that learns from labels was asked to judge before :meth:`fit`."""


class TrainingOverlapError(InputError):
    """A learned judge was asked to score items it was trained on (its score would be inflated):
    a choice of input (which items, which split), so the CLI exits 2 on it."""


def _agent_text(item: RetentionItem) -> str:
    """What the receiving agent said and did after the handoff: its text, its tool calls and
    their results, the context it handed on (:attr:`RetentionItem.evidence`)."""
    return "\n".join(_unaddressed(m).content for m in item.evidence)


def _fingerprint(item: RetentionItem) -> str:
    """The item's inputs: the fact, the receiver's entries and the user's (the heuristic's
    signals read both), each with its kind — the same item under another id has the same."""
    mine = {id(m) for m in item.evidence}
    seen = "\0".join(f"{m.kind}:{m.content}" for m in item.after
                     if m.is_user or id(m) in mine)
    return hashlib.sha256(f"{item.fact}\0{seen}".encode()).hexdigest()


def _documents(item: RetentionItem) -> tuple[str, str]:
    """(fact words, fact words missing from the receiver's entries) as space-joined stems."""
    fact = _analyze(item.fact)
    text_stems = _analyze(_agent_text(item)).stems
    words = [w.text.lower() for w in fact.words]
    novel = [s for s in _content_stems(fact) if s not in text_stems]
    return " ".join(words), " ".join(novel) or "_none_"


class LearnedJudge:
    """Offline judge learned from labels: ``"tfidf-logreg"``.

    A multinomial logistic regression (scikit-learn) over three feature blocks: the
    :class:`HeuristicJudge`'s numeric ``signals`` and its label (scaled), TF-IDF of the fact's
    words (1–2-grams), and TF-IDF of the fact's content words that the receiving agent's
    entries lack (its text, tool calls and results, the context it hands on:
    :attr:`~maev_kit.retention.RetentionItem.evidence`; other agents' entries do not count).
    Training is deterministic (items are sorted by id before fitting; lbfgs solver).

    Use it on held-out items only: :meth:`judge_items` raises :class:`TrainingOverlapError` for
    any item it was fit on (same item id, or same fact and messages).

    Parameters
    ----------
    C : float
        Inverse regularization strength of the logistic regression (chosen on the SNLI dev
        split; see ``benchmarks/eval_offline_judges.py``).

    Examples
    --------
    >>> from maev_kit.retention import RetentionItem
    >>> from maev_kit.traces import Message
    >>> def item(i, fact, said):
    ...     return RetentionItem(f"c{i}/h0/f1", f"c{i}", 0, "f1", fact, (),
    ...                          (Message("agent", said, 1),))
    >>> train = [item(0, "Order ORD-1 ships Monday", "ORD-1 ships Monday."),
    ...          item(1, "Order ORD-2 ships Friday", "Which order is it?"),
    ...          item(2, "Order ORD-3 ships Monday", "ORD-3 ships Tuesday.")]
    >>> judge = LearnedJudge().fit(train, ["retained", "lost", "contradicted"])
    >>> judge.judge_items([item(9, "Order ORD-9 ships Friday", "ORD-9 ships Friday.")])[0].label
    'retained'
    >>> judge.judge_items(train[:1])
    Traceback (most recent call last):
    ...
    maev_kit.judges._learned.TrainingOverlapError: tfidf-logreg was fit on 1 of these 1 items (e.g. 'c0/h0/f1'): score only held-out items, e.g. the test split of a labeled set after fitting on its dev split
    """

    name = "tfidf-logreg"
    offline = True
    requires_fit = True

    def __init__(self, *, C: float = 1.0) -> None:
        if not C > 0:
            raise ValueError(f"`C` must be a positive number, got {C!r}")
        self.C = C
        self.version = f"{_REVISION}-untrained"
        self._model: Any = None
        self._train_ids: frozenset[str] = frozenset()
        self._train_prints: frozenset[str] = frozenset()
        self._heuristic = HeuristicJudge()

    def __repr__(self) -> str:
        state = f"fitted on {len(self._train_ids)} items" if self.is_fitted else "not fitted"
        return f"LearnedJudge(C={self.C})  # {state}, version {self.version}"

    @property
    def is_fitted(self) -> bool:
        """True after :meth:`fit`."""
        return self._model is not None

    def _features(self, items: Sequence[RetentionItem]
                  ) -> tuple[list[dict[str, float]], list[str], list[str], list[tuple[str, ...]]]:
        signals, facts, novel, evidence = [], [], [], []
        for it in items:
            c = _compare(it)
            evidence.append(tuple(c.evidence))
            s = {k: v for k, v in c.signals.items() if k not in _LENGTH_SIGNALS}
            s[f"heuristic={c.label}"] = 1.0
            signals.append(s)
            f, n = _documents(it)
            facts.append(f)
            novel.append(n)
        return signals, facts, novel, evidence

    def fit(self, items: Sequence[RetentionItem],
            labels: Sequence[str] | Mapping[str, str]) -> LearnedJudge:
        """Fit on labeled items (a training split); returns ``self``.

        ``labels`` is one label per item (same order) or a mapping ``{item_id: label}`` that
        covers every item. Labels must be ``retained``, ``lost`` or ``contradicted`` (drop
        ``skip`` and unlabeled items first).
        """
        from scipy import sparse
        from sklearn.feature_extraction import DictVectorizer
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.preprocessing import MaxAbsScaler

        items = list(items)
        if isinstance(labels, Mapping):
            missing = [it.item_id for it in items if it.item_id not in labels]
            if missing:
                raise ValueError(f"`labels` has no label for {len(missing)} item(s), e.g. "
                                 f"{missing[0]!r}; label every item or leave it out of `items`")
            ys = [labels[it.item_id] for it in items]
        else:
            ys = list(labels)
            if len(ys) != len(items):
                raise ValueError(f"`labels` has {len(ys)} labels for {len(items)} items; give "
                                 "one label per item, in item order")
        bad = sorted({y for y in ys if y not in LABELS}, key=str)
        if bad:
            raise ValueError(f"`labels` holds {bad!r}; each label must be one of {LABELS} "
                             "(drop 'skip' and unlabeled items before fitting)")
        ids = [it.item_id for it in items]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ValueError(f"`items` repeats item id {dup!r}; give each item once")
        if len(set(ys)) < 2:
            raise ValueError(f"`labels` must hold at least two different labels to fit, got "
                             f"only {sorted(set(ys))}")
        order = sorted(range(len(items)), key=lambda i: ids[i])
        items = [items[i] for i in order]
        ys = [ys[i] for i in order]
        signals, facts, novel, _ = self._features(items)
        dv = DictVectorizer(sort=True)
        scaler = MaxAbsScaler()
        tf_fact = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True,
                                  token_pattern=r"(?u)\b\w[\w'-]*\b")
        tf_novel = TfidfVectorizer(min_df=2, sublinear_tf=True, token_pattern=r"\S+")
        X = sparse.hstack([scaler.fit_transform(dv.fit_transform(signals)),
                           _safe_fit(tf_fact, facts), _safe_fit(tf_novel, novel)]).tocsr()
        clf = LogisticRegression(C=self.C, max_iter=5000, random_state=0)
        clf.fit(X, ys)
        self._model = (dv, scaler, tf_fact, tf_novel, clf)
        self._train_ids = frozenset(ids)
        self._train_prints = frozenset(_fingerprint(it) for it in items)
        h = hashlib.sha256(f"{self._heuristic.version}\n".encode())  # its signals are features
        for it, y in zip(items, ys):
            h.update(f"{it.item_id}\0{_fingerprint(it)}\0{y}\n".encode())
        self.version = f"{_REVISION}-C{self.C:g}-{h.hexdigest()[:10]}"
        return self

    def _check(self, items: Sequence[RetentionItem]) -> None:
        if not self.is_fitted:
            raise NotFittedError(
                f"{self.name} is not fitted: call `fit(train_items, train_labels)` on a training "
                f"split first, or get it fitted with get_judge({self.name!r}, "
                "train_items=..., train_labels=...)")
        seen = [it.item_id for it in items
                if it.item_id in self._train_ids or _fingerprint(it) in self._train_prints]
        if seen:
            raise TrainingOverlapError(
                f"{self.name} was fit on {len(seen)} of these {len(items)} items (e.g. "
                f"{seen[0]!r}): score only held-out items, e.g. the test split of a labeled "
                "set after fitting on its dev split")

    def predict_proba(self, items: Sequence[RetentionItem]) -> Any:
        """Class probabilities, shape ``(n_items, 3)``, columns in ``LABELS`` order."""
        return self._predict(list(items))[0]

    def _predict(self, items: list[RetentionItem]) -> tuple[Any, list[tuple[str, ...]]]:
        import numpy as np
        from scipy import sparse

        self._check(items)
        if not items:
            return np.zeros((0, len(LABELS))), []
        dv, scaler, tf_fact, tf_novel, clf = self._model
        signals, facts, novel, evidence = self._features(items)
        X = sparse.hstack([scaler.transform(dv.transform(signals)),
                           _safe_transform(tf_fact, facts),
                           _safe_transform(tf_novel, novel)]).tocsr()
        proba = clf.predict_proba(X)
        out = np.zeros((len(items), len(LABELS)))
        for j, cls in enumerate(clf.classes_):
            out[:, LABELS.index(cls)] = proba[:, j]
        return out, evidence

    def judge_items(self, items: Sequence[RetentionItem]) -> list[Verdict]:
        """One verdict per item, in order.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        TrainingOverlapError
            When any item was in the training set.
        """
        items = list(items)
        proba, evidence = self._predict(items)
        labels = [LABELS[int(p.argmax())] for p in proba]
        # where the evidence is: the heuristic's span, when it reads the item the same way
        label_of = {it.item_id: lab for it, lab in zip(items, labels)}
        placed = [it for it in items if label_of[it.item_id] in ("retained", "contradicted")]
        spans = {v.item_id: v.span for v in HeuristicJudge().judge_items(placed)
                 if v.label == label_of[v.item_id]}
        out = []
        for it, p, ev, lab in zip(items, proba, evidence, labels):
            probs = ", ".join(f"p({name})={p[i]:.2f}" for i, name in enumerate(LABELS))
            # the probabilities, then the heuristic's findings the features came from
            out.append(Verdict(it.item_id, lab, probs, (probs, *ev),
                               span=spans.get(it.item_id)))
        return out


def _safe_fit(vec: Any, docs: list[str]) -> Any:
    from scipy import sparse

    try:
        return vec.fit_transform(docs)
    except ValueError:  # empty vocabulary (tiny training sets): no columns from this block
        vec.vocabulary_ = None
        return sparse.csr_matrix((len(docs), 0))


def _safe_transform(vec: Any, docs: list[str]) -> Any:
    from scipy import sparse

    if getattr(vec, "vocabulary_", None) is None:
        return sparse.csr_matrix((len(docs), 0))
    return vec.transform(docs)
