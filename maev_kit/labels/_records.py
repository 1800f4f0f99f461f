"""The labels file: append-only JSONL, one judgement per line (docs/formats.md, "Labels
JSONL").

The latest line per ``(item_id, annotator)`` wins. ``skip`` is a valid label that is never
counted. A torn last line (a crash mid-write) is tolerated and reported.

A retention label is one of ``retained``, ``lost``, ``contradicted``, ``skip``. A label of a
criterion (:mod:`maev_kit.criteria`) carries the criterion's name in ``criterion`` and one of
that criterion's labels (or ``skip``) in ``label``; a line without ``criterion`` reads as
before, so retention label files are unchanged.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, NoReturn

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from maev_kit.errors import Problem
from maev_kit.internal import display_name, read_append_log, validated_lines

__all__ = ["LABEL_VALUES", "LabelFile", "LabelRecord", "latest_labels", "read_label_file"]

LABEL_VALUES = ("retained", "lost", "contradicted", "skip")

#: An annotator's name: 1–64 letters, digits, ``.``, ``_``, ``-`` or ``@`` (an email works),
#: starting with a letter or digit — it ends up in file names, URLs and reports.
_ANNOTATOR = re.compile(r"[^\W_][\w.@-]{0,63}")
_CRITERION = re.compile(r"[a-z0-9_-]+")


def check_annotator(name: Any, what: str = "annotator") -> str:
    """``name`` when it is a valid annotator name, else a :class:`ValueError` saying the rule.

    The one check of annotator names: every label read or written, every session and plan.

    >>> check_annotator("ana.lopez@example.org")
    'ana.lopez@example.org'
    >>> check_annotator("../../ben")
    Traceback (most recent call last):
    ...
    ValueError: annotator '../../ben' is not a valid name: use 1–64 letters, digits, '.', '_', '-' or '@' (an email works), starting with a letter or digit
    """
    if not isinstance(name, str) or _ANNOTATOR.fullmatch(name) is None:
        raise ValueError(f"{what} {name!r} is not a valid name: use 1–64 letters, digits, "
                         "'.', '_', '-' or '@' (an email works), starting with a letter or digit")
    return name


def _field_error(field: str, value: Any, message: str) -> NoReturn:
    """Raise a validation error located at ``field`` (a model-level check that is about one
    field, so the file's problem names it: ``labels.jsonl:3 › label: …``)."""
    error = PydanticCustomError("value_error", message)
    raise ValidationError.from_exception_data(
        "LabelRecord", [InitErrorDetails(type=error, loc=(field,), input=value)])


class LabelRecord(BaseModel):
    """One line of ``labels.jsonl``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    item_id: str
    annotator: str
    # retention: one of LABEL_VALUES; with ``criterion``: one of that criterion's labels
    label: str
    note: str = ""
    created_at: str = ""
    source: str | None = None  # e.g. "gold" for a dataset's adjudicated label
    #: Whether the item was in the random sample (``label_sample.json``) the labeling session
    #: followed: ``false`` marks a label kept outside it. None (left out of the file): no sample.
    in_sample: bool | None = None
    criterion: str | None = None  # the criterion's name; None: a retention label

    @model_validator(mode="after")
    def _a_label(self) -> LabelRecord:
        if self.criterion is None:
            if self.label not in LABEL_VALUES:
                _field_error("label", self.label,
                             f"label {self.label!r} must be one of {', '.join(LABEL_VALUES)} "
                             "(a criterion's label carries the criterion's name in `criterion`)")
        elif not _CRITERION.fullmatch(self.criterion):
            _field_error("criterion", self.criterion, f"criterion {self.criterion!r} must be a "
                         "criterion name ([a-z0-9_-]+)")
        elif not self.label.strip():
            _field_error("label", self.label, "label must not be blank")
        return self

    @field_validator("item_id")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be blank")
        return v

    @field_validator("annotator")
    @classmethod
    def _a_name(cls, v: str) -> str:
        return check_annotator(v)


@dataclass
class LabelFile:
    """What reading a labels file found."""

    records: list[LabelRecord]
    problems: list[Problem]
    torn_last_line: Problem | None
    lines: dict[int, int]  # index in records → line number

    def to_dicts(self) -> list[dict[str, Any]]:
        return [r.model_dump(exclude_defaults=True) for r in self.records]


def read_label_file(path: str | os.PathLike[str], *, name: str | None = None) -> LabelFile:
    """Read ``labels.jsonl``; never raises on content.

    A last line without a newline that does not parse is a *torn write* (reported separately,
    not an error); any other bad line is a problem.
    """
    name = name or display_name(path)
    records: list[LabelRecord] = []
    problems: list[Problem] = []
    lines: dict[int, int] = {}
    json_lines, torn = read_append_log(path, name=name)
    for line, rec in validated_lines(json_lines, LabelRecord.model_validate, name, problems):
        lines[len(records)] = line
        records.append(rec)
    return LabelFile(records, problems, torn, lines)


def latest_labels(records: list[LabelRecord], *, include_skip: bool = False
                  ) -> dict[tuple[str, str], LabelRecord]:
    """The latest record per ``(item_id, annotator)``; ``skip`` dropped unless asked for."""
    out: dict[tuple[str, str], LabelRecord] = {}
    for r in records:
        out[(r.item_id, r.annotator)] = r
    if not include_skip:
        out = {k: v for k, v in out.items() if v.label != "skip"}
    return out
