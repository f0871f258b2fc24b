"""What the lemma families share: the ``Lemma`` record, ``lemma`` (a lemma function bound to its
parameters: replica, offset, guard), and the protocol's predicates that several families guard
with or conclude (who leads, who is in office, what a log holds, where two logs agree)."""

from __future__ import annotations

from functools import partial
from typing import Callable, List, NamedTuple

from hwcheck.spec.terms import FETCH_RESPONSE, LEADER, UNDEFINED, in_office_terms


class Lemma(NamedTuple):
    name: str
    family: str
    term: Callable[[object, object], object]    # (encoding, symbolic or concrete state) -> bool term


def lemma(name: str, family: str, fn: Callable, /, **params) -> Lemma:
    """The Lemma ``name`` of ``family`` whose term is ``fn(enc, s, **params)``."""
    return Lemma(name, family, partial(fn, **params) if params else fn)


def implies(o, a, b):
    return o.Or(o.Not(a), b)


# ---------------------------------------------------------------- where (record, epoch) entries are

def _in_log(rep, j):
    """Offset j is in the log (below its LEO)."""
    return j < rep.leo


def _in_response(o, m, j):
    """Offset j is among the records of the FetchResponse ``m``."""
    return o.And(m.kind == FETCH_RESPONSE, m.start <= j, j < m.leader_leo)


def sources(enc, s) -> list:
    """Every sequence of (record, epoch) slots: the replicas' logs and the FetchResponses in flight,
    as (name, present(j), slots)."""
    o = enc.o
    out = []
    for r, rep in enumerate(s.reps):
        out.append((f"log(r{r})", partial(_in_log, rep), rep.log))
    for f, m in enumerate(s.msgs):
        out.append((f"resp(r{f})", partial(_in_response, o, m), m.recs))
    return out


def source_names(n: int) -> List[str]:
    """The names of ``sources``, in their order."""
    return [f"log(r{r})" for r in range(n)] + [f"resp(r{f})" for f in range(n)]


def source(enc, s, i):
    """The ``i``-th of ``sources``."""
    return sources(enc, s)[i]


# ---------------------------------------------------------------- a follower's Fetch (in flight or stale)

def in_flight(s, f):
    """f's message in flight."""
    return s.msgs[f]


def stale(s, f):
    """f's abandoned Fetch (SStale: a Fetch or none)."""
    return s.stale[f]


# ---------------------------------------------------------------- who leads, what a log holds

def leads(o, rep):
    """The replica is up and believes it leads (it may be a zombie of an older epoch)."""
    return o.And(rep.alive, rep.role == LEADER)


in_office = in_office_terms    # the lemmas' name for spec/state.in_office over terms


def took_office_named(enc, s, r):
    """The controller names r and r's cache says it took office at the controller's epoch (from
    KAFKA-7415 makeLeader caches the epoch; a restart keeps log, cache and HW, not the leader epoch).
    Never, in a mode without an epoch cache."""
    if enc.assign_rule is None:      # no epoch cache is written (its slots are constants)
        return False
    return enc.o.And(s.ctl.leader == r, enc.latest_epoch(s.reps[r]) == s.ctl.epoch)


def holds_at(o, rep, j, record):
    """rep's log holds ``record`` at offset j."""
    return o.And(j < rep.leo, rep.log[j][0] == record)


def holds_acked(o, rep, acked):
    """rep's log holds every acknowledged record (``acked``: each record's offset, or UNDEFINED) at its offset."""
    return o.And(*[implies(o, off != UNDEFINED, o.And(off < rep.leo, o.select([e[0] for e in rep.log], off) == rec))
                   for rec, off in enumerate(acked)])


def recordless(o, rep, k):
    """Cache entry k of rep exists and starts at the LEO: an epoch cached with none of its records
    (only become_leader caches one so)."""
    return o.And(k < rep.clen, rep.epoch_cache[k][1] >= rep.leo)


def agreement(o, a_rep, b_rep, upto, L):
    """Below ``upto`` b's log holds a's entries (record and epoch)."""
    return o.And(*[implies(o, j < upto, o.And(j < b_rep.leo, a_rep.log[j][0] == b_rep.log[j][0],
                                              a_rep.log[j][1] == b_rep.log[j][1])) for j in range(L)])


# ---------------------------------------------------------------- KIP-966: who may be elected

def last_known_electable(o, s, r):
    """KIP-966: r is the last known leader and ISR and ELR are empty (electAnyLeader would elect it)."""
    c = s.ctl
    return o.And(c.last_known_elr[r], o.Not(o.Or(*c.isr)), o.Not(o.Or(*c.elr)))


def eligible_beyond_isr(o, s, r) -> list:
    """KIP-966 (modes with ELR): r in the ELR, or r the last known leader while ISR and ELR are empty."""
    if not s.ctl.elr:
        return []
    return [s.ctl.elr[r], last_known_electable(o, s, r)]


def alone_in_its_isr_view(o, s, r):
    """r leads and its ISR view is r alone (its HW is then its own LEO)."""
    return o.And(leads(o, s.reps[r]), *[s.reps[r].isr[x] == (x == r) for x in range(len(s.reps))])
