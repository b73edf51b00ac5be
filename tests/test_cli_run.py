"""`dclab run NAME`: options generated from each experiment's model, bad values refused
before anything starts, naming the option (no root needed: nothing starts)."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from dclab.cli import app
from dclab.experiments import experiments, register, unregister
from dclab.experiments.throughput import EXPERIMENT as THROUGHPUT


@pytest.mark.parametrize(
    "args, message",
    [
        (["throughput", "--size", "12XB"], "--size: expected a size like 100MB, 1GB or 5000000 (got '12XB')"),
        (["throughput", "--size", "0"], "--size: must be between 1 B and 100 GB"),
        (["throughput", "--timeout", "0"], "--timeout"),
        (["throughput", "--stack", "quiche"],
         "'quiche' is not one of 'aioquic', 'aioquic-2020', 'mptcp', 'ngtcp2', 'noq', 'quic-go', 'quinn', 'tcp'"),
        (["throughput", "--cc", "vegas"], "aioquic offers reno, cubic, bbr (got 'vegas')"),
        (["throughput", "--stack", "tcp", "--cc", "bbr2"], "tcp offers cubic, reno, bbr (got 'bbr2')"),
        (["throughput", "--udp-buffer", "huge"], "'huge' is not one of 'default', 'large'"),
        (["throughput", "--batch", "0"], "--batch: must be at least 1"),
        (["fairness", "--stacks", "xx=tcp"], "--stacks: expected dc=VALUE,sc1=VALUE,sc2=VALUE"),
        (["fairness", "--stacks", "dc=tcp,sc1=tcp", "--stack", "ngtcp2", "--cc", "bbr2"], "tcp offers cubic, reno, bbr"),
        (["fairness", "--bw", "20,20,20"], "fairness needs two legs"),
        (["fairness", "--duration", "0.5"], "--duration"),
    ],
)
def test_bad_options_are_refused_naming_the_option(args, message, tmp_path):
    r = CliRunner().invoke(app, ["run", *args, "--out", str(tmp_path / "never")])
    assert r.exit_code == 2, r.output
    assert message in " ".join(r.output.split()), r.output
    assert not (tmp_path / "never").exists(), "nothing was started"


def test_every_experiment_explains_its_options():
    for name, exp in experiments().items():
        r = CliRunner().invoke(app, ["run", name, "--help"])
        assert r.exit_code == 0
        # click may wrap a line after a hyphen ("mquic-\n cwnd"): join such words again.
        text = re.sub(r"(\w)- (\w)", r"\1-\2", " ".join(r.output.split()))
        assert exp.help.split(":")[0] in text
        for field, info in exp.options_model.model_fields.items():
            assert "--" + field.replace("_", "-") in text
            assert info.description and info.description.split(" [")[0] in text


def test_an_experiment_name_is_registered_once():
    class Twin(type(THROUGHPUT)):  # type: ignore[misc]
        pass

    with pytest.raises(ValueError, match="registered twice"):
        register(Twin())
    unregister("nothing-by-that-name")  # harmless
