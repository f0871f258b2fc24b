"""Family history, over the history variable ``exposed_epoch`` (Model(cfg, history_variables=True)):
when each offset was exposed, by the leader of which epoch. Leader completeness in Kafka's form: a
leader holds every record exposed up to its epoch (the ISR that elected it held them, and a leader
never truncates), while a zombie may lack what was exposed after it left office."""

from __future__ import annotations

from typing import List

from hwcheck.spec.terms import FOLLOWER, LEADER

from .common import Lemma, alone_in_its_isr_view, holds_at, implies, leads, lemma


def r_leads(o, s, r):
    """r is up and believes it leads."""
    return leads(o, s.reps[r])


def its_leader_epoch(o, s, r):
    """r's leader epoch."""
    return s.reps[r].leader_epoch


def named(o, s, r):
    """The controller names r leader."""
    return s.ctl.leader == r


def controllers_epoch(o, s, r):
    """The controller's epoch."""
    return s.ctl.epoch


def in_controllers_isr(o, s, r):
    """r is in the controller's ISR."""
    return s.ctl.isr[r]


# guard, the epoch, and whether the exposing epoch is strictly before it
EPOCHS = {
    "leader, up to its epoch": (r_leads, its_leader_epoch, False),
    "leader, before its epoch": (r_leads, its_leader_epoch, True),
    "named, up to the controller's epoch": (named, controllers_epoch, False),
    "named, before the controller's epoch": (named, controllers_epoch, True),
    "controller's ISR, before the controller's epoch": (in_controllers_isr, controllers_epoch, True),
}


def exposed_held_by_epoch(enc, s, r, guard, epoch, strict, L):
    """r holds every record exposed up to (or before) an epoch: its own as leader, or the controller's."""
    o, rep, h = enc.o, s.reps[r], s.hist
    e = epoch(o, s, r)
    return implies(o, guard(o, s, r), o.And(*[implies(o, j < h.xlen, implies(
        o, h.exposed_epoch[j] < e if strict else h.exposed_epoch[j] <= e, holds_at(o, rep, j, h.exposed[j]))) for j in range(L)]))


def exposed_in_its_epoch_below_hw(enc, s, r, L):
    """What a leader exposed in its epoch is below its HW (a leader's HW never falls)."""
    o, rep, h = enc.o, s.reps[r], s.hist
    return implies(o, leads(o, rep), o.And(*[implies(o, j < h.xlen, implies(o, h.exposed_epoch[j] == rep.leader_epoch, j < rep.hw))
                                             for j in range(L)]))


def hw_exposed_by_its_epoch(enc, s, r, role, L):
    """Below a replica's HW every offset was exposed by its leader epoch or earlier.

    A leader exposes what it moves its HW over, a follower takes the HW of its epoch's leader, and
    neither HW outlives a change of epoch upward (a zombie keeps the HW of its own epoch)."""
    o, rep, h = enc.o, s.reps[r], s.hist
    return implies(o, o.And(rep.alive, rep.role == role),
                   o.And(*[implies(o, j < rep.hw, o.And(j < h.xlen, h.exposed_epoch[j] <= rep.leader_epoch)) for j in range(L)]))


def exposed_by_its_epoch_sole_member(enc, s, r, L):
    """A leader whose ISR view is itself alone is at the newest exposing epoch or later.

    The controller agreed to that ISR: nobody else is eligible until it expands the ISR again, so
    no other replica took office and exposed records after its epoch."""
    o, rep, h = enc.o, s.reps[r], s.hist
    return implies(o, alone_in_its_isr_view(o, s, r),
                   o.And(*[implies(o, j < h.xlen, h.exposed_epoch[j] <= rep.leader_epoch) for j in range(L)]))


def exposed_entry_not_newer(enc, s, r, L):
    """A copy of an exposed record carries an epoch no newer than the one that exposed it."""
    o, rep, h = enc.o, s.reps[r], s.hist
    return o.And(*[implies(o, j < h.xlen, implies(o, holds_at(o, rep, j, h.exposed[j]), rep.log[j][1] <= h.exposed_epoch[j]))
                   for j in range(L)])


def exposed_epochs_ordered(enc, s, L):
    """Offsets are exposed in order of epoch: a later offset by the same epoch or a later one."""
    o, h = enc.o, s.hist
    return o.And(*[implies(o, j + 1 < h.xlen, h.exposed_epoch[j] <= h.exposed_epoch[j + 1]) for j in range(L - 1)])


def exposed_epoch_within_controller(enc, s, L):
    """No offset was exposed by an epoch the controller has not handed out."""
    o, h = enc.o, s.hist
    return o.And(*[implies(o, j < h.xlen, h.exposed_epoch[j] <= s.ctl.epoch) for j in range(L)])


def exposed_epoch_templates(n: int, L: int) -> List[Lemma]:
    out = []
    for r in range(n):
        for g, (guard, epoch, strict) in EPOCHS.items():
            out.append(lemma(f"ExposedHeldByEpoch[r{r}, {g}]", "history", exposed_held_by_epoch,
                             r=r, guard=guard, epoch=epoch, strict=strict, L=L))
        out.append(lemma(f"ExposedInItsEpochBelowHw[r{r}]", "history", exposed_in_its_epoch_below_hw, r=r, L=L))
        for g, role in (("leader", LEADER), ("follower", FOLLOWER)):
            out.append(lemma(f"HwExposedByItsEpoch[r{r} {g}]", "history", hw_exposed_by_its_epoch, r=r, role=role, L=L))
        out.append(lemma(f"ExposedByItsEpoch[r{r} leader, sole member of its ISR view]", "history",
                         exposed_by_its_epoch_sole_member, r=r, L=L))
        out.append(lemma(f"ExposedEntryNotNewer[r{r}]", "history", exposed_entry_not_newer, r=r, L=L))
    out.append(lemma("ExposedEpochsOrdered", "history", exposed_epochs_ordered, L=L))
    out.append(lemma("ExposedEpochWithinController", "history", exposed_epoch_within_controller, L=L))
    return out
