"""What dclab refuses, and that refusing loses nothing: outputs never clobber a device,
FIFO, symlink or directory; names from campaign files and stores never escape into paths,
HTML or shell scripts; input files are regular files below a size limit; the state a root
tool acts on must be its own. Nothing here starts a testbed. The stores' own cases are in
test_store_safety.py, the cluster's in test_cluster_security.py, dcemu's in
emu/tests/bad_input.rs."""

from __future__ import annotations

import multiprocessing
import os
import random
import resource
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from dclab import files
from dclab import scenario as sc
from dclab.campaign import fidelity
from dclab.campaign import plan as cp
from dclab.campaign.plan import CampaignFileError
from dclab.campaign.report import build_report
from dclab.campaign.slurm import write_sbatch
from dclab.campaign.store import RunRecord, Store
from dclab.cli import app
from dclab.endpoints.base import Workload
from dclab.errors import InputError, OptionError
from dclab.experiments.base import PacketSizeOptions, plan_with_packet_sizes
from dclab.files import FileRefused
from dclab.flowplan import Flow, PlanError, parse_assignments, single_bearer_plan
from dclab.paths import DCEMU, ROOT

HUGE = 65 * 1024 * 1024  # above files.INPUT_LIMIT
pytestmark = pytest.mark.usefixtures("no_hang")  # conftest.py: a test blocked on a FIFO fails after 60 s


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    r = CliRunner().invoke(app, list(args), env=env)
    assert r.exception is None or isinstance(r.exception, SystemExit), (args, r.output, r.exception)
    assert "Traceback" not in r.output, r.output
    return r.exit_code, " ".join(r.output.split())


def specials(tmp_path: Path) -> dict[str, Path]:
    """A FIFO, a symlink to a file (whose content must survive) and a directory."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    target = tmp_path / "target.txt"
    target.write_text("keep me\n")
    link = tmp_path / "link"
    link.symlink_to(target)
    d = tmp_path / "dir"
    d.mkdir()
    return {"a FIFO": fifo, "a symlink": link, "a directory": d}


def unchanged(tmp_path: Path) -> None:
    assert (tmp_path / "target.txt").read_text() == "keep me\n"
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)
    assert (tmp_path / "link").is_symlink() and (tmp_path / "dir").is_dir()


# --- files.py itself ---------------------------------------------------------------------

def test_output_file_never_replaces_a_special_file_and_keeps_the_old_one_on_failure(tmp_path):
    for kind, path in specials(tmp_path).items():
        with pytest.raises(FileRefused, match=f"is {kind}"):
            files.write_output(path, "x", "--out")
    unchanged(tmp_path)
    old = tmp_path / "old.csv"
    old.write_text("old\n")
    with pytest.raises(RuntimeError), files.output_file(old, "--csv") as tmp:
        tmp.write_text("half")
        raise RuntimeError("export failed")
    assert old.read_text() == "old\n" and [p.name for p in tmp_path.glob(".old.csv*")] == []
    files.write_output(old, "new\n", "--csv")
    assert old.read_text() == "new\n"


def test_inputs_must_be_regular_files_below_the_limit(tmp_path):
    for kind, path in specials(tmp_path).items():
        if kind == "a symlink":
            assert files.read_input(path, "x") == "keep me\n"  # a link to a regular file is read
            continue
        t = time.monotonic()
        with pytest.raises(FileRefused, match=f"is {kind}, not a regular file"):
            files.read_input(path, "--scenario")
        assert time.monotonic() - t < 1  # a FIFO is refused, not waited on
    with pytest.raises(FileRefused, match="is a character device"):
        files.read_input("/dev/zero", "--scenario")
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate(HUGE)  # sparse: nothing is written, nothing may be read
    with pytest.raises(FileRefused, match=f"is {HUGE} bytes; at most {files.INPUT_LIMIT}"):
        files.read_input(big, "--scenario")
    (tmp_path / "latin1.toml").write_bytes(b"batch = 1 # \xe9\n")
    with pytest.raises(FileRefused, match=r"is not UTF-8 text \(byte 12\)"):
        files.read_input(tmp_path / "latin1.toml", "--scenario")


def test_names_and_slugs():
    for good in ("paper", "lte-study", "a.b_c-1", "x" * 64):
        assert files.check_name(good, "name") == good
    for bad in ("", "../x", "/etc", "a b", "a\nb", ".hidden", "x" * 65, "é", "a;b", "$(id)"):
        with pytest.raises(FileRefused, match="is not a valid name"):
            files.check_name(bad, "name")
    for hostile in ("../../etc/passwd", "/abs", "..", ".", "", "a/b\\c", "<script>"):
        s = files.slug(hostile)
        assert s and "/" not in s and s not in (".", "..") and not s.startswith(".")
    assert files.clip("x" * 10**6).endswith("(1000000 characters)") and len(files.clip("x" * 10**6)) < 160


# --- outputs of the commands ------------------------------------------------------------

def test_cut_trace_never_writes_through_a_symlink(tmp_path):
    src = tmp_path / "g.csv"
    src.write_text("Timestamp,RSRP,CQI,DL_bitrate,State\n" + "".join("t,-85,12,5000,D\n" for _ in range(40)))
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "target.txt"
    target.write_text("keep me\n")
    (out / "g-good.csv").symlink_to(target)
    code, text = invoke("cell", "cut-trace", str(src), "--by", "cqi", "--out", str(out), "--levels", "good", "--force")
    assert code == 2 and "g-good.csv is a symlink; dclab writes only over a regular file or nothing" in text, text
    assert target.read_text() == "keep me\n" and (out / "g-good.csv").is_symlink()


def test_cell_trace_refuses_a_fifo_and_writes_a_file(tmp_path):
    if not (ROOT / "emu/target/release/dcemu").exists():
        pytest.skip("dcemu not built")  # make test builds it first
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code, text = invoke("cell", "trace", "--link", "lte:good", "--seconds", "1", "--out", str(fifo))
    assert code == 2 and "is a FIFO; dclab writes only over a regular file or nothing" in text
    code, _ = invoke("cell", "trace", "--link", "lte:good", "--seconds", "1", "--out", str(tmp_path / "t.txt"))
    assert code == 0 and len((tmp_path / "t.txt").read_text().split()) > 1000
    assert not list(tmp_path.glob(".t.txt*"))


def test_run_out_that_cannot_be_a_run_directory(tmp_path):
    (tmp_path / "file").write_text("x")
    code, text = invoke("run", "throughput", "--out", str(tmp_path / "file" / "sub"))
    assert code == 2 and "--out: cannot use" in text and "Not a directory" in text, text
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    code, text = invoke("run", "throughput", "--out", str(link))
    assert code == 2 and "is a symlink, not a directory" in text, text
    # A path the system cannot take is refused without being echoed whole.
    for long in (tmp_path / ("a" * 5000), tmp_path / ("d" * 200) / ("e" * 200) / ("f" * 4000)):
        code, text = invoke("run", "throughput", "--out", str(long))
        assert code == 2 and "the system takes at most 4095 and 255" in text and len(text) < 600, text
    with pytest.raises(FileRefused, match="a name of 300"):
        files.check_output(tmp_path / ("x" * 300), "--out")


def test_figures_are_never_written_through_a_symlink(tmp_path, monkeypatch):
    store = hostile_store(tmp_path)
    out = tmp_path / "report"
    out.mkdir()
    target = tmp_path / "target.txt"
    target.write_text("keep me\n")
    (out / "index.html").symlink_to(target)
    code, text = invoke("report", "--store", str(store.path), "--out", str(out))
    assert code == 1 and "index.html is a symlink" in text, text
    assert target.read_text() == "keep me\n"


# --- names ---------------------------------------------------------------------------------

def campaign_file(tmp_path: Path, name: str, head: str = "", group: str = "") -> Path:
    p = tmp_path / name
    p.write_text(head + '[[group]]\nconfigs = [{stack = "tcp"}]\nsweeps = ["batch"]\n' + group)
    return p


@pytest.mark.parametrize("head, fragment", [
    ('name = "x\\nrm -rf /"\n', "name: 'x\\nrm -rf /' is not a valid name"),
    ('name = "../../escaped"\n', "name: '../../escaped' is not a valid name"),
    ('name = "/abs"\n', "name: '/abs' is not a valid name"),
])
def test_campaign_names_follow_the_grammar(tmp_path, head, fragment):
    code, text = invoke("campaign", "plan", str(campaign_file(tmp_path, "c.toml", head)))
    assert code == 2 and fragment in text, text
    code, text = invoke("campaign", "sbatch", str(campaign_file(tmp_path, "c.toml", head)), "--shards", "1",
                        "--out", str(tmp_path / "slurm"))
    assert code == 2 and fragment in text and not (tmp_path / "slurm").exists(), text


def test_campaign_file_names_and_group_names(tmp_path):
    code, text = invoke("campaign", "plan", str(campaign_file(tmp_path, "a b.toml")))
    assert code == 2 and "the file's name (the campaign's name): 'a b' is not a valid name" in text, text
    code, text = invoke("campaign", "plan", str(campaign_file(tmp_path, "c.toml", group='name = "g;x"\n')))
    assert code == 2 and "group[0].name: 'g;x' is not a valid name" in text, text
    code, text = invoke("campaign", "plan", "../../etc/passwd")
    assert code == 2 and "a campaign is a name in campaigns/ or a .toml file" in text, text
    code, text = invoke("sweep", "--param", "batch=1", "--name", "../out", "--plan")
    assert code == 2 and "'../out' is not a valid name" in text, text


def test_sbatch_scripts_quote_what_they_interpolate(tmp_path, monkeypatch):
    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path / "results"))
    for bad in ("$(touch pwned)", "a`id`", 'x"y'):
        with pytest.raises(OptionError, match="--out: a path of letters, digits"):
            write_sbatch("smoke", 1, tmp_path / bad)
    paths = write_sbatch("smoke", 2, tmp_path / "s", command_line="dclab campaign sbatch smoke --group 'x\nrm -rf /'")
    for p in paths:
        text = p.read_text()
        assert "\nrm -rf" not in text and "--group 'x\\x0arm -rf /'" in text.split("\n")[2], text[:300]
        assert stat.S_IMODE(p.stat().st_mode) == 0o755
        assert subprocess.run(["bash", "-n", str(p)]).returncode == 0
    target = tmp_path / "target.txt"
    target.write_text("keep me\n")
    (tmp_path / "s" / "submit.sh").unlink()
    (tmp_path / "s" / "submit.sh").symlink_to(target)
    with pytest.raises(OptionError, match="submit.sh is a symlink"):
        write_sbatch("smoke", 2, tmp_path / "s")
    assert target.read_text() == "keep me\n"


def hostile_store(tmp_path: Path) -> Store:
    """Runs whose experiment, sweep, value, rep and key are what a hostile store could hold."""
    store = Store(tmp_path / "store.sqlite")
    for i, (exp, sweep) in enumerate([("<script>alert(1)</script>", "../../../../tmp/x"),
                                      ("../../../../escaped", "<img src=x onerror=alert(2)>"),
                                      ("throughput", "batch\" onmouseover=\"alert(3)")]):
        for rep in (1, 2):
            store.add(RunRecord(
                run_key=f"../../../../k{i}{rep}", experiment=exp, sweep=sweep, param="p</td><script>", value="1",
                value_num=1.0, stack="tcp", cc="cubic", host_config="<b>tcp</b>", rep=rep, ok=rep == 1,
                error="<script>alert(4)</script>", scenario={}, metrics={"goodput_mbps": 10.0},
                environment={"kernel": "<script>alert(5)</script>"}, run_dir="../../../../etc",
                machine="<i>m</i>", started_at="2026", finished_at="2026", campaign="c"))
    return store


def test_report_shows_control_characters_as_escapes_and_long_labels_cut(tmp_path):
    """NUL, U+202E and an escape sequence from a store reach the page as escapes; a
    100,000-character value is cut where it labels a figure or a table."""
    from test_store import rec

    store = Store(tmp_path / "store.sqlite")
    for rep, value in ((1, "a\x00b\u202ec\x1b[2J"), (1, "v" * 100_000)):
        store.add(rec(f"k{len(value)}", value=value, value_num=None, rep=rep, sweep="batch", param="batch",
                      error="x\u202ey"))
    page = build_report(store, tmp_path / "report", "t").read_text()
    assert "\x00" not in page and "\u202e" not in page and "\x1b" not in page
    assert "a\\x00b\\u202ec\\x1b[2J" in page
    assert "v" * 121 not in page and "(100000 characters)" in page


def test_report_and_plot_keep_hostile_names_inside_out_and_escaped(tmp_path):
    store = hostile_store(tmp_path)
    out = tmp_path / "deep" / "er" / "report"
    index = build_report(store, out, "<script>alert(0)</script>")
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix in (".png", ".html")]
    assert written and all(out in p.parents for p in written), written
    page = index.read_text()
    for n in range(6):
        assert f"<script>alert({n})" not in page
    assert "onerror=alert" not in page.replace("onerror=alert(2)&gt;", "") and '" onmouseover="' not in page
    assert "&lt;script&gt;alert(0)&lt;/script&gt;" in page
    plots = tmp_path / "plots"
    code, text = invoke("plot", "--store", str(store.path), "--out", str(plots))
    assert code == 0, text
    code, text = invoke("plot", "--store", str(store.path), "--out", str(plots), "--run", "../../../../k01")
    assert code == 0, text
    written = [p for p in tmp_path.rglob("*.png") if out not in p.parents]
    assert written and all(plots in p.parents for p in written), written
    code, text = invoke("plot", "--store", str(store.path), "--run", "")
    assert code == 2 and "--run: give a run key or a unique prefix of one" in text, text


# --- bounds --------------------------------------------------------------------------------

def test_a_campaign_that_multiplies_into_millions_is_refused_before_planning(tmp_path):
    many = ", ".join(f'{{stack = "tcp", cc = "{cc}"}}' for cc in ("cubic", "reno")) + ', {stack = "aioquic"}'
    p = tmp_path / "big.toml"
    p.write_text(f'reps = 1000\n[[group]]\nexperiments = ["throughput"]\nconfigs = [{many}]\n'
                 'sweeps = [{name = "batch", range = [1, 10000, 1]}, {name = "split", range = [1, 99, 0.01]}]\n')
    t = time.monotonic()
    code, text = invoke("campaign", "plan", str(p))
    assert code == 2 and "campaign big has 59,403,000 runs, more than 100,000: give --max-runs 59403000" in text, text
    assert time.monotonic() - t < 10
    code, text = invoke("campaign", "sbatch", str(p), "--shards", "2", "--out", str(tmp_path / "s"))
    assert code == 2 and "more than 100,000" in text and not (tmp_path / "s").exists()
    for name in ("smoke", "lte-smoke", "mquic-smoke"):  # the count is the plan's, before shared runs merge
        c = cp.load(name)
        assert cp.run_count(c) == len(cp.plan(c)) or name == "lte-smoke"
        with pytest.raises(OptionError, match=f"more than {cp.run_count(c) - 1}"):
            cp.plan(c, max_runs=cp.run_count(c) - 1)
        code, _ = invoke("campaign", "plan", name, "--max-runs", str(cp.run_count(c)))
        assert code == 0


def in_bounded_child(fn: Callable[[], None]) -> None:
    """Runs ``fn`` in a forked child with 2 GB more address space than it starts with and
    30 s: a regression that reads /dev/zero whole fails the test, not the machine."""
    ctx = multiprocessing.get_context("fork")
    errors = ctx.SimpleQueue()

    def child() -> None:
        vm = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (vm + (2 << 30), vm + (2 << 30)))
        try:
            fn()
            errors.put("")
        except BaseException as e:  # noqa: BLE001 - sent to the parent, which fails with it
            errors.put(f"{type(e).__name__}: {e}")

    p = ctx.Process(target=child, daemon=True)
    p.start()
    try:
        p.join(30)  # before no_hang's alarm
        if p.is_alive():
            pytest.fail("blocked for 30 s")
    finally:
        if p.is_alive():
            p.kill()
            p.join()
    assert p.exitcode == 0 and not errors.empty(), f"the child died (exit {p.exitcode})"
    assert errors.get() == ""


@pytest.mark.parametrize("make", ["fifo", "dev", "huge", "dir"])
def test_input_files_of_every_reader_are_checked(tmp_path, make):
    path = {"fifo": tmp_path / "in.toml", "dev": Path("/dev/zero"), "huge": tmp_path / "in.toml",
            "dir": tmp_path / "in.toml"}[make]
    if make == "fifo":
        os.mkfifo(path)
    elif make == "huge":
        with open(path, "wb") as f:
            f.truncate(HUGE)
    elif make == "dir":
        path.mkdir()
    expect = {"fifo": "is a FIFO, not a regular file", "dev": "is a character device, not a regular file",
              "huge": f"is {HUGE} bytes; at most", "dir": "is a directory"}[make]

    def readers() -> None:
        t = time.monotonic()
        with pytest.raises(sc.ScenarioError, match=expect):
            sc.load(path)
        with pytest.raises(OptionError, match=expect):
            fidelity.load_reference(path)
        if make != "dev":  # a campaign is a .toml path or a name
            with pytest.raises(CampaignFileError, match=expect):
                cp.load(str(path))
        with pytest.raises(sc.ScenarioError, match=expect.split(",")[0].split(";")[0]):
            sc.build(trace=path)
        assert time.monotonic() - t < 5

    in_bounded_child(readers)


def test_echoed_input_is_cut(tmp_path):
    long = "9," * 500_000
    for args in (["scenario", "show", "--split", long], ["scenario", "show", "--t-reordering", long],
                 ["scenario", "show", "--link", "lte:" + long]):
        code, text = invoke(*args)
        assert code == 2 and len(text) < 600 and "characters)" in text, (args[:3], text[:300])


# --- messages --------------------------------------------------------------------------------

@pytest.mark.parametrize("text, fragment", [
    ("batch = true\n", "batch: expected a number, not true"),
    ("bw = [20, true]\n", "bw: expected a number, not [20, true]"),
    ('link = "lte:good"\nbw = [20.0, 20.0]\n', "bw: not used with link"),
    ("a = " + "[" * 3000 + "]" * 3000 + "\n", "arrays or tables nested too deeply"),
    ("batch = [\n", "is not valid TOML"),
    ('t_reordering = "INF"\n', None),
])
def test_scenario_file_messages(tmp_path, text, fragment):
    p = tmp_path / "s.toml"
    p.write_text(text)
    if fragment is None:
        assert sc.load(p).t_reordering is None
        return
    with pytest.raises(sc.ScenarioError, match=fragment.replace("[", r"\[")):
        sc.load(p)


@pytest.mark.parametrize("args, fragment", [
    (["--t-reordering", "INF"], None),
    (["--t-reordering", "Infinity"], None),
    (["--t-reordering", "5,5"], "--t-reordering: expected one value in ms (0 to 60000), or 'inf' (got '5,5')"),
    (["--link", "lte:good", "--bw", "20,20"], "--bw: not used with --link"),
])
def test_scenario_option_messages(args, fragment):
    code, text = invoke("scenario", "show", *args)
    if fragment is None:
        assert code == 0 and 't_reordering = "inf"' in text, text
    else:
        assert code == 2 and fragment in text, text


def test_flow_given_twice_and_seed_that_overflows():
    with pytest.raises(PlanError, match="--stacks: dc given twice \\('aioquic' and 'tcp'\\)"):
        parse_assignments("dc=aioquic,dc=tcp", ["dc", "sc1", "sc2"], "--stacks")
    code, text = invoke("run", "throughput", "--seed", str(sc.MAX_SEED), "--reps", "2")
    assert code == 2 and f"with --reps 2 the seed is at most {sc.MAX_SEED - 1}" in text, text
    p_ok = cp.Campaign(name="c", reps=3, groups=[{"configs": ["tcp"], "sweeps": ["batch"],
                                                  "scenario": {"seed": sc.MAX_SEED - 1}}])
    with pytest.raises(sc.ScenarioError, match="with 3 repetitions at most"):
        cp.plan(p_ok)


def test_the_default_mss_fits_the_smallest_mtu():
    s = sc.build(mtu=1280)
    plan = single_bearer_plan(s, [Flow("dc", "tcp", "dc", Workload(objects=(64 * 1000,)), "cubic")])
    assert plan_with_packet_sizes(plan, s, PacketSizeOptions()).tcp_mss == 1240
    assert plan_with_packet_sizes(plan, sc.build(), PacketSizeOptions()).tcp_mss == 1280
    with pytest.raises(PlanError, match="--tcp-mss: must be 536 to 1240"):  # given: never changed silently
        plan_with_packet_sizes(plan, s, PacketSizeOptions(tcp_mss=1280))


# --- state a root tool acts on ------------------------------------------------------------

def test_state_dir_is_private_and_foreign_journals_are_never_acted_on(tmp_path, monkeypatch):
    from dclab.testbed import hostconfig

    state = tmp_path / "state"
    monkeypatch.setenv("DCLAB_STATE_DIR", str(state))
    assert stat.S_IMODE(files.secure_dir(state, "state").stat().st_mode) == 0o700
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("x")
    planted = state / "run-planted.json"
    planted.write_text('{"tag": "planted", "pid": 1, "pids": [], "namespaces": [], "sysctls": {}, '
                       f'"private": ["{victim}"]}}')
    os.chown(planted, 65534, 65534)  # another user's file
    assert any("ignored journal" in line for line in hostconfig.undo_journal(planted))
    assert planted.exists() and (victim / "precious").exists()
    os.chown(planted, 0, 0)
    planted.chmod(0o666)
    assert any("ignored journal" in line for line in hostconfig.undo_journal(planted))
    planted.chmod(0o644)
    hostconfig.undo_journal(planted)  # ours now, but its private entry is no run's certs/
    assert (victim / "precious").exists() and not planted.exists()
    state.chmod(0o777)
    with pytest.raises(FileRefused, match="is writable by others"):
        hostconfig.Journal("t1")
    state.chmod(0o700)
    os.chown(state, 65534, 65534)
    with pytest.raises(FileRefused, match="is owned by uid 65534"):
        files.secure_dir(state, "state directory")


def test_the_tls_key_is_never_readable_by_others(tmp_path, monkeypatch):
    from dclab.testbed.certs import make_certs

    # Created 0600, not written and then narrowed: with chmod gone and no umask, a key
    # written first would be left readable by everyone.
    monkeypatch.setattr(Path, "chmod", lambda *a, **k: None)
    monkeypatch.setattr(os, "chmod", lambda *a, **k: None)
    old = os.umask(0)
    try:
        certs = make_certs(tmp_path / "certs", "198.18.0.1")
    finally:
        os.umask(old)
    assert stat.S_IMODE(certs.key.stat().st_mode) == 0o600


# --- a fuzz pass over dclab's file readers ---------------------------------------------------

PIECES = ["batch", "split", "bw", "delay", "loss", "t_reordering", "trace", "link", "seed", "mtu", "name", "reps",
          "group", "configs", "sweeps", "point", "experiment", "value", "published", "=", " = ", "[", "]", "[[", "]]",
          "{", "}", ",", '"', "'", "\n", "#", "µ", "é", "€", "🚀", "\u0301", "\x00", "\ufeff", "inf", "nan", "-1",
          "1e999", "true", "2.5", "100000000000000000000000", "lte:good", "../", "/dev/zero", "\\u00e9", "\t"]


def test_fuzz_file_readers_refuse_with_named_errors(tmp_path):
    """Random malformed, non-ASCII input to every file reader of dclab: a named error or a
    value, never another exception, a hang or a file outside tmp_path."""
    rnd = random.Random(20261126)
    before = set(Path("/tmp").iterdir())
    t = time.monotonic()
    for i in range(400):
        text = "".join(rnd.choice(PIECES) for _ in range(rnd.randint(1, 40)))
        if rnd.random() < 0.5:  # start from a valid-looking line, so the parser gets deeper
            text = rnd.choice(["batch = 5\n", '[[group]]\nconfigs = [{stack = "tcp"}]\nsweeps = ["batch"]\n',
                               '[[point]]\nexperiment = "throughput"\nsweep = "batch"\nvalue = "1"\npublished = 1.0\n']) + text
        p = tmp_path / f"f{i}.toml"
        p.write_bytes(text.encode("utf-8", "surrogatepass") if rnd.random() < 0.9 else text.encode("utf-8")[::-1])
        for reader in (sc.load, fidelity.load_reference, lambda x: cp.load(str(x))):
            try:
                reader(p)
            except InputError as e:  # every reader: one of the family, named
                assert len(str(e)) < 2000 and "Traceback" not in str(e)
    assert time.monotonic() - t < 60
    assert set(Path("/tmp").iterdir()) <= before | {tmp_path}


# The options EN-DC added: values valid and near their bounds, then malformed and hostile.
ENDC_OPTIONS: dict[str, tuple[list[str], list[str]]] = {
    "--link": (["endc:good,good", "endc:good,poor", "endc:edge,200m", "nr:poor", "lte:750m"],
               ["endc:good", "endc:good,good,good", "nr:", "endc:,", "endc:,poor", "endc:good,250m", "lte:🚀",
                "endc:good,poor\x00", "wifi:good", ""]),
    "--x2-delay": (["0", "5", "1000"], ["1000.001", "-1", "nan", "inf", "1e999", "5ms", ""]),
    "--split-policy": (["static", "ddds", "delay-aware", "delay-target"], ["DDDS", "delay_target", "none", ""]),
    "--report-period": (["1", "10", "1000"], ["0", "0.5", "-3", "nan", "x"]),
    "--target-delay": (["0", "10", "10000"], ["10001", "-0.1", "inf"]),
    "--hold-bytes": (["9000", "4000000", "1000000000"], ["8999", "1e12", "-1", "4MB"]),
    "--discard-ms": (["1", "100", "1500"], ["0", "1501", "nan"]),
    "--fallback-ms": (["0", "2", "5", "1000"], ["1001", "-1", "nan", "1e400", "5,5"]),
    "--sn-events": (["release@1", "release@1,add@2", "change@1:80", "change@1:80:lose,release@2"],
                    ["add@1", "release@1,release@2", "release@86401", "change@1:60001", "release@-1",
                     "release@1:maybe", "boom@1", "release@", "@@@", "release@1,,add@2", "release@nan"]),
    "--outage": (["2:0.5:1", "1:0:0.001", "2:86400:3600"], ["3:1:1", "2:1:0", "2:x:1", "2:1", ":::"]),
    "--uplink-bw": (["200", "0.001"], ["0", "-5", "1e9"]),
}


def test_fuzz_the_endc_options_refuse_in_one_line_or_give_a_scenario_dcemu_takes(tmp_path):
    """Random combinations of the options EN-DC added (the link, the X2 hop, the split
    policies and what they read, the fallback, secondary events, outages): each ends in
    a scenario dcemu accepts, or in a one-line refusal naming an option, never in a
    traceback; and the pass stays within time and memory bounds."""
    if not DCEMU.exists():
        pytest.skip("dcemu not built")
    rnd = random.Random(20261129)
    names = list(ENDC_OPTIONS)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.monotonic()
    valid: list[str] = []
    for _ in range(300):
        args = ["scenario", "show", "--dcemu"]
        for name in rnd.sample(names, rnd.randint(1, 6)):
            good, bad = ENDC_OPTIONS[name]
            args += [name, rnd.choice(bad if rnd.random() < 0.15 else good)]
        if rnd.random() < 0.7 and "--link" not in args:  # mostly over EN-DC, where they apply
            args += ["--link", "endc:good,poor"]
        r = CliRunner().invoke(app, args)
        assert isinstance(r.exception, SystemExit | None), (args, r.exception)
        if r.exit_code == 0:
            valid.append(r.output)
            continue
        assert r.exit_code in (1, 2), (args, r.output)
        message = r.output.strip().splitlines()[-1]
        assert "Traceback" not in r.output and len(message) < 600, (args, r.output)
        assert "--" in message or "Error: " in message, (args, r.output)
    assert len(valid) > 30, f"only {len(valid)} of 300 combinations valid: the renderer went untested"
    for i, text in enumerate(valid):
        f = tmp_path / f"v{i}.toml"
        f.write_text(text)
        p = subprocess.run([str(DCEMU), "check", str(f)], capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, (text, p.stderr)
    assert time.monotonic() - t < 300, "a hang guard, not a speed target"
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    assert grown_mb < 500, f"the pass grew the process by {grown_mb:.0f} MB"


def test_no_reader_blocks_on_a_fifo_in_a_subprocess(tmp_path):
    """The whole CLI, as a user runs it: --scenario and --reference on a FIFO end at once."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for args in (["scenario", "show", "--scenario", str(fifo)],
                 ["report", "--store", str(tmp_path / "none.sqlite"), "--reference", str(fifo)],
                 ["campaign", "plan", str(fifo) + ".toml"]):
        p = subprocess.run([sys.executable, "-m", "dclab", *args], capture_output=True, text=True, timeout=60)
        assert p.returncode != 0 and "Traceback" not in p.stderr, (args, p.stderr)


def test_messages_name_what_the_user_gave(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text('link = "lte:good"\nduplicate = true\n')
    with pytest.raises(sc.ScenarioError, match=r"duplicate: needs two legs; one cell gives one \(endc: gives two\)$"):
        sc.load(p)
    p.write_text("split = [1.0, 2.0, 3.0]\n")
    with pytest.raises(sc.ScenarioError, match=r"split: needs one value per leg \(2, as bw gives\), got 3$"):
        sc.load(p)
    p.write_bytes(b"\xef\xbb\xbfbatch = 5\n")  # a byte order mark, as some editors write
    assert sc.load(p).batch == 5
    c = campaign_file(tmp_path, "c.toml", group="scenario = {batch = 0}\n")
    with pytest.raises(sc.ScenarioError, match=rf"^{c}: group 0: scenario: batch: must be at least 1 and at most 100000"):
        cp.plan(cp.load(str(c)))


def test_figure_reads_only_regular_pngs_and_reports_damage(tmp_path):
    from PIL import Image, PngImagePlugin

    fifo = tmp_path / "f.png"
    os.mkfifo(fifo)
    for path, fragment in ((fifo, "is a FIFO, not a regular file"), (Path("/dev/zero"), "is a character device")):
        code, text = invoke("figure", str(path))
        assert code == 1 and fragment in text, text
    info = PngImagePlugin.PngInfo()
    info.add_text("dclab", '{"axes": [{"x": 1}], "suptitle": 3}')
    Image.new("RGB", (4, 4)).save(tmp_path / "d.png", pnginfo=info)
    code, text = invoke("figure", str(tmp_path / "d.png"))
    assert code == 1 and "its dclab description is damaged" in text, text
    (tmp_path / "t.png").write_text("not a png")
    code, text = invoke("figure", str(tmp_path / "t.png"))
    assert code == 1 and "not a PNG dclab can read" in text, text
    # Crafted descriptions: nesting past the parser's depth, an extent of one number, a text
    # where a count belongs; each a one-line refusal, no traceback.
    for n, crafted in enumerate(("[" * 100_000 + "]" * 100_000,
                                 '{"suptitle": "", "command": "c", "version": "v", "axes": [' + AXES.replace(
                                     '"x": null', '"x": [1]') + "]}",
                                 '{"suptitle": "", "command": "c", "version": "v", "axes": [' + AXES.replace(
                                     '"lines": 0', '"lines": "many"') + "]}")):
        info = PngImagePlugin.PngInfo()
        info.add_text("dclab", crafted)
        Image.new("RGB", (4, 4)).save(tmp_path / f"c{n}.png", pnginfo=info)
        code, text = invoke("figure", str(tmp_path / f"c{n}.png"))
        assert code == 1 and "its dclab description is damaged" in text and "Traceback" not in text, (n, text)


AXES = ('{"title": "t", "xlabel": "", "ylabel": "", "legend": [], "xticks": [], "texts": [], "hlines": [], '
        '"vlines": [], "lines": 0, "bars": 0, "scatters": 0, "x": null, "y": null, "series": []}')


def test_figure_shows_a_crafted_description_s_control_characters_and_never_sends_them(tmp_path):
    """Escape sequences and bidirectional overrides in a PNG's description would reach the
    terminal and could fake the command that drew it: they are printed as escapes."""
    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("dclab", '{"suptitle": "s\\u202eevil", "command": "rm -rf /\\u001b[2K\\rdclab report smoke", '
                           '"version": "v", "axes": [' + AXES.replace('"title": "t"', '"title": "a\\u0007b"') + "]}")
    Image.new("RGB", (4, 4)).save(tmp_path / "e.png", pnginfo=info)
    code, text = invoke("figure", str(tmp_path / "e.png"))
    assert code == 0, text
    assert "\\x1b[2K\\rdclab report smoke" in text and "s\\u202eevil" in text and "a\\x07b" in text, text
    assert not any(c in text for c in "\x1b\u202e\x07\r"), repr(text)


def test_clean_removes_what_a_killed_run_began_writing_and_nothing_else(tmp_path, monkeypatch):
    """A run killed between writing its journal's temporary and moving it into place left
    run-TAG.tmp in /run/dclab; recovery (under the host lock) removes it and the originals'
    temporary, and leaves another user's file, a symlink and other names alone."""
    from dclab.testbed import hostconfig

    state = tmp_path / "state"
    monkeypatch.setenv("DCLAB_STATE_DIR", str(state))
    files.secure_dir(state, "state")
    (state / "run-d2b7c2.tmp").write_text('{"tag": "d2b7c2", "pid": 1')  # cut short
    (state / "host-originals.tmp").write_text("")
    foreign = state / "run-other.tmp"
    foreign.write_text("{}")
    os.chown(foreign, 65534, 65534)
    target = tmp_path / "target"
    target.write_text("keep")
    (state / "run-link.tmp").symlink_to(target)
    (state / "notes.tmp").write_text("not ours to judge")
    assert [p.name for p in hostconfig.unfinished_writes()] == ["host-originals.tmp", "run-d2b7c2.tmp"]
    monkeypatch.setattr("dclab.testbed.netns.clean", lambda keep: [])
    done = hostconfig.recover()
    assert done == ["removed unfinished state file host-originals.tmp", "removed unfinished state file run-d2b7c2.tmp"]
    assert sorted(p.name for p in state.iterdir()) == ["notes.tmp", "run-link.tmp", "run-other.tmp"]
    assert target.read_text() == "keep" and hostconfig.recover() == []


def test_a_state_dir_that_is_a_symlink_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "state").symlink_to(real)
    with pytest.raises(FileRefused, match="is a symlink, not a directory"):
        files.secure_dir(tmp_path / "state", "state directory")


def test_an_experiment_name_follows_the_grammar():
    import example_experiment

    from dclab.experiments import register

    for bad in ("../x", "<script>", "a b"):
        hostile = type("Hostile", (type(example_experiment.EXPERIMENT),), {"name": bad})()
        with pytest.raises(FileRefused, match="experiment name: .* is not a valid name"):
            register(hostile)
