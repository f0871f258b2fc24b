"""The protocol's steps: one function each, guard then effect.

Every action takes the current state, the run's ``Rules`` (config + mode) and replica ids, and
returns the next state, or ``None`` when its guard refuses. Rule citations: seed 000 is the
longest article (HW/LEO update rules, the two failure scenarios, leader epoch), seed 001 the
step table and the OffsetsForLeaderEpoch exchange, seed 003 the broker code (acks,
min.insync.replicas, maybeIncrementLeaderHW, fetcher truncation, ISR expansion). Kafka methods are
cited as ``Class.method @tag`` (sources under core/src/main/scala/kafka/ of apache/kafka); where a
rule differs between releases the action reads the mode (spec/modes.py), which cites each release.

Beside each action sits its z3 twin, ``<action>_terms(enc, s, *replicas) -> (guard, next state)``:
the same rule over the term algebra of checker/symbolic.py's ``Encoding`` (``enc.o``: ``If``/``And``/
``Or``/``Not``/``Sum``/``select``) and its state layout (spec/terms.py), so that one rule is read in
one place; likewise ``<helper>_terms`` beside a helper of a few actions (``_diverging_terms``,
``_registered_terms``, ``_broker_gone_terms``, ...). The twins of the helpers most actions share
are methods of checker/symbolic.py's ``Encoding`` instead, not beside them: ``advance_hw``,
``_with_isr`` (``enc.with_isr``), ``_accepts`` (``enc.accepts``), ``_abandon`` (``enc.abandon``),
``_drop_messages_to``, ``_lost_memory``, ``_stop`` (``enc.stop``), and spec/log.py's log and
epoch-cache functions (``enc.append``, ``enc.truncate``, ``enc.assign``, ``enc.end_offset_for``, ...).
The encoding reaches the actions' twins through ``TERMS``; tests/test_symbolic.py checks that the two
agree on every mode. Nothing here imports z3.
"""

from __future__ import annotations

import operator
from typing import NamedTuple, Optional

from .config import Config
from .log import append, epoch_start, latest_epoch, truncate
from .modes import FETCHING, TRUNCATING, TRUNCATING_AGAIN, Mode, follower_truncation
from .state import (EPOCH_REQUEST, EPOCH_RESPONSE, FETCH, FETCH_RESPONSE, FOLLOWER, LEADER, NO_MESSAGE, NONE,
                    PREFERRED, UNDEFINED, Controller, EpochRequest, EpochResponse, Fetch, FetchResponse, History,
                    Message, Replica, State, build, in_office)
from .terms import ZERO, SCtl, SMsg, SRep, SStale, SState, equal, in_office_terms, ite, tmin


class Rules(NamedTuple):
    cfg: Config
    mode: Mode
    n: int
    history_variables: bool = False    # keep History.exposed_epoch, .epoch_leader, .stale_entry (proofs only)


# ---------------------------------------------------------------- small state updates

# (these helpers run on every step the checker takes: they build a State from its five fields in
# order with spec/state.py's ``build``, which is what ``State(...)`` does, without the interpreted
# ``__new__``; several times faster than NamedTuple._replace)

def _state(replicas, controller, inflight, stale, history) -> State:
    """``State(replicas, controller, inflight, stale, history)``, built positionally."""
    return build(State, (replicas, controller, inflight, stale, history))


def _put(t: tuple, i: int, value) -> tuple:
    """``t`` with entry ``i`` replaced (two allocations, where slicing around it takes five).

    >>> _put((1, 2, 3), 1, 9)
    (1, 9, 3)
    """
    entries = list(t)
    entries[i] = value
    return tuple(entries)


def _set(s: State, r: int, rep: Replica) -> State:
    return _state(_put(s.replicas, r, rep), s.controller, s.inflight, s.stale, s.history)


def _send(s: State, f: int, msg: Message) -> State:
    return _state(s.replicas, s.controller, _put(s.inflight, f, msg), s.stale, s.history)


def _with_controller(s: State, c: Controller) -> State:
    return _state(s.replicas, c, s.inflight, s.stale, s.history)


def _size(mask: int) -> int:
    return bin(mask).count("1")


def _with_isr(c: Controller, rules: Rules, isr: int, unclean_shutdown: int = 0) -> Controller:
    """The controller's partition record with a new ISR. With Eligible Leader Replicas (KIP-966)
    also PartitionChangeBuilder.maybePopulateTargetElr: an ISR of at least min.insync.replicas
    clears the ELR; a smaller one adds the members it loses to the ELR, except brokers that came
    back from an unclean shutdown. An ISR that becomes empty records its last leader as the last
    known leader (maybeUpdateLastKnownLeader, ``last_known_elr``; from 4.1.1 ``_broker_gone`` records
    it instead: ``last_known_leader_when_leaderless``)."""
    if not rules.mode.elr:
        return c._replace(isr=isr)
    if _size(isr) >= rules.cfg.min_isr:
        elr = 0
    else:
        elr = (c.elr | c.isr) & ~isr & ~unclean_shutdown
    known = c.last_known_elr
    if not isr and c.isr and c.leader != UNDEFINED and not rules.mode.last_known_leader_when_leaderless:
        known = 1 << c.leader
    return c._replace(isr=isr, elr=elr, last_known_elr=known)


def _lost_memory(rep: Replica, leader_epoch: int = UNDEFINED) -> Replica:
    """What a stop leaves: log, HW checkpoint, epoch cache and meta.properties on disk; nothing in
    memory (``leader_epoch``: what ``_stop`` keeps of it). Every field in ``Replica``'s order, built
    positionally (a stop is on the hot path of every fault):

    >>> r = Replica(1, LEADER, 2, 0, 3, ((0, 2),), 1, 1, ((2, 0),), 0, (-1, 1), clean_shutdown=1, new_directory=1)
    >>> _lost_memory(r, 2) == Replica(alive=0, role=NONE, leader_epoch=2, leader=UNDEFINED, isr=0, log=r.log,
    ...     hw=r.hw, flushed=r.flushed, epoch_cache=r.epoch_cache, truncating=0, remote_leo=(), clean_shutdown=1,
    ...     new_directory=1)
    True
    """
    return build(Replica, (0, NONE, leader_epoch, UNDEFINED, 0, rep.log, rep.hw, rep.flushed, rep.epoch_cache, 0, (),
                           (), rep.clean_shutdown, 0, (), 0, UNDEFINED, rep.new_directory))


def _abandon(s: State, f: int) -> State:
    """f's fetcher forgets its outstanding message (f stopped, or restarted its fetcher on a
    LeaderAndIsr). A Fetch already sent is still handled by its leader: it becomes f's stale
    request (at most one is kept; a second is lost). A response, or an OffsetsForLeaderEpoch
    request (whose handling changes nothing at the leader), is simply dropped
    (AbstractFetcherThread.processFetchRequest ignores a response for a fetch state it no longer has)."""
    msg = s.inflight[f]
    if not msg:
        return s
    stale = s.stale
    if msg.kind == FETCH and not stale[f]:
        stale = _put(stale, f, msg)
    return _state(s.replicas, s.controller, _put(s.inflight, f, ()), stale, s.history)


def _leave_fetcher(s: State, rules: Rules, f: int) -> State:
    """f's fetcher lets go of its leader (a LeaderAndIsr made f leader, or made it follow another
    leader, or the same one at a new epoch): ``_abandon``. Before KAFKA-18991's fix a response already
    on its way is not lost with it: it is owed to the fetcher thread of the old leader, which the
    broker's other partitions keep running, and that thread handles it if f's partition is back on
    it with the same fetch offset when it arrives (``follower_handle_old_response``). The model keeps
    one such response, in f's stale slot (when free), with that fetch offset: f's LEO, which only
    f's fetcher moves while its Fetch is out."""
    msg, rep = s.inflight[f], s.replicas[f]
    if rep.leader_fenced:          # that thread was shut down when f applied the fence (_fence_fetchers)
        return _abandon(_set(s, f, rep._replace(leader_fenced=0)), f)
    if not (rules.mode.accept_old_epoch_response and msg and msg.kind == FETCH_RESPONSE and not s.stale[f]):
        return _abandon(s, f)
    waiting = msg._replace(fetch_offset=s.replicas[f].leo)
    return _state(s.replicas, s.controller, _put(s.inflight, f, ()), _put(s.stale, f, waiting), s.history)


def _leave_fetcher_terms(enc, s: SState, f: int) -> SState:
    """The z3 twin of ``_leave_fetcher``: a FetchResponse in flight waits in the stale slot (when free)
    with f's LEO as its fetch offset, in the modes with ``accept_old_epoch_response``."""
    if not enc.parks:
        return enc.abandon(s, f)
    o, m, old, rep = enc.o, s.msgs[f], s.stale[f], s.reps[f]
    waiting = SStale(FETCH_RESPONSE, m.peer, m.a, m.b, m.c, m.d, m.start, m.recs, rep.leo)
    waits = o.And(m.kind == FETCH_RESPONSE, old.kind == NO_MESSAGE, o.Not(rep.leader_fenced))
    s = enc.set_replica(s, f, rep._replace(leader_fenced=False)) if enc.fences else s
    return ite(o, waits, enc.send(enc.set_stale(s, f, waiting), f, enc.no_message()), enc.abandon(s, f))


def _fence_fetchers(s: State, rules: Rules, r: int) -> State:
    """KRaft: the controller fenced r, so r leads no partition any more (``generateLeaderAndIsrUpdates
    @3.9.0`` never accepts the broker it removes as leader). When a broker applies that change its
    fetcher thread towards r has no partition left and is shut down (``ReplicaManager.applyDelta`` ->
    ``shutdownIdleFetcherThreads @3.9.0``), with the answer it waited for: an answer of r's waiting for
    r's thread (KAFKA-18991) is lost now, and a follower that still fetches from r (it has not applied
    the fence yet) is marked ``leader_fenced``, so that what it has out with r is lost, not kept, when
    it leaves r. ZooKeeper keeps a leaderless partition on the thread (``ReplicaManager.makeFollowers
    @2.8.0`` skips a partition whose leader is not alive), so the other partitions of the model's
    assumption keep the thread running there."""
    if not (rules.mode.accept_old_epoch_response and rules.mode.fence_stops_fetchers):
        return s
    stale = tuple(() if (m and m.kind == FETCH_RESPONSE and m.leader == r) else m for m in s.stale)
    replicas = tuple(rep._replace(leader_fenced=1) if (f != r and rep.alive and rep.role == FOLLOWER
                                                        and rep.leader == r) else rep
                     for f, rep in enumerate(s.replicas))
    return _state(replicas, s.controller, s.inflight, stale, s.history)


def _fence_fetchers_terms(enc, s: SState, r: int) -> SState:
    """The z3 twin of ``_fence_fetchers``."""
    if not enc.fences:
        return s
    o = enc.o
    stale = tuple(ite(o, o.And(m.kind == FETCH_RESPONSE, m.peer == r), enc.no_stale(), m) for m in s.stale)
    reps = tuple(rep if f == r else
                 rep._replace(leader_fenced=o.Or(rep.leader_fenced, o.And(rep.alive, rep.role == FOLLOWER,
                                                                          rep.leader == r)))
                 for f, rep in enumerate(s.reps))
    return s._replace(reps=reps, stale=stale)


def _drop_messages_to(s: State, r: int) -> State:
    """Messages to or from a broker that stops are lost: requests waiting at it, responses it
    sent, a response its fetchers still waited for; its own outstanding Fetch outlives it
    (``_abandon``)."""
    inflight = tuple(() if (m and m.leader == r) else m for m in s.inflight)
    stale = tuple(() if (m and (m.leader == r or (f == r and m.kind == FETCH_RESPONSE))) else m
                  for f, m in enumerate(s.stale))
    return _abandon(_state(s.replicas, s.controller, inflight, stale, s.history), r)


def advance_hw(s: State, l: int, rules: Rules) -> State:
    """maybeIncrementLeaderHW: leader HW = max(HW, min LEO over its ISR view), using the remote
    LEOs it learned from fetches (seed 000 §四, seed 001: max[Leader HW, min(All LEO)]). The min also
    takes every follower outside the ISR that caught up within replica.lag.time.max.ms
    (``remote_caught_up``: ``curTime - lastCaughtUpTimeMs <= replicaLagTimeMaxMs``,
    Partition.maybeIncrementLeaderHW @0.10.2.1, @2.8.1 over the maximal ISR); from 3.6 only one the
    leader would add to the ISR (``shouldWaitForReplicaToJoinIsr``, ``_isr_eligible``).

    History: offsets newly below a leader's HW are what a consumer can read; with acks=all a
    record this leader appended since it took office (``leading_since``: being named again at the
    next epoch keeps the request waiting) is acknowledged once the HW passes it and the ISR still has
    min.insync.replicas members (DelayedProduce.tryComplete -> Partition.checkEnoughReplicasReachOffset
    @0.11.0.3, @4.1.1: the HW and the ISR's size, no epoch)."""
    rep = s.replicas[l]
    if rules.mode.strict_min_isr and _size(rep.isr) < rules.cfg.min_isr:
        return s
    low = rep.leo
    waits = rep.isr
    if rep.remote_caught_up:
        waits |= _caught_up_waiting(s, rules, l)
    for f in range(rules.n):
        if f != l and waits >> f & 1:
            low = min(low, rep.remote_leo[f])
    if low <= rep.hw:
        return s
    h = s.history
    exposed = h.exposed + tuple(rep.log[o][0] for o in range(len(h.exposed), low))
    exposed_epoch = h.exposed_epoch
    if rules.history_variables:
        exposed_epoch += (rep.leader_epoch,) * (len(exposed) - len(h.exposed))
    acked = h.acked
    if rules.cfg.acks == "all" and _size(rep.isr) >= rules.cfg.min_isr:
        acked = list(acked)
        for o in range(rep.hw, low):
            record, epoch = rep.log[o]
            if epoch >= rep.leading_since and acked[record] == UNDEFINED:
                acked[record] = o
        acked = tuple(acked)
    s = _set(s, l, rep._replace(hw=low))
    return s._replace(history=h._replace(exposed=exposed, acked=acked, exposed_epoch=exposed_epoch))


def _caught_up_waiting(s: State, rules: Rules, l: int) -> int:
    """The followers outside l's ISR view its HW waits for: caught up within the lag window and, from
    3.6, ISR-eligible (Partition.maybeIncrementLeaderHW, ``shouldWaitForReplicaToJoinIsr`` @3.6.0)."""
    caught = s.replicas[l].remote_caught_up
    if not rules.mode.caught_up_needs_eligible:
        return caught
    return sum(1 << f for f in range(rules.n) if caught >> f & 1 and _isr_eligible(s, rules, l, f))


def _caught_up_waiting_terms(enc, s: SState, l: int):
    """The z3 twin of ``_caught_up_waiting``: n booleans."""
    caught = s.reps[l].remote_caught_up
    if not enc.mode.caught_up_needs_eligible:
        return caught
    return tuple(enc.o.And(b, _isr_eligible_terms(enc, s, l, f)) for f, b in enumerate(caught))


def _isr_eligible(s: State, rules: Rules, l: int, f: int) -> bool:
    """Whether the leader l would add f to the ISR as far as f's broker goes (Partition
    .isReplicaIsrEligible @3.3.0, @3.9.0): live in the metadata (KIP-841: ZooKeeper registered,
    KRaft unfenced), and from KIP-903 the broker epoch f's last Fetch carried is the registered one."""
    c = s.controller
    if rules.mode.isr_only_live and not c.live >> f & 1:
        return False
    return not (rules.mode.broker_epochs and s.replicas[l].remote_broker_epoch[f] != c.broker_epochs[f])


def _isr_eligible_terms(enc, s: SState, l: int, f: int):
    """The z3 twin of ``_isr_eligible``."""
    o, ok = enc.o, True
    if enc.mode.isr_only_live:
        ok = o.And(ok, s.ctl.live[f])
    if enc.mode.broker_epochs:
        ok = o.And(ok, s.reps[l].remote_broker_epoch[f] == s.ctl.broker_epochs[f])
    return ok


def lag_expires(s: State, rules: Rules, l: int, f: int) -> Optional[State]:
    """replica.lag.time.max.ms passes for a follower outside the leader's ISR view: first since it
    last caught up (``remote_caught_up``: the HW no longer waits for it), then since its last Fetch
    (``remote_fetch_leo``: its next Fetch can no longer count as caught up at the time of that one).
    Kafka reads the clock in the fetch handler and maybeIncrementLeaderHW (Replica.isCaughtUp,
    updateFetchStateOrThrow @3.9.0); nothing recomputes the HW when a window closes: the next
    produce or Fetch does. The model has no clock: the window may close after any step."""
    rep = s.replicas[l]
    if not (f != l and rep.alive and rep.role == LEADER and not rep.isr >> f & 1):
        return None
    if rep.remote_caught_up >> f & 1:
        return _set(s, l, rep._replace(remote_caught_up=rep.remote_caught_up & ~(1 << f)))
    if rep.remote_fetch_leo[f] == UNDEFINED:
        return None
    fetch_leo = rep.remote_fetch_leo
    return _set(s, l, rep._replace(remote_fetch_leo=_put(fetch_leo, f, UNDEFINED)))


def lag_expires_terms(enc, s, l, f):
    """The z3 twin of ``lag_expires``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o, rep = enc.o, s.reps[l]
    caught = rep.remote_caught_up[f]
    guard = o.And(rep.alive, rep.role == LEADER, o.Not(rep.isr[f]), o.Or(caught, rep.remote_fetch_leo[f] != UNDEFINED))
    lapsed = rep._replace(remote_caught_up=enc.bit(rep.remote_caught_up, f, False))
    forgotten = rep._replace(remote_fetch_leo=tuple(UNDEFINED if x == f else v
                                                    for x, v in enumerate(rep.remote_fetch_leo)))
    return guard, enc.set_replica(s, l, ite(o, caught, lapsed, forgotten))


NO_ENTRY = (UNDEFINED, UNDEFINED)


def dated(action):
    """The action, keeping two history variables (proofs only), each recorded here, in one place,
    for every step:

    - ``epoch_leader``: when a step hands out a new leader epoch (an election; before KRaft 3.6
      also an ISR removal, which keeps the leader), the replica the controller named with it;
    - ``stale_entry``: when a follower's Fetch becomes stale (its fetcher abandoned it while it was
      out), the entry its log held just below the Fetch's offset. Its log is the one the Fetch was
      sent from: a follower's log does not change while its Fetch is out (FetchMatchesLog)."""
    def step(s: State, rules: Rules, *args) -> Optional[State]:
        nxt = action(s, rules, *args)
        if nxt is None:
            return nxt
        h = nxt.history
        if nxt.controller.epoch != s.controller.epoch:
            c = nxt.controller
            h = h._replace(epoch_leader=h.epoch_leader[:c.epoch] + (c.leader,) + h.epoch_leader[c.epoch + 1:])
        if nxt.stale != s.stale:
            h = h._replace(stale_entry=tuple(_stale_entry(s, nxt, f) for f in range(rules.n)))
        return nxt._replace(history=h)
    step.__name__, step.__doc__ = action.__name__, action.__doc__
    return step


def _stale_entry(s: State, nxt: State, f: int):
    m = nxt.stale[f]
    if not m or m.kind != FETCH:       # (a response waiting for an old leader's fetcher dates nothing)
        return NO_ENTRY
    if s.stale[f]:                       # the same stale Fetch (a second one is lost: _abandon)
        return s.history.stale_entry[f]
    offset = m.fetch_offset
    return s.replicas[f].log[offset - 1] if offset > 0 else NO_ENTRY


# ---------------------------------------------------------------- client and replication

def produce(s: State, rules: Rules, r: int) -> Optional[State]:
    """A producer appends one record to a replica that believes it leads (possibly stale).
    acks=all is refused while the leader's ISR is below min.insync.replicas
    (NotEnoughReplicasException, seed 003); acks=1 is acknowledged at once."""
    rep, cfg = s.replicas[r], rules.cfg
    if not (rep.alive and rep.role == LEADER and s.history.produced < cfg.records):
        return None
    if cfg.acks == "all" and _size(rep.isr) < cfg.min_isr:
        return None
    record, offset = s.history.produced, rep.leo
    # the append assigns the epoch to the cache (Log.append): before KAFKA-7415 this is where a
    # leader's epoch gains its entry (its first write in the epoch)
    rep = append(rep, ((record, rep.leader_epoch),), rules.mode.assign)
    h = s.history
    acked = h.acked if cfg.acks == "all" else h.acked[:record] + (offset,) + h.acked[record + 1:]
    s = _set(s, r, rep)._replace(history=h._replace(produced=record + 1, acked=acked))
    return advance_hw(s, r, rules)  # the leader tries to move its HW on every append


def produce_terms(enc, s, r):
    """The z3 twin of ``produce``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o, rep, cfg = enc.o, s.reps[r], enc.cfg
    h = s.hist
    guard = o.And(rep.alive, rep.role == LEADER, h.produced < cfg.records)
    if cfg.acks == "all":
        guard = o.And(guard, o.Sum(rep.isr) >= cfg.min_isr)
    new = enc.append(rep, ((h.produced, rep.leader_epoch),), 1)
    acked = h.acked if cfg.acks == "all" else \
        tuple(o.If(h.produced == j, rep.leo, a) for j, a in enumerate(h.acked))
    s = enc.set_replica(s, r, new)._replace(hist=h._replace(produced=h.produced + 1, acked=acked))
    return guard, enc.advance_hw(s, r)


def send_fetch(s: State, rules: Rules, f: int) -> Optional[State]:
    """A fetching follower asks its leader for records from its LEO (the fetch offset tells the
    leader the follower's LEO, seed 000 §一.2); the request carries its leader epoch."""
    rep = s.replicas[f]
    if not (rep.alive and rep.role == FOLLOWER and not rep.truncating and not s.inflight[f]
            and s.replicas[rep.leader].alive):
        return None
    waiting = s.stale[f]
    if waiting and waiting.kind == FETCH_RESPONSE and waiting.leader == rep.leader:
        return None          # that leader's fetcher thread still waits for its old response
    if not rules.mode.truncate_on_fetch:
        return _send(s, f, Fetch(FETCH, rep.leader, rep.leader_epoch, rep.leo))
    # 2.8+ (KAFKA-10554): the Fetch also carries the epoch of the follower's last fetched batch, the
    # latest epoch in its cache (ReplicaFetcherThread.buildFetch, PartitionFetchState.lastFetchedEpoch
    # @2.8.0), and from 3.5 its broker epoch (KIP-903: FetchRequest ReplicaState.ReplicaEpoch)
    broker_epoch = s.controller.broker_epochs[f] if rules.mode.broker_epochs else 0
    return _send(s, f, Fetch(FETCH, rep.leader, rep.leader_epoch, rep.leo, latest_epoch(rep.epoch_cache), broker_epoch))


def send_fetch_terms(enc, s, f):
    """The z3 twin of ``send_fetch``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o, rep = enc.o, s.reps[f]
    guard = o.And(rep.alive, rep.role == FOLLOWER, rep.truncating == FETCHING, s.msgs[f].kind == NO_MESSAGE,
                  enc.leader_alive(s, rep))
    if enc.parks:            # actions.send_fetch: that leader's fetcher thread still waits for its old response
        guard = o.And(guard, o.Not(o.And(s.stale[f].kind == FETCH_RESPONSE, s.stale[f].peer == rep.leader)))
    # truncation on fetch: the last fetched epoch and (KIP-903) the broker epoch (actions.send_fetch)
    cd = () if not enc.tof else \
        (enc.latest_epoch(rep), s.ctl.broker_epochs[f] if enc.mode.broker_epochs else 0)
    return guard, enc.send(s, f, SMsg(FETCH, rep.leader, rep.leader_epoch, rep.leo, 0, (ZERO,) * enc.L, *cd))


def _accepts(rules: Rules, leader: Replica, request_epoch: int) -> bool:
    """A replica answers a replication request only as leader; with KIP-320 fencing only when
    the request's current leader epoch equals its own (else FENCED/UNKNOWN_LEADER_EPOCH)."""
    if not (leader.alive and leader.role == LEADER):
        return False
    return not rules.mode.fenced or request_epoch == leader.leader_epoch


def _diverging(rules: Rules, leader: Replica, msg: Fetch) -> tuple:
    """Truncation on fetch (KAFKA-10554, Partition.readRecords @2.8.0): the leader looks up the
    Fetch's last fetched epoch in its own cache (endOffsetFor); when its largest epoch <= it is a
    lower epoch, or that epoch ends before the fetch offset, the follower's log has diverged and the
    answer is that (epoch, end offset), with no records. ``()`` when the logs agree (or the Fetch
    names no epoch: an empty log)."""
    if not rules.mode.truncate_on_fetch or msg.last_fetched_epoch == UNDEFINED:
        return ()
    epoch, end = rules.mode.end_offset_for(leader.epoch_cache, leader.leo, msg.last_fetched_epoch)
    if epoch == UNDEFINED or end == UNDEFINED:
        return OUT_OF_RANGE                       # readRecords throws OffsetOutOfRangeException
    if epoch < msg.last_fetched_epoch or end < msg.fetch_offset:
        return (epoch, end)
    return ()


def _diverging_terms(enc, leader: SRep, m):
    """The z3 twin of ``_diverging``: (out of range, diverging, epoch, end) for a Fetch ``m`` (with truncation
    on fetch the leader looks its last fetched epoch up with endOffsetFor)."""
    o = enc.o
    if not enc.tof:
        return False, False, UNDEFINED, UNDEFINED
    epoch, end = enc.end_offset_for(leader.epoch_cache, leader.clen, leader.leo, m.c)
    lookup = m.c != UNDEFINED
    out_of_range = o.And(lookup, o.Or(epoch == UNDEFINED, end == UNDEFINED))
    diverging = o.And(lookup, o.Not(out_of_range), o.Or(epoch < m.c, end < m.b))
    return out_of_range, diverging, epoch, end


OUT_OF_RANGE = (UNDEFINED,)


def _read_for_follower(s: State, rules: Rules, l: int, f: int, msg: Fetch):
    """What the leader does with f's Fetch (Partition.updateReplicaLogReadResult: maybeExpandIsr,
    maybeIncrementLeaderHW): the fetch offset becomes f's remote LEO, f may join the ISR
    (``_maybe_expand_isr``) and the HW may move; returns the state and the FetchResponse. An
    offset beyond the leader's LEO gets OFFSET_OUT_OF_RANGE and moves nothing.
    ``response_hw=before`` replies with the HW from before the update (seed 000 comments 5-17);
    ``kafka`` does so only when the reply carries records: Kafka reads the records and the HW
    together before the Fetch updates the follower's state and the HW (``initialHighWatermark``,
    Partition.readRecords @3.9.0, @4.1.1; ReplicaManager.readFromLocalLog @0.10.2.1, then
    updateFollowerLogReadResults), while a read with no records waits in purgatory and is read again
    (DelayedFetch), after the update.
    With truncation on fetch a diverging Fetch is answered with the diverging epoch and no records
    (a lookup without answer: OFFSET_OUT_OF_RANGE), and leaves f's fetch state alone (KAFKA-13141,
    fixed in 2.7.2/2.8.1/3.0.0: ReplicaManager.updateFollowerFetchState skips a read result with a
    diverging epoch), so no expansion either; before the fix its offset became f's LEO all the same
    (``diverging_fetch_updates_follower``). From 3.5 the Fetch's broker epoch is kept beside the LEO
    (KIP-903, Partition.updateFollowerFetchState). The same update keeps f's caught-up time
    (Replica.updateLogReadResult @0.10.2.1, updateFetchStateOrThrow @3.9.0): a Fetch at or past the
    leader's LEO catches f up now, one at or past the LEO the leader had at f's previous (recent)
    Fetch catches it up as of then (``remote_caught_up``), and the LEO now is kept for the next.
    The HW is recomputed on every Fetch until 2.3, from 2.4 only on one that moved f's LEO
    (``hw_after_follower_leo_change``, Partition.updateFollowerFetchState @2.4.1)."""
    leader, mode = s.replicas[l], rules.mode
    offset = msg.fetch_offset
    diverging = _diverging(rules, leader, msg)        # checked before the read (readRecords @2.8.0)
    if diverging == OUT_OF_RANGE or (offset > leader.leo and not diverging):
        return s, _response(l, (), leader.hw, leader.leo, ())
    hw_before = leader.hw
    if not diverging or mode.diverging_fetch_updates_follower:
        moved = offset != leader.remote_leo[f]
        remote = _put(leader.remote_leo, f, offset)
        fetch_leo = leader.remote_fetch_leo
        caught_up = leader.remote_caught_up
        if not leader.isr >> f & 1 and (offset >= leader.leo or UNDEFINED != fetch_leo[f] <= offset):
            caught_up |= 1 << f
        leader = leader._replace(remote_leo=remote, remote_caught_up=caught_up,
                                 remote_fetch_leo=_put(fetch_leo, f, leader.leo))
        if mode.broker_epochs:
            epochs = leader.remote_broker_epoch
            leader = leader._replace(remote_broker_epoch=_put(epochs, f, msg.broker_epoch))
        s = _maybe_expand_isr(_set(s, l, leader), rules, l, f)
        if moved or not mode.hw_after_follower_leo_change:     # 2.4+: only when f's LEO moved
            s = advance_hw(s, l, rules)
        leader = s.replicas[l]
    records = () if diverging else leader.log[offset:]
    before = rules.cfg.response_hw == "before" or (rules.cfg.response_hw == "kafka" and records)
    hw = hw_before if before else leader.hw
    return s, _response(l, records, hw, leader.leo, diverging)


def _read_for_follower_terms(enc, s: SState, l: int, f: int, m):
    """The z3 twin of ``_read_for_follower``: (state, FetchResponse) for the Fetch ``m`` (SMsg or SStale)."""
    o, leader, mode = enc.o, s.reps[l], enc.mode
    offset = m.b
    out_of_range, diverging, epoch, end = _diverging_terms(enc, leader, m)
    refused = o.Or(out_of_range, o.And(offset > leader.leo, o.Not(diverging)))
    no_cd = (UNDEFINED, UNDEFINED) if enc.tof else ()
    remote = tuple(offset if x == f else v for x, v in enumerate(leader.remote_leo))
    rbe = tuple(m.d if x == f else v for x, v in enumerate(leader.remote_broker_epoch))   # empty without broker epochs
    fetch_leo = leader.remote_fetch_leo
    caught = o.And(o.Not(leader.isr[f]),
                   o.Or(offset >= leader.leo, o.And(fetch_leo[f] != UNDEFINED, offset >= fetch_leo[f])))
    caught_up = tuple(o.Or(v, caught) if x == f else v for x, v in enumerate(leader.remote_caught_up))
    fetch_leo = tuple(leader.leo if x == f else v for x, v in enumerate(fetch_leo))
    t = enc.set_replica(s, l, leader._replace(remote_leo=remote, remote_broker_epoch=rbe, remote_caught_up=caught_up,
                                              remote_fetch_leo=fetch_leo))
    t = _maybe_expand_isr_terms(enc, t, l, f)
    if enc.mode.hw_after_follower_leo_change:      # actions._read_for_follower, 2.4+: only when f's LEO moved
        t = ite(o, offset != leader.remote_leo[f], enc.advance_hw(t, l), t)
    else:
        t = enc.advance_hw(t, l)
    if not mode.diverging_fetch_updates_follower:
        # actions._read_for_follower, KAFKA-13141's fix: a diverging Fetch leaves f's fetch state alone
        t = ite(o, diverging, s, t)
    if enc.cfg.response_hw == "kafka":      # actions._read_for_follower: before when records go back
        hw = o.If(o.And(offset < leader.leo, o.Not(diverging)), leader.hw, t.reps[l].hw)
    else:
        hw = leader.hw if enc.cfg.response_hw == "before" else t.reps[l].hw
    recs = tuple(ite(o, o.And(j >= offset, o.Not(diverging)), e, ZERO) for j, e in enumerate(leader.log))
    cd = (o.If(diverging, epoch, UNDEFINED), o.If(diverging, end, UNDEFINED)) if enc.tof else ()
    answer = SMsg(FETCH_RESPONSE, l, hw, leader.leo, o.If(diverging, leader.leo, offset), recs, *cd)
    out_of_range_answer = SMsg(FETCH_RESPONSE, l, leader.hw, leader.leo, leader.leo, (ZERO,) * enc.L, *no_cd)
    return ite(o, refused, s, t), ite(o, refused, out_of_range_answer, answer)


def _response(l: int, records: tuple, hw: int, leader_leo: int, diverging: tuple) -> FetchResponse:
    if not diverging:
        return FetchResponse(FETCH_RESPONSE, l, records, hw, leader_leo)
    return FetchResponse(FETCH_RESPONSE, l, records, hw, leader_leo, *diverging)


def leader_handle_fetch(s: State, rules: Rules, l: int, f: int) -> Optional[State]:
    """The leader handles f's Fetch and replies with the records from the fetch offset and its HW
    (seed 000 steps 1-4)."""
    msg = s.inflight[f]
    if not (msg and msg.kind == FETCH and msg.leader == l
            and _accepts(rules, s.replicas[l], msg.current_leader_epoch)):
        return None
    s, response = _read_for_follower(s, rules, l, f, msg)
    return _send(s, f, response)


def leader_handle_fetch_terms(enc, s, l, f):
    """The z3 twin of ``leader_handle_fetch``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o, m = enc.o, s.msgs[f]
    guard = o.And(m.kind == FETCH, m.peer == l, enc.accepts(s.reps[l], m.a))
    t, response = _read_for_follower_terms(enc, s, l, f, m)
    return guard, enc.send(t, f, response)


def leader_handle_stale_fetch(s: State, rules: Rules, l: int, f: int) -> Optional[State]:
    """A Fetch that f sent before it stopped or restarted its fetcher reaches the leader anyway: the
    leader cannot tell (a fetch carries no broker epoch before KIP-903; KIP-320 fences only another
    leader epoch) and handles it as any fetch; the response goes nowhere (the connection is gone, or
    f's fetcher ignores it). A request the leader refuses just disappears."""
    msg = s.stale[f]
    if not (msg and msg.kind == FETCH and msg.leader == l):
        return None
    s = _state(s.replicas, s.controller, s.inflight, _put(s.stale, f, ()), s.history)
    if _accepts(rules, s.replicas[l], msg.current_leader_epoch):
        s, _ = _read_for_follower(s, rules, l, f, msg)
    return s


def leader_handle_stale_fetch_terms(enc, s, l, f):
    """The z3 twin of ``leader_handle_stale_fetch``: (guard, next state) over the encoding's terms
    (checker/symbolic.py)."""
    o, m = enc.o, s.stale[f]
    guard = o.And(m.kind == FETCH, m.peer == l)
    t = enc.set_stale(s, f, enc.no_stale())
    read, _ = _read_for_follower_terms(enc, t, l, f, m)
    return guard, ite(o, enc.accepts(t.reps[l], m.a), read, t)


def follower_handle_fetch(s: State, rules: Rules, f: int) -> Optional[State]:
    """The follower appends the records at its LEO, then sets HW = min(LEO, the response's HW)
    (seed 000 §二; seed 001 min(Follower LEO, Leader HW)). A follower beyond the leader's LEO
    (offset out of range) first truncates to the leader's LEO
    (ReplicaFetcherThread.handleOffsetOutOfRange), except where unclean election is off before 2.1:
    there it stops its broker (``_exit_on_out_of_range``)."""
    msg = s.inflight[f]
    if not (msg and msg.kind == FETCH_RESPONSE):
        return None
    rep, mode = s.replicas[f], rules.mode
    if msg.diverging_epoch != UNDEFINED:
        return _truncate_on_fetch_response(s, rules, f, msg)
    if exits_on_out_of_range(s, rules, f):
        return _exit_on_out_of_range(s, rules, f)
    if msg.leader_leo < rep.leo:
        rep = truncate(rep, msg.leader_leo, mode.trim_cache_at_leo)
    rep = append(rep, msg.records, mode.assign)
    return _send(_follower_hw(s, rules, f, rep, msg.hw), f, ())


def follower_handle_fetch_terms(enc, s, f):
    """The z3 twin of ``follower_handle_fetch``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o, m, rep = enc.o, s.msgs[f], s.reps[f]
    guard = m.kind == FETCH_RESPONSE
    new = ite(o, m.b < rep.leo, enc.truncate(rep, m.b, enc.mode.trim_cache_at_leo), rep)
    entries = [o.select(m.recs, m.start + i) for i in range(enc.L)]
    new = enc.append(new, entries, m.b - m.start)
    new = new._replace(hw=tmin(o, new.leo, m.a))
    t = enc.send(enc.set_replica(s, f, new), f, enc.no_message())
    if enc.mode.exit_on_out_of_range and not enc.cfg.unclean_election:
        exits = m.b < rep.leo            # actions._exit_on_out_of_range: the broker stops instead
        ok, gone = _exit_on_out_of_range_terms(enc, s, f)
        guard = o.And(guard, o.Or(o.Not(exits), ok))
        t = ite(o, exits, gone, t)
    if enc.tof:                      # actions.follower_handle_fetch: a diverging answer truncates
        t = ite(o, m.c != UNDEFINED, _truncate_on_fetch_response_terms(enc, s, f), t)
    return guard, t


def follower_handle_old_response(s: State, rules: Rules, f: int) -> Optional[State]:
    """KAFKA-18991 (2.8.0 to 3.9.0, and 4.0.0): the response an old leader's fetcher thread waited
    for arrives (``_leave_fetcher``). ``AbstractFetcherThread.processFetchRequest @3.9.0`` handles it
    when f's partition is on that thread again (f follows that leader and fetches) at the same fetch
    offset, whatever leader epoch it was answered at: records, HW and diverging epoch of the old
    epoch land in the new one. Otherwise the thread finds no such fetch state and ignores it. From
    the fix (3.9.1, 4.0.1) the leader epoch must match too, and it has moved: no response is kept."""
    msg = s.stale[f]
    if not (msg and msg.kind == FETCH_RESPONSE):
        return None
    rep = s.replicas[f]
    s = _state(s.replicas, s.controller, s.inflight, _put(s.stale, f, ()), s.history)
    if not (rep.role == FOLLOWER and rep.leader == msg.leader and rep.truncating == FETCHING
            and rep.leo == msg.fetch_offset and rep.epoch_cache and not s.inflight[f]):
        return s
    return follower_handle_fetch(_send(s, f, msg._replace(fetch_offset=UNDEFINED)), rules, f)


def follower_handle_old_response_terms(enc, s, f):
    """The z3 twin of ``follower_handle_old_response``: (guard, next state) over the encoding's terms
    (checker/symbolic.py)."""
    if not enc.parks:
        return False, s
    o, m, rep = enc.o, s.stale[f], s.reps[f]
    cleared = enc.set_stale(s, f, enc.no_stale())
    matches = o.And(rep.role == FOLLOWER, rep.leader == m.peer, rep.truncating == FETCHING, rep.leo == m.e,
                    rep.clen > 0, s.msgs[f].kind == NO_MESSAGE)
    handed = enc.send(cleared, f, SMsg(FETCH_RESPONSE, m.peer, m.a, m.b, m.start, m.recs, m.c, m.d))
    handles, t = follower_handle_fetch_terms(enc, handed, f)
    return o.And(m.kind == FETCH_RESPONSE, o.Or(o.Not(matches), handles)), ite(o, matches, t, cleared)


def exits_on_out_of_range(s: State, rules: Rules, f: int) -> bool:
    """Whether the Fetch answer waiting for ``f`` stops its broker when f handles it: an answer
    without a diverging epoch from a leader whose LEO is below f's, where the mode exits instead of
    truncating (``_exit_on_out_of_range``). Read by ``follower_handle_fetch``, and by whoever looks
    for a trace that takes the exit (docs/results.md).

    >>> from hwcheck.spec import Config, Model
    >>> m = Model(Config(mode="hw"))
    >>> exits_on_out_of_range(m.init_states()[0], m.rules, 1)
    False
    """
    msg, rep = s.inflight[f], s.replicas[f]
    return (bool(msg) and msg.kind == FETCH_RESPONSE and msg.diverging_epoch == UNDEFINED
            and msg.leader_leo < rep.leo and rules.mode.exit_on_out_of_range and not rules.cfg.unclean_election)


def _exit_on_out_of_range(s: State, rules: Rules, f: int) -> Optional[State]:
    """Before 2.1, with unclean election off, a follower that finds its leader's LEO below its own
    refuses to truncate and stops its broker: "Exiting because log truncation is not allowed"
    (``ReplicaFetcherThread.handleOffsetOutOfRange``: ``System.exit(1)`` @0.10.2.1, ``throw new
    FatalExitError`` @0.11.0.3 and @2.0.0, which ``ShutdownableThread.run`` turns into
    ``Exit.exit``). The exit runs the shutdown hook, ``KafkaServer.shutdown``, whose controlled
    shutdown takes the broker out of the ISR: the model's clean shutdown, the protocol's own step
    rather than a fault of the budget. (At 0.10.2.1 the hook then deadlocks on the fetcher thread
    that called exit, KAFKA-4039, and the process hangs holding its ZooKeeper session until an
    operator kills it; the model lets it be gone.) 2.1 truncates instead (KAFKA-7414:
    ``AbstractFetcherThread.fetchOffsetAndTruncate`` @2.1.1)."""
    return _shutdown_cleanly(_send(s, f, ()), rules, f)


def _exit_on_out_of_range_terms(enc, s: SState, f: int):
    """The z3 twin of ``_exit_on_out_of_range``: (the epoch bound holds, next state)."""
    return _shutdown_cleanly_terms(enc, enc.send(s, f, enc.no_message()), f)


def _follower_hw(s: State, rules: Rules, f: int, rep: Replica, hw: int) -> State:
    """The follower takes HW = min(LEO, the response's HW) (seed 000 §二). With reads from followers
    (KIP-392, 2.4+) a consumer can read below it; nothing new is exposed by it, since every HW a
    response carries was a leader's, whose rise exposed those offsets already (what follower reads
    add is the check of the follower's log against them: invariants.py)."""
    return _set(s, f, rep._replace(hw=min(rep.leo, hw)))


def _truncate_on_fetch_response(s: State, rules: Rules, f: int, msg: FetchResponse) -> State:
    """A response with a diverging epoch: the follower truncates where its release's
    getOffsetTruncationState says (the OffsetsForLeaderEpoch rule, answer = the diverging epoch and
    end offset; AbstractFetcherThread.truncateOnFetchResponse @2.8.0) and goes on fetching, its next
    Fetch naming its new latest epoch (an incomplete truncation continues that way). Before 3.4.1/3.5.0
    (KAFKA-14704) the response's HW is applied first (processPartitionData, then the truncation):
    the follower takes HW = min(LEO, HW) over its divergent tail, a step of its own here, so a
    reader of the follower can see it. From the fix a diverging response only truncates; the next
    fetch brings the HW."""
    rep, mode = s.replicas[f], rules.mode
    if mode.hw_before_truncation and msg.hw != UNDEFINED:
        s = _follower_hw(s, rules, f, rep, msg.hw)
        return _send(s, f, msg._replace(hw=UNDEFINED))      # the HW is spent; the truncation is next
    answer = (msg.diverging_epoch, msg.diverging_end_offset)
    offset, _ = follower_truncation(rep._replace(truncating=TRUNCATING_AGAIN), answer, mode.end_offset_for)
    return _send(_set(s, f, truncate(rep, offset, mode.trim_cache_at_leo)), f, ())


def _truncate_on_fetch_response_terms(enc, s: SState, f: int) -> SState:
    """The z3 twin of ``_truncate_on_fetch_response``: before KAFKA-14704's fix the response's HW is applied
    first (a step of its own, the response kept with HW UNDEFINED); then the follower truncates
    where follower_truncation says (as after an intermediate step: no answer means its LEO)."""
    o, m, rep = enc.o, s.msgs[f], s.reps[f]
    offset, _ = enc.follower_truncation(rep._replace(truncating=TRUNCATING_AGAIN), m.c, m.d)
    t = enc.send(enc.set_replica(s, f, enc.truncate(rep, offset, enc.mode.trim_cache_at_leo)), f, enc.no_message())
    if not enc.mode.hw_before_truncation:
        return t
    hw_first = enc.send(enc.set_replica(s, f, rep._replace(hw=tmin(o, rep.leo, m.a))), f, m._replace(a=UNDEFINED))
    return ite(o, m.a != UNDEFINED, hw_first, t)


def reject_request(s: State, rules: Rules, l: int, f: int) -> Optional[State]:
    """A request reaches a replica that is not leader (NOT_LEADER_OR_FOLLOWER) or, with KIP-320,
    carries another leader epoch (FENCED/UNKNOWN_LEADER_EPOCH): the follower gets an error and
    nothing else changes; it may ask again."""
    msg = s.inflight[f]
    if not (msg and msg.kind in (FETCH, EPOCH_REQUEST) and msg.leader == l):
        return None
    if _accepts(rules, s.replicas[l], msg.current_leader_epoch):
        return None
    return _send(s, f, ())


def reject_request_terms(enc, s, l, f):
    """The z3 twin of ``reject_request``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o, m = enc.o, s.msgs[f]
    guard = o.And(o.Or(m.kind == FETCH, m.kind == EPOCH_REQUEST), m.peer == l,
                  o.Not(enc.accepts(s.reps[l], m.a)))
    return guard, enc.send(s, f, enc.no_message())


# ---------------------------------------------------------------- OffsetsForLeaderEpoch

def send_epoch_request(s: State, rules: Rules, f: int) -> Optional[State]:
    """A truncating follower asks its leader where its latest epoch ends (KIP-101; seed 001
    LeaderEpochRequest; ReplicaFetcherThread.buildLeaderEpochRequest); with KIP-320 the request
    also carries its current leader epoch."""
    rep = s.replicas[f]
    if not (rep.alive and rep.role == FOLLOWER and rep.truncating and not s.inflight[f]
            and s.replicas[rep.leader].alive):
        return None
    return _send(s, f, EpochRequest(EPOCH_REQUEST, rep.leader, rep.leader_epoch, latest_epoch(rep.epoch_cache)))


def send_epoch_request_terms(enc, s, f):
    """The z3 twin of ``send_epoch_request``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o, rep = enc.o, s.reps[f]
    guard = o.And(rep.alive, rep.role == FOLLOWER, rep.truncating != FETCHING, s.msgs[f].kind == NO_MESSAGE,
                  enc.leader_alive(s, rep))
    msg = SMsg(EPOCH_REQUEST, rep.leader, rep.leader_epoch, enc.latest_epoch(rep), 0, (ZERO,) * enc.L)
    return guard, enc.send(s, f, msg)


def leader_handle_epoch_request(s: State, rules: Rules, l: int, f: int) -> Optional[State]:
    """The leader answers from its epoch cache with its release's endOffsetFor."""
    msg = s.inflight[f]
    if not (msg and msg.kind == EPOCH_REQUEST and msg.leader == l):
        return None
    leader = s.replicas[l]
    if not _accepts(rules, leader, msg.current_leader_epoch):
        return None
    epoch, end = rules.mode.end_offset_for(leader.epoch_cache, leader.leo, msg.requested_epoch)
    return _send(s, f, EpochResponse(EPOCH_RESPONSE, l, epoch, end))


def leader_handle_epoch_request_terms(enc, s, l, f):
    """The z3 twin of ``leader_handle_epoch_request``: (guard, next state) over the encoding's terms
    (checker/symbolic.py)."""
    o, m, leader = enc.o, s.msgs[f], s.reps[l]
    guard = o.And(m.kind == EPOCH_REQUEST, m.peer == l, enc.accepts(leader, m.a))
    epoch, end = enc.end_offset_for(leader.epoch_cache, leader.clen, leader.leo, m.b)
    return guard, enc.send(s, f, SMsg(EPOCH_RESPONSE, l, epoch, end, 0, (ZERO,) * enc.L))


def follower_handle_epoch_response(s: State, rules: Rules, f: int) -> Optional[State]:
    """The follower truncates to the divergence point; it fetches once truncation is complete,
    else asks again for its (now lower) latest epoch, its fetch offset moved to this step (KIP-279)."""
    msg = s.inflight[f]
    if not (msg and msg.kind == EPOCH_RESPONSE):
        return None
    rep = s.replicas[f]
    offset, done = follower_truncation(rep, (msg.epoch, msg.end_offset), rules.mode.end_offset_for)
    rep = truncate(rep, offset, rules.mode.trim_cache_at_leo)._replace(
        truncating=FETCHING if done else TRUNCATING_AGAIN)
    return _send(_set(s, f, rep), f, ())


def follower_handle_epoch_response_terms(enc, s, f):
    """The z3 twin of ``follower_handle_epoch_response``: (guard, next state) over the encoding's terms
    (checker/symbolic.py)."""
    o, m, rep = enc.o, s.msgs[f], s.reps[f]
    offset, done = enc.follower_truncation(rep, m.a, m.b)
    rep = enc.truncate(rep, offset, enc.mode.trim_cache_at_leo)._replace(
        truncating=o.If(done, FETCHING, TRUNCATING_AGAIN))
    return m.kind == EPOCH_RESPONSE, enc.send(enc.set_replica(s, f, rep), f, enc.no_message())


# ---------------------------------------------------------------- faults

def _stop(s: State, rules: Rules, r: int, disk: Replica) -> State:
    """The broker stops with ``disk`` on disk; what it had in flight is handled by _drop_messages_to.
    Before KIP-380 the leader epoch stays, as the last LeaderAndIsr the broker answered: the
    controller never sends that request again, so a broker whose bounce it misses does not apply it
    again (``restart``). From KIP-380 (and in KRaft) every restart is seen, and nothing reads it."""
    answered = UNDEFINED if rules.mode.restart_after_detection else s.replicas[r].leader_epoch
    return _drop_messages_to(_set(s, r, _lost_memory(disk, answered)), r)


def crash(s: State, rules: Rules, r: int) -> Optional[State]:
    """A broker process dies: memory state is lost; log, HW checkpoint and epoch cache stay. The
    controller learns of it only later (controller_handle_failure)."""
    rep = s.replicas[r]
    if not (rep.alive and s.history.crashes < rules.cfg.crashes):
        return None
    s = _stop(s, rules, r, rep)
    return s._replace(history=s.history._replace(crashes=s.history.crashes + 1))


def crash_terms(enc, s, r):
    """The z3 twin of ``crash``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o, rep = enc.o, s.reps[r]
    guard = o.And(rep.alive, s.hist.crashes < enc.cfg.crashes)
    return guard, enc.count_crash(enc.stop(s, r, rep))


def power_fail(s: State, rules: Rules, r: int) -> Optional[State]:
    """A power failure: as a crash, and the log also falls back to what was flushed (seed 000
    divergence scenario; KIP-101 scenario 2). Once no power failure is left, flushed points can
    no longer matter and are forgotten."""
    rep = s.replicas[r]
    used = s.history.power_failures
    if not (rep.alive and used < rules.cfg.power_failures):
        return None
    s = _stop(s, rules, r, truncate(rep, rep.flushed))
    replicas = s.replicas
    if used + 1 == rules.cfg.power_failures:
        replicas = tuple([x._replace(flushed=0) if x.flushed else x for x in replicas])
    return _state(replicas, s.controller, s.inflight, s.stale, s.history._replace(power_failures=used + 1))


def power_fail_terms(enc, s, r):
    """The z3 twin of ``power_fail``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o, rep, cfg = enc.o, s.reps[r], enc.cfg
    used = s.hist.power_failures
    guard = o.And(rep.alive, used < cfg.power_failures)
    t = enc.stop(s, r, enc.truncate(rep, rep.flushed))
    forgotten = t._replace(reps=tuple(x._replace(flushed=0) for x in t.reps))
    t = ite(o, used + 1 == cfg.power_failures, forgotten, t)
    return guard, t._replace(hist=t.hist._replace(power_failures=used + 1))


def flush(s: State, rules: Rules, r: int) -> Optional[State]:
    """The log is flushed to disk up to the LEO (Kafka flushes asynchronously)."""
    rep = s.replicas[r]
    if not (rep.alive and s.history.power_failures < rules.cfg.power_failures and rep.flushed < rep.leo):
        return None
    return _set(s, r, rep._replace(flushed=rep.leo))


def flush_terms(enc, s, r):
    """The z3 twin of ``flush``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o, rep = enc.o, s.reps[r]
    guard = o.And(rep.alive, s.hist.power_failures < enc.cfg.power_failures, rep.flushed < rep.leo)
    return guard, enc.set_replica(s, r, rep._replace(flushed=rep.leo))


def lose_disk(s: State, rules: Rules, r: int) -> Optional[State]:
    """A broker stops and comes back to an empty disk: no log, no HW checkpoint, no epoch cache (a
    replaced disk, or a filesystem that lost what was not flushed: the case KIP-903 and KIP-966
    defend against). It restarts, registers and follows as any restarted broker. KRaft from 3.7
    (``directory_assignment``): a broker starts only from a formatted disk (``StorageTool format``
    writes meta.properties with a new directory.id), which its next registration reports."""
    rep = s.replicas[r]
    used = s.history.disk_losses
    if not (rep.alive and used < rules.cfg.disk_losses):
        return None
    empty = Replica(0, NONE, UNDEFINED, UNDEFINED, 0, (), 0, 0, (), 0, (),
                    new_directory=1 if rules.mode.directory_assignment else 0)
    s = _stop(s, rules, r, empty)
    return s._replace(history=s.history._replace(disk_losses=used + 1))


def _registered(c: Controller, rules: Rules, r: int, rep: Replica) -> Controller:
    """The controller sees r come up; from KIP-903 it records r's new broker epoch; with ELR a
    broker whose registration reports no clean shutdown leaves the ISR and the ELR
    (``ClusterControlManager.registerBroker`` compares the previous broker epoch, then
    ``ReplicationControlManager.handleBrokerShutdown @4.0.0``: KAFKA-15586, which KAFKA-18635 restored;
    with ELR 3.9.0 took every new incarnation as unclean, KAFKA-16952)."""
    c = c._replace(live=c.live | 1 << r)
    if rep.new_directory:
        # the registration lists the new directory only (``ClusterControlManager.registerBroker``
        # compares no directories and writes no partition record): the partition still assigns r the
        # old one, which is offline from now on (``hasOnlineDir`` @3.7.0, @4.1.1)
        c = c._replace(offline_dirs=c.offline_dirs | 1 << r)
    if rules.mode.broker_epochs:
        c = c._replace(broker_epochs=_put(c.broker_epochs, r, c.broker_epochs[r] + 1))
    if rules.mode.elr and not rep.clean_shutdown and (c.isr | c.elr) >> r & 1:
        c = _with_isr(c._replace(elr=c.elr & ~(1 << r)), rules, c.isr & ~(1 << r), unclean_shutdown=1 << r)
    return c


def _registered_terms(enc, c: SCtl, r: int, rep: SRep) -> SCtl:
    """The z3 twin of ``_registered``: r is live again; with KIP-903 its broker epoch moves on; with ELR a
    broker back without a clean-shutdown marker leaves the ISR and the ELR (KAFKA-15586)."""
    o = enc.o
    c = c._replace(live=enc.bit(c.live, r, True))
    if enc.mode.broker_epochs:
        c = c._replace(broker_epochs=tuple(e + 1 if x == r else e for x, e in enumerate(c.broker_epochs)))
    if enc.mode.elr:
        unclean = o.And(o.Not(rep.clean_shutdown), o.Or(c.isr[r], c.elr[r]))
        left = enc.with_isr(c._replace(elr=enc.bit(c.elr, r, False)), enc.bit(c.isr, r, False), unclean=r)
        c = ite(o, unclean, left, c)
    return c


def restart(s: State, rules: Rules, r: int) -> Optional[State]:
    """A broker comes back with log, HW and epoch cache from disk (no log truncation: 0.10
    truncates only in ReplicaManager.makeFollowers, LogManager recovery cuts only corrupt bytes),
    registers with the controller and waits for LeaderAndIsr. Before KIP-380 it can come back
    before the controller noticed it was gone (KAFKA-1120: the controller compares broker ids
    only); with KIP-380 it registers with a new broker epoch and the controller handles the bounce
    as a failure first (KafkaController.BrokerChange.process @2.2.0).

    Loading the log drops the epoch-cache entries that start at or beyond the LEO (the Log
    constructor: ``clearAndFlushLatest(nextOffset)`` @0.11.0.0 and @2.0.0, ``truncateFromEnd``
    @2.7.0; ``truncateFromEndAsyncFlush`` in LogLoader.load @3.8.0): a leader that took office and
    wrote nothing comes back without that epoch, in every release with a cache (KAFKA-10706 is
    about the same trim while the broker runs)."""
    rep, c = s.replicas[r], s.controller
    if rep.alive:
        return None
    if rules.mode.restart_after_detection and c.live >> r & 1:
        return None
    # a bounce the controller missed gets no LeaderAndIsr (BrokerChangeListener.doHandleChildChange
    # @0.10.2.1 and KafkaController.BrokerChange.process @2.1.0 compare broker ids: r is neither new
    # nor dead), only the requests it had not answered (ControllerChannelManager's RequestSendThread
    # .doWork @0.10.2.1 retries one until the broker answers) and those sent later: the epoch it
    # answered stays. A bounce the controller saw gets the current LeaderAndIsr (onBrokerStartup).
    answered = rep.leader_epoch if c.live >> r & 1 else UNDEFINED
    rep = truncate(rep, rep.leo, trim_cache_at_leo=True)
    return _with_controller(_set(s, r, rep._replace(alive=1, clean_shutdown=0, new_directory=0, leader_epoch=answered)),
                            _registered(c, rules, r, rep))


def restart_terms(enc, s, r):
    """The z3 twin of ``restart``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o, rep, c = enc.o, s.reps[r], s.ctl
    guard = o.Not(rep.alive)
    if enc.mode.restart_after_detection:
        guard = o.And(guard, o.Not(c.live[r]))
    # actions.restart: loading the log trims the cache at the LEO, the marker is consumed, the
    # controller registers r (actions._registered)
    up = enc.truncate(rep, rep.leo, trim_cache_at_leo=True)
    answered = o.If(c.live[r], rep.leader_epoch, UNDEFINED)     # a missed bounce keeps the epoch it answered
    t = enc.set_replica(s, r, up._replace(alive=True, clean_shutdown=False if enc.mode.elr else rep.clean_shutdown,
                                          leader_epoch=answered))
    return guard, enc.with_controller(t, _registered_terms(enc, c, r, rep))


# ---------------------------------------------------------------- controller

def _broker_gone(s: State, rules: Rules, r: int, successor: int = UNDEFINED) -> Optional[State]:
    """The controller handles a broker it no longer sees (its ZooKeeper session ended:
    KafkaController.onBrokerFailure -> onReplicasBecomeOffline @2.2.0; KRaft fences it). If r led,
    the partition goes offline: ZooKeeper's controller elects in a later write of the same event
    (``elect_offline``, a step of its own here, which bumps the epoch once for both); KRaft elects
    ``successor`` in the same record (``_elect_in_record``). If r followed in the ISR, it leaves the
    ISR with a new leader epoch (OfflineReplica). None when that epoch is beyond the bound, or when
    ``successor`` is not one this removal may elect."""
    s = _fence_fetchers(s, rules, r)
    if not s.replicas[r].alive:         # it will get the current LeaderAndIsr when it starts (``restart``)
        s = _set(s, r, s.replicas[r]._replace(leader_epoch=UNDEFINED))
    c = s.controller
    live = c.live & ~(1 << r)
    # the last ISR member stays (OfflineReplica; PartitionChangeBuilder before KIP-966); with ELR
    # the ISR may become empty (KAFKA-15584, PartitionChangeBuilder.build @3.9.0)
    keeps_last = _size(c.isr) == 1 and not rules.mode.elr
    if c.leader == r:
        isr = c.isr if keeps_last else c.isr & ~(1 << r)
        c = _with_isr(c, rules, isr)._replace(leader=UNDEFINED, live=live)
        if rules.mode.last_known_leader_when_leaderless and not c.last_known_elr:
            # 4.1.1: the change that names no leader records the last one, if none is recorded
            # (maybeUpdateLastKnownLeader @4.1.1); an election in the same record clears it again
            c = c._replace(last_known_elr=1 << r)
        s = _with_controller(s, c)
        if rules.mode.fence_elects:
            return _elect_in_record(s, rules, successor)
        return s if successor == UNDEFINED else None
    if successor != UNDEFINED:
        return None
    if not c.isr >> r & 1 or keeps_last:
        return _with_controller(s, c._replace(live=live))
    # OfflineReplica: ReplicaStateMachine.doRemoveReplicasFromIsr @2.0.0 (KafkaController
    # .removeReplicaFromIsr @0.10.2.1) writes LeaderAndIsr.newLeaderAndIsr: epoch + 1; KRaft from
    # metadata.version 3.6-IV0 keeps the epoch (PartitionChangeBuilder.triggerLeaderEpochBumpIfNeeded)
    c = _with_isr(c, rules, c.isr & ~(1 << r))._replace(live=live)
    if not rules.mode.isr_removal_bumps_epoch:
        return _with_controller(s, c)
    if c.epoch == rules.cfg.max_epoch:
        return None
    return _with_controller(s, c._replace(epoch=c.epoch + 1))


def _elect_in_record(s: State, rules: Rules, successor: int) -> Optional[State]:
    """KRaft: the record that takes the leader away also elects (``generateLeaderAndIsrUpdates``
    builds one PartitionChangeBuilder: ``tryElection`` -> ``electAnyLeader`` @3.6.0, @4.1.1), and
    that record bumps the leader epoch whether it names a leader or none
    (``PartitionRegistration.merge``: any leader other than NO_LEADER_CHANGE is epoch + 1).
    ``successor`` is the replica elected: any that ``elect_offline`` would take from the leaderless
    state ``s`` (Kafka takes the first in the assignment; the model lets it be any, as
    ``elect_offline`` does). UNDEFINED: nobody can be elected, and the partition is left without
    leader at a new epoch; None if someone could be (that is the step with a successor)."""
    if successor != UNDEFINED:
        return elect_offline(s, rules, successor)
    c = s.controller
    if c.epoch == rules.cfg.max_epoch or _election_owed(s, rules):
        return None
    return _with_controller(s, c._replace(epoch=c.epoch + 1))


def _elect_in_record_terms(enc, leads, s: SState, successor: int):
    """The z3 twin of ``_elect_in_record``, where ``leads`` says the removed broker led: (guard, next
    state)."""
    o = enc.o
    if successor != UNDEFINED:
        elected, t = elect_offline_terms(enc, s, successor)
        return o.And(leads, elected), t
    c = s.ctl
    electable = o.Or(*[elect_offline_terms(enc, s, x)[0] for x in range(enc.n)])
    guard = o.Not(o.And(leads, o.Or(c.epoch + 1 > enc.cfg.max_epoch, electable)))
    return guard, enc.with_controller(s, c._replace(epoch=o.If(leads, c.epoch + 1, c.epoch)))


def _broker_gone_terms(enc, s: SState, r: int, successor: int = UNDEFINED):
    """The z3 twin of ``_broker_gone``: (the epoch bound holds and ``successor`` may be elected,
    next state). A leader leaves the partition offline (and the ISR, unless the last member before
    ELR) at the same epoch, or in KRaft elects ``successor`` in the same record; an ISR member that
    is not the last (before ELR) leaves it, with a new epoch unless ``isr_removal_bumps_epoch`` is
    off (KRaft 3.6+)."""
    s = _fence_fetchers_terms(enc, s, r)
    rep = s.reps[r]         # actions._broker_gone: a stopped r will get the current LeaderAndIsr
    s = enc.set_replica(s, r, rep._replace(leader_epoch=enc.o.If(rep.alive, rep.leader_epoch, UNDEFINED)))
    o, c, mode = enc.o, s.ctl, enc.mode
    leads = c.leader == r
    if mode.elr:            # actions._broker_gone, keeps_last false: the ISR may empty (KIP-966)
        removing = o.And(o.Not(leads), c.isr[r])
        isr = enc.bit(c.isr, r, False)
    else:
        removing = o.And(o.Not(leads), c.isr[r], o.Sum(c.isr) > 1)
        isr = enc.bit(c.isr, r, o.And(c.isr[r], o.Not(o.Sum(c.isr) > 1)))
    bump = removing if mode.isr_removal_bumps_epoch else False
    new = ite(o, o.Or(leads, removing), enc.with_isr(c, isr), c)
    new = new._replace(leader=o.If(leads, UNDEFINED, c.leader), epoch=o.If(bump, c.epoch + 1, c.epoch),
                       live=enc.bit(c.live, r, False))
    if mode.elr and mode.last_known_leader_when_leaderless:     # actions._broker_gone, 4.1.1
        record = o.And(leads, o.Not(o.Or(*c.last_known_elr)))
        new = new._replace(last_known_elr=tuple(o.If(record, x == r, k) for x, k in enumerate(new.last_known_elr)))
    ok, t = o.Not(o.And(bump, c.epoch + 1 > enc.cfg.max_epoch)), enc.with_controller(s, new)
    if mode.fence_elects:
        elected, t = _elect_in_record_terms(enc, leads, t, successor)
        return o.And(ok, elected), t
    return (ok if successor == UNDEFINED else False), t


def controller_handle_failure(s: State, rules: Rules, r: int) -> Optional[State]:
    """The controller notices a dead broker once its session times out. Separate from the crash,
    so before KIP-380 a fast restart can win the race. KRaft: a leader with a replica to elect is
    fenced by ``controller_handle_failure_leader``."""
    if s.replicas[r].alive or not s.controller.live >> r & 1:
        return None
    return _broker_gone(s, rules, r)


def controller_handle_failure_terms(enc, s, r):
    """The z3 twin of ``controller_handle_failure``: (guard, next state) over the encoding's terms
    (checker/symbolic.py)."""
    o = enc.o
    ok, t = _broker_gone_terms(enc, s, r)
    return o.And(o.Not(s.reps[r].alive), s.ctl.live[r], ok), t


def controller_handle_failure_leader(s: State, rules: Rules, l: int, r: int) -> Optional[State]:
    """KRaft: the controller fences the dead leader l and, in the same record, elects r
    (ReplicationControlManager.handleBrokerFenced @3.6.0: ``_elect_in_record``). Without a replica to
    elect, ``controller_handle_failure(l)`` leaves the partition leaderless."""
    if s.replicas[l].alive or not s.controller.live >> l & 1 or s.controller.leader != l:
        return None
    return _broker_gone(s, rules, l, r)


def controller_handle_failure_leader_terms(enc, s, l, r):
    """The z3 twin of ``controller_handle_failure_leader``: (guard, next state) over the encoding's
    terms (checker/symbolic.py)."""
    o = enc.o
    ok, t = _broker_gone_terms(enc, s, l, r)
    return o.And(o.Not(s.reps[l].alive), s.ctl.live[l], ok), t


def session_expire(s: State, rules: Rules, r: int) -> Optional[State]:
    """A live broker's ZooKeeper session expires (a long GC pause, a network partition from
    ZooKeeper): the controller handles it as failed while it runs on, still believing what its last
    LeaderAndIsr said, until it registers again (``register``). The fast leader changes of
    KAFKA-6361 start this way. Uses the crash budget. KRaft: a leader with a replica to elect is
    fenced by ``session_expire_leader``."""
    if not (s.replicas[r].alive and s.controller.live >> r & 1 and s.history.crashes < rules.cfg.crashes):
        return None
    s = _broker_gone(s, rules, r)
    return s and s._replace(history=s.history._replace(crashes=s.history.crashes + 1))


def session_expire_terms(enc, s, r):
    """The z3 twin of ``session_expire``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o = enc.o
    ok, t = _broker_gone_terms(enc, s, r)
    return o.And(s.reps[r].alive, s.ctl.live[r], s.hist.crashes < enc.cfg.crashes, ok), enc.count_crash(t)


def session_expire_leader(s: State, rules: Rules, l: int, r: int) -> Optional[State]:
    """KRaft: the leader l, still running, misses its heartbeats (a long pause, a partition from the
    controller quorum); the controller fences it and elects r in the same record (``_elect_in_record``).
    Uses the crash budget."""
    if not (s.replicas[l].alive and s.controller.live >> l & 1 and s.controller.leader == l
            and s.history.crashes < rules.cfg.crashes):
        return None
    return _count_crash(_broker_gone(s, rules, l, r))


def session_expire_leader_terms(enc, s, l, r):
    """The z3 twin of ``session_expire_leader``: (guard, next state) over the encoding's terms
    (checker/symbolic.py)."""
    o = enc.o
    ok, t = _broker_gone_terms(enc, s, l, r)
    return o.And(s.reps[l].alive, s.ctl.live[l], s.hist.crashes < enc.cfg.crashes, ok), enc.count_crash(t)


def register(s: State, rules: Rules, r: int) -> Optional[State]:
    """A running broker whose session expired registers again; the controller sees it come up
    (KafkaController.onBrokerStartup: it gets the current LeaderAndIsr)."""
    c = s.controller
    if not (s.replicas[r].alive and not c.live >> r & 1):
        return None
    # a running broker registers again: ZooKeeper gives it a new session (broker epoch, unused by
    # the ZooKeeper modes); KRaft unfences it at the epoch it has
    return _with_controller(s, c._replace(live=c.live | 1 << r))


def register_terms(enc, s, r):
    """The z3 twin of ``register``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o, c = enc.o, s.ctl
    return o.And(s.reps[r].alive, o.Not(c.live[r])), enc.with_controller(s, c._replace(live=enc.bit(c.live, r, True)))


def _election_owed(s: State, rules: Rules) -> bool:
    """A leaderless partition has a replica ``elect_offline`` would take: the controller writes that
    election in the record of the event that made it possible, before anything else."""
    return any(elect_offline(s, rules, x) for x in range(rules.n))


def _acceptable(c: Controller) -> int:
    """The replicas an election may take as leader (``ReplicationControlManager.LeaderAcceptor.test``
    @3.7.0, @4.1.1: an active broker whose registration lists the directory the partition assigns it;
    ZooKeeper and KRaft before 3.7: a live broker). ``offline_dirs`` is empty but after a replaced disk."""
    return c.live & ~c.offline_dirs


def assign_dir(s: State, rules: Rules, r: int) -> Optional[State]:
    """KRaft from 3.7: r, back on a replaced disk, has created the partition's log in its new directory
    and tells the controller (``AssignmentsManager``: AssignReplicasToDirs, sent once the broker applies
    the partition, fenced or not); ``ReplicationControlManager.handleAssignReplicasToDirs`` writes one
    partition record that names the new directory, after which elections accept r. Its
    PartitionChangeBuilder is built without the ELR flag up to 4.2, so with ELR it empties the ELR and
    keeps the last known leader (``assignment_clears_elr``: ``maybeUpdateRecordElr`` @4.0.0, @4.1.1;
    4.3.0 builds it with the flag, and the ELR stays). Its election,
    which reads r's registration from before the record, never takes r, and the model lets no election
    wait when it writes (``_elect_in_record``'s rule): no leader, epoch and ISR unchanged."""
    c = s.controller
    if not (s.replicas[r].alive and c.offline_dirs >> r & 1):
        return None
    if _election_owed(s, rules):
        return None
    c = c._replace(offline_dirs=c.offline_dirs & ~(1 << r))
    if rules.mode.elr and rules.mode.assignment_clears_elr:
        c = c._replace(elr=0)
    return _with_controller(s, c)


def elect_offline(s: State, rules: Rules, r: int) -> Optional[State]:
    """OfflinePartitionLeaderElection: a partition without a leader gets a live ISR member as
    leader, the live ISR members as ISR, and a new leader epoch (seed 002: only ISR members may be
    elected; PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection @2.2.0,
    OfflinePartitionLeaderSelector @0.10.2.1). Kafka takes the first in the assignment's order; the
    model lets it be any, which covers every order. Unclean election (unclean.leader.election.enable):
    any live replica when no ISR member is live, the ISR becoming just it."""
    c, cfg = s.controller, rules.cfg
    if not (c.leader == UNDEFINED and c.epoch < cfg.max_epoch):
        return None
    if rules.mode.elr:
        return _elect_with_elr(s, rules, r)
    acceptable = _acceptable(c)
    if not acceptable >> r & 1:
        return None
    live_isr = c.isr & c.live
    if live_isr >> r & 1:
        isr = live_isr
    elif cfg.unclean_election and not live_isr & acceptable:
        isr = 1 << r
    else:
        return None
    return _with_controller(s, c._replace(leader=r, epoch=c.epoch + 1, isr=isr))


def elect_offline_terms(enc, s, r):
    """The z3 twin of ``elect_offline``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o, c, cfg = enc.o, s.ctl, enc.cfg
    if enc.mode.elr:                 # actions.elect_offline -> actions._elect_with_elr
        return _elect_with_elr_terms(enc, s, r)
    live_isr = tuple(o.And(b, up) for b, up in zip(c.isr, c.live))
    eligible = o.Or(live_isr[r], o.And(cfg.unclean_election, o.Not(o.Or(*live_isr))))
    guard = o.And(c.leader == UNDEFINED, c.live[r], c.epoch < cfg.max_epoch, eligible)
    isr = ite(o, live_isr[r], live_isr, tuple(x == r for x in range(enc.n)))
    return guard, enc.with_controller(s, c._replace(leader=r, epoch=c.epoch + 1, isr=isr))


def _elect_with_elr(s: State, rules: Rules, r: int) -> Optional[State]:
    """PartitionChangeBuilder.electAnyLeader with Eligible Leader Replicas (KIP-966; @3.9.0, the
    code 4.0 ships): a live ISR member; else, with an empty ISR, a live ELR member, which becomes
    the ISR and leaves the ELR; else, with ISR and ELR empty, the last known leader
    (canElectLastKnownLeader), as an unclean election, whether or not unclean election is enabled;
    until KAFKA-19522 (4.1.0) even when that broker is fenced (``elect_fenced_last_leader``: the
    code logs "not alive" and elects it anyway); else an unclean election when enabled. An unclean
    election leaves the new leader alone in the ISR and clears the ELR."""
    c, cfg, mode = s.controller, rules.cfg, rules.mode
    acceptable = _acceptable(c)
    eligible = (c.isr or c.elr) & acceptable             # isValidNewLeader: ISR, or ELR when the ISR is empty
    last_known = (not c.isr and not c.elr and _size(c.last_known_elr) == 1
                  and (c.last_known_elr & acceptable or mode.elect_fenced_last_leader))
    bit = 1 << r
    if eligible:
        if not eligible & bit:
            return None
        c = _with_isr(c, rules, c.isr & c.live) if c.isr else c._replace(isr=bit, elr=c.elr & ~bit)
    elif last_known:
        if c.last_known_elr != bit:
            return None
        c = c._replace(isr=bit, elr=0)
    elif cfg.unclean_election and acceptable & bit:
        c = c._replace(isr=bit, elr=0)
    else:
        return None
    return _with_controller(s, c._replace(leader=r, epoch=c.epoch + 1, last_known_elr=0))


def _elect_with_elr_terms(enc, s, r):
    """The z3 twin of ``_elect_with_elr``: a live ISR member; else (empty ISR) a live ELR member, which
    becomes the ISR; else (ISR and ELR empty) the last known leader, if live or
    ``elect_fenced_last_leader``; else an unclean election when enabled."""
    o, c, cfg, n = enc.o, s.ctl, enc.cfg, enc.n
    has_isr, has_elr = o.Or(*c.isr), o.Or(*c.elr)
    eligible = tuple(o.And(o.If(has_isr, c.isr[x], c.elr[x]), c.live[x]) for x in range(n))
    any_eligible = o.Or(*eligible)
    last_known = o.And(o.Not(has_isr), o.Not(has_elr), o.Sum(c.last_known_elr) == 1,
                       o.Or(o.Or(*[o.And(k, up) for k, up in zip(c.last_known_elr, c.live)]),
                            enc.mode.elect_fenced_last_leader))
    alone = tuple(x == r for x in range(n))
    is_last_known = o.And(*[k if x == r else o.Not(k) for x, k in enumerate(c.last_known_elr)])
    chosen = o.Or(o.And(any_eligible, eligible[r]),
                  o.And(o.Not(any_eligible), last_known, is_last_known),
                  o.And(o.Not(any_eligible), o.Not(last_known), cfg.unclean_election, c.live[r]))
    guard = o.And(c.leader == UNDEFINED, c.epoch < cfg.max_epoch, chosen)
    from_isr = ite(o, has_isr, enc.with_isr(c, tuple(o.And(b, up) for b, up in zip(c.isr, c.live))),
                   c._replace(isr=alone, elr=enc.bit(c.elr, r, False)))
    new = ite(o, any_eligible, from_isr, c._replace(isr=alone, elr=(False,) * n))
    return guard, enc.with_controller(s, new._replace(leader=r, epoch=c.epoch + 1, last_known_elr=(False,) * n))


def elect_preferred(s: State, rules: Rules, r: int) -> Optional[State]:
    """Preferred replica election (auto.leader.rebalance.enable, or an admin's request): the
    assignment's first replica takes over when it is live, in the ISR and not the leader; the ISR
    stays, the epoch moves on (PartitionLeaderElectionAlgorithms.preferredReplicaPartitionLeaderElection
    @2.2.0; PreferredReplicaPartitionLeaderSelector @0.10.2.1)."""
    c = s.controller
    if not (r == PREFERRED and c.leader != r and _acceptable(c) >> r & 1 and c.isr >> r & 1
            and c.epoch < rules.cfg.max_epoch):
        return None
    return _with_controller(s, c._replace(leader=r, epoch=c.epoch + 1))


def elect_preferred_terms(enc, s, r):
    """The z3 twin of ``elect_preferred``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o, c = enc.o, s.ctl
    if r != PREFERRED:
        return False, s
    guard = o.And(c.leader != r, c.live[r], c.isr[r], c.epoch < enc.cfg.max_epoch)
    return guard, enc.with_controller(s, c._replace(leader=r, epoch=c.epoch + 1))


def _shutdown_cleanly(s: State, rules: Rules, r: int, successor: int = UNDEFINED) -> Optional[State]:
    """A controlled shutdown ends as KafkaServer.shutdown does: ReplicaManager.shutdown(checkpointHW
    = true) and LogManager.shutdown (flushed, clean-shutdown marker), then the broker leaves
    ZooKeeper and the controller handles it as gone (a follower leaves the ISR with a new epoch:
    KafkaController.doControlledShutdown sends StopReplica, then OfflineReplica). The callers that
    are faults count it against the crash budget; a follower's exit (``follower_handle_fetch``) is
    the protocol's own step. ``successor``: the leader KRaft elects in the same record (``_broker_gone``)."""
    rep = s.replicas[r]
    if s.history.power_failures < rules.cfg.power_failures:    # flushed points matter only while one is left
        rep = rep._replace(flushed=rep.leo)
    if rules.mode.elr:
        rep = rep._replace(clean_shutdown=1)
    return _broker_gone(_stop(s, rules, r, rep), rules, r, successor)


def _count_crash(s: Optional[State]) -> Optional[State]:
    return s and s._replace(history=s.history._replace(crashes=s.history.crashes + 1))


def _shutdown_cleanly_terms(enc, s: SState, r: int, successor: int = UNDEFINED):
    """The z3 twin of ``_shutdown_cleanly``: (the epoch bound holds, next state)."""
    o, rep, cfg = enc.o, s.reps[r], enc.cfg
    if cfg.power_failures:       # flushed points matter only while a power failure is left
        rep = ite(o, s.hist.power_failures < cfg.power_failures, rep._replace(flushed=rep.leo), rep)
    if enc.mode.elr:            # actions._shutdown_cleanly: the clean-shutdown marker (KAFKA-15586)
        rep = rep._replace(clean_shutdown=True)
    return _broker_gone_terms(enc, enc.stop(s, r, rep), r, successor)


def controlled_shutdown(s: State, rules: Rules, r: int) -> Optional[State]:
    """A broker that does not lead shuts down cleanly (controlled.shutdown.enable): the controller
    takes it out of the ISR with a new leader epoch (KafkaController.doControlledShutdown: StopReplica,
    then OfflineReplica), then it stops. A leader whose partition has no other live ISR member cannot
    hand over: the controller answers that the partition remains, the broker gives up retrying and
    stops anyway. Uses the crash budget."""
    rep, c = s.replicas[r], s.controller
    if not (rep.alive and c.live >> r & 1 and s.history.crashes < rules.cfg.crashes):
        return None
    if c.leader == r and c.isr & c.live & ~(1 << r):
        return None          # a leader with a live ISR peer hands over: controlled_shutdown_leader
    return _count_crash(_shutdown_cleanly(s, rules, r))


def controlled_shutdown_terms(enc, s, r):
    """The z3 twin of ``controlled_shutdown``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o, c, rep = enc.o, s.ctl, s.reps[r]
    peer = o.Or(*[o.And(c.isr[x], c.live[x]) for x in range(enc.n) if x != r])
    ok, t = _shutdown_cleanly_terms(enc, s, r)
    guard = o.And(rep.alive, c.live[r], s.hist.crashes < enc.cfg.crashes, o.Not(o.And(c.leader == r, peer)), ok)
    return guard, enc.count_crash(t)


def controlled_shutdown_leader(s: State, rules: Rules, l: int, r: int) -> Optional[State]:
    """The leader l shuts down cleanly, handing leadership to r, a live ISR member: the controller
    makes r leader with the ISR minus l at a new epoch (controlledShutdownPartitionLeaderElection
    @2.2.0; ControlledShutdownLeaderSelector @0.10.2.1: the first such member in the assignment, here
    any). The LeaderAndIsr reaches l too (0.10.2.1, and again from 2.1 by KAFKA-7482): l applies it
    as follower (before 0.11 that truncates its log to its HW), then stops.

    KRaft (``fence_elects``): the record that takes l, in controlled shutdown, out of the ISR elects r,
    any replica ``elect_offline`` takes once l is out (an ISR member, an ELR member, or unclean)
    (ReplicationControlManager.handleBrokerInControlledShutdown @3.6.0); the model stops l at once, as
    what l would apply as follower is memory the stop loses."""
    c, rep = s.controller, s.replicas[l]
    if rules.mode.fence_elects:
        if not (c.leader == l and rep.alive and c.live >> l & 1 and s.history.crashes < rules.cfg.crashes):
            return None
        return _count_crash(_shutdown_cleanly(s, rules, l, r))
    if not (c.leader == l and rep.alive and c.live >> l & 1 and c.live >> r & 1 and c.isr >> r & 1
            and s.history.crashes < rules.cfg.crashes and c.epoch < rules.cfg.max_epoch):
        return None
    s = _with_controller(s, _with_isr(c, rules, c.isr & ~(1 << l))._replace(leader=r, epoch=c.epoch + 1))
    s = become_follower(s, rules, l)          # always enabled: l's epoch is below the new one
    return s and _count_crash(_shutdown_cleanly(s, rules, l))


def controlled_shutdown_leader_terms(enc, s, l, r):
    """The z3 twin of ``controlled_shutdown_leader``: (guard, next state) over the encoding's terms
    (checker/symbolic.py)."""
    o, c, rep, cfg = enc.o, s.ctl, s.reps[l], enc.cfg
    if enc.mode.fence_elects:        # actions.controlled_shutdown_leader, KRaft: elected in the same record
        ok, t = _shutdown_cleanly_terms(enc, s, l, r)
        return o.And(c.leader == l, rep.alive, c.live[l], s.hist.crashes < cfg.crashes, ok), enc.count_crash(t)
    guard = o.And(c.leader == l, rep.alive, c.live[l], c.live[r], c.isr[r], s.hist.crashes < cfg.crashes,
                  c.epoch < cfg.max_epoch)
    t = enc.with_controller(s, enc.with_isr(c, enc.bit(c.isr, l, False))._replace(leader=r, epoch=c.epoch + 1))
    follows, t = become_follower_terms(enc, t, l)      # enabled wherever the spec takes this step
    ok, t = _shutdown_cleanly_terms(enc, t, l)
    return o.And(guard, follows, ok), enc.count_crash(t)


def become_leader(s: State, rules: Rules, r: int) -> Optional[State]:
    """r applies the controller's LeaderAndIsr naming it leader (a broker applies only a newer leader
    epoch: ReplicaManager.becomeLeaderOrFollower). Partition.makeLeader: the ISR view and epoch are
    taken; a broker that was not leader already resets its followers' LEOs to unknown (isNewLeader);
    from 2.1 (KAFKA-7415) the epoch is assigned to the cache at the LEO. The fetcher stops
    (makeLeaders). Then it tries to move its HW."""
    c, rep = s.controller, s.replicas[r]
    # KRaft from 3.6 changes the ISR without a new leader epoch (KAFKA-15021): the leader applies the
    # new partition epoch's ISR as it is (Partition.makeLeader, isNewLeader false)
    isr_update = rep.role == LEADER and c.epoch == rep.leader_epoch and rep.isr != c.isr
    if not (rep.alive and c.leader == r and (c.epoch > rep.leader_epoch or isr_update)):
        return None
    cache = rep.epoch_cache
    if rules.mode.cache_on_become_leader:
        cache = rules.mode.assign(cache, c.epoch, rep.leo)
    if rep.role == LEADER:
        remote, epochs = rep.remote_leo, rep.remote_broker_epoch
    else:
        remote = (UNDEFINED,) * rules.n
        epochs = (UNDEFINED,) * rules.n if rules.mode.broker_epochs else ()
    fetch_leo, caught_up = _reset_fetch_state(rep, r, c, rules.n, isr_update)
    since = rep.leading_since if _term_goes_on(rep, c) else c.epoch
    rep = rep._replace(role=LEADER, leader_epoch=c.epoch, leader=r, isr=c.isr, truncating=FETCHING,
                       remote_leo=remote, remote_broker_epoch=epochs, epoch_cache=cache,
                       remote_fetch_leo=fetch_leo, remote_caught_up=caught_up, leading_since=since)
    s = _leave_fetcher(_set(s, r, rep), rules, r)
    return advance_hw(s, r, rules)


def _term_goes_on(rep: Replica, c: Controller) -> bool:
    """Whether a leader named again keeps its term (``leading_since``): Partition.makeLeader's
    ``isNewLeader`` is false when the broker was leader already, so the produce requests in its
    purgatory keep waiting. A broker applies every LeaderAndIsr in turn (the ZooKeeper controller
    queues them per broker), and the model lets it apply only the latest: when it skipped an epoch,
    the model cannot tell whether that epoch named it, and a new term begins (as if another leader
    had come between)."""
    return rep.role == LEADER and c.epoch <= rep.leader_epoch + 1


def _reset_fetch_state(rep: Replica, r: int, c: Controller, n: int, isr_update: bool):
    """What Partition.makeLeader does to its followers' fetch state (``remote_fetch_leo``,
    ``remote_caught_up``) on a new leader epoch (Replica.resetReplicaState @3.4.0, @3.9.0): a broker
    that was not leader forgets every follower's last Fetch; one re-elected keeps its LEO as the last
    Fetch's of the ISR members (caught up now), and forgets the others' (their last fetch time 0).
    Every follower's caught-up time is now for ISR members, 0 for the others: no bit is set. At
    the same epoch (KRaft 3.6+, ``isr_update``) nothing is reset; a follower the controller took out of
    the ISR keeps the caught-up time it had, which the model does not hold for ISR members: its bit
    is set, and ``lag_expires`` may clear it at once. (0.10-2.8 reset on every LeaderAndIsr and kept
    every follower's last Fetch on a re-election, Replica.resetLastCaughtUpTime @2.8.1: the model
    follows 3.x.)"""
    if isr_update:
        return rep.remote_fetch_leo, (rep.remote_caught_up | rep.isr) & ~c.isr & ~(1 << r)
    if rep.role != LEADER:
        return (UNDEFINED,) * n, 0
    return tuple(rep.leo if c.isr >> f & 1 and f != r else UNDEFINED for f in range(n)), 0


def become_leader_terms(enc, s, r):
    """The z3 twin of ``become_leader``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o, c, rep = enc.o, s.ctl, s.reps[r]
    # actions.become_leader, isr_update: KRaft 3.6+ applies an ISR change at the same epoch (KAFKA-15021)
    isr_update = o.And(rep.role == LEADER, c.epoch == rep.leader_epoch, o.Not(equal(o, rep.isr, c.isr)))
    guard = o.And(rep.alive, c.leader == r, o.Or(c.epoch > rep.leader_epoch, isr_update))
    cache, clen = rep.epoch_cache, rep.clen
    if enc.mode.cache_on_become_leader:
        cache, clen = enc.assign(cache, clen, c.epoch, rep.leo)
    remote = ite(o, rep.role == LEADER, rep.remote_leo, (UNDEFINED,) * enc.n)
    rbe = ite(o, rep.role == LEADER, rep.remote_broker_epoch, (UNDEFINED,) * len(rep.remote_broker_epoch))
    # actions._reset_fetch_state
    reelected = tuple(o.If(o.And(c.isr[f], f != r), rep.leo, UNDEFINED) for f in range(enc.n))
    fetch_leo = ite(o, isr_update, rep.remote_fetch_leo, ite(o, rep.role == LEADER, reelected, (UNDEFINED,) * enc.n))
    kept = tuple(o.And(o.Or(b, rep.isr[f]), o.Not(c.isr[f]), f != r) for f, b in enumerate(rep.remote_caught_up))
    caught_up = ite(o, isr_update, kept, (False,) * enc.n)
    goes_on = o.And(rep.role == LEADER, c.epoch <= rep.leader_epoch + 1)      # actions._term_goes_on
    new = rep._replace(role=LEADER, leader_epoch=c.epoch, leader=r, isr=c.isr, truncating=FETCHING, remote_leo=remote,
                       remote_broker_epoch=rbe, epoch_cache=cache, clen=clen, remote_fetch_leo=fetch_leo,
                       remote_caught_up=caught_up, leading_since=o.If(goes_on, rep.leading_since, c.epoch))
    return guard, enc.advance_hw(_leave_fetcher_terms(enc, enc.set_replica(s, r, new), r), r)


def become_follower(s: State, rules: Rules, r: int) -> Optional[State]:
    """r applies the controller's LeaderAndIsr naming another leader (only a newer epoch).
    Partition.makeFollower says whether anything is to be done: not when the leader is unchanged
    (0.10-2.0), from 2.1 only when the leader and the epoch are unchanged. If so, the fetcher restarts
    (ReplicaManager.makeFollowers): before 0.11 the log is truncated to the HW there; with epochs
    the follower first finds its divergence point with OffsetsForLeaderEpoch (with an empty cache, and so
    an empty log, the exchange can only end at offset 0: it starts fetching)."""
    c, rep = s.controller, s.replicas[r]
    if not (rep.alive and c.leader not in (UNDEFINED, r) and c.epoch > rep.leader_epoch):
        return None
    if rep.leader == c.leader and not rules.mode.follow_on_new_epoch:
        return _set(s, r, rep._replace(leader_epoch=c.epoch))
    rep = rep._replace(role=FOLLOWER, leader_epoch=c.epoch, leader=c.leader, isr=0, remote_leo=(),
                       remote_broker_epoch=(), remote_fetch_leo=(), remote_caught_up=0, leading_since=UNDEFINED)
    if not rules.mode.epochs:
        rep = truncate(rep, rep.hw)._replace(truncating=FETCHING)
    elif rules.mode.truncate_on_fetch:
        # 2.8+: fetching from the LEO at once, the Fetch naming the latest epoch (ReplicaManager
        # .initialFetchOffset @2.8.0: the LEO when the log has an epoch, else the HW = the LEO here)
        if rules.mode.accept_old_epoch_response and _keeps_old_epoch_message(s, r, rep):
            return _set(s, r, rep._replace(truncating=FETCHING))
        rep = rep._replace(truncating=FETCHING)
    else:
        rep = rep._replace(truncating=TRUNCATING if rep.epoch_cache else FETCHING)
    return _leave_fetcher(_set(s, r, rep), rules, r)


def _keeps_old_epoch_message(s: State, r: int, new: Replica) -> bool:
    """KAFKA-18991 (2.8.0 to 3.9.0 and 4.0.0): the fetcher state r starts at the new epoch
    (AbstractFetcherThread.partitionFetchState @3.9.0: Fetching at the LEO, when the log has an epoch)
    has the fetch offset of the Fetch r already has out to the same leader (r's LEO: only its own
    fetcher moves it), and processFetchRequest checks only that offset and readiness, not the
    request's leader epoch. So that Fetch, or the answer to it, stays r's: the answer computed at the
    old epoch is handled as if it were the new one's. The fix (3.9.1, 4.0.1) also checks the epoch:
    the message is abandoned as on any restart of the fetcher."""
    msg, old = s.inflight[r], s.replicas[r]
    return (bool(msg) and old.role == FOLLOWER and old.leader == new.leader and bool(new.epoch_cache)
            and not old.leader_fenced)


def become_follower_terms(enc, s, r):
    """The z3 twin of ``become_follower``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o, c, rep = enc.o, s.ctl, s.reps[r]
    guard = o.And(rep.alive, c.leader != UNDEFINED, c.leader != r, c.epoch > rep.leader_epoch)
    new = rep._replace(role=FOLLOWER, leader_epoch=c.epoch, leader=c.leader, isr=(False,) * enc.n,
                       remote_leo=(0,) * enc.n, remote_broker_epoch=(0,) * len(rep.remote_broker_epoch),
                       remote_fetch_leo=(0,) * enc.n, remote_caught_up=(False,) * enc.n, leading_since=UNDEFINED)
    if not enc.mode.epochs:
        new = enc.truncate(new, new.hw)._replace(truncating=FETCHING)
    elif enc.tof:         # actions.become_follower, 2.8+: fetching from the LEO at once (initialFetchOffset)
        new = new._replace(truncating=FETCHING)
    else:
        new = new._replace(truncating=o.If(new.clen > 0, TRUNCATING, FETCHING))
    follow = _leave_fetcher_terms(enc, enc.set_replica(s, r, new), r)
    if enc.tof and enc.mode.accept_old_epoch_response:
        # actions._keeps_old_epoch_message (KAFKA-18991): the same leader's Fetch or answer stays r's
        keeps = o.And(s.msgs[r].kind != NO_MESSAGE, rep.role == FOLLOWER, rep.leader == c.leader, new.clen > 0,
                      o.Not(rep.leader_fenced))
        follow = ite(o, keeps, enc.set_replica(s, r, new), follow)
    if enc.mode.follow_on_new_epoch:
        return guard, follow
    unchanged = enc.set_replica(s, r, rep._replace(leader_epoch=c.epoch))     # same leader: nothing to do
    return guard, ite(o, rep.leader == c.leader, unchanged, follow)


def shrink_isr(s: State, rules: Rules, l: int, f: int) -> Optional[State]:
    """The leader drops a follower that has not caught up within replica.lag.time.max.ms (seed 002)
    and writes the new ISR, at the same leader epoch (Partition.maybeShrinkIsr -> updateIsr); only a
    leader in office whose ISR view is current can (the conditional ZooKeeper write). From 2.1 a
    follower at the leader's LEO is never out of sync (Partition.getOutOfSyncReplicas @2.1.0:
    ``leaderEndOffset != logEndOffset``); before, the caught-up time alone decided
    (``getOutOfSyncReplicas @0.10.2.1, @0.11.0.3, @2.0.1``), so a stuck follower (no Fetch within the
    window) left at the leader's LEO too. Then the leader tries to move its HW."""
    rep = s.replicas[l]
    if not (f != l and in_office(s, l) and rep.isr == s.controller.isr and rep.isr >> f & 1):
        return None
    if rules.mode.out_of_sync_below_leo and rep.remote_leo[f] >= rep.leo:
        return None
    isr = rep.isr & ~(1 << f)
    s = _with_controller(_set(s, l, rep._replace(isr=isr)), _with_isr(s.controller, rules, isr))
    return advance_hw(s, l, rules)


def shrink_isr_terms(enc, s, l, f):
    """The z3 twin of ``shrink_isr``: (guard, next state) over the encoding's terms (checker/symbolic.py)."""
    o, rep = enc.o, s.reps[l]
    guard = o.And(in_office_terms(o, s, l), equal(o, rep.isr, s.ctl.isr), rep.isr[f])
    if enc.mode.out_of_sync_below_leo:       # shrink_isr: from 2.1 a follower at the LEO stays
        guard = o.And(guard, rep.remote_leo[f] < rep.leo)
    isr = enc.bit(rep.isr, f, False)
    t = enc.set_replica(s, l, rep._replace(isr=isr))._replace(ctl=enc.with_isr(s.ctl, isr))
    return guard, enc.advance_hw(t, l)


def _maybe_expand_isr(s: State, rules: Rules, l: int, f: int) -> State:
    """While handling f's Fetch, just after taking its fetch offset as f's LEO, the leader adds f to
    the ISR once that LEO has reached its HW (Partition.maybeExpandIsr, called from
    updateReplicaLogReadResult @0.10.2.1 and updateFollowerFetchState @3.9.0: only there, so only
    on the offset of a Fetch the leader is handling, never on one learned long before); from 2.1 also
    the start offset of the leader's epoch (KAFKA-7128). The write is atomic here; from 2.7 it is an
    AlterPartition (AlterIsr) request the controller checks against the partition epoch, which the
    leader's current ISR view stands for. The KRaft controller refuses a fenced broker (KIP-841,
    ReplicationControlManager: INELIGIBLE_REPLICA @3.3.0) and, from KIP-903, a broker epoch other
    than the one the broker registered with (the one this Fetch carried). Refused, nothing changes:
    f's next Fetch tries again."""
    rep, c = s.replicas[l], s.controller
    if not (in_office(s, l) and rep.isr == c.isr and not rep.isr >> f & 1):
        return s
    remote = rep.remote_leo[f]
    if remote < rep.hw:
        return s
    if rules.mode.expand_waits_for_epoch_start and remote < epoch_start(rep.epoch_cache, rep.leader_epoch):
        return s
    if not _isr_eligible(s, rules, l, f):
        return s
    isr = rep.isr | 1 << f
    rep = rep._replace(isr=isr, remote_caught_up=rep.remote_caught_up & ~(1 << f))
    return _with_controller(_set(s, l, rep), _with_isr(c, rules, isr))


def _maybe_expand_isr_terms(enc, s: SState, l: int, f: int) -> SState:
    """The z3 twin of ``_maybe_expand_isr``: the state after the fetch handler's ISR check."""
    o, rep = enc.o, s.reps[l]
    remote = rep.remote_leo[f]
    guard = o.And(in_office_terms(o, s, l), equal(o, rep.isr, s.ctl.isr), o.Not(rep.isr[f]), remote >= rep.hw)
    if enc.mode.expand_waits_for_epoch_start:
        guard = o.And(guard, remote >= enc.epoch_start(rep, rep.leader_epoch))
    guard = o.And(guard, _isr_eligible_terms(enc, s, l, f))     # KIP-841, KIP-903
    isr = enc.bit(rep.isr, f, True)
    joined = rep._replace(isr=isr, remote_caught_up=enc.bit(rep.remote_caught_up, f, False))
    return ite(o, guard, enc.set_replica(s, l, joined)._replace(ctl=enc.with_isr(s.ctl, isr)), s)


# name, function, arity (1: one replica; 2: (leader, follower), or (old leader, new leader))
ACTIONS = (
    ("produce", produce, 1),
    ("send_fetch", send_fetch, 1),
    ("leader_handle_fetch", leader_handle_fetch, 2),
    ("leader_handle_stale_fetch", leader_handle_stale_fetch, 2),
    ("follower_handle_fetch", follower_handle_fetch, 1),
    ("follower_handle_old_response", follower_handle_old_response, 1),
    ("send_epoch_request", send_epoch_request, 1),
    ("leader_handle_epoch_request", leader_handle_epoch_request, 2),
    ("follower_handle_epoch_response", follower_handle_epoch_response, 1),
    ("reject_request", reject_request, 2),
    ("crash", crash, 1),
    ("power_fail", power_fail, 1),
    ("flush", flush, 1),
    ("lose_disk", lose_disk, 1),
    ("restart", restart, 1),
    ("assign_dir", assign_dir, 1),
    ("controlled_shutdown", controlled_shutdown, 1),
    ("controlled_shutdown_leader", controlled_shutdown_leader, 2),
    ("controller_handle_failure", controller_handle_failure, 1),
    ("controller_handle_failure_leader", controller_handle_failure_leader, 2),
    ("session_expire", session_expire, 1),
    ("session_expire_leader", session_expire_leader, 2),
    ("register", register, 1),
    ("elect_offline", elect_offline, 1),
    ("elect_preferred", elect_preferred, 1),
    ("become_leader", become_leader, 1),
    ("become_follower", become_follower, 1),
    ("shrink_isr", shrink_isr, 2),
    ("lag_expires", lag_expires, 2),
)

# name -> the action's z3 twin (checker/symbolic.py Encoding.action); lose_disk and assign_dir have none
# (the z3 engine refuses disk losses: checker/symbolic.py check_covered)
TERMS = {
    "produce": produce_terms,
    "send_fetch": send_fetch_terms,
    "leader_handle_fetch": leader_handle_fetch_terms,
    "leader_handle_stale_fetch": leader_handle_stale_fetch_terms,
    "follower_handle_fetch": follower_handle_fetch_terms,
    "follower_handle_old_response": follower_handle_old_response_terms,
    "send_epoch_request": send_epoch_request_terms,
    "leader_handle_epoch_request": leader_handle_epoch_request_terms,
    "follower_handle_epoch_response": follower_handle_epoch_response_terms,
    "reject_request": reject_request_terms,
    "crash": crash_terms,
    "power_fail": power_fail_terms,
    "flush": flush_terms,
    "restart": restart_terms,
    "controlled_shutdown": controlled_shutdown_terms,
    "controlled_shutdown_leader": controlled_shutdown_leader_terms,
    "controller_handle_failure": controller_handle_failure_terms,
    "controller_handle_failure_leader": controller_handle_failure_leader_terms,
    "session_expire": session_expire_terms,
    "session_expire_leader": session_expire_leader_terms,
    "register": register_terms,
    "elect_offline": elect_offline_terms,
    "elect_preferred": elect_preferred_terms,
    "become_leader": become_leader_terms,
    "become_follower": become_follower_terms,
    "shrink_isr": shrink_isr_terms,
    "lag_expires": lag_expires_terms,
}

# What happens to the brokers rather than what they do: failures and an operator's actions. The
# protocol's own steps (fetches, elections after a failure, ISR changes, restarts) answer these;
# a simulation's swarm (checker/simulate.py) varies how often they happen.
EVENTS = frozenset({"crash", "power_fail", "lose_disk", "controlled_shutdown",
                    "controlled_shutdown_leader", "session_expire", "session_expire_leader", "elect_preferred"})

# ---------------------------------------------------------------- what each guard needs first
#
# Model.successors tries, in a state, only the steps whose guard can hold there. Each entry below
# names conditions an action's guard requires before anything else (a promise about the guard,
# never a rule of its own: tests/test_actions.py checks every entry against the guards over the
# reachable states of every mode). They are read off the state's shape (``shape``): what it spent of
# each fault budget, each replica's (alive, role), and each follower's message slots as (kind,
# leader). A condition names the step's arguments by position (a step ``(l, f)``: 0 is l, 1 is f):
#
# - ``("budget", name)``: some of the fault budget ``name`` is left (a Config knob, counted in History)
# - ``("alive", i)``, ``("down", i)``: replica i runs, or does not
# - ``("role", i, role)``: replica i runs in that role
# - ``("idle", i)``: follower i has no message in flight
# - ``("inflight", i, kinds, j)``, ``("stale", i, kinds, j)``: follower i's in-flight (or abandoned)
#   message is of one of ``kinds``, and, unless j is None, to or from replica j

BUDGETS = ("crashes", "power_failures", "disk_losses")
_ALIVE = (("alive", 0),)
_SPENDS_CRASH = (("budget", "crashes"), ("alive", 0))
NEEDS = {
    "produce": (("role", 0, LEADER),),
    "send_fetch": (("role", 0, FOLLOWER), ("idle", 0)),
    "leader_handle_fetch": (("inflight", 1, (FETCH,), 0),),
    "leader_handle_stale_fetch": (("stale", 1, (FETCH,), 0),),
    "follower_handle_fetch": (("inflight", 0, (FETCH_RESPONSE,), None),),
    "follower_handle_old_response": (("stale", 0, (FETCH_RESPONSE,), None),),
    "send_epoch_request": (("role", 0, FOLLOWER), ("idle", 0)),
    "leader_handle_epoch_request": (("inflight", 1, (EPOCH_REQUEST,), 0),),
    "follower_handle_epoch_response": (("inflight", 0, (EPOCH_RESPONSE,), None),),
    "reject_request": (("inflight", 1, (FETCH, EPOCH_REQUEST), 0),),
    "crash": _SPENDS_CRASH,
    "power_fail": (("budget", "power_failures"), ("alive", 0)),
    "flush": (("budget", "power_failures"), ("alive", 0)),
    "lose_disk": (("budget", "disk_losses"), ("alive", 0)),
    "restart": (("down", 0),),
    "assign_dir": _ALIVE,
    "controlled_shutdown": _SPENDS_CRASH,
    "controlled_shutdown_leader": _SPENDS_CRASH,
    "controller_handle_failure": (("down", 0),),
    "controller_handle_failure_leader": (("down", 0),),
    "session_expire": _SPENDS_CRASH,
    "session_expire_leader": _SPENDS_CRASH,
    "register": _ALIVE,
    "become_leader": _ALIVE,
    "become_follower": _ALIVE,
    "shrink_isr": (("role", 0, LEADER),),
    "lag_expires": (("role", 0, LEADER),),
}

_head = operator.itemgetter(slice(0, 2))   # a Replica's (alive, role); a message's (kind, leader); () of ()
_spent = operator.attrgetter(*BUDGETS)


def shape(s: State) -> tuple:
    """What ``NEEDS`` reads of a state: (spent of each budget, each replica's (alive, role), each
    follower's in-flight and abandoned message as (kind, leader)), a few C calls."""
    return _spent(s.history), tuple(map(_head, s.replicas)), tuple(map(_head, s.inflight)), tuple(map(_head, s.stale))


def may_enable(needs: tuple, shape_: tuple, args: tuple, cfg) -> bool:
    """Whether a state of this shape meets every condition ``needs`` names for the step ``args``."""
    spent, reps, inflight, stale = shape_
    for need in needs:
        what, i = need[0], need[1]
        if what == "budget":
            if spent[BUDGETS.index(i)] >= getattr(cfg, i):
                return False
        elif what == "alive" or what == "down":
            if bool(reps[args[i]][0]) != (what == "alive"):
                return False
        elif what == "role":
            if not (reps[args[i]][0] and reps[args[i]][1] == need[2]):
                return False
        elif what == "idle":
            if inflight[args[i]]:
                return False
        else:                               # "inflight" or "stale"
            msg = (inflight if what == "inflight" else stale)[args[i]]
            if not msg or msg[0] not in need[2] or (need[3] is not None and msg[1] != args[need[3]]):
                return False
    return True


EPOCH_ONLY = {"send_epoch_request", "leader_handle_epoch_request", "follower_handle_epoch_response"}
POWER_ONLY = {"power_fail", "flush"}
OLD_RESPONSE_ONLY = {"follower_handle_old_response"}     # the modes with accept_old_epoch_response
DISK_ONLY = {"lose_disk"}
DIRECTORY_ONLY = {"assign_dir"}           # with disk losses, the modes with directory_assignment
FENCE_ELECTS_ONLY = {"controller_handle_failure_leader", "session_expire_leader"}   # KRaft: mode.fence_elects


def initial_state(rules: Rules) -> State:
    """All logs empty, every replica alive and in the ISR, r0 (the preferred replica) in office as
    leader at epoch 0 and the others following it. r0 knows its followers at LEO 0 (seed 000's
    starting picture: remote LEO = 0); with KAFKA-7415 its epoch cache starts with (0, 0)."""
    n, cfg = rules.n, rules.cfg
    everyone = (1 << n) - 1
    cache = ((0, 0),) if rules.mode.cache_on_become_leader else ()
    known = (UNDEFINED,) + (0,) * (n - 1)
    leader = Replica(1, LEADER, 0, 0, everyone, (), 0, 0, cache, 0, known,
                     known if rules.mode.broker_epochs else (), remote_fetch_leo=(UNDEFINED,) * n, leading_since=0)
    follower = Replica(1, FOLLOWER, 0, 0, 0, (), 0, 0, (), 0, ())
    return State(
        replicas=(leader,) + (follower,) * (n - 1),
        controller=Controller(0, 0, everyone, everyone, (0,) * n if rules.mode.broker_epochs else ()),
        inflight=((),) * n,
        stale=((),) * n,
        history=History(0, (UNDEFINED,) * cfg.records, (), 0, 0,
                        epoch_leader=(PREFERRED,) + (UNDEFINED,) * cfg.max_epoch if rules.history_variables else (),
                        stale_entry=(NO_ENTRY,) * n if rules.history_variables else ()),
    )
