"""Exceptions and warnings raised by maev-kit.

Every error the kit raises on purpose derives from :class:`MaevError`, so a caller can catch
the whole family with one ``except``. Input problems (files, traces, labels) are
:class:`InputError` subclasses: the CLI turns them into exit code 2 and one readable message.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ERROR_CAUSES",
    "InputError",
    "JudgeErrorWarning",
    "JudgeErrorsExceeded",
    "JudgeUnavailableError",
    "NotApplicableWarning",
    "LabelValidationError",
    "MaevError",
    "Problem",
    "TraceValidationError",
    "TraceWarning",
    "UndefinedMetricWarning",
]


class MaevError(Exception):
    """Root of every exception maev-kit raises on purpose."""


class InputError(MaevError, ValueError):
    """Bad input from outside (a file, a trace, a label): the CLI exits 2 on it."""


@dataclass(frozen=True)
class Problem:
    """One problem found in an input file, with its location.

    ``str(problem)`` reads ``traces.jsonl:17 › handoffs[2] › to_agent: Field required``.
    """

    file: str
    line: int | None
    path: str
    message: str
    severity: str = "error"  # "error" | "warning"

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        if self.path:
            where = f"{where} › {self.path}"
        return f"{where}: {self.message}"


class ProblemsError(InputError):
    """An input error that carries every problem found, not just the first."""

    kind = "input"

    def __init__(self, problems: list[Problem], warnings: list[Problem] | None = None):
        self.problems = list(problems)
        self.warnings = list(warnings or [])
        n = len(self.problems)
        head = f"{n} problem{'s' if n != 1 else ''} in {self.kind}"
        shown = self.problems[:50]
        lines = [head + ":"] + [f"  {p}" for p in shown]
        if n > len(shown):
            lines.append(f"  … and {n - len(shown)} more")
        super().__init__("\n".join(lines))


class TraceValidationError(ProblemsError):
    """A trace file (or trace objects) failed validation.

    ``.problems`` lists each :class:`Problem` (file, line, field path, message);
    ``.warnings`` the non-fatal findings of the same pass.
    """

    kind = "traces"


class LabelValidationError(ProblemsError):
    """A labeled-set file (manifest, expectations, labels) failed validation."""

    kind = "labeled set"


class TraceWarning(UserWarning):
    """Something in a trace is suspicious but not invalid (e.g. decreasing turn_index)."""


class UndefinedMetricWarning(UserWarning):
    """A metric is undefined for this input (e.g. κ with a single class); a fallback value is returned.

    Mirrors scikit-learn's warning of the same name.
    """


#: Why a judge call failed, as counted everywhere (run stats, ledger, results, CLI, report):
#: ``auth`` (authentication / permission), ``unreachable`` (connection refused, DNS, no route),
#: ``rate_limit`` (429 after the retries), ``timeout``, ``server`` (5xx after the retries),
#: ``content_filter`` (the provider refused the content), ``unparseable`` (a reply neither the
#: transport nor the judge could read), ``other``.
ERROR_CAUSES: tuple[str, ...] = ("auth", "unreachable", "rate_limit", "timeout", "server",
                                 "content_filter", "unparseable", "other")


class JudgeUnavailableError(MaevError):
    """The judge cannot answer at all (bad credentials, nothing listening at the endpoint).

    Raised early — after the first requests, not after every retry of every item — so a run
    against a dead endpoint stops within seconds. ``cause`` is one of :data:`ERROR_CAUSES`;
    ``fix`` says what to change (which variable to set, which URL did not answer).
    """

    def __init__(self, message: str, *, cause: str, fix: str = "") -> None:
        super().__init__(f"{message}; {fix}" if fix else message)
        self.cause = cause
        self.fix = fix


class JudgeErrorsExceeded(MaevError):
    """Too large a share of the judged items failed for the numbers to be trusted."""


class JudgeErrorWarning(UserWarning):
    """Some judge calls failed: those items are left out of every rate, and counted by cause."""


class NotApplicableWarning(UserWarning):
    """A metric component had nothing to measure (no expectation, no routing case, no judged
    fact) for some conversations: it is n/a there, never 0 or 1."""
