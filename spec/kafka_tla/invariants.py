"""StrongIsr, WeakIsr, LeaderInIsr and TypeOk of KafkaReplication.tla, as predicates ``(state, k)``.

>>> from .actions import Constants
>>> from .state import initial_state
>>> k = Constants(2, 2, 2, 3)
>>> s = initial_state(2, 2)
>>> strong_isr(s, k), weak_isr(s, k), leader_in_isr(s, k), type_ok(s, k)
(True, True, False, True)
"""

from __future__ import annotations

from .state import NIL, NONE, members


def _consistent_below_hw(s, r1: int, isr: int) -> bool:
    """Every member of ``isr`` holds r1's records at every offset below r1's hw."""
    hw = s.replica_state[r1].hw
    if hw == 0:
        return True
    log1 = s.replica_log[r1]
    if hw > len(log1):
        return not isr       # HasEntry(r1, .., offset) fails for some offset (if any member)
    prefix = log1[:hw]
    return all(len(s.replica_log[r2]) >= hw and s.replica_log[r2][:hw] == prefix for r2 in members(isr))


def strong_isr(s, k) -> bool:
    """StrongIsr: below any presumed leader's hw, every member of the *quorum* ISR has its records."""
    q_isr = s.quorum_state.isr
    return all(rs.leader != r1 or _consistent_below_hw(s, r1, q_isr) for r1, rs in enumerate(s.replica_state))


def weak_isr(s, k) -> bool:
    """WeakIsr: the same against the leader's own view of the ISR."""
    return all(rs.leader != r1 or _consistent_below_hw(s, r1, rs.isr) for r1, rs in enumerate(s.replica_state))


def leader_in_isr(s, k) -> bool:
    """LeaderInIsr: the quorum's leader is in the quorum ISR (false while there is no leader,
    e.g. in the initial state, as in the TLA+)."""
    q = s.quorum_state
    return q.leader != NONE and q.isr >> q.leader & 1 == 1


def type_ok(s, k) -> bool:
    """TypeOk: every variable within its TLA+ type (the counters, logs of LogRecords no longer
    than LogSize, hw in 0..LogSize, epochs in Nil..MaxLeaderEpoch, leaders in Replicas or None)."""
    all_replicas = (1 << k.replicas) - 1

    def quorum_ok(q):
        return (NIL <= q.leader_epoch <= k.max_leader_epoch and NONE <= q.leader < k.replicas
                and q.isr & ~all_replicas == 0)

    return (
        0 <= s.next_leader_epoch <= k.max_leader_epoch + 1
        and 0 <= s.next_record_id <= k.max_records
        and all(len(log) <= k.log_size and all(0 <= i < k.max_records and 0 <= e <= k.max_leader_epoch
                                               for i, e in log) for log in s.replica_log)
        and all(0 <= rs.hw <= k.log_size and quorum_ok(rs) for rs in s.replica_state)
        and quorum_ok(s.quorum_state)
        and all(quorum_ok(q) for q in s.leader_and_isr_requests)
    )


INVARIANTS = {"StrongIsr": strong_isr, "WeakIsr": weak_isr, "LeaderInIsr": leader_in_isr, "TypeOk": type_ok}
