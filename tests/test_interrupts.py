"""Ctrl-C and late errors (issue 18): an interrupted run never reads as a verdict, and nothing a
long search found is lost to a file that cannot be written.

The Ctrl-C tests start hwcheck in a process group of its own and send SIGINT to the whole group,
as a terminal does (so forked bfs workers get it too); each takes a few seconds."""

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import jsonschema

from hwcheck.cli.jsonout import SCHEMA

from .conftest import one_line_error, run_cli, sigint_at_default

# a quick entry, one that runs for minutes, and one the interrupted gate never reaches
GATE = """
[gate.quick]
mode = "hw"
records = 1
expect = "NoCommittedDataLoss"
steps = 12

[gate.long]
mode = "kip380"
replicas = 3
expect = "holds"

[gate.after]
mode = "hw"
acks = "1"
expect = "NoCommittedDataLoss"
"""


def _start(*args, cwd=None, env=None):
    """hwcheck in a new process group, SIGINT at its default (a background job would ignore it);
    ``env`` adds to the environment."""
    def child():
        sigint_at_default()
        os.setpgrp()
    return subprocess.Popen([sys.executable, "-m", "hwcheck.cli", *map(str, args)], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}, preexec_fn=child)


def _ctrl_c(child, stream=None, until=None, after=0.0):
    """Wait for a line of ``stream`` satisfying ``until`` (or ``after`` seconds), then SIGINT the
    process group; the exit code, stdout and stderr (with the lines read before)."""
    seen = []
    try:
        if until is not None:
            while True:
                line = stream.readline()
                assert line, "".join(seen)
                seen.append(line)
                if until(line):
                    break
        time.sleep(after)
        os.killpg(child.pid, signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
    before = "".join(seen)
    if stream is child.stdout:
        out = before + out
    elif stream is child.stderr:
        err = before + err
    return child.returncode, out, err


def _no_traceback(out, err):
    assert "Traceback" not in out + err and "KeyboardInterrupt" not in out + err, out + err
    assert "ForkPoolWorker" not in err, err


# ---------------------------------------------------------------- row 1: the gate

def test_ctrl_c_stops_the_gate_and_never_reports_a_moved_verdict(tmp_path):
    (tmp_path / "g.toml").write_text(GATE)
    junit = tmp_path / "j.xml"
    child = _start("gate", tmp_path / "g.toml", "--verbose", "--junit", junit)
    code, out, err = _ctrl_c(child, child.stderr, until=lambda line: line.startswith("long  depth"), after=0.5)
    assert code == 130, out + err
    _no_traceback(out, err)
    assert "ok   quick" in out and "FAIL" not in out and "verdict moved" not in out and "MOVED" not in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("interrupted: 1 of 3 entries ran (quick: as expected); interrupted long after "), last
    assert "no verdict" in last and last.endswith("not run: after")
    suite = ET.parse(junit).getroot()
    assert suite.get("failures") == "0" and suite.get("skipped") == "2" and suite.get("tests") == "3"
    cases = {case.get("name"): case for case in suite}
    assert cases["quick"].find("skipped") is None and cases["quick"].find("failure") is None
    assert "interrupted" in cases["long"].find("skipped").get("message")
    assert cases["after"].find("skipped").get("message").startswith("not run")
    assert all(case.find("failure") is None for case in suite)


def test_ctrl_c_stops_a_quiet_gate_and_json_says_interrupted(tmp_path):
    (tmp_path / "g.toml").write_text(GATE)
    child = _start("gate", tmp_path / "g.toml", "--quiet", "--json")
    code, out, err = _ctrl_c(child, after=4.0)
    assert code == 130, out + err
    _no_traceback(out, err)
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    assert doc["verdict"] == "interrupted" and doc["exit_code"] == 130
    assert doc["interrupted"] == "long" and doc["not_run"] == ["after"]
    assert [e["name"] for e in doc["entries"]] == ["quick"]


# ---------------------------------------------------------------- row 2: bfs with workers

def test_ctrl_c_with_two_workers_prints_only_what_was_covered():
    child = _start("verify", "--mode=epoch", "--replicas=3", "--workers=2", "--verbose")
    # from depth 8 on, the levels are large enough to be expanded by the two forked workers
    code, out, err = _ctrl_c(child, child.stderr, until=lambda line: int(line.split()[2]) >= 9, after=0.3)
    assert code == 130, out + err
    _no_traceback(out, err)
    assert all(line.startswith("bfs  depth ") for line in err.splitlines()), err
    last = out.strip().splitlines()[-1]
    assert last.startswith("interrupted: covered ") and last.endswith("no violation among them"), last


# ---------------------------------------------------------------- row 3: z3

def test_ctrl_c_during_z3_bmc_says_which_depths_were_proven():
    child = _start("verify", "--engine", "z3", "--depth", "14", "--mode", "kip320")
    code, out, err = _ctrl_c(child, child.stdout, until=lambda line: line.startswith("  depth 4:"), after=0.2)
    assert code == 130, out + err
    _no_traceback(out, err)
    assert err == "", err
    last = out.strip().splitlines()[-1]
    solved = [line for line in out.splitlines() if line.startswith("  depth ")]
    deepest = solved[-1].split()[1].rstrip(":")
    assert last.startswith(f"interrupted: no violation up to depth {deepest} (depths 0-{deepest} solved); "
                           f"depth {int(deepest) + 1} of 14 was under way"), last


def test_ctrl_c_during_prove_says_what_was_covered():
    child = _start("prove", "--mode", "kip320", "--invariant", "NoCommittedDataLoss", "--k", "8")
    code, out, err = _ctrl_c(child, child.stdout, until=lambda line: line.startswith("property:"), after=1.5)
    assert code == 130, out + err
    _no_traceback(out, err)
    last = out.strip().splitlines()[-1]
    assert last.startswith("interrupted: the base case") and last.endswith("no verdict (k=8)"), last


# ---------------------------------------------------------------- row 4: outputs that cannot be written

def test_an_unwritable_out_is_refused_before_the_search(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):          # root writes anywhere: /sys refuses even root
            folder = "/sys"
        proc = run_cli("verify", "--mode=hw", "--records=1", "--out", f"{folder}/hw.itf.json")
    finally:
        (tmp_path / "ro").chmod(0o755)
    assert f"cannot write {folder}/hw.itf.json" in one_line_error(proc)
    assert proc.stdout == ""                    # no search ran


def test_a_write_that_fails_after_the_search_keeps_the_verdict():
    proc = run_cli("verify", "--mode=hw", "--records=1", "--quiet", "--force", "--out", "/dev/full")
    assert proc.returncode == 1, proc.stderr
    assert "verdict: violated: NoCommittedDataLoss after 12 steps" in proc.stdout
    assert "trace: not written (/dev/full refused it)" in proc.stdout
    assert proc.stderr.strip() == ("hwcheck: cannot write the trace to /dev/full: No space left on device "
                                   "(the verdict stands)")
    doc = json.loads(run_cli("verify", "--mode=hw", "--records=1", "--force", "--out", "/dev/full", "--json").stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["exit_code"] == 1 and doc["violations"][0]["trace"] is None


def test_a_junit_write_that_fails_keeps_the_gate_verdict(tmp_path):
    (tmp_path / "g.toml").write_text(GATE.split("[gate.long]")[0])
    proc = run_cli("gate", tmp_path / "g.toml", "--junit", "/dev/full", "--force")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "cannot write the JUnit report to /dev/full" in proc.stderr and "all 1 verdicts as expected" in proc.stdout


def test_ctrl_c_after_some_violations_keeps_their_traces_and_exits_130(tmp_path):
    # NoCommittedDataLoss breaks at depth 12, HwNotAboveLeo holds: the search goes on (~10 s) until Ctrl-C
    child = _start("verify", "--mode=hw", "--records=3", "--all-invariants", "--invariant", "NoCommittedDataLoss",
                   "--invariant", "HwNotAboveLeo", "--verbose", cwd=tmp_path)
    code, out, err = _ctrl_c(child, child.stderr, until=lambda line: int(line.split()[2]) >= 13, after=0.2)
    assert code == 130, out + err
    _no_traceback(out, err)
    assert "verdict: violated: NoCommittedDataLoss after 12 steps" in out
    assert (tmp_path / "hwcheck-hw-NoCommittedDataLoss.itf.json").exists()
    last = out.strip().splitlines()[-1]
    assert last.startswith("interrupted: covered ") and "NoCommittedDataLoss broken there" in last, last
