"""Family epoch-answer: the question a follower asks before it truncates and its answer.

OffsetsForLeaderEpoch (KIP-101; request: its leader epoch and latest cached epoch; answer: (epoch,
end offset)) or, with truncation on fetch (KAFKA-10554), the Fetch's last fetched epoch and a
FetchResponse's diverging epoch: what they can say while in flight, and the follower half of a
faithful answer (the sender half is spec/auxiliary.py's EpochAnswerCutsSenderLog)."""

from __future__ import annotations

from typing import Callable, List, NamedTuple

from hwcheck.spec.terms import (EPOCH_REQUEST, EPOCH_RESPONSE, FETCH, FETCH_RESPONSE, TRUNCATING_AGAIN, UNDEFINED,
                                latest_cached_epoch)

from .common import Lemma, agreement, holds_at, implies, in_flight, in_office, leads, lemma, recordless, stale


# ---------------------------------------------------------------- the question and its answer

def requested_epoch(m):
    """The epoch an OffsetsForLeaderEpoch request asks about."""
    return m.requested_epoch


def last_fetched_epoch(m):
    """The epoch a Fetch asks about (truncation on fetch): its last fetched epoch."""
    return m.last_fetched_epoch


def epoch_response(m):
    """What an OffsetsForLeaderEpoch answer says: (epoch, end offset)."""
    return m.epoch, m.end_offset


def diverging_epoch(m):
    """What a FetchResponse says of the follower's divergence: (diverging epoch, its end offset)."""
    return m.diverging_epoch, m.diverging_end_offset


def as_is(rep):
    """The follower as the answer finds it."""
    return rep


def truncating_again(rep):
    """The follower as a diverging FetchResponse finds it (as spec/actions.py)."""
    return rep._replace(truncating=TRUNCATING_AGAIN)


class Question(NamedTuple):
    """How a follower asks before it truncates, and how it is answered."""
    ask: int                     # the request's kind
    answer: int                  # the answer's kind
    asked: Callable              # request -> the epoch it asks about
    said: Callable               # answer -> (epoch, end offset)
    again: Callable              # follower -> the follower the answer truncates
    on_fetch: bool               # truncation on fetch (KAFKA-10554)


OFFSETS_FOR_LEADER_EPOCH = Question(EPOCH_REQUEST, EPOCH_RESPONSE, requested_epoch, epoch_response, as_is, False)
TRUNCATION_ON_FETCH = Question(FETCH, FETCH_RESPONSE, last_fetched_epoch, diverging_epoch, truncating_again, True)


# ---------------------------------------------------------------- what the question says

def epoch_request_names_latest(enc, s, f, q):
    """A follower asks at its leader epoch about its latest cached epoch."""
    o, m, rep = enc.o, s.msgs[f], s.reps[f]
    return implies(o, m.kind == q.ask, o.And(m.current_leader_epoch == rep.leader_epoch, q.asked(m) == enc.latest_epoch(rep)))


def epoch_answer_within_request(enc, s, f, q):
    """The answer's epoch is at most the follower's latest cached epoch and its leader epoch."""
    o, m, rep = enc.o, s.msgs[f], s.reps[f]
    epoch, _ = q.said(m)
    return implies(o, o.And(m.kind == q.answer, epoch != UNDEFINED),
                   o.And(epoch <= enc.latest_epoch(rep), epoch <= rep.leader_epoch))


def no_last_epoch_fetches_from_zero(enc, s, f, message):
    """A Fetch without a last fetched epoch asks from offset 0.

    It names none only when its sender's cache was empty, and then its log was too (the cache
    covers every record)."""
    o, m = enc.o, message(s, f)
    return implies(o, o.And(m.kind == FETCH, m.last_fetched_epoch == UNDEFINED), m.fetch_offset == 0)


def last_fetched_epoch_within_request(enc, s, f, message):
    """A Fetch's last fetched epoch is at most its current leader epoch.

    A follower caches no epoch above its leader epoch (it appends only its leader's records)."""
    o, m = enc.o, message(s, f)
    return implies(o, m.kind == FETCH, m.last_fetched_epoch <= m.current_leader_epoch)


def last_fetched_epoch_cached(enc, s, f, message):
    """Some cache still holds a Fetch's last fetched epoch (or a later one).

    The last fetched epoch was the sender's latest cached epoch; a cache loses its latest epoch
    only by truncating to a newer leader's."""
    o, m = enc.o, message(s, f)
    return implies(o, o.And(m.kind == FETCH, m.last_fetched_epoch != UNDEFINED),
                   o.Or(*[latest_cached_epoch(o, x) >= m.last_fetched_epoch for x in s.reps]))


def last_fetched_epoch_starts_by_fetch(enc, s, f, message):
    """Every cache that holds a Fetch's last fetched epoch starts it at or below the fetch offset.

    The last fetched epoch began at or below the fetch offset (the sender's LEO), and every cache
    that holds an epoch holds it from where its leader began it."""
    o, m = enc.o, message(s, f)
    return implies(o, o.And(m.kind == FETCH, m.last_fetched_epoch != UNDEFINED),
                   o.And(*[implies(o, o.And(k < x.clen, x.epoch_cache[k][0] == m.last_fetched_epoch),
                                   x.epoch_cache[k][1] <= m.fetch_offset)
                           for x in s.reps for k in range(len(x.epoch_cache))]))


def recordless_epoch_not_before_fetch(enc, s, f, message):
    """The sender of a Fetch caches no epoch without records below the Fetch's last fetched epoch.

    It caches an epoch without records only as the leader of it: since the Fetch (at an epoch at
    least its last fetched one), or as its latest epoch then."""
    o, m, rep = enc.o, message(s, f), s.reps[f]
    return implies(o, o.And(m.kind == FETCH, m.last_fetched_epoch != UNDEFINED),
                   o.And(*[implies(o, recordless(o, rep, k), rep.epoch_cache[k][0] >= m.last_fetched_epoch)
                           for k in range(len(rep.epoch_cache))]))


def recordless_last_fetched_epoch_is_the_senders(enc, s, f, message):
    """A Fetch names an epoch cached without records only from that epoch's leader, at the epoch's start.

    An epoch cached without records was never written (its leader cached it at become_leader;
    truncating or a restart below its start drops it)."""
    o, m = enc.o, message(s, f)
    return implies(o, o.And(m.kind == FETCH, m.last_fetched_epoch != UNDEFINED), o.And(*[
        implies(o, o.And(recordless(o, x, k), x.epoch_cache[k][0] == m.last_fetched_epoch),
                (x.epoch_cache[k][1] == m.fetch_offset) if x is s.reps[f] else False)
        for x in s.reps for k in range(len(x.epoch_cache))]))


def fetched_from_its_epochs_leader(enc, s, f, message):
    """A Fetch at the controller's epoch goes to the leader the controller names, or none is named.

    A Fetch goes to the leader of its current epoch (the follower learned both from one
    LeaderAndIsr), and an epoch has one leader: while the controller is still at that epoch it
    names the same replica, or none."""
    o, m, c = enc.o, message(s, f), s.ctl
    return implies(o, o.And(m.kind == FETCH, m.current_leader_epoch == c.epoch),
                   o.Or(c.leader == m.leader, c.leader == UNDEFINED))


def last_fetched_epoch_not_yet_taken(enc, s, f, message):
    """No Fetch names the epoch of a leader the controller named that has not cached it yet.

    That leader has not taken office, so no record of that epoch exists and no follower names it
    as its last fetched epoch."""
    o, m, c = enc.o, message(s, f), s.ctl
    pending = o.And(*[implies(o, c.leader == l, latest_cached_epoch(o, s.reps[l]) < c.epoch)
                      for l in range(len(s.reps)) if l != f])
    return implies(o, o.And(m.kind == FETCH, c.leader != f, c.leader != UNDEFINED, pending),
                   m.last_fetched_epoch < c.epoch)


# ---------------------------------------------------------------- what the answer says

def diverging_answer_diverges(enc, s, f):
    """A diverging epoch is older than the follower's latest cached epoch, or ends below its LEO.

    It answers a Fetch whose last fetched epoch the leader lacks or ends below the fetch offset
    (Partition.readRecords)."""
    o, m, rep = enc.o, s.msgs[f], s.reps[f]
    return implies(o, o.And(m.kind == FETCH_RESPONSE, m.diverging_epoch != UNDEFINED),
                   o.Or(m.diverging_epoch < enc.latest_epoch(rep), m.diverging_end_offset < rep.leo))


def diverging_answer_is_older(enc, s, f):
    """A diverging epoch is older than the follower's leader epoch.

    The leader of the follower's epoch answered: it holds every entry of that epoch, so a
    divergence is always at an older epoch."""
    o, m, rep = enc.o, s.msgs[f], s.reps[f]
    return implies(o, o.And(m.kind == FETCH_RESPONSE, m.diverging_epoch != UNDEFINED),
                   m.diverging_epoch < rep.leader_epoch)


def diverging_answer_still_true(enc, s, f, L):
    """The sender of a diverging epoch still has no entry of that epoch at or past its end offset.

    Its sender's log had the diverging epoch ``e`` end at ``k`` (the diverging end offset), and it
    still has no entry of e at k or past it: the sender led the follower's epoch, and it could gain
    entries of an older epoch only by truncating to a newer epoch's leader, which the follower
    would have followed first (two replicas)."""
    o, m = enc.o, s.msgs[f]
    answered = o.And(m.kind == FETCH_RESPONSE, m.diverging_epoch != UNDEFINED)
    return o.And(*[implies(o, o.And(answered, m.leader == x, m.diverging_end_offset <= j, j < rx.leo),
                           rx.log[j][1] != m.diverging_epoch)
                   for x, rx in enumerate(s.reps) if x != f for j in range(L)])


def epoch_answer_keeps_exposed(enc, s, f, q, L):
    """An answer does not truncate a follower below the records consumers saw, when it holds them all.

    The sender led the follower's epoch and held them too, so the epochs of their entries are in
    its cache and end beyond them."""
    o, m, rep, h = enc.o, s.msgs[f], s.reps[f], s.hist
    epoch, end = q.said(m)
    offset, _ = enc.follower_truncation(q.again(rep), epoch, end)
    held = o.And(*[implies(o, j < h.xlen, holds_at(o, rep, j, h.exposed[j]))
                   for j in range(L)])
    return implies(o, o.And(m.kind == q.answer, epoch != UNDEFINED, held), offset >= h.xlen)


def fetch_response_in_range(enc, s, f, q):
    """No OFFSET_OUT_OF_RANGE: a FetchResponse's records start at the follower's LEO, unless it is a diverging epoch."""
    o, m = enc.o, s.msgs[f]
    plain = o.And(m.kind == FETCH_RESPONSE, m.diverging_epoch == UNDEFINED) if q.on_fetch else m.kind == FETCH_RESPONSE
    return implies(o, plain, m.start == s.reps[f].leo)


def no_records_past_a_recordless_epoch(enc, s, f):
    """No records answer a follower that caches an epoch without records.

    Its Fetch named that epoch as its last fetched epoch, which no sender can validate (nobody
    wrote an entry of it, and the sender did not lead it): the answer is a diverging epoch
    (Partition.fetchRecords, KAFKA-10554). An empty log sends no last fetched epoch."""
    o, m, rf = enc.o, s.msgs[f], s.reps[f]
    return implies(o, o.And(m.kind == FETCH_RESPONSE, m.diverging_epoch == UNDEFINED, rf.leo > 0),
                   o.And(*[o.Not(recordless(o, rf, k)) for k in range(len(rf.epoch_cache))]))


def sender_not_behind(enc, s, f, l, kind):
    """The leader a message of f is with, while it leads, is at f's leader epoch or later.

    Answered at the asker's epoch (KIP-320), and a leader's epoch only grows."""
    o, m, rl = enc.o, s.msgs[f], s.reps[l]
    return implies(o, o.And(m.kind == kind, m.leader == l, leads(o, rl)),
                   rl.leader_epoch >= s.reps[f].leader_epoch)


# ---------------------------------------------------------------- the answer and the sender's log

def sender_at_its_epoch(o, s, f, l):
    """l leads at f's epoch."""
    return o.And(leads(o, s.reps[l]), s.reps[l].leader_epoch == s.reps[f].leader_epoch)


def sender_in_office(o, s, f, l):
    """l leads, named by the controller, at the controller's epoch."""
    return in_office(o, s, l)


def sender_leads(o, s, f, l):
    """l is up and believes it leads."""
    return leads(o, s.reps[l])


def senders_latest_cached_epoch_the_followers(o, s, f, l):
    """l's latest cached epoch is f's leader epoch."""
    return latest_cached_epoch(o, s.reps[l]) == s.reps[f].leader_epoch


def any_role(o, s, f, l):
    """No guard."""
    return True


def senders_epoch(s, f, l):
    """The sender's leader epoch."""
    return s.reps[l].leader_epoch


def followers_epoch(s, f, l):
    """The follower's leader epoch."""
    return s.reps[f].leader_epoch


def epoch_answer_agrees(enc, s, f, l, guard, q, L):
    """Where an answer that ends the truncation cuts the follower, the follower's log is a prefix of the sender's."""
    o, m, rf, rl = enc.o, s.msgs[f], s.reps[f], s.reps[l]
    epoch, end = q.said(m)
    offset, done = enc.follower_truncation(q.again(rf), epoch, end)
    applies = o.And(m.kind == q.answer, m.leader == l, epoch != UNDEFINED, guard(o, s, f, l), done)
    return implies(o, applies, o.And(offset <= rl.leo, agreement(o, rf, rl, offset, L)))


def epoch_answer_is_senders_lookup(enc, s, f, l, guard, answered, q):
    """The answer is the sender's endOffsetFor of the follower's latest cached epoch.

    While the sender leads, its cache changes only above the epoch it answered at (``answered``:
    its own epoch, or the follower's when it may have moved on), and only that epoch's end, its
    LEO, may have grown."""
    o, m, rf, rl = enc.o, s.msgs[f], s.reps[f], s.reps[l]
    epoch, end = q.said(m)
    e, x = enc.end_offset_for(rl.epoch_cache, rl.clen, rl.leo, enc.latest_epoch(rf))
    applies = o.And(m.kind == q.answer, m.leader == l, epoch != UNDEFINED, guard(o, s, f, l))
    return implies(o, applies, o.And(epoch == e, o.Or(e == answered(s, f, l), end == x)))


def records_answer_validated(enc, s, f, l, guard):
    """Records answer only a Fetch whose last fetched epoch the sender has, ending at or past the fetch offset.

    Partition.fetchRecords checks it; the follower's log and cache do not change while the fetch
    is out."""
    o, m, rf, rl = enc.o, s.msgs[f], s.reps[f], s.reps[l]
    latest = enc.latest_epoch(rf)
    e, x = enc.end_offset_for(rl.epoch_cache, rl.clen, rl.leo, latest)
    applies = o.And(m.kind == FETCH_RESPONSE, m.leader == l, m.diverging_epoch == UNDEFINED, latest != UNDEFINED,
                    guard(o, s, f, l))
    return implies(o, applies, o.And(e == latest, x >= rf.leo))


AGREES_GUARDS = (("sender at its epoch", sender_at_its_epoch), ("sender in office", sender_in_office))

LOOKUP_GUARDS = (
    ("sender at its epoch", sender_at_its_epoch, senders_epoch),
    ("sender in office", sender_in_office, senders_epoch),
    ("sender leads", sender_leads, followers_epoch),
    # after it left office: its latest cached epoch is still the follower's (it has taken nothing
    # from a newer leader since)
    ("sender's latest cached epoch the follower's", senders_latest_cached_epoch_the_followers, followers_epoch),
    # whatever the sender did since: while the follower is still at the epoch it was answered at,
    # nobody else took office (two replicas: the follower would have moved on, and its answer with
    # it), so the sender's log and cache changed only at their end: its own writes, a restart's trim
    # of an epoch cached without records (records=1 crashes=3 max_epoch=7 proves with it, not
    # without; with three replicas the prefilter decides)
    ("sender in any role", any_role, followers_epoch))

ON_FETCH = (
    ("NoLastEpochFetchesFromZero", no_last_epoch_fetches_from_zero),
    ("LastFetchedEpochWithinRequest", last_fetched_epoch_within_request),
    ("LastFetchedEpochCached", last_fetched_epoch_cached),
    ("LastFetchedEpochStartsByFetch", last_fetched_epoch_starts_by_fetch),
    ("RecordlessEpochNotBeforeFetch", recordless_epoch_not_before_fetch),
    ("RecordlessLastFetchedEpochIsTheSenders", recordless_last_fetched_epoch_is_the_senders),
    ("FetchedFromItsEpochsLeader", fetched_from_its_epochs_leader),
    ("LastFetchedEpochNotYetTaken", last_fetched_epoch_not_yet_taken))


def epoch_answer_templates(n: int, L: int, on_fetch: bool) -> List[Lemma]:
    """The family for OffsetsForLeaderEpoch, or with truncation on fetch (``on_fetch``) for the
    Fetch's last fetched epoch and the FetchResponse's diverging epoch."""
    q = TRUNCATION_ON_FETCH if on_fetch else OFFSETS_FOR_LEADER_EPOCH
    out = []
    for f in range(n):
        out.append(lemma(f"EpochRequestNamesLatest[req(r{f})]", "epoch-answer", epoch_request_names_latest, f=f, q=q))
        out.append(lemma(f"EpochAnswerWithinRequest[resp(r{f})]", "epoch-answer", epoch_answer_within_request,
                         f=f, q=q))
        if on_fetch:
            for what, message in (("fetch", in_flight), ("stale", stale)):
                for name, fn in ON_FETCH:
                    out.append(lemma(f"{name}[{what}(r{f})]", "epoch-answer", fn, f=f, message=message))
            out.append(lemma(f"DivergingAnswerDiverges[resp(r{f})]", "epoch-answer", diverging_answer_diverges, f=f))
            out.append(lemma(f"DivergingAnswerIsOlder[resp(r{f})]", "epoch-answer", diverging_answer_is_older, f=f))
            out.append(lemma(f"DivergingAnswerStillTrue[resp(r{f})]", "epoch-answer", diverging_answer_still_true,
                             f=f, L=L))
        out.append(lemma(f"EpochAnswerKeepsExposed[resp(r{f})]", "epoch-answer", epoch_answer_keeps_exposed,
                         f=f, q=q, L=L))
        out.append(lemma(f"FetchResponseInRange[resp(r{f})]", "epoch-answer", fetch_response_in_range, f=f, q=q))
        if on_fetch:
            out.append(lemma(f"NoRecordsPastARecordlessEpoch[resp(r{f})]", "epoch-answer",
                             no_records_past_a_recordless_epoch, f=f))
        for l in range(n):
            if l == f:
                continue
            for kind, what in ((q.answer, "answer"), (q.ask, "request")) + (() if on_fetch else (
                    (FETCH_RESPONSE, "FetchResponse"), (FETCH, "Fetch"))):
                out.append(lemma(f"SenderNotBehind[{what} of r{f} with r{l} leading]", "epoch-answer", sender_not_behind,
                                 f=f, l=l, kind=kind))
            for g, guard in AGREES_GUARDS:
                out.append(lemma(f"EpochAnswerAgrees[resp(r{f}) of r{l}, {g}]", "epoch-answer", epoch_answer_agrees,
                                 f=f, l=l, guard=guard, q=q, L=L))
            for g, guard, answered in LOOKUP_GUARDS:
                out.append(lemma(f"EpochAnswerIsSendersLookup[resp(r{f}) of r{l}, {g}]", "epoch-answer",
                                 epoch_answer_is_senders_lookup, f=f, l=l, guard=guard, answered=answered, q=q))
                if on_fetch:
                    out.append(lemma(f"RecordsAnswerValidated[resp(r{f}) of r{l}, {g}]", "epoch-answer",
                                     records_answer_validated, f=f, l=l, guard=guard))
    return out
