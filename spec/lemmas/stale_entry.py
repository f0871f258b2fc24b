"""Family record-offset, over the history variable ``stale_entry`` (the entry below a stale Fetch's
offset in its sender's log when it was sent): what the Fetch claimed, which a leader may still act
on after the sender's log changed."""

from __future__ import annotations

from typing import List

from hwcheck.spec.terms import FETCH, UNDEFINED, latest_cached_epoch

from .common import Lemma, implies, lemma, source, source_names


def holds_stale_entry(o, st, rep, rec):
    """rep's log still holds the stale Fetch's entry: its record just below the Fetch's offset."""
    return o.And(st.fetch_offset <= rep.leo, o.select([e[0] for e in rep.log], st.fetch_offset - 1) == rec)


def validates(enc, rx, st):
    """rx's epoch cache validates the Fetch ``st``: endOffsetFor its last fetched epoch is that epoch,
    ending at or past its offset."""
    e, end = enc.end_offset_for(rx.epoch_cache, rx.clen, rx.leo, st.last_fetched_epoch)
    return enc.o.And(st.last_fetched_epoch != UNDEFINED, e == st.last_fetched_epoch, end >= st.fetch_offset)


def stale_entry_present(enc, s, f):
    """A stale Fetch past offset 0 has an entry below its offset, produced, within its last fetched epoch; else none."""
    o, st, (rec, ep) = enc.o, s.stale[f], s.hist.stale_entry[f]
    asked = o.And(st.kind == FETCH, st.fetch_offset > 0)
    return o.And(implies(o, asked, o.And(rec != UNDEFINED, ep != UNDEFINED, ep <= st.last_fetched_epoch,
                                         rec < s.hist.produced)),
                 implies(o, o.Not(asked), o.And(rec == UNDEFINED, ep == UNDEFINED)))


def stale_entry_at_one_offset(enc, s, f, i, L):
    """A record sits at one offset with one epoch everywhere: so does the stale entry."""
    o, st, (rec, ep) = enc.o, s.stale[f], s.hist.stale_entry[f]
    _, inside, sl = source(enc, s, i)
    return implies(o, o.And(st.kind == FETCH, st.fetch_offset > 0), o.And(*[
        implies(o, o.And(inside(j), sl[j][0] == rec), o.And(j == st.fetch_offset - 1, sl[j][1] == ep))
        for j in range(L)]))


def stale_entry_held_by_sender(enc, s, f):
    """The sender of a stale Fetch still holds the entry below its offset."""
    o, st, rf, rec = enc.o, s.stale[f], s.reps[f], s.hist.stale_entry[f][0]
    return implies(o, o.And(st.kind == FETCH, st.fetch_offset > 0), holds_stale_entry(o, st, rf, rec))


def held_while_acted_on(enc, s, f, validating=False, pending=False):
    """The sender of a stale Fetch holds the entry below its offset while the Fetch can still move anything.

    Its sender truncates only on an answer of a newer epoch, or of a leader whose log diverges
    there, and the stale Fetch then reaches a replica that refuses it (not a leader at its epoch:
    KIP-320's fence) or (``validating``) whose cache no longer validates its last fetched epoch.
    ``pending``: also while its receiver has not reached the Fetch's epoch (by leader epoch or
    cache): its sender sent it at that epoch, and nobody answers at an epoch before its leader
    takes office."""
    o, st, rec = enc.o, s.stale[f], s.hist.stale_entry[f][0]          # the stale entry's record
    acted = []
    for x, rx in enumerate(s.reps):
        live = enc.accepts(rx, st.current_leader_epoch)
        if validating:
            live = o.And(live, validates(enc, rx, st))
        if pending:
            live = o.Or(live, o.And(rx.leader_epoch < st.current_leader_epoch,
                                    latest_cached_epoch(o, rx) < st.current_leader_epoch))
        acted.append(o.And(st.leader == x, live))
    return implies(o, o.And(st.kind == FETCH, st.fetch_offset > 0, o.Or(*acted)), holds_stale_entry(o, st, s.reps[f], rec))


def held_within_its_epoch(enc, s, f):
    """While the controller is at a stale Fetch's epoch and its receiver validates it, its sender holds the entry.

    While the controller is still at the Fetch's epoch, its sender has had answers from that
    epoch's leader alone; where that leader's cache validates the Fetch its log agrees with the
    sender's up to the offset, so no answer cut the sender below it (whatever the receiver's role:
    a restart keeps its log and cache)."""
    o, st, rec = enc.o, s.stale[f], s.hist.stale_entry[f][0]
    validated = [o.And(st.leader == x, validates(enc, rx, st)) for x, rx in enumerate(s.reps)]
    return implies(o, o.And(st.kind == FETCH, st.fetch_offset > 0, st.current_leader_epoch == s.ctl.epoch,
                            o.Or(*validated)),
                   holds_stale_entry(o, st, s.reps[f], rec))


def held_where_validated(enc, s, f, x):
    """A replica whose cache validates the stale Fetch holds the entry below it.

    Validates: endOffsetFor its last fetched epoch is that epoch, ending at or past the offset."""
    o, st, rx, (rec, ep) = enc.o, s.stale[f], s.reps[x], s.hist.stale_entry[f]
    ok = o.And(st.kind == FETCH, st.fetch_offset > 0, validates(enc, rx, st))
    return implies(o, ok, o.And(holds_stale_entry(o, st, rx, rec),
                                o.select([x_[1] for x_ in rx.log], st.fetch_offset - 1) == ep))


def stale_entry_templates(n: int, L: int, cached: bool) -> List[Lemma]:
    out = []
    for f in range(n):
        out.append(lemma(f"StaleEntry[r{f}: below its offset, within its last fetched epoch]", "record-offset",
                         stale_entry_present, f=f))
        for i, name in enumerate(source_names(n)):
            out.append(lemma(f"StaleEntry[r{f}: its record at its offset in {name}]", "record-offset",
                             stale_entry_at_one_offset, f=f, i=i, L=L))
        out.append(lemma(f"StaleEntry[r{f}: still held by its sender]", "record-offset", stale_entry_held_by_sender, f=f))
        out.append(lemma(f"StaleEntry[r{f}: held by its sender while its receiver would accept it]", "record-offset",
                         held_while_acted_on, f=f))
        if cached:
            out.append(lemma(f"StaleEntry[r{f}: held by its sender while its receiver would accept and validate it]",
                             "record-offset", held_while_acted_on, f=f, validating=True))
            out.append(lemma(f"StaleEntry[r{f}: held by its sender while its receiver is short of its epoch, "
                             f"or would accept and validate it]", "record-offset",
                             held_while_acted_on, f=f, validating=True, pending=True))
            out.append(lemma(f"StaleEntry[r{f}: held by its sender while the controller is at its epoch and its "
                             f"receiver's cache validates it]", "record-offset", held_within_its_epoch, f=f))
            for x in range(n):
                out.append(lemma(f"StaleEntry[r{f}: held by r{x} where its cache validates the Fetch]",
                                 "record-offset", held_where_validated, f=f, x=x))
    return out
