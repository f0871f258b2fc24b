"""A fence on a real cluster: does it take a follower's fetcher thread, and the answer that thread
waits for, away? The evidence for the model's ``fence_stops_fetchers`` (spec/modes.py,
spec/actions.py ``_fence_fetchers``): under KRaft yes, under ZooKeeper no.

Two brokers (and a controller: KRaft's, or a third broker beside ZooKeeper) of a release, replication
through the harness's proxy (cluster/proxy.py), two partitions led by r0: ``hwcheck`` with r1 in
its ISR, and a second one that r1 follows from outside its ISR (r0 holds a record r1 cannot fetch,
so r0 drops r1 after ``replica.lag.time.max.ms``). The proxy holds r0's answer to r1's Fetch; r0 is
paused (SIGSTOP) until the controller takes it for dead: ``hwcheck`` moves to r1 and the second
partition, whose only ISR member r0 was, is left without a leader. Then: is the answer still owed
to r1 (its connection open: r1's fetcher thread towards r0 kept the second partition,
``ReplicaManager.makeFollowers @2.8.0`` skips a partition whose leader is not alive), or lost (r1
closed the connection: a KRaft broker removes a leaderless partition from its fetcher too and shuts
the idle thread down, ``ReplicaManager.applyDelta @3.9.0``)? ``benchmarks/kraft_fence.py`` repeats it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from . import observe
from .brokers import TOPIC, Cluster, ClusterError, Timing
from .client import Client
from .proxy import FETCH, REQUEST, RESPONSE

OTHER = "hwcheck-other"          # the second partition, also led by r0


@dataclass
class Fenced:
    """What one probe saw."""
    version: str
    dead_after: float            # seconds from r0's pause to the controller's leader change
    lost: bool                   # r1 closed the connection the held answer waited on
    lost_after: Optional[float]  # ... that many seconds after the leader change
    thread_shut: bool            # r1's log: its fetcher thread towards r0 shut down

    def line(self) -> str:
        return (f"r0 taken for dead after {self.dead_after:.1f} s (hwcheck led by r1, the second partition by "
                f"nobody); r0's held answer "
                + (f"lost: r1 closed its connection {self.lost_after:+.1f} s later" if self.lost
                   else "still owed to r1 10 s later (its connection open)")
                + f"; r1's fetcher thread towards r0 {'shut down' if self.thread_shut else 'still running'}")


def _partition(cluster, topic: str):
    """(leader, ISR) of ``topic``-0 as the controller wrote it (cluster/observe.py: the KRaft
    controller's metadata log, or the partition's state znode); (None, ()) before it exists."""
    view = observe.recorded_partition(cluster, topic)
    return (None, ()) if view is None else (view.leader, tuple(sorted(view.isr)))


def _wait(what: str, ok, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        if time.monotonic() > deadline:
            raise ClusterError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.1)


def probe(rel, lib: Path, log: Callable[[str], None] = lambda m: None, keep: Optional[Path] = None) -> Fenced:
    """Run the probe once on release ``rel`` (jars in ``lib``); ``keep`` keeps the brokers' folders."""
    from confluent_kafka.admin import NewTopic          # the reproduce extra

    with Cluster(rel, lib, 2, timing=Timing(lag=3000), proxied=True, log=log,
                 root=keep, keep=keep is not None) as cluster:
        proxies = cluster.proxies
        proxies.gate()
        with Client(cluster, acks="all", wire=True) as client:
            client.create_topic(1, False)
            other = NewTopic(OTHER, num_partitions=1, replica_assignment=[[0, 1]])
            client.admin.create_topics([other])[OTHER].result(60)
            both = {TOPIC: (0, (0, 1)), OTHER: (0, (0, 1))}
            _wait("both partitions led by r0", lambda: {t: _partition(cluster, t) for t in both} == both)
            _wait("r1 following the second partition", (cluster.broker(1).data / f"{OTHER}-0").exists)
            for _ in range(4):                  # a few rounds, so that r1's thread fetches both
                request = proxies.wait_held(REQUEST, 1, 0, FETCH, 30)
                proxies.release(request)
                proxies.release(proxies.wait_held(RESPONSE, 1, 0, FETCH, 30, after=request))
            request = proxies.wait_held(REQUEST, 1, 0, FETCH, 30)     # held while r0 takes a record
            client.producer.produce(OTHER, b"0", partition=0)
            client.poll(0.5)
            _wait("r0 dropping r1 from the second partition's ISR", lambda: _partition(cluster, OTHER) == (0, (0,)))
            if _partition(cluster, TOPIC) != (0, (0, 1)):
                raise ClusterError(f"{TOPIC} left the state the probe needs: {_partition(cluster, TOPIC)}")
            proxies.release(request)
            answer = proxies.wait_held(RESPONSE, 1, 0, FETCH, 30, after=request)
            cluster.pause(0)
            paused = time.monotonic()
            try:
                _wait("r0 taken for dead",
                      lambda: _partition(cluster, TOPIC)[0] == 1 and _partition(cluster, OTHER)[0] == -1)
                dead = time.monotonic() - paused
                while not answer.link.closed.is_set() and time.monotonic() - paused < dead + 10:
                    time.sleep(0.1)
                lost = answer.link.closed.is_set()
                gone = time.monotonic() - paused
            finally:
                cluster.resume(0)
            shut = _thread_shut(cluster.broker(1).home / "logs" / "server.log", SETTLE)
            return Fenced(rel.version, dead, lost, gone - dead if lost else None, shut)


# a fetcher thread closes its connection while shutting down and logs "Shutdown completed" once it
# has stopped (tens of milliseconds later: ShutdownableThread.awaitShutdown @3.9.0); the log is
# read for that long after the probe's end, not at the instant the connection closed
SETTLE = 5.0


def _thread_shut(server_log: Path, settle: float) -> bool:
    """Whether r1's log says its fetcher thread towards r0 shut down, within ``settle`` seconds."""
    deadline = time.monotonic() + settle
    while True:
        text = server_log.read_text(errors="replace") if server_log.exists() else ""
        if "ReplicaFetcherThread-0-0]: Shutdown completed" in text:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
