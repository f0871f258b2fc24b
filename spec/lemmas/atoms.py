"""The protocol's atoms over the encoding's state, from which the checker builds lemmas by itself:

- ``replica_atoms`` and ``state_atoms``: boolean facts (a replica's role, the controller's view of
  it, messages in flight, how two replicas' epochs, LEOs and HWs compare), which the implication
  family (spec/lemmas/implications.py) and the clause family (checker/houdini.py ``Clauses``)
  combine;
- ``scalars``: every scalar of the state, named and sorted (offset, epoch, value, replica), guarded
  to read ``VOID`` where its slot is unused, which the blocking clauses of checker/cubes.py compare.
"""

from __future__ import annotations

from typing import List, Tuple

from hwcheck.spec.terms import (EPOCH_REQUEST, EPOCH_RESPONSE, FETCH, FETCH_RESPONSE, FETCHING, FOLLOWER, LEADER,
                                NO_MESSAGE, NONE, TRUNCATING_AGAIN, latest_cached_epoch)

# ---------------------------------------------------------------- boolean facts

ATOM_NAMES = ("alive", "leader", "follower", "no role", "named by the controller", "in the ISR", "live",
              "at the controller's epoch", "fetching", "a message in flight", "a stale fetch", "in its own ISR view")


def replica_atoms(o, s, r) -> List[Tuple[str, object]]:
    """The boolean facts of replica r (``ATOM_NAMES``, then KIP-966's ELR and last known leader in modes with ELR)."""
    rep, c, m = s.reps[r], s.ctl, s.msgs[r]
    return [("alive", rep.alive), ("leader", rep.role == LEADER), ("follower", rep.role == FOLLOWER),
            ("no role", rep.role == NONE), ("named by the controller", c.leader == r), ("in the ISR", c.isr[r]),
            ("live", c.live[r]), ("at the controller's epoch", rep.leader_epoch == c.epoch),
            ("fetching", rep.truncating == FETCHING), ("a message in flight", m.kind != NO_MESSAGE),
            ("a stale fetch", s.stale[r].kind != NO_MESSAGE), ("in its own ISR view", rep.isr[r])] + (
        [("in the ELR", c.elr[r]), ("the last known leader", c.last_known_elr[r])] if c.elr else [])


def state_atoms(o, s) -> List[Tuple[str, object]]:
    """The boolean facts the clause family is built from: each replica's (``replica_atoms``), the kind
    of each message in flight and its peer, and how two replicas' epochs, LEOs and HWs compare."""
    n = len(s.reps)
    out = []
    for r in range(n):
        out += [(f"r{r} {name}", term) for name, term in replica_atoms(o, s, r)]
        rep = s.reps[r]
        out += [(f"r{r} hw = leo", rep.hw == rep.leo), (f"r{r} truncating again", rep.truncating == TRUNCATING_AGAIN)]
        out += [(f"r{p} in r{r}'s ISR view", rep.isr[p]) for p in range(n) if p != r]
        m = s.msgs[r]
        out += [(f"r{r} sent {what}", m.kind == kind) for kind, what in
                ((FETCH, "a Fetch"), (FETCH_RESPONSE, "a FetchResponse"), (EPOCH_REQUEST, "an epoch request"),
                 (EPOCH_RESPONSE, "an epoch answer"))]
        if n > 2:
            out += [(f"r{r}'s message is with r{p}", m.leader == p) for p in range(n) if p != r]
            out += [(f"r{r}'s stale fetch is with r{p}", s.stale[r].leader == p) for p in range(n) if p != r]
            out += [(f"r{r} follows r{p}", rep.leader == p) for p in range(n) if p != r]
    for a in range(n):
        for b in range(a + 1, n):
            ra, rb = s.reps[a], s.reps[b]
            for what, x, y in (("epoch", ra.leader_epoch, rb.leader_epoch), ("leo", ra.leo, rb.leo), ("hw", ra.hw, rb.hw)):
                out += [(f"r{a} {what} = r{b} {what}", x == y), (f"r{a} {what} < r{b} {what}", x < y)]
    return out


# ---------------------------------------------------------------- scalars

VOID = -9          # what a guarded scalar reads where its slot is unused

OFFSET, EPOCH, VALUE, REPLICA = "offset", "epoch", "value", "replica"


def scalars(enc, s) -> List[Tuple[str, object, str]]:
    """(name, term, sort) for every scalar of the state, guarded (``VOID`` where unused)."""
    o = enc.o
    out: List[Tuple[str, object, str]] = []

    def add(name, term, sort, guard=True):
        if guard is not True:
            if o.name == "z3" and isinstance(term, int) and not isinstance(term, bool):
                term = o.num(term)
            term = o.If(guard, term, VOID)
        out.append((name, term, sort))

    n = len(s.reps)
    for r, rep in enumerate(s.reps):
        p = f"r{r}"
        add(f"{p} alive", rep.alive, VALUE)
        add(f"{p} role", rep.role, VALUE)
        add(f"{p} leader", rep.leader, REPLICA)
        add(f"{p} truncating", rep.truncating, VALUE)
        add(f"{p} epoch", rep.leader_epoch, EPOCH)
        add(f"{p} leading since", rep.leading_since, EPOCH)
        add(f"{p} leo", rep.leo, OFFSET)
        add(f"{p} hw", rep.hw, OFFSET)
        add(f"{p} clen", rep.clen, VALUE)
        if s.ctl.elr:
            add(f"{p} shut down cleanly", rep.clean_shutdown, VALUE)
        if rep.epoch_cache:
            add(f"{p} latest cached epoch", latest_cached_epoch(o, rep), EPOCH)
        for q in range(n):
            add(f"r{q} in {p}'s ISR view", rep.isr[q], VALUE)
            if q != r:
                add(f"{p}'s remote LEO of r{q}", rep.remote_leo[q], OFFSET, o.And(rep.alive, rep.role == LEADER))
                if rep.remote_broker_epoch:
                    add(f"{p}'s remote broker epoch of r{q}", rep.remote_broker_epoch[q], VALUE, o.And(rep.alive, rep.role == LEADER))
                add(f"{p}'s LEO at r{q}'s last Fetch", rep.remote_fetch_leo[q], OFFSET, o.And(rep.alive, rep.role == LEADER))
                add(f"r{q} caught up at {p}", rep.remote_caught_up[q], VALUE)
        for j, (rec, ep) in enumerate(rep.log):
            add(f"{p} record at {j}", rec, VALUE, j < rep.leo)
            add(f"{p} epoch at {j}", ep, EPOCH, j < rep.leo)
        for k, (ep, start) in enumerate(rep.epoch_cache):
            add(f"{p} cache[{k}] epoch", ep, EPOCH, k < rep.clen)
            add(f"{p} cache[{k}] start", start, OFFSET, k < rep.clen)
    c = s.ctl
    add("controller leader", c.leader, REPLICA)
    add("controller epoch", c.epoch, EPOCH)
    for q in range(n):
        add(f"r{q} in the ISR", c.isr[q], VALUE)
        add(f"r{q} live", c.live[q], VALUE)
        for what, bits in (("broker epoch", c.broker_epochs), ("in the ELR", c.elr), ("last known leader", c.last_known_elr)):
            if bits:
                add(f"r{q} {what}", bits[q], VALUE)
    for r, m in enumerate(s.msgs):
        p = f"r{r}'s"
        add(f"{p} message", m.kind, VALUE)
        add(f"{p} message peer", m.leader, REPLICA, m.kind != NO_MESSAGE)
        fetch, resp = m.kind == FETCH, m.kind == FETCH_RESPONSE
        add(f"{p} Fetch epoch", m.current_leader_epoch, EPOCH, fetch)
        add(f"{p} Fetch offset", m.fetch_offset, OFFSET, fetch)
        add(f"{p} Fetch last fetched epoch", m.last_fetched_epoch, EPOCH, fetch)
        add(f"{p} Fetch broker epoch", m.broker_epoch, VALUE, fetch)
        add(f"{p} FetchResponse hw", m.hw, OFFSET, resp)
        add(f"{p} FetchResponse leader leo", m.leader_leo, OFFSET, resp)
        add(f"{p} FetchResponse start", m.start, OFFSET, resp)
        add(f"{p} FetchResponse diverging epoch", m.diverging_epoch, EPOCH, resp)
        add(f"{p} FetchResponse diverging end", m.diverging_end_offset, OFFSET, resp)
        for j, (rec, ep) in enumerate(m.recs):
            inside = enc.o.And(resp, m.start <= j, j < m.leader_leo)
            add(f"{p} FetchResponse record at {j}", rec, VALUE, inside)
            add(f"{p} FetchResponse epoch at {j}", ep, EPOCH, inside)
        add(f"{p} epoch request epoch", m.current_leader_epoch, EPOCH, m.kind == EPOCH_REQUEST)
        add(f"{p} epoch request asks", m.requested_epoch, EPOCH, m.kind == EPOCH_REQUEST)
        add(f"{p} epoch answer epoch", m.epoch, EPOCH, m.kind == EPOCH_RESPONSE)
        add(f"{p} epoch answer end", m.end_offset, OFFSET, m.kind == EPOCH_RESPONSE)
    for r, m in enumerate(s.stale):
        p = f"r{r}'s stale"
        held = m.kind != NO_MESSAGE
        add(f"{p} Fetch", m.kind, VALUE)
        add(f"{p} Fetch peer", m.leader, REPLICA, held)
        add(f"{p} Fetch epoch", m.current_leader_epoch, EPOCH, held)
        add(f"{p} Fetch offset", m.fetch_offset, OFFSET, held)
        add(f"{p} Fetch last fetched epoch", m.last_fetched_epoch, EPOCH, held)
        add(f"{p} Fetch broker epoch", m.broker_epoch, VALUE, held)
    h = s.hist
    add("produced", h.produced, VALUE)
    add("exposed length", h.xlen, OFFSET)
    for rec, off in enumerate(h.acked):
        add(f"record {rec} acknowledged at", off, OFFSET)
    for j, rec in enumerate(h.exposed):
        add(f"exposed record at {j}", rec, VALUE, j < h.xlen)
    # the history variables, when the model keeps them
    for j, epoch in enumerate(h.exposed_epoch):
        add(f"exposed epoch at {j}", epoch, EPOCH, j < h.xlen)
    for e, leader in enumerate(h.epoch_leader):
        add(f"epoch {e}'s leader", leader, REPLICA)
    for r, (rec, epoch) in enumerate(h.stale_entry):
        add(f"r{r}'s stale Fetch entry record", rec, VALUE, s.stale[r].kind != NO_MESSAGE)
        add(f"r{r}'s stale Fetch entry epoch", epoch, EPOCH, s.stale[r].kind != NO_MESSAGE)
    add("crashes", h.crashes, VALUE)
    return out
