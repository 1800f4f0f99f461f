"""The LLM retention judge: one prompt per handoff, facts referenced by id, optional worked
examples drawn from labeled items of another split."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from maev_kit.errors import InputError, MaevError
from maev_kit.judges._learned import _fingerprint
from maev_kit.judges._parse import parse_retention_reply
from maev_kit.judges._prompts import (
    PromptTemplate,
    fact_key,
    DEFAULT_PROMPT,
    render_examples,
    resolve_prompt,
)
from maev_kit.judges._verdict import Verdict
from maev_kit.retention import LABELS, RetentionItem

__all__ = ["ExampleOverlapError", "RetentionJudge"]

Strategy = Literal["stratified", "disagreements"]
STRATEGIES: tuple[str, ...] = ("stratified", "disagreements")


class ExampleOverlapError(MaevError, ValueError):
    """Worked examples would come from the split being scored, or an item would be its own
    example (its verdict would be inflated)."""


class RetentionJudge:
    """Ask an LLM whether each key fact of a handoff was retained, lost or contradicted.

    The judge does no I/O: :meth:`build_messages` makes one chat request for all facts of one
    handoff and :meth:`parse` turns the model's reply into one :class:`Verdict` per fact; the
    runner (:func:`maev_kit.runner.run_judge`) sends the request.

    Parameters
    ----------
    prompt : "v1", "v2", "v3" (default), a template file path, or a :class:`PromptTemplate`
        ``"v1"`` follows the article (facts, post-handoff messages, a status per fact as JSON),
        with facts referenced by id and the trace text fenced as untrusted data. ``"v2"`` adds
        label definitions and one example per label; both show the text of the user and the
        agents only (the view of maev-kit's first versions; kept so their judge cards
        reproduce). ``"v3"`` shows the whole conversation view after the handoff — text, tool
        calls, tool results and handoffs, each marked as the receiver's, the user's or another
        agent's — judges only the receiver's entries as evidence, defines a contradiction as a
        different value for the same fact and asks where the evidence is (the verdict's
        ``span``). A file is read with
        :meth:`PromptTemplate.from_file` (see docs/prompts.md for the template language).
    examples : int or sequence of (RetentionItem, label), default 0
        Worked examples shown with every request, inside a fenced ``<<<EXAMPLES`` block (data,
        never instructions). An int ``k`` draws ``k`` human-labeled items of ``example_split``
        when :meth:`bind_examples` is called (``evaluate`` and ``calibrate`` call it with the
        labeled set) or from ``example_pool``; a sequence gives the examples themselves.
    example_split : str, default "dev"
        The labeled set's split examples are drawn from. Scoring that split is refused.
    example_strategy : {"stratified", "disagreements"}
        ``"stratified"``: the labels in turn (retained, lost, contradicted, ...), items chosen
        at random (``seed``) within each label. ``"disagreements"``: items where the heuristic
        judge disagrees with the human label first (the hard cases), stratified likewise.
    example_pool : sequence of (RetentionItem, label), optional
        Draw the examples from these instead of a labeled set's split.
    seed : int
        Seed of the draw: the same pool and seed give the same examples.

    Attributes
    ----------
    name : str
        ``"retention-<prompt name>"``: ``"retention-v1"``, ``"retention-my_prompt"``.
    version : str
        The prompt's name and content hash, and with examples ``+ex<k>-<hash of the examples>``:
        it changes whenever the prompt or the examples do (so does the cache key).
    example_ids : list of str
        The ids of the worked examples in use (empty before they are drawn).

    Examples
    --------
    >>> from maev_kit.retention import RetentionItem
    >>> from maev_kit.traces import Message
    >>> after = (Message("billing", "Account ACCT-4471: refund started.", 3),)
    >>> items = [RetentionItem("c1/h0/f1", "c1", 0, "f1", "Account is ACCT-4471", (), after,
    ...                        "triage", "billing")]
    >>> judge = RetentionJudge(prompt="v1")
    >>> judge.name, judge.offline
    ('retention-v1', False)
    >>> messages = judge.build_messages(items)
    >>> [m["role"] for m in messages]
    ['system', 'user']
    >>> '{"id": "F1", "fact": "Account is ACCT-4471"}' in messages[1]["content"]
    True
    >>> judge.parse('{"F1": {"status": "retained", "reason": "quoted"}}', items)[0].label
    'retained'

    Worked examples from a pool of labeled items (never the item being judged):

    >>> ex = RetentionItem("c7/h0/f1", "c7", 0, "f1", "Order is ORD-9", (),
    ...                    (Message("billing", "Which order?", 2),), "triage", "billing")
    >>> judge = RetentionJudge("v1", examples=1, example_pool=[(ex, "lost")])
    >>> judge.example_ids, "+ex1-" in judge.version
    (['c7/h0/f1'], True)
    >>> "<<<EXAMPLES" in judge.build_messages(items)[1]["content"]
    True
    >>> judge.build_messages([ex])
    Traceback (most recent call last):
    ...
    maev_kit.judges._llm.ExampleOverlapError: item 'c7/h0/f1' is one of the judge's worked examples: an item cannot be judged with itself as an example; score another split or draw the examples from one
    """

    offline = False

    def __init__(self, prompt: Any = DEFAULT_PROMPT, *,
                 examples: int | Sequence[tuple[RetentionItem, str]] = 0,
                 example_split: str = "dev", example_strategy: Strategy = "stratified",
                 example_pool: Sequence[tuple[RetentionItem, str]] | None = None,
                 seed: int = 0) -> None:
        self.template: PromptTemplate = resolve_prompt(prompt)
        self.prompt = self.template.name
        self.name = f"retention-{self.template.name}"
        if example_strategy not in STRATEGIES:
            raise InputError(f"`example_strategy` must be one of {', '.join(STRATEGIES)}, got "
                             f"{example_strategy!r}")
        if not isinstance(example_split, str) or not example_split:
            raise InputError(f"`example_split` must be a split name such as 'dev', got "
                             f"{example_split!r}")
        self.example_split = example_split
        self.example_strategy = example_strategy
        self.seed = int(seed)
        self._examples: list[tuple[RetentionItem, str]] | None = None
        self._fixed = False
        if isinstance(examples, bool) or not isinstance(examples, (int, Sequence)) \
                or isinstance(examples, str):
            raise TypeError("`examples` must be a number of examples to draw or a list of "
                            f"(item, label) pairs, got {examples!r}")
        if isinstance(examples, int):
            if examples < 0:
                raise InputError(f"`examples` must be 0 or more, got {examples}")
            self.n_examples = examples
            if examples and example_pool is not None:
                self._examples = self._draw(_pairs(example_pool, "example_pool"))
                self._fixed = True
        else:
            if example_pool is not None:
                raise InputError("give the examples themselves or an `example_pool` to draw "
                                 "from, not both")
            self._examples = _pairs(examples, "examples")
            self._fixed = True
            self.n_examples = len(self._examples)

    # -- identity ----------------------------------------------------------------------------

    @property
    def version(self) -> str:
        """Prompt name and hash, plus ``+ex<k>-<hash>`` of the worked examples."""
        v = self.template.version
        if not self.n_examples:
            return v
        if self._examples is None:
            return f"{v}+ex{self.n_examples}-undrawn"
        h = hashlib.sha256()
        for it, label in self._examples:
            h.update(f"{it.item_id}\0{_fingerprint(it)}\0{label}\n".encode())
        return f"{v}+ex{self.n_examples}-{h.hexdigest()[:10]}"

    @property
    def example_ids(self) -> list[str]:
        """Ids of the worked examples in use (empty before they are drawn)."""
        return [it.item_id for it, _ in self._examples or []]

    @property
    def examples(self) -> list[tuple[RetentionItem, str]]:
        """The worked examples in use, as (item, label) pairs."""
        return list(self._examples or [])

    def __repr__(self) -> str:
        ex = f", examples={self.n_examples}" if self.n_examples else ""
        return f"RetentionJudge(prompt={self.prompt!r}{ex})  # version {self.version}"

    # -- examples ----------------------------------------------------------------------------

    def bind_examples(self, items: Sequence[RetentionItem],
                      labels: Mapping[str, Any], *, scored_split: str | None,
                      split_of: Callable[[str], str | None] | Mapping[str, str | None]
                      ) -> RetentionJudge:
        """Draw the worked examples from the labeled items of ``example_split``; returns self.

        ``evaluate`` and ``calibrate`` call this with the labeled set before judging; call it
        yourself when you drive :func:`~maev_kit.runner.run_judge` directly. A judge without
        examples ignores it.

        Parameters
        ----------
        items : every item of the labeled set (the pool is those of ``example_split``).
        labels : ``{item_id: label}``, or the human labels ``{item_id: {annotator: label}}``
            (then only items every annotator labeled alike can be examples).
        scored_split : the split about to be scored (None: every split).
        split_of : the split of a conversation id (``labeled_set.split_of``) or a mapping
            conversation id → split.

        Raises
        ------
        ExampleOverlapError
            When ``scored_split`` is ``example_split``, when every split is scored, or when a
            given example belongs to the scored split.
        InputError
            When ``example_split`` has fewer labeled items than examples asked for.
        """
        if not self.n_examples:
            return self
        where = split_of.get if isinstance(split_of, Mapping) else split_of
        if self._fixed:  # given, or drawn from the caller's pool: only check they are not scored
            scored = {it.item_id for it in items
                      if scored_split is None or where(it.conversation_id) == scored_split}
            inside = [it.item_id for it, _ in self._examples or []
                      if it.item_id in scored or (scored_split is not None
                                                  and where(it.conversation_id) == scored_split)]
            if inside:
                raise ExampleOverlapError(
                    f"worked example {inside[0]!r} is among the items being scored"
                    + (f" (split {scored_split!r})" if scored_split else "")
                    + ": an item cannot be judged with itself as an example; score another "
                    "split or take the examples from one")
            return self
        if scored_split is None:
            raise ExampleOverlapError(
                f"{self.name} shows worked examples from split {self.example_split!r}, but every "
                "split is being scored: score one held-out split (e.g. split='test')")
        if scored_split == self.example_split:
            raise ExampleOverlapError(
                f"{self.name} draws its worked examples from split {self.example_split!r}, the "
                f"split being scored: score another split, or draw the examples from another "
                "split (example_split=...)")
        pool = []
        for it in items:
            if where(it.conversation_id) != self.example_split:
                continue
            label = _one_label(labels.get(it.item_id))
            if label is not None:
                pool.append((it, label))
        if len(pool) < self.n_examples:
            raise InputError(f"{self.name} asks for {self.n_examples} worked examples but split "
                             f"{self.example_split!r} has {len(pool)} item(s) with an agreed "
                             "human label; label more items there or ask for fewer examples")
        self._examples = self._draw(pool)
        return self

    def _draw(self, pool: list[tuple[RetentionItem, str]]) -> list[tuple[RetentionItem, str]]:
        k = self.n_examples
        pool = sorted({it.item_id: (it, lab) for it, lab in pool}.values(),
                      key=lambda p: p[0].item_id)
        if len(pool) < k:
            raise InputError(f"{self.name} asks for {k} worked examples but the pool has "
                             f"{len(pool)} labeled item(s)")
        rng = random.Random(self.seed)
        if self.example_strategy == "disagreements":
            from maev_kit.judges._heuristic import HeuristicJudge

            ref = HeuristicJudge().judge_items([it for it, _ in pool])
            hard = [p for p, v in zip(pool, ref) if v.label != p[1]]
            easy = [p for p, v in zip(pool, ref) if v.label == p[1]]
            picked = _stratified(hard, k, rng)
            return picked + _stratified(easy, k - len(picked), rng)
        return _stratified(pool, k, rng)

    def _check_not_example(self, items: Sequence[RetentionItem]) -> None:
        if self.n_examples and self._examples is None:
            raise InputError(
                f"{self.name} has no worked examples yet (examples={self.n_examples}): score a "
                "split of a labeled set with evaluate/calibrate (they draw the examples from "
                f"split {self.example_split!r}), call judge.bind_examples(...), or pass "
                "example_pool=")
        if not self._examples:
            return
        ids = {it.item_id for it, _ in self._examples}
        prints = {_fingerprint(it) for it, _ in self._examples}
        for it in items:
            if it.item_id in ids or _fingerprint(it) in prints:
                raise ExampleOverlapError(
                    f"item {it.item_id!r} is one of the judge's worked examples: an item cannot "
                    "be judged with itself as an example; score another split or draw the "
                    "examples from one")

    # -- requests ----------------------------------------------------------------------------

    def fact_ids(self, items: Sequence[RetentionItem]) -> dict[str, str]:
        """The prompt's fact id for each item: ``{"F1": item_id, ...}``."""
        return {fact_key(i): it.item_id for i, it in enumerate(items)}

    def build_messages(self, items: Sequence[RetentionItem]) -> list[dict[str, str]]:
        """One chat request for all facts of one handoff.

        Raises
        ------
        ValueError
            When ``items`` is empty, mixes conversations or handoffs, or repeats an item id.
            Group items by ``(conversation_id, handoff_index)`` first.
        ExampleOverlapError
            When an item is one of the judge's worked examples.
        """
        items = list(items)
        if not items:
            raise ValueError("`items` is empty: pass the facts of one handoff")
        first = items[0]
        for it in items[1:]:
            if (it.conversation_id, it.handoff_index) != (first.conversation_id,
                                                          first.handoff_index):
                raise ValueError(
                    "`items` must all belong to one handoff: got "
                    f"({first.conversation_id!r}, handoff {first.handoff_index}) and "
                    f"({it.conversation_id!r}, handoff {it.handoff_index}); group items by "
                    "(conversation_id, handoff_index) and build one request per group")
        ids = [it.item_id for it in items]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ValueError(f"`items` repeats item id {dup!r}; pass each fact once")
        self._check_not_example(items)
        shown = (render_examples(self._examples, self.template.view,
                                         self.template.revision) if self._examples
                 else None)
        return self.template.render(items, examples=shown)

    def parse(self, reply: str, items: Sequence[RetentionItem]) -> list[Verdict]:
        """One verdict per item, in item order; never raises.

        ``items`` must be the same sequence, in the same order, that built the request (facts
        are referenced by position: ``F1`` is ``items[0]``). Bad replies become error verdicts
        that keep the raw reply; see :func:`maev_kit.judges.parse_retention_reply`.
        """
        return parse_retention_reply(reply, items)


def _pairs(pairs: Any, what: str) -> list[tuple[RetentionItem, str]]:
    out = []
    for n, pair in enumerate(pairs):
        try:
            it, label = pair
        except (TypeError, ValueError):
            raise TypeError(f"`{what}[{n}]` must be an (item, label) pair, got {pair!r}") from None
        if not isinstance(it, RetentionItem):
            raise TypeError(f"`{what}[{n}]`: the item must be a RetentionItem, got "
                            f"{type(it).__name__}")
        if label not in LABELS:
            raise InputError(f"`{what}[{n}]` ({it.item_id}): label must be one of "
                             f"{', '.join(LABELS)}, got {label!r}")
        out.append((it, label))
    return out


def _one_label(value: Any) -> str | None:
    """A single label, or the label every annotator gave (None when they differ)."""
    if isinstance(value, Mapping):
        found = set(value.values())
        value = found.pop() if len(found) == 1 else None
    return value if value in LABELS else None


def _stratified(pool: list[tuple[RetentionItem, str]], k: int, rng: random.Random
                ) -> list[tuple[RetentionItem, str]]:
    """``k`` pairs, the labels in turn, chosen at random within each label."""
    buckets = {lab: [p for p in pool if p[1] == lab] for lab in LABELS}
    for b in buckets.values():
        rng.shuffle(b)
    out: list[tuple[RetentionItem, str]] = []
    while len(out) < k and any(buckets.values()):
        for lab in LABELS:
            if buckets[lab] and len(out) < k:
                out.append(buckets[lab].pop())
    return out
