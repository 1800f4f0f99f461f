"""Every ``--help`` names only commands and flags that exist, and every ``maev <verb>`` the
docs mention runs its ``--help`` (#36 E: `maev sample --help` once sent readers to a `maev plan`
that never existed)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from cli_helpers import run_cli

from maev_kit.cli._main import _LAZY_COMMANDS, cli

ROOT = Path(__file__).resolve().parents[2]
#: ``maev verb`` or ``maev group sub`` as written in a help or a doc (in backticks or a code line).
MENTION = re.compile(r"(?:`|^\s*\$?\s*)maev ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?", re.M)
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]+)")


def _commands() -> dict[str, click.Command]:
    """Every command and sub-command by its path after ``maev`` ("score", "labels export")."""
    ctx = click.Context(cli)
    out: dict[str, click.Command] = {}
    for name in _LAZY_COMMANDS:
        cmd = cli.get_command(ctx, name)
        assert cmd is not None and cmd.name != "unavailable", name
        out[name] = cmd
        if isinstance(cmd, click.Group):
            for sub in cmd.list_commands(ctx):
                got = cmd.get_command(ctx, sub)
                assert got is not None
                out[f"{name} {sub}"] = got
    return out


def _flags(cmd: click.Command) -> set[str]:
    return {o for p in cmd.params if isinstance(p, click.Option) for o in (*p.opts,
                                                                           *p.secondary_opts)}


def _resolve(mention: tuple[str, str], commands: dict[str, click.Command]) -> str | None:
    verb, sub = mention
    if sub and f"{verb} {sub}" in commands:
        return f"{verb} {sub}"
    return verb if verb in commands else None


def _help(path: str, capsys: pytest.CaptureFixture[str]) -> str:
    code, out, err = run_cli([*path.split(), "--help"], capsys)
    assert code == 0, (path, err)
    return out


def test_every_help_names_only_commands_and_flags_that_exist(capsys):
    commands = _commands()
    every_flag = set().union(*(_flags(c) for c in commands.values())) | {"--help", "--version"}
    for path, cmd in commands.items():
        text = " ".join(_help(path, capsys).split())  # click wraps `maev plan` over lines
        for m in MENTION.finditer(text):
            target = _resolve((m.group(1), m.group(2) or ""), commands)
            assert target is not None, f"`maev {path} --help` names `maev {m.group(0)}`"
        for flag in FLAG.findall(text):
            assert flag in every_flag, f"`maev {path} --help` names {flag}, no command has it"
        # a flag written right after a command names one of that command's own flags
        for m in re.finditer(r"`maev ([a-z-]+)(?: ([a-z-]+))?[^`]*?(--[a-z0-9-]+)", text):
            target = _resolve((m.group(1), m.group(2) or ""), commands)
            assert target is not None and m.group(3) in _flags(commands[target]) | {"--help"}, \
                f"`maev {path} --help` names `{m.group(0)}`"


def test_every_maev_verb_in_the_docs_runs_its_help(capsys):
    commands = _commands()
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    seen: dict[str, str] = {}
    for doc in docs:
        text = doc.read_text(encoding="utf-8")
        for m in MENTION.finditer(text):
            target = _resolve((m.group(1), m.group(2) or ""), commands)
            assert target is not None, f"{doc.name}: `maev {m.group(1)}` is not a command"
            seen.setdefault(target, doc.name)
    assert {"init-set", "sample", "calibrate", "score", "check", "report"} <= set(seen)
    for path in seen:
        assert "Usage: maev " + path in _help(path, capsys)
