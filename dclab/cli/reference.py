"""The command line as a Markdown reference, from click's own tree: every command with its
usage, its help and a table of its options as `--help` shows them (the names and value
type, the default `--help` prints, the help without it). docs/reference/cli.md is filled
from it at build time (docs/hooks.py), so the page cannot drift from the code, and shows
no default that `--help` does not (click's sentinel for "no default", or None)."""

from __future__ import annotations

import inspect
import re

import click

# How --help writes a default: click's own suffix ("[default: 1; 1<=x<=1000]", a range or
# "required" after the semicolon), or the text our help strings carry ("[default 100]",
# "[default: the stack's own ...]") for defaults that depend on other options.
DEFAULT = re.compile(r"\s*\[default:?\s+([^\]]*)\]")
NO_DEFAULT = "-"


def _cell(text: str) -> str:
    """``text`` in one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _help(command: click.Command) -> str:
    """The command's whole help as --help prints it (up to click's ``\\f``), its ``\\b``
    paragraphs kept as they are written."""
    text = inspect.cleandoc(command.help or "").split("\f", 1)[0]
    return text.replace("\b\n", "")


def option_row(opts: str, help_text: str) -> tuple[str, str, str]:
    """(names and value type, default, help) of one option's help record."""
    found = DEFAULT.findall(help_text)
    rest = DEFAULT.sub("", help_text).strip()
    if not found:
        return opts, NO_DEFAULT, rest
    default, *more = found[-1].split("; ")  # click's: the default, then the range
    return opts, default.strip(), f"{rest} [{'; '.join(more)}]" if more else rest


def options_table(command: click.Command, ctx: click.Context) -> str:
    rows = []
    for p in command.get_params(ctx):
        record = p.get_help_record(ctx)
        if record is None:  # an argument, or a hidden option
            continue
        opts, default, text = option_row(*record)
        rows.append(f"| `{_cell(opts)}` | {_cell(default)} | {_cell(text)} |")
    if not rows:
        return ""
    return "| option | default | what it does |\n|---|---|---|\n" + "\n".join(rows) + "\n"


def context(app: click.Command, prog: str = "dclab") -> click.Context:
    """The top context, with the settings the command gives its own (as `app()` makes it):
    the help option's names, which every subcommand inherits."""
    return click.Context(app, info_name=prog, **app.context_settings)


def walk(command: click.Command, ctx: click.Context) -> list[tuple[click.Command, click.Context]]:
    """``command`` and every command below it, depth first, in the order --help lists them."""
    out = [(command, ctx)]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                out += walk(sub, click.Context(sub, info_name=name, parent=ctx, **sub.context_settings))
    return out


def markdown(app: click.Command, prog: str = "dclab", level: int = 2) -> str:
    """Every command of ``app`` as a section: heading, usage, help, options."""
    parts = []
    for command, ctx in walk(app, context(app, prog)):
        path = ctx.command_path
        parts.append(f"{'#' * level} {path}\n\n```\n{command.get_usage(ctx)}\n```\n\n{_help(command)}\n\n"
                     + options_table(command, ctx))
    return "\n".join(parts)
