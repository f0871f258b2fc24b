"""Records and their epochs wherever they are (the replicas' logs and the FetchResponses in flight):
families record-offset (a record sits at one offset, and only once produced), record-epoch (one
epoch per record, one record per epoch at an offset), log-matching (Raft's Log Matching in
Kafka's form, and a leader holds every entry of its epoch) and epoch-order (epochs never decrease
along a log)."""

from __future__ import annotations

from typing import List

from .common import Lemma, implies, leads, lemma, source, source_names, took_office_named


def record_produced(enc, s, x, L):
    """Every record in a log or FetchResponse is one the producer sent."""
    o = enc.o
    _, present, slots = source(enc, s, x)
    return o.And(*[implies(o, present(j), slots[j][0] < s.hist.produced) for j in range(L)])


def record_one_offset(enc, s, x, y, L):
    """A record sits at one offset: two copies of it (in logs or FetchResponses) are at the same offset."""
    o = enc.o
    _, px, sx = source(enc, s, x)
    _, py, sy = source(enc, s, y)
    return o.And(*[implies(o, o.And(px(i), py(j)), sx[i][0] != sy[j][0])
                   for i in range(L) for j in range(L) if i != j])


def same_implies_same(enc, s, x, y, a, b, L):
    """At one offset, two copies with the same record have the same epoch, and with the same epoch the same record.

    (a, b) = (0, 1): RecordOneEpoch; (1, 0): OneRecordPerEpoch (a leader writes one record per
    offset in its epoch)."""
    o = enc.o
    _, px, sx = source(enc, s, x)
    _, py, sy = source(enc, s, y)
    return o.And(*[implies(o, o.And(px(j), py(j), sx[j][a] == sy[j][a]), sx[j][b] == sy[j][b])
                   for j in range(L)])


def log_matching(enc, s, x, y, j, L):
    """Log Matching: the same (record, epoch) at offset j in two places means the same entries below j."""
    o = enc.o
    _, px, sx = source(enc, s, x)
    _, py, sy = source(enc, s, y)
    same = o.And(px(j), py(j), sx[j][0] == sy[j][0], sx[j][1] == sy[j][1])
    prefix = [implies(o, o.And(px(i), py(i)), o.And(sx[i][0] == sy[i][0], sx[i][1] == sy[i][1]))
              for i in range(j)]
    return implies(o, same, o.And(*prefix))


def leader_holds_office(enc, s, l):
    """l is up and believes it leads."""
    return leads(enc.o, s.reps[l])


def leader_epoch(enc, s, l):
    """l's leader epoch."""
    return s.reps[l].leader_epoch


def controller_epoch(enc, s, l):
    """The controller's epoch (that of the leader it names)."""
    return s.ctl.epoch


def holds_its_epoch(enc, s, x, l, holds_office, epoch, L):
    """A leader holds every entry of its own epoch, wherever one is, at the same offset (it wrote them all)."""
    o, rl = enc.o, s.reps[l]
    _, px, sx = source(enc, s, x)
    e = epoch(enc, s, l)
    return implies(o, holds_office(enc, s, l), o.And(*[
        implies(o, o.And(px(j), sx[j][1] == e),
                o.And(j < rl.leo, rl.log[j][0] == sx[j][0], rl.log[j][1] == sx[j][1])) for j in range(L)]))


def epoch_order(enc, s, x, L):
    """Epochs never decrease along a log or a FetchResponse."""
    o = enc.o
    _, p, sl = source(enc, s, x)
    return o.And(*[implies(o, o.And(p(j), p(j + 1)), sl[j][1] <= sl[j + 1][1]) for j in range(L - 1)])


# a leader holds every entry of its own epoch, wherever it is, at the same offset; so does the
# replica the controller named once its cache says it took office (cached modes only)
HOLDERS = (("LeaderHoldsItsEpoch[{x}, leader r{l}]", leader_holds_office, leader_epoch),
           ("NamedLeaderHoldsItsEpoch[{x}, r{l}]", took_office_named, controller_epoch))


def record_templates(n: int, L: int) -> List[Lemma]:
    out = []
    names = source_names(n)
    k = len(names)
    for x in range(k):
        out.append(lemma(f"RecordProduced[{names[x]}]", "record-offset", record_produced, x=x, L=L))
        for y in range(x, k):
            out.append(lemma(f"RecordOneOffset[{names[x]},{names[y]}]", "record-offset", record_one_offset,
                             x=x, y=y, L=L))
            if x == y:
                continue
            for name, a, b in (("RecordOneEpoch", 0, 1), ("OneRecordPerEpoch", 1, 0)):
                out.append(lemma(f"{name}[{names[x]},{names[y]}]", "record-epoch", same_implies_same,
                                 x=x, y=y, a=a, b=b, L=L))
            for j in range(1, L):
                out.append(lemma(f"LogMatching[{names[x]},{names[y]}@{j}]", "log-matching", log_matching,
                                 x=x, y=y, j=j, L=L))
    for x in range(k):
        for l in range(n):
            if names[x] == f"log(r{l})":
                continue
            for name, holds_office, epoch in HOLDERS:
                out.append(lemma(name.format(x=names[x], l=l), "log-matching", holds_its_epoch,
                                 x=x, l=l, holds_office=holds_office, epoch=epoch, L=L))
    for x in range(k):
        out.append(lemma(f"EpochOrder[{names[x]}]", "epoch-order", epoch_order, x=x, L=L))
    return out
