"""The 2.7+ rungs of the mode ladder, step by step: truncation on fetch (KAFKA-10554) and its two bugs
(KAFKA-13141, KAFKA-14704), broker epochs (KIP-903), disk loss, follower reads, the z3 engine's
refusal of what it does not encode, and ITF traces of the new state. Every test runs in well under
a second: labelled steps through ``Model.step`` or the action helpers on crafted replicas."""

import json

import pytest

from hwcheck.checker.result import Trace
from hwcheck.checker.symbolic import Encoding
from hwcheck.checker.trace import TraceError, load_itf, replay, to_itf
from hwcheck.spec import Config, ConfigError, Model
from hwcheck.spec.actions import OUT_OF_RANGE, Rules, _diverging, _maybe_expand_isr, _read_for_follower
from hwcheck.spec.invariants import consumer_consistency, consumer_consistency_with_follower_reads
from hwcheck.spec.modes import LADDER, MODES
from hwcheck.spec.state import FETCH, FETCH_RESPONSE, LEADER, UNDEFINED, Fetch, FetchResponse, Replica

from .conftest import run_labels


def _run(mode, labels, **knobs):
    """The states of the labelled steps under ``mode``, stopping at the first refused step (then the
    last element is None)."""
    model = Model(Config(mode=mode, **knobs))
    states = model.init_states()[:1]
    for label in labels:
        states.append(model.step(states[-1], label))
        if states[-1] is None:
            break
    return model, states


def _position(name):
    return [m.name for m in LADDER].index(name)


def test_the_new_rungs_sit_after_kip380_in_release_order():
    names = [m.name for m in LADDER]
    assert _position("kip380") < _position("kafka10554") < _position("kafka13141") < _position("kip903")
    assert names[_position("kafka10554") + 1:_position("kip903") + 1] == ["kafka13141", "kafka14704", "kip903"]
    assert Config(mode="epoch").mode == LADDER[-1].name
    bugs = [(m.diverging_fetch_updates_follower, m.hw_before_truncation) for m in (
        MODES["kafka10554"], MODES["kafka13141"], MODES["kafka14704"], MODES["kip903"])]
    assert bugs == [(True, True), (False, True), (False, False), (False, False)]
    k903 = MODES["kip903"]
    assert k903.isr_only_live and k903.broker_epochs and not k903.isr_removal_bumps_epoch
    assert all(m.isr_removal_bumps_epoch and not m.broker_epochs for m in LADDER[:_position("kip903")])
    assert not any(m.truncate_on_fetch for m in LADDER[:_position("kafka10554")])
    assert all(m.truncate_on_fetch for m in LADDER[_position("kafka10554"):])


# ---------------------------------------------------------------- divergence detection

# a leader at epoch 2 whose log holds epoch 0 at offsets 0..2 and epoch 2 at 3..4
LEADER_LOG = ((0, 0), (1, 0), (2, 0), (3, 2), (4, 2))
CRAFTED_LEADER = Replica(alive=1, role=LEADER, leader_epoch=2, leader=0, isr=0b11, log=LEADER_LOG, hw=3, flushed=0,
                         epoch_cache=((0, 0), (2, 3)), truncating=0, remote_leo=(UNDEFINED, 3), leading_since=2,
                         remote_fetch_leo=(UNDEFINED, UNDEFINED))     # a leader keeps one per replica


def _fetch(offset, last_epoch, leader_epoch=2):
    return Fetch(FETCH, 0, leader_epoch, offset, last_epoch, 0)


@pytest.mark.parametrize("offset, last_epoch, answer", [
    (3, 0, ()),                # epoch 0 ends at 3 on the leader: the logs agree up to the fetch offset
    (5, 2, ()),                # the leader's latest epoch ends at its LEO
    (0, UNDEFINED, ()),        # an empty log names no epoch: nothing to compare
    (4, 0, (0, 3)),            # the follower has epoch-0 records the leader lacks at offset 3
    (4, 1, (0, 3)),            # the leader never had epoch 1: its largest epoch <= 1 is 0, ending at 3
    (5, 3, OUT_OF_RANGE),      # an epoch above the leader's latest: no answer, OFFSET_OUT_OF_RANGE
])
def test_the_leader_finds_where_a_fetch_diverges(offset, last_epoch, answer):
    rules = Rules(Config(mode="kafka13141"), MODES["kafka13141"], 2)
    assert _diverging(rules, CRAFTED_LEADER, _fetch(offset, last_epoch)) == answer


def test_a_diverging_fetch_is_answered_with_the_epoch_and_no_records():
    model = Model(Config(mode="kafka13141", records=len(LEADER_LOG)))
    s = model.init_states()[0]
    s = s._replace(replicas=(CRAFTED_LEADER, s.replicas[1]))
    after, diverged = _read_for_follower(s, model.rules, 0, 1, _fetch(4, 0))
    assert diverged == FetchResponse(FETCH_RESPONSE, 0, (), 3, 5, 0, 3)
    assert after == s                                                   # r1's fetch state untouched
    _, agreed = _read_for_follower(s, model.rules, 0, 1, _fetch(3, 0))
    assert agreed[:5] == (FETCH_RESPONSE, 0, LEADER_LOG[3:], 3, 5) and agreed[5:7] == (UNDEFINED, UNDEFINED)
    # before truncation on fetch neither the Fetch nor the response carries an epoch
    old = Model(Config(mode="kafka10706", records=len(LEADER_LOG)))
    _, plain = _read_for_follower(s, old.rules, 0, 1, Fetch(FETCH, 0, 2, 4))
    assert plain == FetchResponse(FETCH_RESPONSE, 0, LEADER_LOG[4:], 4, 5)        # offset 4 became r1's LEO: HW 4
    assert (plain.diverging_epoch, plain.diverging_end_offset) == (UNDEFINED, UNDEFINED)
    # KAFKA-13141: in 2.8.0 the diverging offset 4 also becomes r1's LEO, and the HW moves over it
    buggy = Model(Config(mode="kafka10554", records=len(LEADER_LOG)))
    after, response = _read_for_follower(s, buggy.rules, 0, 1, _fetch(4, 0))
    assert response == FetchResponse(FETCH_RESPONSE, 0, (), 4, 5, 0, 3) and after.replicas[0].remote_leo[1] == 4


def test_a_consistent_fetch_gets_records_through_the_model():
    model = Model(Config(mode="kafka13141"))
    s = run_labels(model, [("produce", 0), ("send_fetch", 1), ("leader_handle_fetch", 0, 1),
                           ("follower_handle_fetch", 1), ("produce", 0), ("send_fetch", 1)])[-1]
    assert s.inflight[1] == (FETCH, 0, 0, 1, 0, 0)          # offset 1, last fetched epoch 0, broker epoch 0
    s = model.step(s, ("leader_handle_fetch", 0, 1))
    assert s.inflight[1] == FetchResponse(FETCH_RESPONSE, 0, ((1, 0),), 1, 2, UNDEFINED, UNDEFINED)
    s = model.step(s, ("follower_handle_fetch", 1))
    assert s.replicas[1].log == ((0, 0), (1, 0)) and s.replicas[1].hw == 1


# ---------------------------------------------------------------- KAFKA-13141

KAFKA_13141 = [
    ("produce", 0), ("controlled_shutdown_leader", 0, 1), ("restart", 0), ("become_leader", 1), ("produce", 1),
    ("become_follower", 0), ("send_fetch", 0), ("leader_handle_fetch", 1, 0),
    ("controlled_shutdown_leader", 1, 0), ("become_leader", 0)]


def test_kafka_13141_a_diverging_fetch_moves_the_follower_only_in_2_8_0():
    upto = KAFKA_13141.index(("leader_handle_fetch", 1, 0))
    for mode, remote in (("kafka10554", 1), ("kafka13141", UNDEFINED), ("kip903", UNDEFINED)):
        _, states = _run(mode, KAFKA_13141[:upto + 1])
        before, after = states[-2], states[-1]
        # r0 fetches from offset 1 naming epoch 0, which ends at 0 on r1 (r1's log starts at epoch 1)
        assert before.inflight[0][:5] == (FETCH, 1, 1, 1, 0)
        assert after.inflight[0][:3] == (FETCH_RESPONSE, 1, ()) and after.inflight[0][5:7] == (0, 0)
        assert after.replicas[1].remote_leo[0] == remote, mode


def test_kafka_13141_the_diverging_offset_lets_the_leader_hand_over_to_a_replica_without_the_record():
    model, states = _run("kafka10554", KAFKA_13141)
    assert None not in states
    assert all(not model.violated(s) for s in states[:-1])
    assert "NoCommittedDataLoss" in model.violated(states[-1])
    # r0 joined the ISR while r1 handled its diverging Fetch
    assert states[-3].controller.isr == 0b11 and states[-3].replicas[0].log == ((0, 0),)
    # the fix: the leader still does not know r0's LEO, so that Fetch cannot add r0 to the ISR, and
    # r1 has no ISR peer to hand over to
    model, states = _run("kafka13141", KAFKA_13141)
    assert states[-1] is None and len(states) - 2 == KAFKA_13141.index(("controlled_shutdown_leader", 1, 0))
    assert states[-2].controller.isr == 0b10
    assert all(not model.violated(s) for s in states[:-1])


# ---------------------------------------------------------------- KAFKA-14704

KAFKA_14704 = [
    ("produce", 0), ("controlled_shutdown_leader", 0, 1), ("restart", 0), ("become_leader", 1), ("produce", 1),
    ("become_follower", 0), ("send_fetch", 0), ("shrink_isr", 1, 2), ("leader_handle_fetch", 1, 0),
    ("follower_handle_fetch", 0)]
KNOBS_14704 = dict(replicas=3, min_isr=2, crashes=1)


def test_kafka_14704_the_hw_lands_on_the_divergent_log_before_the_truncation():
    model, states = _run("kafka13141", KAFKA_14704, **KNOBS_14704)
    assert None not in states and all(not model.violated(s) for s in states[:-1])
    assert model.violated(states[-1]) == ["NoLogDivergence"]
    r0, r1 = states[-1].replicas[:2]
    assert r0.log == ((0, 0),) and r0.hw == 1                 # the old record, under the leader's HW
    assert r1.log == ((1, 1),) and r1.hw == 1
    # the truncation is still to come: the response stays, its HW spent
    assert states[-1].inflight[0] == FetchResponse(FETCH_RESPONSE, 1, (), UNDEFINED, 1, 0, 0)
    s = model.step(states[-1], ("follower_handle_fetch", 0))
    assert s.replicas[0].log == () and s.inflight[0] == () and not model.violated(s)


def test_kafka_14704_is_in_2_8_0_too_and_fixed_in_kip903():
    model, states = _run("kafka10554", KAFKA_14704, **KNOBS_14704)
    assert model.violated(states[-1]) == ["NoLogDivergence"]
    model, states = _run("kip903", KAFKA_14704, **KNOBS_14704)
    assert None not in states and all(not model.violated(s) for s in states)
    r0 = states[-1].replicas[0]
    assert (r0.log, r0.hw, r0.epoch_cache, states[-1].inflight[0]) == ((), 0, (), ())   # truncated, HW untouched


def test_kafka_14704_a_reader_of_the_follower_sees_the_divergent_record():
    model, states = _run("kafka13141", KAFKA_14704, follower_reads=True, **KNOBS_14704)
    assert set(model.violated(states[-1])) == {"NoLogDivergence", "ConsumerConsistency"}
    # without follower reads only the leader's readers count, and the leader holds what they read
    assert consumer_consistency(states[-1]) and not consumer_consistency_with_follower_reads(states[-1])


# ---------------------------------------------------------------- KIP-903

# r1's Fetch from before it lost its disk reaches the leader r0 after r1 came back empty. r0 had
# shrunk r1 out of the ISR at the same leader epoch, so the Fetch is not fenced; r0 takes its offset
# as r1's LEO and, handling it, adds the empty r1 to the ISR, then hands over to it
STALE = [
    ("produce", 0), ("send_fetch", 1), ("leader_handle_fetch", 0, 1), ("follower_handle_fetch", 1), ("send_fetch", 1),
    ("shrink_isr", 0, 1), ("shrink_isr", 0, 2), ("lose_disk", 1), ("controller_handle_failure", 1), ("restart", 1),
    ("leader_handle_stale_fetch", 0, 1), ("controlled_shutdown_leader", 0, 1), ("become_leader", 1)]
KNOBS_STALE = dict(replicas=3, records=1, min_isr=1, crashes=1, disk_losses=1)


def test_kip_903_before_it_a_stale_fetch_puts_an_empty_broker_in_the_isr():
    model, states = _run("kafka13141", STALE, **KNOBS_STALE)
    assert None not in states and all(not model.violated(s) for s in states[:-1])
    assert "NoCommittedDataLoss" in model.violated(states[-1])
    lost = STALE.index(("lose_disk", 1)) + 1
    assert states[lost].stale[1] == (FETCH, 0, 0, 1, 0, 0)           # the abandoned Fetch: offset 1
    expanded = states[STALE.index(("leader_handle_stale_fetch", 0, 1)) + 1]
    assert expanded.controller.isr == 0b011 and expanded.replicas[1].log == ()
    assert expanded.controller.epoch == 0                            # no epoch moved: nothing fenced it


def test_kip_903_refuses_the_isr_addition_of_a_stale_incarnation():
    model, states = _run("kip903", STALE, **KNOBS_STALE)
    at = STALE.index(("controlled_shutdown_leader", 0, 1))      # no ISR peer to hand over to
    assert states[-1] is None and len(states) - 2 == at
    s = states[-2]
    leader, c = s.replicas[0], s.controller
    assert leader.remote_leo[1] == 1 and c.isr == 0b001              # the stale Fetch moved r1's LEO only
    assert leader.remote_broker_epoch[1] == 0 and c.broker_epochs[1] == 1
    # the broker epoch alone refuses it: the same state under kip903 without broker epochs adds r1
    no_epochs = MODES["kip903"].variant(name="kip903-without-broker-epochs", broker_epochs=False)
    assert _maybe_expand_isr(s, Rules(model.cfg, no_epochs, 3), 0, 1).controller.isr == 0b011
    assert _maybe_expand_isr(s, model.rules, 0, 1) == s


def test_kip_903_the_new_incarnation_joins_once_its_own_fetches_catch_up():
    """After the stale Fetch is refused, the restarted r1 (no leader epoch in memory) applies the
    current LeaderAndIsr at the same epoch, fetches with broker epoch 1, and joins the ISR once its
    own Fetch reaches the leader's HW."""
    at = STALE.index(("leader_handle_stale_fetch", 0, 1)) + 1
    model, states = _run("kip903", STALE[:at], **KNOBS_STALE)
    s = states[-1]
    assert s.replicas[1].alive and s.replicas[1].leader_epoch == UNDEFINED and s.controller.epoch == 0
    states = run_labels(model, STALE[:at] + [("become_follower", 1), ("send_fetch", 1)])
    assert states[-1].inflight[1] == (FETCH, 0, 0, 0, UNDEFINED, 1)          # the new broker epoch
    s = model.step(states[-1], ("leader_handle_fetch", 0, 1))
    assert s.replicas[0].remote_broker_epoch[1] == 1 and s.replicas[0].remote_leo[1] == 0
    assert s.controller.isr == 0b001                                          # not caught up yet
    for label in (("follower_handle_fetch", 1), ("send_fetch", 1), ("leader_handle_fetch", 0, 1)):
        s = model.step(s, label)
    assert s is not None and s.controller.isr == 0b011 and s.replicas[1].log == ((0, 0),)


def test_kip_903_controller_removal_keeps_the_epoch_and_the_leader_takes_the_isr():
    """A follower that loses its disk while in the ISR: the controller removes it without a new leader
    epoch in kip903 (a new one in kafka13141), and the leader applies that ISR at its own epoch."""
    labels = [("produce", 0), ("send_fetch", 1), ("leader_handle_fetch", 0, 1), ("follower_handle_fetch", 1),
              ("lose_disk", 1), ("controller_handle_failure", 1)]
    for mode, epoch in (("kafka13141", 1), ("kip903", 0)):
        model, states = _run(mode, labels, **KNOBS_STALE)
        c = states[-1].controller
        assert (c.epoch, c.isr, c.live) == (epoch, 0b101, 0b101), mode
        applied = model.step(states[-1], ("become_leader", 0))
        if mode == "kip903":
            assert applied.replicas[0].isr == 0b101 and applied.replicas[0].leader_epoch == 0
            assert applied.replicas[0].epoch_cache == ((0, 0),)
        else:
            assert applied.replicas[0].leader_epoch == 1 and applied.replicas[0].epoch_cache == ((0, 0), (1, 1))
        # r0 led already: it keeps what it learned of its followers
        assert applied.replicas[0].remote_leo == states[-1].replicas[0].remote_leo
        assert model.step(applied, ("become_leader", 0)) is None             # applied once


# ---------------------------------------------------------------- disk loss

def test_lose_disk_empties_the_disk_and_spends_the_budget():
    model = Model(Config(mode="kip903", disk_losses=1))
    before = run_labels(model, [("produce", 0), ("send_fetch", 1), ("leader_handle_fetch", 0, 1),
                                ("follower_handle_fetch", 1), ("send_fetch", 1), ("leader_handle_fetch", 0, 1),
                                ("follower_handle_fetch", 1), ("produce", 0), ("send_fetch", 1)])[-1]
    assert before.replicas[1].log and before.replicas[1].hw == 1 and before.replicas[1].epoch_cache
    s = model.step(before, ("lose_disk", 1))
    r1 = s.replicas[1]
    assert (r1.alive, r1.log, r1.hw, r1.epoch_cache, r1.remote_leo) == (0, (), 0, (), ())
    assert s.history.disk_losses == 1 and s.history.crashes == 0
    assert s.inflight[1] == () and s.stale[1] == before.inflight[1]   # its Fetch outlives it
    assert s.controller.live == 0b11                                    # the controller learns later
    assert model.step(s, ("lose_disk", 0)) is None                      # the budget is spent
    assert "lose_disk" not in {label[0] for label, _ in model.successors(s)}
    assert "lose_disk" in {label[0] for label, _ in model.successors(before)}
    assert model.to_json(s)["history"]["disk_losses"] == 1


def test_lose_disk_is_no_action_without_a_budget():
    model = Model(Config(mode="kip903"))
    s = model.init_states()[0]
    assert "lose_disk" not in {label[0] for label, _ in model.successors(s)}
    with pytest.raises(ConfigError, match="unknown action 'lose_disk'"):
        model.step(s, ("lose_disk", 1))
    with pytest.raises(ConfigError):
        model.parse_label("lose_disk(r1)")
    assert "disk_losses" not in model.to_json(s)["history"]


def test_a_broker_back_from_a_lost_disk_restarts_empty_and_with_a_new_broker_epoch():
    model = Model(Config(mode="kip903", disk_losses=1))
    s = run_labels(model, [("produce", 0), ("send_fetch", 1), ("leader_handle_fetch", 0, 1),
                           ("follower_handle_fetch", 1), ("lose_disk", 1)])[-1]
    assert model.step(s, ("restart", 1)) is None        # KIP-380: the controller must see the failure first
    s = model.step(model.step(s, ("controller_handle_failure", 1)), ("restart", 1))
    assert s.replicas[1].alive and s.replicas[1].log == () and s.controller.broker_epochs == (0, 1)


# ---------------------------------------------------------------- follower reads

def test_follower_reads_are_refused_before_kip380():
    for mode in [m.name for m in LADDER[:_position("kip380")]]:
        with pytest.raises(ConfigError, match="follower_reads") as err:
            Config(mode=mode, follower_reads=True)
        assert "\n" not in str(err.value)
    for mode in [m.name for m in LADDER[_position("kip380"):]]:
        assert Config(mode=mode, follower_reads=True).follower_reads


def test_follower_reads_choose_the_follower_aware_consumer_consistency():
    reads = dict(Model(Config(mode="kafka13141", follower_reads=True)).invariants)
    plain = dict(Model(Config(mode="kafka13141")).invariants)
    assert reads["ConsumerConsistency"] is consumer_consistency_with_follower_reads
    assert plain["ConsumerConsistency"] is consumer_consistency
    assert list(reads) == list(plain)


def test_through_the_model_a_followers_hw_never_outruns_the_leaders_exposure():
    """In a run the follower's HW comes from a leader that exposed it already: the follower's rise
    adds nothing to history.exposed (the leader's HW rise did)."""
    model = Model(Config(mode="kip903", follower_reads=True, records=1))
    states = run_labels(model, [("produce", 0), ("send_fetch", 1), ("leader_handle_fetch", 0, 1),
                                ("follower_handle_fetch", 1), ("send_fetch", 1), ("leader_handle_fetch", 0, 1),
                                ("follower_handle_fetch", 1)])
    assert states[-2].history.exposed == (0,) and states[-2].replicas[1].hw == 0
    assert states[-1].replicas[1].hw == 1 and states[-1].history.exposed == (0,)


# ---------------------------------------------------------------- the z3 engine

@pytest.mark.parametrize("mode", ["kafka10554", "kafka13141", "kip903", "kafka15583", "kip966", "kafka19522"])
def test_z3_encodes_the_new_modes(mode):
    """The encoding covers the whole ladder (tests/test_symbolic.py checks it agrees with the spec)."""
    Encoding(Model(Config(mode=mode)))


@pytest.mark.parametrize("knobs", [dict(disk_losses=1), dict(follower_reads=True)])
def test_z3_refuses_the_new_knobs_in_one_line(knobs):
    with pytest.raises(ConfigError, match=next(iter(knobs))) as err:
        Encoding(Model(Config(mode="kip380", **knobs)))
    assert "\n" not in str(err.value)


def test_z3_still_encodes_kip380():
    Encoding(Model(Config(mode="kip380")))


# ---------------------------------------------------------------- ITF

def test_itf_shows_broker_epochs_and_the_new_fetch_fields():
    model, states = _run("kip903", STALE[:STALE.index(("send_fetch", 1)) + 1], **KNOBS_STALE)
    doc = model.to_json(states[-1])
    assert doc["controller"]["broker_epochs"] == {"r0": 0, "r1": 0, "r2": 0}
    assert doc["inflight"]["r1"] == {"type": "Fetch", "leader": "r0", "current_leader_epoch": 0, "fetch_offset": 0,
                                     "last_fetched_epoch": UNDEFINED, "broker_epoch": 0}
    assert doc["replicas"]["r0"]["remote_broker_epoch"] == {"r1": 0, "r2": 0}
    # before KIP-903 the controller has no broker epochs to show
    old, states13141 = _run("kafka13141", STALE[:2], **KNOBS_STALE)
    assert "broker_epochs" not in old.to_json(states13141[-1])["controller"]
    assert "remote_broker_epoch" not in old.to_json(states13141[-1])["replicas"]["r0"]


@pytest.mark.parametrize("mode, labels, knobs, invariant", [
    ("kafka13141", STALE, KNOBS_STALE, "NoCommittedDataLoss"),
    ("kip903", STALE[:STALE.index(("controlled_shutdown_leader", 0, 1))], KNOBS_STALE, None),
    ("kafka10554", KAFKA_13141, {}, "NoCommittedDataLoss"),
    ("kafka13141", KAFKA_14704, KNOBS_14704, "NoLogDivergence"),
])
def test_traces_of_the_new_modes_replay_from_itf(mode, labels, knobs, invariant):
    model, states = _run(mode, labels, **knobs)
    assert None not in states
    doc = load_itf(json.dumps(to_itf(model, Trace(states, list(labels), invariant))))
    assert doc["#meta"]["hwcheck"]["config"]["mode"] == mode
    done = replay(doc)
    assert done.trace.states == states and done.trace.labels == list(labels)
    assert (invariant in done.violated) if invariant else not done.violated
    # the new fields are checked on replay: a tampered broker epoch or diverging epoch is caught
    if mode == "kip903":
        assert doc["states"][-1]["stale"] == {}
        assert doc["states"][-2]["stale"]["r1"]["broker_epoch"] == 0              # the stale incarnation's
        assert doc["states"][-1]["controller"]["broker_epochs"]["r1"] == 1
        doc["states"][-1]["controller"]["broker_epochs"]["r1"] = 5
        with pytest.raises(TraceError, match="broker_epochs"):
            replay(doc)
    if labels is KAFKA_14704:
        response = doc["states"][-2]["inflight"]["r0"]
        assert response["diverging_epoch"] == {"epoch": 0, "end_offset": 0} and response["records"] == []
        response["diverging_epoch"]["end_offset"] = 1
        with pytest.raises(TraceError, match="diverging_epoch"):
            replay(doc)
