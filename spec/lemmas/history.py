"""Family history (over the state's history: the records acknowledged and exposed to consumers):
who holds them (ISR members, KIP-966's eligible replicas, leaders at the controller's epoch, the
newest leader, a leader alone in its ISR view), and that they lie below the exposed length."""

from __future__ import annotations

from typing import List

from hwcheck.spec.terms import UNDEFINED, latest_cached_epoch

from .common import (Lemma, alone_in_its_isr_view, eligible_beyond_isr, holds_acked, holds_at, implies, in_office, leads,
                     lemma, took_office_named)


# ---------------------------------------------------------------- who holds them

def acked_held(enc, s, r, guard):
    """r holds every record acknowledged to the producer, at its offset (under ``guard``)."""
    o, rep = enc.o, s.reps[r]
    return implies(o, guard(o, s, r), holds_acked(o, rep, s.hist.acked))


def exposed_held(enc, s, r, guard, L):
    """r holds every record consumers saw, at its offset (under ``guard``)."""
    o, rep, h = enc.o, s.reps[r], s.hist
    return implies(o, guard(o, s, r), o.And(*[implies(o, j < h.xlen, holds_at(o, rep, j, h.exposed[j]))
                                              for j in range(L)]))


def held_by(r: int, g: str, guard, L: int) -> List[Lemma]:
    """AckedHeld and ExposedHeld of replica r under ``guard`` (o, s, r): it holds every record
    acknowledged to the producer, and every record consumers saw, at its offset."""
    return [lemma(f"AckedHeld[r{r},{g}]", "history", acked_held, r=r, guard=guard),
            lemma(f"ExposedHeld[r{r},{g}]", "history", exposed_held, r=r, guard=guard, L=L)]


def in_controllers_isr(o, s, r):
    """r is in the controller's ISR."""
    return s.ctl.isr[r]


def in_live_isr(o, s, r):
    """r is in the controller's ISR and registered (live)."""
    return o.And(s.ctl.isr[r], s.ctl.live[r])


def eligible(o, s, r):
    """r may be elected next: an ISR member, or (KIP-966) an ELR member or the last known leader."""
    return o.Or(s.ctl.isr[r], *eligible_beyond_isr(o, s, r))


def r_leads(o, s, r):
    """r is up and believes it leads."""
    return leads(o, s.reps[r])


def leads_at_controllers_epoch(o, s, r):
    """r leads at the controller's epoch."""
    return o.And(leads(o, s.reps[r]), s.reps[r].leader_epoch == s.ctl.epoch)


def newest_leader(o, s, r):
    """r leads and no replica has heard of a newer epoch (by its leader epoch or its cache)."""
    return o.And(leads(o, s.reps[r]), *[
        o.And(x.leader_epoch <= s.reps[r].leader_epoch, latest_cached_epoch(o, x) <= s.reps[r].leader_epoch) for x in s.reps])


def anyone(o, s, r):
    """No guard."""
    return True


GUARDS = {
    "controller's ISR": in_controllers_isr,
    "live ISR": in_live_isr,
    # KIP-966: who may be elected next: an ISR member, an Eligible Leader Replica (a former ISR
    # member), or with both empty the last known leader (PartitionChangeBuilder.electAnyLeader)
    "eligible": eligible,
    "leader": r_leads,
    # the controller may have dropped it (a controlled shutdown, a fenced broker) without a new
    # epoch yet: nobody else can have led since
    "leader at the controller's epoch": leads_at_controllers_epoch,
    # no replica has heard of a newer epoch (its leader epoch, or the latest in its cache, which a
    # stop keeps): whoever acknowledged a record since this leader took office was itself
    "newest leader": newest_leader,
    # a leader whose ISR view is itself alone: the controller agreed to that ISR, so no other
    # replica is eligible until this one expands it (KIP-966 moves a replica to the ELR only when
    # the ISR falls below min.insync.replicas); a zombie of that kind is the only one that may
    # expose records alone (its HW is its own LEO)
    "sole ISR member leader": alone_in_its_isr_view,
    "any": anyone,
}


def exposed_below_hw(enc, s, r, guard, L):
    """Below r's HW, r's log holds what consumers saw (under ``guard``)."""
    o, rep, h = enc.o, s.reps[r], s.hist
    return implies(o, guard(o, s, r), o.And(*[implies(o, o.And(j < h.xlen, j < rep.hw), rep.log[j][0] == h.exposed[j])
                                              for j in range(L)]))


# ---------------------------------------------------------------- what consumers saw and a leader's epoch

def leader_in_office(enc, s, l):
    """l leads, named by the controller, at the controller's epoch."""
    return in_office(enc.o, s, l)


def leader_leads(enc, s, l):
    """l is up and believes it leads."""
    return leads(enc.o, s.reps[l])


def its_leader_epoch(enc, s, rep):
    """The replica's leader epoch."""
    return rep.leader_epoch


def controllers_epoch(enc, s, rep):
    """The controller's epoch."""
    return s.ctl.epoch


EPOCH_START_GUARDS = (
    ("in office", leader_in_office, its_leader_epoch),
    ("leads", leader_leads, its_leader_epoch),
    # named, and its cache says it took office (a restart keeps the cache and the HW)
    ("named, took office", took_office_named, controllers_epoch))


def exposed_within_leader_hw_or_epoch_start(enc, s, l, guard, epoch):
    """What consumers saw ends within the leader's HW or before its epoch began.

    KAFKA-7128: a follower joins the ISR only past that start."""
    o, rep = enc.o, s.reps[l]
    start = enc.epoch_start(rep, epoch(enc, s, rep))
    return implies(o, guard(enc, s, l), o.Or(s.hist.xlen <= rep.hw, o.And(start != UNDEFINED, s.hist.xlen <= start)))


# ---------------------------------------------------------------- the history alone

def exposed_held_somewhere(enc, s, L):
    """Some replica still holds each record consumers saw, even when no replica is eligible.

    An empty ISR and ELR: a crash keeps the log, and only a leader's answer truncates it."""
    o, h = enc.o, s.hist
    return o.And(*[implies(o, j < h.xlen, o.Or(*[holds_at(o, rep, j, h.exposed[j]) for rep in s.reps]))
                   for j in range(L)])


def exposed_once(enc, s, L):
    """Consumers saw each record at one offset, and only records produced."""
    o, h = enc.o, s.hist
    return o.And(*[implies(o, j < h.xlen, h.exposed[j] < h.produced) for j in range(L)],
                 *[implies(o, k < h.xlen, h.exposed[j] != h.exposed[k]) for j in range(L) for k in range(j + 1, L)])


def acked_exposed(enc, s):
    """Every acknowledged record was exposed to consumers, at the offset it was acknowledged at."""
    o, h = enc.o, s.hist
    return o.And(*[implies(o, off != UNDEFINED, o.And(off < h.xlen, o.select(list(h.exposed), off) == rec))
                   for rec, off in enumerate(h.acked)])


def history_templates(n: int, L: int, cached: bool) -> List[Lemma]:
    out = []
    for r in range(n):
        for g, guard in GUARDS.items():
            out += held_by(r, g, guard, L)
            out.append(lemma(f"ExposedBelowHw[r{r},{g}]", "history", exposed_below_hw, r=r, guard=guard, L=L))
    if cached:
        for l in range(n):
            for g, guard, epoch in EPOCH_START_GUARDS:
                out.append(lemma(f"ExposedWithinLeaderHwOrEpochStart[r{l} {g}]", "history",
                                 exposed_within_leader_hw_or_epoch_start, l=l, guard=guard, epoch=epoch))
    out.append(lemma("ExposedHeldSomewhere", "history", exposed_held_somewhere, L=L))
    out.append(lemma("ExposedOnce", "history", exposed_once, L=L))
    out.append(lemma("AckedExposed", "history", acked_exposed))
    return out
