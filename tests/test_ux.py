"""Progress, --json, one-line errors for every bad input, Ctrl-C, --version (issue 9)."""

import io
import json
import signal
import subprocess
import sys
import time

import jsonschema
import pytest

from hwcheck.cli.jsonout import SCHEMA
from hwcheck.cli.progress import AUTO, QUIET, VERBOSE, Progress

from .conftest import ROOT, one_line_error, run_cli, run_cli_here, sigint_at_default

CX = ROOT / "counterexamples"
REPORT = {"engine": "bfs", "depth": 7, "distinct": 5000, "queue": 800, "generated": 12000, "elapsed": 2.5}


class Tty(io.StringIO):
    def isatty(self):
        return True


# ---------------------------------------------------------------- progress

def test_progress_draws_one_live_line_on_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stdout", Tty())
    err = Tty()
    p = Progress(AUTO, stream=err, min_interval=0)
    p(REPORT)
    p({**REPORT, "distinct": 9000, "elapsed": 3.5, "depth": 8})
    p.done()
    text = err.getvalue()
    assert text.startswith("\rbfs  depth 7  distinct 5,000  queue 800  generated 12,000  2,000 states/s  0:02")
    # the second line's rate blends the overall rate with the last interval's (4,000/s)
    assert "depth 8  distinct 9,000" in text and "3,000 states/s" in text
    assert "\n" not in text and text.endswith("\r")           # cleared at the end


def test_progress_is_quiet_when_stdout_is_not_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    err = Tty()
    p = Progress(AUTO, stream=err, min_interval=0)
    p(REPORT)
    assert p.mode == QUIET and err.getvalue() == ""


def test_verbose_progress_logs_lines_anywhere_and_quiet_prints_nothing():
    out = io.StringIO()
    p = Progress(VERBOSE, stream=out, verbose_interval=0)
    p({"elapsed": 1.0, "distinct": 10})                      # only the required keys
    p({**REPORT, "phase": "solving", "engine": "z3"})
    # the rate: half the previous one (10/s), half the last interval's (4,990 in 1.5 s)
    assert out.getvalue().splitlines() == ["distinct 10  10 states/s  0:01",
                                           "z3  solving  depth 7  distinct 5,000  queue 800  generated 12,000  "
                                           "1,668 states/s  0:02"]
    silent = io.StringIO()
    Progress(QUIET, stream=silent)(REPORT)
    assert silent.getvalue() == ""


def test_progress_redraws_at_most_a_few_times_a_second():
    out = io.StringIO()
    p = Progress(VERBOSE, stream=out, verbose_interval=0.2)
    for i in range(1000):
        p({**REPORT, "distinct": i})
    assert p.reports == 1000 and len(out.getvalue().splitlines()) <= 2


def test_verify_verbose_logs_progress_to_stderr_and_keeps_stdout_clean():
    proc = run_cli("verify", "--mode=epoch", "--records=1", "--verbose")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines and all(line.startswith("bfs  depth ") and "states/s" in line for line in lines)
    assert "states/s" not in proc.stdout.split("figures:")[0]


# ---------------------------------------------------------------- --json

def _json(proc, code):
    assert proc.returncode == code, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)                            # nothing else on stdout
    jsonschema.validate(doc, SCHEMA)
    assert doc["exit_code"] == code
    return doc


def test_the_schema_file_in_docs_is_the_one_the_code_uses():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert json.loads((ROOT / "docs" / "hwcheck-json.schema.json").read_text()) == SCHEMA
    assert "hwcheck-json.schema.json" in (ROOT / "docs" / "cli.md").read_text()


def test_verify_json_on_a_violation(tmp_path):
    out = tmp_path / "t.itf.json"
    doc = _json(run_cli("verify", "--mode=hw", "--records=1", "--json", "--out", out), 1)
    assert doc["command"] == "verify" and doc["verdict"] == "violated"
    assert doc["settings"]["mode"] == "hw" and doc["settings"]["records"] == 1
    [violation] = doc["violations"]
    story = violation.pop("story")          # how it came about (tests/test_story.py)
    assert violation == {"invariant": "NoCommittedDataLoss", "steps": 12, "trace": str(out)}
    assert story[-1].startswith("step 11-12: r1 becomes leader at epoch 2")
    assert out.exists() and doc["figures"]["depth"] == 12


def test_verify_json_when_it_holds():
    doc = _json(run_cli("verify", "--mode=epoch", "--records=1", "--max-depth=6", "--json"), 0)
    assert doc["verdict"] == "holds" and doc["violations"] == [] and doc["complete"] is False
    assert doc["max_depth"] == 6 and doc["figures"]["depth"] == 6


def test_replay_json_and_differential_json():
    doc = _json(run_cli("replay", CX / "hw-data-loss.itf.json", "--json"), 0)
    assert doc["verdict"] == "replays" and doc["claimed"] == "NoCommittedDataLoss" and doc["steps"] == 12
    assert doc["first_broken"] == [{"step": 12, "invariant": "NoCommittedDataLoss"}]
    diff = _json(run_cli("replay", CX / "hw-data-loss.itf.json", "--mode", "kip101", "--json"), 0)
    assert diff["verdict"] == "differential" and diff["differential"]["parted_at"] == 10


def test_gate_json(tmp_path):
    (tmp_path / "g.toml").write_text('[gate.a]\nmode = "hw"\nrecords = 1\n'
                                     'expect = "NoCommittedDataLoss"\nsteps = 12\n'
                                     '[gate.b]\nmode = "hw"\nrecords = 1\nexpect = "NoLogDivergence"\nmax_depth = 3\n')
    doc = _json(run_cli("gate", tmp_path / "g.toml", "--json", "--junit", tmp_path / "j.xml"), 1)
    assert doc["verdict"] == "moved" and doc["junit"] == str(tmp_path / "j.xml")
    assert [(e["name"], e["passed"], e["got"]) for e in doc["entries"]] == [
        ("a", True, "NoCommittedDataLoss(12)"), ("b", False, "holds")]
    assert doc["entries"][1]["figures"]["depth"] == 3


def test_modes_json():
    from hwcheck.spec.modes import ALIASES, LADDER
    doc = _json(run_cli("modes", "--json"), 0)
    assert [m["name"] for m in doc["modes"]] == [m.name for m in LADDER]
    assert doc["aliases"] == ALIASES and doc["newest"] == LADDER[-1].name
    for got, mode in zip(doc["modes"], LADDER):
        assert got["kafka"] == mode.kafka and got["varies"] is None and got["mode_file"] is None
        assert [(c["ref"], c["source"]) for c in got["changes"]] == [(c.ref, c.source) for c in mode.changes]
    assert doc["modes"][-1]["rules"]["restart_after_detection"] is True
    assert doc["modes"][1]["rules"]["end_offset_for"] == "end_offset_for_0_11"


def test_json_with_bad_input_prints_no_document_and_one_line():
    proc = run_cli("verify", "--min-isr=3", "--json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------- bad input: one line, exit 2

one_line = one_line_error


def _text(content):
    """A writer of a bad file with this content (str or bytes)."""
    def write(path):
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return write


def _set(keys, value):
    """A writer of the hw-data-loss trace with the value at ``keys`` replaced."""
    def write(path):
        doc = json.loads((CX / "hw-data-loss.itf.json").read_text())
        *head, last = keys
        target = doc
        for key in head:
            target = target[key]
        target[last] = value
        path.write_text(json.dumps(doc))
    return write


CONFIG = ("#meta", "hwcheck", "config")
BAD_TRACES = [
    ("nested too deeply", _text("[" * 100_000 + "]" * 100_000)),
    ("malformed JSON", _text('{"#meta": {"hwcheck": ')),
    ("not a text file", _text(b"\xff\xfe\x00\x81")),
    ("#meta.hwcheck is missing", _text(json.dumps(          # an Apalache ITF trace of another spec
        {"#meta": {"format": "ITF"}, "vars": ["x"], "states": [{"#meta": {"index": 0}, "x": 1}]}))),
    ("records=100000000000000000000 is beyond the ceiling", _set(CONFIG + ("records",), 10 ** 20)),
    ("unknown setting(s): colour", _set(CONFIG + ("colour",), "red")),
    ("replicas must be an integer", _set(CONFIG + ("replicas",), 2.0)),
    ("unknown model 'zookeeper'", _set(("#meta", "hwcheck", "model"), "zookeeper")),
    ("invariant is 5, not a name", _set(("#meta", "hwcheck", "invariant"), 5)),
    ("step 0 (init): state differs: replicas.r0.epoch_cache is missing", _set(CONFIG + ("mode",), "epoch")),
    ("spec gives [\"r0\", \"r1\", \"r2\"]", _set(CONFIG + ("replicas",), 3)),
    ("step 3 (crash(r9)): action 'crash(r9)' names the wrong replicas", _set(("states", 3, "#meta", "action"),
                                                                              "crash(r9)")),
    ("malformed action label", _set(("states", 3, "#meta", "action"), "crash(r0")),
]


@pytest.mark.parametrize("words, write", BAD_TRACES, ids=[w for w, _ in BAD_TRACES])
def test_bad_traces_get_one_line(tmp_path, words, write):
    path = tmp_path / "bad.itf.json"
    write(path)
    line = one_line(run_cli_here("replay", path))
    assert words in line and len(line) < 300, line


@pytest.mark.parametrize("args, words", [
    (["verify", "--mode=kafka"], "Invalid value for '--mode'"),
    (["verify", "--records=100000000000"], "records=100000000000 is beyond the ceiling of 10000"),
    (["verify", "--max-depth=-1"], "not in the range"),
    (["verify", "--model", "kafka-tla", "--records=3"], "--records does not apply to --model kafka-tla"),
    (["verify", "--json", "--liveness"], "--json does not apply to --liveness"),
    (["verify", "--out", "/nonexistent-dir/t.json"], "folder /nonexistent-dir does not exist"),
    (["verify", "--mode=hw", "--records=1", "--out", "/sys/hw.itf.json"], "cannot write /sys/hw.itf.json"),
    (["replay"], "Missing argument 'TRACE'"),
    (["replay", "/"], "is a directory"),
    (["replay", CX / "hw-data-loss.itf.json", "--html", "/nonexistent-dir/r.html"], "does not exist"),
    (["replay", CX / "hw-data-loss.itf.json", "--html", "r.html", "--mode", "kip101"], "do not combine"),
    (["gate", "--junit", "/"], "is a directory"),
    (["frobnicate"], "No such command 'frobnicate'"),
    (["replay", CX / "hw-data-loss.itf.json", "--focus", "--html", "r.html"], "--focus and --html do not combine"),
    (["replay", CX / "hw-data-loss.itf.json", "--focus", "--json"], "--json does not apply to --focus"),
])
def test_bad_usage_gets_one_line(args, words, tmp_path):
    assert words in one_line(run_cli_here(*args, cwd=tmp_path))


@pytest.mark.parametrize("text, words", [
    ('[tool]\nhwcheck = 5\n', "no gate entries"),
    ('[gate.x]\nmode = "hw"\nexpect = ["holds"]\n', "expect must be"),
    ('[gate.x]\nmode = "hw"\nexpect = "holds"\nrecords = 9223372036854775807\n', "beyond the ceiling"),
    ('[gate.x]\nmode = 5\nexpect = "holds"\n', "mode must be a name, got 5"),
    ('[gate]\nx = 5\n', "expected a table of settings"),
    ('[gate.x]\nmode = "hw"\nexpect = "holds"\n[gates.y]\n', "unknown top-level key(s) gates"),
])
def test_more_bad_gate_files(tmp_path, text, words):
    (tmp_path / "g.toml").write_text(text)
    assert words in one_line(run_cli_here("gate", tmp_path / "g.toml"))


def test_version_and_help_examples():
    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("hwcheck ")
    assert "hwcheck replay counterexamples/hw-data-loss.itf.json --html" in run_cli("replay", "--help").stdout
    assert "hwcheck verify --mode=hw --out loss.itf.json" in run_cli("verify", "--help").stdout
    assert "hwcheck gate --junit gate.xml" in run_cli("gate", "--help").stdout


def test_shell_completion_completes_commands_and_options():
    from click.testing import CliRunner
    from hwcheck.cli.main import cli
    env = {"_HWCHECK_COMPLETE": "bash_complete", "COMP_WORDS": "hwcheck verify --mo", "COMP_CWORD": "2"}
    result = CliRunner().invoke(cli, [], prog_name="hwcheck", env=env)
    assert result.exit_code == 0 and "plain,--mode" in result.stdout.splitlines()
    env.update(COMP_WORDS="hwcheck repl", COMP_CWORD="1")
    assert CliRunner().invoke(cli, [], prog_name="hwcheck", env=env).stdout.splitlines() == ["plain,replay"]


# ---------------------------------------------------------------- Ctrl-C

def _interrupt(*args):
    """Start a long verify, wait for its first progress line, send SIGINT."""
    child = subprocess.Popen([sys.executable, "-m", "hwcheck.cli", "verify", "--mode=epoch", "--replicas=3",
                              "--records=2", "--verbose", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, stdin=subprocess.DEVNULL,
                             preexec_fn=sigint_at_default)
    try:
        first = child.stderr.readline()
        assert first.startswith("bfs  depth"), first
        time.sleep(1.0)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    return child.returncode, out, first + err


def test_ctrl_c_says_what_was_covered_and_exits_130():
    code, out, err = _interrupt()
    assert code == 130, out + err
    assert "Traceback" not in out + err
    last = out.strip().splitlines()[-1]
    assert last.startswith("interrupted: covered ") and "distinct states to depth" in last
    covered = int(last.split("covered ")[1].split(" distinct")[0].replace(",", ""))
    assert covered > 1000


def test_ctrl_c_with_json_prints_the_interrupted_document():
    code, out, err = _interrupt("--json")
    assert code == 130, err
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    assert doc["verdict"] == "interrupted" and doc["complete"] is False and doc["figures"]["distinct_states"] > 1000


def test_a_lasso_refuses_html_and_json_in_one_line(tmp_path):
    lasso = tmp_path / "lasso.itf.json"
    assert run_cli("verify", "--liveness", "--mode=hw", "--records=1", "--crashes=1", "--max-epoch=1",
                   "--out", lasso, "--quiet", cwd=tmp_path).returncode == 1
    line = one_line(run_cli_here("replay", lasso, "--html", tmp_path / "l.html"))
    assert "a lasso (liveness trace): --focus, --mode and --html apply to safety traces" in line
    assert not (tmp_path / "l.html").exists()
    proc = run_cli("replay", lasso, "--json")
    assert "--json is not available for lasso (liveness) traces" in one_line(proc) and proc.stdout == ""


# ---------------------------------------------------------------- issue 18: help, flags, --focus --quiet

def test_hwcheck_alone_prints_the_group_help_as_click_does():
    proc = run_cli()
    assert proc.returncode == 2 and "hwcheck: error" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("Usage: ") and lines[0].endswith(" [OPTIONS] COMMAND [ARGS]...") and "Commands:" in lines
    assert any(line.split()[:1] == ["verify"] for line in lines)


@pytest.mark.parametrize("command", [["verify"], ["replay", CX / "hw-data-loss.itf.json"], ["gate"]])
def test_quiet_and_verbose_exclude_each_other(command, tmp_path):
    proc = run_cli(*command, "--quiet", "--verbose", cwd=tmp_path)
    assert one_line(proc) == "hwcheck: error: --quiet and --verbose exclude each other: give one"
    assert proc.stdout == ""


@pytest.mark.parametrize("command", ["graph", "prove"])
def test_graph_and_prove_list_only_the_modes_they_take(command):
    from hwcheck.spec import kafka_tla
    from hwcheck.spec.modes import LADDER
    text = run_cli(command, "--help").stdout
    choices = text.split("--mode [")[1].split("]")[0].split("|")
    from hwcheck.spec.modes import ALIASES
    assert choices == [m.name for m in LADDER] + list(ALIASES)
    for other in ("truncate-to-hw", "kip320-first-try"):
        assert other in kafka_tla.MODES and other not in text


def test_replay_focus_quiet_omits_the_table():
    proc = run_cli("replay", CX / "hw-data-loss.itf.json", "--focus", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "step  action" not in proc.stdout and "<- broken" not in proc.stdout
    assert "still breaking NoCommittedDataLoss" in proc.stdout


def test_gate_outside_a_project_says_where_it_looks(tmp_path):
    line = one_line(run_cli_here("gate", cwd=tmp_path))
    assert f"no FILE given and no pyproject.toml in {tmp_path}" in line and "[tool.hwcheck.gate]" in line
    helptext = " ".join(run_cli("gate", "--help").stdout.split())
    assert "[tool.hwcheck.gate] in ./pyproject.toml (the current folder), or from FILE" in helptext


def test_prove_names_the_messages_in_flight():
    import re
    from hwcheck.cli.render import messages_cell
    from hwcheck.spec import Config, Model
    from .conftest import run_labels
    model = Model(Config(mode="kip380"))
    states = run_labels(model, [("produce", 0), ("send_fetch", 1)])
    assert messages_cell(model, states[-1]) == "r1->r0 Fetch(current_leader_epoch=0 fetch_offset=0)"
    states = run_labels(model, [("produce", 0), ("send_fetch", 1), ("leader_handle_fetch", 0, 1)])
    assert messages_cell(model, states[-1]) == "r0->r1 FetchResponse(records=[0@0] hw=0 leader_leo=1)"
    assert messages_cell(model, states[0], "stale") == "·"
    proc = run_cli("prove", "--mode", "kip380", "--invariant", "NoCommittedDataLoss", "--no-aux")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "    inflight: " in proc.stdout and not re.search(r"r\d:\(\d", proc.stdout), proc.stdout


def test_ci_doc_counts_the_gate_entries():
    import tomllib
    entries = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hwcheck"]["gate"]
    text = (ROOT / "docs" / "ci.md").read_text()
    assert f"hwcheck gate: {len(entries)} entries from pyproject.toml" in text
    assert f"all {len(entries)} verdicts as expected" in text
