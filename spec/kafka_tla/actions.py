"""The actions of KafkaReplication.tla and of its variants, one generator each.

Each action takes ``(state, k)`` (``k`` the constants) and yields ``(label, next_state)`` for
every choice of its existential parameters that enables it. A label is the TLA+ action name
followed by replica ids and, for actions that pick a LeaderAndIsr request, its leader epoch:
``("BecomeLeader", 0, 1)`` is BecomeLeader by r0 on the request of epoch 1.

Ported from github.com/hachikuji/kafka-specification (Apache-2.0); the comments quote the
module and operator each function follows.
"""

from __future__ import annotations

from typing import Iterator, NamedTuple, Optional, Tuple

from .state import NONE, QuorumState, ReplicaState, State, members, put


class Constants(NamedTuple):
    replicas: int
    log_size: int
    max_records: int
    max_leader_epoch: int


Step = Tuple[tuple, State]


# ---------------------------------------------------------------- helpers (FiniteReplicatedLog)

def end_offset(s: State, r: int) -> int:
    return len(s.replica_log[r])


def has_offset(s: State, r: int, offset: int) -> bool:
    return offset < len(s.replica_log[r])


def has_entry(s: State, r: int, record, offset: int) -> bool:
    log = s.replica_log[r]
    return offset < len(log) and log[offset] == record


def truncate_to(s: State, r: int, new_end_offset: int) -> Optional[tuple]:
    """FiniteReplicatedLog TruncateTo: only to an offset at or below the end offset."""
    log = s.replica_log[r]
    if new_end_offset > len(log):
        return None
    return put(s.replica_log, r, log[:new_end_offset])


def presumes_leadership(s: State, r: int) -> bool:
    return s.replica_state[r].leader == r


def is_true_leader(s: State, leader: int) -> bool:
    q = s.quorum_state
    rs = s.replica_state[leader]
    return q.leader == leader and rs.leader == leader and rs.leader_epoch == q.leader_epoch


def controller_update_isr(s: State, k: Constants, new_leader: int, new_isr: int) -> Optional[State]:
    """ControllerUpdateIsr: take the next leader epoch, write the quorum, send the request."""
    epoch = s.next_leader_epoch
    if epoch > k.max_leader_epoch:
        return None
    q = QuorumState(leader_epoch=epoch, leader=new_leader, isr=new_isr)
    return s._replace(next_leader_epoch=epoch + 1, quorum_state=q,
                      leader_and_isr_requests=s.leader_and_isr_requests + (q,))


def quorum_update_leader_and_isr(s: State, leader: int, new_isr: int) -> Optional[State]:
    """QuorumUpdateLeaderAndIsr: only the true leader writes the ISR, to quorum and locally."""
    if not is_true_leader(s, leader):
        return None
    rs = s.replica_state
    return s._replace(quorum_state=s.quorum_state._replace(isr=new_isr),
                      replica_state=put(rs, leader, rs[leader]._replace(isr=new_isr)))


def is_follower_caught_up(s: State, leader: int, follower: int, end: int) -> bool:
    """IsFollowerCaughtUp: follows the leader and has the offset below ``end`` that the leader has."""
    if s.replica_state[follower].leader != leader:
        return False
    return end == 0 or (end > 0 and has_offset(s, leader, end - 1) and has_offset(s, follower, end - 1))


def is_following_leader_epoch(s: State, leader: int, follower: int) -> bool:
    """Kip320 IsFollowingLeaderEpoch."""
    rs = s.replica_state
    return (rs[leader].leader == leader and rs[follower].leader == leader
            and rs[follower].leader_epoch == rs[leader].leader_epoch)


def replicate(s: State, leader: int, follower: int) -> Optional[State]:
    """ReplicateTo(leader, follower), then the follower's hw := Min(leader hw, new end offset)."""
    flog, llog = s.replica_log[follower], s.replica_log[leader]
    offset = len(flog)
    if offset >= len(llog):          # HasEntry(leader, record, offset) /\ offset = endOffset
        return None
    # Append's ~IsFull holds: offset < len(llog) <= LogSize
    rs = s.replica_state
    hw = min(rs[leader].hw, offset + 1)
    return s._replace(replica_log=put(s.replica_log, follower, flog + (llog[offset],)),
                      replica_state=put(rs, follower, rs[follower]._replace(hw=hw)))


# ---------------------------------------------------------------- KafkaReplication

def controller_elect_leader(s: State, k: Constants) -> Iterator[Step]:
    """ControllerElectLeader: any other member of the quorum ISR, with a new epoch."""
    q = s.quorum_state
    for new_leader in members(q.isr):
        if q.leader != new_leader:
            t = controller_update_isr(s, k, new_leader, q.isr)
            if t is not None:
                yield ("ControllerElectLeader", new_leader), t


def controller_shrink_isr(s: State, k: Constants) -> Iterator[Step]:
    """ControllerShrinkIsr: a failed leader leaves no leader (and leaves the ISR unless it is
    alone in it); a failed follower leaves the ISR."""
    q = s.quorum_state
    for r in range(k.replicas):
        bit = 1 << r
        if q.leader == r and q.isr == bit:
            t = controller_update_isr(s, k, NONE, q.isr)
        elif q.leader == r:
            t = controller_update_isr(s, k, NONE, q.isr & ~bit)
        elif q.isr & bit:
            t = controller_update_isr(s, k, q.leader, q.isr & ~bit)
        else:
            continue
        if t is not None:
            yield ("ControllerShrinkIsr", r), t


def become_leader(s: State, k: Constants) -> Iterator[Step]:
    """BecomeLeader: the named leader takes a request with a higher epoch; its hw is kept."""
    rs = s.replica_state
    for req in s.leader_and_isr_requests:
        leader = req.leader
        if leader != NONE and req.leader_epoch > rs[leader].leader_epoch:
            new = ReplicaState(hw=rs[leader].hw, leader_epoch=req.leader_epoch, leader=leader, isr=req.isr)
            yield ("BecomeLeader", leader, req.leader_epoch), s._replace(replica_state=put(rs, leader, new))


def leader_write(s: State, k: Constants) -> Iterator[Step]:
    """LeaderWrite: a presumed leader appends the next record id in its leader epoch."""
    if s.next_record_id > k.max_records - 1:
        return
    for r in range(k.replicas):
        if presumes_leadership(s, r) and end_offset(s, r) < k.log_size:
            record = (s.next_record_id, s.replica_state[r].leader_epoch)
            yield ("LeaderWrite", r), s._replace(
                next_record_id=s.next_record_id + 1,
                replica_log=put(s.replica_log, r, s.replica_log[r] + (record,)))


def leader_shrink_isr(s: State, k: Constants) -> Iterator[Step]:
    """LeaderShrinkIsr: drop a member not caught up to the leader's end offset."""
    for leader in range(k.replicas):
        isr = s.replica_state[leader].isr
        end = end_offset(s, leader)
        for r in members(isr & ~(1 << leader)):
            if not is_follower_caught_up(s, leader, r, end):
                t = quorum_update_leader_and_isr(s, leader, isr & ~(1 << r))
                if t is not None:
                    yield ("LeaderShrinkIsr", leader, r), t


def leader_expand_isr(s: State, k: Constants) -> Iterator[Step]:
    """LeaderExpandIsr: add a replica caught up to the leader's hw."""
    for leader in range(k.replicas):
        rs = s.replica_state[leader]
        for r in range(k.replicas):
            if not rs.isr >> r & 1 and is_follower_caught_up(s, leader, r, rs.hw):
                t = quorum_update_leader_and_isr(s, leader, rs.isr | 1 << r)
                if t is not None:
                    yield ("LeaderExpandIsr", leader, r), t


def leader_inc_high_watermark(s: State, k: Constants) -> Iterator[Step]:
    """LeaderIncHighWatermark: every member of the leader's ISR follows it and has offset hw."""
    rs = s.replica_state
    for leader in range(k.replicas):
        hw = rs[leader].hw
        if rs[leader].leader != leader or hw >= k.log_size:     # offset \in Offsets
            continue
        if all(rs[f].leader == leader and has_offset(s, f, hw) for f in members(rs[leader].isr)):
            yield ("LeaderIncHighWatermark", leader), s._replace(
                replica_state=put(rs, leader, rs[leader]._replace(hw=hw + 1)))


def follower_replicate(s: State, k: Constants) -> Iterator[Step]:
    """FollowerReplicate: a follower of a presumed leader copies its next record, no fencing."""
    rs = s.replica_state
    for follower in range(k.replicas):
        leader = rs[follower].leader
        if leader == NONE or rs[leader].leader != leader:
            continue
        t = replicate(s, leader, follower)
        if t is not None:
            yield ("FollowerReplicate", follower, leader), t


def become_follower_and_truncate(name: str, truncation_offset):
    """BecomeFollowerAndTruncateTo(leader, replica, offset) over every request, with the offset
    chosen by the variant: ``truncation_offset(s, leader, replica)`` (None: no disjunct applies)."""

    def action(s: State, k: Constants) -> Iterator[Step]:
        rs = s.replica_state
        for req in s.leader_and_isr_requests:
            leader = req.leader
            if leader == NONE:     # \E leader \in Replicas: a request naming None is never taken
                continue
            for replica in range(k.replicas):
                if replica == leader or req.leader_epoch <= rs[replica].leader_epoch:
                    continue
                offset = truncation_offset(s, leader, replica)
                if offset is None:
                    continue
                logs = truncate_to(s, replica, offset)
                if logs is None:
                    continue
                new = ReplicaState(hw=min(offset, rs[replica].hw), leader_epoch=req.leader_epoch,
                                   leader=leader, isr=req.isr)
                yield (name, leader, replica, req.leader_epoch), s._replace(
                    replica_log=logs, replica_state=put(rs, replica, new))

    action.__name__ = name
    return action


# ---------------------------------------------------------------- truncation offsets

def truncate_to_high_watermark(s: State, leader: int, replica: int) -> int:
    """KafkaTruncateToHighWatermark: the follower's own hw."""
    return s.replica_state[replica].hw


def lookup_offset_for_epoch(s: State, leader: int, follower: int, epoch: int) -> int:
    """Kip101 LookupOffsetForEpoch, answered from the leader's current log."""
    llog = s.replica_log[leader]
    if not llog:
        return s.replica_state[follower].hw
    if llog[-1][1] == epoch:
        return len(llog)
    larger = [offset for offset, (_, e) in enumerate(llog) if e > epoch]
    return min(larger) if larger else s.replica_state[follower].hw


def truncate_kip101(s: State, leader: int, replica: int) -> int:
    """BecomeFollowerTruncateKip101: 0 for an empty log, else the leader's end offset for the
    epoch of the replica's latest record."""
    log = s.replica_log[replica]
    if not log:
        return 0
    return lookup_offset_for_epoch(s, leader, replica, log[-1][1])


def first_non_matching_offset_from_tail(s: State, leader: int, follower: int) -> int:
    """Kip279 FirstNonMatchingOffsetFromTail: one past the last offset where both logs hold the
    same record (0 if none, or the leader's log is empty)."""
    llog, flog = s.replica_log[leader], s.replica_log[follower]
    if not llog:
        return 0
    for offset in range(min(len(llog), len(flog)) - 1, -1, -1):
        if llog[offset] == flog[offset]:
            return offset + 1
    return 0


# ---------------------------------------------------------------- Kip320

def fenced_follower_fetch(s: State, k: Constants) -> Iterator[Step]:
    """FencedFollowerFetch: replicate only while on the leader's epoch."""
    for follower in range(k.replicas):
        leader = s.replica_state[follower].leader
        if leader == NONE or not is_following_leader_epoch(s, leader, follower):
            continue
        t = replicate(s, leader, follower)
        if t is not None:
            yield ("FencedFollowerFetch", follower, leader), t


def fenced_leader_inc_high_watermark(s: State, k: Constants) -> Iterator[Step]:
    """FencedLeaderIncHighWatermark: the leader has offset hw and every member of its ISR is on
    its epoch and has it."""
    rs = s.replica_state
    for leader in range(k.replicas):
        hw = rs[leader].hw
        if not has_offset(s, leader, hw):
            continue
        if all(is_following_leader_epoch(s, leader, f) and has_offset(s, f, hw) for f in members(rs[leader].isr)):
            yield ("FencedLeaderIncHighWatermark", leader), s._replace(
                replica_state=put(rs, leader, rs[leader]._replace(hw=hw + 1)))


def fenced_leader_shrink_isr(s: State, k: Constants) -> Iterator[Step]:
    """FencedLeaderShrinkIsr: drop a member off the leader's epoch or behind its end offset."""
    for leader in range(k.replicas):
        isr = s.replica_state[leader].isr
        end = end_offset(s, leader)
        for f in members(isr & ~(1 << leader)):
            if not is_following_leader_epoch(s, leader, f) or end_offset(s, f) < end:
                t = quorum_update_leader_and_isr(s, leader, isr & ~(1 << f))
                if t is not None:
                    yield ("FencedLeaderShrinkIsr", leader, f), t


def has_high_watermark_reached_current_epoch(s: State, leader: int) -> bool:
    rs = s.replica_state[leader]
    log = s.replica_log[leader]
    return rs.hw == len(log) or (rs.hw < len(log) and log[rs.hw][1] == rs.leader_epoch)


def fenced_leader_expand_isr(s: State, k: Constants) -> Iterator[Step]:
    """FencedLeaderExpandIsr: add a follower on the leader's epoch that has reached the hw, once
    the hw has reached the leader's own epoch."""
    for leader in range(k.replicas):
        rs = s.replica_state[leader]
        for f in range(k.replicas):
            if rs.isr >> f & 1 or not is_following_leader_epoch(s, leader, f):
                continue
            if not (rs.hw == 0 or has_offset(s, f, rs.hw - 1)):
                continue
            if not has_high_watermark_reached_current_epoch(s, leader):
                continue
            t = quorum_update_leader_and_isr(s, leader, rs.isr | 1 << f)
            if t is not None:
                yield ("FencedLeaderExpandIsr", leader, f), t


def fenced_become_follower_and_truncate(s: State, k: Constants) -> Iterator[Step]:
    """FencedBecomeFollowerAndTruncate: truncate against the leader only once the leader has
    taken the same request (same leader epoch)."""
    rs = s.replica_state
    for req in s.leader_and_isr_requests:
        leader = req.leader
        if leader == NONE or rs[leader].leader != leader or rs[leader].leader_epoch != req.leader_epoch:
            continue
        for replica in range(k.replicas):
            if replica == leader or req.leader_epoch <= rs[replica].leader_epoch:
                continue
            offset = first_non_matching_offset_from_tail(s, leader, replica)
            logs = truncate_to(s, replica, offset)
            if logs is None:
                continue
            new = ReplicaState(hw=min(offset, rs[replica].hw), leader_epoch=req.leader_epoch,
                               leader=leader, isr=req.isr)
            yield ("FencedBecomeFollowerAndTruncate", leader, replica, req.leader_epoch), s._replace(
                replica_log=logs, replica_state=put(rs, replica, new))


# ---------------------------------------------------------------- Kip320FirstTry

def is_follower_caught_up_to_leader_epoch(s: State, leader: int, follower: int, end: int) -> bool:
    """IsFollowerCaughtUpToLeaderEpoch: follows a presumed leader and, below ``end``, holds a
    record of the same epoch as the leader's."""
    rs = s.replica_state
    if rs[leader].leader != leader or rs[follower].leader != leader:
        return False
    if end == 0:
        return True
    llog, flog = s.replica_log[leader], s.replica_log[follower]
    return end > 0 and end - 1 < len(llog) and end - 1 < len(flog) and flog[end - 1][1] == llog[end - 1][1]


def follower_needs_truncation(s: State, follower: int, leader: int) -> bool:
    flog, llog = s.replica_log[follower], s.replica_log[leader]
    if len(flog) > len(llog):
        return True
    return bool(flog) and len(flog) - 1 < len(llog) and llog[len(flog) - 1][1] != flog[-1][1]


def follower_truncate(s: State, k: Constants) -> Iterator[Step]:
    """FollowerTruncate: on a diverging tail, truncate against the leader at any time."""
    rs = s.replica_state
    for follower in range(k.replicas):
        leader = rs[follower].leader
        if leader == NONE or rs[leader].leader != leader or not follower_needs_truncation(s, follower, leader):
            continue
        offset = first_non_matching_offset_from_tail(s, leader, follower)
        logs = truncate_to(s, follower, offset)
        if logs is None:
            continue
        yield ("FollowerTruncate", leader, follower), s._replace(
            replica_log=logs, replica_state=put(rs, follower, rs[follower]._replace(hw=min(offset, rs[follower].hw))))


def improved_leader_inc_high_watermark(s: State, k: Constants) -> Iterator[Step]:
    """ImprovedLeaderIncHighWatermark: every ISR member holds the leader's epoch at offset hw."""
    rs = s.replica_state
    for leader in range(k.replicas):
        hw = rs[leader].hw
        if rs[leader].leader != leader or not has_offset(s, leader, hw):
            continue
        if all(is_follower_caught_up_to_leader_epoch(s, leader, f, hw + 1) for f in members(rs[leader].isr)):
            yield ("ImprovedLeaderIncHighWatermark", leader), s._replace(
                replica_state=put(rs, leader, rs[leader]._replace(hw=hw + 1)))


def follower_fetch(s: State, k: Constants) -> Iterator[Step]:
    """FollowerFetch (KIP-320 first try): replicate only if the epoch at the end of the log matches."""
    for follower in range(k.replicas):
        leader = s.replica_state[follower].leader
        if leader == NONE or not is_follower_caught_up_to_leader_epoch(s, leader, follower, end_offset(s, follower)):
            continue
        t = replicate(s, leader, follower)
        if t is not None:
            yield ("FollowerFetch", follower, leader), t


def leader_shrink_isr_better_fencing(s: State, k: Constants) -> Iterator[Step]:
    for leader in range(k.replicas):
        isr = s.replica_state[leader].isr
        end = end_offset(s, leader)
        for r in members(isr & ~(1 << leader)):
            if not is_follower_caught_up_to_leader_epoch(s, leader, r, end):
                t = quorum_update_leader_and_isr(s, leader, isr & ~(1 << r))
                if t is not None:
                    yield ("LeaderShrinkIsrBetterFencing", leader, r), t


def leader_expand_isr_better_fencing(s: State, k: Constants) -> Iterator[Step]:
    for leader in range(k.replicas):
        rs = s.replica_state[leader]
        for r in range(k.replicas):
            if rs.isr >> r & 1 or not is_follower_caught_up_to_leader_epoch(s, leader, r, rs.hw):
                continue
            if not has_high_watermark_reached_current_epoch(s, leader):
                continue
            t = quorum_update_leader_and_isr(s, leader, rs.isr | 1 << r)
            if t is not None:
                yield ("LeaderExpandIsrBetterFencing", leader, r), t


def become_follower(s: State, k: Constants) -> Iterator[Step]:
    """BecomeFollower (KIP-320 first try): take the request, keep the log and hw."""
    rs = s.replica_state
    for req in s.leader_and_isr_requests:
        leader = req.leader
        if leader == NONE:
            continue
        for replica in range(k.replicas):
            if replica == leader or req.leader_epoch <= rs[replica].leader_epoch:
                continue
            new = ReplicaState(hw=rs[replica].hw, leader_epoch=req.leader_epoch, leader=leader, isr=req.isr)
            yield ("BecomeFollower", leader, replica, req.leader_epoch), s._replace(
                replica_state=put(rs, replica, new))


# ---------------------------------------------------------------- the Next of each module

_COMMON = (controller_elect_leader, controller_shrink_isr, become_leader)

NEXT = {
    "truncate-to-hw": _COMMON + (
        leader_expand_isr, leader_shrink_isr, leader_write, leader_inc_high_watermark,
        become_follower_and_truncate("BecomeFollowerTruncateToHighWatermark", truncate_to_high_watermark),
        follower_replicate),
    "kip101": _COMMON + (
        leader_expand_isr, leader_shrink_isr, leader_write, leader_inc_high_watermark,
        become_follower_and_truncate("BecomeFollowerTruncateKip101", truncate_kip101),
        follower_replicate),
    "kip279": _COMMON + (
        leader_expand_isr, leader_shrink_isr, leader_write, leader_inc_high_watermark,
        become_follower_and_truncate("BecomeFollowerTruncateKip279", first_non_matching_offset_from_tail),
        follower_replicate),
    "kip320": _COMMON + (
        fenced_leader_expand_isr, fenced_leader_shrink_isr, leader_write, fenced_leader_inc_high_watermark,
        fenced_become_follower_and_truncate, fenced_follower_fetch),
    "kip320-first-try": _COMMON + (
        leader_expand_isr_better_fencing, leader_shrink_isr_better_fencing, leader_write,
        improved_leader_inc_high_watermark, become_follower, follower_fetch, follower_truncate),
}

# the parameters of each label after its name: r = a replica, e = a request's leader epoch
ARGS = {
    "ControllerElectLeader": "r", "ControllerShrinkIsr": "r", "BecomeLeader": "re", "LeaderWrite": "r",
    "LeaderShrinkIsr": "rr", "LeaderExpandIsr": "rr", "LeaderIncHighWatermark": "r",
    "FollowerReplicate": "rr", "BecomeFollowerTruncateToHighWatermark": "rre",
    "BecomeFollowerTruncateKip101": "rre", "BecomeFollowerTruncateKip279": "rre",
    "FencedFollowerFetch": "rr", "FencedLeaderIncHighWatermark": "r", "FencedLeaderShrinkIsr": "rr",
    "FencedLeaderExpandIsr": "rr", "FencedBecomeFollowerAndTruncate": "rre",
    "FollowerTruncate": "rr", "ImprovedLeaderIncHighWatermark": "r", "FollowerFetch": "rr",
    "LeaderShrinkIsrBetterFencing": "rr", "LeaderExpandIsrBetterFencing": "rr", "BecomeFollower": "rre",
}
