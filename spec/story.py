"""How a violation came about, told from a trace: a few lines in the protocol's words under the
trace table (``Model.story``; cli/render.py, ``--json``, the HTML report).

Everything is derived from the trace's states and action labels, step by step (consecutive
states diffed), and from the mode's rules (spec/modes.py ``Change``), never written per trace.
The invariant's breach in the last state (spec/invariants.py) names what is at stake: a record
and an offset (acknowledged, or exposed to consumers) and the replica at fault. The story then
tells the steps that matter, at most one line each:

- the step where clients were promised the record (acknowledged, or exposed below a leader's HW);
- each step that changed the replica's log at that offset: a truncation (and the rule of the mode
  it followed), a power failure losing the unflushed tail, a disk loss, an append of another
  record; also a truncation that ended keeping a record its leader does not have;
- the step where the replica's HW came to cover a divergent entry;
- the election that put the replica in office (and why it was eligible).

>>> from hwcheck.checker.trace import load_itf, replay
>>> done = replay(load_itf(open("counterexamples/hw-data-loss.itf.json").read()))
>>> for line in done.model.story(done.trace.states, done.trace.labels, ["NoCommittedDataLoss"]):
...     print(line)
step 8: r0 (leader, epoch 1) acknowledges record 0 at offset 0 and exposes it to consumers (HW 1; ISR r0)
step 10: r1 truncates its log to its HW 0 on following r0 (epoch 1), losing record 0 at offset 0 (rule of hw, before KIP-101: a follower truncates its log to its HW when it starts following a different leader; ReplicaManager.makeFollowers, Partition.makeFollower @0.10.2.1)
step 11-12: r1 becomes leader at epoch 2 (controlled_shutdown_leader(r0,r1); in the ISR r0,r1) with its log ending at offset 0: record 0, acknowledged at offset 0, is gone
"""

from __future__ import annotations

import re
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple

from .invariants import (BREACHES, divergences, fenced_leaders, hws_beyond_leo, lost_records, replaced_reads,
                         replaced_reads_on_any_replica)
from .modes import Change, Mode, lineage
from .state import (EPOCH_RESPONSE, FETCH_RESPONSE, LEADER, UNDEFINED, State, members, replica_name)

Label = Tuple

# the Kafka methods each kind of step runs, to find the rule of the mode it followed: the newest
# Change along the mode's lineage whose source names one of them (spec/modes.py)
RULE_SOURCES = {
    "become_follower": ("makeFollower",),                                   # 0.10: truncate to the HW
    "follower_handle_epoch_response": ("getOffsetTruncationState", "maybeTruncate"),
    "epoch_answer": ("endOffsetFor",),                                      # the leader's answer
    "diverging": ("truncateOnFetchResponse",),                              # 2.8+: truncation on fetch
    "follower_handle_old_response": ("processFetchRequest",),               # KAFKA-18991
    "out_of_range": ("fetchOffsetAndTruncate", "handleOffsetOutOfRange"),
    "elect_elr": ("electAnyLeader",),                                       # KIP-966
    "same_epoch": ("BrokerChange",),                                        # a bounce the controller missed
    "isr_join": ("updateFollowerFetchState", "maybeExpandIsr"),             # a follower joins the ISR
    "unclean_registration": ("registerBroker",),                            # KIP-966: leaves the ELR
    "elr_assignment": ("handleAssignReplicasToDirs",),                      # 4.0-4.2: empties the ELR
}

TRUNCATIONS = ("become_follower", "follower_handle_epoch_response", "follower_handle_fetch",
               "follower_handle_old_response", "restart")


class Event(NamedTuple):
    """One line of a story: ``step <first>[-<last>]: <who> <text><tail>``. Two events of one step
    and one subject are told as one line; a tail (what an election left in office) is told once."""
    first: int      # the step it starts at
    last: int       # the step it ends at (== first for one step)
    who: str        # the subject: a replica, "the controller"
    text: str
    tail: str = ""

    def line(self) -> str:
        steps = f"step {self.first}" if self.first == self.last else f"step {self.first}-{self.last}"
        return f"{steps}: {self.who} {self.text}{self.tail}"


def rule(mode: Mode, kind: str) -> Optional[Change]:
    """The newest rule along ``mode``'s lineage that a step of ``kind`` (``RULE_SOURCES``) follows.

    >>> from hwcheck.spec.modes import MODES
    >>> rule(MODES["kip320"], "follower_handle_epoch_response").ref, rule(MODES["hw"], "elect_elr")
    ('KIP-279', None)
    """
    names = RULE_SOURCES.get(kind, ())
    found = None
    for m in lineage(mode):
        for c in m.changes:
            if any(name in c.source for name in names):
                found = (m, c)
    return found and found[1]


def cite(mode: Mode, *kinds: str) -> str:
    """`` (rule of <mode>, <ref>: <rule, up to its first ';'>; <Kafka source>)`` for each rule
    found, "" for none.

    >>> from hwcheck.spec.modes import MODES
    >>> cite(MODES["hw"], "become_follower")
    ' (rule of hw, before KIP-101: a follower truncates its log to its HW when it starts following a different leader; ReplicaManager.makeFollowers, Partition.makeFollower @0.10.2.1)'
    """
    out = []
    for kind in kinds:
        c = rule(mode, kind)
        if c is not None:
            owner = next(m.name for m in lineage(mode) if c in m.changes)
            source = c.source
            while re.search(r" \([^()]*\)", source):         # the source's remarks in parentheses are left out
                source = re.sub(r" \([^()]*\)", "", source)
            text = f" (rule of {owner}, {c.ref.strip('()')}: {c.rule.split('; ')[0]}; {source})"
            if text not in out:
                out.append(text)
    return "".join(out)


def _entry(rep, offset: int):
    return rep.log[offset] if offset < len(rep.log) else None


def _names(mask: int, n: int) -> str:
    return ",".join(replica_name(r) for r in members(mask, n)) or "none"


def _actor(before: State, after: State, label: Label) -> int:
    """The leader that made a promise in a step: a replica the label names that leads after it,
    else the replica whose HW rose."""
    for r in label[1:]:
        if after.replicas[r].role == LEADER and after.replicas[r].alive:
            return r
    rose = [r for r, (a, b) in enumerate(zip(before.replicas, after.replicas)) if b.hw > a.hw]
    return rose[0] if rose else label[1] if len(label) > 1 else UNDEFINED


class Teller:
    """The story of one trace under one mode (``tell``)."""

    def __init__(self, mode: Mode, cfg, states: Sequence[State], labels: Sequence[Label]):
        self.mode, self.cfg, self.states, self.labels = mode, cfg, list(states), list(labels)
        self.n = len(states[0].replicas)

    def label(self, i: int) -> str:
        lab = self.labels[i - 1]
        return f"{lab[0]}({','.join(replica_name(r) for r in lab[1:])})"

    def steps(self, test) -> List[int]:
        """The steps i where ``test(before, after)`` holds."""
        return [i for i in range(1, len(self.states)) if test(self.states[i - 1], self.states[i])]

    # ------------------------------------------------------------ promises to clients
    def promise(self, record: int, offset: int, acked: bool) -> Optional[Event]:
        """The step where ``record`` was acknowledged at ``offset`` (``acked``), or exposed there."""
        def acks(b, a):
            def at(s):
                return s.history.acked[record] if record < len(s.history.acked) else UNDEFINED
            return at(a) == offset != at(b)

        def reads(b, a):
            return len(b.history.exposed) <= offset < len(a.history.exposed) and a.history.exposed[offset] == record
        found = self.steps(acks if acked else reads)
        if not found:
            return None
        i = found[0]
        before, after = self.states[i - 1], self.states[i]
        now_acked, now_read = acks(before, after), reads(before, after)
        r = _actor(before, after, self.labels[i - 1])
        rep = after.replicas[r]
        what = f"{'acknowledges' if now_acked else 'exposes'} record {record} at offset {offset}"
        what += " and exposes it to consumers" if now_acked and now_read else " to consumers" if now_read else ""
        how = "acks=1: on its append; " if now_acked and self.cfg.acks == "1" else ""
        return Event(i, i, f"{replica_name(r)} (leader, epoch {rep.leader_epoch})",
                     f"{what} ({how}HW {rep.hw}; ISR {_names(rep.isr, self.n)})")

    # ------------------------------------------------------------ one log cell's history
    def cell(self, r: int, offset: int, since: int) -> List[Event]:
        """The steps that changed replica ``r``'s log at ``offset``: every change after step
        ``since``, and the step that wrote what it holds at the end; with them, a truncation after
        ``since`` that ended keeping there an entry its leader does not hold."""
        changes = self.steps(lambda b, a: _entry(b.replicas[r], offset) != _entry(a.replicas[r], offset))
        held = _entry(self.states[-1].replicas[r], offset)
        wrote = changes[-1] if changes and held is not None else None
        events = [self.change(r, offset, i) for i in changes if i > since or i == wrote]
        return events + [self.kept(r, offset, i) for i in range(since + 1, len(self.states))]

    def change(self, r: int, offset: int, i: int) -> Event:
        b, a = self.states[i - 1].replicas[r], self.states[i].replicas[r]
        was, now = _entry(b, offset), _entry(a, offset)
        action = self.labels[i - 1][0]
        who = replica_name(r)
        if now is None or (was is not None and action in TRUNCATIONS):
            if action == "power_fail":
                text = f"loses power: its log falls back to its flushed offset {a.leo}"
            elif action == "lose_disk":
                text = "loses its disk and comes back empty"
            else:
                text = f"truncates its log to {self.truncation(r, i)}"
            text += f", losing record {was[0]} at offset {offset}" if was is not None else ""
            if now is not None:
                text += f", then copies record {now[0]} (epoch {now[1]}) there from {replica_name(a.leader)}"
            return Event(i, i, who, text + self.truncation_rule(r, i))
        if action == "produce":
            return Event(i, i, f"{who} (leader, epoch {a.leader_epoch})", f"appends record {now[0]} at offset {offset}"
                         + (f" where it held record {was[0]}" if was is not None else ""))
        return Event(i, i, who, f"copies record {now[0]} (epoch {now[1]}) at offset {offset} from "
                                f"{replica_name(a.leader)}")

    def answer(self, r: int, i: int):
        """The message a follower handled in step i (in flight, or left waiting: KAFKA-18991)."""
        before = self.states[i - 1]
        return before.stale[r] if self.labels[i - 1][0] == "follower_handle_old_response" else before.inflight[r]

    def truncation(self, r: int, i: int) -> str:
        """Where and on what r truncated in step i."""
        b, a = self.states[i - 1].replicas[r], self.states[i].replicas[r]
        action, msg = self.labels[i - 1][0], self.answer(r, i)
        leader = replica_name(a.leader)
        if action == "become_follower":
            to = f"its HW {a.leo}" if a.leo == b.hw else f"offset {a.leo}"
            return f"{to} on following {leader} (epoch {a.leader_epoch})"
        if msg and msg.kind == EPOCH_RESPONSE:
            epoch = f"epoch {msg.epoch}, " if msg.epoch != UNDEFINED else ""
            return f"offset {a.leo} on {leader}'s OffsetsForLeaderEpoch answer ({epoch}end offset {msg.end_offset})"
        if msg and msg.kind == FETCH_RESPONSE and msg.diverging_epoch != UNDEFINED:
            return (f"offset {a.leo} on {leader}'s fetch response naming diverging epoch {msg.diverging_epoch} "
                    f"(end offset {msg.diverging_end_offset})")
        if msg and msg.kind == FETCH_RESPONSE:
            return f"{leader}'s LEO {msg.leader_leo} (its fetch offset {b.leo} is out of range)"
        return f"offset {a.leo} ({self.label(i)})"

    def truncation_rule(self, r: int, i: int) -> str:
        action, msg = self.labels[i - 1][0], self.answer(r, i)
        if action == "become_follower":
            return cite(self.mode, action)
        if action == "follower_handle_epoch_response":
            return cite(self.mode, action, "epoch_answer")
        if action == "follower_handle_old_response":
            return cite(self.mode, action)
        if msg and msg.kind == FETCH_RESPONSE:
            return cite(self.mode, "diverging" if msg.diverging_epoch != UNDEFINED else "out_of_range")
        return ""

    def kept(self, r: int, offset: int, i: int) -> Optional[Event]:
        """Step i ended r's truncation with an entry at ``offset`` its leader does not hold there."""
        b, a = self.states[i - 1].replicas[r], self.states[i].replicas[r]
        msg = self.answer(r, i) if self.labels[i - 1][0] in TRUNCATIONS else None
        ended = msg and ((msg.kind == EPOCH_RESPONSE and not a.truncating) or
                         (msg.kind == FETCH_RESPONSE and msg.diverging_epoch != UNDEFINED and msg.hw == UNDEFINED))
        mine = _entry(a, offset)
        if not ended or mine is None or mine != _entry(b, offset):
            return None
        theirs = _entry(self.states[i].replicas[a.leader], offset)
        if theirs is None or theirs == mine:
            return None
        return Event(i, i, replica_name(r), f"ends its truncation at {self.truncation(r, i)} keeping record "
                                            f"{mine[0]} (epoch {mine[1]}) at offset {offset}, where "
                                            f"{replica_name(a.leader)} holds record {theirs[0]} (epoch {theirs[1]})"
                     + self.truncation_rule(r, i))

    def hw_rise(self, r: int, offset: int) -> Optional[Event]:
        """The last step where r's HW came to cover ``offset``."""
        rose = self.steps(lambda b, a: b.replicas[r].hw <= offset < a.replicas[r].hw)
        if not rose:
            return None
        i = rose[-1]
        a = self.states[i].replicas[r]
        mine = _entry(a, offset)
        covering = f", covering record {mine[0]} (epoch {mine[1]}) at offset {offset}"
        if a.role == LEADER:
            return Event(i, i, f"{replica_name(r)} (leader, epoch {a.leader_epoch})",
                         f"raises its HW to {a.hw}" + covering)
        msg = self.answer(r, i)
        text = f"takes HW {a.hw} from {replica_name(a.leader)}'s fetch response"
        if msg and msg.kind == FETCH_RESPONSE and msg.diverging_epoch != UNDEFINED:
            text += f" naming diverging epoch {msg.diverging_epoch}, before truncating" + covering + \
                cite(self.mode, "diverging")
        else:
            text += covering
        return Event(i, i, replica_name(r), text)

    # ------------------------------------------------------------ who holds office
    def isr_join(self, r: int, offset: int, record: int, since: int) -> Optional[Event]:
        """The last step after ``since`` where r joined the controller's ISR without ``record`` at
        ``offset``."""
        joined = [i for i in self.steps(lambda b, a: not b.controller.isr >> r & 1 and a.controller.isr >> r & 1
                                        and a.controller.leader == b.controller.leader)    # not by an election
                  if i > since and (_entry(self.states[i].replicas[r], offset) or (None,))[0] != record]
        if not joined:
            return None
        i = joined[-1]
        return Event(i, i, replica_name(r), f"joins the ISR ({self.label(i)}) without record {record} at offset "
                                            f"{offset}" + cite(self.mode, "isr_join"))

    def election(self, r: int) -> Tuple[Optional[int], Optional[int]]:
        """(the step where the controller named r leader at the last epoch, the step where r took
        office); either None when the trace has none (named before the trace, or never in office)."""
        epoch = self.states[-1].controller.epoch
        took = [i for i in range(1, len(self.states)) if self.labels[i - 1] == ("become_leader", r)]
        named = self.steps(lambda b, a: (a.controller.leader, a.controller.epoch) == (r, epoch) !=
                           (b.controller.leader, b.controller.epoch))
        took = took[-1] if took else None
        named = [i for i in named if took is None or i <= took]
        return (named[-1] if named else None), took

    def passed_over(self, r: int, offset: int, record: int) -> List[Event]:
        """The replicas that held ``record`` at ``offset`` when r was elected without it, and had
        left the ISR (and the ELR) by then: the step each left."""
        named, _ = self.election(r)
        if named is None:
            return []
        before = self.states[named - 1]
        c = before.controller
        events = []
        for x, rep in enumerate(before.replicas):
            held = _entry(rep, offset)
            if x == r or held is None or held[0] != record or c.isr >> x & 1 or (self.mode.elr and c.elr >> x & 1):
                continue

            def eligible(s):
                return s.controller.isr >> x & 1 or (self.mode.elr and s.controller.elr >> x & 1)
            left = self.steps(lambda b, a: eligible(b) and not eligible(a))
            left = [i for i in left if i < named]
            if left:
                i = left[-1]
                was = "ISR" if self.states[i - 1].controller.isr >> x & 1 else "ELR"
                why = "elr_assignment" if self.labels[i - 1][0] == "assign_dir" else "unclean_registration"
                rule_text = cite(self.mode, why) if was == "ELR" else ""
                had = (_entry(self.states[i].replicas[x], offset) or (None,))[0] == record
                isr = self.states[i].controller.isr
                below = len(members(isr, self.n)) < self.cfg.min_isr
                events.append(Event(i, i, replica_name(x), f"leaves the {was}"
                                    + (f" holding record {record} at offset {offset}" if had else "")
                                    + f" ({self.label(i)}"
                                    + (f"; ISR now {_names(isr, self.n)}" if was == "ISR" else "")
                                    + (f", below min.insync.replicas {self.cfg.min_isr}" if was == "ISR" and below
                                       else "") + ")" + rule_text))
        return events

    def office(self, r: int, tail: str) -> Optional[Event]:
        """The election that put r, the leader in office at the end, in office, and its taking
        office; a return to office after a restart the controller never saw is told at its step."""
        epoch = self.states[-1].controller.epoch
        named, took = self.election(r)
        if took is None:
            return None
        restarted = [i for i in range(named or 1, took) if self.labels[i - 1] == ("restart", r)]
        if named is None or restarted:
            how = "named in the initial state" if named is None else \
                f"named at step {named}, {self.label(named)}"
            if restarted:
                how += f"; the controller never saw its restart at step {restarted[-1]}" + cite(self.mode, "same_epoch")
            return Event(took, took, f"{replica_name(r)} takes office at epoch {epoch}", f"({how})", tail)
        c = self.states[named - 1].controller
        rule_text = ""
        if c.isr >> r & 1:
            why = f"in the ISR {_names(c.isr, self.n)}"
        elif self.mode.elr and c.elr >> r & 1:
            why, rule_text = "in the ELR", cite(self.mode, "elect_elr")
        elif self.mode.elr and c.last_known_elr >> r & 1:
            why, rule_text = "ISR and ELR empty, the last known leader", cite(self.mode, "elect_elr")
        else:
            why = f"not in the ISR {_names(c.isr, self.n)}: an unclean election"
        return Event(named, took, f"{replica_name(r)} becomes leader at epoch {epoch}",
                     f"({self.label(named)}; {why}){rule_text}", tail)

    # ------------------------------------------------------------ per invariant
    def loss(self, leader: int, offset: int) -> List[Event]:
        last = self.states[-1]
        log = last.replicas[leader].log
        record = next(rec for rec, o in enumerate(last.history.acked)
                      if o == offset and (offset >= len(log) or log[offset][0] != rec))
        promised = self.promise(record, offset, acked=True)
        since = promised.first if promised else 0
        held = _entry(last.replicas[leader], offset)
        there = (f"its log ending at offset {len(log)}" if held is None else
                 f"record {held[0]} (epoch {held[1]}) at offset {offset}")
        if not any((_entry(s.replicas[leader], offset) or (None,))[0] == record for s in self.states):
            there += f", never having held record {record}"
        tail = f" with {there}: record {record}, acknowledged at offset {offset}, is gone"
        return [promised, *self.cell(leader, offset, since), self.isr_join(leader, offset, record, since),
                *self.passed_over(leader, offset, record), self.office(leader, tail)]

    def replaced(self, r: int, offset: int) -> List[Event]:
        last = self.states[-1]
        record = last.history.exposed[offset]
        promised = self.promise(record, offset, acked=False)
        since = promised.first if promised else 0
        held = _entry(last.replicas[r], offset)
        events = [promised, *self.cell(r, offset, since)]
        if last.replicas[r].role == LEADER:
            tail = f" serving record {held[0]} at offset {offset}, where consumers could read record {record}"
            return events + [self.isr_join(r, offset, record, since), *self.passed_over(r, offset, record),
                             self.office(r, tail)]
        return events + [self.hw_rise(r, offset)]

    def divergence(self, a: int, b: int, offset: int) -> List[Event]:
        last = self.states[-1]
        exposed = last.history.exposed
        record = exposed[offset] if offset < len(exposed) else None
        promised = self.promise(record, offset, acked=False) if record is not None else None
        since = promised.first if promised else 0
        events = [promised]
        for r in (a, b):
            held = _entry(last.replicas[r], offset)
            if record is None or held[0] != record:
                events += self.cell(r, offset, since) + [self.hw_rise(r, offset)]
        return events

    def hw_beyond_leo(self, r: int) -> List[Event]:
        i = self.steps(lambda b, a: a.replicas[r].hw > a.replicas[r].leo >= b.replicas[r].hw)[-1:]
        return [Event(j, j, replica_name(r), f"takes HW {self.states[j].replicas[r].hw}, beyond its LEO "
                                             f"{self.states[j].replicas[r].leo} ({self.label(j)})") for j in i]

    def fenced_leader(self, r: int) -> List[Event]:
        epoch = self.states[-1].controller.epoch
        fenced = self.steps(lambda b, a: b.controller.live >> r & 1 and not a.controller.live >> r & 1)[-1:]
        named = self.steps(lambda b, a: a.controller.leader == r and a.controller.epoch == epoch != b.controller.epoch)
        events = [Event(i, i, "the controller", f"fences {replica_name(r)} ({self.label(i)})") for i in fenced]
        for i in named[-1:]:
            c = self.states[i - 1].controller
            why = "ISR and ELR empty, the last known leader" if c.last_known_elr >> r & 1 else "the leader"
            events.append(Event(i, i, "the controller", f"elects {replica_name(r)} at epoch {epoch} while it is "
                                f"fenced ({self.label(i)}; {why})" + cite(self.mode, "elect_elr")))
        return events


def tell(mode: Mode, cfg, states: Sequence[State], labels: Sequence[Label],
         preds: Sequence[Callable[[State], bool]]) -> List[str]:
    """The story of the broken predicates ``preds`` in the trace's last state under ``mode`` and
    the run's Config ``cfg`` (its acks and min.insync.replicas), one line per step that matters
    (the steps of one subject in one line), in step order."""
    if not states:
        return []
    teller, last = Teller(mode, cfg, states, labels), states[-1]
    events: List[Event] = []
    for pred in preds:
        find = BREACHES.get(pred)
        breach = next(find(last), None) if find else None
        if breach is None:
            continue
        if find is lost_records:
            events += teller.loss(*breach.cells[0])
        elif find in (replaced_reads, replaced_reads_on_any_replica):
            events += teller.replaced(*breach.cells[0])
        elif find is divergences:
            (a, offset), (b, _) = breach.cells
            events += teller.divergence(a, b, offset)
        elif find is hws_beyond_leo:
            events += teller.hw_beyond_leo(next(r for r, rep in enumerate(last.replicas) if rep.hw > rep.leo))
        elif find is fenced_leaders:
            events += teller.fenced_leader(last.controller.leader)
    told: List[Event] = []
    for e in sorted((e for e in events if e is not None), key=lambda e: (e.first, e.last)):
        same = next((k for k, t in enumerate(told) if (t.first, t.last, t.who) == (e.first, e.last, e.who)), None)
        if same is None:
            told.append(e)
        elif e.text not in told[same].text:        # one subject's steps in one line; a tail told once
            told[same] = told[same]._replace(text=f"{told[same].text} and {e.text}")
    return [e.line() for e in told]
