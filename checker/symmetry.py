"""Symmetry: replicas are interchangeable, so states equal up to renaming replica ids are one state.

The kafka-tla family is symmetric under every permutation of replica ids; the design model under
every permutation that keeps r0, the preferred replica (the first of the partition's assignment). ``canonical(s)`` picks one representative per class: the
least renaming of ``s`` (as a tuple) among the permutations that list the replicas in order of an
id-free key; the set of those renamings is the same for every member of a class, so so is its
least element. Breadth-first search over representatives visits one state per class.

>>> from hwcheck.spec import Config, Model
>>> m = Model(Config(mode="hw", replicas=3))
>>> [s] = m.init_states()
>>> a, b = m.step(s, ("send_fetch", 1)), m.step(s, ("send_fetch", 2))
>>> a == b, canonical(a)[0] == canonical(b)[0]
(False, True)
"""

from __future__ import annotations

import functools
import itertools
from typing import Callable, Optional, Tuple

from hwcheck.spec.kafka_tla.state import NONE, QuorumState, ReplicaState
from hwcheck.spec.kafka_tla.state import State as TlaState
from hwcheck.spec.state import PREFERRED, UNDEFINED, Replica, State

Perm = Tuple[int, ...]


def _mask(m: int, perm: Perm) -> int:
    out, r = 0, 0
    while m:
        if m & 1:
            out |= 1 << perm[r]
        m >>= 1
        r += 1
    return out


# ------------------------------------------------------------------ the design model

def rename_state(s: State, perm: Perm) -> State:
    """The state with replica r renamed perm[r]: every field holding a replica id moves
    (Replica.leader, ISR bitmasks, remote_leo order, the controller, inflight order and the
    peer of each message)."""
    n = len(perm)
    mask = _mask_table(perm)
    reps = [None] * n
    inflight, stale = [()] * n, [()] * n
    for r, rep in enumerate(s.replicas):
        leader = rep.leader if rep.leader == UNDEFINED else perm[rep.leader]
        reps[perm[r]] = Replica(rep.alive, rep.role, rep.leader_epoch, leader, mask[rep.isr], rep.log,
                                rep.hw, rep.flushed, rep.epoch_cache, rep.truncating, _moved(rep.remote_leo, perm),
                                _moved(rep.remote_broker_epoch, perm), rep.clean_shutdown)
        inflight[perm[r]] = _renamed_message(s.inflight[r], perm)
        stale[perm[r]] = _renamed_message(s.stale[r], perm)
    c = s.controller
    leader = c.leader if c.leader == UNDEFINED else perm[c.leader]
    return State(tuple(reps), type(c)(leader, c.epoch, mask[c.isr], mask[c.live], _moved(c.broker_epochs, perm),
                                      mask[c.elr], mask[c.last_known_elr]), tuple(inflight), tuple(stale), s.history)


def _renamed_message(msg, perm: Perm):
    """The message (spec/state.py: its second field is its leader) sent to or by perm[leader]."""
    return type(msg)._make((msg.kind, perm[msg.leader]) + msg[2:]) if msg else ()


def _moved(per_replica: tuple, perm: Perm) -> tuple:
    """A per-replica tuple with entry r moved to perm[r] (empty stays empty)."""
    if not per_replica:
        return per_replica
    moved = [0] * len(perm)
    for f, v in enumerate(per_replica):
        moved[perm[f]] = v
    return tuple(moved)


def _design_keys(s: State) -> list:
    """Per replica, what renaming cannot change (ids appear only as 'is it me'). The preferred
    replica (r0) is the only one the protocol singles out (elect_preferred): its key sorts first,
    so every renaming keeps it r0 and only the others are interchangeable."""
    c = s.controller
    keys = []
    for r, rep in enumerate(s.replicas):
        msg, old = s.inflight[r], s.stale[r]
        keys.append((r != PREFERRED, rep.alive, rep.role, rep.leader_epoch, rep.leader == r, rep.log, rep.hw,
                     rep.flushed, rep.epoch_cache, rep.truncating, c.leader == r, c.isr >> r & 1, c.live >> r & 1,
                     (msg.kind,) + msg[2:] if msg else (), old[2:] if old else ()))    # all but the leader
    return keys


# ------------------------------------------------------------------ the kafka-tla model

def rename_tla_state(s: TlaState, perm: Perm) -> TlaState:
    """KafkaReplication.tla's state with replica r renamed perm[r]: the logs and replica states
    move, and every leader and ISR in replica states, requests and the quorum state is renamed
    (requests stay ordered by their epochs, which renaming does not touch)."""
    n = len(perm)
    who = perm + (NONE,)          # who[NONE] = who[-1] = NONE
    mask = _mask_table(perm)
    logs, states = [None] * n, [None] * n
    for r, rs in enumerate(s.replica_state):
        p = perm[r]
        logs[p] = s.replica_log[r]
        states[p] = ReplicaState(rs.hw, rs.leader_epoch, who[rs.leader], mask[rs.isr])
    q = s.quorum_state
    return TlaState(tuple(logs), tuple(states), s.next_record_id, s.next_leader_epoch,
                    tuple([QuorumState(x.leader_epoch, who[x.leader], mask[x.isr])
                           for x in s.leader_and_isr_requests]),
                    QuorumState(q.leader_epoch, who[q.leader], mask[q.isr]))


@functools.lru_cache(maxsize=None)
def _mask_table(perm: Perm) -> Tuple[int, ...]:
    """Every replica set (bitmask) renamed by ``perm``, indexed by the set."""
    return tuple(_mask(m, perm) for m in range(1 << len(perm)))


def _tla_keys(s: TlaState) -> list:
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


# ------------------------------------------------------------------ one canonical form

def _candidates(keys: list):
    """Permutations (perm[r] = new name of r) that list the replicas in key order; ties tried
    every way."""
    n = len(keys)
    order = sorted(range(n), key=keys.__getitem__)
    groups, start = [], 0
    for i in range(1, n + 1):
        if i == n or keys[order[i]] != keys[order[start]]:
            groups.append(order[start:i])
            start = i
    if len(groups) == n:                      # all keys differ: one candidate
        perm = [0] * n
        for name, r in enumerate(order):
            perm[r] = name
        yield tuple(perm)
        return
    for choice in itertools.product(*(itertools.permutations(g) for g in groups)):
        perm = [0] * n
        for name, r in enumerate(r for g in choice for r in g):
            perm[r] = name
        yield tuple(perm)


def _canonical_with(rename, keys_of):
    def canonical(s) -> Tuple[object, Perm]:
        keys = keys_of(s)
        n = len(keys)
        order = sorted(range(n), key=keys.__getitem__)
        prev, ties = keys[order[0]], False
        for r in order[1:]:
            if keys[r] == prev:
                ties = True
                break
            prev = keys[r]
        if not ties:                    # all keys differ: one candidate
            perm = [0] * n
            for name, r in enumerate(order):
                perm[r] = name
            perm = tuple(perm)
            return (s if order == list(range(n)) else rename(s, perm)), perm
        best, best_perm = None, None
        for perm in _candidates(keys):
            t = s if perm == tuple(range(n)) else rename(s, perm)
            if best is None or t < best:
                best, best_perm = t, perm
        return best, best_perm
    return canonical


canonical = _canonical_with(rename_state, _design_keys)
canonical.__doc__ = """The canonical renaming of a design-model state and the permutation that gives it.

>>> from hwcheck.spec import Config, Model
>>> m = Model(Config(mode="hw", replicas=3))
>>> s = m.step(m.init_states()[0], ("send_fetch", 2))
>>> c, perm = canonical(s)
>>> rename_state(s, perm) == c, canonical(c)[0] == c
(True, True)
"""
canonical_tla = _canonical_with(rename_tla_state, _tla_keys)


def rename_label(label: Tuple, perm: Perm) -> Tuple:
    return (label[0],) + tuple(perm[a] for a in label[1:])


def inverse(perm: Perm) -> Perm:
    inv = [0] * len(perm)
    for r, p in enumerate(perm):
        inv[p] = r
    return tuple(inv)


def canonicalizer(model) -> Optional[Callable]:
    """``state -> canonical state`` for the model's family (None for a single replica)."""
    if model.cfg.replicas < 2:
        return None
    fn = canonical_tla if getattr(model, "family", "design") == "kafka-tla" else canonical

    def canon(s):
        return fn(s)[0]
    return canon
