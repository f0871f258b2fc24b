"""The protocol's steps: one function each, guard then effect.

Every action takes the current state, the run's ``Rules`` (config + mode) and replica ids, and
returns the next state, or ``None`` when its guard refuses. Rule citations: seed 000 is the
longest article (HW/LEO update rules, the two failure scenarios, leader epoch), seed 001 the
step table and the OffsetsForLeaderEpoch exchange, seed 003 the broker code (acks,
min.insync.replicas, maybeIncrementLeaderHW, fetcher truncation, ISR expansion).
"""

from __future__ import annotations

from typing import NamedTuple, Optional

from .config import Config
from .log import append, cache_assign, epoch_start, latest_epoch, truncate
from .modes import Mode, follower_truncation
from .state import (EPOCH_REQUEST, EPOCH_RESPONSE, FETCH, FETCH_RESPONSE, FOLLOWER, LEADER, NONE,
                    UNDEFINED, Controller, History, Replica, State)


class Rules(NamedTuple):
    cfg: Config
    mode: Mode
    n: int


# ---------------------------------------------------------------- small state updates

# (the positional constructors below are several times faster than NamedTuple._replace, and
# these helpers run on every step the checker takes)

def _set(s: State, r: int, rep: Replica) -> State:
    return State(s.replicas[:r] + (rep,) + s.replicas[r + 1:], s.controller, s.inflight, s.history)


def _send(s: State, f: int, msg: tuple) -> State:
    return State(s.replicas, s.controller, s.inflight[:f] + (msg,) + s.inflight[f + 1:], s.history)


def _size(mask: int) -> int:
    return bin(mask).count("1")


def _in_office(s: State, r: int) -> bool:
    """r leads at the controller's current epoch (role leader, epoch matches)."""
    rep = s.replicas[r]
    return (rep.alive and rep.role == LEADER and s.controller.leader == r
            and rep.leader_epoch == s.controller.epoch)


def _lost_memory(rep: Replica) -> Replica:
    """What a crash leaves: log, HW checkpoint and epoch cache on disk; nothing in memory."""
    return Replica(alive=0, role=NONE, leader_epoch=UNDEFINED, leader=UNDEFINED, isr=0, log=rep.log, hw=rep.hw,
                   flushed=rep.flushed, epoch_cache=rep.epoch_cache, truncating=0, remote_leo=())


def _drop_messages(s: State, r: int) -> State:
    """Messages to or from a crashed replica are lost."""
    inflight = tuple(() if (f == r or (m and m[1] == r)) else m for f, m in enumerate(s.inflight))
    return State(s.replicas, s.controller, inflight, s.history)


def advance_hw(s: State, l: int, rules: Rules) -> State:
    """maybeIncrementLeaderHW: leader HW = max(HW, min LEO over its ISR view), using the remote
    LEOs it learned from fetches (seed 000 §四, seed 001: max[Leader HW, min(All LEO)]).

    History: offsets newly below a leader's HW are what a consumer can read; with acks=all a
    record this leader appended in its current epoch is acknowledged once the HW passes it and
    the ISR still has min.insync.replicas members (DelayedProduce)."""
    rep = s.replicas[l]
    low = rep.leo
    for f in range(rules.n):
        if f != l and rep.isr >> f & 1:
            low = min(low, rep.remote_leo[f])
    if low <= rep.hw:
        return s
    h = s.history
    exposed = h.exposed + tuple(rep.log[o][0] for o in range(len(h.exposed), low))
    acked = h.acked
    if rules.cfg.acks == "all" and _size(rep.isr) >= rules.cfg.min_isr:
        acked = list(acked)
        for o in range(rep.hw, low):
            record, epoch = rep.log[o]
            if epoch == rep.leader_epoch and acked[record] == UNDEFINED:
                acked[record] = o
        acked = tuple(acked)
    s = _set(s, l, rep._replace(hw=low))
    return s._replace(history=h._replace(exposed=exposed, acked=acked))


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
    # the append assigns the epoch to the cache: before KAFKA-7415 this is where a leader's
    # epoch gains its entry (its first write in the epoch)
    rep = append(rep, ((record, rep.leader_epoch),), rules.mode.epochs)
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
    return _send(s, f, (FETCH, rep.leader, rep.leader_epoch, rep.leo))


def _accepts(rules: Rules, leader: Replica, request_epoch: int) -> bool:
    """A replica answers a replication request only as leader; with KIP-320 fencing only when
    the request's current leader epoch equals its own (else FENCED/UNKNOWN_LEADER_EPOCH)."""
    if not (leader.alive and leader.role == LEADER):
        return False
    return not rules.mode.fenced or request_epoch == leader.leader_epoch


def leader_handle_fetch(s: State, rules: Rules, l: int, f: int) -> Optional[State]:
    """The leader records the follower's fetch offset as its remote LEO, tries to move its HW,
    and replies with the records from the fetch offset and its HW (seed 000 steps 1-4).
    ``response_hw=before`` replies with the HW from before the update (seed 000 comments 5-17).
    A fetch offset beyond the leader's LEO gets OFFSET_OUT_OF_RANGE and moves nothing."""
    msg = s.inflight[f]
    if not (msg and msg[0] == FETCH and msg[1] == l):
        return None
    leader = s.replicas[l]
    if not _accepts(rules, leader, msg[2]):
        return None
    offset = msg[3]
    if offset > leader.leo:
        return _send(s, f, (FETCH_RESPONSE, l, (), leader.hw, leader.leo))
    hw_before = leader.hw
    remote = leader.remote_leo[:f] + (offset,) + leader.remote_leo[f + 1:]
    s = advance_hw(_set(s, l, leader._replace(remote_leo=remote)), l, rules)
    leader = s.replicas[l]
    hw = hw_before if rules.cfg.response_hw == "before" else leader.hw
    return _send(s, f, (FETCH_RESPONSE, l, leader.log[offset:], hw, leader.leo))


def follower_handle_fetch(s: State, rules: Rules, f: int) -> Optional[State]:
    """The follower appends the records at its LEO, then sets HW = min(LEO, the response's HW)
    (seed 000 §二; seed 001 min(Follower LEO, Leader HW)). A follower beyond the leader's LEO
    (offset out of range) first truncates to the leader's LEO."""
    msg = s.inflight[f]
    if not (msg and msg[0] == FETCH_RESPONSE):
        return None
    _, _, records, hw, leader_leo = msg
    rep = s.replicas[f]
    if leader_leo < rep.leo:
        rep = truncate(rep, leader_leo)
    rep = append(rep, records, rules.mode.epochs)
    rep = rep._replace(hw=min(rep.leo, hw))
    return _send(_set(s, f, rep), f, ())


def reject_request(s: State, rules: Rules, l: int, f: int) -> Optional[State]:
    """A request reaches a replica that is not leader (NOT_LEADER_OR_FOLLOWER) or, with KIP-320,
    carries another leader epoch (FENCED/UNKNOWN_LEADER_EPOCH): the follower gets an error and
    nothing else changes; it may ask again."""
    msg = s.inflight[f]
    if not (msg and msg[0] in (FETCH, EPOCH_REQUEST) and msg[1] == l):
        return None
    if _accepts(rules, s.replicas[l], msg[2]):
        return None
    return _send(s, f, ())


# ---------------------------------------------------------------- OffsetsForLeaderEpoch

def send_epoch_request(s: State, rules: Rules, f: int) -> Optional[State]:
    """A truncating follower asks its leader where its latest epoch ends (KIP-101; seed 001
    LeaderEpochRequest); with KIP-320 the request also carries its current leader epoch."""
    rep = s.replicas[f]
    if not (rep.alive and rep.role == FOLLOWER and rep.truncating and not s.inflight[f]
            and s.replicas[rep.leader].alive):
        return None
    return _send(s, f, (EPOCH_REQUEST, rep.leader, rep.leader_epoch, latest_epoch(rep.epoch_cache)))


def leader_handle_epoch_request(s: State, rules: Rules, l: int, f: int) -> Optional[State]:
    """The leader answers from its epoch cache, as the mode says (KIP-101 / KIP-279)."""
    msg = s.inflight[f]
    if not (msg and msg[0] == EPOCH_REQUEST and msg[1] == l):
        return None
    leader = s.replicas[l]
    if not _accepts(rules, leader, msg[2]):
        return None
    epoch, end = rules.mode.leader_answer(leader.epoch_cache, leader.leo, msg[3])
    return _send(s, f, (EPOCH_RESPONSE, l, epoch, end))


def follower_handle_epoch_response(s: State, rules: Rules, f: int) -> Optional[State]:
    """The follower truncates to the divergence point; it fetches once truncation is complete,
    else asks again for its (now lower) latest epoch (KIP-279)."""
    msg = s.inflight[f]
    if not (msg and msg[0] == EPOCH_RESPONSE):
        return None
    rep = s.replicas[f]
    offset, done = follower_truncation(rep, (msg[2], msg[3]))
    rep = truncate(rep, offset)._replace(truncating=0 if done else 1)
    return _send(_set(s, f, rep), f, ())


# ---------------------------------------------------------------- faults

def crash(s: State, rules: Rules, r: int) -> Optional[State]:
    """A broker process dies: memory state is lost; log, HW checkpoint and epoch cache stay."""
    rep = s.replicas[r]
    if not (rep.alive and s.history.crashes < rules.cfg.crashes):
        return None
    s = _drop_messages(_set(s, r, _lost_memory(rep)), r)
    return s._replace(history=s.history._replace(crashes=s.history.crashes + 1))


def power_fail(s: State, rules: Rules, r: int) -> Optional[State]:
    """A power failure: as a crash, and the log also falls back to what was flushed (seed 000
    divergence scenario; KIP-101 scenario 2). Once no power failure is left, flushed points can
    no longer matter and are forgotten."""
    rep = s.replicas[r]
    used = s.history.power_failures
    if not (rep.alive and used < rules.cfg.power_failures):
        return None
    s = _drop_messages(_set(s, r, _lost_memory(truncate(rep, rep.flushed))), r)
    if used + 1 == rules.cfg.power_failures:
        s = s._replace(replicas=tuple(x._replace(flushed=0) for x in s.replicas))
    return s._replace(history=s.history._replace(power_failures=used + 1))


def flush(s: State, rules: Rules, r: int) -> Optional[State]:
    """The log is flushed to disk up to the LEO (Kafka flushes asynchronously)."""
    rep = s.replicas[r]
    if not (rep.alive and s.history.power_failures < rules.cfg.power_failures and rep.flushed < rep.leo):
        return None
    return _set(s, r, rep._replace(flushed=rep.leo))


def restart(s: State, rules: Rules, r: int) -> Optional[State]:
    """A broker comes back with log, HW and epoch cache from disk and waits for LeaderAndIsr.
    Before 0.11 it truncates to its HW right away (seeds 000/001: restart, truncate to HW).
    With KIP-380 the controller has handled its failure first (no missed bounce)."""
    rep = s.replicas[r]
    if rep.alive:
        return None
    if rules.mode.restart_after_detection and _failure_unhandled(s, r):
        return None
    rep = rep._replace(alive=1)
    if not rules.mode.epochs:
        rep = truncate(rep, rep.hw)
    return _set(s, r, rep)


# ---------------------------------------------------------------- controller

def _failure_unhandled(s: State, r: int) -> bool:
    """The controller still counts r as leader, or as an ISR member it could drop."""
    c = s.controller
    return c.leader == r or (c.isr >> r & 1 and _size(c.isr) > 1)


def controller_detect_failure(s: State, rules: Rules, r: int) -> Optional[State]:
    """The controller notices a dead broker: drops it from the ISR (never emptying it) and, if it
    led, leaves the partition without a leader. Separate from crash: before KIP-380 a fast restart
    can win."""
    c = s.controller
    if s.replicas[r].alive or not _failure_unhandled(s, r):
        return None
    isr = c.isr & ~(1 << r) if _size(c.isr) > 1 else c.isr
    leader = UNDEFINED if c.leader == r else c.leader
    return s._replace(controller=c._replace(leader=leader, isr=isr))


def elect(s: State, rules: Rules, r: int) -> Optional[State]:
    """The controller makes a live ISR member leader at epoch + 1 (seed 002: only ISR members may
    be elected). Allowed while the old leader lives (controlled shutdown, preferred leader): the
    epoch bound limits it. Unclean election: any live replica when no ISR member is alive; the
    ISR becomes just the new leader."""
    c, cfg = s.controller, rules.cfg
    rep = s.replicas[r]
    if not (rep.alive and c.epoch < cfg.max_epoch and c.leader != r):
        return None
    isr = c.isr
    if not isr >> r & 1:
        live_isr = any(s.replicas[x].alive for x in range(rules.n) if isr >> x & 1)
        if not cfg.unclean_election or live_isr:
            return None
        isr = 1 << r
    return s._replace(controller=c._replace(leader=r, epoch=c.epoch + 1, isr=isr))


def become_leader(s: State, rules: Rules, r: int) -> Optional[State]:
    """r applies the controller's LeaderAndIsr naming it leader. A new term resets the remote
    LEOs to unknown, stops its fetcher and (KAFKA-7415, epoch mode) adds (epoch, LEO) to its epoch
    cache; in the same term only the ISR view is refreshed. Then it tries to move its HW."""
    c, rep = s.controller, s.replicas[r]
    if not (rep.alive and c.leader == r):
        return None
    new_term = rep.role != LEADER or rep.leader_epoch != c.epoch
    if not new_term and rep.isr == c.isr:
        return None
    if new_term:
        cache = rep.epoch_cache
        if rules.mode.cache_on_become_leader:
            cache = cache_assign(cache, c.epoch, rep.leo)
        rep = rep._replace(role=LEADER, leader_epoch=c.epoch, leader=r, truncating=0,
                           remote_leo=(UNDEFINED,) * rules.n, epoch_cache=cache)
        s = _send(s, r, ())
    s = _set(s, r, rep._replace(isr=c.isr))
    return advance_hw(s, r, rules)


def become_follower(s: State, rules: Rules, r: int) -> Optional[State]:
    """r applies the controller's LeaderAndIsr naming another leader and restarts its fetcher.
    Before 0.11 it truncates to its HW (seed 000); with epochs it first finds its divergence point
    with OffsetsForLeaderEpoch, unless it has no epoch yet (then it truncates to its HW)."""
    c, rep = s.controller, s.replicas[r]
    if not (rep.alive and c.leader not in (UNDEFINED, r)):
        return None
    if rep.role == FOLLOWER and rep.leader_epoch == c.epoch and rep.leader == c.leader:
        return None
    rep = rep._replace(role=FOLLOWER, leader_epoch=c.epoch, leader=c.leader, isr=0, remote_leo=())
    if rules.mode.epochs and rep.epoch_cache:
        rep = rep._replace(truncating=1)
    else:
        rep = truncate(rep, rep.hw)._replace(truncating=0)
    return _send(_set(s, r, rep), r, ())


def shrink_isr(s: State, rules: Rules, l: int, f: int) -> Optional[State]:
    """The leader drops a follower that has not caught up (replica.lag.time.max.ms, seed 002) and
    writes the new ISR to the controller; only a leader in office whose ISR view is current can
    (the conditional ZooKeeper / AlterPartition write). Then it tries to move its HW."""
    rep = s.replicas[l]
    if not (f != l and _in_office(s, l) and rep.isr == s.controller.isr and rep.isr >> f & 1):
        return None
    if rep.remote_leo[f] >= rep.leo:
        return None
    isr = rep.isr & ~(1 << f)
    s = _set(s, l, rep._replace(isr=isr))._replace(controller=s.controller._replace(isr=isr))
    return advance_hw(s, l, rules)


def expand_isr(s: State, rules: Rules, l: int, f: int) -> Optional[State]:
    """The leader adds a follower whose LEO has reached its HW (seed 003 maybeExpandIsr); with
    KIP-320 also the start offset of the leader's current epoch."""
    rep = s.replicas[l]
    if not (f != l and _in_office(s, l) and rep.isr == s.controller.isr and not rep.isr >> f & 1):
        return None
    remote = rep.remote_leo[f]
    if remote == UNDEFINED or remote < rep.hw:
        return None
    if rules.mode.expand_waits_for_epoch_start and remote < epoch_start(rep.epoch_cache, rep.leader_epoch):
        return None
    isr = rep.isr | 1 << f
    return _set(s, l, rep._replace(isr=isr))._replace(controller=s.controller._replace(isr=isr))


# name, function, arity (1: one replica; 2: (leader, follower)), which runs have it
ACTIONS = (
    ("produce", produce, 1),
    ("send_fetch", send_fetch, 1),
    ("leader_handle_fetch", leader_handle_fetch, 2),
    ("follower_handle_fetch", follower_handle_fetch, 1),
    ("send_epoch_request", send_epoch_request, 1),
    ("leader_handle_epoch_request", leader_handle_epoch_request, 2),
    ("follower_handle_epoch_response", follower_handle_epoch_response, 1),
    ("reject_request", reject_request, 2),
    ("crash", crash, 1),
    ("power_fail", power_fail, 1),
    ("flush", flush, 1),
    ("restart", restart, 1),
    ("controller_detect_failure", controller_detect_failure, 1),
    ("elect", elect, 1),
    ("become_leader", become_leader, 1),
    ("become_follower", become_follower, 1),
    ("shrink_isr", shrink_isr, 2),
    ("expand_isr", expand_isr, 2),
)

EPOCH_ONLY = {"send_epoch_request", "leader_handle_epoch_request", "follower_handle_epoch_response"}
POWER_ONLY = {"power_fail", "flush"}


def initial_state(rules: Rules) -> State:
    """All logs empty, every replica alive and in the ISR, r0 in office as leader at epoch 0
    and the others following it. r0 knows its followers at LEO 0 (seed 000's starting picture:
    remote LEO = 0); with KAFKA-7415 its epoch cache starts with (0, 0)."""
    n, cfg = rules.n, rules.cfg
    everyone = (1 << n) - 1
    cache = ((0, 0),) if rules.mode.cache_on_become_leader else ()
    leader = Replica(1, LEADER, 0, 0, everyone, (), 0, 0, cache, 0,
                     (UNDEFINED,) + (0,) * (n - 1))
    follower = Replica(1, FOLLOWER, 0, 0, 0, (), 0, 0, (), 0, ())
    return State(
        replicas=(leader,) + (follower,) * (n - 1),
        controller=Controller(0, 0, everyone),
        inflight=((),) * n,
        history=History(0, (UNDEFINED,) * cfg.records, (), 0, 0),
    )
