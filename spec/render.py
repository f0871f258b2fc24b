"""A design-model state in a few lines (``Model.summary``; the nodes of ``hwcheck graph``'s export).

>>> from hwcheck.spec import Config, Model
>>> m = Model(Config(mode="hw"))
>>> print(summary(m.step(m.init_states()[0], ("send_fetch", 1))))
r0 L0 [] hw0 rl0
r1 F0 [] hw0 fetch@0
ctl r0 e0 {r0,r1}
"""

from __future__ import annotations

from .state import EPOCH_REQUEST, FETCH, FETCH_RESPONSE, FOLLOWER, LEADER, UNDEFINED, Message, State, members

ROLE = {LEADER: "L", FOLLOWER: "F"}


def summary(s: State) -> str:
    """Per replica role+epoch (or down), log records, HW, a leader's remote LEOs (rl), the
    replica's message in flight; the controller's leader, epoch and ISR."""
    n = len(s.replicas)
    lines = []
    for r, rep in enumerate(s.replicas):
        head = "down" if not rep.alive else ROLE.get(rep.role, "-") + (str(rep.leader_epoch) if rep.role else "")
        log = ",".join(str(rec) for rec, _ in rep.log)
        line = f"r{r} {head} [{log}] hw{rep.hw}"
        if rep.alive and rep.role == LEADER:
            line += " rl" + ",".join("?" if v == UNDEFINED else str(v) for f, v in enumerate(rep.remote_leo) if f != r)
        msg = s.inflight[r]
        if msg:
            line += " " + message_text(msg)
        lines.append(line)
    c = s.controller
    leader = "-" if c.leader == UNDEFINED else f"r{c.leader}"
    isr = ",".join(f"r{r}" for r in members(c.isr, n))
    lines.append(f"ctl {leader} e{c.epoch} {{{isr}}}")
    return "\n".join(lines)


def message_text(msg: Message) -> str:
    """A message in a few characters: ``fetch@<offset>``, ``resp[<records>]hw<hw>``,
    ``epoch?<requested>``, ``epoch=<epoch>:<end offset>``."""
    if msg.kind == FETCH:
        return f"fetch@{msg.fetch_offset}"
    if msg.kind == FETCH_RESPONSE:
        return f"resp[{','.join(str(rec) for rec, _ in msg.records)}]hw{msg.hw}"
    if msg.kind == EPOCH_REQUEST:
        return f"epoch?{msg.requested_epoch}"
    return f"epoch={msg.epoch}:{msg.end_offset}"


def clients_saw(before: State, after: State) -> str:
    """What the clients saw change in one step: a record acknowledged to the producer (``ack #0 at
    0``: record 0, at offset 0), a record exposed to consumers (``read #0 at 0``); "" for none.

    >>> from hwcheck.checker.trace import load_itf, replay
    >>> done = replay(load_itf(open("counterexamples/hw-data-loss.itf.json").read()))
    >>> [(i, clients_saw(a, b)) for i, (a, b) in enumerate(zip(done.trace.states, done.trace.states[1:]), 1)
    ...  if clients_saw(a, b)]
    [(8, 'ack, read #0 at 0')]
    """
    acked = {(record, offset) for record, offset in enumerate(after.history.acked)
             if offset != UNDEFINED and offset != (before.history.acked[record] if record < len(before.history.acked)
                                                   else UNDEFINED)}
    read = {(after.history.exposed[o], o) for o in range(len(before.history.exposed), len(after.history.exposed))}
    seen = [("ack, read" if (record, offset) in read else "ack") + f" #{record} at {offset}"
            for record, offset in sorted(acked, key=lambda ro: ro[1])]
    seen += [f"read #{record} at {offset}" for record, offset in sorted(read - acked, key=lambda ro: ro[1])]
    return ", ".join(seen)
