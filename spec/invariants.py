"""The safety properties, each a predicate over one state (True = holds)."""

from __future__ import annotations

from typing import Iterator, List, NamedTuple, Optional, Tuple

from .state import LEADER, NONE, UNDEFINED, State


class Breach(NamedTuple):
    """One way a state breaks an invariant: a line naming it, and the log cells at fault as
    (replica, offset) pairs (the HTML report outlines them)."""
    text: str
    cells: Tuple[Tuple[int, int], ...]


def _entry(log, offset: int) -> str:
    record, epoch = log[offset]
    return f"{record}@{epoch}"


def lost_records(s: State) -> Iterator[Breach]:
    """Each acknowledged record the leader in office lacks at its offset (NoCommittedDataLoss)."""
    c = s.controller
    if c.leader == UNDEFINED:
        return
    leader = s.replicas[c.leader]
    if not (leader.alive and leader.role == LEADER and leader.leader_epoch == c.epoch):
        return
    log = leader.log
    for record, offset in enumerate(s.history.acked):
        if offset != UNDEFINED and (offset >= len(log) or log[offset][0] != record):
            there = (f"its log ends at offset {len(log)}" if offset >= len(log) else
                     f"it holds {_entry(log, offset)} there")
            yield Breach(f"record {record}, acknowledged at offset {offset}, is not there on r{c.leader}, the "
                         f"leader in office at epoch {c.epoch}: {there}", ((c.leader, offset),))


def no_committed_data_loss(s: State) -> bool:
    """Every acknowledged record sits at its offset in the log of the current leader once that
    leader has taken office (role leader at the controller's epoch)."""
    return next(lost_records(s), None) is None


def divergences(s: State) -> Iterator[Breach]:
    """Each offset below two replicas' HWs where their logs differ (NoLogDivergence)."""
    reps = s.replicas
    for a in range(len(reps)):
        for b in range(a + 1, len(reps)):
            below = min(reps[a].hw, reps[b].hw)
            if reps[a].log[:below] != reps[b].log[:below]:
                for o in range(below):
                    if reps[a].log[o] != reps[b].log[o]:
                        yield Breach(f"r{a} and r{b} differ at offset {o}, below both HWs ({reps[a].hw}, "
                                     f"{reps[b].hw}): r{a} holds {_entry(reps[a].log, o)}, r{b} holds "
                                     f"{_entry(reps[b].log, o)}", ((a, o), (b, o)))


def no_log_divergence(s: State) -> bool:
    """Any two replicas agree on every offset below both of their HWs."""
    return next(divergences(s), None) is None


def _replaced_reads(s: State, serves) -> Iterator[Breach]:
    exposed = s.history.exposed
    for r, rep in enumerate(s.replicas):
        if serves(rep):
            for o in range(min(rep.hw, len(exposed))):
                if rep.log[o][0] != exposed[o]:
                    role = "leader" if rep.role == LEADER else "follower"
                    yield Breach(f"a consumer could read record {exposed[o]} at offset {o}; r{r}, {role} with HW "
                                 f"{rep.hw}, now serves {_entry(rep.log, o)} there", ((r, o),))


def replaced_reads(s: State) -> Iterator[Breach]:
    """Each offset a consumer could read whose record a leader now serves another of
    (ConsumerConsistency)."""
    return _replaced_reads(s, lambda rep: rep.alive and rep.role == LEADER)


def consumer_consistency(s: State) -> bool:
    """Whatever a consumer could read at an offset (below some leader's HW) is never replaced by
    another record at that offset, on any replica that serves reads as leader."""
    return next(replaced_reads(s), None) is None


def replaced_reads_on_any_replica(s: State) -> Iterator[Breach]:
    """The same on every replica that serves reads, followers too (KIP-392)."""
    return _replaced_reads(s, lambda rep: rep.alive and rep.role != NONE)


def consumer_consistency_with_follower_reads(s: State) -> bool:
    """ConsumerConsistency when consumers may also read from followers (KIP-392): no live replica
    that serves reads, leader or follower, holds below its HW a record other than the one a consumer
    could have read at that offset."""
    return next(replaced_reads_on_any_replica(s), None) is None


def hws_beyond_leo(s: State) -> Iterator[Breach]:
    """Each replica whose HW is beyond its LEO (HwNotAboveLeo)."""
    for r, rep in enumerate(s.replicas):
        if rep.hw > len(rep.log):
            yield Breach(f"r{r}'s HW {rep.hw} is beyond its LEO {len(rep.log)}", ())


def hw_not_above_leo(s: State) -> bool:
    """A replica's HW never exceeds its LEO."""
    return next(hws_beyond_leo(s), None) is None


INVARIANTS = (
    ("NoCommittedDataLoss", no_committed_data_loss),
    ("NoLogDivergence", no_log_divergence),
    ("ConsumerConsistency", consumer_consistency),
    ("HwNotAboveLeo", hw_not_above_leo),
)


def leader_unfenced(s: State) -> bool:
    """The controller names as leader only a broker it sees alive (unfenced): no partition waits
    on a leader that cannot serve while it has no other way out (KAFKA-19522)."""
    c = s.controller
    return c.leader == UNDEFINED or bool(c.live >> c.leader & 1)


def fenced_leaders(s: State) -> Iterator[Breach]:
    """The leader the controller names while it is fenced (LeaderUnfenced)."""
    c = s.controller
    if not leader_unfenced(s):
        yield Breach(f"the controller names r{c.leader} leader at epoch {c.epoch} while it is fenced", ())


# checked only where an election can break it: the modes with Eligible Leader Replicas
ELR_ONLY = (("LeaderUnfenced", leader_unfenced),)

# each predicate's breaches: which record, offset or replica breaks it
BREACHES = {no_committed_data_loss: lost_records, no_log_divergence: divergences,
            consumer_consistency: replaced_reads, consumer_consistency_with_follower_reads: replaced_reads_on_any_replica,
            hw_not_above_leo: hws_beyond_leo, leader_unfenced: fenced_leaders}


def why_broken(pred, s: State) -> Optional[str]:
    """One line naming what breaks ``pred`` in ``s`` (None while it holds).

    >>> from hwcheck.checker.trace import load_itf, replay
    >>> done = replay(load_itf(open("counterexamples/hw-data-loss.itf.json").read()))
    >>> why_broken(no_committed_data_loss, done.trace.states[-1])
    'record 0, acknowledged at offset 0, is not there on r1, the leader in office at epoch 2: its log ends at offset 0'
    """
    first = next(BREACHES[pred](s), None)
    return first and first.text


def broken_cells(pred, s: State) -> List[Tuple[int, int]]:
    """Every log cell (replica, offset) at fault for ``pred`` in ``s``; [] while it holds."""
    return sorted({cell for breach in BREACHES[pred](s) for cell in breach.cells})


# every invariant name a design-model run can check (the gate's ``expect``)
INVARIANT_NAMES = tuple(name for name, _ in INVARIANTS + ELR_ONLY)


def invariants_for(cfg) -> tuple:
    """The invariants of a run: ConsumerConsistency covers followers when they serve reads; the
    modes with Eligible Leader Replicas also check LeaderUnfenced (their elections may name a
    broker the controller has fenced)."""
    invariants = INVARIANTS
    if getattr(cfg, "follower_reads", False):
        invariants = tuple((name, consumer_consistency_with_follower_reads if name == "ConsumerConsistency" else pred)
                           for name, pred in invariants)
    if cfg.mode_definition.elr:
        invariants += ELR_ONLY
    return invariants
