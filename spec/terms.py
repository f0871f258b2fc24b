"""The encoding's state layout and its pure term helpers, shared by the per-action encodings that sit
beside each action in spec/actions.py (``<action>_terms``), checker/symbolic.py and spec/lemmas.

A term is whatever the term algebra ``o`` builds (``o.If``/``And``/``Or``/``Not``/``Sum``/``select``):
z3 expressions for the solver, plain ints and bools when evaluated (checker/symbolic.py, ``Z3`` and
``CONCRETE``). Nothing here imports z3.
"""

from __future__ import annotations

from typing import NamedTuple

from .modes import FETCHING, TRUNCATING, TRUNCATING_AGAIN
from .state import (EPOCH_REQUEST, EPOCH_RESPONSE, FETCH, FETCH_RESPONSE, FOLLOWER, LEADER, NO_MESSAGE, NONE,
                    PREFERRED, UNDEFINED)

__all__ = ["NONE", "LEADER", "FOLLOWER", "NO_MESSAGE", "FETCH", "FETCH_RESPONSE", "EPOCH_REQUEST", "EPOCH_RESPONSE",
           "FETCHING", "TRUNCATING", "TRUNCATING_AGAIN", "PREFERRED", "UNDEFINED",
           "leaves", "rebuild", "ite", "latest_cached_epoch", "equal", "tmin",
           "SRep", "SCtl", "SMsg", "SStale", "SHist", "SState", "ZERO"]


# ---------------------------------------------------------------- term helpers

def leaves(t):
    if isinstance(t, tuple):
        for x in t:
            yield from leaves(x)
    else:
        yield t


def rebuild(template, it):
    if isinstance(template, tuple):
        vals = [rebuild(x, it) for x in template]
        return type(template)(*vals) if hasattr(template, "_fields") else tuple(vals)
    return next(it)


def ite(o, c, a, b):
    """``If`` over two terms of the same shape (tuples, NamedTuples, leaves)."""
    if c is True or c is False:
        return a if c else b
    if not isinstance(a, tuple):
        return o.If(c, a, b)
    return rebuild(a, iter([o.If(c, x, y) for x, y in zip(leaves(a), leaves(b))]))


def latest_cached_epoch(o, rep: SRep):
    """The latest epoch in ``rep``'s epoch cache (UNDEFINED when empty): LeaderEpochFileCache.latestEpoch."""
    return o.If(rep.clen > 0, o.select(rep.epoch_cache, rep.clen - 1)[0], UNDEFINED)


def in_office_terms(o, s, r):
    """spec/state.in_office over the encoding's terms: r is up, leads, is the controller's leader,
    at the controller's epoch."""
    rep = s.reps[r]
    return o.And(rep.alive, rep.role == LEADER, s.ctl.leader == r, rep.leader_epoch == s.ctl.epoch)


def equal(o, a, b):
    return o.And(*[x == y for x, y in zip(leaves(a), leaves(b))])


def tmin(o, a, b):
    return o.If(a <= b, a, b)


# ---------------------------------------------------------------- the symbolic state

class SRep(NamedTuple):
    alive: object
    role: object
    leader_epoch: object
    leader: object
    isr: tuple          # n booleans (a leader's view)
    log: tuple          # L (record, epoch) slots
    leo: object
    hw: object
    flushed: object
    epoch_cache: tuple  # C (epoch, start) slots
    clen: object
    truncating: object  # FETCHING / TRUNCATING / TRUNCATING_AGAIN
    remote_leo: tuple   # n ints (meaningful on a leader only; 0 otherwise)
    remote_broker_epoch: tuple = ()   # broker_epochs: n ints, a leader's remote broker epochs (0 on other roles)
    clean_shutdown: object = False    # elr: the clean-shutdown marker (KAFKA-15586)
    leader_fenced: object = False     # fence_stops_fetchers with KAFKA-18991: the leader followed was fenced
    remote_fetch_leo: tuple = ()      # n ints: a leader's lastFetchLeaderLogEndOffset per follower (0 on other roles)
    remote_caught_up: tuple = ()      # n booleans: a leader's followers caught up outside its ISR view
    leading_since: object = -1        # on a leader: the epoch its term began (UNDEFINED on other roles)


class SCtl(NamedTuple):
    leader: object
    epoch: object
    isr: tuple          # n booleans
    live: tuple         # n booleans: the brokers the controller believes up
    broker_epochs: tuple = ()    # broker_epochs: n ints, each broker's epoch
    elr: tuple = ()     # elr: n booleans, Eligible Leader Replicas
    last_known_elr: tuple = ()   # elr: n booleans, the last known ELR (last known leader)


class SMsg(NamedTuple):
    """A message in flight, one layout for every kind: the slots ``a b c d`` mean what the kind's
    message in spec/state.py calls them, and are read by those names (``m.fetch_offset``)."""
    kind: object
    peer: object
    a: object           # Fetch: leader epoch; FetchResponse: hw; EpochRequest: leader epoch; EpochResponse: epoch
    b: object           # Fetch: fetch offset; FetchResponse: leader LEO; EpochRequest: requested; EpochResponse: end
    start: object       # FetchResponse: offset of its first record (= b - number of records)
    recs: tuple         # FetchResponse: L (record, epoch) slots at absolute offsets start .. b-1
    c: object = 0       # truncate_on_fetch: Fetch: last fetched epoch; FetchResponse: diverging epoch
    d: object = 0       # truncate_on_fetch: Fetch: broker epoch (0 before KIP-903); FetchResponse: its end

    # the spec's field names (spec/state.py), each for the kinds that have it
    leader = property(lambda m: m.peer)                   # every kind: the leader it goes to or comes from
    current_leader_epoch = property(lambda m: m.a)        # Fetch, EpochRequest
    fetch_offset = property(lambda m: m.b)                # Fetch
    last_fetched_epoch = property(lambda m: m.c)          # Fetch (truncation on fetch)
    broker_epoch = property(lambda m: m.d)                # Fetch (KIP-903)
    hw = property(lambda m: m.a)                          # FetchResponse
    leader_leo = property(lambda m: m.b)                  # FetchResponse
    diverging_epoch = property(lambda m: m.c)             # FetchResponse (truncation on fetch)
    diverging_end_offset = property(lambda m: m.d)        # FetchResponse (truncation on fetch)
    requested_epoch = property(lambda m: m.b)             # EpochRequest
    epoch = property(lambda m: m.a)                       # EpochResponse
    end_offset = property(lambda m: m.b)                  # EpochResponse


class SStale(NamedTuple):
    """A Fetch its sender abandoned (spec/state.py ``State.stale``), read by the Fetch's field names;
    in the KAFKA-18991 modes also a FetchResponse waiting for an old leader's fetcher thread, in the
    slots of an SMsg (``a`` its HW, ``b`` the leader's LEO, ``start``, ``recs``, ``c d`` its diverging
    epoch) and ``e``, the fetch offset it answers."""
    kind: object        # NO_MESSAGE, FETCH, or (accept_old_epoch_response) FETCH_RESPONSE
    peer: object        # the leader it was sent to (a response: the leader that sent it)
    a: object           # its current leader epoch
    b: object           # its fetch offset
    c: object = 0       # truncate_on_fetch: its last fetched epoch
    d: object = 0       # truncate_on_fetch: its broker epoch
    start: object = 0   # a waiting FetchResponse only (else 0): as SMsg
    recs: tuple = ()    # a waiting FetchResponse only (else empty slots): as SMsg
    e: object = 0       # a waiting FetchResponse only (else 0): the fetch offset of the Fetch it answers

    leader = property(lambda m: m.peer)
    current_leader_epoch = property(lambda m: m.a)
    fetch_offset = property(lambda m: m.b)
    last_fetched_epoch = property(lambda m: m.c)
    broker_epoch = property(lambda m: m.d)


class SHist(NamedTuple):
    produced: object
    acked: tuple
    exposed: tuple
    xlen: object
    crashes: object
    power_failures: object
    # the history variables of Model(cfg, history_variables=True):
    exposed_epoch: tuple = ()   # History.exposed_epoch: L slots, 0 at or past xlen
    epoch_leader: tuple = ()  # History.epoch_leader: one slot per epoch 0..max_epoch
    stale_entry: tuple = ()   # History.stale_entry: one (record, epoch) per follower, (UNDEFINED, UNDEFINED) for none


class SState(NamedTuple):
    reps: tuple
    ctl: SCtl
    msgs: tuple
    stale: tuple
    hist: SHist


ZERO = (0, 0)
