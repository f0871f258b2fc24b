"""The fast BFS: off-heap visited set, symmetry reduction, worker processes (issue 8)."""

import numpy as np
import pytest
from click.testing import CliRunner

import hwcheck.checker.bfs as bfs_module
import hwcheck.checker.fpset as fpset_module
from hwcheck.checker.bfs import bfs
from hwcheck.checker.fpset import FingerprintSet
from hwcheck.checker.symmetry import canonicalizer
from hwcheck.cli.main import cli
from hwcheck.spec import Config, Model, kafka_tla

from .conftest import exact_reachable

# design-model runs (modes by Kafka release); symmetry renames only replicas other than r0 (the
# preferred replica), so with 2 replicas it is the identity and the 3-replica runs are the ones it reduces
# (the first with max_epoch=1: the same data loss after 12 steps, where the search stops inside a
# level, then, with all_invariants, the whole space: 9,198 states to depth 22 instead of 34,092 to
# depth 32, for the tests that run bfs four times on it)
DESIGN = [Config(mode="hw", records=1, crashes=2, max_epoch=1),
          Config(mode="hw", power_failures=1, crashes=0, records=1),
          Config(mode="kip101", crashes=1, records=2, max_epoch=2), Config(mode="kip279", crashes=1, records=2),
          Config(mode="epoch", records=1, crashes=1), Config(mode="epoch", unclean_election=True, records=1, crashes=1),
          Config(mode="kip279", replicas=3, crashes=0, records=1, max_epoch=2),
          Config(mode="hw", replicas=3, records=1, crashes=1, max_epoch=1, acks="1")]
TLA = [kafka_tla.Config(mode=m, max_leader_epoch=2) for m in kafka_tla.MODES] + [
    kafka_tla.Config(mode="kip279", replicas=3, max_leader_epoch=1)]
MODELS = [Model(c) for c in DESIGN] + [kafka_tla.Model(c) for c in TLA]
IDS = [f"design-{c.mode}-{i}" for i, c in enumerate(DESIGN)] + [f"tla-{c.mode}-{c.replicas}" for c in TLA]


def reachable(model):
    return set(exact_reachable(model))


def assert_replays(model, trace):
    assert trace.states[0] in model.init_states()
    for s, label, t in zip(trace.states, trace.labels, trace.states[1:]):
        assert model.step(s, label) == t
    assert trace.invariant in model.violated(trace.states[-1])


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_symmetry_keeps_every_verdict_and_trace_length(model):
    # the 3-replica design run with faults is too large to explore whole here: it stops at its
    # first violation, which is what symmetry must keep too
    full = not (getattr(model, "family", "design") == "design" and model.cfg.replicas >= 3 and model.cfg.crashes)
    plain, sym = bfs(model, all_invariants=full), bfs(model, all_invariants=full, symmetry=True)
    assert sym.verdict == plain.verdict
    assert [(t.invariant, t.steps) for t in sym.violations] == [(t.invariant, t.steps) for t in plain.violations]
    assert sym.distinct_states <= plain.distinct_states
    for trace in sym.violations:
        assert_replays(model, trace)


@pytest.mark.parametrize("model", [MODELS[6], Model(Config(mode="hw", replicas=3, records=1, crashes=0, max_epoch=1)),
                                   MODELS[-1]], ids=["kip279-3", "hw-3", "tla-kip279-3"])
def test_symmetry_counts_the_classes_of_reachable_states(model):
    canon = canonicalizer(model)
    states = reachable(model)
    classes = {canon(s) for s in states}
    r = bfs(model, symmetry=True, only=[])
    assert r.distinct_states == len(classes) < len(states)


@pytest.mark.parametrize("model", [MODELS[0], MODELS[5], MODELS[9], MODELS[11]],
                         ids=["hw", "epoch-unclean", "tla-kip101", "tla-kip320"])
@pytest.mark.parametrize("symmetry", [False, True])
def test_two_workers_give_the_results_of_one(model, symmetry, monkeypatch):
    monkeypatch.setattr(bfs_module, "PARALLEL_LEVEL", 16)    # the pool takes every level but the first
    for all_invariants in (False, True):
        one = bfs(model, symmetry=symmetry, all_invariants=all_invariants)
        two = bfs(model, symmetry=symmetry, all_invariants=all_invariants, workers=2)
        assert (one.verdict, one.distinct_states, one.generated_states, one.depth) == \
               (two.verdict, two.distinct_states, two.generated_states, two.depth)
        assert [t.labels for t in one.violations] == [t.labels for t in two.violations]


@pytest.mark.parametrize("block", [1 << 16, 3], ids=["one-block", "3-slot-blocks"])
def test_fingerprint_set_agrees_with_a_python_set_through_growth(block, monkeypatch):
    monkeypatch.setattr(fpset_module, "_GROW_BLOCK", block)     # growth moves the entries block by block
    rng = np.random.default_rng(7)
    table, seen = FingerprintSet(bits=4), {}
    for _ in range(30):
        batch = rng.integers(0, 5000, size=400).astype(np.uint64)
        batch[0] = 0                                   # the fingerprint 0 is a value like others
        new = table.add_new(batch)
        expected = []
        for fp in batch.tolist():
            expected.append(fp not in seen)
            if fp not in seen:
                seen[fp] = len(seen)
        assert new.tolist() == expected
    assert len(table) == len(seen) and table.bits > 4
    assert all(table.index_of(fp) == i for fp, i in seen.items())
    assert table.index_of(5001) is None


@pytest.mark.parametrize("model", [MODELS[0], MODELS[5], MODELS[11]], ids=["hw", "epoch-unclean", "tla-kip320"])
def test_small_frontier_chunks_give_the_results_of_large_ones(model, monkeypatch):
    """CHUNK sets how many states a task expands and how many a pickled frontier piece holds;
    with 5, tasks are many and most outputs are cut into several pieces."""
    big = bfs(model, all_invariants=True)
    monkeypatch.setattr(bfs_module, "CHUNK", 5)
    small = bfs(model, all_invariants=True)
    assert (big.verdict, big.distinct_states, big.generated_states, big.depth) == \
           (small.verdict, small.distinct_states, small.generated_states, small.depth)
    assert [t.labels for t in big.violations] == [t.labels for t in small.violations]


def test_cli_symmetry_and_workers(tmp_path):
    out = tmp_path / "t.itf.json"
    r = CliRunner().invoke(cli, ["verify", "--mode", "hw", "--records", "1", "--symmetry", "--workers", "2",
                                 "--quiet", "--out", str(out)])
    assert r.exit_code == 1 and "NoCommittedDataLoss after 12 steps" in r.output
    replayed = CliRunner().invoke(cli, ["replay", str(out)])
    assert replayed.exit_code == 0 and "NoCommittedDataLoss broken" in replayed.output
    bad = CliRunner().invoke(cli, ["verify", "--workers", "0"])
    assert bad.exit_code == 2
