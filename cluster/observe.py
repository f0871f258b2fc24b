"""The cluster in the model's words, and how it is compared with the model's state.

A ``View`` is what the harness can see of the partition: the controller's leader, leader epoch,
ISR, ELR and last known ELR (KRaft: replayed from the controller's metadata log; ZooKeeper: the
partition's state znode, read with kazoo), and per replica whether its process runs, its log as
record@epoch (read from its segment files: the batches' partitionLeaderEpoch) and its HW (its
``replication-offset-checkpoint``, written every 200 ms), plus what the producer was told.

``compare`` is the checkpoint rule of cluster/plan.py: the controller, the processes and the
producer's acknowledgements as the model has them, and each log equal to the model's or ahead of
it only by records its leader already holds in the model (replication the cluster ran early).
KRaft's leader epochs are compared too (the KRaft modes bump the epoch as its controller does, on
every leader change, including to no leader: ``fence_elects``); ZooKeeper's are shown, not compared
(docs/reproduce.md).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Dict, FrozenSet, List, NamedTuple, Optional, Tuple

from hwcheck.spec.state import UNDEFINED, State, members

from . import disk, wire
from .brokers import TOPIC, Cluster


class ReplicaView(NamedTuple):
    alive: bool                        # the broker process runs (a paused one too)
    paused: bool
    log: Tuple[Tuple[int, int], ...]   # (record, partitionLeaderEpoch) per offset
    hw: int                            # from its replication-offset-checkpoint


class View(NamedTuple):
    leader: Optional[int]              # None: no broker could be asked; -1: no leader
    epoch: Optional[int]
    isr: Optional[FrozenSet[int]]
    elr: Optional[FrozenSet[int]]      # None where the release (or the API asked) has no ELR
    last_known_elr: Optional[FrozenSet[int]]
    replicas: Tuple[ReplicaView, ...]
    acked: Dict[int, int]              # record -> the offset the producer was told

    @property
    def known(self) -> bool:
        return self.leader is not None


def _record(value: bytes) -> int:
    try:
        return int(value.decode())
    except ValueError:
        return -1


def replica_view(cluster: Cluster, r: int) -> ReplicaView:
    b = cluster.broker(r)
    try:
        log = tuple((_record(e.value), e.epoch) for e in disk.read_log(b.partition_dir)) if b.partition_dir.exists() else ()
    except (OSError, disk.DiskError):
        log = ()
    hw = disk.offset_checkpoint(b.data / "replication-offset-checkpoint").get((TOPIC, 0), 0)
    return ReplicaView(b.running, b.paused, log, hw)


def controller_view(cluster: Cluster, topic: str = TOPIC) -> Optional[wire.PartitionView]:
    """The partition as the running, unpaused brokers' metadata says; the leader's own answer
    first (it hears of ISR changes it asked for before the others do)."""
    answers = []
    for b in cluster.brokers():
        if not b.running or b.paused:
            continue
        try:
            answers.append((b.node_id, wire.partition_view("127.0.0.1", b.port, topic, 0, timeout=1.0)))
        except (wire.WireError, OSError):
            continue
    if not answers:
        return None
    for node, view in answers:
        if view.leader == node:
            return view
    return max(answers, key=lambda a: a[1].leader_epoch)[1]


def kraft_view(cluster: Cluster, topic: str = TOPIC) -> Optional[wire.PartitionView]:
    """KRaft: the controller's own view, replayed from its metadata log on disk
    (cluster/metadata_log.py). Brokers report a fenced leader as -1 (KRaftMetadataCache.getAliveEndpoint
    @4.1.1) and nobody answers while every broker is down; the controller's log has both."""
    from . import metadata_log
    view = metadata_log.controller_view(cluster.nodes["controller"].data, topic, 0)
    p = view.partition
    if p is None:
        return None
    return wire.PartitionView(p.leader, p.leader_epoch, p.replicas, p.isr, p.elr, p.last_known_elr, ())


def zookeeper_view(cluster: Cluster, topic: str = TOPIC) -> Optional[wire.PartitionView]:
    """ZooKeeper mode: the controller's view as it wrote it, the partition's state znode
    (``/brokers/topics/T/partitions/0/state``: leader, leader_epoch, isr, written by the controller
    and by a leader's ISR changes, ``ZkPartitionStateMachine`` / ``Partition.shrinkIsr`` @2.6.0), read
    with kazoo whether or not a broker runs."""
    import json
    try:
        import kazoo  # noqa: F401
    except ImportError:
        return controller_view(cluster, topic)
    data = _znode(cluster, f"/brokers/topics/{topic}/partitions/0/state")
    if data is None:
        return None
    state = json.loads(data[0])
    return wire.PartitionView(state["leader"], state["leader_epoch"], (), tuple(state["isr"]), None, None, ())


def registration(cluster: Cluster, r: int) -> Optional[int]:
    """ZooKeeper mode: the session that holds broker ``r``'s registration (the ephemeral
    ``/brokers/ids/r``), or None while it has none."""
    data = _znode(cluster, f"/brokers/ids/{r}")
    return None if data is None else data[1].ephemeralOwner


@contextmanager
def zookeeper(cluster: Cluster, timeout: float = 2.0):
    """A started kazoo client of the cluster's ZooKeeper, stopped and closed on exit."""
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=f"127.0.0.1:{cluster.nodes['zookeeper'].port}", timeout=timeout,
                     connection_retry={"max_tries": 1}, command_retry={"max_tries": 1})
    try:
        zk.start(timeout=timeout)
        yield zk
    finally:
        try:
            zk.stop()
            zk.close()
        except Exception:
            pass


def _znode(cluster: Cluster, path: str):
    """(data, stat) of one znode, or None: absent, or ZooKeeper could not be asked."""
    try:
        with zookeeper(cluster) as zk:
            return zk.get(path)
    except Exception:                  # absent, or any failure to read it: unknown
        return None


def recorded_partition(cluster: Cluster, topic: str = TOPIC) -> Optional[wire.PartitionView]:
    """The partition as its controller recorded it: ``kraft_view`` or ``zookeeper_view``."""
    return kraft_view(cluster, topic) if cluster.kraft else zookeeper_view(cluster, topic)


def observe(cluster: Cluster, acked: Dict[int, int]) -> View:
    pv = recorded_partition(cluster)
    replicas = tuple(replica_view(cluster, r) for r in range(cluster.replicas))
    if pv is None:
        return View(None, None, None, None, None, replicas, dict(acked))
    as_set = lambda ids: None if ids is None else frozenset(ids)
    return View(pv.leader, pv.leader_epoch, frozenset(pv.isr), as_set(pv.elr), as_set(pv.last_known_elr),
                replicas, dict(acked))


# ------------------------------------------------------------------ comparison with the model

def model_acked(s: State) -> Dict[int, int]:
    return {rec: off for rec, off in enumerate(s.history.acked) if off != UNDEFINED}


def compare(s: State, v: View, upper: State, elr: bool, followers: bool = True, low: Optional[State] = None,
            exact: bool = False, epochs: bool = False) -> List[str]:
    """What differs between the model's checkpoint state ``s`` and the cluster, as short phrases
    (empty: they agree). ``upper`` is the model's next checkpoint: acknowledgements the cluster
    gave early must be among its, and those of ``low`` (default ``s``) given. ``elr``: compare ELR
    and last known ELR too. Without ``followers``, the ISR and the logs of replicas other than the
    leader are not compared. ``exact`` (the replication proxy places every fetch): no log may run
    ahead of the model, and every running replica's HW is compared too. ``epochs``: the leader
    epoch too (KRaft)."""
    n = len(s.replicas)
    out = []
    c = s.controller
    if not v.known:
        out.append("the controller's view could not be read")
    else:
        if v.leader != c.leader:
            out.append(f"leader {_who(c.leader)} vs {_who(v.leader)}")
        if epochs and v.epoch != c.epoch:
            out.append(f"epoch e{c.epoch} vs e{v.epoch}")
        if followers and v.isr != frozenset(members(c.isr, n)):
            out.append(f"isr {_set(members(c.isr, n))} vs {_set(v.isr)}")
        if elr and v.elr is not None and v.elr != frozenset(members(c.elr, n)):
            out.append(f"elr {_set(members(c.elr, n))} vs {_set(v.elr)}")
    leader_log = tuple(r for r, _ in s.replicas[c.leader].log) if c.leader != UNDEFINED else ()
    for r, (rep, real) in enumerate(zip(s.replicas, v.replicas)):
        if not followers and r != c.leader:
            continue
        if bool(rep.alive) != real.alive:
            out.append(f"r{r} {'up' if rep.alive else 'down'} vs {'up' if real.alive else 'down'}")
        model_log = tuple(rec for rec, _ in rep.log)
        real_log = tuple(rec for rec, _ in real.log)
        ahead_ok = (not exact and rep.alive and real_log[:len(model_log)] == model_log
                    and leader_log[:len(real_log)] == real_log)
        if real_log != model_log and not ahead_ok:
            out.append(f"r{r} log {_records(model_log)} vs {_records(real_log)}")
        elif exact and rep.alive and real.alive and rep.hw != real.hw:
            out.append(f"r{r} hw {rep.hw} vs {real.hw}")
    low, high = model_acked(low if low is not None else s), model_acked(upper)
    if not (low.items() <= v.acked.items() <= high.items()):
        out.append(f"acked {_acks(low)} vs {_acks(v.acked)}")
    return out


def _who(r) -> str:
    return "none" if r is None or r == UNDEFINED else f"r{r}"


def _set(ids) -> str:
    return ",".join(f"r{i}" for i in sorted(ids)) if ids else "·"


def _records(log) -> str:
    return "[" + " ".join(str(r) for r in log) + "]" if log else "[·]"


def _acks(acked: Dict[int, int]) -> str:
    return "{" + ", ".join(f"{r}@{o}" for r, o in sorted(acked.items())) + "}"


def render_replica(r: ReplicaView) -> str:
    """One replica as the trace table draws it.

    >>> render_replica(ReplicaView(True, False, ((0, 0), (1, 2)), 1))
    'up [0@0 1@2] leo=2 hw=1'
    """
    state = ("paused" if r.paused else "up") if r.alive else "down"
    log = " ".join(f"{rec}@{ep}" for rec, ep in r.log) or "·"
    return f"{state} [{log}] leo={len(r.log)} hw={r.hw}"


def render_controller(v: View) -> str:
    """The controller column.

    >>> render_controller(View(0, 3, frozenset({0}), frozenset({1}), frozenset(), (), {}))
    'r0 e3 isr=r0 elr=r1 lke=·'
    """
    if not v.known:
        return "? (no broker to ask)"
    text = f"{_who(v.leader)} e{v.epoch} isr={_set(v.isr)}"
    if v.elr is not None:
        text += f" elr={_set(v.elr)} lke={_set(v.last_known_elr)}"
    return text
