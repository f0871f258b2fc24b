"""Seed 000 comments 18-19: a restarted follower's OffsetsForLeaderEpoch request is outstanding
when the leader dies. Under epoch mode the follower has truncated nothing yet, so when it is
elected it still holds every acknowledged record; under hw mode it truncated at restart."""

from hwcheck.spec import Config, Model

from .conftest import run_labels

P0, SF1, LH, FH = ("produce", 0), ("send_fetch", 1), ("leader_handle_fetch", 0, 1), ("follower_handle_fetch", 1)
BEFORE = [P0, P0, SF1, LH, FH, SF1, LH,          # r1 has m0 m1; r0's HW is 2: both acknowledged
          ("crash", 1), ("restart", 1), ("become_follower", 1)]
AFTER = [("crash", 0), ("controller_detect_failure", 0), ("elect", 1), ("become_leader", 1)]


def test_epoch_keeps_acked_records_when_the_leader_dies_mid_exchange():
    model = Model(Config(mode="epoch"))
    states = run_labels(model, BEFORE + [("send_epoch_request", 1)] + AFTER)
    request_outstanding = states[len(BEFORE) + 1]
    assert request_outstanding.inflight[1][0] == 3 and request_outstanding.replicas[1].truncating
    assert request_outstanding.history.acked == (0, 1)
    assert all(not model.violated(s) for s in states)
    leader = states[-1].replicas[1]
    assert leader.log == ((0, 0), (1, 0)) and states[-1].controller.leader == 1


def test_hw_mode_loses_them_on_the_same_schedule():
    model = Model(Config(mode="hw"))
    states = run_labels(model, BEFORE + AFTER)
    assert states[-1].replicas[1].log == ()
    assert "NoCommittedDataLoss" in model.violated(states[-1])
