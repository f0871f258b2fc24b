"""The Spark engine against bfs: same distinct states, depth and shortest trace length, in every
mode; its command line; Spark's console noise kept out of hwcheck's output.

One SparkContext (local[2]) is shared by the module: a JVM start costs seconds."""

import json
import os
import pickle
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from hwcheck.checker.bfs import bfs
from hwcheck.checker.spark import SparkEngineError, spark_bfs, start_spark, stop_spark
from hwcheck.spec import Config, Model
from hwcheck.spec.modes import LADDER

from .conftest import run_cli, run_labels
from .test_interrupts import _ctrl_c, _start

pytestmark = pytest.mark.slow

SMALL = dict(records=1, crashes=1, max_epoch=1)


@pytest.fixture(scope="module")
def sc():
    sc = start_spark("local[2]")
    yield sc
    stop_spark(sc)


MODES = [m.name for m in LADDER]
RUNS = {  # name: (config, spark_bfs options); all run at once on the shared context
    **{mode: (Config(mode=mode, **SMALL), dict(partitions=3 if mode == "hw" else 2)) for mode in MODES},
    "acks1": (Config(mode="epoch", records=1, crashes=1, acks="1"), dict(partitions=2)),
    "max_depth": (Config(mode="kip101", **SMALL), dict(partitions=2, max_depth=6)),
    "all": (Config(mode="hw", unclean_election=True, **SMALL), dict(partitions=1, all_invariants=True)),
}


@pytest.fixture(scope="module")
def runs(sc):
    """Every comparison's Spark run, submitted together from threads: Spark runs concurrent
    jobs on one context, which hides most of the per-level scheduling latency."""
    with ThreadPoolExecutor(len(RUNS)) as pool:
        futures = {name: pool.submit(spark_bfs, Model(cfg), sc=sc, **opts) for name, (cfg, opts) in RUNS.items()}
        return {name: f.result() for name, f in futures.items()}


class NoInvariants:
    """The same model with nothing to check: bfs then explores whole levels."""

    def __init__(self, model):
        self.model = model
        self.invariants = ()

    def __getattr__(self, name):
        return getattr(self.model, name)


def states_within(model, depth: int) -> int:
    """Distinct states at distance <= depth, by bfs."""
    return bfs(NoInvariants(model), max_depth=depth).distinct_states


def assert_replays(model, trace):
    """The trace starts in an initial state, every label is enabled, and the last state breaks
    the invariant it was reported for."""
    assert trace.states[0] in model.init_states()
    assert run_labels(model, trace.labels) == trace.states
    assert trace.invariant in model.violated(trace.states[-1])


def test_config_and_model_pickle_for_executors():
    model = Model(Config(mode="epoch", **SMALL))
    again = pickle.loads(pickle.dumps(model))
    assert again.cfg == model.cfg
    [s] = model.init_states()
    assert [label for label, _ in again.successors(s)] == [label for label, _ in model.successors(s)]


@pytest.mark.parametrize("mode", MODES)
def test_same_figures_as_bfs_in_every_mode(runs, mode):
    model = Model(RUNS[mode][0])
    want = bfs(model)
    got = runs[mode]
    assert (got.engine, got.verdict, got.depth) == ("spark", want.verdict, want.depth)
    if want.verdict == "holds":
        assert (got.distinct_states, got.generated_states, got.complete) == \
            (want.distinct_states, want.generated_states, True)
        assert got.violations == []
    else:
        # a level is explored whole: every state within the violation's distance, no more
        [w], [g] = want.violations, got.violations
        assert (g.invariant, g.steps) == (w.invariant, w.steps)
        assert got.distinct_states == states_within(model, w.steps)
        assert states_within(model, w.steps - 1) < got.distinct_states
        assert_replays(model, g)


def test_acks_1_loses_data_in_epoch_mode_too(runs):
    model = Model(RUNS["acks1"][0])
    want, got = bfs(model), runs["acks1"]
    assert got.verdict == want.verdict == "violated"
    assert [(t.invariant, t.steps) for t in got.violations] == [(t.invariant, t.steps) for t in want.violations]
    assert_replays(model, got.violations[0])


def test_max_depth_cuts_whole_levels_like_bfs(runs):
    model = Model(RUNS["max_depth"][0])
    want, got = bfs(model, max_depth=6), runs["max_depth"]
    assert (got.verdict, got.distinct_states, got.generated_states, got.depth, got.complete) == \
        (want.verdict, want.distinct_states, want.generated_states, want.depth, False)


def test_all_invariants_keeps_the_shortest_trace_of_each(runs):
    model = Model(RUNS["all"][0])
    want, got = bfs(model, all_invariants=True), runs["all"]
    assert [(t.invariant, t.steps) for t in got.violations] == [(t.invariant, t.steps) for t in want.violations]
    assert got.violations and got.complete
    for trace in got.violations:
        assert_replays(model, trace)


def test_a_spark_failure_is_one_line(sc):
    class Broken(NoInvariants):
        def successors(self, state):
            raise ValueError("no successors today")

    model = Model(Config(mode="hw", **SMALL))
    with pytest.raises(SparkEngineError) as e:
        spark_bfs(Broken(model), sc=sc, partitions=2)
    assert "\n" not in str(e.value) and "failed" in str(e.value)


def test_cli_spark_engine_matches_bfs_and_keeps_spark_quiet(tmp_path):
    args = ["--mode=hw", "--records=1", "--crashes=1", "--acks=1"]
    out = tmp_path / "loss.itf.json"
    proc = run_cli("verify", *args, "--engine=spark", "--master=local[1]", "--partitions=2", "--out", out,
                   cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr == ""                                   # no log4j, no progress bars
    noise = [line for line in proc.stdout.splitlines()
             if any(w in line for w in ("WARN", "INFO", "log4j", "Stage", "SparkContext"))]
    assert noise == []
    assert "verdict: violated: NoCommittedDataLoss after 3 steps" in proc.stdout
    model = Model(Config(mode="hw", records=1, crashes=1, acks="1"))
    assert f"{states_within(model, 3):,} distinct states" in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["#meta"]["hwcheck"]["engine"] == "spark" and len(doc["states"]) == 4
    rep = run_cli("replay", out)
    assert rep.returncode == 0 and "NoCommittedDataLoss broken in the last state" in rep.stdout


def test_cli_refuses_a_bad_master_in_one_line():
    proc = run_cli("verify", "--mode=hw", "--engine=spark", "--master=nonsense://here")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(lines) == 1 and lines[0].startswith("hwcheck: error: cannot start Spark"), proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


def test_cli_spark_options_need_the_spark_engine():
    proc = run_cli("verify", "--mode=hw", "--partitions=4")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "hwcheck: error: --master and --partitions apply to --engine spark only"
    assert proc.stdout == ""


def _group_gone(pgid: int, wait: float = 15.0) -> bool:
    """No process of the group is left (the JVM and Python workers have exited too)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def _private_tmp(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    return tmp


def test_ctrl_c_stops_spark_cleanly_and_leaves_no_temp_files(tmp_path):
    """Issue 18: SIGINT to the whole process group (hwcheck, the JVM, the Python workers) while a
    level runs: the one 'interrupted: covered ...' line, exit 130, no py4j/pyspark traceback,
    every process of the group gone, nothing left in the temp folder."""
    tmp = _private_tmp(tmp_path)
    child = _start("verify", "--engine=spark", "--master=local[2]", "--replicas=3", "--verbose",
                   env={"TMPDIR": str(tmp)})
    code, out, err = _ctrl_c(child, child.stderr, after=0.3,
                             until=lambda line: line.startswith("spark  depth") and int(line.split()[2]) >= 5)
    assert code == 130, out + err
    for word in ("Traceback", "KeyboardInterrupt", "py4j", "Py4J", "pyspark", "Exception", "ERROR", "WARN"):
        assert word not in out + err, out + err
    assert all(line.startswith("spark  depth ") for line in err.splitlines()), err
    lines = out.strip().splitlines()
    after = lines[[i for i, line in enumerate(lines) if line.startswith("spark ")][0] + 1:]
    assert len(after) == 1 and after[0].startswith("interrupted: covered "), out
    assert after[0].endswith("no violation among them"), out
    assert _group_gone(child.pid), "processes of the run outlived it"
    assert list(tmp.iterdir()) == []


def test_a_spark_run_leaves_no_temp_files(tmp_path):
    tmp = _private_tmp(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "hwcheck.cli", "verify", "--mode=hw", "--records=1", "--crashes=0",
                           "--max-epoch=1", "--engine=spark", "--master=local[1]", "--partitions=1", "--quiet"],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                          env={**os.environ, "TMPDIR": str(tmp)}, cwd=tmp_path)
    assert proc.returncode in (0, 1) and proc.stderr == "", proc.stdout + proc.stderr
    assert list(tmp.iterdir()) == []


def test_without_java_spark_says_so_and_leaves_no_temp_folder(tmp_path, monkeypatch):
    import tempfile
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))               # no java on it
    from pyspark import SparkContext
    monkeypatch.setattr(SparkContext, "_active_spark_context", None)   # as in a fresh process
    scratch = tmp_path / "tmp"                               # this test's own temp folder: tests
    scratch.mkdir()                                          # run beside it may make theirs
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with pytest.raises(SparkEngineError, match="Java was not found"):
        start_spark("local[1]")
    assert list(scratch.iterdir()) == []
