"""The port of the community's TLA+ spec (--model kafka-tla): TLC's figures, exactly, and the
port's semantics where it is easy to get wrong (sets, requests, truncation guards)."""

import json

import pytest

from hwcheck.checker.bfs import bfs
from hwcheck.checker.trace import TraceError, load_itf, replay, to_itf
from hwcheck.spec import ConfigError
from hwcheck.spec.kafka_tla import Config, Model
from hwcheck.spec.kafka_tla.actions import first_non_matching_offset_from_tail, lookup_offset_for_epoch
from hwcheck.spec.kafka_tla.state import NONE, ReplicaState, initial_state

from .conftest import exact_reachable, run_cli, run_labels


# TLC 2.20, 2 replicas, LogSize 2, MaxRecords 2, MaxLeaderEpoch 3, INVARIANT StrongIsr, no deadlock check
@pytest.mark.parametrize("mode,trace_states", [("truncate-to-hw", 10), ("kip101", 12)])
def test_tlc_figures_violations_have_tlcs_shortest_trace_length(mode, trace_states):
    model = Model(Config(mode=mode))
    r = bfs(model)
    assert r.verdict == "violated"
    [trace] = r.violations
    assert trace.invariant == "StrongIsr" and len(trace.states) == trace_states
    assert model.violated(trace.states[-1]) == ["StrongIsr"]
    assert all(not model.violated(s) for s in trace.states[:-1])
    assert bfs(model, max_depth=trace.steps - 1).verdict == "holds"   # none shorter


@pytest.mark.parametrize("mode,distinct", [("kip279", 53_099), ("kip320", 28_939)])
def test_tlc_figures_holds_with_tlcs_distinct_state_count(mode, distinct):
    r = bfs(Model(Config(mode=mode)))
    assert r.verdict == "holds" and r.complete
    assert r.distinct_states == distinct


def test_kip320_state_space_by_whole_states_and_canonical_sets():
    """No fingerprint collision hides a state, and every reachable state is canonical: the set of
    LeaderAndIsr requests sorted by (unique) epoch, logs no longer than LogSize, hw <= LogSize."""
    model = Model(Config(mode="kip320"))
    seen = exact_reachable(model)
    assert len(seen) == 28_939
    for s in seen:
        epochs = [q.leader_epoch for q in s.leader_and_isr_requests]
        assert epochs == sorted(set(epochs)) == list(range(s.next_leader_epoch))
        assert all(len(log) <= 2 for log in s.replica_log)


@pytest.mark.parametrize("mode", ["kip279", "kip320", "kip320-first-try"])
def test_weak_isr_and_type_ok_hold_and_leader_in_isr_breaks_in_init(mode):
    model = Model(Config(mode=mode, invariants=("StrongIsr", "WeakIsr", "TypeOk", "LeaderInIsr")))
    r = bfs(model, all_invariants=True)
    # LeaderInIsr as written is false in Init: the quorum has no leader (None \notin isr)
    assert [(t.invariant, t.steps) for t in r.violations] == [("LeaderInIsr", 0)]
    assert r.complete


def test_truncate_to_hw_breaks_weak_isr_too():
    r = bfs(Model(Config(mode="truncate-to-hw", invariants=("WeakIsr",))))
    assert r.verdict == "violated" and r.violations[0].steps == 8


def test_initial_state_is_tlas_init():
    [s] = Model(Config(mode="kip279", replicas=3)).init_states()
    assert s.replica_log == ((), (), ())
    assert all(rs == ReplicaState(hw=0, leader_epoch=-1, leader=NONE, isr=0) for rs in s.replica_state)
    assert (s.next_record_id, s.next_leader_epoch, s.leader_and_isr_requests) == (0, 0, ())
    assert s.quorum_state.isr == 0b111 and s.quorum_state.leader == NONE


def test_controller_stops_at_max_leader_epoch():
    model = Model(Config(mode="kip320", max_leader_epoch=1))
    states = run_labels(model, [("ControllerElectLeader", 0), ("ControllerElectLeader", 1)])
    assert states[-1].next_leader_epoch == 2
    assert not [l for l, _ in model.successors(states[-1]) if l[0].startswith("Controller")]


def test_a_request_naming_no_leader_is_never_taken():
    """\\E leader \\in Replicas: ControllerShrinkIsr of the leader sends a request with leader
    None, which neither BecomeLeader nor a BecomeFollower action ever takes."""
    model = Model(Config(mode="kip279"))
    [s] = run_labels(model, [("ControllerShrinkIsr", 0)])[-1:]
    assert s.quorum_state.leader == NONE and s.leader_and_isr_requests[0].leader == NONE
    assert [l[0] for l, _ in model.successors(s)] == ["ControllerElectLeader", "ControllerShrinkIsr"]


def test_kip101_truncation_offset_beyond_the_end_disables_becoming_follower():
    """TruncateTo requires newEndOffset <= endOffset: a follower behind a leader whose last epoch
    matches its own is asked to 'truncate' to the leader's end offset and cannot take the request."""
    model = Model(Config(mode="kip101"))
    states = run_labels(model, [("ControllerElectLeader", 0), ("BecomeLeader", 0, 0), ("LeaderWrite", 0),
                                ("BecomeFollowerTruncateKip101", 0, 1, 0), ("FollowerReplicate", 1, 0),
                                ("LeaderWrite", 0), ("ControllerShrinkIsr", 1)])
    s = states[-1]
    # r0 holds 0@0 1@0, r1 holds 0@0; request e1 names r0 and r1 is still on epoch 0
    assert s.leader_and_isr_requests[-1].leader == 0 and s.replica_state[1].leader_epoch == 0
    assert lookup_offset_for_epoch(s, 0, 1, 0) == 2
    assert model.step(s, ("BecomeFollowerTruncateKip101", 0, 1, 1)) is None
    assert model.step(s, ("BecomeLeader", 0, 1)) is not None
    # the same step under Kip279 truncates to the last matching offset + 1 and is taken
    k279 = Model(Config(mode="kip279"))
    t = k279.step(s, ("BecomeFollowerTruncateKip279", 0, 1, 1))
    assert t is not None and t.replica_log[1] == ((0, 0),)


def test_first_non_matching_offset_from_tail():
    s = initial_state(2, 3)
    s = s._replace(replica_log=((( 0, 0), (1, 0), (2, 1)), ((0, 0), (1, 2))))
    assert first_non_matching_offset_from_tail(s, 0, 1) == 1
    assert first_non_matching_offset_from_tail(s, 1, 0) == 1
    assert first_non_matching_offset_from_tail(s._replace(replica_log=((), ((0, 0),))), 0, 1) == 0


def test_quorum_update_needs_the_true_leader():
    """LeaderShrinkIsr by r0 once the controller has moved on to r1 is refused (zombie fencing)."""
    model = Model(Config(mode="kip279"))
    states = run_labels(model, [("ControllerElectLeader", 0), ("BecomeLeader", 0, 0), ("LeaderWrite", 0)])
    assert ("LeaderShrinkIsr", 0, 1) in [l for l, _ in model.successors(states[-1])]
    later = model.step(states[-1], ("ControllerElectLeader", 1))
    assert not [l for l, _ in model.successors(later) if l[0] == "LeaderShrinkIsr"]


def test_labels_round_trip_and_bad_labels_are_refused():
    model = Model(Config(mode="kip101"))
    trace = bfs(model).violations[0]
    for label in trace.labels:
        assert model.parse_label(model.format_label(label)) == label
    for bad in ["LeaderWrite", "LeaderWrite(r2)", "BecomeLeader(r0)", "BecomeLeader(e0,r0)", "Teleport(r0)"]:
        with pytest.raises(ConfigError):
            model.parse_label(bad)


def test_config_is_validated():
    for bad in [dict(mode="epoch"), dict(replicas=0), dict(log_size=0), dict(max_leader_epoch=-1),
                dict(invariants=("Nope",)), dict(invariants=())]:
        with pytest.raises(ConfigError):
            Config(**bad)


def test_trace_round_trips_through_itf_with_its_model_family():
    model = Model(Config(mode="truncate-to-hw"))
    trace = bfs(model).violations[0]
    doc = to_itf(model, trace)
    assert doc["#meta"]["hwcheck"]["model"] == "kafka-tla" and doc["vars"][0] == "replicaLog"
    assert doc["states"][0]["quorumState"] == {"leaderEpoch": -1, "leader": None, "isr": {"#set": ["r0", "r1"]}}
    done = replay(load_itf(json.dumps(doc)))
    assert done.model.cfg == model.cfg and done.trace.labels == trace.labels and done.violated == ["StrongIsr"]
    doc["states"][3]["replicaState"]["r0"]["hw"] = 7
    with pytest.raises(TraceError, match="step 3 .*replicaState.r0.hw"):
        replay(doc)
    del doc["#meta"]["hwcheck"]["model"]     # no family: a design-model trace, whose config is not
    with pytest.raises(TraceError, match="bad config"):
        replay(doc)


def test_cli_verify_and_replay_kafka_tla(tmp_path):
    r = run_cli("verify", "--model", "kafka-tla", "--mode", "kip101", "--out", "t.json", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "violated: StrongIsr after 11 steps" in r.stdout and "model=kafka-tla mode=kip101" in r.stdout
    r = run_cli("replay", "t.json", cwd=tmp_path)
    assert r.returncode == 0 and "StrongIsr broken in the last state" in r.stdout
    assert "BecomeFollowerTruncateKip101" in r.stdout
    r = run_cli("verify", "--model", "kafka-tla", "--quiet", cwd=tmp_path)
    assert r.returncode == 0 and "28,939 distinct states" in r.stdout and "mode=kip320" in r.stdout


@pytest.mark.parametrize("args,message", [
    (["--model", "kafka-tla", "--crashes", "1"], "--crashes does not apply to --model kafka-tla"),
    (["--model", "kafka-tla", "--mode", "hw"], "unknown kafka-tla mode 'hw'"),
    (["--log-size", "3"], "--log-size applies to --model kafka-tla only"),
    (["--mode", "kip320-first-try"], "mode kip320-first-try belongs to --model kafka-tla"),
    (["--model", "kafka-tla", "--invariant", "Nope"], "unknown invariant Nope"),
])
def test_cli_refuses_knobs_of_the_other_family(tmp_path, args, message):
    r = run_cli("verify", *args, cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"hwcheck: error: {message}")


@pytest.mark.slow
def test_kip279_with_three_replicas_breaks_strong_isr_and_replays(tmp_path):
    """A follower truncates against a named leader's stale log (Kip320's comment on Kip279)."""
    r = run_cli("verify", "--model", "kafka-tla", "--mode", "kip279", "--replicas", "3", "--out", "k.json",
                cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "violated: StrongIsr after 10 steps" in r.stdout
    doc = json.loads((tmp_path / "k.json").read_text())
    actions = [st["#meta"]["action"] for st in doc["states"]]
    # the last step: r2 becomes follower of r1 on an old request and truncates against r1's empty log
    assert actions[-1] == "BecomeFollowerTruncateKip279(r1,r2,e1)"
    last = doc["states"][-1]
    assert last["replicaLog"]["r2"]["endOffset"] == 0 and last["replicaState"]["r0"]["hw"] == 1
    assert "r2" in last["quorumState"]["isr"]["#set"]
    r = run_cli("replay", "k.json", cwd=tmp_path)
    assert r.returncode == 0 and "replayed 10 steps: StrongIsr broken in the last state" in r.stdout


@pytest.mark.parametrize("name", ["hwcheck.spec.kafka_tla", "hwcheck.spec.kafka_tla.state",
                                  "hwcheck.spec.kafka_tla.model", "hwcheck.spec.kafka_tla.invariants",
                                  "hwcheck.checker.families"])
def test_kafka_tla_docstring_examples_run(name):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
