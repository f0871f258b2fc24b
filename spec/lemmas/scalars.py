"""Family scalar-order: orderings between offsets and epochs (HW, LEO, leader epochs, the
controller's epoch, records produced, exposed length), between a follower and its leader, and a
leader's HW at the lowest LEO of its ISR view."""

from __future__ import annotations

from functools import partial
from typing import List

from hwcheck.spec.terms import FOLLOWER

from .common import Lemma, implies, leads, lemma


def leo(s, r):
    """r's log end offset."""
    return s.reps[r].leo


def hw(s, r):
    """r's high watermark."""
    return s.reps[r].hw


def leader_epoch(s, r):
    """r's leader epoch."""
    return s.reps[r].leader_epoch


def controller_epoch(s):
    """The controller's epoch."""
    return s.ctl.epoch


def produced(s):
    """How many records the producer sent."""
    return s.hist.produced


def exposed(s):
    """How many offsets consumers saw."""
    return s.hist.xlen


def scalars(n: int) -> list:
    """(name, term of the state, whether it is an epoch) for every scalar the family orders."""
    out = []
    for r in range(n):
        out += [(f"leo(r{r})", partial(leo, r=r), False), (f"hw(r{r})", partial(hw, r=r), False),
                (f"epoch(r{r})", partial(leader_epoch, r=r), True)]
    return out + [("ctl.epoch", controller_epoch, True), ("produced", produced, False), ("exposed", exposed, False)]


def ordered(enc, s, x, y):
    """One scalar is at most another (offsets with offsets, epochs with epochs)."""
    return x(s) <= y(s)


def followed_leader_order(enc, s, a, b, fa, fb):
    """A follower at its leader's epoch is not ahead of its leader (HW, HW against LEO, epoch)."""
    o = enc.o
    return implies(o, o.And(leads(o, s.reps[b]), s.reps[a].role == FOLLOWER,
                            s.reps[a].leader == b, s.reps[a].leader_epoch == s.reps[b].leader_epoch), fa(s, a) <= fb(s, b))


def hw_is_lowest_isr_leo(enc, s, l, n):
    """A leader's HW is at the lowest LEO of its ISR view.

    maybeIncrementLeaderHW runs after every step that moves a leader's LEO, a follower's remote LEO
    or the ISR view."""
    o, rep = enc.o, s.reps[l]
    return implies(o, leads(o, rep), o.Or(rep.hw >= rep.leo, *[o.And(rep.isr[f], rep.remote_leo[f] <= rep.hw)
                                                               for f in range(n) if f != l]))


def scalar_templates(n: int) -> List[Lemma]:
    out = []
    terms = scalars(n)
    for x, tx, epoch_x in terms:
        for y, ty, epoch_y in terms:
            if x == y or epoch_x != epoch_y:
                continue          # offsets with offsets, epochs with epochs
            out.append(lemma(f"{x} <= {y}", "scalar-order", ordered, x=tx, y=ty))
    for a in range(n):
        for b in range(n):
            if a == b:
                continue
            for x, fa, fb in (("hw", hw, hw), ("hw/leo", hw, leo), ("epoch", leader_epoch, leader_epoch)):
                out.append(lemma(f"{x}(r{a}) <= {x}(r{b}) [r{a} follows leader r{b} at its epoch]", "scalar-order",
                                 followed_leader_order, a=a, b=b, fa=fa, fb=fb))
    for l in range(n):
        out.append(lemma(f"hw(r{l}) is the lowest LEO of its ISR view [r{l} leads]", "scalar-order",
                         hw_is_lowest_isr_leo, l=l, n=n))
    return out
