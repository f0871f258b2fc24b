"""The state of KafkaReplication.tla, as nested tuples of ints.

The six TLA+ variables, one field each (a distinct TLA+ state is a distinct tuple, so
state counts agree with TLC's):

- ``replica_log``: per replica, the records at offsets ``0 .. endOffset-1`` as ``(id, epoch)``.
  The TLA+ log is a fixed array of ``LogSize`` slots with ``Nil`` above ``endOffset``; every
  action keeps those slots ``Nil``, so the prefix is the whole log (``endOffset = len``).
- ``replica_state``: per replica its ``hw``, ``leader_epoch``, ``leader`` and ``isr``.
- ``next_record_id``, ``next_leader_epoch``: the two IdSequence counters.
- ``leader_and_isr_requests``: the TLA+ set of requests, canonical as a tuple sorted by epoch
  (every request carries a fresh epoch, so the epoch orders and identifies it).
- ``quorum_state``: the controller's ``leader_epoch``, ``leader`` and ``isr`` (as in ZooKeeper).

Sets of replicas are bitmasks (bit r set = replica r is in it); ``NONE`` stands for TLA+
``None`` (no replica) and ``NIL`` for ``Nil`` (no leader epoch yet).

>>> s = initial_state(2, 2)
>>> s.quorum_state
QuorumState(leader_epoch=-1, leader=-1, isr=3)
>>> members(s.quorum_state.isr)
(0, 1)
"""

from __future__ import annotations

from typing import NamedTuple, Tuple

NONE = -1   # TLA+ None: no replica
NIL = -1    # TLA+ Nil: no leader epoch

Record = Tuple[int, int]   # (id, epoch)


class ReplicaState(NamedTuple):
    hw: int
    leader_epoch: int
    leader: int
    isr: int


class QuorumState(NamedTuple):
    leader_epoch: int
    leader: int
    isr: int


class State(NamedTuple):
    replica_log: Tuple[Tuple[Record, ...], ...]
    replica_state: Tuple[ReplicaState, ...]
    next_record_id: int
    next_leader_epoch: int
    leader_and_isr_requests: Tuple[QuorumState, ...]
    quorum_state: QuorumState


def members(mask: int) -> Tuple[int, ...]:
    """The replicas of a bitmask set, in order.

    >>> members(0b110)
    (1, 2)
    """
    return _MEMBERS[mask] if mask < len(_MEMBERS) else tuple(r for r in range(mask.bit_length()) if mask >> r & 1)


_MEMBERS = tuple(tuple(r for r in range(5) if m >> r & 1) for m in range(1 << 5))   # every set of <= 5 replicas


def initial_state(replicas: int, log_size: int) -> State:
    """Init: empty logs, hw 0, no epoch, no leader, quorum ISR = all replicas, no requests."""
    return State(
        replica_log=((),) * replicas,
        replica_state=(ReplicaState(hw=0, leader_epoch=NIL, leader=NONE, isr=0),) * replicas,
        next_record_id=0,
        next_leader_epoch=0,
        leader_and_isr_requests=(),
        quorum_state=QuorumState(leader_epoch=NIL, leader=NONE, isr=(1 << replicas) - 1),
    )


def put(t: tuple, i: int, value) -> tuple:
    """``[t EXCEPT ![i] = value]`` on a tuple."""
    return t[:i] + (value,) + t[i + 1:]
