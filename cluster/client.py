"""The clients of a reproduction: one producer and one admin client (librdkafka, through
confluent-kafka), as a user's application would have them.

The producer sends record ``k`` as the value ``b"k"`` to partition 0, acks as the trace's knob,
without idempotence or retries (a retry would write a record the model never produced), one
record per request; a delivery report with no error is the acknowledgement the model's history
records (record -> offset).
"""

from __future__ import annotations

import time
from typing import Dict

from hwcheck.spec.state import PREFERRED

from .brokers import TOPIC, Cluster, ClusterError


def _confluent():
    try:
        import confluent_kafka
        from confluent_kafka import admin
    except ImportError:
        raise ClusterError("the Python package confluent-kafka is missing: pip install 'hwcheck[reproduce]'") from None
    return confluent_kafka, admin


# refusals that come before the append: UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE,
# NOT_LEADER_OR_FOLLOWER (cluster/wire.py ERRORS)
NOT_APPENDED = frozenset({3, 5, 6})


class Client:
    """``wire``: produce each record with one ProduceRequest of its own (cluster/wire.py) to the
    broker the model names, on a connection of its own, never retried -- the producer of the
    fetch-level runs, where a leader may change with a record in flight and librdkafka was seen to
    write such a record again on the new leader despite ``retries=0`` (2.8.1, a controlled shutdown
    with the record waiting for acks=all)."""

    def __init__(self, cluster: Cluster, acks: str, wire: bool = False):
        self.cluster = cluster
        self.acks = acks
        self.wire = wire
        self.acked: Dict[int, int] = {}
        self.failed: Dict[int, str] = {}
        self.produced = 0
        self.producer = self.admin = None

    def __enter__(self) -> "Client":
        ck, admin = _confluent()
        boot = ",".join(f"127.0.0.1:{b.port}" for b in self.cluster.brokers())
        quiet = {"log_level": 0, "logger": lambda *a: None}
        self.admin = admin.AdminClient({"bootstrap.servers": boot, **quiet})
        self.producer = ck.Producer({
            "bootstrap.servers": boot, "acks": "all" if self.acks == "all" else "1",
            "enable.idempotence": False, "retries": 0, "linger.ms": 0, "compression.type": "none",
            "max.in.flight.requests.per.connection": 1, "message.timeout.ms": 300000,
            "request.timeout.ms": 120000, "metadata.max.age.ms": 1000,
            "topic.metadata.refresh.interval.ms": 500, "reconnect.backoff.max.ms": 500, **quiet})
        return self

    def __exit__(self, *exc) -> None:
        if self.producer is not None:
            self.producer.purge()
            self.producer.poll(0)
        self.producer = self.admin = None

    def _report(self, err, msg) -> None:
        rec = int(msg.value().decode())
        if err is None:
            self.acked[rec] = msg.offset()
        else:
            self.failed[rec] = str(err.name() if hasattr(err, "name") else err)

    def poll(self, seconds: float) -> None:
        """Serve the producer's delivery reports for up to ``seconds``. Ctrl-C inside librdkafka's
        poll comes back from confluent-kafka as "SystemError: ... returned NULL without setting an
        exception" (the handler's KeyboardInterrupt is lost on the way out of the C call): it is
        raised here as the interrupt it was."""
        try:
            self.producer.poll(seconds)
        except SystemError as e:
            if "without setting an exception" in str(e):
                raise KeyboardInterrupt from None
            raise

    def sleep(self, seconds: float) -> None:
        """Wait, serving the producer's delivery reports meanwhile."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self.poll(min(left, 0.1))

    def produce(self, leader: int = 0) -> int:
        rec = self.produced
        if self.wire:
            import threading
            threading.Thread(target=self._produce_wire, args=(rec, leader), daemon=True,
                             name=f"hwcheck-produce-{rec}").start()
        else:
            self.producer.produce(TOPIC, value=str(rec).encode(), partition=0, on_delivery=self._report)
            self.poll(0)
        self.produced += 1
        return rec

    def _produce_wire(self, rec: int, leader: int, patience: float = 10.0) -> None:
        """A broker that has not yet applied the metadata or leadership the model's step assumes
        refuses before it appends (UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE,
        NOT_LEADER_OR_FOLLOWER: ``ReplicaManager.appendToLocalLog``): the harness asks again for
        up to ``patience`` seconds. NOT_LEADER_OR_FOLLOWER also answers a record that *was*
        appended and then waited for acks=all while the broker lost its leadership
        (``DelayedProduce``): asking again would write it twice, so that answer is final when the
        record is in the broker's log. Nothing else is asked again."""
        from . import disk, wire
        legacy = self.cluster.release.key() < (0, 11)
        value = str(rec).encode()
        deadline = time.monotonic() + patience
        while True:
            try:
                self.acked[rec] = wire.produce("127.0.0.1", self.cluster.broker(leader).port, TOPIC,
                                               value, -1 if self.acks == "all" else 1, 120000, legacy)
                return
            except wire.WireError as e:
                part = self.cluster.broker(leader).partition_dir
                try:
                    written = part.exists() and any(entry.value == value for entry in disk.read_log(part))
                except (OSError, disk.DiskError):
                    written = True                 # unknown: never risk a second copy
                refused = isinstance(e, wire.ProduceRefused) and e.code in NOT_APPENDED
                if refused and not written and time.monotonic() < deadline:
                    time.sleep(0.1)
                    continue
                self.failed[rec] = str(e)
                return

    def create_topic(self, min_isr: int, unclean: bool, timeout: float = 60.0) -> None:
        """The partition, assigned [0, 1, ...] so that the preferred leader is the model's r0; then
        wait until r0 leads with every replica in the ISR (the model's initial state)."""
        _, admin = _confluent()
        n = self.cluster.replicas
        deadline = time.monotonic() + timeout
        while (registered := self._registered()) < n:
            if time.monotonic() > deadline:
                raise ClusterError(f"only {registered} of {n} brokers registered in {timeout:.0f} s")
            time.sleep(0.2)
        topic = admin.NewTopic(TOPIC, num_partitions=1, replica_assignment=[list(range(n))],
                               config={"min.insync.replicas": str(min_isr),
                                       "unclean.leader.election.enable": str(unclean).lower()})
        self.admin.create_topics([topic])[TOPIC].result(timeout)
        ck, _ = _confluent()
        while True:
            try:
                p = self.admin.list_topics(TOPIC, timeout=5).topics[TOPIC].partitions.get(0)
                if p is not None and p.leader == 0 and sorted(p.isrs) == list(range(n)) and self._ready(n):
                    return
            except ck.KafkaException:
                pass                # a metadata request that failed in transport (seen once on 3.9.1): ask again
            if time.monotonic() > deadline:
                raise ClusterError(f"the partition did not reach leader r0 with a full ISR in {timeout:.0f} s")
            time.sleep(0.1)

    def read(self, r: int) -> list:
        """What a consumer reads from broker ``r`` now: (offset, record) of every record below its HW
        (wire.consume); WireError where r does not lead or cannot be asked."""
        from . import wire
        from .observe import _record
        return [(off, _record(value)) for off, value in wire.consume("127.0.0.1", self.cluster.broker(r).port, TOPIC)]

    def create_keeper(self, follower: int, leader: int, timeout: float = 60.0) -> str:
        """A partition of one record led by ``leader`` alone, which ``follower`` joins later
        (``add_follower``): it keeps the follower's fetcher thread towards the leader alive
        (cluster/plan.py ``keepers``). Returns its topic."""
        from . import wire
        _, admin = _confluent()
        topic = keeper_topic(follower, leader)
        self.admin.create_topics([admin.NewTopic(topic, num_partitions=1, replica_assignment=[[leader]])])[topic].result(timeout)
        deadline = time.monotonic() + timeout
        while True:
            try:
                wire.produce("127.0.0.1", self.cluster.broker(leader).port, topic, b"keeper", 1, 10000, legacy=False)
                return topic
            except wire.WireError:
                if time.monotonic() > deadline:
                    raise ClusterError(f"{topic}: r{leader} did not take its record in {timeout:.0f} s") from None
                time.sleep(0.2)

    def add_follower(self, follower: int, leader: int, timeout: float = 30.0) -> None:
        """Reassign the keeper partition of (follower, leader) to [leader, follower], as an operator
        would (AlterPartitionReassignments to the controller; ``KafkaController
        .onPartitionReassignment`` @3.9.0 sends the follower a LeaderAndIsr), and wait until the
        follower has created its replica (``ReplicaManager.makeFollowers``, which then adds it to
        its fetcher thread towards the leader). The reassignment stays in progress while the
        follower is out of the partition's ISR, so a second one cannot go through the
        ``/admin/reassign_partitions`` znode: the controller watches only its creation
        (``PartitionReassignmentHandler.handleCreation`` @3.9.0)."""
        from . import wire
        topic = keeper_topic(follower, leader)
        ctl = self.cluster.nodes["controller"]
        wire.reassign("127.0.0.1", ctl.port, topic, [leader, follower], timeout)
        replica = self.cluster.broker(follower).data / f"{topic}-0"
        deadline = time.monotonic() + timeout
        while not replica.exists():
            if time.monotonic() > deadline:
                raise ClusterError(f"r{follower} did not follow {topic} within {timeout:.0f} s")
            time.sleep(0.1)
        time.sleep(0.5)                   # past makeFollowers' addFetcherForPartitions

    def _registered(self) -> int:
        """How many of the partition's brokers (ids 0..n-1: not the ZooKeeper controller's broker)
        the cluster's metadata lists; 0 while brokers starting answer with partial metadata."""
        ck, _ = _confluent()
        try:
            return sum(1 for b in self.admin.list_topics(timeout=5).brokers if b < self.cluster.replicas)
        except ck.KafkaException:
            return 0

    def _ready(self, n: int) -> bool:
        """The controller's word is not enough: every broker must have acted on it (made the log
        its LeaderAndIsr or metadata record asks for: ``ReplicaManager.makeFollowers`` creates it
        on a follower), and the producer must know the leader. A broker paused by the next step
        before then never becomes a follower, and a producer whose metadata request went to it
        holds the record unsent (seen on 2.6.0: the record never reached r0)."""
        if not all(self.cluster.broker(r).partition_dir.exists() for r in range(n)):
            return False
        if self.wire:
            return True
        p = self.producer.list_topics(TOPIC, timeout=5).topics[TOPIC].partitions.get(0)
        return p is not None and p.leader == 0

    def elect_preferred(self) -> None:
        """``Admin.electLeaders(PREFERRED)`` (KIP-460, 2.4+); before 2.4 the request an operator's
        kafka-preferred-replica-election.sh writes: the ``/admin/preferred_replica_election`` znode
        (``PreferredReplicaLeaderElectionCommand`` @2.0.0), which the controller watches."""
        if not self.cluster.kraft and self.cluster.release.key() < (2, 4):
            return self._elect_preferred_znode()
        ck, admin = _confluent()
        from concurrent.futures import TimeoutError as NoAnswer
        from confluent_kafka import ElectionType, KafkaException, TopicPartition
        from .observe import recorded_partition
        before = recorded_partition(self.cluster)
        try:
            result = self.admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(TOPIC, 0)]).result(30)
        except KafkaException as e:
            raise ClusterError(f"preferred election refused: {e.args[0].str() if e.args else e}") from None
        except NoAnswer:
            # the controller may have acted with its answer late or lost (a CI run on 3.9.0 on
            # ZooKeeper: r0 led at the next epoch within a second, and no ElectLeaders answer came
            # in 30 s): the step is placed once the controller's own record names r0 at a newer epoch
            after = recorded_partition(self.cluster)
            if after is not None and after.leader == PREFERRED and (before is None
                                                                    or after.leader_epoch > before.leader_epoch):
                return
            raise ClusterError("preferred election: no answer within 30 s, and the controller's record does "
                               "not name r0 leader") from None
        for _, err in (result or {}).items():
            if err is not None:
                raise ClusterError(f"preferred election refused: {err}")

    def _elect_preferred_znode(self, timeout: float = 30.0) -> None:
        import json
        from .observe import zookeeper
        with zookeeper(self.cluster, timeout=5.0) as zk:
            path = "/admin/preferred_replica_election"
            zk.create(path, json.dumps({"version": 1, "partitions": [{"topic": TOPIC, "partition": 0}]}).encode(),
                      makepath=True)
            deadline = time.monotonic() + timeout
            while zk.exists(path):                # the controller deletes it once it has acted
                if time.monotonic() > deadline:
                    raise ClusterError(f"the controller did not take the preferred election within {timeout:.0f} s")
                time.sleep(0.1)


def keeper_topic(follower: int, leader: int) -> str:
    """The keeper partition's topic of one (follower, leader) link."""
    return f"{TOPIC}-keeper-{follower}-{leader}"
