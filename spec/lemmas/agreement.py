"""Family prefix-agreement: where two logs agree, and what requests and answers in flight say of it.

Below a replica's HW its log agrees with a leader's (or an ISR member's); a leader's ISR members
and the followers whose LEO it knows hold its log up to its HW and those LEOs; a follower at its
leader's epoch is a prefix of the leader's log, and so is what its Fetch (in flight or stale) asks
after. The lemmas over a Fetch's last fetched epoch only with truncation on fetch, those over epoch
caches only where a cache is written."""

from __future__ import annotations

from typing import List

from hwcheck.spec.actions import _diverging_terms
from hwcheck.spec.terms import (EPOCH_RESPONSE, FETCH, FETCH_RESPONSE, FETCHING, FOLLOWER, NONE, UNDEFINED,
                                latest_cached_epoch)

from .common import Lemma, agreement, implies, in_flight, in_office, leads, lemma, stale


# ---------------------------------------------------------------- below the HW, in the ISR

def b_in_office(o, s, b):
    """b leads, named by the controller, at the controller's epoch."""
    return in_office(o, s, b)


def b_leads(o, s, b):
    """b is up and believes it leads."""
    return leads(o, s.reps[b])


def b_named(o, s, b):
    """The controller names b leader."""
    return s.ctl.leader == b


def b_in_isr(o, s, b):
    """b is in the controller's ISR."""
    return s.ctl.isr[b]


GUARDS = {
    "b in office": b_in_office,
    "b leads": b_leads,
    "b named by the controller": b_named,
    "b in the controller's ISR": b_in_isr,
}


def in_leaders_isr(s, b, a):
    """a is in leader b's ISR view."""
    return s.reps[b].isr[a]


def in_controllers_isr(s, b, a):
    """a is in the controller's ISR."""
    return s.ctl.isr[a]


VIEWS = (("leader's ISR", in_leaders_isr), ("controller's ISR", in_controllers_isr))


def prefix_agrees(enc, s, a, b, guard, L):
    """Below a's HW, a's log agrees with b's (under ``guard``: b leads, is in office, named or in the ISR)."""
    o = enc.o
    return implies(o, guard(o, s, b), agreement(o, s.reps[a], s.reps[b], s.reps[a].hw, L))


def isr_holds_leader_hw(enc, s, a, b, view, L):
    """An ISR member holds its leader's log below the leader's HW."""
    o, lb = enc.o, s.reps[b]
    return implies(o, o.And(leads(o, lb), view(s, b, a)),
                   agreement(o, lb, s.reps[a], lb.hw, L))


def remote_leo_held(enc, s, a, b, view, L):
    """An ISR member holds its leader's log below the LEO the leader has for it (and has that LEO)."""
    o, lb = enc.o, s.reps[b]
    return implies(o, o.And(leads(o, lb), view(s, b, a)),
                   o.And(lb.remote_leo[a] <= s.reps[a].leo,
                         agreement(o, lb, s.reps[a], lb.remote_leo[a], L)))


# ---------------------------------------------------------------- a follower and its leader

def not_ahead(o, s, a, b):
    """a's leader epoch is at most b's."""
    return s.reps[a].leader_epoch <= s.reps[b].leader_epoch


def at_its_epoch_or_down(o, s, a, b):
    """a is at b's leader epoch, or has no role."""
    return o.Or(s.reps[a].leader_epoch == s.reps[b].leader_epoch, s.reps[a].role == NONE)


def in_any_role(o, s, a, b):
    """No guard."""
    return True


REMOTE_GUARDS = (("not ahead of it", not_ahead), ("at its epoch or down", at_its_epoch_or_down),
                 # KRaft: a leader keeps its followers' LEOs across its own new epoch (makeLeader,
                 # isNewLeader false), when they may have moved on first
                 ("in any role", in_any_role))


def remote_leo_known(enc, s, a, b, guard, L):
    """A follower holds its leader's log below the LEO the leader knows for it, and has at least that LEO."""
    o, lb, ra = enc.o, s.reps[b], s.reps[a]
    known = o.And(leads(o, lb), lb.remote_leo[a] != UNDEFINED, guard(o, s, a, b))
    return implies(o, known, o.And(lb.remote_leo[a] <= ra.leo, agreement(o, lb, ra, lb.remote_leo[a], L)))


def follows(o, s, a, b):
    """a follows leader b at b's epoch."""
    ra, rb = s.reps[a], s.reps[b]
    return o.And(ra.alive, ra.role == FOLLOWER, ra.leader == b, leads(o, rb),
                 ra.leader_epoch == rb.leader_epoch)


def fetching(o, s, a):
    """a is fetching (not truncating)."""
    return s.reps[a].truncating == FETCHING


def any_state(o, s, a):
    """No guard."""
    return True


def follower_is_prefix(enc, s, a, b, extra, L):
    """A follower at its leader's epoch holds a prefix of the leader's log."""
    o, ra, rb = enc.o, s.reps[a], s.reps[b]
    return implies(o, o.And(follows(o, s, a, b), extra(o, s, a)),
                   o.And(ra.leo <= rb.leo, agreement(o, ra, rb, ra.leo, L)))


def fetch_is_prefix(enc, s, a, b, L):
    """A Fetch to the leader of its epoch asks from an offset the leader has, and agrees with the leader below it."""
    o, m, ra, rb = enc.o, s.msgs[a], s.reps[a], s.reps[b]
    asked = o.And(m.kind == FETCH, m.leader == b, leads(o, rb), rb.leader_epoch == m.current_leader_epoch)
    return implies(o, asked, o.And(m.fetch_offset <= rb.leo, agreement(o, ra, rb, m.fetch_offset, L)))


def response_extends_prefix(enc, s, a, b, L):
    """A FetchResponse from the leader at the follower's epoch starts where the follower agrees with the leader."""
    o, m, ra, rb = enc.o, s.msgs[a], s.reps[a], s.reps[b]
    sent = o.And(m.kind == FETCH_RESPONSE, m.leader == b, leads(o, rb), rb.leader_epoch == ra.leader_epoch)
    return implies(o, sent, o.And(m.leader_leo <= rb.leo, agreement(o, ra, rb, m.start, L)))


def validated_fetch_is_prefix(enc, s, a, b, message, L):
    """A Fetch the leader of its epoch validates asks for an offset both have, below which they agree.

    Truncation on fetch: its last fetched epoch ends at or past the fetch offset in the leader's
    log (Partition.fetchRecords); the follower's log grew since, if anything."""
    o, m, ra, rb = enc.o, message(s, a), s.reps[a], s.reps[b]
    out_of_range, diverging, _, _ = _diverging_terms(enc, rb, m)
    asked = o.And(m.kind == FETCH, m.leader == b, leads(o, rb), rb.leader_epoch == m.current_leader_epoch,
                  o.Not(out_of_range), o.Not(diverging))
    return implies(o, asked, o.And(m.fetch_offset <= rb.leo, m.fetch_offset <= ra.leo,
                                   agreement(o, ra, rb, m.fetch_offset, L)))


def last_fetched_epoch_held(enc, s, a, b, message):
    """While the leader of a Fetch's last fetched epoch leads at it, its entry below the fetch offset is of that epoch.

    The last fetched epoch came with records from that epoch's leader (a follower caches an epoch
    only by appending its records)."""
    o, m, rb = enc.o, message(s, a), s.reps[b]
    named = o.And(m.kind == FETCH, m.last_fetched_epoch != UNDEFINED, m.fetch_offset > 0, leads(o, rb),
                  rb.leader_epoch == m.last_fetched_epoch)
    return implies(o, named, o.And(m.fetch_offset <= rb.leo,
                                   o.select([e[1] for e in rb.log], m.fetch_offset - 1) == m.last_fetched_epoch))


def always(o, s, a, m):
    """No guard."""
    return True


def sender_at_its_epoch(o, s, a, m):
    """a is still at the epoch of its stale Fetch ``m``."""
    return s.reps[a].leader_epoch == m.current_leader_epoch


STALE_GUARDS = (("always", always), ("sender at its epoch", sender_at_its_epoch))


def stale_fetch_within(enc, s, a, b, extra):
    """A stale Fetch to the leader of its epoch asks from an offset the leader has."""
    o, m, rb = enc.o, s.stale[a], s.reps[b]
    asked = o.And(m.kind == FETCH, m.leader == b, leads(o, rb), rb.leader_epoch == m.current_leader_epoch,
                  extra(o, s, a, m))
    return implies(o, asked, m.fetch_offset <= rb.leo)


def stale_fetch_is_prefix(enc, s, a, b, extra, L):
    """Below a stale Fetch's offset its sender still agrees with the leader of the Fetch's epoch."""
    o, m, ra, rb = enc.o, s.stale[a], s.reps[a], s.reps[b]
    asked = o.And(m.kind == FETCH, m.leader == b, leads(o, rb), rb.leader_epoch == m.current_leader_epoch,
                  extra(o, s, a, m))
    return implies(o, asked, o.And(m.fetch_offset <= ra.leo, agreement(o, ra, rb, m.fetch_offset, L)))


# ---------------------------------------------------------------- a stale Fetch's sender (truncation on fetch)

def stale_fetch_still_held(enc, s, a):
    """While no cache holds a stale Fetch's epoch, its sender still holds what the Fetch asked after.

    A follower truncates only on an answer from the leader of its epoch, and a leader caches its
    epoch when it takes office: while no cache holds the epoch of a's stale Fetch (or a newer one),
    a still holds the offsets it asked after, up to the last fetched epoch (its latest cached epoch
    then, at or above every epoch in its log)."""
    o, m, ra = enc.o, s.stale[a], s.reps[a]
    quiet = o.And(m.kind == FETCH, m.last_fetched_epoch != UNDEFINED, m.fetch_offset > 0,
                  *[latest_cached_epoch(o, x) < m.current_leader_epoch for x in s.reps])
    return implies(o, quiet, o.And(m.fetch_offset <= ra.leo,
                                   o.select([e[1] for e in ra.log], m.fetch_offset - 1) <= m.last_fetched_epoch))


def validates_stale_fetch(enc, o, m, x):
    """x, if its latest cached epoch is the stale Fetch ``m``'s epoch, validates m (endOffsetFor)."""
    e, end = enc.end_offset_for(x.epoch_cache, x.clen, x.leo, m.last_fetched_epoch)
    return implies(o, latest_cached_epoch(o, x) == m.current_leader_epoch,
                   o.And(e == m.last_fetched_epoch, end >= m.fetch_offset))


def stale_fetch_still_held_validated(enc, s, a):
    """As StaleFetchStillHeld, also after the Fetch's leader took office, while every cache of its epoch validates it.

    That leader truncates a only where a's log leaves its own, and every replica that caches that
    epoch (and none a newer one) agrees with what the Fetch claims (endOffsetFor)."""
    o, m, ra = enc.o, s.stale[a], s.reps[a]
    quiet = o.And(m.kind == FETCH, m.last_fetched_epoch != UNDEFINED, m.fetch_offset > 0,
                  *[o.And(latest_cached_epoch(o, x) <= m.current_leader_epoch, validates_stale_fetch(enc, o, m, x))
                    for x in s.reps])
    return implies(o, quiet, o.And(m.fetch_offset <= ra.leo,
                                   o.select([e[1] for e in ra.log], m.fetch_offset - 1) <= m.last_fetched_epoch))


def stale_fetch_held(a: int) -> List[Lemma]:
    """(truncation on fetch) What a's stale Fetch still says of a's log."""
    return [lemma(f"StaleFetchStillHeld[stale(r{a})]", "prefix-agreement", stale_fetch_still_held, a=a),
            lemma(f"StaleFetchStillHeld[stale(r{a}), its epoch's caches validate it]", "prefix-agreement",
                  stale_fetch_still_held_validated, a=a)]


# ---------------------------------------------------------------- the epoch an answer reaches

def answered_epoch_cached(enc, s, a):
    """While an answer is in flight to a follower, some cache holds the follower's epoch (or a newer one).

    An answer reaches a follower only from the leader of its epoch, which cached that epoch when it
    took office; a cache loses its latest epoch only by truncating to a newer leader's log, whose
    cache holds a newer one."""
    o, m, ra = enc.o, s.msgs[a], s.reps[a]
    answered = o.Or(m.kind == FETCH_RESPONSE, m.kind == EPOCH_RESPONSE)
    return implies(o, answered, o.Or(*[latest_cached_epoch(o, x) >= ra.leader_epoch for x in s.reps]))


def sender_caches_epoch(enc, s, a):
    """The sender of an answer in flight still caches the follower's epoch, unless a cache holds a newer one.

    It still caches it unless it truncated to a newer leader, and then a cache holds a newer epoch."""
    o, m, ra = enc.o, s.msgs[a], s.reps[a]
    answered = o.Or(m.kind == FETCH_RESPONSE, m.kind == EPOCH_RESPONSE)
    sender = o.Or(*[o.And(m.leader == x, latest_cached_epoch(o, rx) >= ra.leader_epoch) for x, rx in enumerate(s.reps)])
    newer = o.Or(*[latest_cached_epoch(o, x) > ra.leader_epoch for x in s.reps])
    return implies(o, answered, o.Or(sender, newer))


def answered_epoch_cached_templates(a: int) -> List[Lemma]:
    """Who still caches the epoch of a follower that an answer in flight reaches."""
    return [lemma(f"AnsweredEpochCached[resp(r{a})]", "prefix-agreement", answered_epoch_cached, a=a),
            lemma(f"AnsweredEpochCached[resp(r{a}), by its sender]", "prefix-agreement", sender_caches_epoch, a=a)]


def agreement_templates(n: int, L: int, cached: bool, on_fetch: bool) -> List[Lemma]:
    """Prefix agreement between logs, and what requests and answers in flight say of it; the
    lemmas over a Fetch's last fetched epoch only with truncation on fetch (``on_fetch``), those
    over epoch caches only where a cache is written (``cached``)."""
    out = []
    for a in range(n):
        for b in range(n):
            if a == b:
                continue
            for g, guard in GUARDS.items():
                out.append(lemma(f"PrefixAgrees[r{a} below its HW, r{b}; {g}]", "prefix-agreement", prefix_agrees,
                                 a=a, b=b, guard=guard, L=L))
            for g, view in VIEWS:
                out.append(lemma(f"IsrHoldsLeaderHw[r{a} in r{b}'s {g}]", "prefix-agreement", isr_holds_leader_hw,
                                 a=a, b=b, view=view, L=L))
                out.append(lemma(f"RemoteLeoHeld[r{a} in r{b}'s {g}]", "prefix-agreement", remote_leo_held,
                                 a=a, b=b, view=view, L=L))
        for b in range(n):
            if a == b:
                continue
            for g, guard in REMOTE_GUARDS:
                out.append(lemma(f"RemoteLeoHeld[r{a} of leader r{b}, known, follower {g}]", "prefix-agreement",
                                 remote_leo_known, a=a, b=b, guard=guard, L=L))
            for g, extra in (("fetching", fetching), ("any", any_state)):
                out.append(lemma(f"FollowerIsPrefix[r{a} of leader r{b} at its epoch, {g}]", "prefix-agreement",
                                 follower_is_prefix, a=a, b=b, extra=extra, L=L))
            out.append(lemma(f"FetchIsPrefix[fetch(r{a}) to r{b} at its epoch]", "prefix-agreement", fetch_is_prefix,
                             a=a, b=b, L=L))
            out.append(lemma(f"ResponseExtendsPrefix[resp(r{a}) of r{b} at its epoch]", "prefix-agreement",
                             response_extends_prefix, a=a, b=b, L=L))
            for what, message in (("fetch", in_flight), ("stale", stale)) if on_fetch else ():
                out.append(lemma(f"ValidatedFetchIsPrefix[{what}(r{a}) to r{b} at its epoch]", "prefix-agreement",
                                 validated_fetch_is_prefix, a=a, b=b, message=message, L=L))
                out.append(lemma(f"LastFetchedEpochHeld[{what}(r{a}), its leader r{b}]", "prefix-agreement",
                                 last_fetched_epoch_held, a=a, b=b, message=message))
            for g, extra in STALE_GUARDS:
                out.append(lemma(f"StaleFetchWithin[stale(r{a}) to r{b} at its epoch, {g}]", "prefix-agreement",
                                 stale_fetch_within, a=a, b=b, extra=extra))
                out.append(lemma(f"StaleFetchIsPrefix[stale(r{a}) to r{b} at its epoch, {g}]", "prefix-agreement",
                                 stale_fetch_is_prefix, a=a, b=b, extra=extra, L=L))
        if on_fetch:
            out += stale_fetch_held(a)
        if cached:
            out += answered_epoch_cached_templates(a)
    return out
