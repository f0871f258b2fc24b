"""Real Kafka processes on 127.0.0.1: a controller (KRaft) or a ZooKeeper server and a broker
that holds no replica (the ZooKeeper controller), and one broker per model replica, each in a
private directory, on ephemeral ports.

The model's replica ``r<i>`` is broker id ``i``; the partition's assignment is ``[0, 1, ...]``, so
its first replica, the preferred leader, is the model's r0. Faults happen to the real process or
its real files: a crash is SIGKILL, a controlled shutdown SIGTERM, a pause SIGSTOP, a power failure
SIGKILL and the partition's log cut back to the recovery point Kafka last checkpointed, a disk loss
SIGKILL and the log directory wiped (and formatted again under KRaft, as an operator must).

Every process is started in a session of its own with a parent-death signal, and ``Cluster.close``
kills every process group it started: nothing survives the harness, whether it ends normally, on
an exception, on Ctrl-C or because pytest failed a test.
"""

from __future__ import annotations

import ctypes
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from hwcheck.spec.releases import KRAFT, Release

TOPIC = "hwcheck"
CONTROLLER_ID = 100          # the KRaft controller's node id (brokers are 0..n-1)


class ClusterError(Exception):
    """A cluster that would not start or did not do what it was told (one line)."""


@dataclass(frozen=True)
class Timing:
    """The timing knobs under the harness's control (milliseconds).

    ``lag``: replica.lag.time.max.ms (a leader drops a follower that has not caught up for this
    long; the check runs every half of it). ``session``: how long before the controller declares a
    silent broker failed (KRaft broker.session.timeout.ms, ZooKeeper zookeeper.session.timeout.ms).
    """
    lag: int = 1500
    session: int = 6000
    heartbeat: int = 500
    hw_checkpoint: int = 200      # replica.high.watermark.checkpoint.interval.ms: a follower's HW on disk


def free_port() -> int:
    """A free port on 127.0.0.1 below the kernel's ephemeral range. A process that connects to a port
    in that range before its server listens can be given that very port as its source port and
    connect to itself (TCP self-connect): a 4.1.1 broker dialling its controller, whose acceptor
    opens late, read its own request as the answer (OutOfMemoryError) and held the port, and the
    controller could not bind it (a CI rehearsal). No outgoing connection takes a port below it."""
    low = _ephemeral_low()
    if low - PORTS_FROM < 1000:                 # an unusual range: take what the kernel gives
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]
    rng = random.Random()
    for _ in range(500):
        port = rng.randrange(PORTS_FROM, low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise ClusterError(f"no free port on 127.0.0.1 between {PORTS_FROM} and {low}")


PORTS_FROM = 20000


def _ephemeral_low(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> int:
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _die_with_parent():                       # runs in the child between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except OSError:
        pass


@dataclass
class Node:
    name: str                    # "r0", "controller", "zookeeper"
    node_id: int
    home: Path                   # its private directory: config, logs, data
    port: int                    # the client (PLAINTEXT) port; the controller's CONTROLLER port
    replication_port: int = 0    # with proxies: the REPLICATION listener itself (followers reach the proxy)
    proxy_port: int = 0          # with proxies: the port the REPLICATION listener advertises
    proc: Optional[subprocess.Popen] = None
    paused: bool = False
    starts: int = 0

    @property
    def data(self) -> Path:
        return self.home / "data"

    @property
    def partition_dir(self) -> Path:
        return self.data / f"{TOPIC}-0"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@dataclass
class Cluster:
    """One partition's brokers of one release. Use as a context manager."""
    release: Release
    lib: Path
    replicas: int
    min_isr: int = 1
    unclean_election: bool = False
    elr: Optional[bool] = None          # KRaft 4.0+: the ELR feature at format (None: the release's default)
    timing: Timing = field(default_factory=Timing)
    root: Optional[Path] = None         # where the nodes live (default: a fresh temp dir, deleted at close)
    keep: bool = False
    java: str = "java"
    log: object = None                  # a callable for progress lines
    proxied: bool = False               # replication through cluster/proxy.py (``self.proxies``)
    proxies: object = None
    nodes: Dict[str, Node] = field(default_factory=dict)
    cluster_id: str = ""

    # ------------------------------------------------------------ life cycle

    def __enter__(self) -> "Cluster":
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def kraft(self) -> bool:
        return self.release.metadata == KRAFT

    def brokers(self) -> List[Node]:
        return [self.nodes[f"r{i}"] for i in range(self.replicas)]

    def broker(self, r: int) -> Node:
        return self.nodes[f"r{r}"]

    def pids(self) -> Dict[int, int]:
        """Broker id -> the process id of each broker running now."""
        return {b.node_id: b.proc.pid for b in list(self.nodes.values()) if b.name.startswith("r") and b.running}

    def _say(self, msg: str) -> None:
        if self.log:
            self.log(msg)

    def start(self) -> None:
        if self.root is None:
            self.root = Path(tempfile.mkdtemp(prefix=f"hwcheck-kafka-{self.release.version}-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.cluster_id = _cluster_id()
        t0 = time.monotonic()
        if not self.kraft:
            zk = self.nodes["zookeeper"] = Node("zookeeper", -1, self.root / "zookeeper", free_port())
            zk.home.mkdir()
        ctl = self.nodes["controller"] = Node("controller", CONTROLLER_ID, self.root / "controller", free_port())
        ctl.home.mkdir()
        if self.kraft:
            self._write(ctl, self._controller_props(ctl))
            self._format(ctl)
        else:
            # the ZooKeeper controller runs in a broker: one that holds no replica of the partition,
            # started first so that it wins the election (KafkaController.elect), as the model's
            # controller outlives every replica (with the controller on a replica, the last one's
            # crash leaves nobody to handle it, and its restart keeps the leader epoch)
            if self.proxied:
                ctl.replication_port = free_port()      # no proxy: nothing replicates from it
            self._write(ctl, self._broker_props(ctl))
        if self.proxied:
            from .proxy import Proxies
            self.proxies = Proxies(self.pids, journal=self.root / "proxy.log")
        for i in range(self.replicas):
            b = self.nodes[f"r{i}"] = Node(f"r{i}", i, self.root / f"r{i}", free_port())
            b.home.mkdir()
            if self.proxies is not None:
                b.replication_port = free_port()
                b.proxy_port = self.proxies.add(i, b.replication_port)
            self._write(b, self._broker_props(b))
            if self.kraft:
                self._format(b)
        if self.kraft:
            self._spawn(ctl)
        else:
            self._spawn_zookeeper(self.nodes["zookeeper"])
            self._spawn(ctl)
            self.wait_listening(ctl)
            time.sleep(1.0)                     # its ZooKeeper session and /controller before any replica's
        for b in self.brokers():
            self._spawn(b)
        for b in self.brokers():
            self.wait_listening(b)
        self._say(f"{self.replicas} brokers of Kafka {self.release.version} up in {time.monotonic() - t0:.1f} s")

    def close(self) -> None:
        """Stop every process this cluster started (SIGCONT first, then SIGKILL of its group), and
        the proxies."""
        for node in self.nodes.values():
            self._kill_group(node)
        if self.proxies is not None:
            self.proxies.close()
        if self.root is not None and not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    # ------------------------------------------------------------ faults and operator actions

    def kill(self, r: int) -> None:
        """crash: SIGKILL; the page cache, and so every written byte, survives."""
        self._kill_group(self.broker(r))

    def terminate(self, r: int, timeout: float = 60.0) -> None:
        """controlled shutdown: SIGTERM, and wait for the broker to leave (KafkaServer.controlledShutdown)."""
        b = self.broker(r)
        if not b.running:
            return
        self.resume(r)
        b.proc.send_signal(signal.SIGTERM)
        try:
            b.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise ClusterError(f"{b.name} did not finish its controlled shutdown in {timeout:.0f} s")

    def pause(self, r: int) -> None:
        b = self.broker(r)
        if b.running and not b.paused:
            os.killpg(b.proc.pid, signal.SIGSTOP)
            b.paused = True

    def resume(self, r: int) -> None:
        b = self.broker(r)
        if b.running and b.paused:
            os.killpg(b.proc.pid, signal.SIGCONT)
        b.paused = False

    def restart(self, r: int) -> None:
        b = self.broker(r)
        if b.running:
            raise ClusterError(f"{b.name} is still running")
        self._spawn(b)

    def power_fail(self, r: int, cut) -> int:
        """SIGKILL, then the partition's log cut back to the recovery point Kafka checkpointed
        (``cut(partition_dir, offset)``); returns that offset. A broker that never flushed has
        recovery point 0: its whole log was in the page cache only."""
        from . import disk
        self.kill(r)
        b = self.broker(r)
        point = disk.offset_checkpoint(b.data / "recovery-point-offset-checkpoint").get((TOPIC, 0), 0)
        if b.partition_dir.exists():
            cut(b.partition_dir, point)
        (b.data / ".kafka_cleanshutdown").unlink(missing_ok=True)
        return point

    def lose_disk(self, r: int) -> None:
        """SIGKILL, the log directory wiped; under KRaft formatted again before the broker may
        start (from 3.7 with a new directory id), as an operator replacing a disk must."""
        self.kill(r)
        b = self.broker(r)
        shutil.rmtree(b.data, ignore_errors=True)
        if self.kraft:
            self._format(b)

    # ------------------------------------------------------------ processes

    def _jvm(self, node: Node, main: str, *args: str) -> List[str]:
        opts = ["-Xmx384m", "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
                f"-Dkafka.logs.dir={node.home / 'logs'}"]
        opts += self._log_config(node)
        if self.release.key() < (1, 0):
            # 0.10-0.11 unmap index files through sun.nio.ch.DirectBuffer (fixed in 1.0, KAFKA-5915)
            opts += ["--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
                     "--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED"]
        return [self.java, *opts, "-cp", f"{self.lib}/*", main, *args]

    def _log_config(self, node: Node) -> List[str]:
        logs = node.home / "logs"
        logs.mkdir(exist_ok=True)
        if _log4j2(self.lib):
            path = node.home / "log4j2.properties"
            path.write_text(LOG4J2.format(file=logs / "server.log"))
            return [f"-Dlog4j2.configurationFile={path}"]
        path = node.home / "log4j.properties"
        path.write_text(LOG4J1.format(file=logs / "server.log"))
        return [f"-Dlog4j.configuration=file:{path}"]

    def _spawn(self, node: Node) -> None:
        props = node.home / "server.properties"
        self._popen(node, self._jvm(node, "kafka.Kafka", str(props)))

    def _spawn_zookeeper(self, node: Node) -> None:
        (node.home / "data").mkdir(exist_ok=True)
        cmd = self._jvm(node, "org.apache.zookeeper.server.ZooKeeperServerMain", str(node.port),
                        str(node.home / "data"), "500")
        cmd.insert(1, "-Dzookeeper.admin.enableServer=false")
        self._popen(node, cmd)
        self.wait_listening(node)

    def _popen(self, node: Node, cmd: List[str]) -> None:
        node.starts += 1
        out = open(node.home / f"stdout.{node.starts}.log", "wb")
        node.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     cwd=node.home, start_new_session=True, preexec_fn=_die_with_parent)
        out.close()
        node.paused = False

    def _kill_group(self, node: Node) -> None:
        if node.proc is None:
            return
        if node.proc.poll() is None:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.killpg(node.proc.pid, sig)
                except ProcessLookupError:
                    pass
        try:
            node.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        node.paused = False

    def wait_listening(self, node: Node, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if node.proc is not None and node.proc.poll() is not None:
                raise ClusterError(f"{node.name} exited with {node.proc.returncode} at start; "
                                   f"see {node.home}/stdout.{node.starts}.log{_tail(node)}")
            try:
                with socket.create_connection(("127.0.0.1", node.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        raise ClusterError(f"{node.name} did not listen on 127.0.0.1:{node.port} within {timeout:.0f} s")

    def _format(self, node: Node) -> None:
        """KRaft storage format (StorageTool), with the ELR feature where the run asks for it."""
        cmd = self._jvm(node, "kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c",
                        str(node.home / "server.properties"), "--ignore-formatted")
        if self.elr is not None and self.release.key() >= (4, 0):
            cmd += ["--feature", f"eligible.leader.replicas.version={int(self.elr)}"]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=node.home, stdin=subprocess.DEVNULL,
                              timeout=120, preexec_fn=_die_with_parent)
        if done.returncode != 0:
            last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise ClusterError(f"formatting {node.name}'s storage failed: {last[0]}")

    # ------------------------------------------------------------ configuration

    def _write(self, node: Node, props: Dict[str, object]) -> None:
        text = "".join(f"{k}={v}\n" for k, v in props.items())
        (node.home / "server.properties").write_text(text)

    def _controller_props(self, ctl: Node) -> Dict[str, object]:
        t = self.timing
        return {
            "process.roles": "controller", "node.id": CONTROLLER_ID,
            "controller.quorum.voters": f"{CONTROLLER_ID}@127.0.0.1:{ctl.port}",
            "listeners": f"CONTROLLER://127.0.0.1:{ctl.port}", "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": ctl.data,
            "broker.session.timeout.ms": t.session, "broker.heartbeat.interval.ms": t.heartbeat,
            "unclean.leader.election.enable": str(self.unclean_election).lower(),
            "min.insync.replicas": self.min_isr,
            "auto.leader.rebalance.enable": "false",
        }

    def _broker_props(self, b: Node) -> Dict[str, object]:
        t = self.timing
        listeners, advertised, replication = f"PLAINTEXT://127.0.0.1:{b.port}", f"PLAINTEXT://127.0.0.1:{b.port}", "PLAINTEXT"
        if b.replication_port:
            # followers reach a leader at the address it advertises for the inter-broker listener:
            # the proxy's port; clients keep PLAINTEXT (Metadata answers per listener, KIP-103)
            listeners += f",REPLICATION://127.0.0.1:{b.replication_port}"
            advertised += f",REPLICATION://127.0.0.1:{b.proxy_port or b.replication_port}"
            replication = "REPLICATION"
        props: Dict[str, object] = {
            "listeners": listeners,
            "advertised.listeners": advertised,
            "inter.broker.listener.name": replication,
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT",
            "log.dirs": b.data,
            "num.partitions": 1, "default.replication.factor": self.replicas,
            "offsets.topic.replication.factor": 1, "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1,
            "auto.create.topics.enable": "false",
            "auto.leader.rebalance.enable": "false",
            "unclean.leader.election.enable": str(self.unclean_election).lower(),
            "min.insync.replicas": self.min_isr,
            "controlled.shutdown.enable": "true",
            "replica.lag.time.max.ms": t.lag,
            "replica.high.watermark.checkpoint.interval.ms": t.hw_checkpoint,
            "replica.fetch.wait.max.ms": 100,
            "replica.fetch.backoff.ms": 100,
            # a Fetch the proxy holds must never trip a timeout by accident: the fetcher's
            # NetworkClient times a request out after request.timeout.ms (ReplicaFetcherBlockingSend
            # @0.11.0.3, BrokerBlockingSender @3.9.0: brokerConfig.requestTimeoutMs, 30 s by
            # default); replica.socket.timeout.ms bounds only its connecting (awaitReady)
            "replica.socket.timeout.ms": 300000 if b.proxy_port else 5000,
            "request.timeout.ms": 300000 if b.proxy_port else 30000,
            "group.initial.rebalance.delay.ms": 0,
            "log.flush.offset.checkpoint.interval.ms": 60000,   # the recovery point moves on flushes only
        }
        if self.kraft:
            ctl = self.nodes["controller"]
            props.update({
                "process.roles": "broker", "node.id": b.node_id,
                "controller.quorum.voters": f"{CONTROLLER_ID}@127.0.0.1:{ctl.port}",
                "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT",
                "broker.heartbeat.interval.ms": t.heartbeat,
                "broker.session.timeout.ms": t.session,
            })
        else:
            zk = self.nodes["zookeeper"]
            props.update({
                "broker.id": b.node_id, "zookeeper.connect": f"127.0.0.1:{zk.port}",
                "zookeeper.session.timeout.ms": t.session,
                "zookeeper.connection.timeout.ms": 30000,
            })
        return props


def _cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (Uuid.toString), never
    starting with "-" (``Uuid.randomUuid`` draws again then: a command line would read it as an
    option, and the storage tool refuses ``-t -xyz``)."""
    import base64
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _log4j2(lib: Path) -> bool:
    return any(p.name.startswith("log4j-core-2") for p in Path(lib).glob("log4j-core-*.jar"))


def _tail(node: Node, lines: int = 3) -> str:
    try:
        text = (node.home / f"stdout.{node.starts}.log").read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return (": " + " | ".join(text[-lines:])) if text else ""


LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.zk.name = org.apache.zookeeper
logger.zk.level = WARN
"""

LOG4J1 = """\
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={file}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=WARN
"""
