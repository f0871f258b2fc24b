"""One rule at a time: the HW/LEO rules of the articles and the guards that must refuse."""

import json

import pytest

from hwcheck.checker.symmetry import canonical_form
from hwcheck.checker.trace import differential, load_itf, replay
from hwcheck.spec import Config, ConfigError, Model
from hwcheck.spec.actions import NEEDS, advance_hw, may_enable, shape
from hwcheck.spec.modes import FETCHING, LADDER, TRUNCATING
from hwcheck.spec.state import FETCH, FETCH_RESPONSE, FOLLOWER, LEADER, NONE, UNDEFINED, Fetch, FetchResponse

from .conftest import ROOT, run_labels

P0, SF1, LH01, FH1 = ("produce", 0), ("send_fetch", 1), ("leader_handle_fetch", 0, 1), ("follower_handle_fetch", 1)


def set_replica(s, r, **changes):
    reps = list(s.replicas)
    reps[r] = reps[r]._replace(**changes)
    return s._replace(replicas=tuple(reps))


# ------------------------------------------------------------------ HW rules

def test_leader_hw_is_max_of_hw_and_min_leo_over_isr():
    hw_model = Model(Config(mode="hw", records=3))
    s = hw_model.init_states()[0]
    s = set_replica(s, 0, log=((0, 0), (1, 0), (2, 0)), hw=2, remote_leo=(UNDEFINED, 1))
    assert advance_hw(s, 0, hw_model.rules).replicas[0].hw == 2          # never moves back
    s = set_replica(s, 0, remote_leo=(UNDEFINED, 3))
    assert advance_hw(s, 0, hw_model.rules).replicas[0].hw == 3          # min(LEO 3, remote 3)
    s = set_replica(s, 0, remote_leo=(UNDEFINED, 0), isr=0b01)
    assert advance_hw(s, 0, hw_model.rules).replicas[0].hw == 3          # r1 outside the ISR: only r0 counts


def test_follower_hw_is_min_of_leo_and_response_hw(hw_model):
    s = hw_model.init_states()[0]
    s = s._replace(inflight=((), FetchResponse(FETCH_RESPONSE, 0, ((0, 0), (1, 0)), 5, 2)))
    f = hw_model.step(s, FH1).replicas[1]
    assert (f.leo, f.hw) == (2, 2)
    s = set_replica(s, 1, hw=0)._replace(inflight=((), FetchResponse(FETCH_RESPONSE, 0, ((0, 0), (1, 0)), 1, 2)))
    assert hw_model.step(s, FH1).replicas[1].hw == 1


@pytest.mark.parametrize("mode, unclean, exits", [
    ("hw", False, True), ("kip101", False, True), ("kip279", False, True),     # 0.10.2.1-2.0.0
    ("hw", True, False), ("kip279", True, False),                              # unclean election on
    ("kip320", False, False), ("epoch", False, False),                         # KAFKA-7414, 2.1
])
def test_a_follower_beyond_its_leaders_leo_exits_before_2_1_unless_unclean(mode, unclean, exits):
    """ReplicaFetcherThread.handleOffsetOutOfRange @0.10.2.1-2.0.0: "Exiting because log truncation
    is not allowed"; the exit's shutdown hook is a controlled shutdown (out of the ISR, a new epoch),
    not a fault of the budget. From 2.1 the follower truncates to the leader's LEO."""
    model = Model(Config(mode=mode, records=2, unclean_election=unclean))
    s = model.init_states()[0]
    s = set_replica(s, 1, log=((0, 0), (1, 0)), hw=2)
    s = s._replace(inflight=((), FetchResponse(FETCH_RESPONSE, 0, (), 1, 1)))     # leader's LEO 1 < 2
    t = model.step(s, FH1)
    f = t.replicas[1]
    if exits:
        assert not f.alive and f.log == ((0, 0), (1, 0))              # nothing truncated
        assert not t.controller.isr >> 1 & 1 and t.controller.epoch == s.controller.epoch + 1
        assert t.history.crashes == s.history.crashes and t.inflight[1] == ()
    else:
        assert f.alive and f.log == ((0, 0),) and f.hw == 1
        assert t.controller == s.controller


def test_remote_leo_moves_only_when_the_leader_handles_a_fetch():
    """Over every transition of a small reachable space: a leader that stays leader in the same
    term keeps its remote LEOs unless the step is leader_handle_fetch from that follower."""
    model = Model(Config(mode="hw", records=2, crashes=1, max_epoch=1))
    seen, frontier, checked = set(), model.init_states(), 0
    while frontier and len(seen) < 3000:
        nxt = []
        for s in frontier:
            for label, t in model.successors(s):
                for r, (a, b) in enumerate(zip(s.replicas, t.replicas)):
                    if a.role == b.role == LEADER and a.leader_epoch == b.leader_epoch and a.alive and b.alive:
                        for f in range(model.cfg.replicas):
                            if a.remote_leo[f] != b.remote_leo[f]:
                                assert label in (("leader_handle_fetch", r, f), ("leader_handle_stale_fetch", r, f))
                                msg = s.inflight[f] if label[0] == "leader_handle_fetch" else s.stale[f]
                                assert b.remote_leo[f] == msg[3]             # the fetch offset
                                checked += 1
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    assert checked > 0


def test_produce_appends_at_leo_with_leader_epoch(epoch_model):
    s = run_labels(epoch_model, [P0, P0])[-1]
    assert s.replicas[0].log == ((0, 0), (1, 0))
    assert s.history.acked == (UNDEFINED, UNDEFINED)    # acks=all: not before the HW passes


def test_acks_all_acknowledges_when_hw_passes(hw_model):
    s = run_labels(hw_model, [P0, SF1, LH01, FH1, SF1, LH01])[-1]
    assert s.replicas[0].hw == 1 and s.history.acked[0] == 0 and s.history.exposed == (0,)


def test_acks_1_acknowledges_at_once():
    model = Model(Config(mode="hw", acks="1"))
    assert run_labels(model, [P0])[-1].history.acked[0] == 0


# ------------------------------------------------------------------ guards that refuse

def test_produce_refused_on_a_follower(hw_model):
    assert hw_model.step(hw_model.init_states()[0], ("produce", 1)) is None


def test_produce_refused_with_acks_all_and_short_isr():
    model = Model(Config(mode="hw", min_isr=2))
    s = run_labels(model, [P0])[-1]
    s = model.step(s, ("shrink_isr", 0, 1))
    assert s is not None and s.replicas[0].isr == 0b01
    assert model.step(s, P0) is None                                  # NotEnoughReplicas
    acks1 = Model(Config(mode="hw", min_isr=2, acks="1"))
    t = acks1.step(run_labels(acks1, [P0, ("shrink_isr", 0, 1)])[-1], P0)
    assert t is not None                                              # acks=1 ignores min.insync


def test_fetch_refused_from_a_dead_leader(hw_model):
    s = run_labels(hw_model, [("crash", 0)])[-1]
    assert hw_model.step(s, SF1) is None


def test_a_crash_drops_messages_to_and_from_the_replica_but_its_fetch_outlives_it(hw_model):
    s = run_labels(hw_model, [P0, SF1])[-1]
    assert s.inflight[1][0] == FETCH
    assert hw_model.step(s, ("crash", 0)).inflight == ((), ())          # a request to a dead leader
    t = hw_model.step(s, ("crash", 1))
    assert t.inflight == ((), ()) and t.stale == ((), s.inflight[1])    # its own fetch is still on its way
    s = run_labels(hw_model, [P0, SF1, LH01])[-1]
    t = hw_model.step(s, ("crash", 1))
    assert t.inflight == ((), ()) and t.stale == ((), ())               # a response to it is lost


def test_only_a_leader_handles_a_fetch(hw_model):
    s = run_labels(hw_model, [SF1, ("controlled_shutdown_leader", 0, 1), ("restart", 0), ("become_follower", 0)])[-1]
    s = s._replace(inflight=((), Fetch(FETCH, 0, 0, 0)))
    assert hw_model.step(s, LH01) is None
    assert hw_model.step(s, ("reject_request", 0, 1)).inflight == ((), ())


def test_epoch_mode_fences_a_stale_fetch(epoch_model):
    s = run_labels(epoch_model, [SF1])[-1]
    s = set_replica(s, 0, leader_epoch=1)        # the leader has moved on to epoch 1
    assert epoch_model.step(s, LH01) is None
    assert epoch_model.step(s, ("reject_request", 0, 1)) is not None


def test_hw_mode_does_not_fence(hw_model):
    s = set_replica(run_labels(hw_model, [SF1])[-1], 0, leader_epoch=1)
    assert hw_model.step(s, LH01) is not None


def test_clean_election_only_from_the_isr():
    model = Model(Config(mode="hw"))
    s = run_labels(model, [P0, ("shrink_isr", 0, 1), ("crash", 0), ("controller_handle_failure", 0)])[-1]
    assert s.controller.leader == UNDEFINED and s.controller.isr == 0b01
    assert model.step(s, ("elect_offline", 1)) is None               # no live ISR member, still clean
    unclean = Model(Config(mode="hw", unclean_election=True))
    t = run_labels(unclean, [P0, ("shrink_isr", 0, 1), ("crash", 0), ("controller_handle_failure", 0),
                             ("elect_offline", 1)])[-1]
    assert t.controller.leader == 1 and t.controller.isr == 0b10


def test_election_bounded_by_max_epoch():
    model = Model(Config(mode="hw", max_epoch=1))
    s = run_labels(model, [("session_expire", 0), ("elect_offline", 1), ("register", 0)])[-1]
    s = model.step(s, ("session_expire", 1))
    assert s.controller.leader == UNDEFINED
    assert model.step(s, ("elect_offline", 0)) is None and model.step(s, ("elect_offline", 1)) is None


def test_crash_bounded_and_restart_only_when_down(hw_model):
    s = run_labels(hw_model, [("crash", 1), ("restart", 1), ("crash", 1)])[-1]
    assert hw_model.step(s, ("restart", 0)) is None
    s = hw_model.step(s, ("restart", 1))
    assert hw_model.step(s, ("crash", 0)) is None                    # 2 crashes used


@pytest.mark.parametrize("mode, at_leo", [("hw", True), ("kip101", True), ("kip279", True),
                                          ("kip320", False), ("epoch", False)])
def test_a_stuck_follower_at_the_leaders_leo_leaves_the_isr_only_before_2_1(mode, at_leo):
    """Partition.getOutOfSyncReplicas @0.10.2.1, @2.0.1: the caught-up time alone (a follower that
    stops fetching is dropped, at the leader's LEO too); @2.1.0: never one at the leader's LEO."""
    model = Model(Config(mode=mode, records=2))
    s = model.init_states()[0]                                    # remote LEO 0 = LEO 0
    t = model.step(s, ("shrink_isr", 0, 1))
    if at_leo:
        assert t.controller.isr == t.replicas[0].isr == 0b01 and t.controller.epoch == s.controller.epoch
    else:
        assert t is None
    behind = model.step(s, P0)                                    # remote LEO 0 < LEO 1: any release
    assert model.step(behind, ("shrink_isr", 0, 1)).controller.isr == 0b01


def test_isr_expansion_happens_only_in_the_fetch_handler_once_the_fetch_offset_reaches_the_hw():
    """Partition.maybeExpandIsr runs only while the leader handles the follower's Fetch, on that
    Fetch's offset: there is no step that expands on a remote LEO learned before."""
    model = Model(Config(mode="hw"))
    assert "expand_isr" not in {name for name, _, _ in model._actions}
    s = run_labels(model, [P0, ("shrink_isr", 0, 1), P0, SF1])[-1]        # HW 2, r1 out, fetching at 0
    after = model.step(s, LH01)
    assert after.controller.isr == 0b01 and after.replicas[0].isr == 0b01    # fetch offset 0 < HW 2
    s = run_labels(model, [P0, ("shrink_isr", 0, 1), P0, SF1, LH01, FH1, SF1])[-1]
    after = model.step(s, LH01)                                              # fetch offset 2 = HW 2
    assert after.controller.isr == 0b11 and after.replicas[0].isr == 0b11
    # a leader whose ISR view is not the controller's cannot write (the conditional update)
    stale_view = s._replace(controller=s.controller._replace(isr=0b11))
    assert model.step(stale_view, LH01).controller.isr == 0b11 and model.step(stale_view, LH01).replicas[0].isr == 0b01


# ------------------------------------------------------------------ truncation rules by mode

def test_hw_mode_truncates_to_hw_when_it_follows_again_after_a_restart(hw_model):
    s = run_labels(hw_model, [P0, SF1, LH01, FH1, ("crash", 1), ("controller_handle_failure", 1), ("restart", 1)])[-1]
    assert s.replicas[1].log == ((0, 0),) and s.replicas[1].role == NONE
    s = hw_model.step(s, ("become_follower", 1))
    assert s.replicas[1].log == () and s.replicas[1].role == FOLLOWER


def test_epoch_mode_keeps_the_log_on_restart_and_asks_the_leader():
    """kip380 (2.2-2.6.0): a restarted follower asks OffsetsForLeaderEpoch before fetching."""
    epoch_model = Model(Config(mode="kip380"))
    s = run_labels(epoch_model, [P0, SF1, LH01, FH1, ("crash", 1), ("controller_handle_failure", 1),
                                 ("become_leader", 0), ("restart", 1), ("become_follower", 1)])[-1]
    f = s.replicas[1]
    assert f.log == ((0, 0),) and f.epoch_cache == ((0, 0),) and f.truncating and f.role == FOLLOWER
    s = run_labels(epoch_model, [P0, SF1, LH01, FH1, ("crash", 1), ("controller_handle_failure", 1),
                                 ("become_leader", 0), ("restart", 1), ("become_follower", 1),
                                 ("send_epoch_request", 1), ("leader_handle_epoch_request", 0, 1)])[-1]
    assert s.inflight[1][2:] == (0, 1)          # epoch 0 ends where epoch 1 (taken at LEO 1) starts
    f = epoch_model.step(s, ("follower_handle_epoch_response", 1)).replicas[1]
    assert f.log == ((0, 0),) and not f.truncating   # nothing to truncate: KIP-101 keeps m1


@pytest.mark.parametrize("mode", ["kip320", "kip380", "kafka10706", "epoch"])
def test_a_restart_drops_the_epoch_a_leader_cached_without_writing(mode):
    """Loading the log trims the cache at the LEO (Log's constructor, clearAndFlushLatest @2.0.0,
    truncateFromEnd @2.7.0): r0 took office at epoch 0 and wrote nothing; a crash keeps its cache,
    the restart drops the entry. An entry with records stays. (KRaft elects r1 in the record that
    fences r0.)"""
    model = Model(Config(mode=mode))
    down = [("crash", 0), ("controller_handle_failure_leader", 0, 1) if model.rules.mode.fence_elects
            else ("controller_handle_failure", 0)]
    s = run_labels(model, down)[-1]
    assert s.replicas[0].epoch_cache == ((0, 0),) and s.replicas[0].log == ()
    assert model.step(s, ("restart", 0)).replicas[0].epoch_cache == ()
    s = run_labels(model, [P0] + down + [("restart", 0)])[-1]
    assert s.replicas[0].epoch_cache == ((0, 0),) and s.replicas[0].log == ((0, 0),)


def test_from_2_8_a_restarted_follower_fetches_at_once_naming_its_last_epoch():
    """kafka10554+ (KAFKA-10554): no OffsetsForLeaderEpoch; the Fetch carries the latest cached epoch
    and the leader finds no divergence. (KRaft from 3.6 removes r1 from the ISR without a new leader
    epoch: the leader epoch is still 0.)"""
    model = Model(Config(mode="epoch"))
    s = run_labels(model, [P0, SF1, LH01, FH1, ("crash", 1), ("controller_handle_failure", 1),
                           ("become_leader", 0), ("restart", 1), ("become_follower", 1), ("send_fetch", 1)])[-1]
    assert not s.replicas[1].truncating
    assert s.inflight[1][:5] == (1, 0, 0, 1, 0)      # Fetch to r0, leader epoch 0, offset 1, last epoch 0
    s = model.step(s, ("leader_handle_fetch", 0, 1))
    assert s.inflight[1][5:7] == (UNDEFINED, UNDEFINED) and s.replicas[0].remote_leo[1] == 1


@pytest.mark.parametrize("mode, keeps", [("kafka13141", True), ("kafka15583", True), ("kip966", True),
                                         ("kafka18991", False), ("kafka18991-4.0", False), ("kafka19522", False)])
def test_an_answer_of_the_old_epoch_is_handled_only_before_kafka_18991s_fix(mode, keeps):
    """KAFKA-18991: r1's fetcher restarts for a new leader epoch with the same leader r0 while r0's
    answer to its Fetch of the old epoch is in flight. Until 3.9.1/4.0.1 the new fetch state has the
    same fetch offset and processFetchRequest handles the answer; from the fix it is dropped. A
    leader change to another broker drops it in every mode."""
    model = Model(Config(mode=mode, replicas=3))
    s = run_labels(model, [P0, SF1, LH01, FH1, P0, SF1, LH01])[-1]
    answer = s.inflight[1]
    assert answer.kind == FETCH_RESPONSE and answer.records == ((1, 0),)
    bumped = s._replace(controller=s.controller._replace(epoch=1))     # r0 again, at leader epoch 1
    t = model.step(bumped, ("become_follower", 1))
    assert t.replicas[1].leader_epoch == 1 and t.replicas[1].leader == 0
    assert t.inflight[1] == (answer if keeps else ())
    if keeps:                                 # the old epoch's records land at the new epoch
        assert model.step(t, FH1).replicas[1].log == ((0, 0), (1, 0))
    else:
        assert model.step(t, FH1) is None
    elsewhere = bumped._replace(controller=bumped.controller._replace(leader=2))
    assert model.step(elsewhere, ("become_follower", 1)).inflight[1] == ()


@pytest.mark.parametrize("mode, waits", [("kafka10554", True), ("kafka15583", True), ("kip966", True),
                                         ("kafka18991", False), ("kafka18991-4.0", False), ("kafka19522", False)])
def test_an_old_leaders_answer_waits_for_its_fetcher_thread_only_before_kafka_18991s_fix(mode, waits):
    """r1 becomes leader with r0's answer in flight. Until 3.9.1/4.0.1 the answer waits for r0's
    fetcher thread (the stale slot, with the fetch offset it answers); it blocks r1's next Fetch to
    r0 while r1 follows r0, is handled if r1 follows r0 again at that offset, and ignored otherwise.
    A stop of r0 (the connection) or of r1 (the process) loses it. From the fix it is dropped."""
    model = Model(Config(mode=mode, replicas=3))
    s = run_labels(model, [P0, SF1, LH01, FH1, P0, SF1, LH01])[-1]
    answer = s.inflight[1]
    c = s.controller._replace(leader=1, epoch=1)
    led = model.step(s._replace(controller=c), ("become_leader", 1))
    assert led.inflight[1] == ()
    assert led.stale[1] == (answer._replace(fetch_offset=1) if waits else ())
    if not waits:
        assert ("follower_handle_old_response", 1) not in [label for label, _ in model.successors(led)]
        return
    assert model.step(led, ("follower_handle_old_response", 1)).stale[1] == ()       # r1 leads: ignored
    assert model.step(led, ("crash", 1)).stale[1] == () and model.step(led, ("crash", 0)).stale[1] == ()
    back = model.step(led._replace(controller=c._replace(leader=0, epoch=2)), ("become_follower", 1))
    assert back.stale[1] and model.step(back, SF1) is None          # r0's fetcher thread still waits
    handled = model.step(back, ("follower_handle_old_response", 1))
    assert handled.replicas[1].log == ((0, 0), (1, 0)) and handled.stale[1] == ()   # epoch 0's answer at epoch 2
    moved = back._replace(replicas=back.replicas[:1] + (back.replicas[1]._replace(log=()),) + back.replicas[2:])
    ignored = model.step(moved, ("follower_handle_old_response", 1))   # another fetch offset: no fetch state
    assert ignored.replicas[1].log == () and ignored.stale[1] == ()


CX = ROOT / "counterexamples"


def test_kafka_18991_an_old_epochs_diverging_answer_removes_committed_records_under_zookeeper():
    """The curated trace, the shortest (bfs, 2 replicas, --crashes 3 --max-epoch 5, 30 steps, 2.8.1-3.4.0):
    r1 takes r0's diverging answer of epoch 2 at epoch 4 and truncates the record the HW exposed at
    epoch 3; r0 shuts down; r1, still in the ISR, is elected without it. 2.8.0 (kafka10554) takes
    every step too. The KRaft modes refuse step 17, r0's session expiring with r1 elected a step
    later: KRaft elects r1 in the record that fences r0 (``session_expire_leader(r0,r1)``); on that
    schedule 3.9.0 and 4.0.0 lose the answer with r1's fetcher thread when r0 is fenced (next test),
    which the gate checks every way on from step 15 (pyproject.toml)."""
    doc = load_itf((CX / "kafka13141-kafka-18991-old-epoch-response.itf.json").read_text())
    done = replay(doc)
    states = done.trace.states
    assert done.trace.steps == 30 and done.violated == ["ConsumerConsistency"]
    assert states[20].stale[1].diverging_epoch == 1 and states[20].stale[1].fetch_offset == 1
    assert states[26].replicas[1].log == ((0, 1),) and states[27].replicas[1].log == ()
    assert states[27].controller.isr >> 1 & 1 and states[26].history.exposed == (0,)
    d = differential(doc, "kafka10554")
    assert d.refused_at is None and (30, "ConsumerConsistency") in d.violated
    for mode in ("kafka15583", "kip966", "kafka18991", "kafka18991-4.0", "kafka19522"):
        d = differential(doc, mode)
        assert d.refused_at == 17 and d.refused_why.startswith("session_expire(r0)") and not d.violated
    # --symmetry orders two followers alike but for their stale slots, a Fetch and a waiting answer
    waiting = states[20].stale[1]
    assert waiting.kind == FETCH_RESPONSE
    three = Model(Config(mode="kafka15583", replicas=3))
    start = three.init_states()[0]
    mixed = start._replace(stale=((), waiting, Fetch(FETCH, 0, 0, 0, UNDEFINED, 0)))
    canon = canonical_form(three)
    assert canon(three.rename(mixed, (0, 2, 1)))[0] == canon(mixed)[0]


def test_kraft_fence_shuts_the_fetcher_thread_down_with_the_waiting_answer():
    """The same schedule to r1's taking office, r0's answer still in flight to r1 when r0's session
    expires. ZooKeeper (2.8.1-3.4.0) keeps r1's fetcher thread towards r0 (another partition, leaderless,
    stays on it: ReplicaManager.makeFollowers @2.8.0), so the answer waits there. In KRaft (3.9.0) r0,
    fenced, leads nothing: r1 is marked when the fence comes, and on taking office its thread towards
    r0 is gone with the answer (ReplicaManager.applyDelta @3.9.0). KRaft elects r1 in the record that
    fences r0, at the epoch ZooKeeper's later election gives."""
    doc = load_itf((CX / "kafka13141-kafka-18991-old-epoch-response.itf.json").read_text())
    labels = [Model(Config(mode="kafka13141")).parse_label(st["#meta"]["action"]) for st in doc["states"][1:16]]
    zk = run_labels(Model(Config(mode="kafka13141", crashes=3, max_epoch=5)),
                    labels + [("session_expire", 0), ("register", 0), ("elect_offline", 1), ("become_leader", 1)])
    kraft = run_labels(Model(Config(mode="kafka15583", crashes=3, max_epoch=5)),
                       labels + [("session_expire_leader", 0, 1), ("register", 0), ("become_leader", 1)])
    assert zk[15].inflight[1].kind == FETCH_RESPONSE and zk[15].inflight[1].diverging_epoch == 1
    assert kraft[15].inflight[1] == zk[15].inflight[1]
    assert not zk[16].replicas[1].leader_fenced and kraft[16].replicas[1].leader_fenced
    assert kraft[16].controller.leader == 1 and kraft[16].controller.epoch == zk[18].controller.epoch
    assert zk[19].stale[1].kind == FETCH_RESPONSE and zk[19].stale[1].diverging_epoch == 1
    assert kraft[18].stale[1] == () and kraft[18].inflight[1] == () and not kraft[18].replicas[1].leader_fenced


def test_epoch_mode_new_leader_adds_cache_entry_on_taking_office(epoch_model):
    s = run_labels(epoch_model, [P0, ("controlled_shutdown_leader", 0, 1), ("become_leader", 1)])[-1]
    assert s.replicas[1].epoch_cache == ((1, 0),)


def test_epoch_mode_restarts_only_after_the_controller_handled_the_failure(epoch_model, hw_model):
    """KIP-380: a bounce is never missed; before it (hw mode here) a fast restart can win."""
    s = run_labels(epoch_model, [("crash", 0)])[-1]
    assert epoch_model.step(s, ("restart", 0)) is None
    assert epoch_model.step(s, ("controller_handle_failure", 0)) is None     # KRaft elects r1 in the fence's record
    s = epoch_model.step(s, ("controller_handle_failure_leader", 0, 1))
    assert s.controller.leader == 1 and epoch_model.step(s, ("restart", 0)) is not None
    assert hw_model.step(run_labels(hw_model, [("crash", 0)])[-1], ("restart", 0)) is not None


# ------------------------------------------------------------------ config validation

@pytest.mark.parametrize("knobs, words", [
    (dict(min_isr=3), "min_isr=3 exceeds replicas=2"),
    (dict(records=0), "records=0"),
    (dict(replicas=6), "replicas=6"),
    (dict(mode="kafka"), "unknown mode"),
    (dict(acks="0"), "acks"),
    (dict(crashes=-1), "negative"),
])
def test_config_rejects_bad_knobs(knobs, words):
    with pytest.raises(ConfigError, match=words):
        Config(**knobs)


def test_epoch_is_the_newest_mode():
    from hwcheck.spec.modes import LADDER
    assert Config(mode="epoch").mode == LADDER[-1].name == Config().mode


def test_the_compiled_replace_builds_what_namedtuples_own_builds():
    """spec/state.py gives its NamedTuples a faster ``_replace``: for every class and every subset of
    up to three fields it returns what ``collections.namedtuple``'s ``_replace`` returns, and it
    refuses a name that is not a field."""
    import collections
    import itertools
    from hwcheck.spec import state
    model = Model(Config(mode="kafka19522", replicas=3, power_failures=1, disk_losses=1))
    s = run_labels(model, [("produce", 0), ("send_fetch", 1)])[-1]
    samples = [s, s.controller, s.history, s.replicas[0], s.inflight[1], Fetch(FETCH, 0, 1, 2),
               FetchResponse(FETCH_RESPONSE, 0, ((0, 0),), 1, 1), state.EpochRequest(state.EPOCH_REQUEST, 0, 1, 0),
               state.EpochResponse(state.EPOCH_RESPONSE, 0, 1, 1)]
    for obj in samples:
        cls = type(obj)
        original = collections.namedtuple(cls.__name__, cls._fields)._replace
        for k in range(4):
            for fields in itertools.combinations(cls._fields, k):
                changes = {f: ("new", f) for f in fields}
                got = obj._replace(**changes)
                assert type(got) is cls and tuple(got) == tuple(original(obj, **changes))
        with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_field'"):
            obj._replace(no_such_field=1)


# r0 drops r1 from the ISR, r1 fetches record 0 (offset 0: not caught up), then, after r0 took record
# 1, fetches at offset 1: the LEO r0 had at r1's previous Fetch, so r1 is caught up as of then
# (Replica.updateFetchStateOrThrow @3.9.0, updateLogReadResult @0.10.2.1), out of the ISR (1 < HW 2)
CAUGHT_UP = [P0, ("shrink_isr", 0, 1), SF1, LH01, FH1, P0, SF1, LH01]


def test_a_caught_up_follower_outside_the_isr_holds_the_hw_until_its_lag_window_closes():
    """Partition.maybeIncrementLeaderHW @0.10.2.1-@4.1.1 takes the minimum over the ISR and every
    follower caught up within replica.lag.time.max.ms; nothing recomputes the HW when the window
    closes (lag_expires), the next produce does. The model before this rule moved the HW to 3 at the
    first produce below."""
    m = Model(Config(mode="kip380", records=4))
    s = run_labels(m, CAUGHT_UP)[-1]
    leader = s.replicas[0]
    assert (leader.isr, leader.remote_caught_up, leader.remote_leo[1], leader.hw) == (0b01, 0b10, 1, 2)
    held = m.step(s, P0)
    assert (held.replicas[0].leo, held.replicas[0].hw) == (3, 2)
    lapsed = m.step(held, ("lag_expires", 0, 1))
    assert (lapsed.replicas[0].remote_caught_up, lapsed.replicas[0].hw) == (0, 2)
    assert lapsed.replicas[0].remote_fetch_leo[1] == 2          # its last Fetch is still recent
    assert m.step(lapsed, P0).replicas[0].hw == 4
    forgotten = m.step(lapsed, ("lag_expires", 0, 1))
    assert forgotten.replicas[0].remote_fetch_leo[1] == UNDEFINED and m.step(forgotten, ("lag_expires", 0, 1)) is None
    assert m.step(m.init_states()[0], ("lag_expires", 0, 1)) is None     # an ISR member has no window here


@pytest.mark.parametrize("mode, held", [("kafka14704", True), ("kip903", False)])
def test_from_3_6_a_caught_up_follower_holds_the_hw_only_while_it_may_join_the_isr(mode, held):
    """Partition.shouldWaitForReplicaToJoinIsr @3.6.0: caught up *and* ISR-eligible; 3.5 (kafka14704)
    waits for any caught-up follower. r1 crashes and the controller handles it: no longer live."""
    m = Model(Config(mode=mode, records=3))
    s = run_labels(m, CAUGHT_UP + [("crash", 1), ("controller_handle_failure", 1)])[-1]
    assert s.replicas[0].remote_caught_up == 0b10 and not s.controller.live >> 1 & 1
    after = m.step(s, P0)
    assert after.replicas[0].hw == (2 if held else 3)


def test_a_produce_waits_while_its_leader_is_named_again_and_not_across_a_skipped_epoch():
    """DelayedProduce (Partition.checkEnoughReplicasReachOffset @0.11.0.3: the HW, no epoch): the
    ZooKeeper walk's step 3 on 0.11.0.3 -- r0 appends record 0 at epoch 0, r1 dies, the controller
    takes it out of the ISR and names r0 again at epoch 1 -- and Kafka acknowledges record 0 once
    r0's HW passes it. A leader that skipped an epoch (it never applied the one naming another
    leader, KAFKA-6361's trace at step 13) starts a new term: what it appended before is not
    acknowledged, as Kafka's makeFollowers answered it NOT_LEADER."""
    model = Model(Config(mode="kip101", records=2))
    s = run_labels(model, [P0, ("crash", 1), ("controller_handle_failure", 1)])[-1]
    assert s.controller.epoch == 1 and s.history.acked == (UNDEFINED, UNDEFINED)
    t = model.step(s, ("become_leader", 0))
    assert t.replicas[0].leading_since == 0 and t.history.acked[0] == 0
    doc = load_itf((CX / "kip101-divergence-kafka-6361.itf.json").read_text())
    states = replay(doc).trace.states
    before, after = states[12].replicas[1], states[13].replicas[1]
    assert before.role == LEADER and after.leader_epoch > before.leader_epoch + 1
    assert after.leading_since == after.leader_epoch and states[13].history.acked[0] == UNDEFINED


def test_a_bounce_the_controller_missed_gets_no_leader_and_isr_it_had_answered():
    """Before KIP-380 a fast restart can come before the controller handles the failure (the
    controller compares broker ids: BrokerChangeListener.doHandleChildChange @0.10.2.1), and then
    it sends the restarted broker nothing: no onBrokerStartup. The broker applies only what it had
    not answered (the RequestSendThread retries a request until the broker answers) and what comes
    later. The old hw-data-loss trace's step 9 -- r1 back, following r0 again at the epoch it had
    followed, truncating to its HW -- is refused; after a restart the controller saw (here a
    controlled shutdown), r1 follows at once."""
    model = Model(Config(mode="hw", records=2))
    fetched = [P0, ("send_fetch", 1), ("leader_handle_fetch", 0, 1), ("follower_handle_fetch", 1)]
    s = run_labels(model, fetched + [("crash", 1), ("restart", 1)])[-1]
    assert s.controller.live == 0b11 and s.replicas[1].role == NONE and s.replicas[1].leader_epoch == 0
    assert model.step(s, ("become_follower", 1)) is None
    t = model.step(s, ("controlled_shutdown_leader", 0, 1))       # the next epoch reaches r1
    assert t.controller.epoch == 1 and model.step(t, ("become_leader", 1)).replicas[1].log == s.replicas[1].log
    seen = run_labels(model, fetched + [("controlled_shutdown", 1), ("restart", 1)])[-1]
    assert seen.replicas[1].leader_epoch == UNDEFINED
    assert model.step(seen, ("become_follower", 1)).replicas[1].role == FOLLOWER
    # from KIP-380 the controller sees every bounce, and a stopped broker keeps no epoch
    kip380 = Model(Config(mode="kip380", records=2))
    assert run_labels(kip380, fetched + [("crash", 1)])[-1].replicas[1].leader_epoch == UNDEFINED


def test_a_follower_exits_on_an_out_of_range_answer_until_2_1_and_the_curated_trace_is_the_first_exit():
    """counterexamples/kip101-exit-on-out-of-range is the shortest trace whose last step is a
    follower handling an answer it exits on (checker/reach.py, Kafka's own steps taken at once as a
    cluster takes them): r0 power-fails alone in the ISR, is elected back empty, and r1, which kept
    following r0 (the same leader: 0.11 does not restart its fetcher), gets OffsetOutOfRange. Its
    broker stops; from 2.1 (kip320) the same answer truncates r1 instead."""
    from hwcheck.checker.reach import first_step
    from hwcheck.checker.trace import to_itf
    from hwcheck.cluster.conform import EAGER
    from hwcheck.spec.actions import exits_on_out_of_range
    curated = json.loads((ROOT / "counterexamples" / "kip101-exit-on-out-of-range.itf.json").read_text())
    m = Model(Config(mode="kip101", power_failures=1, crashes=0))
    trace = first_step(m, lambda s, label: label[0] == "follower_handle_fetch" and exits_on_out_of_range(s, m.rules, label[1]),
                       eager=EAGER)
    assert trace.steps == 14 and to_itf(m, trace)["states"] == curated["states"]
    before, after = trace.states[-2:]
    assert after.replicas[1].alive == 0 and after.history.crashes == 0          # a stop of its own, not a fault
    assert trace.labels[10] == ("become_follower", 1) and before.replicas[1].truncating == FETCHING
    # 2.1 restarts the fetcher on a new epoch of the same leader (follow_on_new_epoch): r1 asks
    # where epoch 0 ends first, and the answer truncates it
    kip320 = run_labels(Model(Config(mode="kip320", power_failures=1, crashes=0)), trace.labels[:11])[-1]
    assert kip320.replicas[1].truncating == TRUNCATING


# ------------------------------------------------------------------ NEEDS (Model.successors' shortcut)

@pytest.mark.parametrize("mode", [m.name for m in LADDER])
def test_what_each_guard_needs_first_is_true_of_the_guards_and_successors_skip_only_those_steps(mode):
    """NEEDS is a promise about the guards: in every reachable state (one of each fault, three
    replicas, to depth 6), an action whose needs the state's shape lacks is refused, and
    ``successors`` gives exactly the steps of trying every action in order."""
    m = Model(Config(mode=mode, replicas=3, records=1, crashes=1, power_failures=1, disk_losses=1, max_epoch=2))
    rules, refused = m.rules, set()
    frontier, seen = m.init_states(), set(m.init_states())
    for _ in range(6):
        nxt = []
        for s in frontier:
            every, key = [], shape(s)
            for label, fn, args in m._steps:
                t = fn(s, rules, *args)
                if label[0] in NEEDS and not may_enable(NEEDS[label[0]], key, args, m.cfg):
                    refused.add(label[0])
                    assert t is None, (label, NEEDS[label[0]])
                if t is not None:
                    every.append((label, t))
            assert list(m.successors(s)) == every
            for _, t in every:
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    # each entry was put to the test in some state where it says no
    assert refused == {name for name in NEEDS if name in m.action_names}


def test_may_enable_reads_each_kind_of_need():
    m = Model(Config(mode="kip320", replicas=3, records=1, crashes=1))
    s = m.init_states()[0]                                  # r0 leads, r1 and r2 follow, nothing in flight
    key = shape(s)
    assert may_enable(NEEDS["send_fetch"], key, (1,), m.cfg) and not may_enable(NEEDS["send_fetch"], key, (0,), m.cfg)
    assert may_enable(NEEDS["crash"], key, (1,), m.cfg) and not may_enable(NEEDS["restart"], key, (1,), m.cfg)
    assert not may_enable(NEEDS["leader_handle_fetch"], key, (0, 1), m.cfg)
    t = m.step(s, ("send_fetch", 1))
    assert may_enable(NEEDS["leader_handle_fetch"], shape(t), (0, 1), m.cfg)
    assert not may_enable(NEEDS["leader_handle_fetch"], shape(t), (2, 1), m.cfg)    # the Fetch is to r0
    assert not may_enable(NEEDS["send_fetch"], shape(t), (1,), m.cfg)               # one in flight already
    u = m.step(s, ("crash", 1))
    assert not may_enable(NEEDS["crash"], shape(u), (2,), m.cfg)                    # the one crash is spent
    assert may_enable(NEEDS["restart"], shape(u), (1,), m.cfg)
