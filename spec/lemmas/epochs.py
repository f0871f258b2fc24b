"""Leader epochs and the epoch cache: families epoch-bound (no entry is above its holder's leader
epoch; nobody holds the epoch of a leader that has not taken office) and cache-faithful (the
leader-epoch cache, LeaderEpochFileCache, indexes the log faithfully; an epoch cached with none of
its records was cached by become_leader)."""

from __future__ import annotations

from typing import List

from hwcheck.spec.terms import FETCH_RESPONSE, FOLLOWER, LEADER, NONE, UNDEFINED

from .common import Lemma, implies, in_office, lemma, recordless, sources


def is_leader(o, s, r):
    """r's role is leader."""
    return s.reps[r].role == LEADER


def is_follower(o, s, r):
    """r's role is follower."""
    return s.reps[r].role == FOLLOWER


ROLE_GUARDS = {
    "leader": is_leader,
    "follower": is_follower,
    "in-office": in_office,
}


def epoch_bound(enc, s, r, guard, L):
    """No entry of r's log is above r's leader epoch (under ``guard``: r's role)."""
    o, rep = enc.o, s.reps[r]
    return implies(o, guard(o, s, r), o.And(*[implies(o, j < rep.leo, rep.log[j][1] <= rep.leader_epoch)
                                              for j in range(L)]))


def response_bound(enc, s, f, l, L):
    """A FetchResponse from l, while l leads, carries no entry above l's leader epoch."""
    o, m, rep = enc.o, s.msgs[f], s.reps[l]
    sent = o.And(m.kind == FETCH_RESPONSE, m.leader == l, rep.role == LEADER)
    return implies(o, sent, o.And(*[implies(o, o.And(m.start <= j, j < m.leader_leo), m.recs[j][1] <= rep.leader_epoch)
                                    for j in range(L)]))


def response_to_follower(enc, s, f, L):
    """A FetchResponse carries no entry above the leader epoch of the follower it answers."""
    o, m, rep = enc.o, s.msgs[f], s.reps[f]
    return implies(o, m.kind == FETCH_RESPONSE, o.And(*[implies(o, o.And(m.start <= j, j < m.leader_leo),
                                                                m.recs[j][1] <= rep.leader_epoch) for j in range(L)]))


def not_in_office(enc, s, r):
    """r's leader epoch is below the controller's."""
    return s.reps[r].leader_epoch < s.ctl.epoch


def not_cached(enc, s, r):
    """r's latest cached epoch is below the controller's (from KAFKA-7415, 2.1: makeLeader caches the
    new epoch at the LEO; a crash keeps the cache)."""
    return enc.latest_epoch(s.reps[r]) < s.ctl.epoch


def not_yet_held(enc, s, r, x, pending_guard, cached, C, L):
    """The replica the controller named has not taken office: nobody holds its epoch yet."""
    o, c, rx = enc.o, s.ctl, s.reps[x]
    pending = o.And(c.leader == r, pending_guard(enc, s, r))
    cache = [implies(o, k < rx.clen, rx.epoch_cache[k][0] < c.epoch) for k in range(C)] if cached else []
    return implies(o, pending, o.And(*[implies(o, j < rx.leo, rx.log[j][1] < c.epoch) for j in range(L)],
                                     *cache, o.Or(rx.role != LEADER, rx.leader_epoch < c.epoch)))


def response_not_yet_held(enc, s, r, f, L):
    """While the replica the controller named has not taken office, no FetchResponse carries its epoch."""
    o, c, m = enc.o, s.ctl, s.msgs[f]
    pending = o.And(c.leader == r, s.reps[r].leader_epoch < c.epoch, m.kind == FETCH_RESPONSE)
    return implies(o, pending, o.And(*[implies(o, o.And(m.start <= j, j < m.leader_leo), m.recs[j][1] < c.epoch)
                                       for j in range(L)]))


def cache_below_controller(enc, s, r, C):
    """No cached epoch is above the controller's epoch."""
    o, rep = enc.o, s.reps[r]
    return o.And(*[implies(o, k < rep.clen, rep.epoch_cache[k][0] <= s.ctl.epoch) for k in range(C)])


def cache_starts_in_log(enc, s, r, C):
    """Every cached epoch starts at or below the LEO."""
    o, rep = enc.o, s.reps[r]
    return o.And(*[implies(o, k < rep.clen, rep.epoch_cache[k][1] <= rep.leo) for k in range(C)])


def cache_covers(enc, s, r, C, L):
    """Every entry of the log between a cached epoch's start and the next one's is of that epoch."""
    o, rep = enc.o, s.reps[r]
    cs = []
    for k in range(C):
        for j in range(L):
            nxt_start = rep.epoch_cache[k + 1][1] if k + 1 < C else L + 1
            inside = o.And(k < rep.clen, rep.epoch_cache[k][1] <= j, o.Or(k + 1 >= rep.clen, j < nxt_start), j < rep.leo)
            cs.append(implies(o, inside, rep.log[j][1] == rep.epoch_cache[k][0]))
    return o.And(*cs)


def cache_from_zero(enc, s, r):
    """A non-empty log's cache starts at offset 0."""
    o, rep = enc.o, s.reps[r]
    return implies(o, rep.leo > 0, o.And(rep.clen > 0, rep.epoch_cache[0][1] == 0))


def cache_has_every_epoch(enc, s, r, C, L):
    """The epoch of every entry in the log is cached, starting at or below it."""
    o, rep = enc.o, s.reps[r]
    return o.And(*[implies(o, j < rep.leo, o.Or(*[o.And(k < rep.clen, rep.epoch_cache[k][0] == rep.log[j][1],
                                                        rep.epoch_cache[k][1] <= j) for k in range(C)]))
                   for j in range(L)])


def cached_epoch_of_leader_has_records(enc, s, r, holder, role, C):
    """r caches ``holder``'s epoch only with records of it, while ``holder`` has ``role`` (r did not lead it).

    Only the leader of an epoch caches it before holding one of its records (become_leader assigns
    (epoch, LEO)); another replica caches it on appending one and drops it when truncating below it
    (LeaderEpochFileCache.truncateFromEnd). The epoch: another replica's while it leads, or r's own
    while r follows."""
    o, rep, h = enc.o, s.reps[r], s.reps[holder]
    return implies(o, o.And(h.alive, h.role == role),
                   o.And(*[implies(o, o.And(k < rep.clen, rep.epoch_cache[k][0] == h.leader_epoch), rep.epoch_cache[k][1] < rep.leo)
                           for k in range(C)]))


def recordless_epoch_named_its_holder(enc, s, r, C):
    """An epoch r caches without records, while it is the controller's, names r or no leader.

    The same rule seen from the controller: an epoch cached with none of its records (its start at
    the LEO) was cached by become_leader, so its holder is the one replica the controller named for
    it; while the controller is still at that epoch it names that replica or none (every election
    in spec/actions.py hands out a new leader epoch)."""
    o, rep, c = enc.o, s.reps[r], s.ctl
    return o.And(*[implies(o, o.And(recordless(o, rep, k), rep.epoch_cache[k][0] == c.epoch),
                           o.Or(c.leader == r, c.leader == UNDEFINED)) for k in range(C)])


def recordless_epoch_only_with_a_role(enc, s, r, C):
    """A running replica with no role yet caches no epoch without records.

    A restart drops an epoch cached without records (the Log constructor trims the cache at the LEO)."""
    o, rep = enc.o, s.reps[r]
    return implies(o, o.And(rep.alive, rep.role == NONE),
                   o.And(*[o.Not(recordless(o, rep, k)) for k in range(C)]))


def recordless_epoch_held_once(enc, s, a, b, C):
    """Two replicas never both cache one epoch with none of its records: both would have led it."""
    o, ra, rb = enc.o, s.reps[a], s.reps[b]
    return o.And(*[o.Not(o.And(recordless(o, ra, i), recordless(o, rb, j), ra.epoch_cache[i][0] == rb.epoch_cache[j][0]))
                   for i in range(C) for j in range(C)])


def recordless_epoch_unwritten(enc, s, r, C, L):
    """An epoch cached without records was never written: no log or FetchResponse holds an entry of it.

    Its leader cached it at become_leader and wrote nothing (an entry it wrote and lost went with a
    truncation that dropped the epoch from its cache too). A FetchResponse with records therefore
    never answers a Fetch whose last fetched epoch is one (the sender has no such epoch to validate
    it with)."""
    o, rep = enc.o, s.reps[r]
    return o.And(*[implies(o, o.And(recordless(o, rep, k), present(j)), slots[j][1] != rep.epoch_cache[k][0])
                   for k in range(C) for _, present, slots in sources(enc, s) for j in range(L)])


def cache_latest_above_log(enc, s, r, L):
    """The latest cached epoch is at least the epoch of every entry in the log."""
    o, rep = enc.o, s.reps[r]
    latest = enc.latest_epoch(rep)
    return o.And(*[implies(o, j < rep.leo, rep.log[j][1] <= latest) for j in range(L)])


def cache_latest_below_epoch(enc, s, r, guard):
    """The latest cached epoch is at most r's leader epoch (under ``guard``: r's role)."""
    o, rep = enc.o, s.reps[r]
    return implies(o, guard(o, s, r), enc.latest_epoch(rep) <= rep.leader_epoch)


def cache_latest_is_epoch(enc, s, r, guard):
    """The latest cached epoch is r's leader epoch (under ``guard``: r's role)."""
    o, rep = enc.o, s.reps[r]
    return implies(o, guard(o, s, r), enc.latest_epoch(rep) == rep.leader_epoch)


def epoch_templates(n: int, L: int, C: int, cached: bool) -> List[Lemma]:
    out = []
    for r in range(n):
        for g, guard in ROLE_GUARDS.items():
            out.append(lemma(f"EpochBound[r{r},{g}]", "epoch-bound", epoch_bound, r=r, guard=guard, L=L))
        for l in range(n):
            if l == r:
                continue
            out.append(lemma(f"EpochBound[resp(r{r}) from leader r{l}]", "epoch-bound", response_bound, f=r, l=l, L=L))
        out.append(lemma(f"EpochBound[resp(r{r}) to its follower]", "epoch-bound", response_to_follower, f=r, L=L))
        # the replica the controller named has not taken office: by its leader epoch, or (from
        # KAFKA-7415, 2.1: makeLeader caches the new epoch at the LEO; a crash keeps the cache) by
        # its epoch cache, which still says so after a crash reset its leader epoch
        pending_guards = {"is named but not in office": not_in_office}
        if cached:
            pending_guards["is named and has not cached the epoch"] = not_cached
        for x in range(n):
            for g, pending_guard in pending_guards.items():
                out.append(lemma(f"EpochNotYetHeld[r{x} while r{r} {g}]", "epoch-bound", not_yet_held,
                                 r=r, x=x, pending_guard=pending_guard, cached=cached, C=C, L=L))
            out.append(lemma(f"EpochNotYetHeld[resp(r{x}) while r{r} is named but not in office]", "epoch-bound",
                             response_not_yet_held, r=r, f=x, L=L))
        if not cached:
            continue
        out.append(lemma(f"CacheBelowControllerEpoch[r{r}]", "cache-faithful", cache_below_controller, r=r, C=C))
        out.append(lemma(f"CacheStartsInLog[r{r}]", "cache-faithful", cache_starts_in_log, r=r, C=C))
        out.append(lemma(f"CacheCovers[r{r}]", "cache-faithful", cache_covers, r=r, C=C, L=L))
        out.append(lemma(f"CacheFromZero[r{r}]", "cache-faithful", cache_from_zero, r=r))
        out.append(lemma(f"CacheHasEveryEpoch[r{r}]", "cache-faithful", cache_has_every_epoch, r=r, C=C, L=L))
        # the epoch: another replica's while it leads, or r's own while r follows (r did not lead it)
        not_led = [(f"leader r{l}", l, LEADER) for l in range(n) if l != r] + [("its own epoch as a follower", r, FOLLOWER)]
        for g, holder, role in not_led:
            out.append(lemma(f"CachedEpochOfLeaderHasRecords[r{r}, {g}]", "cache-faithful",
                             cached_epoch_of_leader_has_records, r=r, holder=holder, role=role, C=C))
        out.append(lemma(f"RecordlessEpochNamedItsHolder[r{r}]", "cache-faithful", recordless_epoch_named_its_holder,
                         r=r, C=C))
        out.append(lemma(f"RecordlessEpochOnlyWithARole[r{r}]", "cache-faithful", recordless_epoch_only_with_a_role,
                         r=r, C=C))
        for b in range(r + 1, n):
            out.append(lemma(f"RecordlessEpochHeldOnce[r{r}, r{b}]", "cache-faithful", recordless_epoch_held_once,
                             a=r, b=b, C=C))
        out.append(lemma(f"RecordlessEpochUnwritten[r{r}]", "cache-faithful", recordless_epoch_unwritten, r=r, C=C, L=L))
        out.append(lemma(f"CacheLatestAboveLog[r{r}]", "cache-faithful", cache_latest_above_log, r=r, L=L))
        for g, guard in ROLE_GUARDS.items():
            out.append(lemma(f"CacheLatestBelowEpoch[r{r},{g}]", "cache-faithful", cache_latest_below_epoch,
                             r=r, guard=guard))
            out.append(lemma(f"CacheLatestIsEpoch[r{r},{g}]", "cache-faithful", cache_latest_is_epoch, r=r, guard=guard))
    return out
