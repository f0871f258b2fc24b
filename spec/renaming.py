"""Renaming replicas: the design model's symmetry (checker/symmetry.py's algorithm uses it through
``Model.rename`` and ``Model.symmetry_keys``).

Replicas are interchangeable except r0, the preferred replica (the first of the partition's
assignment, the only one ``elect_preferred`` elects). ``rename(s, perm)`` moves every field that
holds a replica id; ``symmetry_keys(s)`` gives per replica what renaming cannot change.

>>> from hwcheck.spec import Config, Model
>>> m = Model(Config(mode="hw", replicas=3))
>>> s = m.step(m.init_states()[0], ("send_fetch", 2))
>>> t = rename(s, (0, 2, 1))
>>> t.inflight[1].leader, t.inflight[2], rename(t, (0, 2, 1)) == s
(0, (), True)
"""

from __future__ import annotations

import functools
from typing import Tuple

from .state import PREFERRED, UNDEFINED, Message, Replica, State

Perm = Tuple[int, ...]     # perm[r]: the new name of replica r


def _mask(m: int, perm: Perm) -> int:
    out, r = 0, 0
    while m:
        if m & 1:
            out |= 1 << perm[r]
        m >>= 1
        r += 1
    return out


@functools.lru_cache(maxsize=None)
def renamed_sets(perm: Perm) -> Tuple[int, ...]:
    """Every replica set (bitmask) renamed by ``perm``, indexed by the set.

    >>> renamed_sets((1, 0))[0b01], renamed_sets((1, 0))[0b11]
    (2, 3)
    """
    return tuple(_mask(m, perm) for m in range(1 << len(perm)))


def rename(s: State, perm: Perm) -> State:
    """The state with replica r renamed perm[r]: every field holding a replica id moves
    (Replica.leader, ISR bitmasks, the order of remote_leo and its siblings, the controller, inflight order and the
    leader of each message)."""
    n = len(perm)
    mask = renamed_sets(perm)
    reps = [None] * n
    inflight, stale = [()] * n, [()] * n
    for r, rep in enumerate(s.replicas):
        leader = rep.leader if rep.leader == UNDEFINED else perm[rep.leader]
        reps[perm[r]] = Replica(rep.alive, rep.role, rep.leader_epoch, leader, mask[rep.isr], rep.log,
                                rep.hw, rep.flushed, rep.epoch_cache, rep.truncating, _moved(rep.remote_leo, perm),
                                _moved(rep.remote_broker_epoch, perm), rep.clean_shutdown, rep.leader_fenced,
                                _moved(rep.remote_fetch_leo, perm), mask[rep.remote_caught_up], rep.leading_since)
        inflight[perm[r]] = _renamed_message(s.inflight[r], perm)
        stale[perm[r]] = _renamed_message(s.stale[r], perm)
    c = s.controller
    leader = c.leader if c.leader == UNDEFINED else perm[c.leader]
    return State(tuple(reps), type(c)(leader, c.epoch, mask[c.isr], mask[c.live], _moved(c.broker_epochs, perm),
                                      mask[c.elr], mask[c.last_known_elr]), tuple(inflight), tuple(stale), s.history)


def _renamed_message(msg: Message, perm: Perm):
    """The message sent to or by perm[its leader] (every kind's second field is its leader)."""
    return type(msg)._make((msg.kind, perm[msg.leader]) + msg[2:]) if msg else ()


def _moved(per_replica: tuple, perm: Perm) -> tuple:
    """A per-replica tuple with entry r moved to perm[r] (empty stays empty)."""
    if not per_replica:
        return per_replica
    moved = [0] * len(perm)
    for f, v in enumerate(per_replica):
        moved[perm[f]] = v
    return tuple(moved)


def symmetry_keys(s: State) -> list:
    """Per replica, what renaming cannot change (ids appear only as 'is it me'). The preferred
    replica (r0) is the only one the protocol singles out (elect_preferred): its key sorts first,
    so every renaming keeps it r0 and only the others are interchangeable."""
    c = s.controller
    keys = []
    for r, rep in enumerate(s.replicas):
        msg, old = s.inflight[r], s.stale[r]
        keys.append((r != PREFERRED, rep.alive, rep.role, rep.leader_epoch, rep.leader == r, rep.log, rep.hw,
                     rep.flushed, rep.epoch_cache, rep.truncating, rep.leader_fenced, rep.leading_since,
                     c.leader == r, c.isr >> r & 1, c.live >> r & 1,
                     (msg.kind,) + msg[2:] if msg else (), (old.kind,) + old[2:] if old else ()))    # all but the leader
    return keys
