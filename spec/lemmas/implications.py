"""Family implication: implications between the boolean facts of one replica (alive, role, the
controller's leader / ISR / live, at the controller's epoch, fetching, a message in flight), and
what a replica's messages say of it and of the controller."""

from __future__ import annotations

from typing import List

from hwcheck.spec.terms import (EPOCH_REQUEST, EPOCH_RESPONSE, FETCH, FETCH_RESPONSE, FETCHING, FOLLOWER, LEADER,
                                NO_MESSAGE, UNDEFINED)

from .atoms import ATOM_NAMES, replica_atoms
from .common import Lemma, implies, lemma


def atom_implies_atom(enc, s, r, i, j, neg):
    """One boolean fact of r implies another (or its negation)."""
    o = enc.o
    atoms = replica_atoms(o, s, r)
    b = atoms[j][1]
    return implies(o, atoms[i][1], o.Not(b) if neg else b)


# ---------------------------------------------------------------- a replica's messages

def followers_leader_is_another(enc, s, r):
    """A follower's leader is another replica."""
    o = enc.o
    return implies(o, s.reps[r].role == FOLLOWER, s.reps[r].leader != r)


def message_with_another(enc, s, r):
    """A replica's message in flight is with another replica."""
    o = enc.o
    return implies(o, s.msgs[r].kind != NO_MESSAGE, s.msgs[r].leader != r)


def message_with_its_leader(enc, s, r):
    """A replica's message in flight is with its leader."""
    o = enc.o
    return implies(o, s.msgs[r].kind != NO_MESSAGE, s.msgs[r].leader == s.reps[r].leader)


def stale_fetch_with_another(enc, s, r):
    """A replica's stale Fetch went to another replica."""
    o = enc.o
    return implies(o, s.stale[r].kind != NO_MESSAGE, s.stale[r].leader != r)


def messages_within_controller_epoch(enc, s, r):
    """A replica's messages carry epochs at most the controller's."""
    o, m, st, c = enc.o, s.msgs[r], s.stale[r], s.ctl
    # m.a: a Fetch's or an OffsetsForLeaderEpoch request's current leader epoch, an OffsetsForLeaderEpoch
    # answer's epoch (the slot, as the guard names three kinds)
    return o.And(implies(o, o.Or(m.kind == FETCH, m.kind == EPOCH_REQUEST, m.kind == EPOCH_RESPONSE), m.a <= c.epoch),
                 implies(o, st.kind != NO_MESSAGE, st.current_leader_epoch <= c.epoch))


def fetching_no_epoch_request(enc, s, r):
    """A fetching replica has no OffsetsForLeaderEpoch request or answer in flight."""
    o = enc.o
    return implies(o, s.reps[r].truncating == FETCHING,
                   o.And(s.msgs[r].kind != EPOCH_REQUEST, s.msgs[r].kind != EPOCH_RESPONSE))


def truncating_no_fetch(enc, s, r):
    """A truncating replica has no Fetch or FetchResponse in flight."""
    o = enc.o
    return implies(o, s.reps[r].truncating != FETCHING,
                   o.And(s.msgs[r].kind != FETCH, s.msgs[r].kind != FETCH_RESPONSE))


def message_only_of_a_follower(enc, s, r):
    """A replica with a message in flight is a running follower."""
    o = enc.o
    return implies(o, s.msgs[r].kind != NO_MESSAGE, o.And(s.reps[r].alive, s.reps[r].role == FOLLOWER))


def requests_carry_leader_epoch(enc, s, r):
    """A replica's Fetch or OffsetsForLeaderEpoch request carries its leader epoch."""
    o, m, rep = enc.o, s.msgs[r], s.reps[r]
    return implies(o, o.Or(m.kind == FETCH, m.kind == EPOCH_REQUEST), m.current_leader_epoch == rep.leader_epoch)


def stale_fetch_epoch_within(enc, s, r):
    """A replica's stale Fetch carries an epoch at most its own."""
    o, m, rep = enc.o, s.stale[r], s.reps[r]
    return implies(o, m.kind != NO_MESSAGE, m.current_leader_epoch <= rep.leader_epoch)


def stale_fetch_epoch_within_unless_restarted(enc, s, r):
    """A replica's stale Fetch carries an epoch at most its own, unless it stopped since.

    A stop forgets the leader epoch (UNDEFINED) and keeps the Fetch out; the next LeaderAndIsr brings
    the controller's epoch, never below the Fetch's."""
    o, m, rep = enc.o, s.stale[r], s.reps[r]
    return implies(o, m.kind != NO_MESSAGE,
                   o.Or(m.current_leader_epoch <= rep.leader_epoch, rep.leader_epoch == UNDEFINED))


MESSAGES = (("a follower's leader is another replica", followers_leader_is_another),
            ("its message is with another replica", message_with_another),
            ("its message is with its leader", message_with_its_leader),
            ("its stale fetch went to another replica", stale_fetch_with_another),
            ("its messages carry epochs at most the controller's", messages_within_controller_epoch),
            ("fetching: no OffsetsForLeaderEpoch in flight", fetching_no_epoch_request),
            ("truncating: no Fetch or FetchResponse in flight", truncating_no_fetch),
            ("a message in flight: a follower", message_only_of_a_follower),
            ("its requests carry its leader epoch", requests_carry_leader_epoch),
            ("its stale fetch carries an epoch at most its own", stale_fetch_epoch_within),
            ("its stale fetch carries an epoch at most its own unless it stopped since",
             stale_fetch_epoch_within_unless_restarted))


# ---------------------------------------------------------------- before the named leader takes office

def named_not_in_office(o, s, l):
    """The controller names l, whose leader epoch is still below the controller's."""
    return o.And(s.ctl.leader == l, s.reps[l].leader_epoch < s.ctl.epoch)


def fetching_at_new_epoch_empty(o, s, f):
    """A fetching follower at the controller's epoch has an empty log."""
    return implies(o, o.And(s.reps[f].leader_epoch == s.ctl.epoch, s.reps[f].truncating == FETCHING), s.reps[f].leo == 0)


def no_answer_at_new_epoch(o, s, f):
    """A follower at the controller's epoch has no answer in flight."""
    return implies(o, s.reps[f].leader_epoch == s.ctl.epoch,
                   o.And(s.msgs[f].kind != FETCH_RESPONSE, s.msgs[f].kind != EPOCH_RESPONSE))


def fetch_at_new_epoch_from_zero(o, s, f):
    """A Fetch at the controller's epoch asks from offset 0."""
    m = s.msgs[f]
    return implies(o, o.And(m.kind == FETCH, m.current_leader_epoch == s.ctl.epoch), m.fetch_offset == 0)


def stale_fetch_at_new_epoch_from_zero(o, s, f):
    """A stale Fetch at the controller's epoch asks from offset 0."""
    m = s.stale[f]
    return implies(o, o.And(m.kind == FETCH, m.current_leader_epoch == s.ctl.epoch), m.fetch_offset == 0)


# while the leader the controller named has not taken office, its followers at the new epoch have
# fetched nothing and had no answer
NOT_IN_OFFICE = (("a fetching follower at the new epoch has an empty log", fetching_at_new_epoch_empty),
                 ("no answer at the new epoch", no_answer_at_new_epoch),
                 ("a Fetch at the new epoch asks from 0", fetch_at_new_epoch_from_zero),
                 ("a stale Fetch at the new epoch asks from 0", stale_fetch_at_new_epoch_from_zero))


def while_named_not_in_office(enc, s, l, f, body):
    """While the leader the controller named has not taken office, ``body`` holds of follower f."""
    return implies(enc.o, named_not_in_office(enc.o, s, l), body(enc.o, s, f))


# ---------------------------------------------------------------- the controller and its leaders

def isr_not_empty(enc, s):
    """The controller's ISR is not empty."""
    return enc.o.Or(*s.ctl.isr)


def current_leader(enc, s, r):
    """A leader at the controller's epoch is the one it names (or the partition is offline)."""
    o, rep, c = enc.o, s.reps[r], s.ctl
    return implies(o, o.And(rep.role == LEADER, rep.leader_epoch == c.epoch),
                   o.Or(c.leader == r, c.leader == UNDEFINED))


def one_leader_per_epoch(enc, s, a, b):
    """Two leaders hold different epochs."""
    o, ra, rb = enc.o, s.reps[a], s.reps[b]
    return o.Not(o.And(ra.role == LEADER, rb.role == LEADER, ra.leader_epoch == rb.leader_epoch))


def implication_templates(n: int) -> List[Lemma]:
    out = []
    names = ATOM_NAMES
    k = len(names)
    for r in range(n):
        for i in range(k):
            for j in range(k):
                if i == j:
                    continue
                for neg in (False, True):
                    out.append(lemma(f"r{r}: {names[i]} -> {'not ' if neg else ''}{names[j]}", "implication",
                                     atom_implies_atom, r=r, i=i, j=j, neg=neg))
    for r in range(n):
        for what, fn in MESSAGES:
            out.append(lemma(f"r{r}: {what}", "implication", fn, r=r))
    for l in range(n):
        for f in range(n):
            if f == l:
                continue
            for what, body in NOT_IN_OFFICE:
                out.append(lemma(f"r{f}: {what} while r{l} is named but not in office", "implication",
                                 while_named_not_in_office, l=l, f=f, body=body))
    out.append(lemma("the controller's ISR is not empty", "implication", isr_not_empty))
    for r in range(n):
        out.append(lemma(f"r{r}: a leader at the controller's epoch is named by it or none is", "implication",
                         current_leader, r=r))
    for a in range(n):
        for b in range(a + 1, n):
            out.append(lemma(f"leaders r{a}, r{b} hold different epochs", "implication", one_leader_per_epoch, a=a, b=b))
    return out
