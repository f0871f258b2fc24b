"""Family fetch-slice: a FetchResponse in flight is a slice of its sender's log (with an HW at most
the sender's), and a Fetch asks at its sender's epoch from an offset its leader has, unless the
leader left its office (guards: none, the leader still leads, it leads at the follower's epoch)."""

from __future__ import annotations

from typing import List

from hwcheck.spec.terms import FETCH, FETCH_RESPONSE

from .common import Lemma, implies, leads, lemma


def always(o, s, l, f):
    """No guard."""
    return True


def sender_leads(o, s, l, f):
    """l is up and believes it leads."""
    return leads(o, s.reps[l])


def sender_at_followers_epoch(o, s, l, f):
    """l leads at f's leader epoch."""
    return o.And(leads(o, s.reps[l]), s.reps[l].leader_epoch == s.reps[f].leader_epoch)


GUARDS = {
    "always": always,
    "sender leads": sender_leads,
    "sender at the follower's epoch": sender_at_followers_epoch,
}


def fetch_slice(enc, s, f, l, guard, L):
    """A FetchResponse from l to f holds l's entries at their offsets, up to l's LEO."""
    o, m, rep = enc.o, s.msgs[f], s.reps[l]
    sent = o.And(m.kind == FETCH_RESPONSE, m.leader == l, guard(o, s, l, f))
    body = o.And(m.leader_leo <= rep.leo, *[implies(o, o.And(m.start <= j, j < m.leader_leo),
                                                    o.And(m.recs[j][0] == rep.log[j][0],
                                                          m.recs[j][1] == rep.log[j][1])) for j in range(L)])
    return implies(o, sent, body)


def fetch_hw_below_sender(enc, s, f, l, guard):
    """The HW a FetchResponse from l carries is at most l's HW and at most the LEO it reports."""
    o, m, rep = enc.o, s.msgs[f], s.reps[l]
    sent = o.And(m.kind == FETCH_RESPONSE, m.leader == l, guard(o, s, l, f))
    return implies(o, sent, o.And(m.hw <= rep.hw, m.hw <= m.leader_leo))


def fetch_within_sender(enc, s, f, l, guard):
    """f's Fetch to l carries f's leader epoch and a fetch offset within l's log."""
    o, m, rep = enc.o, s.msgs[f], s.reps[l]
    asked = o.And(m.kind == FETCH, m.leader == l, guard(o, s, l, f))
    return implies(o, asked, o.And(m.current_leader_epoch == s.reps[f].leader_epoch, m.fetch_offset <= rep.leo))


def fetch_templates(n: int, L: int) -> List[Lemma]:
    out = []
    for f in range(n):
        for l in range(n):
            if l == f:
                continue
            for g, guard in GUARDS.items():
                out.append(lemma(f"FetchSlice[resp(r{f}) of r{l},{g}]", "fetch-slice", fetch_slice,
                                 f=f, l=l, guard=guard, L=L))
                out.append(lemma(f"FetchHwBelowSender[resp(r{f}) of r{l},{g}]", "fetch-slice", fetch_hw_below_sender,
                                 f=f, l=l, guard=guard))
                out.append(lemma(f"FetchWithinSender[fetch(r{f}) to r{l},{g}]", "fetch-slice", fetch_within_sender,
                                 f=f, l=l, guard=guard))
    return out
