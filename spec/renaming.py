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
import operator
from typing import Tuple

from .state import PREFERRED, UNDEFINED, Message, Replica, State, build

Perm = Tuple[int, ...]     # perm[r]: the new name of replica r

_LEADER, _ISR, _CAUGHT_UP = (Replica._fields.index(f) for f in ("leader", "isr", "remote_caught_up"))
_PER_REPLICA = tuple(Replica._fields.index(f) for f in ("remote_leo", "remote_broker_epoch", "remote_fetch_leo"))


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


@functools.lru_cache(maxsize=None)
def _movers(perm: Perm):
    """For ``perm``: the renamed replica sets (``renamed_sets``), the inverse permutation and an
    ``itemgetter`` that moves a per-replica tuple's entry r to perm[r] (one C call where a loop
    costs a Python frame per tuple: at 3 replicas about half the generated states are renamed)."""
    inv = [0] * len(perm)
    for r, p in enumerate(perm):
        inv[p] = r
    return renamed_sets(perm), tuple(inv), operator.itemgetter(*inv) if len(inv) > 1 else None


def rename(s: State, perm: Perm) -> State:
    """The state with replica r renamed perm[r]: every field holding a replica id moves
    (Replica.leader, ISR bitmasks, the order of remote_leo and its siblings, the controller, inflight order and the
    leader of each message)."""
    mask, inv, move = _movers(perm)
    if move is None:
        return s
    reps, inflight, stale = s.replicas, s.inflight, s.stale
    out = []
    for r in inv:                       # the replica that becomes replica 0, 1, ...
        rep = list(reps[r])
        leader = rep[_LEADER]
        if leader != UNDEFINED:
            rep[_LEADER] = perm[leader]
        rep[_ISR] = mask[rep[_ISR]]
        rep[_CAUGHT_UP] = mask[rep[_CAUGHT_UP]]
        for i in _PER_REPLICA:
            if rep[i]:
                rep[i] = move(rep[i])
        out.append(build(Replica, rep))
    c = s.controller
    leader = c.leader if c.leader == UNDEFINED else perm[c.leader]
    return build(State, (tuple(out),
                         build(type(c), (leader, c.epoch, mask[c.isr], mask[c.live],
                                         move(c.broker_epochs) if c.broker_epochs else (),
                                         mask[c.elr], mask[c.last_known_elr], mask[c.offline_dirs])),
                         tuple([_renamed_message(inflight[r], perm) for r in inv]),
                         tuple([_renamed_message(stale[r], perm) for r in inv]), s.history))


def _renamed_message(msg: Message, perm: Perm):
    """The message sent to or by perm[its leader] (every kind's second field is its leader)."""
    return build(type(msg), (msg[0], perm[msg[1]]) + msg[2:]) if msg else ()


def symmetry_keys(s: State) -> list:
    """Per replica, what renaming cannot change (ids appear only as 'is it me'). The preferred
    replica (r0) is the only one the protocol singles out (elect_preferred): its key sorts first,
    so every renaming keeps it r0 and only the others are interchangeable; the rest of its key
    could never change an order, so it has none."""
    c, inflight, stale = s.controller, s.inflight, s.stale
    keys = []
    for r, rep in enumerate(s.replicas):
        if r == PREFERRED:
            keys.append((False,))
            continue
        msg, old = inflight[r], stale[r]
        keys.append((True, rep.alive, rep.role, rep.leader_epoch, rep.leader == r, rep.log, rep.hw,
                     rep.flushed, rep.epoch_cache, rep.truncating, rep.leader_fenced, rep.leading_since,
                     rep.new_directory, c.leader == r, c.isr >> r & 1, c.live >> r & 1, c.offline_dirs >> r & 1,
                     (msg.kind,) + msg[2:] if msg else (), (old.kind,) + old[2:] if old else ()))    # all but the leader
    return keys
