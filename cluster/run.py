"""Run a compiled trace on a real cluster of one release and judge what happened.

The data flow: ITF trace -> the model's states under the release's mode (the trace's own, or a
differential replay that may refuse a step) -> compiled real steps (cluster/plan.py) -> the
cluster -> a View at every checkpoint (cluster/observe.py) -> a side-by-side table -> a verdict
from what the clients saw (lost / kept; a fenced leader elected or not) and whether the model
predicted it for that release.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, List, NamedTuple, Optional, Tuple

from hwcheck.checker.trace import differential, replay
from hwcheck.spec.releases import ELR_NONE, ZOOKEEPER, Release

from . import disk, wire
from .brokers import TOPIC, Cluster, ClusterError, Timing
from .observe import View, compare, model_acked, observe
from .plan import Plan, PlanError, compile_trace, keepers, needs_proxy
from .proxy import OFFSETS_FOR_LEADER_EPOCH, REQUEST, RESPONSE, FETCH, ProxyError

# the invariants whose breach a client of the real cluster can see
JUDGED = ("NoCommittedDataLoss", "LeaderUnfenced", "NoLogDivergence", "ConsumerConsistency")
FETCH_SETTLE = 0.6         # seconds: past replica.fetch.wait.max.ms (100 ms) with a margin
POLL = 0.1                 # seconds between two looks at the cluster while waiting for a checkpoint
AHEAD_STABLE = 4.0         # seconds a state ahead of the model must hold (past replica.lag.time.max.ms x 1.5)
RESTART_BUDGET = 12.0      # seconds a restarted broker may take to register (2-core machine, measured ~5-9 s)
# with the proxy a follower fetches only when the trace says so: the leader's lag check must not
# drop it meanwhile (0.10-2.x drop a follower that has not fetched for replica.lag.time.max.ms, caught
# up or not; later ones one whose last caught-up fetch is that old, and a new leader starts that
# clock at its election), so the lag is longer than any stretch of a trace (a broker's restart
# included); a shrink_isr of the trace then takes that long to come. A trace without a lag step
# (Plan.waits_for_lag) sets it past any run: a slow machine then cannot drop a follower the model
# keeps (a CI run of the 29-step KAFKA-18991 trace on 3.9.0 took 167 s, and r0 dropped r1 between
# the election at step 24 and the old answer at step 26)
PROXIED_TIMING = Timing(lag=20000)
PROXIED_NO_LAG_TIMING = Timing(lag=3_600_000)
MESSAGE_WAIT = 30.0        # seconds the proxy waits for a message Kafka sends by itself
NEXT_REQUEST = 2.0         # seconds to wait for the follower's next request after it got an answer
LEADING_WAIT = 15.0        # seconds to wait for a broker to lead by its own state before a request reaches it
FOLLOWING_WAIT = 30.0      # seconds to wait for a broker to follow by its own state before an old answer reaches it
EXPIRY_WAIT = 60.0         # seconds a paused ZooKeeper broker may take to lose its session and its leadership
APIS = {"Fetch": FETCH, "OffsetsForLeaderEpoch": OFFSETS_FOR_LEADER_EPOCH}


def artifacts(release: Release) -> List[str]:
    """The broker's coordinate plus the logging backend its POM leaves out (so the brokers' logs
    are kept as evidence): log4j 1 before 3.2, reload4j 3.2-3.9, log4j2 from 4.0; before 2.0
    JAXB's API, which Java 17 no longer ships; for 2.0-2.3 a ZooKeeper client that runs on Java 17."""
    key = release.key()
    if key >= (4, 0):
        backend = "org.apache.logging.log4j:log4j-slf4j-impl:2.24.3"
    elif key >= (3, 2):
        backend = "org.slf4j:slf4j-reload4j:1.7.36"
    else:
        backend = "org.slf4j:slf4j-log4j12:1.7.30"
    extra = []
    if key < (2, 0):
        # before 2.0 the broker reads javax.xml.bind.DatatypeConverter, gone from the JDK since 11
        extra = ["javax.xml.bind:jaxb-api:2.3.1"]
    elif key < (2, 4):
        # 2.0-2.3 depend on ZooKeeper 3.4.13/3.4.14, whose client cannot connect on Java 14+
        # (UnresolvedAddressException: its unresolved address meets the JDK's changed
        # InetSocketAddress, ZOOKEEPER-3779); the 3.5 client Kafka moved to in 2.4 speaks the same
        # API and protocol, and a direct dependency wins over the transitive one
        extra = ["org.apache.zookeeper:zookeeper:3.5.9"]
    return [release.coordinate, backend, *extra]


@dataclass
class Prediction:
    """What the model says of this trace under the release's mode."""
    mode: str
    states: list                      # the model's states for the steps that run
    labels: List[str]
    violated: Optional[str]           # the trace's invariant, if it breaks under this mode
    model: object = None              # the Model of this mode and the trace's settings
    refused_at: Optional[int] = None  # the first step this mode refuses
    refused_why: str = ""

    @property
    def outcome(self) -> str:
        return "violated" if self.violated else "kept"


def predict(doc: dict, mode: str) -> Prediction:
    done = replay(doc)
    invariant = doc["#meta"]["hwcheck"].get("invariant")
    labels = [s["#meta"]["action"] for s in doc["states"][1:]]
    if mode == done.model.cfg.mode:
        broke = invariant if invariant in done.violated else None
        return Prediction(mode, list(done.trace.states), labels, broke, done.model)
    diff = differential(doc, mode)
    ran = len(diff.trace.states) - 1
    broke = invariant if any(name == invariant for _, name in diff.violated) else None
    return Prediction(mode, list(diff.trace.states), labels[:ran], broke, diff.model, diff.refused_at,
                      diff.refused_why)


@dataclass
class Row:
    index: int
    label: str
    model: object           # the model's State (None past a refused step)
    view: Optional[View]
    differences: List[str]
    ahead: Tuple[str, ...] = ()   # awaited steps the cluster took before the model did


@dataclass
class Outcome:
    release: Release
    prediction: Prediction
    rows: List[Row] = field(default_factory=list)
    verdict: str = ""            # one line: "lost: record 0, acknowledged at offset 0, is gone on Kafka 3.9.1"
    real: str = ""               # "violated" (lost / fenced leader) or "kept"
    first_difference: Optional[int] = None
    seconds: float = 0.0
    evidence: Optional[Path] = None
    proxied: bool = False        # the fetch path went through the replication proxy
    # KRaft from 3.7, a disk the trace replaced: whether the broker's AssignReplicasToDirs named
    # its new directory before the controller unfenced it (``disk_assigned_first``); None otherwise
    assigned_first: Optional[bool] = None
    # ConsumerConsistency: what a consumer read from the leader after each checkpoint (``Reading``)
    readings: List["Reading"] = field(default_factory=list)

    @property
    def agrees(self) -> bool:
        return self.real == self.prediction.outcome and self.first_difference is None


class Reading(NamedTuple):
    """What a consumer read from broker ``broker`` after step ``step``: (offset, record) below its HW."""
    step: int
    broker: int
    records: Tuple[Tuple[int, int], ...]


def _read(client, view: Optional[View], step: int, readings: List[Reading], log) -> None:
    """A consumer reads the partition from the leader the cluster names (ConsumerConsistency is
    about what consumers saw): nothing when there is none, or it refuses (not leading yet)."""
    if view is None or view.leader is None or view.leader < 0 or not view.replicas[view.leader].alive:
        return
    try:
        got = tuple(client.read(view.leader))
    except wire.WireError as e:
        log(f"  a consumer could not read from r{view.leader} after step {step}: {e}")
        return
    if not readings or readings[-1][1:] != (view.leader, got):
        log(f"  a consumer reads from r{view.leader}: " + (", ".join(f"{rec}@{off}" for off, rec in got) or "nothing"))
    readings.append(Reading(step, view.leader, got))


class Interrupted(Exception):
    def __init__(self, outcome: Outcome, step: int):
        super().__init__(f"interrupted at step {step}")
        self.outcome, self.step = outcome, step


def _elr_setting(release: Release, mode_elr: bool, override: Optional[bool]) -> Optional[bool]:
    """The ELR feature to format with: the override, else the mode's (only where the release can)."""
    if release.elr == ELR_NONE:
        return None
    return override if override is not None else mode_elr


def cluster_mode(release: Release, elr: Optional[bool]) -> Tuple[str, Optional[bool]]:
    """(the mode that predicts, the ELR feature to format with) for a cluster of ``release`` with
    ``elr`` asked (None: the release's mode's): formatted without ELR, a 4.x cluster follows its
    mode without ELR (spec.modes.without_elr)."""
    from hwcheck.spec.config import resolve_mode
    from hwcheck.spec.modes import without_elr
    mode = resolve_mode(release.mode).definition      # a derived mode too: kafka15583-zk for 3.9.0 on ZooKeeper
    use_elr = _elr_setting(release, mode.elr, elr)
    return (without_elr(mode).name if use_elr is False and mode.elr else mode.name), use_elr


def plan_for(prediction: Prediction, invariant: Optional[str], proxy: Optional[bool]) -> Plan:
    """The compiled trace: through the replication proxy if ``proxy``, or (None) if the trace needs
    a message held (``needs_proxy``); a trace that needs one held refuses ``proxy=False``."""
    if not proxy:
        try:
            plan = compile_trace(prediction.states, prediction.labels)
            why = needs_proxy(prediction.model, prediction.states, plan.steps,
                              invariant if prediction.violated else None)
        except PlanError as e:
            why = str(e)
        if not why:
            return plan
        if proxy is False:
            raise PlanError(why)
    return compile_trace(prediction.states, prediction.labels, proxied=True)


def default_timing(plan: Plan) -> Timing:
    """The timing knobs for ``plan``: with the proxy a lag long enough for every stretch of the
    trace, and past any run where no step of the trace is the lag check itself."""
    if not plan.proxied:
        return Timing()
    return PROXIED_TIMING if plan.waits_for_lag else PROXIED_NO_LAG_TIMING


def run(doc: dict, release: Release, lib: Path, *, elr: Optional[bool] = None, keep: Optional[Path] = None,
        timing: Optional[Timing] = None, log: Callable[[str], None] = lambda m: None,
        wait: float = 45.0, proxy: Optional[bool] = None) -> Outcome:
    cfg = doc["#meta"]["hwcheck"]["config"]
    invariant = doc["#meta"]["hwcheck"].get("invariant")
    if invariant is not None and invariant not in JUDGED:
        raise PlanError(f"judging {invariant} on a real cluster is not supported yet (reproduce judges "
                        f"{', '.join(JUDGED)})")
    mode, use_elr = cluster_mode(release, elr)
    prediction = predict(doc, mode)
    plan = plan_for(prediction, invariant, proxy)
    _plan_keepers(doc, plan, release)
    outcome = Outcome(release, prediction, proxied=plan.proxied)
    started = time.monotonic()
    cluster = Cluster(release, lib, cfg["replicas"], min_isr=cfg["min_isr"],
                      unclean_election=cfg["unclean_election"], elr=use_elr,
                      timing=timing or default_timing(plan), proxied=plan.proxied,
                      root=keep, keep=keep is not None, log=log)
    step_no, stopped = 0, False
    try:
        with cluster:
            from .client import Client, keeper_topic
            if plan.proxied:
                cluster.proxies.gate()          # from the first Fetch on, nothing replicates unless a step says so
                # a Fetch the model hands to its leader after its sender went away waits at the proxy
                cluster.proxies.keep_stale = any(s.do == "deliver_stale" for s in plan.steps)
            with Client(cluster, acks=cfg["acks"], wire=plan.proxied) as client:
                client.create_topic(cfg["min_isr"], cfg["unclean_election"])
                for step in plan.steps:
                    if step.keeper:
                        log(f"keeper partition {client.create_keeper(*step.keeper)}: led by r{step.keeper[1]} alone, "
                            f"r{step.keeper[0]} joins it after step {step.index}")
                states = prediction.states
                ckpts = plan.checkpoints()
                outcome.rows.append(_checkpoint(cluster, client, states, 0, _next(ckpts, 0), "init", use_elr, wait, log,
                                                model=prediction.model, plan=plan))
                for step in plan.steps:
                    step_no = step.index
                    if step.placed:
                        if step.hold:
                            log(f"step {step.index}: holding {RESTART_BUDGET:.0f} s so the controller notices "
                                f"the earlier failure first, with time for a restart in between")
                            client.sleep(RESTART_BUDGET)
                        if step.pause_before:
                            _before_pause(cluster, client, step, states[_next(ckpts, step.index - 1)], wait, log)
                        for f in step.pause_before:
                            cluster.pause(f)
                        if step.pause_before:
                            # a Fetch the follower sent just before its pause waits in the leader's
                            # purgatory up to replica.fetch.wait.max.ms (100 ms): let it come back
                            # empty, or the follower would read the new record from its socket on resume
                            client.sleep(FETCH_SETTLE)
                        if plan.proxied and step.do not in MESSAGE_STEPS:
                            _drop_abandoned(cluster, states, plan, step, log)
                        try:
                            _place(cluster, client, step, log)
                        except ProxyError as e:
                            # Kafka did not send what the model sends: a difference at this step
                            log(f"step {step.index} {step.label}: {e}")
                            outcome.rows.append(Row(step.index, step.label, states[step.index],
                                                    observe(cluster, client.acked), [str(e)]))
                            if outcome.first_difference is None:
                                outcome.first_difference = step.index
                            stopped = True
                            break
                        for f in step.resume_after:
                            cluster.resume(f)
                        if step.keeper:
                            client.add_follower(*step.keeper)
                            log(f"  r{step.keeper[0]} follows {keeper_topic(*step.keeper)}: its fetcher thread "
                                f"towards r{step.keeper[1]} outlives the partition's next leader change")
                    if step.checkpoint:
                        row = _checkpoint(cluster, client, states, step.index, _next(ckpts, step.index),
                                          step.label, use_elr, wait, log, last=step is plan.steps[-1],
                                          model=prediction.model, plan=plan)
                        if invariant == "ConsumerConsistency":
                            _read(client, row.view, step.index, outcome.readings, log)
                    else:
                        row = Row(step.index, step.label, states[step.index], None, [])
                    outcome.rows.append(row)
                    if row.differences and outcome.first_difference is None:
                        outcome.first_difference = step.index
                if prediction.refused_at is not None and not stopped:
                    step_no = prediction.refused_at
                    label = doc["states"][prediction.refused_at]["#meta"]["action"]
                    log(f"step {step_no} {label}: refused by mode {prediction.mode}; watching that Kafka "
                        f"{release.version} does not take it (up to {wait:.0f} s)")
                    before = observe(cluster, client.acked)
                    differences = []
                    if plan.proxied and _offer_refused(cluster, doc, prediction.refused_at, log):
                        # the follower's next request says its fetcher thread has handled the answer
                        try:
                            cluster.proxies.wait_held(REQUEST, *_refused_link(doc, prediction.refused_at), None, wait)
                            log("  its next request came: the answer is handled")
                            client.sleep(FETCH_SETTLE)
                        except ProxyError:
                            pass                    # none in ``wait`` seconds: the thread gave it up, or hangs
                        view = observe(cluster, client.acked)
                        differences = [f"r{r} took the step: its log {_log_text(a)} -> {_log_text(b)}"
                                       for r, (a, b) in enumerate(zip(before.replicas, view.replicas)) if a.log != b.log]
                    else:
                        client.sleep(wait)
                        view = observe(cluster, client.acked)
                    outcome.rows.append(Row(step_no, f"{label} (refused)", None, view, differences))
                    if differences and outcome.first_difference is None:
                        outcome.first_difference = step_no
                final = outcome.rows[-1].view or observe(cluster, client.acked)
                if plan.proxied:
                    # the judged HWs come from each broker's replication-offset-checkpoint: let it be
                    # written after the last step (nothing else moves: the proxy holds the fetches)
                    client.sleep(3 * cluster.timing.hw_checkpoint / 1000)
                    final = observe(cluster, client.acked)
                for r in range(cluster.replicas):
                    cluster.resume(r)
                if invariant == "ConsumerConsistency":
                    _read(client, final, outcome.rows[-1].index, outcome.readings, log)
                if cluster.proxies is not None:
                    cluster.proxies.gate(False)
                outcome.real, outcome.verdict = judge(invariant, final, cluster, release, outcome.readings)
                outcome.assigned_first = disk_assigned_first(cluster, plan)
    except KeyboardInterrupt:
        outcome.seconds = time.monotonic() - started
        raise Interrupted(outcome, step_no) from None
    outcome.seconds = time.monotonic() - started
    outcome.evidence = keep
    return outcome


def _plan_keepers(doc: dict, plan: Plan, release: Release) -> None:
    """Mark the steps after which a keeper partition keeps a follower's fetcher thread alive
    (cluster/plan.py ``keepers``), from the trace's own states: the same schedule on every release,
    the one whose mode refuses the old answer included."""
    labels = [s["#meta"]["action"] for s in doc["states"][1:]]
    wanted = keepers(replay(doc).trace.states, labels)
    if not wanted:
        return
    if not plan.proxied:
        raise PlanError("the trace delivers an answer of an old leader epoch: run it with --proxy")
    if release.metadata != ZOOKEEPER:
        raise PlanError(f"the trace delivers an answer of an old leader epoch, which needs a ZooKeeper leader's "
                        f"session expiry to keep its fetcher thread: run Kafka {release.version} on ZooKeeper "
                        f"(--zookeeper, 3.9.x and older)")
    for step in plan.steps:
        step.keeper = wanted.get(step.index, ())


def _offer_refused(cluster: Cluster, doc: dict, at: int, log) -> bool:
    """With the proxy, a refused fetch-path step is still offered to the cluster: a refused
    ``follower_handle_old_response`` releases the held answer of the old leader epoch, which the
    fixed release must discard (``AbstractFetcherThread.processFetchRequest`` @3.9.1 compares its
    request's current leader epoch). False where the step is not such a message."""
    from .plan import parse_label
    action, _ = parse_label(doc["states"][at]["#meta"]["action"])
    if action != "follower_handle_old_response":
        return False
    f, l = _refused_link(doc, at)
    _await_following(cluster, f, l, log)          # as the step would be placed (plan.Step.to_follower)
    response = cluster.proxies.wait_held(RESPONSE, f, l, FETCH, MESSAGE_WAIT)
    cluster.proxies.release(response)
    log(f"  r{l}'s answer of an old leader epoch released to r{f} (#{response.correlation_id})")
    return True


def _refused_link(doc: dict, at: int) -> Tuple[int, int]:
    """(follower, leader) of the old answer a refused ``follower_handle_old_response`` delivers:
    the trace's own stale FetchResponse before that step."""
    from .plan import parse_label
    f = parse_label(doc["states"][at]["#meta"]["action"])[1][-1]
    return f, replay(doc).trace.states[at - 1].stale[f].leader


def _log_text(log) -> str:
    return "[" + " ".join(f"{rec}@{epoch}" for rec, epoch in log) + "]" if log else "[·]"


def _before_pause(cluster, client, step, target, wait, log) -> None:
    """Before a follower is paused, let it copy what it holds at the next checkpoint, and its
    leader acknowledge what the producer has heard of by then: the model may have those fetches
    still to come after the placed step (they are awaited), but a paused follower cannot take them."""
    deadline = time.monotonic() + wait
    produced = client.produced
    want_acked = {rec: off for rec, off in model_acked(target).items() if rec < produced}
    while True:
        view = observe(cluster, client.acked)
        copied = all(tuple(rec for rec, _ in view.replicas[f].log)[:len(target.replicas[f].log)]
                     == tuple(rec for rec, _ in target.replicas[f].log) for f in step.pause_before)
        if copied and want_acked.items() <= view.acked.items():
            return
        if time.monotonic() > deadline:
            log(f"step {step.index}: the followers to pause did not reach the model's next checkpoint in {wait:.0f} s")
            return
        client.sleep(POLL)


MESSAGE_STEPS = ("await_request", "deliver_request", "deliver_response", "reject", "deliver_stale")
# from 1.1 a fetcher thread that stops closes its connection to the leader (ReplicaFetcherThread
# .initiateShutdown @1.1.1: leaderEndpoint.close()); before, nothing overrides it (@0.11.0.3), and
# the thread waits for its outstanding Fetch's answer up to request.timeout.ms
CLOSES_ON_STOP = (1, 1)


def _drop_abandoned(cluster: Cluster, states, plan: Plan, step, log) -> None:
    """Before 1.1 a fetcher thread cannot stop while the proxy holds its Fetch or the answer: a
    controlled shutdown, or a follower taking leadership (``shutdownIdleFetcherThreads``), would
    wait for it up to request.timeout.ms (300 s under the proxy). Where the model's step (and the
    steps Kafka takes after it by itself) abandons a follower's message, the proxy closes that
    follower's connection, as 1.1+ brokers do themselves when the thread stops."""
    if cluster.release.key() >= CLOSES_ON_STOP:
        return
    later = [s.index for s in plan.steps if s.index > step.index and s.placed]
    before, after = states[step.index - 1], states[(later[0] - 1) if later else len(states) - 1]
    proxies = cluster.proxies
    for frame in proxies.holding():
        f = frame.follower
        if f is None or frame.orphan or after.inflight[f]:
            continue
        # the model's own Fetch becomes its stale request here (spec/actions._abandon): the
        # leader may still handle it (a later leader_handle_stale_fetch); the proxy keeps it if it may
        msg = before.inflight[f]
        if msg and after.stale[f] == msg and proxies.orphan(frame):
            log(f"  r{f}'s side of its connection to r{frame.leader} closed; its held {frame!r} stays, a stale "
                f"request the leader handles later: before 1.1 the fetcher thread would wait for it")
        elif proxies.drop(f, frame.leader):
            log(f"  r{f}'s connection to r{frame.leader} closed with its held {frame!r}: the model abandons it "
                f"here, and before 1.1 the fetcher thread would wait for it")


@contextmanager
def _closing_held(cluster: Cluster, r: int, log):
    """Before 1.1, while broker r shuts down, the proxy closes r's own connections with what they
    hold. Its fetcher thread sends again by itself after ``_drop_abandoned`` closed the last
    connection, and the StopReplica of r's controlled shutdown stops that thread
    (``AbstractFetcherManager.shutdownIdleFetcherThreads`` @0.11.0.3, ``awaitShutdown``), which
    waits for the held answer: a 30-step walk on 0.11.0.3 hung so at step 2 under load (jstack:
    the fetcher in ``fetchEpochsFromLeader``, a request handler in ``shutdownIdleFetcherThreads``).
    The model abandons every message of a broker that stops but a stale request, which stays."""
    if cluster.proxies is None or cluster.release.key() >= CLOSES_ON_STOP:
        yield
        return
    done = threading.Event()

    def close_held() -> None:
        while not done.wait(POLL):
            for frame in cluster.proxies.holding():
                if frame.follower == r and not frame.orphan and cluster.proxies.drop(r, frame.leader):
                    log(f"  r{r}'s connection to r{frame.leader} closed with its held {frame!r}: r{r} is shutting down")

    watcher = threading.Thread(target=close_held, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def _next(ckpts: List[int], at: int) -> int:
    later = [c for c in ckpts if c > at]
    return later[0] if later else at


def _place(cluster: Cluster, client, step, log) -> None:
    r = step.args[0] if step.args else None
    log(f"step {step.index} {step.label}: {step.do}" + (f" r{r}" if r is not None else ""))
    if step.do == "produce":
        client.produce(r)
    elif step.do == "kill":
        cluster.kill(r)
    elif step.do == "terminate":
        with _closing_held(cluster, r, log):
            cluster.terminate(r)
    elif step.do == "power_fail":
        point = cluster.power_fail(r, disk.cut)
        log(f"  r{r}'s log cut back to its recovery point, offset {point}")
    elif step.do == "lose_disk":
        cluster.lose_disk(r)
    elif step.do == "restart":
        _restart(cluster, r)
    elif step.do == "elect_preferred":
        client.elect_preferred()
    elif step.do == "expire_session":
        _expire_session(cluster, r, log)
    elif step.do in MESSAGE_STEPS:
        _message_step(cluster, step, log)
    else:
        raise PlanError(f"step {step.index} {step.label}: nothing places {step.do!r}")


def _message_step(cluster: Cluster, step, log) -> None:
    """A fetch-path step through the proxy. The follower's fetcher sends by itself (the proxy holds
    the request: ``send_*``); the leader handles a request when the proxy releases it, and has
    answered when its response reaches the proxy (``leader_handle_*``); the follower has applied
    an answer once it sends its next request, or after NEXT_REQUEST seconds
    (``follower_handle_*``)."""
    (f, l), api, proxies = step.link, APIS[step.api], cluster.proxies
    if step.to_leader:
        _await_leading(cluster, l, log)
    if step.to_live and cluster.kraft:
        _await_unfenced(cluster, f, [l], log)
    if step.to_follower:
        _await_following(cluster, f, l, log)
    if step.do == "deliver_stale":
        request = proxies.wait_held(REQUEST, f, l, api, MESSAGE_WAIT, stale=True)
        proxies.release(request)
        if not request.link.closed.wait(MESSAGE_WAIT):
            raise ProxyError(f"r{l} did not answer r{f}'s stale {step.api} #{request.correlation_id} "
                             f"in {MESSAGE_WAIT:.0f} s")
        log(f"  r{l} handled r{f}'s stale {step.api} #{request.correlation_id}; its answer had nobody to go to")
        return
    if step.do == "await_request":
        while True:
            request = proxies.wait_held(REQUEST, f, l, None, MESSAGE_WAIT)
            if request.api_key == api or not (step.empty_cache and request.api_key == OFFSETS_FOR_LEADER_EPOCH):
                break
            proxies.release(request)
            proxies.release(proxies.wait_held(RESPONSE, f, l, None, MESSAGE_WAIT, after=request))
            log(f"  r{f}'s OffsetsForLeaderEpoch on an empty epoch cache let through: its answer changes nothing "
                f"there, and the model leaves that exchange out (spec/actions.become_follower)")
        if request.api_key != api:
            raise ProxyError(f"r{f} sent {request!r} where the model sends a {step.api}")
        return
    if step.do in ("deliver_request", "reject"):
        request = proxies.wait_held(REQUEST, f, l, api, MESSAGE_WAIT)
        proxies.release(request)
        response = proxies.wait_held(RESPONSE, f, l, api, MESSAGE_WAIT, after=request)
        log(f"  r{l} answered r{f}'s {step.api} #{request.correlation_id}; the answer is held")
        if step.do == "deliver_request":
            return
    else:
        response = proxies.wait_held(RESPONSE, f, l, api, MESSAGE_WAIT)
        log(f"  r{l}'s answer to r{f}'s {step.api} #{response.correlation_id} released")
    proxies.release(response)
    try:
        proxies.wait_held(REQUEST, f, l, None, NEXT_REQUEST)
    except ProxyError:
        pass                            # no next request (it leads now, or backs off): it applied it anyway


def _await_unfenced(cluster: Cluster, r: int, holders, log) -> bool:
    """KRaft: until every broker in ``holders`` holds broker r alive, registered and unfenced
    (``wire.alive_brokers``), at most LEADING_WAIT seconds; False if that never happened in time
    (the next step goes anyway and the next checkpoint tells). The model's controller holds a
    broker live in one step where Kafka unfences it after its registration or its next heartbeat
    (``BrokerHeartbeatManager``), and each broker hears of it later still: a leader that handled a
    Fetch of a broker it held fenced kept it out of the ISR (``Partition.isReplicaIsrEligible``
    @4.1.1; seen on 4.4.0, the Fetch released 19 ms before the unfence), and one that took a produce
    then moved the HW past it where the model's leader waits for it (``maybeIncrementLeaderHW``
    counts an out-of-ISR replica only if its broker is alive; seen on 4.1.1)."""
    deadline = time.monotonic() + LEADING_WAIT
    while True:
        try:
            if all(r in wire.alive_brokers("127.0.0.1", cluster.broker(b).port, TOPIC) for b in holders):
                return True
        except (wire.WireError, OSError):
            pass
        if time.monotonic() > deadline:
            log(f"  r{r} not held unfenced by {', '.join(f'r{b}' for b in holders)} within {LEADING_WAIT:.0f} s; "
                "the next step goes anyway")
            return False
        time.sleep(POLL)


def _await_leading(cluster: Cluster, r: int, log) -> None:
    """Until broker r leads by its own state (``wire.leads``), at most LEADING_WAIT seconds: the
    model's leader handles the request only after its ``become_leader``, which a checkpoint judges
    by the controller's decision. A ZooKeeper walk on 0.11.0.3 met the difference: r1's Fetch,
    held and released on the controller's word, reached the restarted r0 before r0 applied its
    LeaderAndIsr and was answered UNKNOWN_TOPIC_OR_PARTITION (docs/results.md). If r never leads
    in that time, the request goes anyway and the next checkpoint tells."""
    deadline = time.monotonic() + LEADING_WAIT
    waited = False
    while not wire.leads("127.0.0.1", cluster.broker(r).port, TOPIC):
        if time.monotonic() > deadline:
            log(f"  r{r} did not lead by its own state within {LEADING_WAIT:.0f} s; the request goes anyway")
            return
        waited = True
        time.sleep(POLL)
    if waited:
        log(f"  waited for r{r} to apply the LeaderAndIsr naming it leader")


def _expire_session(cluster: Cluster, r: int, log, timeout: float = EXPIRY_WAIT) -> None:
    """Broker r's session expires while its process lives: SIGSTOP keeps it from heartbeating, then
    SIGCONT once the controller has handled it as failed, and the broker comes back by itself, as the
    model's ``register`` follows.

    ZooKeeper: ZooKeeper expires the session after zookeeper.session.timeout.ms and deletes its
    registration, the controller handles it as a broker failure (``KafkaController
    .onBrokerFailure`` @3.9.0: its leaderships go to the live ISR); the broker registers again with
    a new session (``KafkaZkClient.registerBroker`` after ``ZooKeeperClient`` reinitializes).
    KRaft: the controller fences a broker whose heartbeats stop for broker.session.timeout.ms
    (``BrokerHeartbeatManager`` session expiry, ``ReplicationControlManager.maybeFenceOneStaleBroker``
    and ``handleBrokerFenced`` @4.1.1: the fence and the partitions' changes in one batch, so the
    fence in the controller's metadata log says the leadership moved too); the broker's next
    heartbeat unfences it in the same broker epoch (``handleBrokerUnfenced``)."""
    t0 = time.monotonic()
    cluster.pause(r)
    try:
        while not _session_gone(cluster, r):
            if time.monotonic() - t0 > timeout:
                raise ClusterError(f"r{r}'s session did not expire, or the controller kept it leader, "
                                   f"within {timeout:.0f} s")
            time.sleep(POLL)
    finally:
        cluster.resume(r)
    log(f"  r{r}'s session expired and the controller moved its leadership after {time.monotonic() - t0:.1f} s; "
        f"r{r} resumed")
    if cluster.kraft:
        # the model's ``register`` is eager: the next step comes once the others hold r alive again
        others = [i for i, b in enumerate(cluster.brokers()) if i != r and b.running and not b.paused]
        if _await_unfenced(cluster, r, others, log):
            log(f"  r{r} unfenced again after its next heartbeat")


def _session_gone(cluster: Cluster, r: int) -> bool:
    """The controller has handled broker r as failed: KRaft, fenced in its metadata log; ZooKeeper,
    r's registration gone and r no longer the leader ZooKeeper records."""
    from .observe import registration, zookeeper_view
    if cluster.kraft:
        from . import metadata_log
        view = metadata_log.controller_view(cluster.nodes["controller"].data, TOPIC, 0)
        return r in view.fenced and (view.partition is None or view.partition.leader != r)
    return registration(cluster, r) is None and _zk_leader(zookeeper_view(cluster)) != r


def _zk_leader(view) -> Optional[int]:
    return None if view is None else view.leader


def _await_following(cluster: Cluster, f: int, l: int, log) -> None:
    """Until broker f holds the partition as a follower of l at the epoch the controller gave it
    (``wire.follows_at``), at most FOLLOWING_WAIT seconds, then past ``ReplicaManager.makeFollowers``'
    ``addFetcherForPartitions`` (it follows the epoch's change at once): an answer released earlier
    meets a fetcher thread that does not fetch the partition and is dropped (seen on 3.9.0: r0,
    resumed after its session expired, had not registered again yet). If that never happens in
    time, the answer goes anyway and the next checkpoint tells."""
    from .observe import controller_view, zookeeper_view
    deadline = time.monotonic() + FOLLOWING_WAIT
    while True:
        view = zookeeper_view(cluster) if not cluster.kraft else controller_view(cluster)
        if view is not None and view.leader == l and wire.follows_at("127.0.0.1", cluster.broker(f).port, TOPIC,
                                                                     view.leader_epoch):
            time.sleep(FETCH_SETTLE)
            log(f"  r{f} follows r{l} at epoch {view.leader_epoch} by its own state")
            return
        if time.monotonic() > deadline:
            log(f"  r{f} did not follow r{l} by its own state within {FOLLOWING_WAIT:.0f} s; the answer goes anyway")
            return
        time.sleep(POLL)


def _restart_zookeeper(cluster: Cluster, r: int, timeout: float, log=lambda m: None) -> None:
    """ZooKeeper mode: the broker back once it holds a registration of a new session. A broker
    started while the dead process's registration (an ephemeral ``/brokers/ids/r`` of a session not
    yet expired) is still there refuses to start (``KafkaHealthcheck.register`` ->
    ``ZkUtils.registerBrokerInZk`` @0.10.2.1 throws "A broker is already registered", and the
    broker exits); as its supervisor would, the harness starts it again once that registration is
    gone -- and by then the controller has seen the broker leave (``BrokerChangeListener``)."""
    from .observe import registration
    old = registration(cluster, r)
    deadline = time.monotonic() + timeout
    cluster.restart(r)
    while True:
        now = registration(cluster, r)
        if now is not None and now != old and cluster.broker(r).running:
            return
        if not cluster.broker(r).running:
            if registration(cluster, r) == old and old is not None:
                cluster._say(f"  r{r} refused to start: the dead process's registration is still "
                             f"in ZooKeeper; starting it again once its session has expired")
            while registration(cluster, r) == old and old is not None and time.monotonic() < deadline:
                time.sleep(POLL)
            cluster.restart(r)
        if time.monotonic() > deadline:
            raise ClusterError(f"r{r} did not register again within {timeout:.0f} s")
        time.sleep(POLL)


def _restart(cluster: Cluster, r: int, timeout: float = 90.0) -> None:
    """The model's restart is the broker back *and registered* (KRaft: a new registration with a new
    broker epoch, ZooKeeper: its listener up once it registered): the harness places the next step
    only after that, never against a process still starting."""
    from . import metadata_log
    if not cluster.kraft:
        _restart_zookeeper(cluster, r, timeout)
        return
    ctl = cluster.nodes["controller"].data
    before = metadata_log.controller_view(ctl, TOPIC, 0).broker_epochs.get(r)
    cluster.restart(r)
    deadline = time.monotonic() + timeout
    while metadata_log.controller_view(ctl, TOPIC, 0).broker_epochs.get(r) == before:
        if time.monotonic() > deadline:
            raise ClusterError(f"r{r} did not register again within {timeout:.0f} s")
        if not cluster.broker(r).running:
            raise ClusterError(f"r{r} exited while starting again")
        time.sleep(POLL)


def _checkpoint(cluster, client, states, index, upper_index, label, elr, wait, log, last=False, model=None,
                plan: Optional[Plan] = None) -> Row:
    """Poll the cluster until it agrees with the model's state ``index`` (once: the next placed
    step may have a short window, e.g. a broker registered and not yet unfenced), or holds a state
    the model reaches from it by awaited steps alone (cluster/plan.py ``awaited_closure``: Kafka ran
    them before the harness's next step) for AHEAD_STABLE seconds, or ``wait`` seconds pass (the row then
    keeps the differences from the trace's state). Without the proxy the trace's last state is
    compared once, by the controller and the leader only: the cluster goes on past it with steps
    the trace did not take (followers of the new leader truncate and rejoin the ISR); with the
    proxy, every replica, as at every step."""
    from .plan import awaited_closure
    s, upper = states[index], states[upper_index]
    placed = plan.placed_actions if plan is not None else Plan().placed_actions
    closure = awaited_closure(model, s, placed=placed) if model is not None else [(s, ())]
    # with the proxy nothing replicates ahead of the trace, not even after its last step: the
    # followers are compared there too
    exact = plan is not None and plan.proxied
    followers = exact or not last
    epochs = cluster.kraft            # ZooKeeper's epochs are shown, not compared (docs/reproduce.md)
    deadline = time.monotonic() + wait
    agreed, ahead_since = 0, None
    while True:
        view = observe(cluster, client.acked)
        diffs = compare(s, view, upper, bool(elr), followers=followers, exact=exact, epochs=epochs)  # closure[0] is s
        ahead = () if not diffs else next(
            (path for t, path in closure[1:]
             if not compare(t, view, t, bool(elr), followers=followers, low=s, exact=exact, epochs=epochs)), None)
        if ahead is not None:
            diffs = []
        now = time.monotonic()
        agreed = agreed + 1 if ahead == () else 0
        ahead_since = (ahead_since or now) if ahead else None
        # the trace's own state: once; a state ahead of it: for AHEAD_STABLE seconds, since
        # a cluster still *behind* the model (an ISR shrink not yet taken) can look like one ahead
        if agreed >= 1 or (ahead_since is not None and (last or now - ahead_since >= AHEAD_STABLE)):
            break
        if now > deadline:
            break
        client.sleep(POLL)
    if diffs:
        log(f"step {index} {label}: after {wait:.0f} s the cluster still differs: {'; '.join(diffs)}")
    elif ahead:
        log(f"step {index} {label}: the cluster is ahead of the model by {', '.join(ahead)}")
    return Row(index, label, s, view, diffs, tuple(ahead or ()))


def disk_assigned_first(cluster: Cluster, plan: Plan) -> Optional[bool]:
    """For a KRaft cluster whose disks the trace replaced (``lose_disk``, then ``restart``): whether
    each such broker's replica already named its new log directory (its ``meta.properties``
    directory.id) when the controller last unfenced it. The election written with the unfencing
    (``handleBrokerUnfenced``) accepts a broker only on an online directory
    (``ReplicationControlManager.LeaderAcceptor.test`` @4.1.1, ``hasOnlineDir``), and the broker's
    AssignReplicasToDirs (``handleAssignReplicasToDirs``, which elects nobody) races its unfencing:
    the order decides whether the replaced broker is elected. None: no disk replaced, ZooKeeper, or
    no directory recorded (before 3.7)."""
    from . import metadata_log
    replaced = {s.args[0] for s in plan.steps if s.action == "lose_disk"}
    if not cluster.kraft or not replaced:
        return None
    seen = {}
    for _, broker, directory in metadata_log.unfencings(cluster.nodes["controller"].data, TOPIC, 0):
        if broker in replaced:
            seen[broker] = directory
    now = {broker: metadata_log.directory_id(cluster.broker(broker).data) for broker in replaced}
    if any(now[b] is None or seen.get(b) is None for b in replaced):
        return None
    return all(seen[b] == now[b] for b in replaced)


def judge(invariant: str, v: View, cluster: Cluster, release: Release, readings=()) -> Tuple[str, str]:
    """The real verdict from what clients saw, in one line (no invariant: a conformance walk,
    judged by its checkpoints alone; ConsumerConsistency: by what consumers read, ``readings``)."""
    name = f"Kafka {release.version}"
    if invariant is None:
        return "kept", f"walked: the cluster was observed after every step on {name}"
    if invariant == "ConsumerConsistency":
        return replaced_read(readings, name)
    if invariant == "LeaderUnfenced" and cluster is not None and cluster.kraft:
        from . import metadata_log
        seen = metadata_log.fenced_leaders(cluster.nodes["controller"].data, TOPIC, 0)
        if seen:
            offset, leader, epoch = seen[0]
            return "violated", (f"fenced leader: the controller named r{leader} leader at epoch {epoch} while it "
                                f"was fenced (metadata offset {offset}) on {name}")
        return "kept", f"kept: the controller never named a fenced broker leader on {name}"
    if invariant == "LeaderUnfenced":
        if v.leader is not None and v.leader >= 0 and not v.replicas[v.leader].alive:
            return "violated", f"fenced leader: r{v.leader} leads at epoch {v.epoch} while its broker is down on {name}"
        return "kept", f"kept: no broker leads while down on {name}"
    if invariant == "NoLogDivergence":
        for a in range(len(v.replicas)):
            for b in range(a + 1, len(v.replicas)):
                ra, rb = v.replicas[a], v.replicas[b]
                below = min(ra.hw, rb.hw, len(ra.log), len(rb.log))
                for off in range(below):
                    if ra.log[off][0] != rb.log[off][0]:
                        return "violated", (f"diverged: offset {off} holds record {ra.log[off][0]} on r{a} and "
                                            f"record {rb.log[off][0]} on r{b}, below both HWs, on {name}")
        return "kept", f"kept: the replicas agree below their HWs on {name}"
    if v.leader is None or v.leader < 0:
        return "kept", f"kept: the partition has no leader on {name} (nothing acknowledged was served otherwise)"
    log = v.replicas[v.leader].log
    for rec, off in sorted(v.acked.items()):
        if off >= len(log) or log[off][0] != rec:
            return "violated", f"lost: record {rec}, acknowledged at offset {off}, is gone on {name}"
    what = ", ".join(f"record {r}" for r in sorted(v.acked)) or "nothing"
    return "kept", f"kept: {what} acknowledged, still on the leader r{v.leader} on {name}"


def replaced_read(readings, name: str) -> Tuple[str, str]:
    """ConsumerConsistency as consumers saw it: a record read at an offset, and another record
    read there later (from any leader).

    >>> replaced_read([Reading(19, 1, ((0, 0),)), Reading(29, 1, ((0, 1),))], "Kafka 3.9.0")
    ('violated', 'replaced: record 0, read at offset 0 from r1 after step 19, is record 1 there (read from r1 after step 29) on Kafka 3.9.0')
    >>> replaced_read([Reading(19, 1, ((0, 0),)), Reading(20, 1, ((0, 0), (1, 1)))], "Kafka 3.9.1")
    ('kept', 'kept: every record consumers read (offsets 0-1) stayed at its offset on Kafka 3.9.1')
    """
    first = {}
    for reading in readings:
        for off, rec in reading.records:
            seen = first.setdefault(off, (rec, reading))
            if seen[0] != rec:
                then = seen[1]
                return "violated", (f"replaced: record {seen[0]}, read at offset {off} from r{then.broker} after step "
                                    f"{then.step}, is record {rec} there (read from r{reading.broker} after step "
                                    f"{reading.step}) on {name}")
    if not first:
        return "kept", f"kept: consumers read nothing on {name}"
    where = "offset 0" if max(first) == 0 else f"offsets 0-{max(first)}"
    return "kept", f"kept: every record consumers read ({where}) stayed at its offset on {name}"
