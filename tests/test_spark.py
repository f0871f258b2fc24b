"""The Spark engine against bfs: same distinct states, depth and shortest trace length, in every
mode; its command line; Spark's console noise kept out of hwcheck's output.

One SparkContext (local[2]) is shared by the module: a JVM start costs seconds."""

import json
import pickle

import pytest

from hwcheck.checker.bfs import bfs
from hwcheck.checker.spark import SparkEngineError, spark_bfs, start_spark
from hwcheck.spec import Config, Model

from .conftest import run_cli, run_labels

pytestmark = pytest.mark.slow

SMALL = dict(records=1, crashes=1, max_epoch=1)


@pytest.fixture(scope="module")
def sc():
    sc = start_spark("local[2]")
    yield sc
    sc.stop()


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


@pytest.mark.parametrize("mode", ["hw", "kip101", "kip279", "epoch"])
def test_same_figures_as_bfs_in_every_mode(sc, mode):
    model = Model(Config(mode=mode, **SMALL))
    want = bfs(model)
    got = spark_bfs(model, sc=sc, partitions=3)
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


def test_acks_1_loses_data_in_epoch_mode_too(sc):
    model = Model(Config(mode="epoch", records=1, crashes=1, acks="1"))
    want, got = bfs(model), spark_bfs(model, sc=sc, partitions=2)
    assert got.verdict == want.verdict == "violated"
    assert [(t.invariant, t.steps) for t in got.violations] == [(t.invariant, t.steps) for t in want.violations]
    assert_replays(model, got.violations[0])


def test_max_depth_cuts_whole_levels_like_bfs(sc):
    model = Model(Config(mode="kip101", **SMALL))
    want, got = bfs(model, max_depth=6), spark_bfs(model, sc=sc, partitions=2, max_depth=6)
    assert (got.verdict, got.distinct_states, got.generated_states, got.depth, got.complete) == \
        (want.verdict, want.distinct_states, want.generated_states, want.depth, False)


def test_all_invariants_keeps_the_shortest_trace_of_each(sc):
    model = Model(Config(mode="hw", records=1, crashes=1, max_epoch=1, unclean_election=True))
    want = bfs(model, all_invariants=True)
    got = spark_bfs(model, sc=sc, partitions=1, all_invariants=True)
    assert [(t.invariant, t.steps) for t in got.violations] == [(t.invariant, t.steps) for t in want.violations]
    assert len(got.violations) >= 2
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
    args = ["--mode=hw", "--records=1", "--crashes=1", "--max-epoch=1"]
    out = tmp_path / "loss.itf.json"
    proc = run_cli("verify", *args, "--engine=spark", "--master=local[1]", "--partitions=2", "--out", out,
                   cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr == ""                                   # no log4j, no progress bars
    noise = [line for line in proc.stdout.splitlines()
             if any(w in line for w in ("WARN", "INFO", "log4j", "Stage", "SparkContext"))]
    assert noise == []
    assert "verdict: violated: NoCommittedDataLoss after 10 steps" in proc.stdout
    model = Model(Config(mode="hw", **SMALL))
    assert f"{states_within(model, 10):,} distinct states" in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["#meta"]["hwcheck"]["engine"] == "spark" and len(doc["states"]) == 11
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
