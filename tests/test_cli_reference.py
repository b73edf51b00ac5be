"""The CLI reference page's content (dclab/cli/reference.py, filled into
docs/reference/cli.md at build time): every command, and each option's default as `--help`
shows it, never click's sentinel for "no default" nor a bare None."""

from __future__ import annotations

import re

import click

from dclab.cli import app
from dclab.cli.reference import NO_DEFAULT, context, markdown, option_row, walk


def rows(text: str, command: str) -> dict[str, tuple[str, str]]:
    """The options table of ``command``'s section: option names -> (default, help)."""
    section = text.split(f"## {command}\n", 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        m = re.fullmatch(r"\| `(.+?)` \| (.*?) \| (.*) \|", line)
        if m:
            out[m.group(1)] = (m.group(2), m.group(3))
    return out


def test_every_command_has_a_section_and_no_default_is_a_placeholder():
    text = markdown(app)
    commands = [ctx.command_path for _, ctx in walk(app, context(app))]
    assert {f"dclab {name}" for name in app.list_commands(click.Context(app))} < set(commands)
    assert "dclab run throughput" in commands and "dclab campaign run" in commands and "dclab cell trace" in commands
    for path in commands:
        assert f"## {path}\n" in text, path
    assert "Sentinel" not in text and "UNSET" not in text
    defaults = [d for line in text.splitlines() if (m := re.fullmatch(r"\| `.+?` \| (.*?) \| .* \|", line))
                for d in [m.group(1)]]
    assert len(defaults) > 300 and "None" not in defaults


def test_defaults_are_those_help_prints():
    text = markdown(app)
    tput = rows(text, "dclab run throughput")
    assert tput["--bw TEXT"] == ("20,20", "Downlink rate per leg in Mbit/s, e.g. 20,20.")
    assert tput["--batch INTEGER"][0] == "100"
    stack = next(v for k, v in tput.items() if k.startswith("--stack"))
    assert stack[0] == "aioquic"
    reps = next(v for k, v in tput.items() if k.startswith("--reps"))
    assert reps[0] == "1" and "1<=x<=1000" in reps[1], "click's range stays with the help"
    assert tput["-h, --help"] == (NO_DEFAULT, "Show this message and exit.")


def test_a_help_record_splits_into_default_and_text():
    assert option_row("--bw TEXT", "Rate, e.g. 20,20 [default 20,20].") == ("--bw TEXT", "20,20", "Rate, e.g. 20,20.")
    assert option_row("--reps INTEGER RANGE", "Repetitions.  [default: 1; 1<=x<=1000]") == (
        "--reps INTEGER RANGE", "1", "Repetitions. [1<=x<=1000]")
    assert option_row("--x", "No default here.") == ("--x", NO_DEFAULT, "No default here.")


def test_each_scenario_option_shows_the_model_s_default():
    """A scenario option's "[default ...]" is the scenario model's default, not a copy of it
    that could drift (dclab/cli/options.py, _shown): every one shown is checked against the
    model, and a changed model default changes what --help says."""
    from dclab.cli import options
    from dclab.scenario import Scenario

    tput = rows(markdown(app), "dclab run throughput")
    fields = {"--batch INTEGER": "batch", "--split TEXT": "split", "--bw TEXT": "bw", "--delay TEXT": "delay",
              "--delay-cov FLOAT": "delay_cov", "--loss TEXT": "loss", "--queue INTEGER": "queue_packets",
              "--uplink-bw FLOAT": "uplink_bw", "--uplink-queue INTEGER": "uplink_queue_packets",
              "--t-reordering TEXT": "t_reordering", "--hold-bytes BYTES": "hold_bytes", "--discard-ms MS": "discard_ms"}
    for option, field in fields.items():
        default = Scenario.model_fields[field].default
        values = default if isinstance(default, list) else [default]
        shown = tput[option][0]
        assert [float(v) for v in re.split("[,:]", shown)] == [float(v) for v in values], (option, shown)
    model = Scenario.model_fields["hold_bytes"]
    saved = model.default
    try:
        model.default = 123456
        assert options._shown("hold_bytes") == "123456"
    finally:
        model.default = saved
