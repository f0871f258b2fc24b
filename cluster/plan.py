"""A trace compiled to real steps: what the harness does to the cluster, and what it waits for.

A step of the model is either *placed* by the harness (a client or an operator acts, a process or
a disk fails) or *awaited* (Kafka does it by itself: fetches, ISR changes, the controller's
reactions, a broker applying LeaderAndIsr). The real cluster runs every awaited step as soon as it
can, so the harness compares it with the model only at *checkpoints*: the model's state just
before each placed step, and the last state. Between two checkpoints a replica may run ahead of
the model by replication alone (a follower copies what its leader already has, a HW moves, the
producer hears of an acknowledgement early); a checkpoint allows that and nothing else.

Where the model keeps a follower from copying a record it never gets while that leader lives, the
harness pauses the follower (SIGSTOP) before the step that writes the record and resumes it after
the step that ends that leader's office. A pause long enough for the leader to drop the follower
from the ISR is what Kafka's lag check sees; it must stay shorter than the session timeout.

>>> from hwcheck.checker.trace import load_itf, replay
>>> doc = load_itf(open("counterexamples/kip966-kafka-19522-fenced-leader.itf.json").read())
>>> plan = compile_trace(replay(doc).trace.states, [s["#meta"]["action"] for s in doc["states"][1:]])
>>> [(s.index, s.label, s.pause_before, s.resume_after) for s in plan.steps if s.placed]
[(1, 'produce(r0)', (1,), ()), (3, 'crash(r0)', (), (1,)), (5, 'restart(r0)', (), ()), (6, 'controlled_shutdown(r0)', (), ())]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from hwcheck.spec.state import (EPOCH_REQUEST, EPOCH_RESPONSE, FETCH, FETCH_RESPONSE, LEADER, MESSAGE_NAMES, UNDEFINED,
                                State)

# placed steps: the model's action -> what the harness does (cluster/run.py)
PLACED = {
    "produce": "produce",                        # the producer sends the next record
    "crash": "kill",                             # SIGKILL
    "power_fail": "power_fail",                  # SIGKILL, the log cut back to the recovery point
    "lose_disk": "lose_disk",                    # SIGKILL, the log directory wiped (and formatted: KRaft)
    "restart": "restart",                        # the broker process started again
    "controlled_shutdown": "terminate",          # SIGTERM: KafkaServer.controlledShutdown
    "controlled_shutdown_leader": "terminate",   # the same; the controller picks the next leader itself
    "elect_preferred": "elect_preferred",        # Admin.electLeaders(PREFERRED)
    "session_expire": "expire_session",          # SIGSTOP until its session expired (ZooKeeper) or the
                                                 # controller fenced it (KRaft) and took its leadership, then SIGCONT
    "session_expire_leader": "expire_session",   # the same; the KRaft controller elects the next leader itself
}

# the model's steps that are Kafka's lag check firing (replica.lag.time.max.ms passed)
LAG_ACTIONS = frozenset({"shrink_isr", "lag_expires"})

# with the replication proxy (cluster/proxy.py) the fetch path is placed too: every Fetch and
# OffsetsForLeaderEpoch, request and response, waits at the leader's proxy until its step
PROXIED = {
    "send_fetch": "await_request",                      # the fetcher sends by itself; the proxy holds it
    "send_epoch_request": "await_request",
    "leader_handle_fetch": "deliver_request",           # the request released to the leader, its answer held
    "leader_handle_epoch_request": "deliver_request",
    "follower_handle_fetch": "deliver_response",        # the answer released to the follower
    "follower_handle_epoch_response": "deliver_response",
    "reject_request": "reject",                         # released; the leader's error answer released too
    "leader_handle_stale_fetch": "deliver_stale",       # a Fetch whose sender went away, released to the leader
    # an answer the old leader's fetcher thread waited for across a leader change (KAFKA-18991),
    # released to the follower: the thread is kept alive meanwhile by a keeper partition (keepers)
    "follower_handle_old_response": "deliver_response",
}

# steps no process-level action can place or wait for (a knob, or a message the proxy cannot keep)
UNSUPPORTED = {
    "flush": "needs the flushed point moved on command: not supported yet",
    "leader_handle_stale_fetch": "needs a Fetch delivered after its sender's connection closed: run it with --proxy",
    "reject_request": "needs one Fetch held: run it with --proxy",
}

_LABEL = re.compile(r"^([a-z_]+)\(([^)]*)\)$")


class PlanError(ValueError):
    """A trace this stage of the harness cannot run (one line, for the user)."""


@dataclass
class Step:
    index: int                    # the model's step number (1-based, as in the trace table)
    label: str                    # as in the trace: "crash(r1)"
    action: str                   # the model's action name
    args: Tuple[int, ...]         # replica ids
    do: str = ""                  # for a placed step, what the harness does (PLACED); "" awaited
    pause_before: Tuple[int, ...] = ()
    resume_after: Tuple[int, ...] = ()
    checkpoint: bool = False      # the state after this step is compared with the cluster
    hold: bool = False            # wait a restart's time before placing it (see _plan_holds)
    link: Tuple[int, int] = ()    # a message step with the proxy: (follower, leader)
    api: str = ""                 # ... and the kind of its message ("Fetch", "OffsetsForLeaderEpoch")
    # a Fetch from a follower with an empty epoch cache: Kafka first sends an OffsetsForLeaderEpoch
    # whose answer changes nothing there, and the model leaves it out (spec/actions.become_follower):
    # the harness lets that exchange through on its own
    empty_cache: bool = False
    # a request the model's leader handles as leader: the harness releases it once that broker
    # leads by its own state (it applies a LeaderAndIsr after the controller's decision, which is
    # what a checkpoint sees), or a Fetch sent before would meet a broker that does not lead yet
    to_leader: bool = False
    # after this step (a leader's answer now held at the proxy), a keeper partition led by the
    # leader starts to be followed by the follower: (follower, leader); see ``keepers``
    keeper: Tuple[int, ...] = ()
    # an answer the follower takes from a leader it follows again (follower_handle_old_response):
    # released once the follower holds the partition as a follower at the controller's epoch, or
    # the answer would meet a fetcher thread without the partition (ZooKeeper: the broker hears of
    # its new office only after it registered again)
    to_follower: bool = False
    # a Fetch the model's leader handles from a follower the controller holds live: released once
    # the leader holds it unfenced too (KRaft: a restarted broker fetches before it is unfenced)
    to_live: bool = False

    @property
    def placed(self) -> bool:
        return bool(self.do)


@dataclass
class Plan:
    steps: List[Step] = field(default_factory=list)
    proxied: bool = False         # the fetch path placed through the replication proxy

    @property
    def placed_actions(self) -> frozenset:
        return frozenset(PLACED) | (frozenset(PROXIED) if self.proxied else frozenset())

    @property
    def waits_for_lag(self) -> bool:
        """Whether a step of the trace is Kafka's lag check (a leader drops a follower from the ISR,
        or stops counting it caught up, after replica.lag.time.max.ms)."""
        return any(s.action in LAG_ACTIONS for s in self.steps)

    def checkpoints(self) -> List[int]:
        """The state indexes compared with the cluster (0 is the initial state)."""
        return [0] + [s.index for s in self.steps if s.checkpoint]


def parse_label(text: str) -> Tuple[str, Tuple[int, ...]]:
    """``"leader_handle_fetch(r0,r1)"`` -> ``("leader_handle_fetch", (0, 1))``.

    >>> parse_label("crash(r1)")
    ('crash', (1,))
    """
    m = _LABEL.match(text.strip())
    if not m:
        raise PlanError(f"cannot read the step {text!r}")
    args = tuple(int(a.strip()[1:]) for a in m.group(2).split(",") if a.strip())
    return m.group(1), args


def compile_trace(states: Sequence[State], labels: Sequence[str], proxied: bool = False) -> Plan:
    """The real steps of a trace: ``states[i]`` is the model's state after ``labels[i-1]``. With
    ``proxied`` the fetch path is placed through the replication proxy, and no follower needs a
    pause: nothing replicates unless the trace says so.

    >>> from hwcheck.checker.trace import load_itf, replay
    >>> done = replay(load_itf(open("counterexamples/hw-data-loss.itf.json").read()))
    >>> labels = [done.model.format_label(l) for l in done.trace.labels]
    >>> for s in compile_trace(done.trace.states, labels, proxied=True).steps[4:9]:
    ...     print(s.label, s.do or "awaited", s.link)
    send_fetch(r1) await_request (1, 0)
    controlled_shutdown(r1) terminate ()
    restart(r1) restart ()
    become_leader(r0) awaited ()
    leader_handle_stale_fetch(r0,r1) deliver_stale (1, 0)
    """
    steps = []
    placed = {**PLACED, **PROXIED} if proxied else PLACED
    for i, text in enumerate(labels, start=1):
        action, args = parse_label(text)
        if action in UNSUPPORTED and action not in placed:
            raise PlanError(f"step {i} {text} {UNSUPPORTED[action]}")
        step = Step(i, text, action, args, placed.get(action, ""))
        if proxied and action in PROXIED:
            step.link, step.api = _message_of(states, i, action, args)
            step.empty_cache = action == "send_fetch" and not states[i - 1].replicas[args[0]].epoch_cache
            step.to_leader = (action.startswith("leader_handle_")
                              and states[i - 1].replicas[step.link[1]].role == LEADER)
            step.to_follower = action == "follower_handle_old_response"
            step.to_live = (action == "leader_handle_fetch"
                            and bool(states[i - 1].controller.live >> step.link[0] & 1))
        steps.append(step)
    for k, step in enumerate(steps):
        nxt = steps[k + 1] if k + 1 < len(steps) else None
        step.checkpoint = nxt is None or nxt.placed
    plan = Plan(steps, proxied)
    if not proxied:
        _plan_pauses(steps, states, plan.checkpoints())
    _plan_holds(steps)
    return plan


def _message_of(states: Sequence[State], i: int, action: str, args: Tuple[int, ...]) -> Tuple[Tuple[int, int], str]:
    """(follower, leader) and the Kafka API of the message a fetch-path step sends or delivers: the
    message in flight after a send, before a delivery."""
    f = args[-1]
    if action in ("leader_handle_stale_fetch", "follower_handle_old_response"):
        return (f, states[i - 1].stale[f].leader), "Fetch"
    msg = states[i].inflight[f] if action.startswith("send_") else states[i - 1].inflight[f]
    kind = msg.kind
    api = "Fetch" if kind in (FETCH, FETCH_RESPONSE) else "OffsetsForLeaderEpoch"
    return (f, msg.leader), api


def keepers(states: Sequence[State], labels: Sequence[str]) -> dict:
    """Where a trace needs a follower's fetcher thread to outlive its last partition: step index ->
    (follower, leader). Before KAFKA-18991's fix an answer of an old leader epoch waits in the
    fetcher thread towards that leader (the model's ``stale`` FetchResponse) while the follower
    leads or follows another broker, and is applied if the follower comes back to that leader at
    the same fetch offset (``AbstractFetcherThread.processFetchRequest`` @3.9.0). Kafka keeps a
    thread only while it has a partition to fetch (``AbstractFetcherManager
    .shutdownIdleFetcherThreads`` after every LeaderAndIsr, ``ReplicaManager.becomeLeaderOrFollower``
    @3.9.0), so the harness gives it one: right after the leader answered (the answer held at the
    proxy, the thread waiting for it), the follower is added, by a partition reassignment, to a
    partition of one record led by that leader alone; the follower cannot catch up on it while the
    proxy holds its fetches, so it stays out of that partition's ISR, and a ZooKeeper leader's
    session expiry leaves the partition leaderless on the follower's thread rather than moving it
    (``ReplicaManager.makeFollowers`` @3.9.0 keeps a partition whose new leader is not alive).

    >>> from hwcheck.checker.trace import load_itf, replay
    >>> done = replay(load_itf(open("counterexamples/kafka15583-zk-kafka-18991-old-epoch-response.itf.json").read()))
    >>> keepers(done.trace.states, [done.model.format_label(l) for l in done.trace.labels])
    {10: (0, 1), 15: (1, 0)}
    """
    out = {}
    for i in range(1, len(states)):
        for f, (before, after) in enumerate(zip(states[i - 1].stale, states[i].stale)):
            if not after or after == before or after.kind != FETCH_RESPONSE:
                continue
            link = (f, after.leader)
            answered = [j for j in range(1, i + 1)
                        if parse_label(labels[j - 1]) == ("leader_handle_fetch", (after.leader, f))]
            if answered:
                out[answered[-1]] = link
    return out


def _checkpoint_after(steps: List[Step], k: int) -> int:
    """The index of the first checkpoint state at or after step ``k`` (the step's list position)."""
    for step in steps[k:]:
        if step.checkpoint:
            return step.index
    return steps[-1].index


def lags_for_good(states: Sequence[State], checkpoints: Sequence[int], at: int, f: int) -> bool:
    """Follower ``f`` must not copy what its leader has at checkpoint ``at``: the leader (in
    office, alive) holds a record that ``f`` lacks at every checkpoint from ``at`` on while that
    leader stays in office. In a real cluster it would have copied it at once."""
    s = states[at]
    leader = s.controller.leader
    if leader == UNDEFINED or leader == f:
        return False
    lead, rep = s.replicas[leader], s.replicas[f]
    if not (lead.alive and lead.role == LEADER and rep.alive):
        return False
    missing = set(lead.log) - set(rep.log)
    for c in checkpoints:
        if c < at:
            continue
        t = states[c]
        if t.controller.leader != leader or not t.replicas[leader].alive:
            break
        missing -= set(t.replicas[f].log)
    return bool(missing)


def _plan_pauses(steps: List[Step], states: Sequence[State], checkpoints: List[int]) -> None:
    n = len(states[0].replicas)
    paused = set()
    for k, step in enumerate(steps):
        if not step.placed:
            continue
        at = _checkpoint_after(steps, k)
        need = {f for f in range(n) if lags_for_good(states, checkpoints, at, f)}
        step.pause_before = tuple(sorted(need - paused))
        step.resume_after = tuple(sorted(paused - need))
        paused = need


DEATHS = {"crash", "power_fail", "lose_disk", "controlled_shutdown"}
NOTICED = {"controller_handle_failure", "controller_handle_failure_leader"}   # the controller handles a death


def _plan_holds(steps: List[Step]) -> None:
    """A controller notices a dead broker a session timeout after its death, so deaths are
    noticed in the order they happen. When the model lets an earlier victim ``x`` be noticed,
    restart and register before a later victim ``y`` is noticed, the harness must space the two
    deaths by a broker's restart time: it holds ``y``'s death."""
    for k, step in enumerate(steps):
        if step.action not in DEATHS:
            continue
        y = step.args[0]
        later = steps[k + 1:]
        noticed_y = next((s.index for s in later if s.action in NOTICED and s.args[0] == y), None)
        for prior in steps[:k]:
            if prior.action not in DEATHS or prior.args[0] == y:
                continue
            x = prior.args[0]
            if any((s.action in NOTICED or s.action == "restart") and s.args[0] == x
                   for s in steps[steps.index(prior) + 1:k]):
                continue                       # x was noticed or back before y died
            if noticed_y is not None and any(s.action == "restart" and s.args[0] == x and s.index < noticed_y
                                             for s in later):
                step.hold = True


def awaited_closure(model, s: State, limit: int = 20000, placed=frozenset(PLACED)) -> List[Tuple[State, Tuple[str, ...]]]:
    """``s`` and every state the model reaches from it by awaited steps alone (what the cluster
    may run by itself before the harness's next placed step), breadth first, each with the
    labels that lead there; at most ``limit`` states. The producer is a placed step, so records
    produced and the history of acknowledgements only move by HW advances here (and, with the
    proxy, ``placed`` holds the fetch path too: then only the controller and ISR changes move)."""
    seen = {s: ()}
    frontier = [s]
    while frontier and len(seen) < limit:
        nxt = []
        for state in frontier:
            for label, t in model.successors(state):
                if label[0] in placed or label[0] in UNSUPPORTED or t in seen:
                    continue
                seen[t] = seen[state] + (model.format_label(label),)
                nxt.append(t)
        frontier = nxt
    return list(seen.items())


# the step that delivers each kind of message (spec/state.py): responses to the follower, requests
# to the leader
_DELIVERY = {FETCH: "leader_handle_fetch", EPOCH_REQUEST: "leader_handle_epoch_request",
             FETCH_RESPONSE: "follower_handle_fetch", EPOCH_RESPONSE: "follower_handle_epoch_response"}


def needs_proxy(model, states: Sequence[State], steps: List[Step], invariant: Optional[str]) -> Optional[str]:
    """Why a trace needs fetch-level control, or None. A fault the harness places lands between two
    messages: the model has a Fetch or OffsetsForLeaderEpoch message in flight to or from the
    victim that it never delivers. A real broker answers and applies such a message within
    milliseconds, before the harness can place the fault, unless its receiver is paused across the
    step (the pauses above). Where delivering it first changes a log, a HW or an acknowledgement
    *and* the rest of the trace then no longer runs to its violation (a step refused, or the
    invariant kept), the message must be held: stage 2's proxy.

    >>> from hwcheck.checker.trace import load_itf, replay
    >>> done = replay(load_itf(open("counterexamples/kafka13141-disk-loss.itf.json").read()))
    >>> labels = [done.model.format_label(l) for l in done.trace.labels]
    >>> needs_proxy(done.model, done.trace.states, compile_trace(done.trace.states, labels).steps, done.trace.invariant) is None
    True

    (tests/test_reproduce.py builds one that does: a follower dies with the HW-raising response in flight.)
    """
    paused = set()
    labels = [model.parse_label(s.label) for s in steps]
    for k, step in enumerate(steps):
        paused |= set(step.pause_before)
        if step.action in DEATHS:
            before = states[step.index - 1]
            victim = step.args[0]
            for f, msg in enumerate(before.inflight):
                if not msg or victim not in (f, msg.leader):
                    continue
                kind, leader = msg.kind, msg.leader
                to_follower = kind in (FETCH_RESPONSE, EPOCH_RESPONSE)
                if to_follower and f in paused:
                    continue                    # a paused receiver reads it only after the fault
                after = model.step(before, (_DELIVERY[kind], *((f,) if to_follower else (leader, f))))
                changed = _visible_change(before, after)
                if not changed:
                    continue
                broken = _rest_breaks(model, after, labels[k:], steps[k:], invariant)
                if broken:
                    src, dst = (leader, f) if to_follower else (f, leader)
                    return (f"step {step.index} {step.label}: the {MESSAGE_NAMES[kind]} r{src}->r{dst} in flight "
                            f"would reach r{dst} first ({changed}), and then {broken}; the trace needs it held: "
                            f"needs one Fetch held: run it with --proxy")
        paused -= set(step.resume_after)
    return None


def _rest_breaks(model, s: State, labels, steps, invariant) -> str:
    """Run the rest of the trace from ``s``: "" if it still ends in the invariant's violation."""
    for label, step in zip(labels, steps):
        nxt = model.step(s, label)
        if nxt is None:
            return f"step {step.index} is refused"
        s = nxt
    if invariant and invariant not in model.violated(s):
        return f"{invariant} holds at the end"
    return ""


def _visible_change(s: State, t: Optional[State]) -> str:
    """What a delivery changes that the harness would see: a log, a HW, an acknowledgement."""
    if t is None:
        return ""
    for r, (a, b) in enumerate(zip(s.replicas, t.replicas)):
        if a.log != b.log:
            return f"r{r}'s log {len(a.log)} -> {len(b.log)} records"
        if a.hw != b.hw:
            return f"r{r}'s HW {a.hw} -> {b.hw}"
    if s.history.acked != t.history.acked:
        return "an acknowledgement"
    return ""
