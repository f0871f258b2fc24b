"""Seed 000 comments 18-19: a restarted follower's OffsetsForLeaderEpoch request is outstanding
when the leader dies. With leader epochs the follower has truncated nothing yet, so if it is
elected it still holds every acknowledged record. A restarted follower asks only once it follows
again, and it follows again only after a LeaderAndIsr: before KIP-380 a bounce the controller
missed brings none (the follower stays in the ISR, passive, with its whole log), and a bounce it
saw takes the follower out of the ISR first."""


from hwcheck.spec import Config, Model

from .conftest import run_labels

P0, SF1, LH, FH = ("produce", 0), ("send_fetch", 1), ("leader_handle_fetch", 0, 1), ("follower_handle_fetch", 1)
ACKED = [P0, P0, SF1, LH, FH, SF1, LH]        # r1 has m0 m1; r0's HW is 2: both acknowledged
LEADER_DIES = [("crash", 0), ("controller_handle_failure", 0)]


def test_kip279_fast_bounce_keeps_acked_records_when_the_leader_dies():
    """Before KIP-380 the follower's bounce can go unnoticed: it stays in the ISR, gets no
    LeaderAndIsr (so it neither asks nor truncates), and is elected with every record."""
    model = Model(Config(mode="kip279"))
    states = run_labels(model, ACKED + [("crash", 1), ("restart", 1)] + LEADER_DIES
                        + [("elect_offline", 1), ("become_leader", 1)])
    restarted = states[len(ACKED) + 2]
    assert model.step(restarted, ("become_follower", 1)) is None and restarted.history.acked == (0, 1)
    assert all(not model.violated(s) for s in states)
    assert states[-1].replicas[1].log == ((0, 0), (1, 0)) and states[-1].controller.leader == 1


def test_epoch_mode_cannot_elect_the_restarted_follower_at_all():
    """With KIP-380 the bounce is handled: r1 left the ISR, so only r0 may lead (clean election).
    kip380 (2.2-2.6.0): the last releases whose followers ask OffsetsForLeaderEpoch after a restart."""
    model = Model(Config(mode="kip380"))
    states = run_labels(model, ACKED + [("crash", 1), ("controller_handle_failure", 1), ("restart", 1),
                                        ("become_follower", 1), ("send_epoch_request", 1)] + LEADER_DIES)
    assert all(not model.violated(s) for s in states)
    assert model.step(states[-1], ("elect_offline", 1)) is None


def test_hw_mode_keeps_them_on_the_same_schedule_and_cannot_elect_a_follower_that_truncated():
    """hw truncates to the HW only when it follows again (ReplicaManager.makeFollowers @0.10.2.1):
    after a missed bounce it gets no LeaderAndIsr and keeps everything; after a bounce the controller
    saw, it follows and truncates, but it has left the ISR and cannot be elected."""
    model = Model(Config(mode="hw"))
    missed = run_labels(model, ACKED + [("crash", 1), ("restart", 1)] + LEADER_DIES
                        + [("elect_offline", 1), ("become_leader", 1)])
    assert missed[-1].replicas[1].log == ((0, 0), (1, 0)) and not model.violated(missed[-1])
    seen = run_labels(model, ACKED + [("crash", 1), ("controller_handle_failure", 1), ("restart", 1),
                                      ("become_follower", 1)] + LEADER_DIES)
    assert seen[-1].replicas[1].log == () and model.step(seen[-1], ("elect_offline", 1)) is None
