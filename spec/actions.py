"""The protocol's steps: one function each, guard then effect.

Every action takes the current state, the run's ``Rules`` (config + mode) and replica ids, and
returns the next state, or ``None`` when its guard refuses. Rule citations: seed 000 is the
longest article (HW/LEO update rules, the two failure scenarios, leader epoch), seed 001 the
step table and the OffsetsForLeaderEpoch exchange, seed 003 the broker code (acks,
min.insync.replicas, maybeIncrementLeaderHW, fetcher truncation, ISR expansion). Kafka methods are
cited as ``Class.method @tag`` (sources under core/src/main/scala/kafka/ of apache/kafka); where a
rule differs between releases the action reads the mode (spec/modes.py), which cites each release.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

from .config import Config
from .log import append, epoch_start, latest_epoch, truncate
from .modes import FETCHING, TRUNCATING, TRUNCATING_AGAIN, Mode, follower_truncation
from .state import (EPOCH_REQUEST, EPOCH_RESPONSE, FETCH, FETCH_RESPONSE, FOLLOWER, LEADER, NONE, PREFERRED,
                    UNDEFINED, Controller, EpochRequest, EpochResponse, Fetch, FetchResponse, History, Message,
                    Replica, State, in_office)


class Rules(NamedTuple):
    cfg: Config
    mode: Mode
    n: int
    history_variables: bool = False    # keep History.exposed_epoch, .epoch_leader, .stale_entry (proofs only)


# ---------------------------------------------------------------- small state updates

# (the positional constructors below are several times faster than NamedTuple._replace, and
# these helpers run on every step the checker takes)

def _set(s: State, r: int, rep: Replica) -> State:
    return State(s.replicas[:r] + (rep,) + s.replicas[r + 1:], s.controller, s.inflight, s.stale, s.history)


def _send(s: State, f: int, msg: Message) -> State:
    return State(s.replicas, s.controller, s.inflight[:f] + (msg,) + s.inflight[f + 1:], s.stale, s.history)


def _with_controller(s: State, c: Controller) -> State:
    return State(s.replicas, c, s.inflight, s.stale, s.history)


def _size(mask: int) -> int:
    return bin(mask).count("1")


def _with_isr(c: Controller, rules: Rules, isr: int, unclean_shutdown: int = 0) -> Controller:
    """The controller's partition record with a new ISR. With Eligible Leader Replicas (KIP-966)
    also PartitionChangeBuilder.maybePopulateTargetElr: an ISR of at least min.insync.replicas
    clears the ELR; a smaller one adds the members it loses to the ELR, except brokers that came
    back from an unclean shutdown. An ISR that becomes empty records its last leader as the last
    known leader (maybeUpdateLastKnownLeader, ``last_known_elr``)."""
    if not rules.mode.elr:
        return c._replace(isr=isr)
    if _size(isr) >= rules.cfg.min_isr:
        elr = 0
    else:
        elr = (c.elr | c.isr) & ~isr & ~unclean_shutdown
    known = c.last_known_elr
    if not isr and c.isr and c.leader != UNDEFINED:
        known = 1 << c.leader
    return c._replace(isr=isr, elr=elr, last_known_elr=known)


def _lost_memory(rep: Replica) -> Replica:
    """What a stop leaves: log, HW checkpoint and epoch cache on disk; nothing in memory."""
    return Replica(alive=0, role=NONE, leader_epoch=UNDEFINED, leader=UNDEFINED, isr=0, log=rep.log, hw=rep.hw,
                   flushed=rep.flushed, epoch_cache=rep.epoch_cache, truncating=0, remote_leo=(),
                   clean_shutdown=rep.clean_shutdown)


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
        stale = stale[:f] + (msg,) + stale[f + 1:]
    return State(s.replicas, s.controller, s.inflight[:f] + ((),) + s.inflight[f + 1:], stale, s.history)


def _drop_messages_to(s: State, r: int) -> State:
    """Messages to or from a broker that stops are lost: requests waiting at it, responses it
    sent; its own outstanding Fetch outlives it (``_abandon``)."""
    inflight = tuple(() if (m and m.leader == r) else m for m in s.inflight)
    stale = tuple(() if (m and m.leader == r) else m for m in s.stale)
    return _abandon(State(s.replicas, s.controller, inflight, stale, s.history), r)


def advance_hw(s: State, l: int, rules: Rules) -> State:
    """maybeIncrementLeaderHW: leader HW = max(HW, min LEO over its ISR view), using the remote
    LEOs it learned from fetches (seed 000 §四, seed 001: max[Leader HW, min(All LEO)]).

    History: offsets newly below a leader's HW are what a consumer can read; with acks=all a
    record this leader appended in its current epoch is acknowledged once the HW passes it and
    the ISR still has min.insync.replicas members (DelayedProduce)."""
    rep = s.replicas[l]
    if rules.mode.strict_min_isr and _size(rep.isr) < rules.cfg.min_isr:
        return s
    low = rep.leo
    for f in range(rules.n):
        if f != l and rep.isr >> f & 1:
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
            if epoch == rep.leader_epoch and acked[record] == UNDEFINED:
                acked[record] = o
        acked = tuple(acked)
    s = _set(s, l, rep._replace(hw=low))
    return s._replace(history=h._replace(exposed=exposed, acked=acked, exposed_epoch=exposed_epoch))


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
    if not m:
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


def send_fetch(s: State, rules: Rules, f: int) -> Optional[State]:
    """A fetching follower asks its leader for records from its LEO (the fetch offset tells the
    leader the follower's LEO, seed 000 §一.2); the request carries its leader epoch."""
    rep = s.replicas[f]
    if not (rep.alive and rep.role == FOLLOWER and not rep.truncating and not s.inflight[f]
            and s.replicas[rep.leader].alive):
        return None
    if not rules.mode.truncate_on_fetch:
        return _send(s, f, Fetch(FETCH, rep.leader, rep.leader_epoch, rep.leo))
    # 2.8+ (KAFKA-10554): the Fetch also carries the epoch of the follower's last fetched batch, the
    # latest epoch in its cache (ReplicaFetcherThread.buildFetch, PartitionFetchState.lastFetchedEpoch
    # @2.8.0), and from 3.5 its broker epoch (KIP-903: FetchRequest ReplicaState.ReplicaEpoch)
    broker_epoch = s.controller.broker_epochs[f] if rules.mode.broker_epochs else 0
    return _send(s, f, Fetch(FETCH, rep.leader, rep.leader_epoch, rep.leo, latest_epoch(rep.epoch_cache), broker_epoch))


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


OUT_OF_RANGE = (UNDEFINED,)


def _read_for_follower(s: State, rules: Rules, l: int, f: int, msg: Fetch):
    """What the leader does with f's Fetch (Partition.updateReplicaLogReadResult,
    maybeIncrementLeaderHW): the fetch offset becomes f's remote LEO and the HW may move; returns the
    state and the FetchResponse. An offset beyond the leader's LEO gets OFFSET_OUT_OF_RANGE and
    moves nothing. ``response_hw=before`` replies with the HW from before the update (seed 000
    comments 5-17). With truncation on fetch a diverging Fetch is answered with the diverging epoch
    and no records (a lookup without answer: OFFSET_OUT_OF_RANGE), and leaves f's fetch state alone
    (KAFKA-13141, fixed in 2.7.2/2.8.1/3.0.0:
    ReplicaManager.updateFollowerFetchState skips a read result with a diverging epoch); before the
    fix its offset became f's LEO all the same (``diverging_fetch_updates_follower``). From 3.5 the
    Fetch's broker epoch is kept beside the LEO (KIP-903, Partition.updateFollowerFetchState)."""
    leader, mode = s.replicas[l], rules.mode
    offset = msg.fetch_offset
    diverging = _diverging(rules, leader, msg)        # checked before the read (readRecords @2.8.0)
    if diverging == OUT_OF_RANGE or (offset > leader.leo and not diverging):
        return s, _response(l, (), leader.hw, leader.leo, ())
    hw_before = leader.hw
    if not diverging or mode.diverging_fetch_updates_follower:
        remote = leader.remote_leo[:f] + (offset,) + leader.remote_leo[f + 1:]
        leader = leader._replace(remote_leo=remote)
        if mode.broker_epochs:
            epochs = leader.remote_broker_epoch
            leader = leader._replace(remote_broker_epoch=epochs[:f] + (msg.broker_epoch,) + epochs[f + 1:])
        s = advance_hw(_set(s, l, leader), l, rules)
        leader = s.replicas[l]
    hw = hw_before if rules.cfg.response_hw == "before" else leader.hw
    records = () if diverging else leader.log[offset:]
    return s, _response(l, records, hw, leader.leo, diverging)


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


def leader_handle_stale_fetch(s: State, rules: Rules, l: int, f: int) -> Optional[State]:
    """A Fetch that f sent before it stopped or restarted its fetcher reaches the leader anyway: the
    leader cannot tell (a fetch carries no broker epoch before KIP-903; KIP-320 fences only another
    leader epoch) and handles it as any fetch; the response goes nowhere (the connection is gone, or
    f's fetcher ignores it). A request the leader refuses just disappears."""
    msg = s.stale[f]
    if not (msg and msg.leader == l):
        return None
    s = State(s.replicas, s.controller, s.inflight, s.stale[:f] + ((),) + s.stale[f + 1:], s.history)
    if _accepts(rules, s.replicas[l], msg.current_leader_epoch):
        s, _ = _read_for_follower(s, rules, l, f, msg)
    return s


def follower_handle_fetch(s: State, rules: Rules, f: int) -> Optional[State]:
    """The follower appends the records at its LEO, then sets HW = min(LEO, the response's HW)
    (seed 000 §二; seed 001 min(Follower LEO, Leader HW)). A follower beyond the leader's LEO
    (offset out of range) first truncates to the leader's LEO
    (ReplicaFetcherThread.handleOffsetOutOfRange)."""
    msg = s.inflight[f]
    if not (msg and msg.kind == FETCH_RESPONSE):
        return None
    rep, mode = s.replicas[f], rules.mode
    if msg.diverging_epoch != UNDEFINED:
        return _truncate_on_fetch_response(s, rules, f, msg)
    if msg.leader_leo < rep.leo:
        rep = truncate(rep, msg.leader_leo, mode.trim_cache_at_leo)
    rep = append(rep, msg.records, mode.assign)
    return _send(_follower_hw(s, rules, f, rep, msg.hw), f, ())


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


# ---------------------------------------------------------------- faults

def _stop(s: State, r: int, rep: Replica) -> State:
    """The broker stops with ``rep`` on disk; what it had in flight is handled by _drop_messages_to."""
    return _drop_messages_to(_set(s, r, _lost_memory(rep)), r)


def crash(s: State, rules: Rules, r: int) -> Optional[State]:
    """A broker process dies: memory state is lost; log, HW checkpoint and epoch cache stay. The
    controller learns of it only later (controller_handle_failure)."""
    rep = s.replicas[r]
    if not (rep.alive and s.history.crashes < rules.cfg.crashes):
        return None
    s = _stop(s, r, rep)
    return s._replace(history=s.history._replace(crashes=s.history.crashes + 1))


def power_fail(s: State, rules: Rules, r: int) -> Optional[State]:
    """A power failure: as a crash, and the log also falls back to what was flushed (seed 000
    divergence scenario; KIP-101 scenario 2). Once no power failure is left, flushed points can
    no longer matter and are forgotten."""
    rep = s.replicas[r]
    used = s.history.power_failures
    if not (rep.alive and used < rules.cfg.power_failures):
        return None
    s = _stop(s, r, truncate(rep, rep.flushed))
    if used + 1 == rules.cfg.power_failures:
        s = s._replace(replicas=tuple(x._replace(flushed=0) for x in s.replicas))
    return s._replace(history=s.history._replace(power_failures=used + 1))


def flush(s: State, rules: Rules, r: int) -> Optional[State]:
    """The log is flushed to disk up to the LEO (Kafka flushes asynchronously)."""
    rep = s.replicas[r]
    if not (rep.alive and s.history.power_failures < rules.cfg.power_failures and rep.flushed < rep.leo):
        return None
    return _set(s, r, rep._replace(flushed=rep.leo))


def lose_disk(s: State, rules: Rules, r: int) -> Optional[State]:
    """A broker stops and comes back to an empty disk: no log, no HW checkpoint, no epoch cache (a
    replaced disk, or a filesystem that lost what was not flushed: the case KIP-903 and KIP-966
    defend against). It restarts, registers and follows as any restarted broker."""
    rep = s.replicas[r]
    used = s.history.disk_losses
    if not (rep.alive and used < rules.cfg.disk_losses):
        return None
    empty = Replica(0, NONE, UNDEFINED, UNDEFINED, 0, (), 0, 0, (), 0, ())
    s = _stop(s, r, empty)
    return s._replace(history=s.history._replace(disk_losses=used + 1))


def _registered(c: Controller, rules: Rules, r: int, rep: Replica) -> Controller:
    """The controller sees r come up; from KIP-903 it records r's new broker epoch; with ELR a
    broker whose registration reports no clean shutdown leaves the ISR and the ELR
    (ReplicationControlManager.handleBrokerUncleanShutdown @3.9.0, KAFKA-15586)."""
    c = c._replace(live=c.live | 1 << r)
    if rules.mode.broker_epochs:
        c = c._replace(broker_epochs=c.broker_epochs[:r] + (c.broker_epochs[r] + 1,) + c.broker_epochs[r + 1:])
    if rules.mode.elr and not rep.clean_shutdown and (c.isr | c.elr) >> r & 1:
        c = _with_isr(c._replace(elr=c.elr & ~(1 << r)), rules, c.isr & ~(1 << r), unclean_shutdown=1 << r)
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
    rep = truncate(rep, rep.leo, trim_cache_at_leo=True)
    return _with_controller(_set(s, r, rep._replace(alive=1, clean_shutdown=0)), _registered(c, rules, r, rep))


# ---------------------------------------------------------------- controller

def _broker_gone(s: State, rules: Rules, r: int) -> Optional[State]:
    """The controller handles a broker it no longer sees (its ZooKeeper session ended:
    KafkaController.onBrokerFailure -> onReplicasBecomeOffline @2.2.0). If r led, the partition goes
    offline (its election is ``elect_offline``, a step of its own here; the controller writes one
    LeaderAndIsr for both, so this step does not bump the epoch); if r followed in the ISR, it leaves
    the ISR with a new leader epoch (OfflineReplica). None when that epoch is beyond the bound."""
    c = s.controller
    live = c.live & ~(1 << r)
    # the last ISR member stays (OfflineReplica; PartitionChangeBuilder before KIP-966); with ELR
    # the ISR may become empty (KAFKA-15584, PartitionChangeBuilder.build @3.9.0)
    keeps_last = _size(c.isr) == 1 and not rules.mode.elr
    if c.leader == r:
        isr = c.isr if keeps_last else c.isr & ~(1 << r)
        return _with_controller(s, _with_isr(c, rules, isr)._replace(leader=UNDEFINED, live=live))
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


def controller_handle_failure(s: State, rules: Rules, r: int) -> Optional[State]:
    """The controller notices a dead broker once its session times out. Separate from the crash,
    so before KIP-380 a fast restart can win the race."""
    if s.replicas[r].alive or not s.controller.live >> r & 1:
        return None
    return _broker_gone(s, rules, r)


def session_expire(s: State, rules: Rules, r: int) -> Optional[State]:
    """A live broker's ZooKeeper session expires (a long GC pause, a network partition from
    ZooKeeper): the controller handles it as failed while it runs on, still believing what its last
    LeaderAndIsr said, until it registers again (``register``). The fast leader changes of
    KAFKA-6361 start this way. Uses the crash budget."""
    if not (s.replicas[r].alive and s.controller.live >> r & 1 and s.history.crashes < rules.cfg.crashes):
        return None
    s = _broker_gone(s, rules, r)
    return s and s._replace(history=s.history._replace(crashes=s.history.crashes + 1))


def register(s: State, rules: Rules, r: int) -> Optional[State]:
    """A running broker whose session expired registers again; the controller sees it come up
    (KafkaController.onBrokerStartup: it gets the current LeaderAndIsr)."""
    c = s.controller
    if not (s.replicas[r].alive and not c.live >> r & 1):
        return None
    # a running broker registers again: ZooKeeper gives it a new session (broker epoch, unused by
    # the ZooKeeper modes); KRaft unfences it at the epoch it has
    return _with_controller(s, c._replace(live=c.live | 1 << r))


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
    if not c.live >> r & 1:
        return None
    live_isr = c.isr & c.live
    if live_isr >> r & 1:
        isr = live_isr
    elif cfg.unclean_election and not live_isr:
        isr = 1 << r
    else:
        return None
    return _with_controller(s, c._replace(leader=r, epoch=c.epoch + 1, isr=isr))


def _elect_with_elr(s: State, rules: Rules, r: int) -> Optional[State]:
    """PartitionChangeBuilder.electAnyLeader with Eligible Leader Replicas (KIP-966; @3.9.0, the
    code 4.0 ships): a live ISR member; else, with an empty ISR, a live ELR member, which becomes
    the ISR and leaves the ELR; else, with ISR and ELR empty, the last known leader
    (canElectLastKnownLeader), as an unclean election, whether or not unclean election is enabled;
    until KAFKA-19522 (4.1.0) even when that broker is fenced (``elect_fenced_last_leader``: the
    code logs "not alive" and elects it anyway); else an unclean election when enabled. An unclean
    election leaves the new leader alone in the ISR and clears the ELR."""
    c, cfg, mode = s.controller, rules.cfg, rules.mode
    eligible = (c.isr or c.elr) & c.live                 # isValidNewLeader: ISR, or ELR when the ISR is empty
    last_known = (not c.isr and not c.elr and _size(c.last_known_elr) == 1
                  and (c.last_known_elr & c.live or mode.elect_fenced_last_leader))
    bit = 1 << r
    if eligible:
        if not eligible & bit:
            return None
        c = _with_isr(c, rules, c.isr & c.live) if c.isr else c._replace(isr=bit, elr=c.elr & ~bit)
    elif last_known:
        if c.last_known_elr != bit:
            return None
        c = c._replace(isr=bit, elr=0)
    elif cfg.unclean_election and c.live & bit:
        c = c._replace(isr=bit, elr=0)
    else:
        return None
    return _with_controller(s, c._replace(leader=r, epoch=c.epoch + 1, last_known_elr=0))


def elect_preferred(s: State, rules: Rules, r: int) -> Optional[State]:
    """Preferred replica election (auto.leader.rebalance.enable, or an admin's request): the
    assignment's first replica takes over when it is live, in the ISR and not the leader; the ISR
    stays, the epoch moves on (PartitionLeaderElectionAlgorithms.preferredReplicaPartitionLeaderElection
    @2.2.0; PreferredReplicaPartitionLeaderSelector @0.10.2.1)."""
    c = s.controller
    if not (r == PREFERRED and c.leader != r and c.live >> r & 1 and c.isr >> r & 1
            and c.epoch < rules.cfg.max_epoch):
        return None
    return _with_controller(s, c._replace(leader=r, epoch=c.epoch + 1))


def _shutdown_cleanly(s: State, rules: Rules, r: int) -> Optional[State]:
    """A controlled shutdown ends as KafkaServer.shutdown does: ReplicaManager.shutdown(checkpointHW
    = true) and LogManager.shutdown (flushed, clean-shutdown marker), then the broker leaves
    ZooKeeper and the controller handles it as gone (a follower leaves the ISR with a new epoch:
    KafkaController.doControlledShutdown sends StopReplica, then OfflineReplica)."""
    rep = s.replicas[r]
    if s.history.power_failures < rules.cfg.power_failures:    # flushed points matter only while one is left
        rep = rep._replace(flushed=rep.leo)
    if rules.mode.elr:
        rep = rep._replace(clean_shutdown=1)
    s = _broker_gone(_stop(s, r, rep), rules, r)
    return s and s._replace(history=s.history._replace(crashes=s.history.crashes + 1))


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
    return _shutdown_cleanly(s, rules, r)


def controlled_shutdown_leader(s: State, rules: Rules, l: int, r: int) -> Optional[State]:
    """The leader l shuts down cleanly, handing leadership to r, a live ISR member: the controller
    makes r leader with the ISR minus l at a new epoch (controlledShutdownPartitionLeaderElection
    @2.2.0; ControlledShutdownLeaderSelector @0.10.2.1: the first such member in the assignment, here
    any). The LeaderAndIsr reaches l too (0.10.2.1, and again from 2.1 by KAFKA-7482): l applies it
    as follower (before 0.11 that truncates its log to its HW), then stops."""
    c, rep = s.controller, s.replicas[l]
    if not (c.leader == l and rep.alive and c.live >> l & 1 and c.live >> r & 1 and c.isr >> r & 1
            and s.history.crashes < rules.cfg.crashes and c.epoch < rules.cfg.max_epoch):
        return None
    s = _with_controller(s, _with_isr(c, rules, c.isr & ~(1 << l))._replace(leader=r, epoch=c.epoch + 1))
    s = become_follower(s, rules, l)          # always enabled: l's epoch is below the new one
    return s and _shutdown_cleanly(s, rules, l)


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
    rep = rep._replace(role=LEADER, leader_epoch=c.epoch, leader=r, isr=c.isr, truncating=FETCHING,
                       remote_leo=remote, remote_broker_epoch=epochs, epoch_cache=cache)
    s = _abandon(_set(s, r, rep), r)
    return advance_hw(s, r, rules)


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
                       remote_broker_epoch=())
    if not rules.mode.epochs:
        rep = truncate(rep, rep.hw)._replace(truncating=FETCHING)
    elif rules.mode.truncate_on_fetch:
        # 2.8+: fetching from the LEO at once, the Fetch naming the latest epoch (ReplicaManager
        # .initialFetchOffset @2.8.0: the LEO when the log has an epoch, else the HW = the LEO here)
        rep = rep._replace(truncating=FETCHING)
    else:
        rep = rep._replace(truncating=TRUNCATING if rep.epoch_cache else FETCHING)
    return _abandon(_set(s, r, rep), r)


def shrink_isr(s: State, rules: Rules, l: int, f: int) -> Optional[State]:
    """The leader drops a follower that has not caught up (replica.lag.time.max.ms, seed 002) and
    writes the new ISR, at the same leader epoch (Partition.maybeShrinkIsr -> updateIsr); only a
    leader in office whose ISR view is current can (the conditional ZooKeeper write). Then it tries
    to move its HW."""
    rep = s.replicas[l]
    if not (f != l and in_office(s, l) and rep.isr == s.controller.isr and rep.isr >> f & 1):
        return None
    if rep.remote_leo[f] >= rep.leo:
        return None
    isr = rep.isr & ~(1 << f)
    s = _with_controller(_set(s, l, rep._replace(isr=isr)), _with_isr(s.controller, rules, isr))
    return advance_hw(s, l, rules)


def expand_isr(s: State, rules: Rules, l: int, f: int) -> Optional[State]:
    """The leader adds a follower whose LEO has reached its HW (seed 003; Partition.maybeExpandIsr
    @2.0.0), from 2.1 also the start offset of the leader's epoch (KAFKA-7128). The write is atomic
    here; from 2.7 it is an AlterPartition (AlterIsr) request the controller checks against the
    partition epoch, which the leader's current ISR view stands for. The KRaft controller refuses a
    fenced broker (KIP-841, ReplicationControlManager: INELIGIBLE_REPLICA @3.3.0) and, from KIP-903,
    a broker epoch other than the one the broker registered with (the leader sends the epoch its
    last Fetch carried)."""
    rep = s.replicas[l]
    if not (f != l and in_office(s, l) and rep.isr == s.controller.isr and not rep.isr >> f & 1):
        return None
    remote = rep.remote_leo[f]
    if remote == UNDEFINED or remote < rep.hw:
        return None
    if rules.mode.expand_waits_for_epoch_start and remote < epoch_start(rep.epoch_cache, rep.leader_epoch):
        return None
    c = s.controller
    if rules.mode.isr_only_live and not c.live >> f & 1:
        return None
    if rules.mode.broker_epochs and rep.remote_broker_epoch[f] != c.broker_epochs[f]:
        return None
    isr = rep.isr | 1 << f
    return _with_controller(_set(s, l, rep._replace(isr=isr)), _with_isr(c, rules, isr))


# name, function, arity (1: one replica; 2: (leader, follower), or (old leader, new leader))
ACTIONS = (
    ("produce", produce, 1),
    ("send_fetch", send_fetch, 1),
    ("leader_handle_fetch", leader_handle_fetch, 2),
    ("leader_handle_stale_fetch", leader_handle_stale_fetch, 2),
    ("follower_handle_fetch", follower_handle_fetch, 1),
    ("send_epoch_request", send_epoch_request, 1),
    ("leader_handle_epoch_request", leader_handle_epoch_request, 2),
    ("follower_handle_epoch_response", follower_handle_epoch_response, 1),
    ("reject_request", reject_request, 2),
    ("crash", crash, 1),
    ("power_fail", power_fail, 1),
    ("flush", flush, 1),
    ("lose_disk", lose_disk, 1),
    ("restart", restart, 1),
    ("controlled_shutdown", controlled_shutdown, 1),
    ("controlled_shutdown_leader", controlled_shutdown_leader, 2),
    ("controller_handle_failure", controller_handle_failure, 1),
    ("session_expire", session_expire, 1),
    ("register", register, 1),
    ("elect_offline", elect_offline, 1),
    ("elect_preferred", elect_preferred, 1),
    ("become_leader", become_leader, 1),
    ("become_follower", become_follower, 1),
    ("shrink_isr", shrink_isr, 2),
    ("expand_isr", expand_isr, 2),
)

# What happens to the brokers rather than what they do: failures and an operator's actions. The
# protocol's own steps (fetches, elections after a failure, ISR changes, restarts) answer these;
# a simulation's swarm (checker/simulate.py) varies how often they happen.
EVENTS = frozenset({"crash", "power_fail", "lose_disk", "controlled_shutdown",
                    "controlled_shutdown_leader", "session_expire", "elect_preferred"})

EPOCH_ONLY = {"send_epoch_request", "leader_handle_epoch_request", "follower_handle_epoch_response"}
POWER_ONLY = {"power_fail", "flush"}
DISK_ONLY = {"lose_disk"}


def initial_state(rules: Rules) -> State:
    """All logs empty, every replica alive and in the ISR, r0 (the preferred replica) in office as
    leader at epoch 0 and the others following it. r0 knows its followers at LEO 0 (seed 000's
    starting picture: remote LEO = 0); with KAFKA-7415 its epoch cache starts with (0, 0)."""
    n, cfg = rules.n, rules.cfg
    everyone = (1 << n) - 1
    cache = ((0, 0),) if rules.mode.cache_on_become_leader else ()
    known = (UNDEFINED,) + (0,) * (n - 1)
    leader = Replica(1, LEADER, 0, 0, everyone, (), 0, 0, cache, 0, known,
                     known if rules.mode.broker_epochs else ())
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
