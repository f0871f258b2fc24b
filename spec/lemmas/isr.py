"""Family isr: the controller's ISR against a leader's view of it (AlterPartition keeps the two
together while the leader is in office), and who a stale leader's view still holds."""

from __future__ import annotations

from typing import List

from .common import Lemma, implies, in_office, last_known_electable, leads, lemma


def l_leads(o, s, l):
    """l is up and believes it leads."""
    return leads(o, s.reps[l])


GUARDS = (("leads", l_leads), ("in office", in_office))


def isr_within_view(enc, s, l, x, guard):
    """A member of the controller's ISR is in the leader's ISR view."""
    o = enc.o
    return implies(o, o.And(guard(o, s, l), s.ctl.isr[x]), s.reps[l].isr[x])


def view_within_isr(enc, s, l, x, guard):
    """A member of the leader's ISR view is in the controller's ISR."""
    o = enc.o
    return implies(o, o.And(guard(o, s, l), s.reps[l].isr[x]), s.ctl.isr[x])


def newer_leader_in_stale_view(enc, s, l, x):
    """A stale leader's ISR view holds every newer leader.

    Without an unclean election the controller elects from the ISR, which a leader shrinks only
    through its view."""
    o, rl, rx = enc.o, s.reps[l], s.reps[x]
    newer = o.Or(o.And(leads(o, rx), rx.leader_epoch > rl.leader_epoch),
                 o.And(s.ctl.leader == x, s.ctl.epoch > rl.leader_epoch))
    return implies(o, o.And(leads(o, rl), newer), rl.isr[x])


def newer_epoch_holder_in_stale_view(enc, s, l, x):
    """A stale leader's ISR view holds a replica that holds a record of a newer epoch.

    With two replicas that replica wrote it as the newer leader; with more the prefilter decides."""
    o, rl, rx = enc.o, s.reps[l], s.reps[x]
    newer = o.Or(*[o.And(j < rx.leo, rx.log[j][1] > rl.leader_epoch) for j in range(len(rx.log))])
    return implies(o, o.And(leads(o, rl), newer), rl.isr[x])


def last_known_leader_led_the_epoch(enc, s, l, x):
    """KIP-966: nobody but the last known leader leads the controller's epoch while ISR and ELR are empty.

    The last known leader is the leader the controller named at its epoch when ISR and ELR became
    empty (no new epoch since)."""
    o, c, rx = enc.o, s.ctl, s.reps[x]
    if not c.elr:
        return True
    return implies(o, last_known_electable(o, s, l),
                   o.Not(o.And(leads(o, rx), rx.leader_epoch == c.epoch)))


def isr_templates(n: int) -> List[Lemma]:
    out = []
    for l in range(n):
        for x in range(n):
            for g, guard in GUARDS:
                out.append(lemma(f"IsrWithinView[r{x}, r{l} {g}]", "isr", isr_within_view, l=l, x=x, guard=guard))
                out.append(lemma(f"ViewWithinIsr[r{x}, r{l} {g}]", "isr", view_within_isr, l=l, x=x, guard=guard))
            if x == l:
                continue
            out.append(lemma(f"NewerLeaderInStaleView[r{x}, r{l} leads]", "isr", newer_leader_in_stale_view, l=l, x=x))
            out.append(lemma(f"NewerEpochHolderInStaleView[r{x}, r{l} leads]", "isr", newer_epoch_holder_in_stale_view,
                             l=l, x=x))
            out.append(lemma(f"LastKnownLeaderLedTheEpoch[r{l}, not r{x}]", "isr", last_known_leader_led_the_epoch,
                             l=l, x=x))
    return out
