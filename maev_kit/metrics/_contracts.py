"""Handoff contracts: the context each kind of handoff must carry, and the checks against them.

When agents are built by different teams, each handoff type gets a schema: which context keys
the receiving agent relies on, and of which JSON type their values are.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, TypeAdapter, ValidationError

from maev_kit.errors import Problem, ProblemsError
from maev_kit.internal import display_name, format_loc, pydantic_problems
from maev_kit.traces import Handoff, HandoffReason, MultiAgentTrace

__all__ = [
    "VALUE_TYPES",
    "ContractValidationError",
    "ContractViolation",
    "HandoffContract",
    "check_handoff_contracts",
    "contract_violations_by_handoff",
    "load_contracts",
]

#: Type names allowed in ``value_types`` → the Python types a JSON value of that type has.
#: ``number``/``float`` accept integers too (JSON writes 2.0 as 2); ``bool`` is never a number.
VALUE_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "str": (str,),
    "integer": (int,), "int": (int,),
    "number": (int, float), "float": (int, float),
    "boolean": (bool,), "bool": (bool,),
    "array": (list, tuple), "list": (list, tuple),
    "object": (dict,), "dict": (dict,),
    "null": (type(None),),
    "any": (object,),
}
_PY_TYPE_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean",
                  list: "array", dict: "object", type(None): "null", object: "any"}


class ContractValidationError(ProblemsError):
    """A contracts file (or contract objects) failed validation; ``.problems`` lists each."""

    kind = "handoff contracts"


@dataclass(frozen=True)
class HandoffContract:
    """What a handoff from ``from_agent`` to ``to_agent`` must carry in ``context_passed``.

    ``from_agent`` and ``to_agent`` are agent ids or ``"*"`` (any agent); ``reason``, when set,
    limits the contract to handoffs with that reason. ``value_types`` maps context keys to a
    JSON type name (``string``, ``integer``, ``number``, ``boolean``, ``array``, ``object``,
    ``null``, ``any``; the Python names ``str``, ``int``, ``float``, ``bool``, ``list``,
    ``dict`` and Python types work too) or a list of them; a key with a declared type is checked
    whenever it is present, required or not.

    >>> c = HandoffContract("*", "billing", required_context_keys=["account_number"],
    ...                     value_types={"account_number": "string", "amount": ["number", "null"]})
    >>> c.applies_to(Handoff("triage", "billing")), c.value_types["amount"]
    (True, ('number', 'null'))
    """

    __pydantic_config__ = ConfigDict(extra="forbid")

    from_agent: str = "*"
    to_agent: str = "*"
    reason: HandoffReason | None = None
    required_context_keys: tuple[str, ...] = ()
    value_types: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    name: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.reason, str) and not isinstance(self.reason, HandoffReason):
            try:
                object.__setattr__(self, "reason", HandoffReason(self.reason))
            except ValueError:
                allowed = ", ".join(r.value for r in HandoffReason)
                raise ValueError(f"`reason` must be one of {allowed} or None, "
                                 f"got {self.reason!r}") from None
        keys = self.required_context_keys
        if isinstance(keys, str):
            raise TypeError("`required_context_keys` must be a list of key names, not a string")
        object.__setattr__(self, "required_context_keys", tuple(keys))
        types: dict[str, tuple[str, ...]] = {}
        for key, spec in dict(self.value_types).items():
            types[key] = _type_names(key, spec)
        object.__setattr__(self, "value_types", types)

    def applies_to(self, handoff: Handoff) -> bool:
        """Whether this contract governs ``handoff`` (agents and reason match)."""
        return ((self.from_agent == "*" or self.from_agent == handoff.from_agent)
                and (self.to_agent == "*" or self.to_agent == handoff.to_agent)
                and (self.reason is None or self.reason == handoff.reason))

    def label(self) -> str:
        """``name``, or ``from→to`` (with the reason) when the contract has no name."""
        if self.name:
            return self.name
        reason = f" ({self.reason.value})" if self.reason is not None else ""
        return f"{self.from_agent}→{self.to_agent}{reason}"

    def to_dict(self) -> dict[str, Any]:
        """The file form (what :func:`load_contracts` reads)."""
        return {"name": self.name, "from_agent": self.from_agent, "to_agent": self.to_agent,
                "reason": None if self.reason is None else self.reason.value,
                "required_context_keys": list(self.required_context_keys),
                "value_types": {k: v[0] if len(v) == 1 else list(v)
                                for k, v in self.value_types.items()}}

    def __hash__(self) -> int:  # value_types is a dict; hash what identifies the contract
        return hash((self.name, self.from_agent, self.to_agent, self.reason,
                     self.required_context_keys, tuple(self.value_types.items())))


def _type_names(key: str, spec: Any) -> tuple[str, ...]:
    try:
        return _parse_type_spec(spec)
    except ValueError as e:
        raise ValueError(f"`value_types[{key!r}]`: {e}") from None


def _parse_type_spec(spec: Any) -> tuple[str, ...]:
    """``"string"``, ``str`` or ``["number", "null"]`` → a tuple of type names."""
    items = [spec] if isinstance(spec, (str, type)) else spec
    if not isinstance(items, (list, tuple)) or not items:
        raise ValueError(f"expected a type name or a non-empty list of them, got {spec!r}")
    names = []
    for item in items:
        if isinstance(item, type) and item in _PY_TYPE_NAMES:
            names.append(_PY_TYPE_NAMES[item])
        elif isinstance(item, str) and item in VALUE_TYPES:
            names.append(item)
        else:
            raise ValueError(f"unknown type {item!r}; use one of {', '.join(VALUE_TYPES)}")
    return tuple(names)


@dataclass(frozen=True)
class ContractViolation:
    """One handoff breaking one contract: a required key is missing, or a value has the wrong type.

    ``kind`` is ``"missing_key"``, ``"wrong_type"`` or ``"no_contract"`` (only with
    ``require_contract=True``: no contract governs the handoff; ``contract`` is then None).
    """

    conversation_id: str
    handoff_index: int
    turn_index: int
    from_agent: str
    to_agent: str
    contract_index: int | None
    contract: HandoffContract | None
    kind: Literal["missing_key", "wrong_type", "no_contract"]
    key: str | None = None
    expected_types: tuple[str, ...] = ()
    actual_type: str | None = None

    @property
    def message(self) -> str:
        """A one-line description, e.g. ``handoffs[1] (billing→tech) breaks contract …``."""
        where = f"handoffs[{self.handoff_index}] ({self.from_agent}→{self.to_agent})"
        if self.kind == "no_contract":
            return f"{where}: no contract covers this handoff"
        assert self.contract is not None
        head = f"{where} breaks contract {self.contract.label()!r}"
        if self.kind == "missing_key":
            return f"{head}: context key {self.key!r} missing"
        want = " or ".join(self.expected_types)
        return f"{head}: context key {self.key!r} should be {want}, got {self.actual_type}"

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, Any]:
        return {"conversation_id": self.conversation_id, "handoff_index": self.handoff_index,
                "turn_index": self.turn_index, "from_agent": self.from_agent,
                "to_agent": self.to_agent, "contract_index": self.contract_index,
                "contract": None if self.contract is None else self.contract.label(),
                "kind": self.kind, "key": self.key,
                "expected_types": list(self.expected_types), "actual_type": self.actual_type,
                "message": self.message}


def check_handoff_contracts(
    trace: MultiAgentTrace,
    contracts: Sequence[HandoffContract] | str | os.PathLike[str],
    *,
    require_contract: bool = False,
) -> list[ContractViolation]:
    """Check every handoff of ``trace`` against every contract that applies to it.

    A contract applies when its ``from_agent``/``to_agent`` match (``"*"`` matches any agent)
    and its ``reason``, if set, equals the handoff's. Each required key absent from
    ``context_passed`` is one ``missing_key`` violation; each present key whose value is not of
    its declared type is one ``wrong_type`` violation. With ``require_contract=True`` a handoff
    no contract applies to is a ``no_contract`` violation.

    Parameters
    ----------
    trace : MultiAgentTrace
    contracts : list of HandoffContract (or mappings), or the path of a contracts file
    require_contract : bool, default False

    Returns
    -------
    list of ContractViolation, in handoff order, then contract order, then key order.
    Empty when every handoff honours its contracts.

    Examples
    --------
    >>> from maev_kit import Handoff, MultiAgentTrace
    >>> contracts = [HandoffContract("*", "billing", required_context_keys=["account_number"],
    ...                              value_types={"account_number": "string"}),
    ...              HandoffContract("billing", "tech", "escalation", ["error_code"])]
    >>> t = MultiAgentTrace("c-1", handoffs=[
    ...     Handoff("triage", "billing", "specialization", {"account_number": 4471}, 2),
    ...     Handoff("billing", "tech", "escalation", {"account_number": "ACCT-4471"}, 4)])
    >>> for v in check_handoff_contracts(t, contracts):
    ...     print(v.handoff_index, v.kind, v.key)
    0 wrong_type account_number
    1 missing_key error_code
    >>> print(check_handoff_contracts(t, contracts)[0])
    handoffs[0] (triage→billing) breaks contract '*→billing': context key 'account_number' should be string, got integer
    """
    if not isinstance(trace, MultiAgentTrace):
        raise TypeError("`trace` must be a MultiAgentTrace (one conversation), "
                        f"got {type(trace).__name__}")
    rules = _as_contracts(contracts)
    out: list[ContractViolation] = []
    cid = trace.conversation_id
    for hi, h in enumerate(trace.handoffs):
        ctx = h.context_passed
        src, dst, reason = h.from_agent, h.to_agent, h.reason
        covered = False
        for ci, c in enumerate(rules):
            if not ((c.from_agent == "*" or c.from_agent == src)
                    and (c.to_agent == "*" or c.to_agent == dst)
                    and (c.reason is None or c.reason == reason)):
                continue
            covered = True
            for key in c.required_context_keys:
                if key not in ctx:
                    out.append(_violation(cid, hi, h.turn_index, src, dst, ci, c, "missing_key",
                                          key, (), None))
            for key, names in c.value_types.items():
                if key not in ctx:
                    continue
                value = ctx[key]
                if not _has_type(value, names):
                    out.append(_violation(cid, hi, h.turn_index, src, dst, ci, c, "wrong_type",
                                          key, names, _json_type_name(value)))
        if require_contract and not covered:
            out.append(_violation(cid, hi, h.turn_index, src, dst, None, None, "no_contract",
                                  None, (), None))
    return out


_new = object.__new__


def _violation(conversation_id: str, handoff_index: int, turn_index: int, from_agent: str,
               to_agent: str, contract_index: int | None, contract: HandoffContract | None,
               kind: str, key: str | None, expected_types: tuple[str, ...],
               actual_type: str | None) -> ContractViolation:
    """``ContractViolation(...)`` (every field given), without the frozen dataclass's
    ``__init__`` (one ``object.__setattr__`` call per field: ~3x slower); the same object."""
    v = _new(ContractViolation)
    v.__dict__.update(conversation_id=conversation_id, handoff_index=handoff_index,
                      turn_index=turn_index, from_agent=from_agent, to_agent=to_agent,
                      contract_index=contract_index, contract=contract, kind=kind, key=key,
                      expected_types=expected_types, actual_type=actual_type)
    return v


def contract_violations_by_handoff(
    trace: MultiAgentTrace,
    contracts: Sequence[HandoffContract] | str | os.PathLike[str],
    *,
    require_contract: bool = False,
) -> dict[int, list[ContractViolation]]:
    """:func:`check_handoff_contracts`, grouped by handoff index: what a view marks on each handoff.

    The trace viewer and the report draw exactly these violations — the matching rule lives in
    :func:`check_handoff_contracts` alone. Handoffs without a violation are absent.

    Examples
    --------
    >>> from maev_kit import Handoff, MultiAgentTrace
    >>> t = MultiAgentTrace("c-1", handoffs=[
    ...     Handoff("triage", "general", "fallback", {}, 1),
    ...     Handoff("general", "billing", "specialization", {}, 2)])
    >>> found = contract_violations_by_handoff(t, [HandoffContract("*", "billing",
    ...                                            required_context_keys=["account_number"])])
    >>> {i: [v.key for v in vs] for i, vs in found.items()}
    {1: ['account_number']}
    """
    out: dict[int, list[ContractViolation]] = {}
    for v in check_handoff_contracts(trace, contracts, require_contract=require_contract):
        out.setdefault(v.handoff_index, []).append(v)
    return out


def _has_type(value: Any, names: tuple[str, ...]) -> bool:
    for name in names:
        if name == "any":
            return True
        if isinstance(value, bool) and name not in ("boolean", "bool"):
            continue
        if isinstance(value, VALUE_TYPES[name]):
            return True
    return False


def _json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    for t in (bool, int, float, str, list, tuple, dict):
        if isinstance(value, t):
            return {bool: "boolean", int: "integer", float: "number", str: "string",
                    list: "array", tuple: "array", dict: "object"}[t]
    return type(value).__name__


def _as_contracts(contracts: Any) -> list[HandoffContract]:
    if type(contracts) is list:  # the fast, common case: a list of HandoffContract
        for c in contracts:  # a loop, not all(<generator>): this runs per conversation
            if type(c) is not HandoffContract:
                break
        else:
            return contracts
    if isinstance(contracts, (str, os.PathLike)):
        return load_contracts(contracts)
    if isinstance(contracts, HandoffContract):
        return [contracts]
    if isinstance(contracts, Mapping) or not isinstance(contracts, Iterable):
        raise TypeError("`contracts` must be a list of HandoffContract objects or the path of a "
                        f"contracts file, got {type(contracts).__name__}")
    items = list(contracts)
    if all(isinstance(c, HandoffContract) for c in items):
        return items
    return _validate_entries(items, "<contracts>", "contracts")


_ADAPTER = TypeAdapter(HandoffContract)
_FIELDS = ("from_agent, to_agent, reason, required_context_keys, value_types and name")


def _validate_entries(entries: list[Any], file: str, root: str,
                      lines: Mapping[int, int] | None = None) -> list[HandoffContract]:
    """Contracts from raw entries; every problem is collected, then raised together.

    ``lines`` maps an entry's index to its line in the file, when known (YAML).
    """
    out: list[HandoffContract] = []
    problems: list[Problem] = []
    lines = lines or {}
    for i, entry in enumerate(entries):
        if isinstance(entry, HandoffContract):
            out.append(entry)
            continue
        line = lines.get(i)
        where = f"{root}[{i}]"
        if not isinstance(entry, Mapping):
            problems.append(Problem(file, line, where,
                                    f"expected a mapping (a contract), got {type(entry).__name__}"))
            continue
        data = dict(entry)
        types = data.pop("value_types", {})
        if "to_agent" not in data:
            problems.append(Problem(file, line, f"{where} › to_agent",
                                    'field required (use "*" for any agent)'))
        bad = False
        if not isinstance(types, Mapping):
            problems.append(Problem(file, line, f"{where} › value_types",
                                    "expected a mapping of context key → type name"))
            bad = True
        else:
            for key, spec in types.items():
                try:
                    _parse_type_spec(spec)
                except ValueError as e:
                    problems.append(Problem(file, line,
                                            format_loc((root, i, "value_types", key)), str(e)))
                    bad = True
        try:
            c = _ADAPTER.validate_python(data)
        except ValidationError as e:
            found = pydantic_problems(e, file, line, (root, i))
            for p in found:
                if p.path.endswith("reason") and "Input should be" in p.message:
                    object.__setattr__(p, "message", p.message + " (or null for any reason)")
                elif p.message.startswith("unknown field"):
                    object.__setattr__(p, "message", f"unknown field; a contract has {_FIELDS}")
            problems.extend(found)
            continue
        if not bad:
            out.append(HandoffContract(c.from_agent, c.to_agent, c.reason,
                                       c.required_context_keys, dict(types), c.name))
    if problems:
        raise ContractValidationError(problems)
    return out


def parse_contracts(entries: Iterable[Any], *, source: str = "<contracts>"
                    ) -> list[HandoffContract]:
    """Contracts from records (dicts as in a contracts file), validating every entry.

    Raises one :class:`ContractValidationError` listing every problem, each located as
    ``source › contracts[i] › field``.

    >>> parse_contracts([{"to_agent": "billing", "required_context_keys": ["account_number"]}])[0].label()
    '*→billing'
    """
    return _validate_entries(list(entries), source, "contracts")


def load_contracts(path: str | os.PathLike[str]) -> list[HandoffContract]:
    """Read handoff contracts from a YAML (``.yaml``/``.yml``) or JSON file.

    The file holds a list of contracts, or a mapping with a ``contracts`` list. Each contract
    has ``to_agent`` and optionally ``from_agent`` (default ``"*"``), ``reason``,
    ``required_context_keys``, ``value_types`` and ``name``::

        contracts:
          - name: billing intake
            from_agent: "*"
            to_agent: billing
            required_context_keys: [account_number]
            value_types: {account_number: string, amount: [number, "null"]}

    Every problem of the file is collected and raised together as one
    :class:`ContractValidationError` (an :class:`~maev_kit.errors.InputError`), each naming the
    file and the entry (with its line in YAML files), e.g.
    ``contracts.yaml:9 › contracts[2] › reason: Input should be …``.

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "contracts.json")
    >>> with open(p, "w") as f:
    ...     _ = f.write('[{"to_agent": "billing", "required_context_keys": ["account_number"]}]')
    >>> load_contracts(p)[0].label()
    '*→billing'
    """
    name = display_name(path)
    p = Path(path)
    if not p.is_file():
        raise ContractValidationError([Problem(name, None, "", "file not found")])
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ContractValidationError([Problem(name, None, "", f"not valid UTF-8 ({e.reason} "
                                               f"at byte {e.start}); save the file as UTF-8")]
                                      ) from None
    if not text.strip():
        raise ContractValidationError([Problem(name, None, "", "file is empty: expected a list "
                                               "of contracts")])
    suffix = p.suffix.lower()
    if suffix in (".yaml", ".yml"):
        import yaml

        try:
            node = yaml.compose(text, Loader=yaml.SafeLoader)
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            line = None if mark is None else mark.line + 1
            problem = getattr(e, "problem", None) or str(e)
            raise ContractValidationError([Problem(name, line, "", f"not valid YAML: {problem}")]
                                          ) from None
        lines = _yaml_entry_lines(node)
    elif suffix == ".json":
        lines = {}
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ContractValidationError([Problem(name, e.lineno, "",
                                                   f"not valid JSON: {e.msg} at column {e.colno}")]
                                          ) from None
    else:
        raise ContractValidationError([Problem(name, None, "", f"unknown file type {p.suffix!r}; "
                                               "use .yaml, .yml or .json")])
    root = "contracts"
    if isinstance(data, Mapping):
        extra = sorted(set(data) - {"contracts"})
        if "contracts" not in data or extra:
            raise ContractValidationError([Problem(
                name, None, "", "expected a list of contracts, or a mapping with only a "
                f"`contracts` list (found keys: {', '.join(map(str, data))})")])
        data = data["contracts"]
    if not isinstance(data, list):
        raise ContractValidationError([Problem(name, None, root, "expected a list of contracts, "
                                               f"got {type(data).__name__}")])
    return _validate_entries(data, name, root, lines)


def _yaml_entry_lines(node: Any) -> dict[int, int]:
    """Line (1-based) of each contract entry in a composed YAML document."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        node = next((v for k, v in node.value
                     if isinstance(k, yaml.ScalarNode) and k.value == "contracts"), None)
    if not isinstance(node, yaml.SequenceNode):
        return {}
    return {i: item.start_mark.line + 1 for i, item in enumerate(node.value)}
