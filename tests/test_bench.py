"""bench/run.py's pure parts: arguments, medians, the table and its targets, where the
outputs go. No namespaces, no root: the measuring is replaced by a function that fills in
figures (or raises)."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the bench is not an installed package
import bench.figures as figures
import bench.run as run
import bench.table as table

PAGE = """# Benchmarks

Some text before.

## The sections

Prose that stays.

<!-- bench:start -->
| old | table |
<!-- bench:end -->

## After the table

Text after.
"""


@pytest.fixture
def bench():
    """bench/run.py: arguments, outputs and main."""
    return run


@pytest.fixture
def paths(bench, tmp_path):
    page = tmp_path / "benchmarks.md"
    page.write_text(PAGE)
    tracked = tmp_path / "bench" / "results.json"
    tracked.parent.mkdir()
    tracked.write_text('{"old": true}\n')
    return bench.Paths(out_dir=tmp_path / "bench" / "out", page=page, tracked_json=tracked)


def fake_measure(results: dict, sections: list[str]) -> None:
    for v in (4.4, 4.1, 4.2)[: results["repeats"]]:
        if "kernel" in sections:
            figures.add(results, "kernel.tcp_gbps", 10.0)
            figures.add(results, "kernel.rtt_p50_us", 40.0)
        if "unlimited" in sections:
            figures.add(results, "unlimited.tcp_gbps", v)
            figures.add(results, "unlimited.added_rtt_p50_us", 45.0)
            figures.add(results, "unlimited.lost_packets", 0)
        if "rate" in sections:
            figures.add(results, "rate.error_pct_20mbit", 0.2)


@pytest.fixture
def fake(bench, monkeypatch):
    """No root check, no git or uname, no network: measuring fills in figures."""
    monkeypatch.setattr(bench, "preflight", lambda: None)
    monkeypatch.setattr(bench, "environment", lambda: {"measured_at": "2026-01-01 00:00:00", "kernel": "6.18", "cpus": 2,
                                                       "git_commit": "abc1234", "dcemu_version": "dcemu 0.1.0"})
    monkeypatch.setattr(bench, "measure_sections", fake_measure)
    return bench


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_default_run_writes_only_under_out_dir(fake, paths, tmp_path, capsys):
    before = files_under(tmp_path)
    assert fake.main(["--repeats", "3"], paths) == 0
    after = files_under(tmp_path)
    changed = {k for k in after if before.get(k) != after[k]}
    assert changed and all(k.startswith("bench/out/") for k in changed)
    assert paths.page.read_text() == PAGE
    assert paths.tracked_json.read_text() == '{"old": true}\n'
    names = sorted(p.name for p in paths.out_dir.iterdir())
    assert len(names) == 3 and names[0] == "latest.json" and names[1].startswith("results-") and names[2] == "table.md"
    assert names[1] != "results.partial.json"
    latest = json.loads((paths.out_dir / "latest.json").read_text())
    assert latest == json.loads((paths.out_dir / names[1]).read_text())
    fig = latest["figures"]["unlimited.tcp_gbps"]
    assert fig["runs"] == [4.4, 4.1, 4.2] and fig["median"] == 4.2
    assert latest["environment"]["git_commit"] == "abc1234" and latest["repeats"] == 3
    table = (paths.out_dir / "table.md").read_text()
    assert "4.20 Gbit/s (runs 4.40, 4.10, 4.20)" in table
    assert table.strip() in capsys.readouterr().out


@pytest.mark.parametrize("option", ["--update-docs", "--update-readme"])  # the old name still works
def test_update_docs_rewrites_only_between_markers(fake, paths, capsys, option):
    assert fake.main([option, "--repeats", "1"], paths) == 0
    text = paths.page.read_text()
    start, end = "<!-- bench:start -->", "<!-- bench:end -->"
    assert text[: text.index(start)] == PAGE[: PAGE.index(start)]
    assert text[text.index(end):] == PAGE[PAGE.index(end):]
    table = (paths.out_dir / "table.md").read_text()
    assert text[text.index(start) + len(start): text.index(end)] == "\n" + table
    assert "| old | table |" not in text
    assert json.loads(paths.tracked_json.read_text()) == json.loads((paths.out_dir / "latest.json").read_text())


def test_update_docs_needs_the_full_bench(fake, paths, capsys):
    with pytest.raises(SystemExit) as e:
        fake.main(["--update-docs", "--only", "kernel"], paths)
    assert e.value.code == 2
    assert "--update-docs" in capsys.readouterr().err
    assert paths.page.read_text() == PAGE and not paths.out_dir.exists()


@pytest.mark.parametrize("bad", ["0", "21", "-1", "x", "2.5"])
def test_bad_repeats_refused(bench, capsys, bad):
    with pytest.raises(SystemExit) as e:
        bench.parse_args(["--repeats", bad])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--repeats" in err and "from 1 to 20" in err


def test_good_repeats_and_default(bench):
    assert bench.parse_args([]).repeats == 3
    assert bench.parse_args(["--repeats", "1"]).repeats == 1
    assert bench.parse_args(["--repeats", "20"]).repeats == 20


@pytest.mark.parametrize("bad", ["foo", "kernel,foo", "", "kernel,"])
def test_bad_only_refused(bench, capsys, bad):
    with pytest.raises(SystemExit) as e:
        bench.parse_args(["--only", bad])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--only" in err
    assert "valid sections: kernel, unlimited, delay, lateness, dc5g, rate, offload" in err


def test_only_runs_in_the_bench_order(bench):
    assert bench.parse_args([]).only == list(figures.SECTIONS)
    assert bench.parse_args(["--only", "rate,kernel,rate"]).only == ["kernel", "rate"]


def test_help_explains_each_option(bench, capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(["--help"])
    out = capsys.readouterr().out
    for word in ("--repeats", "--only", "--update-docs", *figures.SECTIONS):
        assert word in out


def test_median_runs(bench):
    assert figures.median_runs([3.0, 1.0, 2.0]) == 2.0
    assert figures.median_runs([1.0, 2.0, 3.0, 4.0]) == 2.5
    assert figures.median_runs([7.0]) == 7.0
    with pytest.raises(ValueError):
        figures.median_runs([])


def test_figure_shows_median_and_every_run(bench):
    r = figures.new_results(3, list(figures.SECTIONS))
    for v in (2.38, 2.50, 2.41):
        figures.add(r, "unlimited.tcp_gbps", v)
    assert figures.fmt_figure("unlimited.tcp_gbps", r["figures"]["unlimited.tcp_gbps"]) == "2.41 Gbit/s (runs 2.38, 2.50, 2.41)"
    with pytest.raises(KeyError):
        figures.add(r, "no.such_figure", 1.0)


def row(bench, dcemu_key):
    return next(x for x in table.ROWS if x.dcemu == dcemu_key)


def results_with(bench, **figs):
    r = figures.new_results(1, list(figures.SECTIONS))
    for key, runs in figs.items():
        for v in runs:
            figures.add(r, key.replace("__", "."), v)
    return r


@pytest.mark.parametrize("key,runs,met", [
    ("unlimited.added_rtt_p50_us", [50.0], True),
    ("unlimited.added_rtt_p50_us", [49.0, 51.0, 52.0], False),  # the median decides
    ("unlimited.added_rtt_p99_us", [150.0], True),
    ("unlimited.added_rtt_p99_us", [150.5], False),
    ("unlimited.udp_kpps", [199.0], False),
    ("unlimited.udp_kpps", [100.0, 201.0, 250.0], True),
    ("unlimited.cpu_s_per_gb", [2.0], True),
    ("unlimited.cpu_s_per_gb", [2.01], False),
    ("unlimited.lost_packets", [0.0], True),
    ("unlimited.lost_packets", [1.0], False),
    ("delay.tcp_gbps", [2.0], True),
    ("delay.tcp_gbps", [1.99], False),
    ("delay.rtt_error_p99_ms", [0.2], True),
    ("delay.rtt_error_p99_ms", [0.21], False),
    ("lateness.lateness_p99_us", [199.9], True),
    ("lateness.lateness_p99_us", [204.8], False),
    ("dc5g.tcp_gbps", [1.8], True),
    ("dc5g.tcp_gbps", [1.79], False),
    ("rate.error_pct_20mbit", [-0.9], True),
    ("rate.error_pct_1gbit", [-1.2], False),
    ("rate.error_pct_1gbit", [1.01], False),
])
def test_met_follows_the_median(bench, key, runs, met):
    r = results_with(bench, **{key.replace(".", "__"): runs})
    cell = table.target_cell(row(bench, key), r["figures"])
    assert cell.endswith(": met" if met else ": not met")
    assert f"{cell} |" in table.render_table(r)


@pytest.mark.parametrize("dcemu,kernel,met,pct", [
    ([4.1], [10.0], True, "41 %"),
    ([4.1], [12.0], False, "34 %"),  # >= 4 Gbit/s but < 40 % of the kernel
    ([3.9], [5.0], False, "78 %"),  # >= 40 % but < 4 Gbit/s
])
def test_tcp_unlimited_target_needs_both_parts(bench, dcemu, kernel, met, pct):
    r = results_with(bench, unlimited__tcp_gbps=dcemu, kernel__tcp_gbps=kernel)
    cell = table.target_cell(row(bench, "unlimited.tcp_gbps"), r["figures"])
    assert f"this run: {pct}" in cell
    assert cell.endswith(": met" if met else ": not met")


def test_rows_without_a_target_show_dash(bench):
    r = results_with(bench, dc5g__ngtcp2_gbps=[1.0])
    line = next(x for x in table.render_table(r).splitlines() if x.startswith("| ngtcp2"))
    assert line.endswith("| - | - |")


def test_table_shows_only_what_was_measured(bench):
    r = results_with(bench, kernel__tcp_gbps=[10.0], kernel__udp_kpps=[240.0])
    r["sections"] = ["kernel"]
    lines = [x for x in table.render_table(r).splitlines() if x.startswith("| ") and "---" not in x]
    assert len(lines) == 3  # header, TCP, UDP
    assert "| - | 10.00 Gbit/s (runs 10.00) |" in lines[1]
    assert "sections: kernel" in table.render_table(r)


def test_skipped_section_is_said(bench):
    r = figures.new_results(1, ["offload"])
    r["skipped"]["offload"] = "dcemu run --help does not list --tun-offload"
    assert "Skipped `offload`: dcemu run --help does not list --tun-offload." in table.render_table(r)


def test_partial_result_when_measuring_raises(fake, paths, monkeypatch):
    def broken(results, sections):
        figures.add(results, "kernel.tcp_gbps", 12.5)
        raise RuntimeError("iperf3 died")

    monkeypatch.setattr(fake, "measure_sections", broken)
    with pytest.raises(RuntimeError, match="iperf3 died"):
        fake.main(["--repeats", "1"], paths)
    partial = json.loads((paths.out_dir / "results.partial.json").read_text())
    assert partial["figures"]["kernel.tcp_gbps"]["runs"] == [12.5]
    assert sorted(p.name for p in paths.out_dir.iterdir()) == ["results.partial.json"]
    assert paths.page.read_text() == PAGE and paths.tracked_json.read_text() == '{"old": true}\n'


def test_interrupt_keeps_partial_and_exits_130(fake, paths, monkeypatch):
    def interrupted(results, sections):
        figures.add(results, "unlimited.tcp_gbps", 3.0)
        raise KeyboardInterrupt

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(fake, "measure_sections", interrupted)
    assert fake.main(["--update-docs"], paths) == 130
    assert json.loads((paths.out_dir / "results.partial.json").read_text())["figures"]["unlimited.tcp_gbps"]["median"] == 3.0
    assert paths.page.read_text() == PAGE
    assert signal.getsignal(signal.SIGTERM) == before


def test_replace_between_markers_refuses_a_page_without_them(bench):
    with pytest.raises(ValueError):
        table.replace_between_markers("no markers here", "| t |")


def test_the_benchmarks_page_holds_the_table_markers(bench):
    """--update-docs rewrites docs/explanation/benchmarks.md between its markers: both are there, in order."""
    text = bench.Paths().page.read_text()
    assert text.index(table.START) < text.index(table.END)


def test_the_sim_section_reads_the_campaigns_count_and_the_runs_last_record(tmp_path):
    import gzip

    import bench.sim as sim

    out = "[4/4] trace: fairness ...: ok\ndone: 104 runs stored ok, 0 failed; store /tmp/x/paper/store.sqlite\n"
    assert sim.runs_done(out) == 104
    with pytest.raises(RuntimeError, match="no 'done:' line"):
        sim.runs_done("interrupted\n")
    with gzip.open(tmp_path / "dcemu-stats.jsonl.gz", "wt") as f:
        f.write(json.dumps({"type": "summary", "t_ms": 1.0}) + "\n")
        f.write(json.dumps({"type": "sim", "events_per_s": 1.8e6, "wall_s": 0.06, "instants": 61866}) + "\n")
    assert sim.sim_record(tmp_path)["events_per_s"] == 1.8e6
    with gzip.open(tmp_path / "dcemu-stats.jsonl.gz", "wt") as f:
        f.write(json.dumps({"type": "summary", "t_ms": 1.0}) + "\n")
    with pytest.raises(RuntimeError, match="not the simulation's"):
        sim.sim_record(tmp_path)
    # Its figures have rows in the table, one with the target.
    assert {"sim.endc_events_per_s", "sim.endc_run_s", "sim.paper_runs_per_s"} <= set(figures.FIGURES)
    row = next(r for r in table.ROWS if r.dcemu == "sim.paper_runs_per_s")
    assert row.target is not None and row.target.met(23.2) and not row.target.met(5.4)
