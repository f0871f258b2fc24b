"""The safety properties, each a predicate over one state (True = holds)."""

from __future__ import annotations

from .state import LEADER, NONE, UNDEFINED, State


def no_committed_data_loss(s: State) -> bool:
    """Every acknowledged record sits at its offset in the log of the current leader once that
    leader has taken office (role leader at the controller's epoch)."""
    c = s.controller
    if c.leader == UNDEFINED:
        return True
    leader = s.replicas[c.leader]
    if not (leader.alive and leader.role == LEADER and leader.leader_epoch == c.epoch):
        return True
    log = leader.log
    for record, offset in enumerate(s.history.acked):
        if offset != UNDEFINED and (offset >= len(log) or log[offset][0] != record):
            return False
    return True


def no_log_divergence(s: State) -> bool:
    """Any two replicas agree on every offset below both of their HWs."""
    reps = s.replicas
    for a in range(len(reps)):
        for b in range(a + 1, len(reps)):
            below = min(reps[a].hw, reps[b].hw)
            if reps[a].log[:below] != reps[b].log[:below]:
                return False
    return True


def consumer_consistency(s: State) -> bool:
    """Whatever a consumer could read at an offset (below some leader's HW) is never replaced by
    another record at that offset, on any replica that serves reads as leader."""
    exposed = s.history.exposed
    for rep in s.replicas:
        if rep.alive and rep.role == LEADER:
            for o in range(min(rep.hw, len(exposed))):
                if rep.log[o][0] != exposed[o]:
                    return False
    return True


def consumer_consistency_with_follower_reads(s: State) -> bool:
    """ConsumerConsistency when consumers may also read from followers (KIP-392): no live replica
    that serves reads, leader or follower, holds below its HW a record other than the one a consumer
    could have read at that offset."""
    exposed = s.history.exposed
    for rep in s.replicas:
        if rep.alive and rep.role != NONE:
            for o in range(min(rep.hw, len(exposed))):
                if rep.log[o][0] != exposed[o]:
                    return False
    return True


def hw_not_above_leo(s: State) -> bool:
    """A replica's HW never exceeds its LEO."""
    return all(rep.hw <= len(rep.log) for rep in s.replicas)


INVARIANTS = (
    ("NoCommittedDataLoss", no_committed_data_loss),
    ("NoLogDivergence", no_log_divergence),
    ("ConsumerConsistency", consumer_consistency),
    ("HwNotAboveLeo", hw_not_above_leo),
)


def leader_unfenced(s: State) -> bool:
    """The controller names as leader only a broker it sees alive (unfenced): no partition waits
    on a leader that cannot serve while it has no other way out (KAFKA-19522)."""
    c = s.controller
    return c.leader == UNDEFINED or bool(c.live >> c.leader & 1)


# checked only where an election can break it: the modes with Eligible Leader Replicas
ELR_ONLY = (("LeaderUnfenced", leader_unfenced),)


# every invariant name a design-model run can check (the gate's ``expect``)
INVARIANT_NAMES = tuple(name for name, _ in INVARIANTS + ELR_ONLY)


def invariants_for(cfg) -> tuple:
    """The invariants of a run: ConsumerConsistency covers followers when they serve reads; the
    modes with Eligible Leader Replicas also check LeaderUnfenced (their elections may name a
    broker the controller has fenced)."""
    invariants = INVARIANTS
    if getattr(cfg, "follower_reads", False):
        invariants = tuple((name, consumer_consistency_with_follower_reads if name == "ConsumerConsistency" else pred)
                           for name, pred in invariants)
    if cfg.mode_definition.elr:
        invariants += ELR_ONLY
    return invariants
