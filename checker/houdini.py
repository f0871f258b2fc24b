"""Lemma discovery for ``hwcheck prove`` (Houdini): candidate lemmas from templates over the state
layout of checker/symbolic.py, kept when true in every state bfs reaches, then pruned by z3 to the
largest subset that is inductive together with the property.

1. ``candidates(enc)``: instances of the template families (``FAMILIES``) for every replica, pair
   of replicas, FetchResponse slot and offset of the layout, plus the hand-written lemmas of
   spec/auxiliary.py (family ``hand-written``). Each candidate is written once over the encoding's
   term algebra, so the same function is evaluated on concrete states and encoded for z3.
2. ``prefilter``: every candidate is evaluated on reachable states (all of them when the space is
   small enough, else the first ``limit`` in breadth-first order: whole levels); one false
   reachable state rejects it before z3 sees it, with that state as the witness.
3. ``houdini``: one query ``wf(s) and A(s) and T(s, s') and not A(s')`` over the set ``A`` (the
   survivors, the property's invariants and EncodingBounds); each model drops every member of
   ``A`` false in ``s'``, until the query is unsat. Then ``A`` holds in the initial state (checked
   concretely) and is 1-inductive: every member holds in every reachable state, whatever the
   prefilter saw. The property is proved when its invariants are still in ``A``.

The prefilter only saves z3 work: soundness rests on the final unsat query alone.

>>> from hwcheck.spec import Config, Model
>>> from hwcheck.checker.symbolic import CONCRETE, Encoding
>>> enc = Encoding(Model(Config(mode="kip380", records=1)), CONCRETE)
>>> lemmas = candidates(enc)
>>> sorted({lem.family for lem in lemmas} | {"lookahead", "clause", "blocking"}) == sorted(FAMILIES)
True
"""

from __future__ import annotations

import ctypes
import itertools
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import z3

from hwcheck.spec import Model
from hwcheck.spec.auxiliary import AUXILIARY, CANDIDATES

from .cubes import Atoms
from .bmc import BOUNDS, _CTRL_C, Interrupted, Unrolling, _check, _is_ctrl_c, _solver, symbolic_encoding
from .result import HOLDS, INTERRUPTED, VIOLATED
from .symbolic import (CONCRETE, EPOCH_REQUEST, EPOCH_RESPONSE, FETCH, FETCH_RESPONSE, FETCHING, FOLLOWER, LEADER, NO_MSG,
                       NONE, PREFERRED, TRUNCATING_AGAIN, UNDEF, Encoding, Z3, latest_cached_epoch)

NOT_INDUCTIVE = "not k-inductive"

# template family -> what its lemmas say (one line each); docs/proofs.md lists them
FAMILIES: Dict[str, str] = {
    "record-offset": "a record sits at one offset in every log and FetchResponse, and only once produced",
    "record-epoch": "two copies of a record (logs, FetchResponses) carry the same epoch, and one epoch "
                    "writes one record at an offset",
    "log-matching": "the same (record, epoch) at an offset in two logs (or a log and a FetchResponse) "
                    "implies the same prefix",
    "epoch-order": "epochs never decrease along a log or a FetchResponse",
    "epoch-bound": "no entry is above its holder's leader epoch (by role)",
    "cache-faithful": "the epoch cache indexes the log faithfully (starts within the log, each entry "
                      "covers its offsets, the latest cached epoch against the log and the leader epoch)",
    "fetch-slice": "a FetchResponse in flight is a slice of its sender's log unless the sender left "
                   "its office (guards: none, sender a leader, sender at the follower's epoch)",
    "prefix-agreement": "below a replica's HW its log agrees with a leader's (or an ISR member's) log",
    "isr": "the controller's ISR against a leader's view of it",
    "epoch-answer": "the question before a truncation (OffsetsForLeaderEpoch, or a Fetch's last fetched "
                    "epoch) names the asker's epoch and latest cached epoch; the answer (or diverging "
                    "epoch) is within it, really diverges, is the sender's endOffsetFor while the sender "
                    "leads (and no entry of the diverging epoch past its end stays in the sender's log), "
                    "and the follower's log agrees with the sender's below where it truncates",
    "clause": "clauses of up to three literals over boolean facts of the state (roles, the controller's "
              "view, messages in flight, how replicas' epochs, LEOs and HWs compare) true in every "
              "state the prefilter saw",
    "history": "acknowledged and exposed records are held by ISR members, KIP-966's eligible replicas, "
               "leaders at the controller's epoch, the newest leader, a leader alone in its ISR view, and "
               "lie below the exposed length; over the history variables: a leader holds every record "
               "exposed up to its epoch (by the epoch that exposed it; a leader alone in its ISR view "
               "is at the newest exposing epoch); one leader per epoch, requests go to and answers come "
               "from it, a recordless cached epoch was led by its holder, a replica that led every epoch since "
               "e holds every entry of e, and (two replicas) every entry of an epoch r led is held by r",
    "scalar-order": "orderings between offsets and epochs (HW, LEO, leader epochs, controller "
                    "epoch, produced, exposed length); a leader's HW is the lowest LEO of its ISR view",
    "implication": "implications between the boolean facts of one replica (alive, role, controller "
                   "leader / ISR / live, at the controller's epoch, fetching, a message in flight)",
    "lookahead": "delivering the message in flight keeps the property (and the acknowledged records of "
                 "an ISR member): a one-step look ahead at the receiver",
    "blocking": "clauses learned from counterexamples to induction: a few atoms (orders between two "
                "offsets or two epochs, a scalar's value) on which every reachable state disagrees "
                "with the counterexample's first state (checker/cubes.py)",
    "hand-written": "spec/auxiliary.py",
}


class Lemma(NamedTuple):
    name: str
    family: str
    term: Callable[[Encoding, object], object]    # (encoding, symbolic or concrete state) -> bool term


# ---------------------------------------------------------------- templates

def _imp(o, a, b):
    return o.Or(o.Not(a), b)


def _sources(enc: Encoding, s):
    """Every sequence of (record, epoch) slots: the replicas' logs and the FetchResponses in flight,
    as (name, present(j), slots, holder replica or None, sender or None)."""
    o = enc.o
    out = []
    for r, rep in enumerate(s.reps):
        out.append((f"log(r{r})", (lambda j, rep=rep: j < rep.leo), rep.log))
    for f, m in enumerate(s.msgs):
        out.append((f"resp(r{f})", (lambda j, m=m: o.And(m.kind == FETCH_RESPONSE, m.start <= j, j < m.b)), m.recs))
    return out


def _source_names(n: int) -> List[str]:
    return [f"log(r{r})" for r in range(n)] + [f"resp(r{f})" for f in range(n)]


def _src(enc, s, i):
    return _sources(enc, s)[i]


def _took_office_named(enc, s, r):
    """The controller names r and r's cache says it took office at the controller's epoch (from
    KAFKA-7415 makeLeader caches the epoch; a restart keeps log, cache and HW, not the leader epoch).
    Never, in a mode without an epoch cache."""
    if not s.reps[r].cache:
        return False
    return enc.o.And(s.ctl.leader == r, enc.latest_epoch(s.reps[r]) == s.ctl.epoch)


def _holds_at(o, rep, j, record):
    """rep's log holds ``record`` at offset j."""
    return o.And(j < rep.leo, rep.log[j][0] == record)


def _leads(o, rep):
    """The replica is up and believes it leads (it may be a zombie of an older epoch)."""
    return o.And(rep.alive, rep.role == LEADER)


def _recordless(o, rep, k):
    """Cache entry k of rep exists and starts at the LEO: an epoch cached with none of its records
    (only become_leader caches one so)."""
    return o.And(k < rep.clen, rep.cache[k][1] >= rep.leo)


def _in_office(o, s, r):
    rep = s.reps[r]
    return o.And(_leads(o, rep), s.ctl.leader == r, rep.lepoch == s.ctl.epoch)


def _record_templates(n: int, L: int) -> List[Lemma]:
    out = []
    names = _source_names(n)
    k = len(names)
    for x in range(k):
        def below_produced(enc, s, x=x):
            o = enc.o
            _, present, slots = _src(enc, s, x)
            return o.And(*[_imp(o, present(j), slots[j][0] < s.hist.produced) for j in range(L)])
        out.append(Lemma(f"RecordProduced[{names[x]}]", "record-offset", below_produced))
        for y in range(x, k):
            def one_offset(enc, s, x=x, y=y):
                o = enc.o
                _, px, sx = _src(enc, s, x)
                _, py, sy = _src(enc, s, y)
                return o.And(*[_imp(o, o.And(px(i), py(j)), sx[i][0] != sy[j][0])
                               for i in range(L) for j in range(L) if i != j])
            out.append(Lemma(f"RecordOneOffset[{names[x]},{names[y]}]", "record-offset", one_offset))
            if x == y:
                continue

            # at one offset, the same record means the same epoch, and the same epoch the same record
            for name, a, b in (("RecordOneEpoch", 0, 1), ("OneRecordPerEpoch", 1, 0)):
                def same_implies_same(enc, s, x=x, y=y, a=a, b=b):
                    o = enc.o
                    _, px, sx = _src(enc, s, x)
                    _, py, sy = _src(enc, s, y)
                    return o.And(*[_imp(o, o.And(px(j), py(j), sx[j][a] == sy[j][a]), sx[j][b] == sy[j][b])
                                   for j in range(L)])
                out.append(Lemma(f"{name}[{names[x]},{names[y]}]", "record-epoch", same_implies_same))
            for j in range(1, L):
                def matching(enc, s, x=x, y=y, j=j):
                    o = enc.o
                    _, px, sx = _src(enc, s, x)
                    _, py, sy = _src(enc, s, y)
                    same = o.And(px(j), py(j), sx[j][0] == sy[j][0], sx[j][1] == sy[j][1])
                    prefix = [_imp(o, o.And(px(i), py(i)), o.And(sx[i][0] == sy[i][0], sx[i][1] == sy[i][1]))
                              for i in range(j)]
                    return _imp(o, same, o.And(*prefix))
                out.append(Lemma(f"LogMatching[{names[x]},{names[y]}@{j}]", "log-matching", matching))
    # a leader holds every entry of its own epoch, wherever it is, at the same offset; so does the
    # replica the controller named once its cache says it took office (cached modes only)
    holders = (("LeaderHoldsItsEpoch[{x}, leader r{l}]",
                lambda enc, s, l: _leads(enc.o, s.reps[l]), lambda enc, s, l: s.reps[l].lepoch),
               ("NamedLeaderHoldsItsEpoch[{x}, r{l}]", _took_office_named, lambda enc, s, l: s.ctl.epoch))
    for x in range(k):
        for l in range(n):
            if names[x] == f"log(r{l})":
                continue
            for name, holds_office, epoch in holders:
                def holds_its_epoch(enc, s, x=x, l=l, holds_office=holds_office, epoch=epoch):
                    o, rl = enc.o, s.reps[l]
                    _, px, sx = _src(enc, s, x)
                    e = epoch(enc, s, l)
                    return _imp(o, holds_office(enc, s, l), o.And(*[
                        _imp(o, o.And(px(j), sx[j][1] == e),
                             o.And(j < rl.leo, rl.log[j][0] == sx[j][0], rl.log[j][1] == sx[j][1])) for j in range(L)]))
                out.append(Lemma(name.format(x=names[x], l=l), "log-matching", holds_its_epoch))
    for x in range(k):
        def order(enc, s, x=x):
            o = enc.o
            _, p, sl = _src(enc, s, x)
            return o.And(*[_imp(o, o.And(p(j), p(j + 1)), sl[j][1] <= sl[j + 1][1]) for j in range(L - 1)])
        out.append(Lemma(f"EpochOrder[{names[x]}]", "epoch-order", order))
    return out


ROLE_GUARDS = {
    "leader": lambda o, s, r: s.reps[r].role == LEADER,
    "follower": lambda o, s, r: s.reps[r].role == FOLLOWER,
    "in-office": _in_office,
}


def _epoch_templates(n: int, L: int, C: int, cached: bool) -> List[Lemma]:
    out = []
    for r in range(n):
        for g, guard in ROLE_GUARDS.items():
            def bound(enc, s, r=r, guard=guard):
                o, rep = enc.o, s.reps[r]
                return _imp(o, guard(o, s, r), o.And(*[_imp(o, j < rep.leo, rep.log[j][1] <= rep.lepoch)
                                                       for j in range(L)]))
            out.append(Lemma(f"EpochBound[r{r},{g}]", "epoch-bound", bound))
        for l in range(n):
            if l == r:
                continue

            def resp_bound(enc, s, f=r, l=l):
                o, m, rep = enc.o, s.msgs[f], s.reps[l]
                sent = o.And(m.kind == FETCH_RESPONSE, m.peer == l, rep.role == LEADER)
                return _imp(o, sent, o.And(*[_imp(o, o.And(m.start <= j, j < m.b), m.recs[j][1] <= rep.lepoch)
                                             for j in range(L)]))
            out.append(Lemma(f"EpochBound[resp(r{r}) from leader r{l}]", "epoch-bound", resp_bound))

        def resp_to_follower(enc, s, f=r):
            o, m, rep = enc.o, s.msgs[f], s.reps[f]
            return _imp(o, m.kind == FETCH_RESPONSE, o.And(*[_imp(o, o.And(m.start <= j, j < m.b), m.recs[j][1] <= rep.lepoch)
                                                             for j in range(L)]))
        out.append(Lemma(f"EpochBound[resp(r{r}) to its follower]", "epoch-bound", resp_to_follower))
        # the replica the controller named has not taken office: by its leader epoch, or (from
        # KAFKA-7415, 2.1: makeLeader caches the new epoch at the LEO; a crash keeps the cache) by
        # its epoch cache, which still says so after a crash reset its leader epoch
        pending_guards = {"is named but not in office": lambda enc, s, r: s.reps[r].lepoch < s.ctl.epoch}
        if cached:
            pending_guards["is named and has not cached the epoch"] = \
                lambda enc, s, r: enc.latest_epoch(s.reps[r]) < s.ctl.epoch
        for x in range(n):
            for g, pending_guard in pending_guards.items():
                def not_yet(enc, s, r=r, x=x, pending_guard=pending_guard):
                    """The replica the controller named has not taken office: nobody holds its epoch yet."""
                    o, c, rx = enc.o, s.ctl, s.reps[x]
                    pending = o.And(c.leader == r, pending_guard(enc, s, r))
                    cache = [_imp(o, k < rx.clen, rx.cache[k][0] < c.epoch) for k in range(C)] if cached else []
                    return _imp(o, pending, o.And(*[_imp(o, j < rx.leo, rx.log[j][1] < c.epoch) for j in range(L)],
                                                  *cache, o.Or(rx.role != LEADER, rx.lepoch < c.epoch)))
                out.append(Lemma(f"EpochNotYetHeld[r{x} while r{r} {g}]", "epoch-bound", not_yet))

            def resp_not_yet(enc, s, r=r, f=x):
                o, c, m = enc.o, s.ctl, s.msgs[f]
                pending = o.And(c.leader == r, s.reps[r].lepoch < c.epoch, m.kind == FETCH_RESPONSE)
                return _imp(o, pending, o.And(*[_imp(o, o.And(m.start <= j, j < m.b), m.recs[j][1] < c.epoch)
                                                for j in range(L)]))
            out.append(Lemma(f"EpochNotYetHeld[resp(r{x}) while r{r} is named but not in office]", "epoch-bound",
                             resp_not_yet))
        if not cached:
            continue

        def cache_below_ctl(enc, s, r=r):
            o, rep = enc.o, s.reps[r]
            return o.And(*[_imp(o, k < rep.clen, rep.cache[k][0] <= s.ctl.epoch) for k in range(C)])
        out.append(Lemma(f"CacheBelowControllerEpoch[r{r}]", "cache-faithful", cache_below_ctl))

        def starts_in_log(enc, s, r=r):
            o, rep = enc.o, s.reps[r]
            return o.And(*[_imp(o, k < rep.clen, rep.cache[k][1] <= rep.leo) for k in range(C)])
        out.append(Lemma(f"CacheStartsInLog[r{r}]", "cache-faithful", starts_in_log))

        def covers(enc, s, r=r):
            o, rep = enc.o, s.reps[r]
            cs = []
            for k in range(C):
                for j in range(L):
                    nxt_start = rep.cache[k + 1][1] if k + 1 < C else L + 1
                    inside = o.And(k < rep.clen, rep.cache[k][1] <= j, o.Or(k + 1 >= rep.clen, j < nxt_start), j < rep.leo)
                    cs.append(_imp(o, inside, rep.log[j][1] == rep.cache[k][0]))
            return o.And(*cs)
        out.append(Lemma(f"CacheCovers[r{r}]", "cache-faithful", covers))

        def first_zero(enc, s, r=r):
            o, rep = enc.o, s.reps[r]
            return _imp(o, rep.leo > 0, o.And(rep.clen > 0, rep.cache[0][1] == 0))
        out.append(Lemma(f"CacheFromZero[r{r}]", "cache-faithful", first_zero))

        def every_epoch_cached(enc, s, r=r):
            o, rep = enc.o, s.reps[r]
            return o.And(*[_imp(o, j < rep.leo, o.Or(*[o.And(k < rep.clen, rep.cache[k][0] == rep.log[j][1],
                                                             rep.cache[k][1] <= j) for k in range(C)]))
                           for j in range(L)])
        out.append(Lemma(f"CacheHasEveryEpoch[r{r}]", "cache-faithful", every_epoch_cached))

        # Only the leader of an epoch caches it before holding one of its records (become_leader
        # assigns (epoch, LEO)); another replica caches it on appending one and drops it when
        # truncating below it (LeaderEpochFileCache.truncateFromEnd). The epoch: another replica's
        # while it leads, or r's own while r follows (r did not lead it).
        not_led = [(f"leader r{l}", l, LEADER) for l in range(n) if l != r] + [("its own epoch as a follower", r, FOLLOWER)]
        for g, holder, role in not_led:
            def cached_with_records(enc, s, r=r, holder=holder, role=role):
                o, rep, h = enc.o, s.reps[r], s.reps[holder]
                return _imp(o, o.And(h.alive, h.role == role),
                            o.And(*[_imp(o, o.And(k < rep.clen, rep.cache[k][0] == h.lepoch), rep.cache[k][1] < rep.leo)
                                    for k in range(C)]))
            out.append(Lemma(f"CachedEpochOfLeaderHasRecords[r{r}, {g}]", "cache-faithful", cached_with_records))

        # The same rule seen from the controller: an epoch cached with none of its records (its start
        # at the LEO) was cached by become_leader, so its holder is the one replica the controller
        # named for it; while the controller is still at that epoch it names that replica or none
        # (every election in spec/actions.py hands out a new leader epoch).
        def recordless_named(enc, s, r=r):
            o, rep, c = enc.o, s.reps[r], s.ctl
            return o.And(*[_imp(o, o.And(_recordless(o, rep, k), rep.cache[k][0] == c.epoch),
                                o.Or(c.leader == r, c.leader == UNDEF)) for k in range(C)])
        out.append(Lemma(f"RecordlessEpochNamedItsHolder[r{r}]", "cache-faithful", recordless_named))

        def recordless_in_office(enc, s, r=r):
            """A restart drops an epoch cached without records (the Log constructor trims the cache
            at the LEO): a running replica with no role yet has none."""
            o, rep = enc.o, s.reps[r]
            return _imp(o, o.And(rep.alive, rep.role == NONE),
                        o.And(*[o.Not(_recordless(o, rep, k)) for k in range(C)]))
        out.append(Lemma(f"RecordlessEpochOnlyWithARole[r{r}]", "cache-faithful", recordless_in_office))
        for b in range(r + 1, n):
            def recordless_once(enc, s, a=r, b=b):
                """Two replicas never both cache one epoch with none of its records: both led it."""
                o, ra, rb = enc.o, s.reps[a], s.reps[b]
                return o.And(*[o.Not(o.And(_recordless(o, ra, i), _recordless(o, rb, j), ra.cache[i][0] == rb.cache[j][0]))
                               for i in range(C) for j in range(C)])
            out.append(Lemma(f"RecordlessEpochHeldOnce[r{r}, r{b}]", "cache-faithful", recordless_once))

        def recordless_unwritten(enc, s, r=r):
            """An epoch cached without records was never written: its leader cached it at
            become_leader and wrote nothing (an entry it wrote and lost went with a truncation
            that dropped the epoch from its cache too), so no log or FetchResponse holds an entry
            of it. A FetchResponse with records therefore never answers a Fetch whose last
            fetched epoch is one (the sender has no such epoch to validate it with)."""
            o, rep = enc.o, s.reps[r]
            return o.And(*[_imp(o, o.And(_recordless(o, rep, k), present(j)), slots[j][1] != rep.cache[k][0])
                           for k in range(C) for _, present, slots in _sources(enc, s) for j in range(L)])
        out.append(Lemma(f"RecordlessEpochUnwritten[r{r}]", "cache-faithful", recordless_unwritten))

        def latest_vs_log(enc, s, r=r):
            o, rep = enc.o, s.reps[r]
            latest = enc.latest_epoch(rep)
            return o.And(*[_imp(o, j < rep.leo, rep.log[j][1] <= latest) for j in range(L)])
        out.append(Lemma(f"CacheLatestAboveLog[r{r}]", "cache-faithful", latest_vs_log))
        for g, guard in ROLE_GUARDS.items():
            def latest_le(enc, s, r=r, guard=guard):
                o, rep = enc.o, s.reps[r]
                return _imp(o, guard(o, s, r), enc.latest_epoch(rep) <= rep.lepoch)
            out.append(Lemma(f"CacheLatestBelowEpoch[r{r},{g}]", "cache-faithful", latest_le))

            def latest_eq(enc, s, r=r, guard=guard):
                o, rep = enc.o, s.reps[r]
                return _imp(o, guard(o, s, r), enc.latest_epoch(rep) == rep.lepoch)
            out.append(Lemma(f"CacheLatestIsEpoch[r{r},{g}]", "cache-faithful", latest_eq))
    return out


def _fetch_templates(n: int, L: int) -> List[Lemma]:
    guards = {
        "always": lambda o, s, l, f: True,
        "sender leads": lambda o, s, l, f: _leads(o, s.reps[l]),
        "sender at the follower's epoch": lambda o, s, l, f: o.And(_leads(o, s.reps[l]),
                                                                 s.reps[l].lepoch == s.reps[f].lepoch),
    }
    out = []
    for f in range(n):
        for l in range(n):
            if l == f:
                continue
            for g, guard in guards.items():
                def slice_(enc, s, f=f, l=l, guard=guard):
                    o, m, rep = enc.o, s.msgs[f], s.reps[l]
                    sent = o.And(m.kind == FETCH_RESPONSE, m.peer == l, guard(o, s, l, f))
                    body = o.And(m.b <= rep.leo, *[_imp(o, o.And(m.start <= j, j < m.b),
                                                       o.And(m.recs[j][0] == rep.log[j][0],
                                                             m.recs[j][1] == rep.log[j][1])) for j in range(L)])
                    return _imp(o, sent, body)
                out.append(Lemma(f"FetchSlice[resp(r{f}) of r{l},{g}]", "fetch-slice", slice_))

                def hw_le(enc, s, f=f, l=l, guard=guard):
                    o, m, rep = enc.o, s.msgs[f], s.reps[l]
                    sent = o.And(m.kind == FETCH_RESPONSE, m.peer == l, guard(o, s, l, f))
                    return _imp(o, sent, o.And(m.a <= rep.hw, m.a <= m.b))
                out.append(Lemma(f"FetchHwBelowSender[resp(r{f}) of r{l},{g}]", "fetch-slice", hw_le))

                def fetch_epoch(enc, s, f=f, l=l, guard=guard):
                    o, m, rep = enc.o, s.msgs[f], s.reps[l]
                    asked = o.And(m.kind == FETCH, m.peer == l, guard(o, s, l, f))
                    return _imp(o, asked, o.And(m.a == s.reps[f].lepoch, m.b <= rep.leo))
                out.append(Lemma(f"FetchWithinSender[fetch(r{f}) to r{l},{g}]", "fetch-slice", fetch_epoch))
    return out


def _agreement(o, a_rep, b_rep, upto, L):
    return o.And(*[_imp(o, j < upto, o.And(j < b_rep.leo, a_rep.log[j][0] == b_rep.log[j][0],
                                           a_rep.log[j][1] == b_rep.log[j][1])) for j in range(L)])


def _sender_at_its_epoch(o, s, f, l):
    """l leads at f's epoch."""
    return o.And(_leads(o, s.reps[l]), s.reps[l].lepoch == s.reps[f].lepoch)


def _epoch_answer_templates(n: int, L: int, on_fetch: bool) -> List[Lemma]:
    """The question a follower asks before it truncates and its answer: OffsetsForLeaderEpoch
    (KIP-101; request: its leader epoch and latest cached epoch; answer: (epoch, end)) or, with
    truncation on fetch (KAFKA-10554, ``on_fetch``), the Fetch's last fetched epoch and a
    FetchResponse's diverging epoch. What they can say while in flight, and the follower half of a
    faithful answer (the sender half is spec/auxiliary.py's EpochAnswerCutsSenderLog)."""
    if on_fetch:
        ask, answer = FETCH, FETCH_RESPONSE
        asked = lambda m: m.c                                          # noqa: E731
        said = lambda m: (m.c, m.d)                                    # noqa: E731
        again = lambda rep: rep._replace(truncating=TRUNCATING_AGAIN)  # noqa: E731  (as spec/actions.py)
    else:
        ask, answer = EPOCH_REQUEST, EPOCH_RESPONSE
        asked = lambda m: m.b                                          # noqa: E731
        said = lambda m: (m.a, m.b)                                    # noqa: E731
        again = lambda rep: rep                                        # noqa: E731
    out = []
    for f in range(n):
        def request(enc, s, f=f):
            o, m, rep = enc.o, s.msgs[f], s.reps[f]
            return _imp(o, m.kind == ask, o.And(m.a == rep.lepoch, asked(m) == enc.latest_epoch(rep)))
        out.append(Lemma(f"EpochRequestNamesLatest[req(r{f})]", "epoch-answer", request))

        def within(enc, s, f=f):
            o, m, rep = enc.o, s.msgs[f], s.reps[f]
            epoch, _ = said(m)
            return _imp(o, o.And(m.kind == answer, epoch != UNDEF),
                        o.And(epoch <= enc.latest_epoch(rep), epoch <= rep.lepoch))
        out.append(Lemma(f"EpochAnswerWithinRequest[resp(r{f})]", "epoch-answer", within))

        if on_fetch:
            for what, message in (("fetch", lambda s, f: s.msgs[f]), ("stale", lambda s, f: s.stale[f])):
                def from_zero(enc, s, f=f, message=message):
                    """A Fetch names no last fetched epoch only when its sender's cache was empty,
                    and then its log was too (the cache covers every record): it asks from 0."""
                    o, m = enc.o, message(s, f)
                    return _imp(o, o.And(m.kind == FETCH, m.c == UNDEF), m.b == 0)
                out.append(Lemma(f"NoLastEpochFetchesFromZero[{what}(r{f})]", "epoch-answer", from_zero))

                def epochs_ordered(enc, s, f=f, message=message):
                    """A follower caches no epoch above its leader epoch (it appends only its
                    leader's records): a Fetch's last fetched epoch is at most its current one."""
                    o, m = enc.o, message(s, f)
                    return _imp(o, m.kind == FETCH, m.c <= m.a)
                out.append(Lemma(f"LastFetchedEpochWithinRequest[{what}(r{f})]", "epoch-answer", epochs_ordered))

                def last_epoch_cached(enc, s, f=f, message=message):
                    """The last fetched epoch was the sender's latest cached epoch; a cache loses
                    its latest epoch only by truncating to a newer leader's: some cache holds it."""
                    o, m = enc.o, message(s, f)
                    return _imp(o, o.And(m.kind == FETCH, m.c != UNDEF),
                                o.Or(*[latest_cached_epoch(o, x) >= m.c for x in s.reps]))
                out.append(Lemma(f"LastFetchedEpochCached[{what}(r{f})]", "epoch-answer", last_epoch_cached))

                def last_epoch_starts_below(enc, s, f=f, message=message):
                    """The last fetched epoch began at or below the fetch offset (the sender's LEO), and
                    every cache that holds an epoch holds it from where its leader began it."""
                    o, m = enc.o, message(s, f)
                    return _imp(o, o.And(m.kind == FETCH, m.c != UNDEF),
                                o.And(*[_imp(o, o.And(k < x.clen, x.cache[k][0] == m.c), x.cache[k][1] <= m.b)
                                        for x in s.reps for k in range(len(x.cache))]))
                out.append(Lemma(f"LastFetchedEpochStartsByFetch[{what}(r{f})]", "epoch-answer",
                                 last_epoch_starts_below))

                def recordless_after(enc, s, f=f, message=message):
                    """The sender caches an epoch without records only as the leader of it: since the
                    Fetch (at an epoch at least its last fetched one), or as its latest epoch then."""
                    o, m, rep = enc.o, message(s, f), s.reps[f]
                    return _imp(o, o.And(m.kind == FETCH, m.c != UNDEF),
                                o.And(*[_imp(o, _recordless(o, rep, k), rep.cache[k][0] >= m.c)
                                        for k in range(len(rep.cache))]))
                out.append(Lemma(f"RecordlessEpochNotBeforeFetch[{what}(r{f})]", "epoch-answer", recordless_after))

                def recordless_is_senders(enc, s, f=f, message=message):
                    """An epoch cached without records was never written (its leader cached it at
                    become_leader; truncating or a restart below its start drops it): a Fetch names it
                    as its last fetched epoch only from that leader, at the epoch's start."""
                    o, m = enc.o, message(s, f)
                    return _imp(o, o.And(m.kind == FETCH, m.c != UNDEF), o.And(*[
                        _imp(o, o.And(_recordless(o, x, k), x.cache[k][0] == m.c),
                             (x.cache[k][1] == m.b) if x is s.reps[f] else False)
                        for x in s.reps for k in range(len(x.cache))]))
                out.append(Lemma(f"RecordlessLastFetchedEpochIsTheSenders[{what}(r{f})]", "epoch-answer",
                                 recordless_is_senders))

                def asked_the_epochs_leader(enc, s, f=f, message=message):
                    """A Fetch goes to the leader of its current epoch (the follower learned both from
                    one LeaderAndIsr), and an epoch has one leader: while the controller is still at
                    that epoch it names the same replica, or none."""
                    o, m, c = enc.o, message(s, f), s.ctl
                    return _imp(o, o.And(m.kind == FETCH, m.a == c.epoch), o.Or(c.leader == m.peer, c.leader == UNDEF))
                out.append(Lemma(f"FetchedFromItsEpochsLeader[{what}(r{f})]", "epoch-answer", asked_the_epochs_leader))

                def epoch_not_yet_fetched(enc, s, f=f, message=message):
                    """The replica the controller named has not cached the new epoch: it has not taken
                    office, so no record of that epoch exists and no follower names it as its last
                    fetched epoch."""
                    o, m, c = enc.o, message(s, f), s.ctl
                    pending = o.And(*[_imp(o, c.leader == l, latest_cached_epoch(o, s.reps[l]) < c.epoch)
                                      for l in range(len(s.reps)) if l != f])
                    return _imp(o, o.And(m.kind == FETCH, c.leader != f, c.leader != UNDEF, pending), m.c < c.epoch)
                out.append(Lemma(f"LastFetchedEpochNotYetTaken[{what}(r{f})]", "epoch-answer", epoch_not_yet_fetched))

            def diverges(enc, s, f=f):
                """A diverging epoch answers a Fetch whose last fetched epoch the leader lacks or
                ends below the fetch offset (Partition.readRecords): it is older than the
                follower's latest epoch, or ends below the follower's LEO."""
                o, m, rep = enc.o, s.msgs[f], s.reps[f]
                return _imp(o, o.And(m.kind == FETCH_RESPONSE, m.c != UNDEF),
                            o.Or(m.c < enc.latest_epoch(rep), m.d < rep.leo))
            out.append(Lemma(f"DivergingAnswerDiverges[resp(r{f})]", "epoch-answer", diverges))

            def older(enc, s, f=f):
                """The leader of the follower's epoch answered: it holds every entry of that epoch,
                so a divergence is always at an older epoch."""
                o, m, rep = enc.o, s.msgs[f], s.reps[f]
                return _imp(o, o.And(m.kind == FETCH_RESPONSE, m.c != UNDEF), m.c < rep.lepoch)
            out.append(Lemma(f"DivergingAnswerIsOlder[resp(r{f})]", "epoch-answer", older))

            def still_true(enc, s, f=f):
                """Its sender's log had the diverging epoch ``e`` end at ``k`` (the diverging end
                offset), and it still has no entry of e at k or past it: the sender led the
                follower's epoch, and it could gain entries of an older epoch only by truncating to a
                newer epoch's leader, which the follower would have followed first (two replicas)."""
                o, m = enc.o, s.msgs[f]
                answered = o.And(m.kind == FETCH_RESPONSE, m.c != UNDEF)
                return o.And(*[_imp(o, o.And(answered, m.peer == x, m.d <= j, j < rx.leo), rx.log[j][1] != m.c)
                               for x, rx in enumerate(s.reps) if x != f for j in range(L)])
            out.append(Lemma(f"DivergingAnswerStillTrue[resp(r{f})]", "epoch-answer", still_true))

        def keeps_exposed(enc, s, f=f):
            """A follower holding every record consumers saw is not truncated below them: the
            sender led the follower's epoch and held them too, so the epochs of their entries
            are in its cache and end beyond them."""
            o, m, rep, h = enc.o, s.msgs[f], s.reps[f], s.hist
            epoch, end = said(m)
            offset, _ = enc.follower_truncation(again(rep), epoch, end)
            held = o.And(*[_imp(o, j < h.xlen, _holds_at(o, rep, j, h.exposed[j]))
                           for j in range(L)])
            return _imp(o, o.And(m.kind == answer, epoch != UNDEF, held), offset >= h.xlen)
        out.append(Lemma(f"EpochAnswerKeepsExposed[resp(r{f})]", "epoch-answer", keeps_exposed))

        def in_range(enc, s, f=f):
            """No OFFSET_OUT_OF_RANGE answer: records (or none) at the follower's LEO, unless the
            answer is a diverging epoch."""
            o, m = enc.o, s.msgs[f]
            plain = o.And(m.kind == FETCH_RESPONSE, m.c == UNDEF) if on_fetch else m.kind == FETCH_RESPONSE
            return _imp(o, plain, m.start == s.reps[f].leo)
        out.append(Lemma(f"FetchResponseInRange[resp(r{f})]", "epoch-answer", in_range))
        if on_fetch:
            def no_records_past_recordless(enc, s, f=f):
                """No records answer a follower that caches an epoch without records: its Fetch
                named that epoch as its last fetched epoch, which no sender can validate (nobody
                wrote an entry of it, and the sender did not lead it): the answer is a diverging
                epoch (Partition.fetchRecords, KAFKA-10554). An empty log sends no last fetched epoch."""
                o, m, rf = enc.o, s.msgs[f], s.reps[f]
                return _imp(o, o.And(m.kind == FETCH_RESPONSE, m.c == UNDEF, rf.leo > 0),
                            o.And(*[o.Not(_recordless(o, rf, k)) for k in range(len(rf.cache))]))
            out.append(Lemma(f"NoRecordsPastARecordlessEpoch[resp(r{f})]", "epoch-answer", no_records_past_recordless))
        for l in range(n):
            if l == f:
                continue
            for kind, what in ((answer, "answer"), (ask, "request")) + (() if on_fetch else (
                    (FETCH_RESPONSE, "FetchResponse"), (FETCH, "Fetch"))):
                def not_behind(enc, s, f=f, l=l, kind=kind):
                    """Answered at the asker's epoch (KIP-320), and a leader's epoch only grows."""
                    o, m, rl = enc.o, s.msgs[f], s.reps[l]
                    return _imp(o, o.And(m.kind == kind, m.peer == l, _leads(o, rl)),
                                rl.lepoch >= s.reps[f].lepoch)
                out.append(Lemma(f"SenderNotBehind[{what} of r{f} with r{l} leading]", "epoch-answer", not_behind))

            for g, guard in (("sender at its epoch", _sender_at_its_epoch),
                             ("sender in office", lambda o, s, f, l: _in_office(o, s, l))):
                def agrees(enc, s, f=f, l=l, guard=guard):
                    """Where the answer truncates the follower (when it ends the truncation), the
                    follower's log is a prefix of the sender's."""
                    o, m, rf, rl = enc.o, s.msgs[f], s.reps[f], s.reps[l]
                    epoch, end = said(m)
                    offset, done = enc.follower_truncation(again(rf), epoch, end)
                    applies = o.And(m.kind == answer, m.peer == l, epoch != UNDEF, guard(o, s, f, l), done)
                    return _imp(o, applies, o.And(offset <= rl.leo, _agreement(o, rf, rl, offset, L)))
                out.append(Lemma(f"EpochAnswerAgrees[resp(r{f}) of r{l}, {g}]", "epoch-answer", agrees))

            # The answer is the sender's endOffsetFor of the follower's latest epoch: while the sender
            # leads, its cache changes only above the epoch it answered at (``answered``: its own
            # epoch, or the follower's when it may have moved on), and only that epoch's end, its
            # LEO, may have grown.
            for g, guard, answered in (
                    ("sender at its epoch", _sender_at_its_epoch, lambda s, f, l: s.reps[l].lepoch),
                    ("sender in office", lambda o, s, f, l: _in_office(o, s, l), lambda s, f, l: s.reps[l].lepoch),
                    ("sender leads", lambda o, s, f, l: _leads(o, s.reps[l]),
                     lambda s, f, l: s.reps[f].lepoch),
                    # after it left office: its latest cached epoch is still the follower's (it has
                    # taken nothing from a newer leader since)
                    ("sender's latest cached epoch the follower's",
                     lambda o, s, f, l: latest_cached_epoch(o, s.reps[l]) == s.reps[f].lepoch,
                     lambda s, f, l: s.reps[f].lepoch),
                    # whatever the sender did since: while the follower is still at the epoch it was
                    # answered at, nobody else took office (two replicas: the follower would have
                    # moved on, and its answer with it), so the sender's log and cache changed only
                    # at their end: its own writes, a restart's trim of an epoch cached without
                    # records (records=1 crashes=3 max_epoch=7 proves with it, not without; with
                    # three replicas the prefilter decides)
                    ("sender in any role", lambda o, s, f, l: True, lambda s, f, l: s.reps[f].lepoch)):
                def lookup(enc, s, f=f, l=l, guard=guard, answered=answered):
                    o, m, rf, rl = enc.o, s.msgs[f], s.reps[f], s.reps[l]
                    epoch, end = said(m)
                    e, x = enc.end_offset_for(rl.cache, rl.clen, rl.leo, enc.latest_epoch(rf))
                    applies = o.And(m.kind == answer, m.peer == l, epoch != UNDEF, guard(o, s, f, l))
                    return _imp(o, applies, o.And(epoch == e, o.Or(e == answered(s, f, l), end == x)))
                out.append(Lemma(f"EpochAnswerIsSendersLookup[resp(r{f}) of r{l}, {g}]", "epoch-answer", lookup))

                def validated(enc, s, f=f, l=l, guard=guard):
                    """Records (no diverging epoch) answer a Fetch whose last fetched epoch the sender
                    has, ending at or past the fetch offset (Partition.fetchRecords checks it); the
                    follower's log and cache do not change while the fetch is out."""
                    o, m, rf, rl = enc.o, s.msgs[f], s.reps[f], s.reps[l]
                    latest = enc.latest_epoch(rf)
                    e, x = enc.end_offset_for(rl.cache, rl.clen, rl.leo, latest)
                    applies = o.And(m.kind == FETCH_RESPONSE, m.peer == l, m.c == UNDEF, latest != UNDEF,
                                    guard(o, s, f, l))
                    return _imp(o, applies, o.And(e == latest, x >= rf.leo))
                if on_fetch:
                    out.append(Lemma(f"RecordsAnswerValidated[resp(r{f}) of r{l}, {g}]", "epoch-answer", validated))
    return out


def _agreement_templates(n: int, L: int, cached: bool, on_fetch: bool) -> List[Lemma]:
    """Prefix agreement between logs, and what requests and answers in flight say of it; the
    lemmas over a Fetch's last fetched epoch only with truncation on fetch (``on_fetch``), those
    over epoch caches only where a cache is written (``cached``)."""
    guards = {
        "b in office": lambda o, s, b: _in_office(o, s, b),
        "b leads": lambda o, s, b: _leads(o, s.reps[b]),
        "b named by the controller": lambda o, s, b: s.ctl.leader == b,
        "b in the controller's ISR": lambda o, s, b: s.ctl.isr[b],
    }
    out = []
    for a in range(n):
        for b in range(n):
            if a == b:
                continue
            for g, guard in guards.items():
                def below_hw(enc, s, a=a, b=b, guard=guard):
                    o = enc.o
                    return _imp(o, guard(o, s, b), _agreement(o, s.reps[a], s.reps[b], s.reps[a].hw, L))
                out.append(Lemma(f"PrefixAgrees[r{a} below its HW, r{b}; {g}]", "prefix-agreement", below_hw))

            for g, view in (("leader's ISR", lambda s, b, a: s.reps[b].isr[a]),
                            ("controller's ISR", lambda s, b, a: s.ctl.isr[a])):
                def isr_holds(enc, s, a=a, b=b, view=view):
                    o, lb = enc.o, s.reps[b]
                    return _imp(o, o.And(_leads(o, lb), view(s, b, a)),
                                _agreement(o, lb, s.reps[a], lb.hw, L))
                out.append(Lemma(f"IsrHoldsLeaderHw[r{a} in r{b}'s {g}]", "prefix-agreement", isr_holds))

                def remote_le(enc, s, a=a, b=b, view=view):
                    o, lb = enc.o, s.reps[b]
                    return _imp(o, o.And(_leads(o, lb), view(s, b, a)),
                                o.And(lb.remote[a] <= s.reps[a].leo,
                                      _agreement(o, lb, s.reps[a], lb.remote[a], L)))
                out.append(Lemma(f"RemoteLeoHeld[r{a} in r{b}'s {g}]", "prefix-agreement", remote_le))
        for b in range(n):
            if a == b:
                continue
            for g, guard in (("not ahead of it", lambda o, s, a, b: s.reps[a].lepoch <= s.reps[b].lepoch),
                             ("at its epoch or down", lambda o, s, a, b: o.Or(s.reps[a].lepoch == s.reps[b].lepoch,
                                                                              s.reps[a].role == NONE)),
                             # KRaft: a leader keeps its followers' LEOs across its own new epoch
                             # (makeLeader, isNewLeader false), when they may have moved on first
                             ("in any role", lambda o, s, a, b: True)):
                def remote_known(enc, s, a=a, b=b, guard=guard):
                    o, lb, ra = enc.o, s.reps[b], s.reps[a]
                    known = o.And(_leads(o, lb), lb.remote[a] != UNDEF, guard(o, s, a, b))
                    return _imp(o, known, o.And(lb.remote[a] <= ra.leo, _agreement(o, lb, ra, lb.remote[a], L)))
                out.append(Lemma(f"RemoteLeoHeld[r{a} of leader r{b}, known, follower {g}]", "prefix-agreement",
                                 remote_known))

            def follows(o, s, a, b):
                ra, rb = s.reps[a], s.reps[b]
                return o.And(ra.alive, ra.role == FOLLOWER, ra.leader == b, _leads(o, rb),
                             ra.lepoch == rb.lepoch)
            for g, extra in (("fetching", lambda o, s, a: s.reps[a].truncating == FETCHING), ("any", lambda o, s, a: True)):
                def prefix(enc, s, a=a, b=b, extra=extra):
                    o, ra, rb = enc.o, s.reps[a], s.reps[b]
                    return _imp(o, o.And(follows(o, s, a, b), extra(o, s, a)),
                                o.And(ra.leo <= rb.leo, _agreement(o, ra, rb, ra.leo, L)))
                out.append(Lemma(f"FollowerIsPrefix[r{a} of leader r{b} at its epoch, {g}]", "prefix-agreement", prefix))

            def fetch_prefix(enc, s, a=a, b=b):
                o, m, ra, rb = enc.o, s.msgs[a], s.reps[a], s.reps[b]
                asked = o.And(m.kind == FETCH, m.peer == b, _leads(o, rb), rb.lepoch == m.a)
                return _imp(o, asked, o.And(m.b <= rb.leo, _agreement(o, ra, rb, m.b, L)))
            out.append(Lemma(f"FetchIsPrefix[fetch(r{a}) to r{b} at its epoch]", "prefix-agreement", fetch_prefix))

            def resp_prefix(enc, s, a=a, b=b):
                o, m, ra, rb = enc.o, s.msgs[a], s.reps[a], s.reps[b]
                sent = o.And(m.kind == FETCH_RESPONSE, m.peer == b, _leads(o, rb), rb.lepoch == ra.lepoch)
                return _imp(o, sent, o.And(m.b <= rb.leo, _agreement(o, ra, rb, m.start, L)))
            out.append(Lemma(f"ResponseExtendsPrefix[resp(r{a}) of r{b} at its epoch]", "prefix-agreement", resp_prefix))
            for what, message in (("fetch", lambda s, a: s.msgs[a]), ("stale", lambda s, a: s.stale[a])) if on_fetch else ():
                def validated_prefix(enc, s, a=a, b=b, message=message):
                    """A Fetch at its leader's epoch that the leader validates (truncation on fetch:
                    its last fetched epoch ends at or past the fetch offset in the leader's log,
                    Partition.fetchRecords) asks for an offset the leader has, and the follower's
                    log agrees with the leader's below it (it grew since, if anything)."""
                    o, m, ra, rb = enc.o, message(s, a), s.reps[a], s.reps[b]
                    out_of_range, diverging, _, _ = enc._diverging(rb, m)
                    asked = o.And(m.kind == FETCH, m.peer == b, _leads(o, rb), rb.lepoch == m.a,
                                  o.Not(out_of_range), o.Not(diverging))
                    return _imp(o, asked, o.And(m.b <= rb.leo, m.b <= ra.leo, _agreement(o, ra, rb, m.b, L)))
                out.append(Lemma(f"ValidatedFetchIsPrefix[{what}(r{a}) to r{b} at its epoch]", "prefix-agreement",
                                 validated_prefix))

                def last_epoch_held(enc, s, a=a, b=b, message=message):
                    """The last fetched epoch of a Fetch came with records from that epoch's leader
                    (a follower caches an epoch only by appending its records): while that leader
                    still leads at it, it holds the entry before the fetch offset, of that epoch."""
                    o, m, rb = enc.o, message(s, a), s.reps[b]
                    named = o.And(m.kind == FETCH, m.c != UNDEF, m.b > 0, _leads(o, rb), rb.lepoch == m.c)
                    return _imp(o, named, o.And(m.b <= rb.leo, o.select([e[1] for e in rb.log], m.b - 1) == m.c))
                out.append(Lemma(f"LastFetchedEpochHeld[{what}(r{a}), its leader r{b}]", "prefix-agreement",
                                 last_epoch_held))
            for g, extra in (("always", lambda o, s, a, m: True), ("sender at its epoch", lambda o, s, a, m: s.reps[a].lepoch == m.a)):
                def stale_within(enc, s, a=a, b=b, extra=extra):
                    o, m, rb = enc.o, s.stale[a], s.reps[b]
                    asked = o.And(m.kind == FETCH, m.peer == b, _leads(o, rb), rb.lepoch == m.a,
                                  extra(o, s, a, m))
                    return _imp(o, asked, m.b <= rb.leo)
                out.append(Lemma(f"StaleFetchWithin[stale(r{a}) to r{b} at its epoch, {g}]", "prefix-agreement",
                                 stale_within))

                def stale_prefix(enc, s, a=a, b=b, extra=extra):
                    o, m, ra, rb = enc.o, s.stale[a], s.reps[a], s.reps[b]
                    asked = o.And(m.kind == FETCH, m.peer == b, _leads(o, rb), rb.lepoch == m.a,
                                  extra(o, s, a, m))
                    return _imp(o, asked, o.And(m.b <= ra.leo, _agreement(o, ra, rb, m.b, L)))
                out.append(Lemma(f"StaleFetchIsPrefix[stale(r{a}) to r{b} at its epoch, {g}]", "prefix-agreement",
                                 stale_prefix))
        if on_fetch:
            out += _stale_fetch_held(a)
        if cached:
            out += _answered_epoch_cached(a)
    return out


def _stale_fetch_held(a: int) -> List[Lemma]:
    """(truncation on fetch) What a's stale Fetch still says of a's log."""
    out = []

    def stale_still_held(enc, s, a=a):
        """A follower truncates only on an answer from the leader of its epoch, and a leader
        caches its epoch when it takes office: while no cache holds the epoch of a's stale
        Fetch (or a newer one), a still holds the offsets it asked after, up to the last fetched
        epoch (its latest cached epoch then, at or above every epoch in its log)."""
        o, m, ra = enc.o, s.stale[a], s.reps[a]
        quiet = o.And(m.kind == FETCH, m.c != UNDEF, m.b > 0, *[latest_cached_epoch(o, x) < m.a for x in s.reps])
        return _imp(o, quiet, o.And(m.b <= ra.leo, o.select([e[1] for e in ra.log], m.b - 1) <= m.c))
    out.append(Lemma(f"StaleFetchStillHeld[stale(r{a})]", "prefix-agreement", stale_still_held))

    def stale_still_held_validated(enc, s, a=a):
        """As StaleFetchStillHeld, when the leader of the Fetch's epoch may have taken office:
        it truncates a only where a's log leaves its own, and every replica that caches that
        epoch (and none a newer one) agrees with what the Fetch claims (endOffsetFor)."""
        o, m, ra = enc.o, s.stale[a], s.reps[a]

        def validates(x):
            e, end = enc.end_offset_for(x.cache, x.clen, x.leo, m.c)
            return _imp(o, latest_cached_epoch(o, x) == m.a, o.And(e == m.c, end >= m.b))
        quiet = o.And(m.kind == FETCH, m.c != UNDEF, m.b > 0,
                      *[o.And(latest_cached_epoch(o, x) <= m.a, validates(x)) for x in s.reps])
        return _imp(o, quiet, o.And(m.b <= ra.leo, o.select([e[1] for e in ra.log], m.b - 1) <= m.c))
    out.append(Lemma(f"StaleFetchStillHeld[stale(r{a}), its epoch's caches validate it]", "prefix-agreement",
                     stale_still_held_validated))
    return out


def _answered_epoch_cached(a: int) -> List[Lemma]:
    """Who still caches the epoch of a follower that an answer in flight reaches."""
    out = []

    def answered_epoch_cached(enc, s, a=a):
        """An answer reaches a follower only from the leader of its epoch, which cached that
        epoch when it took office; a cache loses its latest epoch only by truncating to a
        newer leader's log, whose cache holds a newer one: some cache holds the epoch."""
        o, m, ra = enc.o, s.msgs[a], s.reps[a]
        answered = o.Or(m.kind == FETCH_RESPONSE, m.kind == EPOCH_RESPONSE)
        return _imp(o, answered, o.Or(*[latest_cached_epoch(o, x) >= ra.lepoch for x in s.reps]))
    out.append(Lemma(f"AnsweredEpochCached[resp(r{a})]", "prefix-agreement", answered_epoch_cached))

    def sender_caches_epoch(enc, s, a=a):
        """The same, for the sender: it still caches the follower's epoch unless it truncated
        to a newer leader, and then a cache holds a newer epoch."""
        o, m, ra = enc.o, s.msgs[a], s.reps[a]
        answered = o.Or(m.kind == FETCH_RESPONSE, m.kind == EPOCH_RESPONSE)
        sender = o.Or(*[o.And(m.peer == x, latest_cached_epoch(o, rx) >= ra.lepoch) for x, rx in enumerate(s.reps)])
        newer = o.Or(*[latest_cached_epoch(o, x) > ra.lepoch for x in s.reps])
        return _imp(o, answered, o.Or(sender, newer))
    out.append(Lemma(f"AnsweredEpochCached[resp(r{a}), by its sender]", "prefix-agreement", sender_caches_epoch))
    return out


def _isr_templates(n: int) -> List[Lemma]:
    out = []
    for l in range(n):
        for x in range(n):
            for g, guard in (("leads", lambda o, s, l: _leads(o, s.reps[l])),
                             ("in office", _in_office)):
                def ctl_in_view(enc, s, l=l, x=x, guard=guard):
                    o = enc.o
                    return _imp(o, o.And(guard(o, s, l), s.ctl.isr[x]), s.reps[l].isr[x])
                out.append(Lemma(f"IsrWithinView[r{x}, r{l} {g}]", "isr", ctl_in_view))

                def view_in_ctl(enc, s, l=l, x=x, guard=guard):
                    o = enc.o
                    return _imp(o, o.And(guard(o, s, l), s.reps[l].isr[x]), s.ctl.isr[x])
                out.append(Lemma(f"ViewWithinIsr[r{x}, r{l} {g}]", "isr", view_in_ctl))
            if x == l:
                continue

            def newer_leader_in_view(enc, s, l=l, x=x):
                """A stale leader's ISR view holds every newer leader: without an unclean election
                the controller elects from the ISR, which a leader shrinks only through its view."""
                o, rl, rx = enc.o, s.reps[l], s.reps[x]
                newer = o.Or(o.And(_leads(o, rx), rx.lepoch > rl.lepoch),
                             o.And(s.ctl.leader == x, s.ctl.epoch > rl.lepoch))
                return _imp(o, o.And(_leads(o, rl), newer), rl.isr[x])
            out.append(Lemma(f"NewerLeaderInStaleView[r{x}, r{l} leads]", "isr", newer_leader_in_view))

            def newer_epoch_holder_in_view(enc, s, l=l, x=x):
                """A stale leader's ISR view holds a replica that holds a record of a newer epoch
                (with two replicas that replica wrote it as the newer leader; with more the
                prefilter decides)."""
                o, rl, rx = enc.o, s.reps[l], s.reps[x]
                newer = o.Or(*[o.And(j < rx.leo, rx.log[j][1] > rl.lepoch) for j in range(len(rx.log))])
                return _imp(o, o.And(_leads(o, rl), newer), rl.isr[x])
            out.append(Lemma(f"NewerEpochHolderInStaleView[r{x}, r{l} leads]", "isr", newer_epoch_holder_in_view))

            def last_known_leader_led(enc, s, l=l, x=x):
                """KIP-966: the last known leader is the leader the controller named at its epoch
                when ISR and ELR became empty (no new epoch since): nobody else leads that epoch."""
                o, c, rx = enc.o, s.ctl, s.reps[x]
                if not c.elr:
                    return True
                return _imp(o, _last_known_electable(o, s, l),
                            o.Not(o.And(_leads(o, rx), rx.lepoch == c.epoch)))
            out.append(Lemma(f"LastKnownLeaderLedTheEpoch[r{l}, not r{x}]", "isr", last_known_leader_led))
    return out


def _last_known_electable(o, s, r):
    """KIP-966: r is the last known leader and ISR and ELR are empty (electAnyLeader would elect it)."""
    c = s.ctl
    return o.And(c.lke[r], o.Not(o.Or(*c.isr)), o.Not(o.Or(*c.elr)))


def _eligible_beyond_isr(o, s, r) -> list:
    """KIP-966 (modes with ELR): r in the ELR, or r the last known leader while ISR and ELR are empty."""
    if not s.ctl.elr:
        return []
    return [s.ctl.elr[r], _last_known_electable(o, s, r)]


def _alone_in_its_isr_view(o, s, r):
    """r leads and its ISR view is r alone (its HW is then its own LEO)."""
    return o.And(_leads(o, s.reps[r]), *[s.reps[r].isr[x] == (x == r) for x in range(len(s.reps))])


def _held_by(r: int, g: str, guard, L: int) -> List[Lemma]:
    """AckedHeld and ExposedHeld of replica r under ``guard`` (o, s, r): it holds every record
    acknowledged to the producer, and every record consumers saw, at its offset."""
    def acked_held(enc, s):
        o, rep = enc.o, s.reps[r]
        return _imp(o, guard(o, s, r), o.And(*[
            _imp(o, off != UNDEF, o.And(off < rep.leo, o.select([e[0] for e in rep.log], off) == rec))
            for rec, off in enumerate(s.hist.acked)]))

    def exposed_held(enc, s):
        o, rep, h = enc.o, s.reps[r], s.hist
        return _imp(o, guard(o, s, r), o.And(*[_imp(o, j < h.xlen, _holds_at(o, rep, j, h.exposed[j]))
                                               for j in range(L)]))
    return [Lemma(f"AckedHeld[r{r},{g}]", "history", acked_held), Lemma(f"ExposedHeld[r{r},{g}]", "history", exposed_held)]


def _history_templates(n: int, L: int, cached: bool) -> List[Lemma]:
    guards = {
        "controller's ISR": lambda o, s, r: s.ctl.isr[r],
        "live ISR": lambda o, s, r: o.And(s.ctl.isr[r], s.ctl.live[r]),
        # KIP-966: who may be elected next: an ISR member, an Eligible Leader Replica (a former
        # ISR member), or with both empty the last known leader (PartitionChangeBuilder.electAnyLeader)
        "eligible": lambda o, s, r: o.Or(s.ctl.isr[r], *_eligible_beyond_isr(o, s, r)),
        "leader": lambda o, s, r: _leads(o, s.reps[r]),
        # the controller may have dropped it (a controlled shutdown, a fenced broker) without a new
        # epoch yet: nobody else can have led since
        "leader at the controller's epoch": lambda o, s, r: o.And(_leads(o, s.reps[r]),
                                                                  s.reps[r].lepoch == s.ctl.epoch),
        # no replica has heard of a newer epoch (its leader epoch, or the latest in its cache, which
        # a stop keeps): whoever acknowledged a record since this leader took office was itself
        "newest leader": lambda o, s, r: o.And(_leads(o, s.reps[r]), *[
            o.And(x.lepoch <= s.reps[r].lepoch, latest_cached_epoch(o, x) <= s.reps[r].lepoch) for x in s.reps]),
        # a leader whose ISR view is itself alone: the controller agreed to that ISR, so no other
        # replica is eligible until this one expands it (KIP-966 moves a replica to the ELR only
        # when the ISR falls below min.insync.replicas); a zombie of that kind is the only one
        # that may expose records alone (its HW is its own LEO)
        "sole ISR member leader": _alone_in_its_isr_view,
        "any": lambda o, s, r: True,
    }
    out = []
    for r in range(n):
        for g, guard in guards.items():
            out += _held_by(r, g, guard, L)

            def exposed_below_hw(enc, s, r=r, guard=guard):
                o, rep, h = enc.o, s.reps[r], s.hist
                return _imp(o, guard(o, s, r), o.And(*[_imp(o, o.And(j < h.xlen, j < rep.hw), rep.log[j][0] == h.exposed[j])
                                                       for j in range(L)]))
            out.append(Lemma(f"ExposedBelowHw[r{r},{g}]", "history", exposed_below_hw))

    if cached:
        for l in range(n):
            for g, guard, epoch in (
                    ("in office", lambda enc, s, l: _in_office(enc.o, s, l), lambda enc, s, rep: rep.lepoch),
                    ("leads", lambda enc, s, l: _leads(enc.o, s.reps[l]),
                     lambda enc, s, rep: rep.lepoch),
                    # named, and its cache says it took office (a restart keeps the cache and the HW)
                    ("named, took office", _took_office_named, lambda enc, s, rep: s.ctl.epoch)):
                def within_epoch_start(enc, s, l=l, guard=guard, epoch=epoch):
                    """What consumers saw ends within the leader's HW or before its epoch began
                    (KAFKA-7128: a follower joins the ISR only past that start)."""
                    o, rep = enc.o, s.reps[l]
                    start = enc.epoch_start(rep, epoch(enc, s, rep))
                    return _imp(o, guard(enc, s, l), o.Or(s.hist.xlen <= rep.hw, o.And(start != UNDEF, s.hist.xlen <= start)))
                out.append(Lemma(f"ExposedWithinLeaderHwOrEpochStart[r{l} {g}]", "history", within_epoch_start))

    def exposed_somewhere(enc, s):
        """Some replica still holds each record consumers saw, even when no replica is eligible
        (an empty ISR and ELR): a crash keeps the log, and only a leader's answer truncates it."""
        o, h = enc.o, s.hist
        return o.And(*[_imp(o, j < h.xlen, o.Or(*[_holds_at(o, rep, j, h.exposed[j]) for rep in s.reps]))
                       for j in range(L)])
    out.append(Lemma("ExposedHeldSomewhere", "history", exposed_somewhere))

    def exposed_once(enc, s):
        """Consumers saw each record at one offset, and only records produced."""
        o, h = enc.o, s.hist
        return o.And(*[_imp(o, j < h.xlen, h.exposed[j] < h.produced) for j in range(L)],
                     *[_imp(o, k < h.xlen, h.exposed[j] != h.exposed[k]) for j in range(L) for k in range(j + 1, L)])
    out.append(Lemma("ExposedOnce", "history", exposed_once))

    def acked_exposed(enc, s):
        o, h = enc.o, s.hist
        return o.And(*[_imp(o, off != UNDEF, o.And(off < h.xlen, o.select(list(h.exposed), off) == rec))
                       for rec, off in enumerate(h.acked)])
    out.append(Lemma("AckedExposed", "history", acked_exposed))
    return out


def _exposed_epoch_templates(n: int, L: int) -> List[Lemma]:
    """Over the history variable ``exposed_epoch`` (Model(cfg, history_variables=True)): when each
    offset was exposed, by the leader of which epoch. Leader completeness in Kafka's form: a leader
    holds every record exposed up to its epoch (the ISR that elected it held them, and a leader
    never truncates), while a zombie may lack what was exposed after it left office."""
    def exposed(o, s, j, pred):
        h = s.hist
        return _imp(o, j < h.xlen, pred(h.exposed[j], h.xepoch[j]))
    epochs = {
        "leader, up to its epoch": (lambda o, s, r: _leads(o, s.reps[r]), lambda o, s, r: s.reps[r].lepoch, False),
        "leader, before its epoch": (lambda o, s, r: _leads(o, s.reps[r]), lambda o, s, r: s.reps[r].lepoch, True),
        "named, up to the controller's epoch": (lambda o, s, r: s.ctl.leader == r, lambda o, s, r: s.ctl.epoch, False),
        "named, before the controller's epoch": (lambda o, s, r: s.ctl.leader == r, lambda o, s, r: s.ctl.epoch, True),
        "controller's ISR, before the controller's epoch": (lambda o, s, r: s.ctl.isr[r],
                                                            lambda o, s, r: s.ctl.epoch, True),
    }
    out = []
    for r in range(n):
        for g, (guard, epoch, strict) in epochs.items():
            def held(enc, s, r=r, guard=guard, epoch=epoch, strict=strict):
                o, rep = enc.o, s.reps[r]
                e = epoch(o, s, r)
                return _imp(o, guard(o, s, r), o.And(*[exposed(o, s, j, lambda x, xe: _imp(
                    o, xe < e if strict else xe <= e, _holds_at(o, rep, j, x))) for j in range(L)]))
            out.append(Lemma(f"ExposedHeldByEpoch[r{r}, {g}]", "history", held))

        def own_below_hw(enc, s, r=r):
            """What a leader exposed in its epoch is below its HW (a leader's HW never falls)."""
            o, rep = enc.o, s.reps[r]
            return _imp(o, _leads(o, rep), o.And(*[exposed(o, s, j, lambda x, xe: _imp(o, xe == rep.lepoch, j < rep.hw))
                                                  for j in range(L)]))
        out.append(Lemma(f"ExposedInItsEpochBelowHw[r{r}]", "history", own_below_hw))

        for g, role in (("leader", LEADER), ("follower", FOLLOWER)):
            def hw_exposed_by_then(enc, s, r=r, role=role):
                """Below a replica's HW every offset was exposed by its leader epoch or earlier: a
                leader exposes what it moves its HW over, a follower takes the HW of its epoch's
                leader, and neither HW outlives a change of epoch upward (a zombie keeps the HW of
                its own epoch)."""
                o, rep, h = enc.o, s.reps[r], s.hist
                return _imp(o, o.And(rep.alive, rep.role == role),
                            o.And(*[_imp(o, j < rep.hw, o.And(j < h.xlen, h.xepoch[j] <= rep.lepoch)) for j in range(L)]))
            out.append(Lemma(f"HwExposedByItsEpoch[r{r} {g}]", "history", hw_exposed_by_then))

        def sole_member_not_behind(enc, s, r=r):
            """A leader whose ISR view is itself alone (the controller agreed to it) is at the
            newest exposing epoch or later: nobody else is eligible until it expands the ISR
            again, so no other replica took office and exposed records after its epoch."""
            o, rep = enc.o, s.reps[r]
            return _imp(o, _alone_in_its_isr_view(o, s, r),
                        o.And(*[exposed(o, s, j, lambda x, xe: xe <= rep.lepoch) for j in range(L)]))
        out.append(Lemma(f"ExposedByItsEpoch[r{r} leader, sole member of its ISR view]", "history", sole_member_not_behind))

        def entry_not_newer(enc, s, r=r):
            """A copy of an exposed record carries an epoch no newer than the one that exposed it."""
            o, rep = enc.o, s.reps[r]
            return o.And(*[exposed(o, s, j, lambda x, xe: _imp(o, _holds_at(o, rep, j, x), rep.log[j][1] <= xe))
                           for j in range(L)])
        out.append(Lemma(f"ExposedEntryNotNewer[r{r}]", "history", entry_not_newer))

    def ordered(enc, s):
        o, h = enc.o, s.hist
        return o.And(*[_imp(o, j + 1 < h.xlen, h.xepoch[j] <= h.xepoch[j + 1]) for j in range(L - 1)])
    out.append(Lemma("ExposedEpochsOrdered", "history", ordered))

    def within_controller(enc, s):
        o, h = enc.o, s.hist
        return o.And(*[_imp(o, j < h.xlen, h.xepoch[j] <= s.ctl.epoch) for j in range(L)])
    out.append(Lemma("ExposedEpochWithinController", "history", within_controller))
    return out


def _epoch_leader_templates(n: int, L: int, E: int, cached: bool) -> List[Lemma]:
    """Over the history variable ``epoch_leader`` (who the controller named with each epoch): one
    leader per epoch, and who may cache an epoch without its records, said after that leader left
    office (which the state alone cannot: the recordless cache entry is all that is left of it)."""
    def leader_of(o, s, e):
        return o.select(list(s.hist.eleader), e)
    out = []
    for r in range(n):
        def leads_own(enc, s, r=r):
            o, rep = enc.o, s.reps[r]
            return _imp(o, rep.role == LEADER, leader_of(o, s, rep.lepoch) == r)
        out.append(Lemma(f"EpochLeader[r{r} leads its epoch]", "history", leads_own))

        def follows_named(enc, s, r=r):
            o, rep = enc.o, s.reps[r]
            return _imp(o, rep.role == FOLLOWER, leader_of(o, s, rep.lepoch) == rep.leader)
        out.append(Lemma(f"EpochLeader[r{r} follows its epoch's leader]", "history", follows_named))

        def requests_to_leader(enc, s, r=r):
            """A Fetch or an OffsetsForLeaderEpoch request (in flight or stale) goes to the leader of
            the epoch it names."""
            o, m, st = enc.o, s.msgs[r], s.stale[r]
            return o.And(_imp(o, o.Or(m.kind == FETCH, m.kind == EPOCH_REQUEST), leader_of(o, s, m.a) == m.peer),
                         _imp(o, st.kind == FETCH, leader_of(o, s, st.a) == st.peer))
        out.append(Lemma(f"EpochLeader[r{r}'s requests go to their epoch's leader]", "history", requests_to_leader))

        def answers_from_leader(enc, s, r=r):
            o, m, rep = enc.o, s.msgs[r], s.reps[r]
            return _imp(o, o.Or(m.kind == FETCH_RESPONSE, m.kind == EPOCH_RESPONSE),
                        leader_of(o, s, rep.lepoch) == m.peer)
        out.append(Lemma(f"EpochLeader[r{r}'s answers come from its epoch's leader]", "history", answers_from_leader))

        for i, name in enumerate(_source_names(n)):
            def written_by_leader(enc, s, r=r, i=i):
                """Log Matching keyed by the epoch's leader: an entry of an epoch r led, wherever it
                is, is the one r wrote at that offset, and r still holds it (a leader never
                truncates, and a follower truncates only where it diverges from its leader's log).
                With two replicas nobody else is left to hold what r lost; with three the prefilter
                rejects it."""
                o, rep = enc.o, s.reps[r]
                _, present, slots = _src(enc, s, i)
                return o.And(*[_imp(o, o.And(present(j), leader_of(o, s, slots[j][1]) == r),
                                    o.And(j < rep.leo, rep.log[j][0] == slots[j][0], rep.log[j][1] == slots[j][1]))
                               for j in range(L)])
            out.append(Lemma(f"EpochLeader[an entry of an epoch r{r} led, in {name}, is held by r{r}]", "history",
                             written_by_leader))

        if cached:
            def recordless_by_leader(enc, s, r=r):
                """Only become_leader caches an epoch at the LEO: an epoch cached with none of its
                records is one its holder led."""
                o, rep = enc.o, s.reps[r]
                return o.And(*[_imp(o, _recordless(o, rep, k), leader_of(o, s, rep.cache[k][0]) == r)
                               for k in range(len(rep.cache))])
            out.append(Lemma(f"EpochLeader[r{r} caches recordless only an epoch it led]", "history",
                             recordless_by_leader))

            def starts_its_entries(enc, s, r=r):
                """The leader of an epoch cached it at its LEO when it took office and writes the
                epoch's entries from there: while it caches the epoch, no entry of that epoch (in
                any log or FetchResponse) sits below that start."""
                o, rep = enc.o, s.reps[r]
                out_ = []
                for k in range(len(rep.cache)):
                    e, start = rep.cache[k]
                    mine = o.And(k < rep.clen, leader_of(o, s, e) == r)
                    for _, present, slots in _sources(enc, s):
                        out_ += [_imp(o, o.And(mine, present(j), slots[j][1] == e), j >= start) for j in range(L)]
                return o.And(*out_)
            out.append(Lemma(f"EpochLeader[r{r}'s cached start of an epoch it led is where that epoch's entries start]",
                             "history", starts_its_entries))

            def stale_last_epoch(enc, s, r=r):
                """A stale Fetch's last fetched epoch (its sender's latest cached epoch then) is the
                epoch of the entry below its offset, or one its sender led without records."""
                o, st, (rec, ep) = enc.o, s.stale[r], s.hist.sentry[r]
                return _imp(o, o.And(st.kind == FETCH, st.c != UNDEF),
                            o.Or(o.And(st.b > 0, ep == st.c), leader_of(o, s, st.c) == r))
            out.append(Lemma(f"EpochLeader[r{r}'s stale Fetch names its entry's epoch or one it led]", "history",
                             stale_last_epoch))

    def not_yet_in_office(o, s):
        """The controller names a leader that has not taken office (neither its leader epoch nor its
        cache has the controller's epoch): nobody has answered at that epoch yet."""
        return o.And(s.ctl.leader != UNDEF, *[
            _imp(o, s.ctl.leader == x, o.And(rx.lepoch < s.ctl.epoch, latest_cached_epoch(o, rx) < s.ctl.epoch))
            for x, rx in enumerate(s.reps)])

    def led_since(o, s, r, e, last):
        """r led every epoch from e on, up to the last (``last`` says which epochs are past it)."""
        return o.And(o.Not(last(o, s, e)), *[o.Or(last(o, s, k), s.hist.eleader[k] == r) for k in range(e, E + 1)])
    lasts = (("to the controller's", lambda o, s, k: k > s.ctl.epoch),
             ("to the one before the controller's, whose leader is not in office",
              lambda o, s, k: o.Or(k > s.ctl.epoch, o.And(k == s.ctl.epoch, not_yet_in_office(o, s)))))
    for r in range(n):
        for g, last in lasts:
            for what, fact in (("holds them", lambda o, s, rep, j: _holds_at(o, rep, j, s.hist.exposed[j])),
                               ("has them below its HW", lambda o, s, rep, j: j < rep.hw)):
                def exposed_by_leader(enc, s, r=r, last=last, fact=fact):
                    """The same for what consumers saw: a replica that led every epoch since the one
                    that exposed an offset (it exposed it) still holds it, below its HW."""
                    o, h, rep = enc.o, s.hist, s.reps[r]
                    return o.And(*[_imp(o, o.And(j < h.xlen, o.Or(*[o.And(h.xepoch[j] == e, led_since(o, s, r, e, last))
                                                                   for e in range(E + 1)])),
                                        fact(o, s, rep, j)) for j in range(L)])
                out.append(Lemma(f"EpochLeader[r{r} led every epoch from the one that exposed an offset {g}: {what}]",
                                 "history", exposed_by_leader))
        for e in range(E + 1):
            for g, last in lasts:
                def entries_held(enc, s, r=r, e=e, last=last):
                    """A replica that led every epoch from e on never followed since (it would need
                    another leader's answer), and a leader never truncates: it holds every entry of
                    epoch e, wherever one is."""
                    o, rep = enc.o, s.reps[r]
                    since = led_since(o, s, r, e, last)
                    held = []
                    for _, present, slots in _sources(enc, s):
                        held += [_imp(o, o.And(present(j), slots[j][1] == e),
                                      o.And(j < rep.leo, rep.log[j][0] == slots[j][0], rep.log[j][1] == e))
                                 for j in range(L)]
                    return _imp(o, since, o.And(*held))
                out.append(Lemma(f"EpochLeader[r{r} led every epoch from {e} {g}: holds its entries]", "history",
                                 entries_held))

    def exposer_took_office(enc, s):
        """The leader of the epoch that exposed an offset took office at that epoch: its leader
        epoch, or the latest epoch its cache holds (which a crash keeps), is at least that epoch."""
        o, h = enc.o, s.hist
        return o.And(*[_imp(o, j < h.xlen, o.Or(*[
            o.And(leader_of(o, s, h.xepoch[j]) == x,
                  o.Or(rx.lepoch >= h.xepoch[j], latest_cached_epoch(o, rx) >= h.xepoch[j]))
            for x, rx in enumerate(s.reps)])) for j in range(L)])
    out.append(Lemma("EpochLeader[the leader of an exposing epoch took office]", "history", exposer_took_office))

    def exposer_not_behind(enc, s):
        """The same said without the cache (a restart trims an epoch cached without records): while
        the leader of an exposing epoch has a role (a restart clears it; become_leader and
        become_follower then take the controller's epoch), its leader epoch is that epoch or later."""
        o, h = enc.o, s.hist
        return o.And(*[_imp(o, o.And(j < h.xlen, leader_of(o, s, h.xepoch[j]) == x, rx.alive, rx.role != NONE),
                            rx.lepoch >= h.xepoch[j])
                       for j in range(L) for x, rx in enumerate(s.reps)])
    out.append(Lemma("EpochLeader[the leader of an exposing epoch, while it has a role, is at that epoch or later]",
                     "history", exposer_not_behind))

    def failovers(o, s, pending=()):
        return o.Sum([o.And(e <= s.ctl.epoch, s.hist.eleader[e] != PREFERRED) for e in range(1, E + 1)] + list(pending))

    def failovers_within_bounces(enc, s):
        """Only the preferred replica is elected without a failure first (elect_preferred): every
        epoch led by another replica follows a bounce the run counted (a crash, a session expiry, a
        controlled shutdown, a power failure), one election per bounce."""
        o, h = enc.o, s.hist
        return failovers(o, s) <= h.crashes + h.pfails
    out.append(Lemma("EpochLeader[epochs led by other than the preferred replica within the bounces used]",
                     "history", failovers_within_bounces))

    def pending(o, s):
        """A bounce whose election is still to come: the partition is offline, or the leader the
        controller names is down or not registered."""
        c = s.ctl
        return o.Or(c.leader == UNDEF, *[o.And(c.leader == r, o.Not(o.And(rep.alive, c.live[r])))
                                         for r, rep in enumerate(s.reps)])

    def failovers_and_pending_within_bounces(enc, s):
        """The same, counting the bounce whose election is still to come."""
        o, h = enc.o, s.hist
        return failovers(o, s, [pending(o, s)]) <= h.crashes + h.pfails
    out.append(Lemma("EpochLeader[failovers and a pending election within the bounces used]", "history",
                     failovers_and_pending_within_bounces))

    def failovers_pending_and_down_within_bounces(enc, s):
        """The same, counting besides each other broker down while the controller still has it
        registered (its session has not expired): that bounce is counted already and no
        election has spent it yet, though the controller may still hand the broker an epoch (a
        controlled shutdown elects any registered ISR member). Past the defaults: records=1
        crashes=2 max_epoch=5 proves with it and not without (docs/proofs.md)."""
        o, c = enc.o, s.ctl
        down = [o.And(o.Not(rep.alive), c.live[r], c.leader != r) for r, rep in enumerate(s.reps)]
        return failovers(o, s, [pending(o, s)] + down) <= s.hist.crashes + s.hist.pfails
    out.append(Lemma("EpochLeader[failovers, a pending election and brokers down but registered within the bounces used]",
                     "history", failovers_pending_and_down_within_bounces))

    def first_leader(enc, s):
        """The controller hands each epoch out once: epoch 0's leader is the preferred replica."""
        return s.hist.eleader[0] == PREFERRED
    out.append(Lemma("EpochLeader[epoch 0: the preferred replica]", "history", first_leader))

    def controller_named(enc, s):
        o, c = enc.o, s.ctl
        return _imp(o, c.leader != UNDEF, leader_of(o, s, c.epoch) == c.leader)
    out.append(Lemma("EpochLeader[the controller's leader]", "history", controller_named))

    def none_ahead(enc, s):
        o = enc.o
        return o.And(*[_imp(o, e > s.ctl.epoch, x == UNDEF) for e, x in enumerate(s.hist.eleader)])
    out.append(Lemma("EpochLeader[none past the controller's epoch]", "history", none_ahead))

    def handed_out_after(o, s, k, e):
        """Epoch e was handed out after epoch k (the controller is at e or later)."""
        return o.And(k < e, e <= s.ctl.epoch)

    def exposed_by_later_leaders(enc, s):
        """A leader the controller named after the epoch that exposed an offset holds what consumers
        saw there: it was elected from replicas that hold it (the ISR, KIP-966's ELR or last known
        leader), and a replica that holds an exposed entry keeps it (a follower truncates only
        where it diverges from its leader, which holds it too)."""
        o, h = enc.o, s.hist
        out_ = []
        for j in range(L):
            for e in range(1, E + 1):
                named = o.And(j < h.xlen, handed_out_after(o, s, h.xepoch[j], e))
                out_ += [_imp(o, o.And(named, h.eleader[e] == x), _holds_at(o, rx, j, h.exposed[j]))
                         for x, rx in enumerate(s.reps)]
        return o.And(*out_)
    out.append(Lemma("EpochLeader[a leader named after an exposing epoch holds what it exposed]", "history",
                     exposed_by_later_leaders))

    for l in range(n):
        for x in range(n):
            if x == l:
                continue

            def newer_named_in_stale_view(enc, s, l=l, x=x):
                """A stale leader's ISR view holds every replica the controller named leader of a
                newer epoch (NewerLeaderInStaleView, said of every newer epoch, not only the
                controller's): it was elected from an ISR the stale leader could shrink only at
                its own epoch, through its view."""
                o, rl = enc.o, s.reps[l]
                newer = o.Or(*[o.And(handed_out_after(o, s, rl.lepoch, e), s.hist.eleader[e] == x) for e in range(1, E + 1)])
                return _imp(o, o.And(_leads(o, rl), newer), rl.isr[x])
            out.append(Lemma(f"EpochLeader[a leader named with a newer epoch, r{x}, is in stale leader r{l}'s ISR view]",
                             "history", newer_named_in_stale_view))

    def unsucceeded(o, s, r):
        """r leads, and every epoch the controller handed out after r's was handed to r: nobody
        else has led since, whatever the others' caches forgot (a restart trims an epoch cached
        without records), so nobody else exposed anything."""
        rep = s.reps[r]
        return o.And(_leads(o, rep), *[_imp(o, handed_out_after(o, s, rep.lepoch, e), s.hist.eleader[e] == r)
                                       for e in range(1, E + 1)])
    for r in range(n):
        out += _held_by(r, "leader no other replica was named after", unsucceeded, L)

    def last_known_led(enc, s):
        """KIP-966: the last known leader is the leader the controller named with its epoch (the ISR
        became empty when that leader left it; no election since, which clears it)."""
        o, c = enc.o, s.ctl
        if not c.lke:
            return True
        return o.And(*[_imp(o, c.lke[x], leader_of(o, s, c.epoch) == x) for x in range(n)])
    out.append(Lemma("EpochLeader[the last known leader led the controller's epoch]", "history", last_known_led))

    def every_epoch_led(enc, s):
        o = enc.o
        return o.And(*[_imp(o, e <= s.ctl.epoch, x != UNDEF) for e, x in enumerate(s.hist.eleader)])
    out.append(Lemma("EpochLeader[every epoch handed out names a leader]", "history", every_epoch_led))
    return out


def _holds_stale_entry(o, st, rep, rec):
    """rep's log still holds the stale Fetch's entry: its record just below the Fetch's offset."""
    return o.And(st.b <= rep.leo, o.select([e[0] for e in rep.log], st.b - 1) == rec)


def _validates(enc, rx, st):
    """rx's epoch cache validates the Fetch ``st``: endOffsetFor its last fetched epoch is that epoch,
    ending at or past its offset."""
    e, end = enc.end_offset_for(rx.cache, rx.clen, rx.leo, st.c)
    return enc.o.And(st.c != UNDEF, e == st.c, end >= st.b)


def _stale_entry_templates(n: int, L: int, cached: bool) -> List[Lemma]:
    """Over the history variable ``stale_entry`` (the entry below a stale Fetch's offset in its
    sender's log when it was sent): what the Fetch claimed, which a leader may still act on after
    the sender's log changed."""
    out = []
    for f in range(n):
        def present(enc, s, f=f):
            o, st, (rec, ep) = enc.o, s.stale[f], s.hist.sentry[f]
            asked = o.And(st.kind == FETCH, st.b > 0)
            return o.And(_imp(o, asked, o.And(rec != UNDEF, ep != UNDEF, ep <= st.c, rec < s.hist.produced)),
                         _imp(o, o.Not(asked), o.And(rec == UNDEF, ep == UNDEF)))
        out.append(Lemma(f"StaleEntry[r{f}: below its offset, within its last fetched epoch]", "record-offset", present))

        for i, name in enumerate(_source_names(n)):
            def at_one_offset(enc, s, f=f, i=i):
                """A record sits at one offset with one epoch everywhere: so does the stale entry."""
                o, st, (rec, ep) = enc.o, s.stale[f], s.hist.sentry[f]
                _, inside, sl = _src(enc, s, i)
                return _imp(o, o.And(st.kind == FETCH, st.b > 0), o.And(*[
                    _imp(o, o.And(inside(j), sl[j][0] == rec), o.And(j == st.b - 1, sl[j][1] == ep))
                    for j in range(L)]))
            out.append(Lemma(f"StaleEntry[r{f}: its record at its offset in {name}]", "record-offset", at_one_offset))

        def sender_holds(enc, s, f=f):
            o, st, rf, (rec, ep) = enc.o, s.stale[f], s.reps[f], s.hist.sentry[f]
            return _imp(o, o.And(st.kind == FETCH, st.b > 0), _holds_stale_entry(o, st, rf, rec))
        out.append(Lemma(f"StaleEntry[r{f}: still held by its sender]", "record-offset", sender_holds))

        def held_while_acted_on(enc, s, f=f, validating=False, pending=False):
            """The same while the Fetch can still move anything: its sender truncates only on an
            answer of a newer epoch, or of a leader whose log diverges there, and the stale Fetch
            then reaches a replica that refuses it (not a leader at its epoch: KIP-320's fence) or
            whose cache no longer validates its last fetched epoch. ``pending``: also while its
            receiver has not reached the Fetch's epoch (by leader epoch or cache): its sender sent
            it at that epoch, and nobody answers at an epoch before its leader takes office."""
            o, st, (rec, ep) = enc.o, s.stale[f], s.hist.sentry[f]
            acted = []
            for x, rx in enumerate(s.reps):
                live = enc.accepts(rx, st.a)
                if validating:
                    live = o.And(live, _validates(enc, rx, st))
                if pending:
                    live = o.Or(live, o.And(rx.lepoch < st.a, latest_cached_epoch(o, rx) < st.a))
                acted.append(o.And(st.peer == x, live))
            return _imp(o, o.And(st.kind == FETCH, st.b > 0, o.Or(*acted)), _holds_stale_entry(o, st, s.reps[f], rec))
        out.append(Lemma(f"StaleEntry[r{f}: held by its sender while its receiver would accept it]", "record-offset",
                         held_while_acted_on))
        if cached:
            out.append(Lemma(f"StaleEntry[r{f}: held by its sender while its receiver would accept and validate it]",
                             "record-offset", lambda enc, s, f=f: held_while_acted_on(enc, s, f, True)))
            out.append(Lemma(f"StaleEntry[r{f}: held by its sender while its receiver is short of its epoch, "
                             f"or would accept and validate it]", "record-offset",
                             lambda enc, s, f=f: held_while_acted_on(enc, s, f, True, True)))

            def held_within_its_epoch(enc, s, f=f):
                """While the controller is still at the Fetch's epoch, its sender has had answers
                from that epoch's leader alone; where that leader's cache validates the Fetch its
                log agrees with the sender's up to the offset, so no answer cut the sender below it
                (whatever the receiver's role: a restart keeps its log and cache)."""
                o, st, (rec, ep) = enc.o, s.stale[f], s.hist.sentry[f]
                validated = [o.And(st.peer == x, _validates(enc, rx, st)) for x, rx in enumerate(s.reps)]
                return _imp(o, o.And(st.kind == FETCH, st.b > 0, st.a == s.ctl.epoch, o.Or(*validated)),
                            _holds_stale_entry(o, st, s.reps[f], rec))
            out.append(Lemma(f"StaleEntry[r{f}: held by its sender while the controller is at its epoch and its "
                             f"receiver's cache validates it]", "record-offset", held_within_its_epoch))

            for x in range(n):
                def validated(enc, s, f=f, x=x):
                    """A replica whose cache validates the stale Fetch (endOffsetFor its last fetched
                    epoch: that epoch, ending at or past the offset) holds the entry below it."""
                    o, st, rx, (rec, ep) = enc.o, s.stale[f], s.reps[x], s.hist.sentry[f]
                    ok = o.And(st.kind == FETCH, st.b > 0, _validates(enc, rx, st))
                    return _imp(o, ok, o.And(_holds_stale_entry(o, st, rx, rec),
                                             o.select([x_[1] for x_ in rx.log], st.b - 1) == ep))
                out.append(Lemma(f"StaleEntry[r{f}: held by r{x} where its cache validates the Fetch]",
                                 "record-offset", validated))
    return out


def _broker_epoch_templates(n: int) -> List[Lemma]:
    """KIP-903 (modes with broker epochs): a Fetch carries the broker epoch of its sender's
    registration and the controller counts registrations, so no Fetch (sent, or abandoned and still
    in flight) nor a leader's record of it names a later one; the Fetch in flight names the latest."""
    def registered(enc, s, r, in_flight):
        o, m, st, c = enc.o, s.msgs[r], s.stale[r], s.ctl
        return o.And(_imp(o, m.kind == FETCH, in_flight(m.d, c.bepochs[r])),
                     _imp(o, st.kind != NO_MSG, st.d <= c.bepochs[r]),
                     *[_imp(o, o.And(_leads(o, x), x.rbe[r] != UNDEF), x.rbe[r] <= c.bepochs[r]) for x in s.reps])
    out = []
    for r in range(n):
        for what, in_flight in (("its Fetches name a broker epoch the controller registered", lambda d, e: d <= e),
                                ("its Fetch in flight names its current broker epoch", lambda d, e: d == e)):
            out.append(Lemma(f"r{r}: {what}", "implication",
                             lambda enc, s, r=r, in_flight=in_flight: registered(enc, s, r, in_flight)))
    return out


def _scalar_templates(n: int) -> List[Lemma]:
    terms: List[Tuple[str, Callable]] = []
    for r in range(n):
        terms += [(f"leo(r{r})", lambda s, r=r: s.reps[r].leo), (f"hw(r{r})", lambda s, r=r: s.reps[r].hw),
                  (f"epoch(r{r})", lambda s, r=r: s.reps[r].lepoch)]
    terms += [("ctl.epoch", lambda s: s.ctl.epoch), ("produced", lambda s: s.hist.produced),
              ("exposed", lambda s: s.hist.xlen)]
    out = []
    for x, tx in terms:
        for y, ty in terms:
            if x == y or (x.startswith("epoch") or x == "ctl.epoch") != (y.startswith("epoch") or y == "ctl.epoch"):
                continue          # offsets with offsets, epochs with epochs
            out.append(Lemma(f"{x} <= {y}", "scalar-order", lambda enc, s, tx=tx, ty=ty: tx(s) <= ty(s)))
    for a in range(n):
        for b in range(n):
            if a == b:
                continue
            for x, fa, fb in (("hw", lambda s, a: s.reps[a].hw, lambda s, b: s.reps[b].hw),
                              ("hw/leo", lambda s, a: s.reps[a].hw, lambda s, b: s.reps[b].leo),
                              ("epoch", lambda s, a: s.reps[a].lepoch, lambda s, b: s.reps[b].lepoch)):
                def led(enc, s, a=a, b=b, fa=fa, fb=fb):
                    o = enc.o
                    return _imp(o, o.And(_leads(o, s.reps[b]), s.reps[a].role == FOLLOWER,
                                         s.reps[a].leader == b, s.reps[a].lepoch == s.reps[b].lepoch), fa(s, a) <= fb(s, b))
                out.append(Lemma(f"{x}(r{a}) <= {x}(r{b}) [r{a} follows leader r{b} at its epoch]", "scalar-order", led))
    for l in range(n):
        def hw_caught_up(enc, s, l=l):
            """maybeIncrementLeaderHW runs after every step that moves a leader's LEO, a follower's
            remote LEO or the ISR view: a leader's HW is at the lowest LEO of its ISR view."""
            o, rep = enc.o, s.reps[l]
            return _imp(o, _leads(o, rep), o.Or(rep.hw >= rep.leo, *[o.And(rep.isr[f], rep.remote[f] <= rep.hw)
                                                                      for f in range(n) if f != l]))
        out.append(Lemma(f"hw(r{l}) is the lowest LEO of its ISR view [r{l} leads]", "scalar-order", hw_caught_up))
    return out


ATOM_NAMES = ("alive", "leader", "follower", "no role", "named by the controller", "in the ISR", "live",
              "at the controller's epoch", "fetching", "a message in flight", "a stale fetch", "in its own ISR view")


def _atoms(o, s, r):
    rep, c, m = s.reps[r], s.ctl, s.msgs[r]
    return [("alive", rep.alive), ("leader", rep.role == LEADER), ("follower", rep.role == FOLLOWER),
            ("no role", rep.role == NONE), ("named by the controller", c.leader == r), ("in the ISR", c.isr[r]),
            ("live", c.live[r]), ("at the controller's epoch", rep.lepoch == c.epoch),
            ("fetching", rep.truncating == FETCHING), ("a message in flight", m.kind != NO_MSG),
            ("a stale fetch", s.stale[r].kind != NO_MSG), ("in its own ISR view", rep.isr[r])] + (
        [("in the ELR", c.elr[r]), ("the last known leader", c.lke[r])] if c.elr else [])


def _implication_templates(n: int) -> List[Lemma]:
    out = []
    names = ATOM_NAMES
    k = len(names)
    for r in range(n):
        for i in range(k):
            for j in range(k):
                if i == j:
                    continue
                for neg in (False, True):
                    def imp(enc, s, r=r, i=i, j=j, neg=neg):
                        o = enc.o
                        atoms = _atoms(o, s, r)
                        b = atoms[j][1]
                        return _imp(o, atoms[i][1], o.Not(b) if neg else b)
                    out.append(Lemma(f"r{r}: {names[i]} -> {'not ' if neg else ''}{names[j]}", "implication", imp))
    for r in range(n):
        for what, body in (
                ("a follower's leader is another replica",
                 lambda o, s, r: _imp(o, s.reps[r].role == FOLLOWER, s.reps[r].leader != r)),
                ("its message is with another replica",
                 lambda o, s, r: _imp(o, s.msgs[r].kind != NO_MSG, s.msgs[r].peer != r)),
                ("its message is with its leader",
                 lambda o, s, r: _imp(o, s.msgs[r].kind != NO_MSG, s.msgs[r].peer == s.reps[r].leader)),
                ("its stale fetch went to another replica",
                 lambda o, s, r: _imp(o, s.stale[r].kind != NO_MSG, s.stale[r].peer != r))):
            out.append(Lemma(f"r{r}: {what}", "implication", lambda enc, s, r=r, body=body: body(enc.o, s, r)))

        def below_ctl(enc, s, r=r):
            o, m, st, c = enc.o, s.msgs[r], s.stale[r], s.ctl
            return o.And(_imp(o, o.Or(m.kind == FETCH, m.kind == 3, m.kind == 4), m.a <= c.epoch),
                         _imp(o, st.kind != NO_MSG, st.a <= c.epoch))
        out.append(Lemma(f"r{r}: its messages carry epochs at most the controller's", "implication", below_ctl))
        for what, body in (
                ("fetching: no OffsetsForLeaderEpoch in flight",
                 lambda o, s, r: _imp(o, s.reps[r].truncating == FETCHING, o.And(s.msgs[r].kind != 3, s.msgs[r].kind != 4))),
                ("truncating: no Fetch or FetchResponse in flight",
                 lambda o, s, r: _imp(o, s.reps[r].truncating != FETCHING,
                                      o.And(s.msgs[r].kind != FETCH, s.msgs[r].kind != FETCH_RESPONSE))),
                ("a message in flight: a follower",
                 lambda o, s, r: _imp(o, s.msgs[r].kind != NO_MSG, o.And(s.reps[r].alive, s.reps[r].role == FOLLOWER)))):
            out.append(Lemma(f"r{r}: {what}", "implication", lambda enc, s, r=r, body=body: body(enc.o, s, r)))

        def message_epoch(enc, s, r=r):
            o, m, rep = enc.o, s.msgs[r], s.reps[r]
            return _imp(o, o.Or(m.kind == FETCH, m.kind == 3), m.a == rep.lepoch)
        out.append(Lemma(f"r{r}: its requests carry its leader epoch", "implication", message_epoch))

        def stale_epoch(enc, s, r=r):
            o, m, rep = enc.o, s.stale[r], s.reps[r]
            return _imp(o, m.kind != NO_MSG, m.a <= rep.lepoch)
        out.append(Lemma(f"r{r}: its stale fetch carries an epoch at most its own", "implication", stale_epoch))

        def stale_epoch_unless_restarted(enc, s, r=r):
            """A stop forgets the leader epoch (UNDEF) and keeps the Fetch out; the next LeaderAndIsr
            brings the controller's epoch, never below the Fetch's."""
            o, m, rep = enc.o, s.stale[r], s.reps[r]
            return _imp(o, m.kind != NO_MSG, o.Or(m.a <= rep.lepoch, rep.lepoch == UNDEF))
        out.append(Lemma(f"r{r}: its stale fetch carries an epoch at most its own unless it stopped since",
                         "implication", stale_epoch_unless_restarted))
    for l in range(n):
        for f in range(n):
            if f == l:
                continue

            def pending(o, s, l):
                return o.And(s.ctl.leader == l, s.reps[l].lepoch < s.ctl.epoch)

            # while the leader the controller named has not taken office, its followers at the new
            # epoch have fetched nothing and had no answer
            parts = (
                ("a fetching follower at the new epoch has an empty log",
                 lambda o, s, f: _imp(o, o.And(s.reps[f].lepoch == s.ctl.epoch, s.reps[f].truncating == FETCHING),
                                      s.reps[f].leo == 0)),
                ("no answer at the new epoch",
                 lambda o, s, f: _imp(o, s.reps[f].lepoch == s.ctl.epoch,
                                      o.And(s.msgs[f].kind != FETCH_RESPONSE, s.msgs[f].kind != 4))),
                ("a Fetch at the new epoch asks from 0",
                 lambda o, s, f: _imp(o, o.And(s.msgs[f].kind == FETCH, s.msgs[f].a == s.ctl.epoch), s.msgs[f].b == 0)),
                ("a stale Fetch at the new epoch asks from 0",
                 lambda o, s, f: _imp(o, o.And(s.stale[f].kind == FETCH, s.stale[f].a == s.ctl.epoch),
                                      s.stale[f].b == 0)))
            for what, body in parts:
                out.append(Lemma(f"r{f}: {what} while r{l} is named but not in office", "implication",
                                 lambda enc, s, l=l, f=f, body=body: _imp(enc.o, pending(enc.o, s, l), body(enc.o, s, f))))
    out.append(Lemma("the controller's ISR is not empty", "implication", lambda enc, s: enc.o.Or(*s.ctl.isr)))
    for r in range(n):
        def current_leader(enc, s, r=r):
            """A leader at the controller's epoch is the one it names (or the partition is offline)."""
            o, rep, c = enc.o, s.reps[r], s.ctl
            return _imp(o, o.And(rep.role == LEADER, rep.lepoch == c.epoch), o.Or(c.leader == r, c.leader == UNDEF))
        out.append(Lemma(f"r{r}: a leader at the controller's epoch is named by it or none is", "implication",
                         current_leader))
    for a in range(n):
        for b in range(a + 1, n):
            def one_leader(enc, s, a=a, b=b):
                o, ra, rb = enc.o, s.reps[a], s.reps[b]
                return o.Not(o.And(ra.role == LEADER, rb.role == LEADER, ra.lepoch == rb.lepoch))
            out.append(Lemma(f"leaders r{a}, r{b} hold different epochs", "implication", one_leader))
    return out


# ---------------------------------------------------------------- clauses over boolean atoms

def state_atoms(o, s) -> List[Tuple[str, object]]:
    """The boolean facts the clause family is built from: each replica's (``_atoms``), the kind
    of each message in flight and its peer, and how two replicas' epochs, LEOs and HWs compare."""
    n = len(s.reps)
    out = []
    for r in range(n):
        out += [(f"r{r} {name}", term) for name, term in _atoms(o, s, r)]
        rep = s.reps[r]
        out += [(f"r{r} hw = leo", rep.hw == rep.leo), (f"r{r} truncating again", rep.truncating == TRUNCATING_AGAIN)]
        out += [(f"r{p} in r{r}'s ISR view", rep.isr[p]) for p in range(n) if p != r]
        m = s.msgs[r]
        out += [(f"r{r} sent {what}", m.kind == kind) for kind, what in
                ((FETCH, "a Fetch"), (FETCH_RESPONSE, "a FetchResponse"), (EPOCH_REQUEST, "an epoch request"),
                 (EPOCH_RESPONSE, "an epoch answer"))]
        if n > 2:
            out += [(f"r{r}'s message is with r{p}", m.peer == p) for p in range(n) if p != r]
            out += [(f"r{r}'s stale fetch is with r{p}", s.stale[r].peer == p) for p in range(n) if p != r]
            out += [(f"r{r} follows r{p}", rep.leader == p) for p in range(n) if p != r]
    for a in range(n):
        for b in range(a + 1, n):
            ra, rb = s.reps[a], s.reps[b]
            for what, x, y in (("epoch", ra.lepoch, rb.lepoch), ("leo", ra.leo, rb.leo), ("hw", ra.hw, rb.hw)):
                out += [(f"r{a} {what} = r{b} {what}", x == y), (f"r{a} {what} < r{b} {what}", x < y)]
    return out


class Clauses:
    """The clause family: clauses of at most ``size`` literals over ``state_atoms`` that hold in
    all ``states``, computed on the set of atom valuations seen (so it costs little whatever the
    number of states). Houdini starts from the strongest (``strongest``: none implied by a shorter
    one that holds) and, when z3 drops a one-literal clause, tries its weakenings that hold
    (``weakenings``), as Daikon and ICE learners walk the lattice: hundreds of conjuncts at a time
    instead of tens of thousands.

    >>> from hwcheck.spec import Config, Model
    >>> from hwcheck.checker.symbolic import CONCRETE, Encoding
    >>> model = Model(Config(mode="kip380", records=1, crashes=1))
    >>> clauses = Clauses(Encoding(model, CONCRETE), reachable(model)[0])
    >>> "not r0 alive -> not r0 leader" in [lem.name for lem in clauses.strongest()]
    True
    >>> len(clauses.weakenings("not r0 alive -> not r0 leader"))
    0
    """

    def __init__(self, cenc: Encoding, states: Sequence, size: int = 3):
        self.size = size
        self.names = [name for name, _ in state_atoms(cenc.o, cenc.of_state(states[0]))] if states else []
        seen = {tuple(bool(t) for _, t in state_atoms(cenc.o, cenc.of_state(st))) for st in states}
        self.P = np.array(sorted(seen), dtype=bool).reshape(len(seen), len(self.names))   # valuations x atoms
        self.lits: Dict[str, Tuple[Tuple[int, bool], ...]] = {}
        self._last: tuple = (None, None, [])          # (state, algebra, its atoms): every clause reads the same

    def _atoms(self, o, s) -> list:
        if not (self._last[0] is s and self._last[1] is o):
            self._last = (s, o, [t for _, t in state_atoms(o, s)])
        return self._last[2]

    def _holds(self, lits) -> bool:
        """No valuation seen makes every literal (atom, polarity) false."""
        atoms = [i for i, _ in lits]
        return not (self.P[:, atoms] != np.array([v for _, v in lits])).all(axis=1).any()

    def _lemma(self, lits) -> Lemma:
        lits = tuple(sorted(lits))
        pre = [("" if not v else "not ") + self.names[i] for i, v in lits[:-1]]     # a & b -> c
        i, v = lits[-1]
        name = f"{' & '.join(pre)} -> {'' if v else 'not '}{self.names[i]}" if pre else f"{'' if v else 'not '}{self.names[i]}"
        self.lits[name] = lits

        def term(enc, s, lits=lits):
            atoms = self._atoms(enc.o, s)
            return enc.o.Or(*[atoms[i] if v else enc.o.Not(atoms[i]) for i, v in lits])
        return Lemma(name, "clause", term)

    def strongest(self) -> List[Lemma]:
        k, out, found = len(self.names), [], set()
        for width in range(1, self.size + 1):
            for atoms in itertools.combinations(range(k), width):
                for values in itertools.product((True, False), repeat=width):
                    lits = tuple(zip(atoms, values))
                    if any(sub in found for w in range(1, width) for sub in itertools.combinations(lits, w)):
                        continue
                    if self._holds(lits):
                        found.add(lits)
                        out.append(self._lemma(lits))
        return out

    def literals(self, name: str) -> List[Tuple[str, bool]]:
        """A clause's literals by the atoms' names (what a lemma file stores)."""
        return [(self.names[i], v) for i, v in self.lits[name]]

    def from_literals(self, literals: Sequence[Tuple[str, bool]]) -> Lemma:
        """``literals`` read back (KeyError: an atom this layout lacks)."""
        index = {name: i for i, name in enumerate(self.names)}
        return self._lemma(tuple((index[name], bool(v)) for name, v in literals))

    def weakenings(self, name: str) -> List[Lemma]:
        """The clauses one literal longer than ``name``'s that hold, for a one-literal clause (an
        atom constant in every state seen: a fact the small bounds may only make look constant)."""
        lits = self.lits.get(name)
        if lits is None or len(lits) > 1:           # only a fact found constant: the rest would be too many
            return []
        used = {i for i, _ in lits}
        return [self._lemma(lits + ((i, v),)) for i in range(len(self.names)) if i not in used
                for v in (True, False) if self._holds(lits + ((i, v),))]


RECEIVE = ("follower_handle_fetch", "follower_handle_epoch_response", "leader_handle_fetch",
           "leader_handle_stale_fetch")


def lookahead(enc: Encoding, goals: Sequence[str]) -> List[Lemma]:
    """For every message-receiving step of the run: taking it keeps each goal (and, for a follower,
    the acknowledged records it holds while in the controller's ISR)."""
    out = []
    for i, label in enumerate(enc.instances):
        if label[0] not in RECEIVE:
            continue
        tag = f"{label[0]}({','.join(f'r{x}' for x in label[1:])})"
        for goal in goals:
            def keeps(enc, s, i=i, goal=goal):
                guard, t = enc.action(i, s)
                return _imp(enc.o, guard, enc.bounds_ok(t) if goal == BOUNDS else enc.invariant(goal, t))
            if goal != BOUNDS:
                out.append(Lemma(f"{tag} keeps {goal}", "lookahead", keeps))
        if label[0].startswith("follower"):
            f = label[1]

            def keeps_acked(enc, s, i=i, f=f):
                o = enc.o
                guard, t = enc.action(i, s)
                rep = t.reps[f]
                held = o.And(*[_imp(o, off != UNDEF, o.And(off < rep.leo, o.select([e[0] for e in rep.log], off) == rec))
                               for rec, off in enumerate(t.hist.acked)])
                return _imp(o, o.And(guard, s.ctl.isr[f]), held)
            out.append(Lemma(f"{tag} keeps the acknowledged records of an ISR member", "lookahead", keeps_acked))
    # two steps: a request answered, then the answer handled by the follower
    index = {label: i for i, label in enumerate(enc.instances)}
    for (ask, answer) in (("leader_handle_epoch_request", "follower_handle_epoch_response"),
                          ("leader_handle_fetch", "follower_handle_fetch")):
        for label, i in index.items():
            if label[0] != ask or (answer, label[2]) not in index:
                continue
            l, f = label[1], label[2]
            j = index[(answer, f)]
            tag = f"{ask}(r{l},r{f}) then {answer}(r{f})"

            def keeps2(enc, s, i=i, j=j, f=f, goals=tuple(g for g in goals if g != BOUNDS)):
                o = enc.o
                g1, t1 = enc.action(i, s)
                g2, t2 = enc.action(j, t1)
                rep = t2.reps[f]
                held = [_imp(o, off != UNDEF, o.And(off < rep.leo, o.select([e[0] for e in rep.log], off) == rec))
                        for rec, off in enumerate(t2.hist.acked)]
                return _imp(o, o.And(g1, g2), o.And(_imp(o, s.ctl.isr[f], o.And(*held)),
                                                    *[enc.invariant(goal, t2) for goal in goals]))
            out.append(Lemma(f"{tag} keeps the property and an ISR member's acknowledged records", "lookahead",
                             keeps2))
    return out


def hand_written() -> List[Lemma]:
    """spec/auxiliary.py's lemmas (AUXILIARY and CANDIDATES), as candidates (their encodings are in
    symbolic.INVARIANT_ENCODINGS)."""
    return [Lemma(name, "hand-written", lambda enc, s, name=name: enc.invariant(name, s))
            for name, _ in AUXILIARY + CANDIDATES]


def proof_model(cfg) -> Model:
    """The model ``hwcheck prove`` checks: the spec with its history variables ``exposed_epoch``,
    ``epoch_leader`` and ``stale_entry`` (spec/model.py), which the templates of
    ``_exposed_epoch_templates``, ``_epoch_leader_templates`` and ``_stale_entry_templates`` read."""
    return Model(cfg, history_variables=True)


def candidates(enc: Encoding, families: Optional[Sequence[str]] = None) -> List[Lemma]:
    """Every template instance for the layout of ``enc`` (optionally only some families), then the
    hand-written lemmas; names are unique."""
    n, L, C = enc.n, enc.L, enc.C
    out = (_record_templates(n, L) + _epoch_templates(n, L, C, enc.assign_rule is not None) + _fetch_templates(n, L)
           + _agreement_templates(n, L, enc.assign_rule is not None, enc.mode.truncate_on_fetch)
           + (_epoch_answer_templates(n, L, enc.mode.truncate_on_fetch) if enc.assign_rule is not None else [])
           + _isr_templates(n) + _history_templates(n, L, enc.assign_rule is not None)
           + (_exposed_epoch_templates(n, L) + _epoch_leader_templates(n, L, enc.cfg.max_epoch, enc.assign_rule is not None)
              + _stale_entry_templates(n, L, enc.assign_rule is not None) if enc.tracks_history else [])
           + _scalar_templates(n) + _implication_templates(n)
           + (_broker_epoch_templates(n) if enc.mode.broker_epochs else [])
           + hand_written())
    if families is not None:
        out = [lem for lem in out if lem.family in families]
    # (the lookahead family depends on the property: discover adds it)
    assert len({lem.name for lem in out}) == len(out)
    return out


# ---------------------------------------------------------------- the bfs prefilter

def reachable(model, limit: Optional[int] = None) -> Tuple[list, bool]:
    """Reachable states breadth first (whole levels), and whether that is all of them."""
    seen = set(model.init_states())
    frontier, out = list(seen), list(seen)
    while frontier:
        if limit is not None and len(out) >= limit:
            return out, False
        nxt = []
        for s in frontier:
            _CTRL_C.poll()
            for _, t in model.successors(s):
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
                    out.append(t)
        frontier = nxt
    return out, True


def prefilter(cenc: Encoding, lemmas: Sequence[Lemma], states: Sequence) -> Tuple[List[Lemma], Dict[str, object]]:
    """(the lemmas true in every state, {name: a state where it is false} for the others)."""
    alive = list(lemmas)
    rejected: Dict[str, object] = {}
    for i, s in enumerate(states):
        if i % 256 == 0:
            _CTRL_C.poll()
        v = cenc.of_state(s)
        keep = []
        for lem in alive:
            if lem.term(cenc, v):
                keep.append(lem)
            else:
                rejected[lem.name] = s
        alive = keep
    return alive, rejected


# ---------------------------------------------------------------- the z3 loop

@dataclass
class Cti:
    """A counterexample to induction: ``before`` satisfies every assumed conjunct, ``after`` (one
    step later) breaks ``broken``."""
    before: object
    label: tuple
    after: object
    broken: List[str]
    excluded_by: Dict[str, List[str]] = field(default_factory=dict)   # family -> candidate lemmas false in before


@dataclass
class Discovery:
    verdict: str                          # holds / violated / not k-inductive / interrupted
    goals: List[str]                      # the property's invariants (and EncodingBounds)
    generated: int = 0
    reachable_states: int = 0
    reachable_complete: bool = False
    rejected: Dict[str, object] = field(default_factory=dict)        # by the prefilter: name -> witness state
    dropped: List[Tuple[int, str]] = field(default_factory=list)     # by z3: (round, name)
    trail: List[Tuple[int, tuple, List[str]]] = field(default_factory=list)  # (round, step z3 chose, dropped)
    befores: Dict[int, object] = field(default_factory=dict)          # round -> z3's first state (values)
    lemmas: Dict[str, "Lemma"] = field(default_factory=dict)          # every candidate, by name
    survivors: List[Lemma] = field(default_factory=list)             # the inductive lemmas
    rounds: int = 0
    learned: List[Lemma] = field(default_factory=list)                # blocking clauses, in the order learned
    cti: Optional[Cti] = None             # the first step that broke a goal
    violated_in: Optional[object] = None  # violated: a reachable state breaking a goal
    seconds: Dict[str, float] = field(default_factory=dict)
    interrupted_in: str = ""
    clauses: Optional["Clauses"] = None   # the clause family's atoms (a lemma file names their literals)
    atoms: Optional[Atoms] = None         # the learner's atoms (likewise for blocking clauses)

    @property
    def families(self) -> Dict[str, int]:
        out: Dict[str, int] = {}
        for lem in self.survivors:
            out[lem.family] = out.get(lem.family, 0) + 1
        return out


def _goal_term(enc: Encoding, name: str, s, un: Optional[Unrolling] = None, k: int = 0):
    if name == BOUNDS:
        return un.bounds_ok(k) if un is not None else enc.bounds_ok(s)
    return enc.invariant(name, s)


def discover(model, goals: Sequence[str], *, limit: Optional[int] = 200_000, extra: Sequence[Lemma] = (),
             families: Optional[Sequence[str]] = None, progress: Optional[Callable[[str], None]] = None,
             learn: int = 0, depth: int = 3) -> Discovery:
    """Houdini for the conjunction of ``goals`` (the model's invariants) and EncodingBounds: the
    templates' instances and ``extra`` lemmas, prefiltered on up to ``limit`` reachable states,
    then pruned by z3 to a fixed point. With ``learn`` > 0, up to that many counterexamples to
    induction are blocked by a clause (checker/cubes.py) instead of dropping what they break:
    a step that breaks a template lemma or a goal (level 0), or, up to level ``depth``, a step that
    breaks only clauses learned at the level below.
    Ctrl-C returns verdict ``interrupted``."""
    say = progress or (lambda msg: None)
    goals = list(dict.fromkeys(goals)) + [BOUNDS]
    d = Discovery(HOLDS, goals)
    try:
        with _CTRL_C:
            _discover(model, d, limit, list(extra), families, say, learn, depth)
    except (KeyboardInterrupt, Interrupted, ctypes.ArgumentError, z3.Z3Exception) as e:
        if not _is_ctrl_c(e):
            raise
        d.verdict = INTERRUPTED
    return d


def _discover(model, d: Discovery, limit, extra, families, say, learn=0, depth_limit=3) -> None:
    cenc = Encoding(model, CONCRETE)
    zenc = symbolic_encoding(model)
    lemmas = candidates(cenc, families) + list(extra)
    if families is None or "lookahead" in families:
        lemmas += lookahead(cenc, d.goals)
    d.generated = len(lemmas)
    # 1. the prefilter, on the states bfs reaches
    d.interrupted_in = "the prefilter"
    t0 = time.monotonic()
    states, d.reachable_complete = reachable(model, limit)
    d.reachable_states = len(states)
    preds = dict(model.invariants)
    for s in states:
        broken = [g for g in d.goals if g != BOUNDS and not preds[g](s)]
        if broken:
            d.verdict, d.violated_in = VIOLATED, (s, broken)
            d.seconds["prefilter"] = time.monotonic() - t0
            return
    kept, d.rejected = prefilter(cenc, lemmas, states)
    clauses = d.clauses = Clauses(cenc, states if families is None or "clause" in families else [])
    strongest = clauses.strongest()
    kept += strongest
    lemmas += strongest
    d.generated += len(strongest)
    atoms = d.atoms = Atoms(cenc, states) if learn else None
    d.seconds["prefilter"] = time.monotonic() - t0
    say(f"prefilter: {len(kept)} of {len(lemmas)} candidates hold in the {len(states)} states bfs reached"
        f"{'' if d.reachable_complete else ' (the first levels only)'} ({d.seconds['prefilter']:.1f} s)")
    # 2. Houdini
    d.interrupted_in = "the z3 pruning"
    t0 = time.monotonic()
    un = Unrolling(zenc, "h")
    s0 = un.new_state()
    step = un.step()
    s1 = un.states[1]
    members: List[Tuple[str, object, object]] = []     # (name, term at s0, its negation at s1)
    for g in d.goals:
        members.append((g, _goal_term(zenc, g, s0, un, 0), Z3.Not(_goal_term(zenc, g, s1, un, 1))))
    by_name = {lem.name: lem for lem in kept}
    for lem in kept:
        members.append((lem.name, lem.term(zenc, s0), Z3.Not(lem.term(zenc, s1))))
    alive = {name for name, _, _ in members}
    init = cenc.of_state(model.init_states()[0])
    not_at_init = [name for name in alive if name in by_name and not by_name[name].term(cenc, init)]
    alive -= set(not_at_init)          # cannot happen after the prefilter (the initial state is in it)
    all_candidates = d.lemmas = {lem.name: lem for lem in lemmas}
    wf = zenc.wf(s0)

    level_of: Dict[str, int] = {}       # learned clause -> its level (below)

    def add(lem: Lemma) -> None:
        all_candidates[lem.name] = by_name[lem.name] = lem
        kept.append(lem)
        lemmas.append(lem)
        d.generated += 1
        members.append((lem.name, lem.term(zenc, s0), Z3.Not(lem.term(zenc, s1))))
        alive.add(lem.name)

    # Every round ends the loop, learns a clause (at most ``learn``) or drops a conjunct, and a
    # conjunct joins at most once (a template instance, a clause's weakening, a learned clause), so
    # the loop stops (a cap of 500 rounds stopped epoch at 3 replicas, records=1, crashes=1 short).
    while True:
        d.rounds += 1
        current = [(name, a, b) for name, a, b in members if name in alive]
        solver = _solver(True)
        solver.add(wf, *step)
        solver.add(*[a for _, a, _ in current if a is not True])
        tq = time.monotonic()
        answer = _check(solver, Z3.Or(*[broken for _, _, broken in current]))
        if answer == z3.unsat:
            say(f"  round {d.rounds}: unsat: {len(current)} conjuncts are inductive ({time.monotonic() - tq:.1f} s)")
            break
        zm = solver.model()
        before, after = zenc.values(zm, s0), zenc.values(zm, s1)
        dead = [name for name, _, _ in current if not _holds(cenc, all_candidates, name, after)]
        # how far back from a template lemma or a goal this step is: 0 when one of them broke,
        # else one more than the shallowest learned clause it broke
        level = min([0 if name not in level_of else level_of[name] + 1 for name in dead], default=0)
        if atoms is not None and len(d.learned) < learn and level <= depth_limit:
            # block before (no reachable state agrees with it on a cube's atoms) by up to three
            # clauses and their images under renaming the replicas; deeper, drop what broke
            fresh, found = [], False
            for cube in atoms.cubes(before, 24):           # the first three new ones, with their images
                found = True
                for c in [cube] + atoms.mirrors(cube):
                    name, term = atoms.clause(c)
                    if name not in all_candidates:
                        fresh.append(Lemma(name, "blocking", term))
                        add(fresh[-1])
                        level_of[name] = level
                if len(fresh) >= 3:
                    break
            if fresh:
                d.learned += fresh
                say(f"  round {d.rounds}: learned {len(fresh)}: {fresh[0].name} ({time.monotonic() - tq:.1f} s)")
                continue
            say(f"  round {d.rounds}: no new clause blocks it ("
                f"{'every cube found was learned before' if found else 'a reachable state agrees on every atom'})")
        if not dead:
            raise RuntimeError("z3's model breaks no conjunct when evaluated: the encodings disagree")
        say(f"  round {d.rounds}: {len(dead)} dropped, {len(current) - len(dead)} left ({time.monotonic() - tq:.1f} s)")
        label = zenc.instances[zm.eval(un.acts[0], model_completion=True).as_long()]
        d.trail.append((d.rounds, label, dead))
        d.befores[d.rounds] = before
        broken_goals = [g for g in d.goals if g in dead]
        if broken_goals and d.cti is None:
            excluded: Dict[str, List[str]] = {}
            for lem in lemmas:
                if lem.name not in d.rejected and not lem.term(cenc, before):
                    excluded.setdefault(lem.family, []).append(lem.name)
            d.cti = Cti(zenc.to_state(before), label, zenc.to_state(after), broken_goals, excluded)
        for name in dead:
            alive.discard(name)
            if name in by_name:
                d.dropped.append((d.rounds, name))
            for weaker in clauses.weakenings(name):          # a dropped clause: try its weakenings
                if weaker.name not in all_candidates:
                    add(weaker)
    d.seconds["z3"] = time.monotonic() - t0
    d.survivors = [lem for lem in kept if lem.name in alive]
    d.verdict = HOLDS if all(g in alive for g in d.goals) else NOT_INDUCTIVE
    d.interrupted_in = ""


def check_lemmas(model, goals: Sequence[str], lemmas: Sequence[Lemma]) -> Discovery:
    """The proof a lemma file stands for (checker/lemma_file.py), checked from scratch: ``goals``
    (the model's invariants), EncodingBounds and ``lemmas`` hold in the initial state and are
    1-inductive together, by one z3 query; no prefilter and no pruning, so the check costs the
    same whatever found the lemmas. Verdict holds; violated (a goal false in the initial state,
    ``violated_in``); not k-inductive, with ``rejected`` naming the lemmas false in the initial
    state or ``cti`` the step z3 found and every conjunct it breaks; interrupted on Ctrl-C.

    >>> from hwcheck.spec import Config, Model
    >>> model = Model(Config(mode="hw", records=1, crashes=0))
    >>> d = discover(model, ["NoLogDivergence"])
    >>> check_lemmas(model, ["NoLogDivergence"], d.survivors).verdict == d.verdict == HOLDS
    True
    """
    d = Discovery(HOLDS, list(dict.fromkeys(goals)) + [BOUNDS], generated=len(lemmas))
    d.lemmas = {lem.name: lem for lem in lemmas}
    try:
        with _CTRL_C:
            _check_lemmas(model, d, list(lemmas))
    except (KeyboardInterrupt, Interrupted, ctypes.ArgumentError, z3.Z3Exception) as e:
        if not _is_ctrl_c(e):
            raise
        d.verdict = INTERRUPTED
    return d


def _check_lemmas(model, d: Discovery, lemmas: List[Lemma]) -> None:
    cenc = Encoding(model, CONCRETE)
    zenc = symbolic_encoding(model)
    t0 = time.monotonic()
    d.interrupted_in = "the base case"
    names = d.goals + [lem.name for lem in lemmas]
    for init in model.init_states():
        v = cenc.of_state(init)
        broken = [g for g in d.goals if not _holds(cenc, d.lemmas, g, v)]
        if broken:
            d.verdict, d.violated_in = VIOLATED, (init, broken)
            return
        d.rejected.update({lem.name: init for lem in lemmas if not lem.term(cenc, v)})
    if d.rejected:
        d.verdict = NOT_INDUCTIVE
        return
    d.interrupted_in = "the z3 query"
    un = Unrolling(zenc, "h")
    s0 = un.new_state()
    step = un.step()
    s1 = un.states[1]
    now = [_goal_term(zenc, g, s0, un, 0) for g in d.goals] + [lem.term(zenc, s0) for lem in lemmas]
    later = [_goal_term(zenc, g, s1, un, 1) for g in d.goals] + [lem.term(zenc, s1) for lem in lemmas]
    solver = _solver(True)
    solver.add(zenc.wf(s0), *step)
    solver.add(*[a for a in now if a is not True])
    d.rounds = 1
    answer = _check(solver, Z3.Or(*[Z3.Not(b) for b in later]))
    d.seconds["z3"] = time.monotonic() - t0
    d.interrupted_in = ""
    if answer == z3.unsat:
        d.survivors = lemmas
        return
    zm = solver.model()
    before, after = zenc.values(zm, s0), zenc.values(zm, s1)
    label = zenc.instances[zm.eval(un.acts[0], model_completion=True).as_long()]
    broken = [name for name in names if not _holds(cenc, d.lemmas, name, after)]
    d.verdict = NOT_INDUCTIVE
    d.cti = Cti(zenc.to_state(before), label, zenc.to_state(after), broken)


@dataclass
class Drop:
    """Why z3 dropped ``name`` in round ``round``: the step ``label`` from a state where every
    conjunct then assumed held; ``blockers`` are the conjuncts dropped in earlier rounds that are
    false in that state (had one of them been inductive, this counterexample would not exist)."""
    name: str
    round: int
    label: tuple
    blockers: List[str]


def drop_chain(model, d: Discovery, target: str) -> Tuple[Dict[str, Drop], List[str]]:
    """Follow ``target``'s drop back through the lemmas whose earlier drop let its counterexample
    to induction in: ({name: Drop} for every conjunct on the way, the roots). A root's
    counterexample satisfies every candidate z3 ever saw that was dropped before it (and every
    survivor): no lemma of the templates excludes it, so that is where a new lemma is needed (or
    the root's first state is reachable beyond the states the prefilter saw, and the root is
    not an invariant)."""
    cenc = Encoding(model, CONCRETE)
    dropped_in = {name: (r, label) for r, label, dead in d.trail for name in dead}
    if target not in dropped_in:
        raise KeyError(f"{target} was not dropped")
    chain: Dict[str, Drop] = {}
    todo = [target]
    while todo:
        name = todo.pop()
        if name in chain:
            continue
        r, label = dropped_in[name]
        before = d.befores[r]
        blockers = [m for m, (rm, _) in dropped_in.items() if rm < r and not _holds(cenc, d.lemmas, m, before)]
        chain[name] = Drop(name, r, label, blockers)
        todo += blockers
    roots = sorted((n for n, drop in chain.items() if not drop.blockers), key=lambda n: chain[n].round)
    return chain, roots


def only_clauses_blocked(chain: Dict[str, Drop], lemmas: Dict[str, Lemma]) -> List[str]:
    """The named lemmas on a drop chain whose counterexample only clauses excluded (every blocker
    of the clause family), by round. A clause fits the states the prefilter saw, so these are the
    named lemmas that lost their support to the clause family's guesses: a new named lemma must
    exclude the state, or the state is reachable and the named lemma false (a larger reach limit
    tells which).

    >>> lem = {"c": Lemma("c", "clause", None), "n": Lemma("n", "history", None)}
    >>> only_clauses_blocked({"n": Drop("n", 5, ("step",), ["c"]), "c": Drop("c", 2, ("step",), [])}, lem)
    ['n']
    """
    def is_clause(name):
        return name in lemmas and lemmas[name].family == "clause"
    return sorted((name for name, drop in chain.items()
                   if drop.blockers and not is_clause(name) and all(is_clause(b) for b in drop.blockers)),
                  key=lambda name: chain[name].round)


def _holds(cenc: Encoding, lemmas: Dict[str, Lemma], name: str, v) -> bool:
    if name in lemmas:
        return bool(lemmas[name].term(cenc, v))
    return bool(cenc.bounds_ok(v) if name == BOUNDS else cenc.invariant(name, v))
