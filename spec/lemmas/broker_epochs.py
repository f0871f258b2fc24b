"""KIP-903 (modes with broker epochs), in family implication: a Fetch carries the broker epoch of
its sender's registration and the controller counts registrations, so no Fetch (sent, or abandoned
and still in flight) nor a leader's record of it names a later one; the Fetch in flight names the
latest."""

from __future__ import annotations

from typing import List

from hwcheck.spec.terms import FETCH, NO_MESSAGE, UNDEFINED

from .common import Lemma, implies, leads, lemma


def at_most(d, e):
    """The broker epoch a Fetch names is at most the registered one."""
    return d <= e


def equal_to(d, e):
    """The broker epoch a Fetch names is the registered one."""
    return d == e


def fetches_name_a_registered_broker_epoch(enc, s, r, in_flight):
    """No Fetch of r, nor a leader's record of one, names a broker epoch past r's latest registration.

    ``in_flight`` compares the Fetch in flight's broker epoch with the controller's count (at most,
    or equal); a stale Fetch's is at most it."""
    o, m, st, c = enc.o, s.msgs[r], s.stale[r], s.ctl
    return o.And(implies(o, m.kind == FETCH, in_flight(m.broker_epoch, c.broker_epochs[r])),
                 implies(o, st.kind != NO_MESSAGE, st.broker_epoch <= c.broker_epochs[r]),
                 *[implies(o, o.And(leads(o, x), x.remote_broker_epoch[r] != UNDEFINED), x.remote_broker_epoch[r] <= c.broker_epochs[r]) for x in s.reps])


def broker_epoch_templates(n: int) -> List[Lemma]:
    out = []
    for r in range(n):
        for what, in_flight in (("its Fetches name a broker epoch the controller registered", at_most),
                                ("its Fetch in flight names its current broker epoch", equal_to)):
            out.append(lemma(f"r{r}: {what}", "implication", fetches_name_a_registered_broker_epoch,
                             r=r, in_flight=in_flight))
    return out
