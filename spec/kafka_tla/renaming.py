"""Renaming replicas in KafkaReplication.tla's state: its symmetry (every permutation of replica
ids), used by checker/symmetry.py through ``Model.rename`` and ``Model.symmetry_keys``.

>>> from hwcheck.spec.kafka_tla import Config, Model
>>> m = Model(Config(mode="kip320"))
>>> [(_, s)] = [x for x in m.successors(m.init_states()[0]) if x[0] == ("ControllerElectLeader", 1)]
>>> rename(s, (1, 0)).quorum_state.leader, s.quorum_state.leader
(0, 1)
"""

from __future__ import annotations

from ..renaming import Perm, renamed_sets
from .state import NONE, QuorumState, ReplicaState, State


def rename(s: State, perm: Perm) -> State:
    """The state with replica r renamed perm[r]: the logs and replica states move, and every
    leader and ISR in replica states, requests and the quorum state is renamed (requests stay
    ordered by their epochs, which renaming does not touch)."""
    n = len(perm)
    who = perm + (NONE,)          # who[NONE] = who[-1] = NONE
    mask = renamed_sets(perm)
    logs, states = [None] * n, [None] * n
    for r, rs in enumerate(s.replica_state):
        p = perm[r]
        logs[p] = s.replica_log[r]
        states[p] = ReplicaState(rs.hw, rs.leader_epoch, who[rs.leader], mask[rs.isr])
    q = s.quorum_state
    return State(tuple(logs), tuple(states), s.next_record_id, s.next_leader_epoch,
                 tuple([QuorumState(x.leader_epoch, who[x.leader], mask[x.isr])
                        for x in s.leader_and_isr_requests]),
                 QuorumState(q.leader_epoch, who[q.leader], mask[q.isr]))


def symmetry_keys(s: State) -> list:
    """Per replica, what renaming cannot change."""
    q = s.quorum_state
    requests = s.leader_and_isr_requests
    keys = []
    for r, rs in enumerate(s.replica_state):
        asked = 0                 # per request (in epoch order): is r its leader, is r in its ISR
        for x in requests:
            asked = asked << 2 | (x.leader == r) << 1 | (x.isr >> r & 1)
        keys.append((s.replica_log[r], rs.hw, rs.leader_epoch, rs.leader == r, rs.leader == NONE,
                     q.leader == r, q.isr >> r & 1, asked))
    return keys
