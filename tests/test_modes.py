"""The rules that tell the modes (Kafka releases) apart, and the controller's elections."""

import pytest

from hwcheck.checker.variants import differences
from hwcheck.spec import Config, Model
from hwcheck.spec.log import (assign_0_11, assign_2_1, end_offset_for_0_11, end_offset_for_2_0,
                              end_offset_for_2_1, truncate)
from hwcheck.spec.modes import (ALIASES, LADDER, MODES, TRUNCATING, TRUNCATING_AGAIN, follower_truncation, lineage,
                               RULES, ZOOKEEPER_RULES, without_elr, zookeeper)
from hwcheck.spec.state import FETCH, UNDEFINED as U, Fetch

from .conftest import exact_reachable, run_labels

LEADER_CACHE = ((0, 0), (2, 3))   # epoch 0 from offset 0, epoch 2 from offset 3; LEO 5


@pytest.mark.parametrize("requested, v0_11, v2_0, v2_1", [
    (2, (U, 5), (2, 5), (2, 5)),      # the latest epoch: its LEO
    (1, (U, 3), (0, 3), (0, 3)),      # an epoch the leader never had: 0.11 answers the next start (KAFKA-6361)
    (0, (U, 3), (0, 3), (0, 3)),
    (3, (U, U), (U, U), (U, U)),      # above every epoch
    (U, (U, U), (U, U), (U, U)),
])
def test_end_offset_for_by_release(requested, v0_11, v2_0, v2_1):
    assert end_offset_for_0_11(LEADER_CACHE, 5, requested) == v0_11
    assert end_offset_for_2_0(LEADER_CACHE, 5, requested) == v2_0
    assert end_offset_for_2_1(LEADER_CACHE, 5, requested) == v2_1


def test_below_the_first_cached_epoch_only_2_1_answers():
    cache = ((1, 0), (2, 3))
    assert end_offset_for_0_11(cache, 5, 0) == (U, U)
    assert end_offset_for_2_0(cache, 5, 0) == (U, U)
    assert end_offset_for_2_1(cache, 5, 0) == (0, 0)            # KAFKA-7415


def test_an_empty_0_11_cache_answers_undefined_with_the_leo():
    """0.11's endOffsetFor compares with latestEpoch first, and an empty cache's latest is UNDEFINED."""
    assert end_offset_for_0_11((), 4, U) == (U, 4)


def test_assign_by_release():
    cache = ((0, 0), (2, 1))
    assert assign_0_11(cache, 1, 1) == cache                   # only appends, never truncates
    assert assign_0_11(cache, 3, 0) == cache                   # an offset before the latest start
    assert assign_0_11(cache, 3, 2) == ((0, 0), (2, 1), (3, 2))
    assert assign_2_1(cache, 1, 1) == ((0, 0), (1, 1))         # conflicting entries go (KAFKA-7415)
    assert assign_2_1(cache, 2, 4) == cache                    # same epoch from a later offset


def follower(cache, leo, hw, mode="kip279", truncating=TRUNCATING):
    model = Model(Config(mode=mode, records=max(leo, 1)))
    rep = model.init_states()[0].replicas[1]
    return rep._replace(log=tuple((i, 0) for i in range(leo)), epoch_cache=cache, hw=hw, truncating=truncating)


def test_follower_truncation_rules():
    f = follower(((0, 0), (1, 2)), 4, 1)
    eof = end_offset_for_2_1
    assert follower_truncation(f, (U, U), eof) == (1, True)            # no answer: the fetch offset = the HW
    assert follower_truncation(f, (U, 3), eof) == (3, True)            # 0.11 answer: min(end, LEO)
    assert follower_truncation(f, (U, 9), eof) == (4, True)
    assert follower_truncation(f, (0, 3), eof) == (2, True)            # own end of epoch 0 is 2
    assert follower_truncation(f, (1, 3), eof) == (3, True)            # min(own end 4, leader end 3)
    g = follower(((0, 0), (2, 2)), 4, 1)
    assert follower_truncation(g, (1, 3), eof) == (2, False)           # lacks epoch 1: step back, ask again


def test_after_an_intermediate_step_undefined_falls_back_to_the_fetch_offset_not_the_hw():
    """AbstractFetcherThread.getOffsetTruncationState @2.0.0: UNDEFINED -> the fetch state's offset,
    which an intermediate step moved to where it truncated (here the LEO 2), not the HW 1."""
    f = follower(((0, 0), (2, 2)), 2, 1, truncating=TRUNCATING_AGAIN)
    assert follower_truncation(f, (U, U), end_offset_for_2_0) == (2, True)
    assert follower_truncation(f._replace(truncating=TRUNCATING), (U, U), end_offset_for_2_0) == (1, True)


def test_the_follower_looks_its_own_cache_up_with_its_release():
    """2.0's own lookup of an epoch below its first cached one is UNDEFINED: min(leader end, LEO)."""
    f = follower(((1, 0),), 3, 0)
    assert follower_truncation(f, (0, 2), end_offset_for_2_0) == (2, True)
    assert follower_truncation(f, (0, 2), end_offset_for_2_1) == (0, True)   # own (0, 0): min(0, 2)


def test_truncation_at_the_leo_trims_the_cache_only_from_2_8():
    f = follower(((0, 0), (2, 1)), 1, 1)
    assert truncate(f, 1) is f                                     # "has no effect" up to 2.6.0
    assert truncate(f, 1, trim_cache_at_leo=True).epoch_cache == ((0, 0),)   # KAFKA-10706


def test_the_ladder():
    assert [m.name for m in LADDER] == ["hw", "kip101", "kip279", "kip320", "kip380", "kafka10706", "kafka10554",
                                        "kafka13141", "kafka14704", "kip903", "kafka15583", "kafka18991", "kip966",
                                        "kafka18991-4.0", "kafka19522", "pr20716"]
    # a tree of release lines: 3.9.1 and 4.0.0 both grow from 3.9.0, 4.1+ from 4.0.1
    parents = {m.name: m.parent for m in LADDER}
    assert parents["hw"] == "" and parents["kafka18991"] == parents["kip966"] == "kafka15583"
    assert parents["kafka18991-4.0"] == "kip966" and parents["kafka19522"] == "kafka18991-4.0"
    assert all(parents[m.name] == LADDER[i - 1].name for i, m in enumerate(LADDER)
               if i and m.name not in ("kip966", "kafka18991-4.0"))
    assert [m.name for m in lineage(MODES["kafka18991"])][-3:] == ["kip903", "kafka15583", "kafka18991"]
    assert parents["pr20716"] == "kafka19522"
    assert ALIASES["epoch"] == LADDER[-1].name and Config(mode="epoch").mode == "pr20716"
    assert Config(mode="kip320").mode == "kip320"
    hw, k101, k279, k320, k380 = LADDER[:5]
    assert not hw.epochs and all(m.epochs for m in LADDER[1:])
    assert [m.assign for m in LADDER[1:5]] == [assign_0_11, assign_0_11, assign_2_1, assign_2_1]
    assert all(m.assign is assign_2_1 and m.end_offset_for is end_offset_for_2_1 for m in LADDER[5:])
    assert [m.end_offset_for for m in LADDER[1:5]] == [end_offset_for_0_11, end_offset_for_2_0,
                                                        end_offset_for_2_1, end_offset_for_2_1]
    assert [m.fenced for m in LADDER] == [False, False, False, True] + [True] * 12
    assert [m.restart_after_detection for m in LADDER] == [False] * 4 + [True] * 12
    assert [m.trim_cache_at_leo for m in LADDER] == [False] * 5 + [True] * 11    # KAFKA-10706: 2.6.1/2.7.0
    rules = {"truncate_on_fetch": [0] * 6 + [1] * 10,
             "diverging_fetch_updates_follower": [0] * 6 + [1] + [0] * 9,      # KAFKA-13141: 2.8.0 only
             "hw_before_truncation": [0] * 6 + [1, 1] + [0] * 8,              # KAFKA-14704: to 3.4.0
             "accept_old_epoch_response": [0] * 6 + [1] * 5 + [0, 1, 0, 0, 0],   # KAFKA-18991: to 3.9.0, 4.0.0
             "isr_only_live": [0] * 8 + [1] * 8,                              # KIP-841 (ZooKeeper: from 3.3.0)
             "broker_epochs": [0] * 9 + [1] * 7, "isr_removal_bumps_epoch": [1] * 9 + [0] * 7,
             "fence_elects": [0] * 9 + [1] * 7, "fence_stops_fetchers": [0] * 9 + [1] * 7,   # KRaft from 3.6
             "strict_min_isr": [0] * 10 + [1] * 6, "elr": [0] * 12 + [1] * 4,
             "elect_fenced_last_leader": [0] * 12 + [1, 1, 0, 0],             # KAFKA-19522: 4.0
             "directory_assignment": [0] * 10 + [1] * 6,                      # KIP-858: KRaft from 3.7
             "assignment_clears_elr": [0] * 12 + [1, 1, 1, 0]}                # 4.0-4.2 (apache/kafka#20716)
    for rule, values in rules.items():
        assert [int(getattr(m, rule)) for m in LADDER] == values, rule
    # every mode but the root moves at least one rule of its parent
    for m in LADDER[1:]:
        assert differences(m, MODES[m.parent]), m.name
    for m in LADDER:
        assert m.kafka and m.changes
        assert all("@" in c.source or "#" in c.source for c in m.changes), m.name
        assert all(c.ref for c in m.changes), m.name


P0 = ("produce", 0)
REPLICATE = [P0, ("send_fetch", 1), ("leader_handle_fetch", 0, 1), ("follower_handle_fetch", 1)]


@pytest.mark.parametrize("mode, cache", [("kip101", ()), ("kip279", ()), ("kip320", ((1, 0),))])
def test_when_a_new_leader_gains_its_cache_entry(mode, cache):
    model = Model(Config(mode=mode))
    s = run_labels(model, [("session_expire", 0), ("elect_offline", 1), ("become_leader", 1)])[-1]
    assert s.replicas[1].epoch_cache == cache                     # KAFKA-7415: on taking office
    s = model.step(s, ("produce", 1))
    assert s.replicas[1].epoch_cache == ((1, 0),)                 # otherwise on the first write


def test_hw_mode_truncates_when_following_a_new_leader_not_at_restart():
    """ReplicaManager.makeFollowers @0.10.2.1: truncation to the HW happens there only."""
    model = Model(Config(mode="hw"))
    s = run_labels(model, REPLICATE + [("crash", 1), ("controller_handle_failure", 1), ("restart", 1)])[-1]
    assert s.replicas[1].log == ((0, 0),) and s.replicas[1].hw == 0
    s = model.step(s, ("become_follower", 1))                     # after a restart the leader is new to it
    assert s.replicas[1].log == ()


@pytest.mark.parametrize("mode, truncates", [("hw", False), ("kip279", False), ("kip320", True)])
def test_same_leader_new_epoch(mode, truncates):
    """The controller drops a dead r2 from the ISR with a new epoch; r1 keeps following r0.
    Partition.makeFollower: nothing to do before 2.1, a fetcher restart from 2.1."""
    model = Model(Config(mode=mode, replicas=3))
    s = run_labels(model, REPLICATE + [("crash", 2), ("controller_handle_failure", 2)])[-1]
    assert s.controller.epoch == 1 and s.controller.isr == 0b011 and s.controller.leader == 0
    s = model.step(s, ("become_follower", 1))
    r1 = s.replicas[1]
    assert r1.leader_epoch == 1
    assert bool(r1.truncating) == (truncates and model.rules.mode.epochs)
    assert r1.log == ((0, 0),)
    remote = s.replicas[0].remote_leo
    s = model.step(s, ("become_leader", 0))
    assert s.replicas[0].remote_leo == remote and remote[1] == 0   # not a new leader: remote LEOs kept


def test_offline_election_takes_the_live_isr():
    model = Model(Config(mode="kip380", replicas=3))
    s = run_labels(model, [("crash", 2), ("crash", 0), ("controller_handle_failure", 0)])[-1]
    assert s.controller.leader == U and s.controller.epoch == 0
    assert model.step(s, ("elect_offline", 0)) is None            # the controller knows r0 is gone
    t = model.step(s, ("elect_offline", 1))
    assert (t.controller.leader, t.controller.epoch) == (1, 1)
    assert t.controller.isr == 0b110                               # r2 still live in the controller's eyes
    t = model.step(model.step(s, ("controller_handle_failure", 2)), ("elect_offline", 1))
    assert t.controller.isr == 0b010


@pytest.mark.parametrize("mode, off", [("kip966", "kafka15583"), ("kafka18991-4.0", "kafka18991"),
                                       ("kafka19522", "kafka18991"), ("pr20716", "kafka18991")])
def test_elr_off_is_the_line_before_kip966_with_the_fixes_since(mode, off):
    assert without_elr(MODES[mode]) is MODES[off]
    assert [m.name for m in LADDER if m.elr] == ["kip966", "kafka18991-4.0", "kafka19522", "pr20716"]
    assert all(without_elr(m) is None for m in LADDER if not m.elr)


@pytest.mark.parametrize("mode, zk", [("kip903", "kip903-zk"), ("kafka15583", "kafka15583-zk"),
                                      ("kafka18991", "kafka18991-zk")])
def test_a_zookeeper_cluster_of_a_kraft_mode_keeps_its_broker_rules_and_drops_the_kraft_ones(mode, zk):
    """3.6-3.9 on ZooKeeper: the fetcher's, Partition's and the log's rules of the release, ZooKeeper's
    controller: each a variant that resolves by name (kip903's was the ladder's kafka14704 until the HW's
    caught-up followers had to be ISR-eligible, from 3.6.0)."""
    kraft, got = MODES[mode], zookeeper(MODES[mode])
    assert got.name == zk and (got is MODES[zk] if zk in MODES else Config(mode=zk).mode_definition == got)
    assert (got.broker_epochs, got.isr_removal_bumps_epoch, got.fence_stops_fetchers, got.fence_elects) == \
        (False, True, False, False)
    kept = [r for r in RULES if r not in ZOOKEEPER_RULES]
    assert [getattr(got, r) for r in kept] == [getattr(kraft, r) for r in kept]
    assert zookeeper(got) is None and all(zookeeper(m) is None for m in LADDER if m.elr or not m.fence_elects)


def test_elr_off_for_a_variant_no_ladder_mode_matches_is_a_variant_of_it():
    mine = MODES["kafka19522"].variant("mine", strict_min_isr=False)
    off = without_elr(mine)
    assert (off.name, off.parent, off.elr, off.elect_fenced_last_leader, off.strict_min_isr) == \
        ("mine-no-elr", "mine", False, False, False)


def test_elr_off_keeps_the_last_isr_member():
    """The exact step --no-elr changes: the controller handles the failure of the last ISR member.
    ELR on, the ISR empties and r0 joins the ELR (PartitionChangeBuilder.build @4.1.1); off, r0 stays."""
    labels = [("crash", 1), ("controller_handle_failure", 1), ("crash", 0)]
    on, off = (Model(Config(mode=m)) for m in (MODES["kafka19522"], without_elr(MODES["kafka19522"])))
    before_on, before_off = run_labels(on, labels)[-1], run_labels(off, labels)[-1]
    assert before_on.controller.isr == before_off.controller.isr == 0b01
    after_on = on.step(before_on, ("controller_handle_failure", 0)).controller
    after_off = off.step(before_off, ("controller_handle_failure", 0)).controller
    assert (after_on.isr, after_on.elr, after_on.last_known_elr) == (0, 0b01, 0b01)
    assert (after_off.isr, after_off.elr, after_off.last_known_elr) == (0b01, 0, 0)


def test_preferred_election_only_elects_the_first_replica():
    model = Model(Config(mode="kip380"))
    s = run_labels(model, [("session_expire", 0), ("elect_offline", 1), ("register", 0)])[-1]
    assert model.step(s, ("elect_preferred", 1)) is None
    assert model.step(s, ("elect_preferred", 0)) is None          # r0 left the ISR
    s = s._replace(controller=s.controller._replace(isr=0b11))
    t = model.step(s, ("elect_preferred", 0))
    assert (t.controller.leader, t.controller.epoch, t.controller.isr) == (0, 2, 0b11)


@pytest.mark.parametrize("mode, log", [("hw", ()), ("kip380", ((0, 0),))])
def test_controlled_shutdown_of_the_leader(mode, log):
    """The leader hands over, applies the LeaderAndIsr as follower (0.10 truncates to its HW 0
    there), leaves the ISR and stops flushed."""
    model = Model(Config(mode=mode, power_failures=1))
    s = run_labels(model, [P0, ("controlled_shutdown_leader", 0, 1)])[-1]
    c, r0 = s.controller, s.replicas[0]
    assert (c.leader, c.epoch, c.isr, c.live) == (1, 1, 0b10, 0b10)
    assert not r0.alive and r0.log == log and r0.flushed == len(log)


def test_controlled_shutdown_of_a_follower_leaves_the_isr_with_a_new_epoch():
    model = Model(Config(mode="kip380"))
    s = model.step(model.init_states()[0], ("controlled_shutdown", 1))
    assert (s.controller.leader, s.controller.epoch, s.controller.isr, s.controller.live) == (0, 1, 0b01, 0b01)
    assert model.step(model.init_states()[0], ("controlled_shutdown", 0)) is None   # r0 must hand over


@pytest.mark.parametrize("mode, refused", [("kip320", False), ("kip380", True)])
def test_a_restart_waits_for_the_controller_from_kip380(mode, refused):
    model = Model(Config(mode=mode))
    s = model.step(model.init_states()[0], ("crash", 1))
    assert (model.step(s, ("restart", 1)) is None) == refused
    s = model.step(s, ("controller_handle_failure", 1))
    assert model.step(s, ("restart", 1)).controller.live == 0b11


@pytest.mark.parametrize("mode", ["hw", "kip380"])
def test_a_fetch_outlives_its_sender(mode):
    """r1 has record 0 unflushed and asks for offset 1; it loses power. Its Fetch is still handled by
    r0, which then believes r1 has record 0: the HW moves past a record only r0 holds. KIP-320's
    fencing does not help: the epoch has not changed."""
    model = Model(Config(mode=mode, power_failures=1, crashes=0))
    s = run_labels(model, REPLICATE + [("send_fetch", 1), ("power_fail", 1)])[-1]
    assert s.inflight[1] == () and s.stale[1] == Fetch(FETCH, 0, 0, 1)
    assert s.replicas[1].log == ()
    s = model.step(s, ("leader_handle_stale_fetch", 0, 1))
    assert s.stale[1] == () and s.replicas[0].hw == 1 and s.history.acked[0] == 0


def test_a_stale_fetch_from_an_old_epoch_is_fenced_from_kip320():
    model = Model(Config(mode="kip320", replicas=3))
    s = run_labels(model, [P0, ("send_fetch", 1), ("crash", 1), ("crash", 2), ("controller_handle_failure", 2),
                           ("become_leader", 0)])[-1]
    assert s.replicas[0].leader_epoch == 1 and s.stale[1][2] == 0
    t = model.step(s, ("leader_handle_stale_fetch", 0, 1))
    assert t.stale[1] == () and t.replicas[0].remote_leo == s.replicas[0].remote_leo


@pytest.mark.parametrize("mode, fenced", [("kip279", False), ("kip320", True)])
def test_stale_leader_answers_epoch_request_only_without_fencing(mode, fenced):
    """r1 follows r0 at epoch 2 while r0 still thinks it leads at epoch 0 (its LeaderAndIsr for
    epoch 2 not applied yet): KIP-320 fences the request. (The state is built by hand: this tests the
    rule, not how the checker reaches it.)"""
    model = Model(Config(mode=mode))
    s = model.init_states()[0]
    r1 = s.replicas[1]._replace(log=((1, 1),), epoch_cache=((1, 0),), leader_epoch=2, truncating=TRUNCATING)
    s = s._replace(replicas=(s.replicas[0], r1), controller=s.controller._replace(epoch=2))
    s = model.step(s, ("send_epoch_request", 1))
    assert s.replicas[0].leader_epoch == 0 and s.inflight[1][2] == 2
    assert (model.step(s, ("leader_handle_epoch_request", 0, 1)) is None) == fenced
    assert (model.step(s, ("reject_request", 0, 1)) is not None) == fenced


@pytest.mark.parametrize("mode, waits", [("kip279", False), ("kip320", True)])
def test_isr_expansion_waits_for_the_epoch_start(mode, waits):
    """r0 leads at epoch 1, which starts at offset 1; r1 (outside the ISR) has reached r0's HW 0
    but not the start of epoch 1."""
    model = Model(Config(mode=mode))
    s = model.init_states()[0]
    r0 = s.replicas[0]._replace(log=((0, 0), (1, 1)), hw=0, epoch_cache=((0, 0), (1, 1)),
                                leader_epoch=1, isr=0b01, remote_leo=(U, 0))
    s = s._replace(replicas=(r0,) + s.replicas[1:], controller=s.controller._replace(epoch=1, isr=0b01))
    fetch = lambda offset: s._replace(inflight=((), Fetch(FETCH, 0, 1, offset)))
    assert model.step(fetch(0), ("leader_handle_fetch", 0, 1)).controller.isr == (0b01 if waits else 0b11)
    assert model.step(fetch(1), ("leader_handle_fetch", 0, 1)).controller.isr == 0b11


@pytest.mark.parametrize("mode", ["kip966", "kafka19522"])
def test_a_kraft_partition_without_leader_has_an_empty_isr(mode):
    """Since the record that fences a leader elects any ISR member it can (``fence_elects``), a
    leaderless partition of the ELR modes has an empty ISR in every reachable state: a change that
    leaves it without leader is the one that empties its ISR. So 4.1.0's last-known-leader rule
    (recorded when a change empties the ISR) and 4.1.1's (when a change names no leader;
    ``PartitionChangeBuilder.maybeUpdateLastKnownLeader``) record the same broker at the same step,
    and 4.1.1+ stays ``kafka19522`` (docs/model.md; 183,385 to 422,958 states of six settings
    checked the same way when this was written). Before, ``controller_handle_failure`` of a leader
    with another ISR member left that member in the ISR of a leaderless partition for a step."""
    model = Model(Config(mode=mode, records=1, crashes=1))
    leaderless = [s for s in exact_reachable(model) if s.controller.leader == U]
    assert len(leaderless) > 20          # 44 (crash(r0) then its fence, with r1 in the ISR or not, ...)
    assert all(s.controller.isr == 0 for s in leaderless)
    # and with the ELR empty too, the last known leader is recorded
    assert all(s.controller.last_known_elr for s in leaderless if s.controller.elr == 0)


def test_kip841_on_zookeeper_refuses_a_broker_that_is_not_live_until_it_registers():
    """The exact step kafka14704's KIP-841 rule changes (KafkaController.tryProcessAlterPartition @3.4.1):
    r1's session expired (out of the ISR, still running and fetching); its Fetch brings it back into
    the ISR in kafka13141 (as 2.8.1-3.2 do), not in kafka14704, until it registers again."""
    expired = [("session_expire", 1), ("become_leader", 0), ("become_follower", 1), ("send_fetch", 1),
               ("leader_handle_fetch", 0, 1)]
    old, new = (run_labels(Model(Config(mode=m, records=1, crashes=1)), expired)[-1] for m in ("kafka13141", "kafka14704"))
    assert (old.controller.isr, old.controller.live) == (0b11, 0b01)
    assert (new.controller.isr, new.controller.live) == (0b01, 0b01)
    back = run_labels(Model(Config(mode="kafka14704", records=1, crashes=1)),
                      expired + [("follower_handle_fetch", 1), ("register", 1), ("send_fetch", 1),
                                 ("leader_handle_fetch", 0, 1)])[-1]
    assert back.controller.isr == 0b11


# one disk loss and a clean shutdown (the 13 steps of counterexamples/kafka19522-crash-and-disk-loss)
# up to r0's restart on its new disk: the partition is leaderless, r1 (down, clean) in the ELR, r0 the
# last known leader, its assigned directory offline
REPLACED = ["produce(r0)", "send_fetch(r1)", "leader_handle_fetch(r0,r1)", "follower_handle_fetch(r1)",
            "send_fetch(r1)", "leader_handle_fetch(r0,r1)", "lose_disk(r0)", "controlled_shutdown(r1)",
            "controller_handle_failure(r0)", "restart(r0)"]


def _walk(mode, labels, **knobs):
    model = Model(Config(mode=mode, disk_losses=1, crashes=1, min_isr=2, **knobs))
    s = model.init_states()[0]
    for label in labels:
        s = model.step(s, model.parse_label(label))
        assert s is not None, (mode, label)
    return model, s


@pytest.mark.parametrize("mode, elr_after", [("kafka19522", 0), ("pr20716", 0b10), ("kip966", 0)])
def test_a_replaced_disk_is_refused_as_leader_until_its_directory_is_assigned(mode, elr_after):
    """KRaft 3.7+ (``directory_assignment``): the registration lists the new directory, so every
    election refuses r0 (``LeaderAcceptor``, ``hasOnlineDir``) until AssignReplicasToDirs; that record
    empties the ELR in 4.0-4.2 (``assignment_clears_elr``) and keeps it from 4.3 (apache/kafka#20716)."""
    model, s = _walk(mode, REPLACED)
    c = s.controller
    assert (c.leader, c.isr, c.elr, c.last_known_elr, c.offline_dirs) == (U, 0, 0b10, 0b01, 0b01)
    assert s.replicas[0].new_directory == 0 and model.to_json(s)["controller"]["offline_dirs"] == {"#set": ["r0"]}
    assert model.step(s, ("elect_offline", 0)) is None
    t = model.step(s, ("assign_dir", 0))
    assert t.controller.offline_dirs == 0 and t.controller.elr == elr_after
    assert t.controller.last_known_elr == 0b01 and (t.controller.leader, t.controller.epoch) == (U, c.epoch)
    elected = model.step(t, ("elect_offline", 0))
    if elr_after:               # r1, down, stays eligible: nobody is elected, and r0 never
        assert elected is None
    else:                       # ISR and ELR empty: the empty last known leader, and the record is lost
        assert elected.controller.leader == 0
        assert model.violated(model.step(elected, ("become_leader", 0))) == ["NoCommittedDataLoss"]


def test_a_replaced_disk_before_3_7_or_on_zookeeper_leads_at_once():
    """kip903 (3.6) and a ZooKeeper 3.7-3.9 cluster have no directory ids: no assign_dir, and the
    restarted broker is electable at once (a leaderless ISR member)."""
    for mode in ("kip903", "kafka15583-zk"):
        model, s = _walk(mode, REPLACED)
        assert s.controller.offline_dirs == 0 and s.replicas[0].new_directory == 0
        assert "assign_dir" not in model.action_names
        assert model.step(s, ("elect_offline", 0)) is not None, mode
    model, s = _walk("kafka15583", REPLACED)      # 3.7-3.9.0 KRaft: refused until assigned
    assert model.step(s, ("elect_offline", 0)) is None
    assert model.step(model.step(s, ("assign_dir", 0)), ("elect_offline", 0)) is not None


def test_the_assignment_waits_for_an_election_the_controller_owes():
    """A leaderless partition with a replica to elect gets it in the record of the event that made it
    electable (``_elect_in_record``'s rule): no assignment comes in between."""
    model, s = _walk("kafka19522", REPLACED + ["assign_dir(r0)"])
    t = model.step(s, ("restart", 1))                    # r1 back, cleanly: ISR and ELR empty, r0 assigned
    assert model.step(t, ("elect_offline", 0)) is not None
    u = t._replace(controller=t.controller._replace(offline_dirs=0b10))    # as if r1 came back on a new disk
    assert model.step(u, ("assign_dir", 1)) is None      # r0 is owed the election first


@pytest.mark.parametrize("mode, known", [("kafka19522", 0b10), ("kafka18991-4.0", 0)])
def test_from_4_1_1_a_leaderless_change_records_the_last_known_leader_though_the_isr_stays(mode, known):
    """r0, back on a replaced disk, rejoins the ISR before its directory is assigned (ISR admission
    reads no directories); r1's fence then elects nobody and leaves ISR {r0}. 4.1.1 records r1 as
    the last known leader on that leaderless change (``maybeUpdateLastKnownLeader @4.1.1``); 4.0.x
    and 4.1.0 only when the ISR empties (``@4.0.1``, ``@4.1.0``)."""
    model, s = _walk(mode, ["lose_disk(r0)", "controller_handle_failure_leader(r0,r1)", "restart(r0)",
                            "become_leader(r1)", "become_follower(r0)", "send_fetch(r0)", "leader_handle_fetch(r1,r0)"])
    assert (s.controller.leader, s.controller.isr, s.controller.offline_dirs) == (1, 0b11, 0b01)
    t = model.step(s, ("session_expire", 1))
    assert (t.controller.leader, t.controller.isr, t.controller.last_known_elr) == (U, 0b01, known)


@pytest.mark.parametrize("mode, epochs", [("kafka15583", (0, 1, 2)), ("kafka19522", (0, 1, 2)),
                                          ("kafka15583-zk", (1, 1, 2)), ("kafka14704", (1, 1, 2))])
def test_kraft_bumps_the_epoch_to_no_leader_and_zookeeper_on_an_isr_removal(mode, epochs):
    """KRaft (``PartitionRegistration.merge``): a follower's fence keeps the leader epoch (3.6-IV0),
    the leader's fence with nobody to elect names no leader at epoch + 1, and the next election bumps
    again. ZooKeeper: removing the follower from the ISR bumps (OfflineReplica), the leader's failure
    leaves the partition offline at the same epoch, and the election bumps once."""
    model = Model(Config(mode=mode, crashes=2))
    states = run_labels(model, [("crash", 1), ("controller_handle_failure", 1), ("crash", 0),
                                ("controller_handle_failure", 0), ("restart", 0), ("elect_offline", 0)])
    s, t, u = states[2], states[4], states[6]
    assert (s.controller.epoch, t.controller.epoch, u.controller.epoch) == epochs
    assert t.controller.leader == U and u.controller.leader == 0
