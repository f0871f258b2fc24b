"""The z3 engine: the encoding agrees with the spec, BMC finds the shortest traces bfs finds, k-induction."""

import json
import random

import pytest
import z3

from hwcheck.checker.bfs import bfs
from hwcheck.checker.bmc import NOT_INDUCTIVE, Unrolling, bmc, prove, symbolic_encoding
from hwcheck.checker.result import HOLDS, VIOLATED
from hwcheck.checker.symbolic import CONCRETE, Encoding, equal, leaves
from hwcheck.checker.trace import load_itf, replay, to_itf
from hwcheck.spec import Config, Model
from hwcheck.spec.auxiliary import AUXILIARY

from .conftest import exact_reachable, run_cli

# per mode, runs whose reachable states are sampled (power failures, acks=1, unclean, 3 replicas...)
AGREEMENT_RUNS = {
    "hw": [dict(), dict(power_failures=1, crashes=1), dict(acks="1", response_hw="before", min_isr=2)],
    "kip101": [dict(records=3, crashes=0), dict(power_failures=1, unclean_election=True)],
    "kip279": [dict(), dict(replicas=3, records=1, crashes=1)],
    "epoch": [dict(), dict(acks="1", unclean_election=True, power_failures=1), dict(replicas=3, records=1)],
}
PER_MODE = 1000


def reachable(model, limit):
    return exact_reachable(model, limit)


def sample(mode, per_mode=PER_MODE, seed=7):
    """(model, state) pairs: per_mode reachable states of the mode, spread over its runs."""
    rnd = random.Random(seed)
    runs = AGREEMENT_RUNS[mode]
    out = []
    for i, kw in enumerate(runs):
        model = Model(Config(mode=mode, **kw))
        states = reachable(model, 20000)
        k = per_mode // len(runs) + (1 if i < per_mode % len(runs) else 0)
        out += [(model, s) for s in rnd.sample(states, k)]
    return out


def disagreements(enc, model, states):
    """States whose successors (labels and states) differ between the spec and the encoding."""
    bad = []
    for s in states:
        if set(model.successors(s)) != set(enc.successors(s)):
            bad.append(s)
    return bad


@pytest.mark.parametrize("mode", list(AGREEMENT_RUNS))
def test_encoding_agrees_with_spec_on_sampled_states(mode):
    pairs = sample(mode)
    assert len(pairs) >= PER_MODE
    encs = {}
    for i, (model, s) in enumerate(pairs):
        enc = encs.setdefault(model.cfg, Encoding(model, CONCRETE))
        v = enc.of_state(s)
        assert enc.wf(v) and enc.to_state(v) == s
        assert set(model.successors(s)) == set(enc.successors(s)), s
        # every invariant, core and auxiliary, evaluates as the spec's predicate does
        for name, pred in tuple(model.invariants) + AUXILIARY:
            assert bool(enc.invariant(name, v)) == pred(s), (name, s)
        if i % 10 == 0:
            assert enc.bounds_ok(v)


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(AGREEMENT_RUNS))
def test_z3_models_of_the_transition_relation_are_the_spec_successors(mode):
    """The solver itself, on the same 1,000 sampled reachable states per mode: all models of
    T(s, s') for a fixed s, enumerated with blocking clauses, are exactly the spec's
    (label, successor) pairs. One solver per model holds T; each state is a push/pop scope."""
    solvers = {}
    checked = 0
    for model, s in sample(mode, per_mode=PER_MODE, seed=3):
        if id(model) not in solvers:
            enc = symbolic_encoding(model)
            un = Unrolling(enc)
            solver = z3.Solver()
            start = un.new_state()
            solver.add(*un.step())
            solvers[id(model)] = (enc, un, solver, start)
        enc, un, solver, start = solvers[id(model)]
        solver.push()
        solver.add(equal(enc.o, start, enc.of_state(s)))
        found = set()
        while solver.check() == z3.sat:
            m = solver.model()
            label = un.labels(m, 1)[0]
            found.add((label, enc.to_state(enc.values(m, un.states[1]))))
            act = un.acts[0]
            solver.add(z3.Or(act != m.eval(act), *[x != m.eval(x, model_completion=True)
                                                   for x in leaves(un.states[1]) if isinstance(x, z3.ExprRef)]))
            assert len(found) < 200
        solver.pop()
        assert found == set(model.successors(s)), s
        checked += 1
    assert checked >= PER_MODE


def test_a_drifting_encoding_fails_the_agreement_test():
    """Mutate one rule (seed 003's ISR expansion: drop 'the follower has reached the leader's HW')
    and the agreement breaks."""
    model = Model(Config(mode="epoch"))
    states = reachable(model, 3000)
    enc = Encoding(model, CONCRETE)
    assert not disagreements(enc, model, states)

    def expand_isr_below_hw(s, l, f):
        o, rep = enc.o, s.reps[l]
        remote = rep.remote[f]
        guard = o.And(enc.in_office(s, l), equal(o, rep.isr, s.ctl.isr), o.Not(rep.isr[f]), remote != -1,
                      remote >= enc.epoch_start(rep, rep.lepoch))
        isr = tuple(True if x == f else b for x, b in enumerate(rep.isr))
        return guard, enc._set(s, l, rep._replace(isr=isr))._replace(ctl=s.ctl._replace(isr=isr))
    enc.overrides["expand_isr"] = expand_isr_below_hw
    assert disagreements(enc, model, states)


def test_bmc_holds_within_a_small_depth():
    r = bmc(Model(Config(mode="hw", records=1, crashes=1)), 4)
    assert r.verdict == HOLDS and r.depth == 4 and not r.violations


def _bmc_matches_bfs(cfg, only):
    model = Model(cfg)
    expected = bfs(model, only=only)
    assert expected.verdict == VIOLATED
    want = expected.violations[0]
    depths = []
    r = bmc(model, want.steps, only=only, progress=lambda k, t, a: depths.append((k, a)))
    assert r.verdict == VIOLATED
    trace = r.violations[0]
    assert (trace.invariant, trace.steps) == (want.invariant, want.steps)
    assert depths == [(k, "unsat") for k in range(want.steps)] + [(want.steps, "sat")]
    done = replay(load_itf(json.dumps(to_itf(model, trace, engine="z3"))))
    assert want.invariant in done.violated and done.trace.steps == want.steps


@pytest.mark.slow
def test_bmc_finds_the_hw_loss_in_as_many_steps_as_bfs():
    _bmc_matches_bfs(Config(mode="hw"), ["NoCommittedDataLoss", "NoLogDivergence", "ConsumerConsistency",
                                         "HwNotAboveLeo"])


@pytest.mark.slow
def test_bmc_finds_the_hw_power_failure_divergence_in_as_many_steps_as_bfs():
    _bmc_matches_bfs(Config(mode="hw", power_failures=1, crashes=0), ["NoLogDivergence"])


@pytest.mark.slow
def test_bmc_on_a_holding_row_finds_nothing_to_the_bfs_depth():
    """A holding row whose whole space bfs explores in 15 levels; BMC to depth 15 (about 20 s here)
    must find nothing. (The larger row max_epoch=1 has bfs depth 17 and BMC to 17 takes 337 s.)"""
    model = Model(Config(mode="epoch", records=1, crashes=1, max_epoch=0))
    full = bfs(model)
    assert full.verdict == HOLDS and full.complete and full.depth == 15
    r = bmc(model, full.depth)
    assert r.verdict == HOLDS and r.depth == full.depth


class _Auxiliary:
    """The model with the auxiliary invariants as its invariants (for bfs)."""

    def __init__(self, model):
        self.model, self.invariants = model, AUXILIARY
        self.init_states, self.successors, self.step = model.init_states, model.successors, model.step


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["epoch", "hw"])
def test_auxiliary_invariants_hold_in_every_reachable_state(mode):
    r = bfs(_Auxiliary(Model(Config(mode=mode))), all_invariants=True)
    assert r.verdict == HOLDS and r.complete and r.distinct_states > 1000


def test_k_induction_reports_a_counterexample_to_induction():
    model = Model(Config(mode="epoch"))
    p = prove(model, ["NoLogDivergence"], 1, aux=AUXILIARY)
    assert p.verdict == NOT_INDUCTIVE and len(p.cti) == 2 and p.broken
    # the CTI is a real step of the spec from a state satisfying the property
    assert model.step(p.cti[0], p.cti_labels[0]) == p.cti[1]


def test_k_induction_proves_an_inductive_property():
    """With one replica that never crashes nor elects, the HW stays within the LEO at every depth."""
    model = Model(Config(mode="hw", replicas=1, records=1, crashes=0, max_epoch=0))
    p = prove(model, ["HwNotAboveLeo"], 1, aux=AUXILIARY)
    assert p.verdict == HOLDS, (p.broken, p.cti)


def test_k_induction_base_case_finds_a_real_violation():
    model = Model(Config(mode="hw", acks="1", crashes=1))
    p = prove(model, ["NoCommittedDataLoss"], 4, aux=())
    assert p.verdict == VIOLATED and p.trace.steps == 3
    assert "NoCommittedDataLoss" in model.violated(p.trace.states[-1])


def test_cli_verify_z3_and_prove(tmp_path):
    out = tmp_path / "t.itf.json"
    r = run_cli("verify", "--mode", "hw", "--acks", "1", "--engine", "z3", "--depth", "5", "--out", out)
    assert r.returncode == 1, r.stderr
    assert "depth 2: no violation" in r.stdout and "NoCommittedDataLoss after 3 steps" in r.stdout
    assert run_cli("replay", out).returncode == 0
    r = run_cli("verify", "--mode", "hw", "--records", "1", "--crashes", "0", "--engine", "z3", "--depth", "3")
    assert r.returncode == 0 and "no violation up to depth 3" in r.stdout
    r = run_cli("verify", "--engine", "z3")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--depth" in r.stderr
    r = run_cli("verify", "--depth", "3")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    r = run_cli("prove", "--mode", "epoch", "--invariant", "NoLogDivergence")
    assert r.returncode == 3 and "not k-inductive" in r.stdout and "state 1 after" in r.stdout
    r = run_cli("prove", "--invariant", "Nope")
    assert r.returncode == 2 and "unknown invariant" in r.stderr
