"""The reproductions table (pyproject.toml [tool.hwcheck.reproduce]) on real Kafka brokers on
127.0.0.1, each row once, and Ctrl-C leaving no process behind. Resolving a release's jars from
Maven Central is setup (a fixture; the cache outside the repository makes it a no-op after the
first time), not part of a test; the tests themselves touch only the loopback."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import tomllib

import pytest

from hwcheck.checker.trace import load_itf
from hwcheck.cluster.report import parse_reproductions
from hwcheck.cluster.run import run
from hwcheck.spec.releases import release

from .conftest import ROOT, sigint_at_default

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

ROWS = parse_reproductions(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hwcheck"]["reproduce"])
CASES = [(row, version) for row in ROWS for version in row.expect]


def _java_processes(marker: str):
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    return [p for p in out.split() if int(p) != os.getpid()]


def _stderr_until(proc, marker: str, timeout: float = 120) -> str:
    """The run's progress lines up to the one that contains ``marker`` (asserted to come)."""
    seen = ""
    deadline = time.monotonic() + timeout
    while marker not in seen and time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen += line
    assert marker in seen, seen
    return seen


@pytest.mark.parametrize("row, version", CASES, ids=[f"{r.name}-{v}" for r, v in CASES])
def test_reproduction(row, version, kafka_lib, tmp_path):
    doc = load_itf((ROOT / row.trace).read_text())
    rel = row.release(version)
    outcome = run(doc, rel, kafka_lib(version), elr=row.elr, keep=tmp_path / "evidence", proxy=row.proxy)
    from hwcheck.cluster.report import step_table
    table = step_table(outcome)
    # a race the row names (a replaced disk's directory assigned before or after its broker's
    # unfencing) decides between two outcomes, each explained by the order the metadata log shows
    real, parts_at = row.expected(version, outcome.assigned_first)
    assert outcome.real == real, f"{outcome.verdict} (assigned first: {outcome.assigned_first})\n{table}"
    # where the cluster parts from the model is a finding; it must stay where it was found
    assert outcome.first_difference == parts_at, f"{outcome.verdict}\n{table}"
    if parts_at is None:
        assert outcome.prediction.outcome == real, table
    assert not _java_processes(str(tmp_path)), "a broker outlived the run"


def test_ctrl_c_stops_the_cluster_and_says_how_far_it_got(kafka_lib, tmp_path):
    kafka_lib("3.9.1")
    trace = ROOT / "counterexamples" / "kafka15583-power-failure-min-isr-2-loss.itf.json"
    proc = subprocess.Popen([sys.executable, "-m", "hwcheck.cli", "reproduce", str(trace), "--kafka", "3.9.1",
                             "--keep", str(tmp_path / "kept")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=tmp_path, preexec_fn=sigint_at_default)
    seen = _stderr_until(proc, "step 1 produce")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, seen + err
    assert "interrupted at step" in err and "the cluster is stopped" in err, err
    assert "Traceback" not in err
    assert not _java_processes(str(tmp_path / "kept")), "a broker outlived Ctrl-C"


def test_ctrl_c_during_a_proxied_run_leaves_no_proxy_broker_or_temp_dir(kafka_lib, tmp_path):
    """Interrupted while the proxy holds a Fetch: the brokers, the proxies (threads of the run's
    process, listening on 127.0.0.1) and the cluster's temp dir are all gone."""
    kafka_lib("2.8.0")
    trace = ROOT / "counterexamples" / "kafka10554-kafka-13141-loss.itf.json"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    before = set(os.listdir(tmp_path))
    proc = subprocess.Popen([sys.executable, "-m", "hwcheck.cli", "reproduce", str(trace), "--kafka", "2.8.0",
                             "--proxy"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env=env, preexec_fn=sigint_at_default)
    seen = _stderr_until(proc, "answer is held")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, seen + err
    assert "interrupted at step" in err and "Traceback" not in err, err
    assert not _java_processes(str(tmp_path)), "a broker outlived Ctrl-C"
    assert set(os.listdir(tmp_path)) == before, "the cluster's temp dir outlived Ctrl-C"


@pytest.mark.parametrize("version", ["4.4.0", "0.11.0.3"])
def test_a_short_conformance_walk(version, kafka_lib, tmp_path):
    """30 steps of a seeded walk through the proxy, on the newest release (KRaft) and on a
    ZooKeeper one (0.11.0.3: the controller in a broker of its own, a fetcher thread that cannot
    stop with its Fetch held before 1.1): the cluster is in the model's state after every step
    (the 200-step walks are benchmarks/conform.py's, quoted in docs/results.md). Under load the
    ZooKeeper walk once parted at step 17 (a Fetch released to r0 before r0 led by its own state)
    and once hung at step 2 (a controlled shutdown waiting for a held request): the harness waits
    for the leader (``_await_leading``) and closes a stopping broker's held messages (``_closing_held``).
    The 4.4.0 walk draws both KRaft session expiries, each a pause until the controller fenced the
    broker (broker.session.timeout.ms, 6 s): it timed out when the pause ended at once."""
    kafka_lib(version)
    done = subprocess.run([sys.executable, "-m", "hwcheck.cli", "conform", "--kafka", version, "--seed", "0",
                           "--steps", "30", "--keep", str(tmp_path / "kept")], capture_output=True,
                          text=True, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert f"walked: the cluster was observed after every step on Kafka {version} (agrees with the model" in done.stdout
    walk = json.loads((tmp_path / "kept" / "walk-seed-0.itf.json").read_text())
    assert len(walk["states"]) == 31
    if version == "4.4.0":
        drawn = {s["#meta"]["action"].split("(")[0] for s in walk["states"][1:]}
        assert {"session_expire", "session_expire_leader"} <= drawn
        pauses = [float(p) for p in re.findall(r"session expired and the controller moved its leadership after "
                                               r"([0-9.]+) s", done.stderr)]
        assert len(pauses) == 2 and min(pauses) > 3, done.stderr[-2000:]
    assert not _java_processes(str(tmp_path)), "a broker outlived the walk"
