"""Lemma discovery (checker/houdini.py) and ``hwcheck prove --discover``."""

import pytest

from hwcheck.checker.bfs import bfs
from hwcheck.checker.bmc import BOUNDS
from hwcheck.checker.houdini import (FAMILIES, NOT_INDUCTIVE, Lemma, _holds, candidates, discover, drop_chain, prefilter,
                                     reachable)
from hwcheck.cli.symbolic import _drop_chain_lines
from hwcheck.checker.result import HOLDS, VIOLATED
from hwcheck.checker.symbolic import CONCRETE, Encoding
from hwcheck.spec import Config, Model

from .conftest import exact_reachable, one_line_error, run_cli, run_cli_here

SMALL = dict(mode="kafka10706", records=1, crashes=1)


def test_every_family_has_instances_and_names_are_unique():
    enc = Encoding(Model(Config(mode="kip380", replicas=3, records=2)), CONCRETE)
    lemmas = candidates(enc)
    assert {lem.family for lem in lemmas} | {"lookahead", "clause", "blocking"} == set(FAMILIES)
    assert len({lem.name for lem in lemmas}) == len(lemmas) > 500


def test_reachable_is_the_whole_space_or_whole_levels():
    model = Model(Config(**SMALL))
    states, complete = reachable(model)
    assert complete and set(states) == set(exact_reachable(model))
    some, complete = reachable(model, 100)
    assert not complete and 100 <= len(some) < len(states) and set(some) <= set(states)


def test_the_prefilter_rejects_a_lemma_false_in_a_reachable_state_before_z3():
    """A (hand-written) lemma that holds initially but not in some reachable state is rejected
    with a witness, and z3 never sees it (it is not among the lemmas z3 dropped)."""
    model = Model(Config(**SMALL))
    wrong = Lemma("EmptyLogs", "hand-written", lambda enc, s: enc.o.And(*[r.leo == 0 for r in s.reps]))
    right = Lemma("HwWithinLeo", "hand-written", lambda enc, s: enc.o.And(*[r.hw <= r.leo for r in s.reps]))
    cenc = Encoding(model, CONCRETE)
    assert wrong.term(cenc, cenc.of_state(model.init_states()[0]))
    kept, rejected = prefilter(cenc, [wrong, right], reachable(model)[0])
    assert [lem.name for lem in kept] == ["HwWithinLeo"]
    witness = rejected["EmptyLogs"]
    assert any(r.log for r in witness.replicas)
    d = discover(model, ["NoLogDivergence"], extra=[wrong], families=["hand-written"])
    assert "EmptyLogs" in d.rejected and "EmptyLogs" not in [name for _, name in d.dropped]


def test_discovery_proves_no_log_divergence_on_a_small_run():
    """Without crashes (80 states, 2 z3 rounds, 2 lemmas dropped by z3 after the prefilter kept
    them; about 3 s). The same proof with one crash (SMALL: 2,017 states, about 90 z3 rounds) took
    35-68 s and checked nothing this test and test_discovery_proves_the_newest_mode_with_one_record
    do not; test_ctrl_c_during_the_z3_pruning_says_which_round still runs it to its tenth round."""
    model = Model(Config(mode="kafka10706", records=2, crashes=0))
    # every family but the clauses and the lookahead (tests/test_lemma_file.py discovers with the
    # clause family, test_discovery_proves_the_newest_mode... with the lookahead): on the one-crash
    # run, 23 s instead of 40 s
    d = discover(model, ["NoLogDivergence"], families=[f for f in FAMILIES if f not in ("clause", "lookahead")])
    assert d.verdict == HOLDS, (d.cti and (d.cti.label, d.cti.broken))
    assert d.reachable_complete and d.survivors and d.cti is None
    assert bfs(model).verdict == HOLDS             # the engines agree
    # every lemma used holds in every reachable state (an independent enumeration)
    cenc = Encoding(model, CONCRETE)
    for s in exact_reachable(model):
        v = cenc.of_state(s)
        assert all(lem.term(cenc, v) for lem in d.survivors)
    # and the lemmas z3 dropped were true in every state the prefilter saw: only induction failed
    assert d.dropped and not set(name for _, name in d.dropped) & set(d.rejected)


@pytest.mark.slow
def test_discovery_proves_the_newest_mode_with_one_record():
    """`epoch` (4.1+: truncation on fetch, broker epochs, ELR, strict min ISR), 1 record, 1 crash:
    NoLogDivergence is proved by the named templates alone (285 lemmas; with the clause family's
    700-odd clauses the test took 113 s in a suite run, without them 47 s), and every lemma used
    holds in every reachable state (ConsumerConsistency too: docs/proofs.md)."""
    model = Model(Config(mode="epoch", records=1, crashes=1))
    d = discover(model, ["NoLogDivergence"], families=[f for f in FAMILIES if f != "clause"])
    assert d.verdict == HOLDS, (d.cti and (d.cti.label, d.cti.broken))
    cenc = Encoding(model, CONCRETE)
    for s in exact_reachable(model):
        v = cenc.of_state(s)
        assert all(lem.term(cenc, v) for lem in d.survivors)
    families = {lem.family for lem in d.survivors}
    assert {"epoch-answer", "hand-written"} <= families and "clause" not in families


def test_a_counterexample_to_induction_is_a_real_step_and_names_its_families():
    """With orderings alone NoLogDivergence is not inductive: the CTI is a step of the spec from a
    state that satisfies the surviving lemmas, and the goal breaks in the state after it."""
    model = Model(Config(**SMALL))
    d = discover(model, ["NoLogDivergence"], families=["scalar-order"])
    assert d.verdict == NOT_INDUCTIVE
    cti = d.cti
    assert model.step(cti.before, cti.label) == cti.after
    cenc = Encoding(model, CONCRETE)
    before, after = cenc.of_state(cti.before), cenc.of_state(cti.after)
    assert cti.broken and set(cti.broken) <= set(d.goals)
    for goal in d.goals:            # every goal holds before the step; the broken ones fail after it
        assert cenc.bounds_ok(before) if goal == BOUNDS else cenc.invariant(goal, before)
    for goal in cti.broken:
        assert not (cenc.bounds_ok(after) if goal == BOUNDS else cenc.invariant(goal, after))
    # the families named exclude the CTI's first state: a lemma of theirs is false there
    for family, names in cti.excluded_by.items():
        assert family in FAMILIES and names


def test_the_drop_chain_leads_from_the_broken_goal_to_states_no_candidate_excludes():
    """``prove --discover --explain``: each conjunct on the chain was dropped at a real step from
    z3's state; its blockers were dropped in earlier rounds and are false in that state; a root
    has none (no conjunct dropped before it excludes its state)."""
    model = Model(Config(**SMALL))
    cenc = Encoding(model, CONCRETE)
    d = discover(model, ["NoLogDivergence"], families=["scalar-order", "implication", "history"])
    assert d.verdict == NOT_INDUCTIVE
    cti = d.cti
    chain, roots = drop_chain(model, d, cti.broken[0])
    rounds = {name: r for r, _, dead in d.trail for name in dead}
    assert cti.broken[0] in chain and roots and set(roots) <= set(chain)
    for name, drop in chain.items():
        before = d.befores[drop.round]
        after = cenc.of_state(model.step(cenc.to_state(before), drop.label))
        assert not _holds(cenc, d.lemmas, name, after)
        for blocker in drop.blockers:
            assert rounds[blocker] < drop.round and not _holds(cenc, d.lemmas, blocker, before)
        assert (not drop.blockers) == (name in roots)
    for name in roots:                 # no conjunct dropped before a root excludes its state
        before = d.befores[chain[name].round]
        assert all(_holds(cenc, d.lemmas, m, before) for m, r in rounds.items() if r < chain[name].round)
    lines = "\n".join(_drop_chain_lines(model, d))
    assert f"drop chain of {cti.broken[0]}" in lines and f"roots ({len(roots)})" in lines


def test_discovery_finds_the_hw_loss_and_bfs_confirms_it():
    model = Model(Config(mode="hw", acks="1", crashes=1))
    d = discover(model, ["NoCommittedDataLoss"])
    assert d.verdict == VIOLATED
    state, broken = d.violated_in
    assert broken == ["NoCommittedDataLoss"] and "NoCommittedDataLoss" in model.violated(state)


def test_cli_prove_discover(tmp_path):
    r = run_cli("prove", "--mode", "kafka10706", "--records", "1", "--crashes", "0", "--invariant", "NoLogDivergence",
                "--discover")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "verdict: holds at every depth" in r.stdout and "lemmas used:" in r.stdout
    assert "  hand-written (" in r.stdout and "LeoWithinProduced" in r.stdout
    r = run_cli("prove", "--mode", "hw", "--acks", "1", "--crashes", "1", "--invariant", "NoCommittedDataLoss",
                "--discover")
    assert r.returncode == 1 and "verdict: violated: NoCommittedDataLoss" in r.stdout
    assert "<- broken: NoCommittedDataLoss" in r.stdout and "bfs" in r.stdout
    assert "--k" in one_line_error(run_cli_here("prove", "--invariant", "NoLogDivergence", "--mode", "kip380",
                                                "--discover", "--k", "2"))
    assert "--discover" in one_line_error(run_cli_here("prove", "--invariant", "NoLogDivergence", "--explain"))
    # the newest mode is encoded; what the encoding lacks (disk losses, follower reads) is refused
    assert "disk_losses" in one_line_error(run_cli_here("prove", "--invariant", "NoLogDivergence", "--discover",
                                                        "--disk-losses", "1"))


def test_hand_written_candidates_agree_with_their_encoding_and_are_checked_before_z3():
    """spec/auxiliary.py's CANDIDATES: each encoding evaluates as its spec predicate on every state
    of a small run; EpochAnswerCutsSenderLog is false in reachable states of kip279 (2.0 answers
    below the requested epoch's end, its leaders cache no epoch on taking office), so the prefilter
    rejects it there, with a witness, and keeps it in kip320 and in the newest mode (where it reads
    a FetchResponse's diverging epoch)."""
    from hwcheck.spec.auxiliary import CANDIDATES
    for mode, records in (("kip279", 2), ("kip320", 2), ("epoch", 1)):
        model = Model(Config(mode=mode, crashes=1, records=records))
        cenc = Encoding(model, CONCRETE)
        states = exact_reachable(model)
        for s in states:
            v = cenc.of_state(s)
            for name, pred in CANDIDATES:
                assert bool(cenc.invariant(name, v)) == pred(s), (name, s)
        d = discover(model, ["NoLogDivergence"], families=["hand-written"])
        if mode == "kip279":
            witness = d.rejected["EpochAnswerCutsSenderLog"]
            assert witness in set(states) and not dict(CANDIDATES)["EpochAnswerCutsSenderLog"](witness)
        else:
            assert "EpochAnswerCutsSenderLog" not in d.rejected
        assert "FollowerBehindLeaderEpoch" not in d.rejected
        assert "BrokerEpochsWithinBounces" not in d.rejected


def test_ctrl_c_during_discovery_exits_130_in_one_line():
    from .test_interrupts import _ctrl_c, _no_traceback, _start
    child = _start("prove", "--mode", "kafka10706", "--invariant", "NoLogDivergence", "--discover")
    code, out, err = _ctrl_c(child, child.stdout, until=lambda line: line.startswith("property:"), after=1.0)
    assert code == 130, out + err
    _no_traceback(out, err)
    last = out.strip().splitlines()[-1]
    assert last.startswith("interrupted: during the prefilter") and last.endswith("no verdict (k=1)"), last


@pytest.mark.slow
def test_ctrl_c_during_the_z3_pruning_says_which_round():
    from .test_interrupts import _ctrl_c, _no_traceback, _start
    # the one-crash run of kafka10706 (2,017 states, about 90 z3 rounds) reaches its pruning in a few
    # seconds; the newest mode's took over a minute of the suite to get there
    child = _start("prove", "--mode", SMALL["mode"], "--records", str(SMALL["records"]), "--crashes",
                   str(SMALL["crashes"]), "--invariant", "NoLogDivergence", "--discover")
    code, out, err = _ctrl_c(child, child.stdout, until=lambda line: line.startswith("  round 10:"), after=0.5)
    assert code == 130, out + err
    _no_traceback(out, err)
    last = out.strip().splitlines()[-1]
    assert last.startswith("interrupted: during the z3 pruning after") and "in z3 round 1" in last, last
    assert last.endswith("clauses learned before it); no verdict (k=1)"), last
