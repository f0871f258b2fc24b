"""The replication proxy: Kafka's replication traffic between brokers, on a socket the harness owns.

Each broker gets a listener of its own for replication (``REPLICATION``, the
``inter.broker.listener.name``) on a private port and advertises, for that listener, the port of
its proxy instead: a follower's fetcher reaches its leader through the leader's proxy, while
clients keep the ``PLAINTEXT`` listener and never pass through it. The proxy parses Kafka's
frames (``NetworkClient`` / ``RequestHeader``: an int32 size, then for a request ``api_key``
int16, ``api_version`` int16, ``correlation_id`` int32; a response starts with the correlation id
alone, so the proxy keeps the correlation ids of each connection's requests). Everything passes at
once except, while the proxy is *gated*, the replication messages of the model: Fetch (api key 1)
and OffsetsForLeaderEpoch (23), requests and their responses. Those wait, each in its
connection's order, until the harness releases them (the model's ``leader_handle_fetch`` releases
a request, ``follower_handle_fetch`` its response) or drops the connection (a network fault:
the follower sees a disconnection and, from 1.1, starts a new fetch session).

A Fetch request already sent outlives its sender when the harness asks for it (``keep_stale``):
the model's stale request (spec/actions ``_abandon``), bytes still on their way to the leader when
the follower's process or fetcher went away. The proxy keeps it, with the leader's side of the
connection open, until ``leader_handle_stale_fetch`` delivers it; the leader's answer has nobody
to go to, and the connection closes.

Which follower a connection belongs to is read from the kernel: the peer's port on 127.0.0.1 is a
socket of exactly one process (``/proc/net/tcp*`` and ``/proc/PID/fd``), and the harness knows
which broker each process is. Linux only; the request itself names the follower in a field that
moved between releases (Fetch ``replica_id`` up to v14, a tagged field from v15; no field at all
in OffsetsForLeaderEpoch before v3), and the fetcher's client id names the leader before 3.0.

ISR changes (ZooKeeper writes before 2.7, AlterIsr/AlterPartition after), LeaderAndIsr and KRaft
metadata do not pass through this proxy's gate: the harness awaits them.

>>> a = Frame("request", FETCH, 12, 7, b"", follower=1, leader=0)
>>> a
Fetch request r1->r0 #7
>>> Frame("response", OFFSETS_FOR_LEADER_EPOCH, 3, 9, b"", follower=1, leader=0)
OffsetsForLeaderEpoch response r0->r1 #9
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional

FETCH = 1
OFFSETS_FOR_LEADER_EPOCH = 23
GATED = {FETCH: "Fetch", OFFSETS_FOR_LEADER_EPOCH: "OffsetsForLeaderEpoch"}

REQUEST, RESPONSE = "request", "response"


class ProxyError(Exception):
    """A message the harness waited for did not come (one line)."""


@dataclass(eq=False)
class Frame:
    """One Kafka message held by the proxy, in the model's words: a ``request`` goes from the
    follower to the leader, a ``response`` back."""
    direction: str
    api_key: int
    api_version: int
    correlation_id: int
    data: bytes = field(repr=False)
    follower: Optional[int] = None
    leader: int = -1
    link: Optional["Link"] = field(default=None, repr=False)   # the connection it travels on
    released: threading.Event = field(default_factory=threading.Event, repr=False)
    dropped: bool = False
    orphan: bool = False          # its sender has gone: delivered only as a stale request

    @property
    def name(self) -> str:
        return GATED.get(self.api_key, f"api {self.api_key}")

    def __repr__(self) -> str:
        f = "?" if self.follower is None else f"r{self.follower}"
        a, b = (f, f"r{self.leader}") if self.direction == REQUEST else (f"r{self.leader}", f)
        return f"{self.name} {self.direction} {a}->{b} #{self.correlation_id}"


def read_frame(sock: socket.socket) -> Optional[bytes]:
    """One size-prefixed frame (the size included), or None at the end of the stream."""
    head = _read_exactly(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    body = _read_exactly(sock, size)
    return None if body is None else head + body


def _read_exactly(sock: socket.socket, n: int) -> Optional[bytes]:
    chunks, got = [], 0
    while got < n:
        try:
            chunk = sock.recv(min(n - got, 1 << 16))
        except OSError:
            return None
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def request_header(frame: bytes):
    """``(api_key, api_version, correlation_id)`` of a size-prefixed request frame.

    >>> request_header(struct.pack(">ihhi", 8, 1, 12, 7))
    (1, 12, 7)
    """
    return struct.unpack(">hhi", frame[4:12])


def response_correlation_id(frame: bytes) -> int:
    return struct.unpack(">i", frame[4:8])[0]


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether the other end closed ``sock`` (it reads as the end of the stream; bytes still to
    read do not count: they wait their turn)."""
    import select
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def socket_owner(port: int, pids: Dict[int, int], proc: str = "/proc") -> Optional[int]:
    """The key in ``pids`` (broker id -> process id) of the process that owns the TCP socket bound
    to local ``port`` on the loopback, or None (not one of them, or gone already)."""
    inodes = set()
    for table in ("net/tcp", "net/tcp6"):
        try:
            lines = open(f"{proc}/{table}").read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) > 9 and int(cols[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(cols[9])
    wanted = {f"socket:[{i}]" for i in inodes if i != "0"}
    if not wanted:
        return None
    for key, pid in pids.items():
        try:
            fds = os.listdir(f"{proc}/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"{proc}/{pid}/fd/{fd}") in wanted:
                    return key
            except OSError:
                continue
    return None


class Link:
    """One connection through a proxy: ``client`` the follower's side, ``server`` the leader's."""

    def __init__(self, proxy: "Proxy", client: socket.socket, server: socket.socket, follower: Optional[int]):
        self.proxy, self.client, self.server, self.follower = proxy, client, server, follower
        try:
            self.port = client.getpeername()[1]         # the follower's side, as brokers' logs name it
        except OSError:
            self.port = 0
        self.requests: Dict[int, tuple] = {}       # correlation id -> (api_key, api_version)
        self.closed = threading.Event()
        self.orphaned = False                      # the follower's side is gone; a stale request waits
        self.threads = [threading.Thread(target=self._pump, args=(REQUEST,), daemon=True,
                                         name=f"hwcheck-proxy-r{proxy.leader}-up"),
                        threading.Thread(target=self._pump, args=(RESPONSE,), daemon=True,
                                         name=f"hwcheck-proxy-r{proxy.leader}-down")]

    def __repr__(self) -> str:
        f = "?" if self.follower is None else f"r{self.follower}"
        return f"link {f}->r{self.proxy.leader} (port {self.port})"

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def _pump(self, direction: str) -> None:
        src, dst = (self.client, self.server) if direction == REQUEST else (self.server, self.client)
        delivered_stale = False
        try:
            while not self.closed.is_set():
                data = read_frame(src)
                if data is None:
                    side = "follower" if direction == REQUEST else "leader"
                    self.proxy.owner.note(f"the {side}'s side of {self!r} ended")
                    break
                frame = self._frame(direction, data)
                if direction == RESPONSE and self.orphaned:
                    break                           # the answer to a stale request: nobody to read it
                if frame is not None and not self.proxy.owner.hold(frame):
                    break                           # dropped, or the proxy closes
                dst.sendall(data)
                if frame is not None and frame.orphan:
                    delivered_stale = True          # the other pump closes once the leader answers
                    break
        except OSError:
            pass
        finally:
            if not delivered_stale:
                self.close()

    def orphan(self, frame: Frame) -> None:
        """The follower's side is gone (or is closed here); ``frame``, a held Fetch request, waits on
        for the leader as a stale request."""
        frame.orphan, self.orphaned = True, True
        try:
            self.client.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _frame(self, direction: str, data: bytes) -> Optional[Frame]:
        """The frame to gate, or None to pass it at once."""
        if direction == REQUEST:
            key, version, corr = request_header(data)
            self.requests[corr] = (key, version)
        else:
            corr = response_correlation_id(data)
            key, version = self.requests.pop(corr, (-1, -1))
        if key not in GATED:
            return None
        return Frame(direction, key, version, corr, data, self.follower, self.proxy.leader, self)

    def close(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        for s in (self.client, self.server):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        self.proxy.owner.forget(self)


class Proxy:
    """The proxy in front of one broker's replication listener (``leader``: that broker's id)."""

    def __init__(self, owner: "Proxies", leader: int, target_port: int):
        self.owner, self.leader, self.target_port = owner, leader, target_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._accept, daemon=True, name=f"hwcheck-proxy-r{leader}")
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, (_, peer_port) = self.listener.accept()
            except OSError:
                return                                  # closed
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
                server.settimeout(None)
            except OSError:
                client.close()                          # the broker is down: as a refused connection
                continue
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            link = Link(self, client, server, self.owner.identify(peer_port))
            if not self.owner.adopt(link):
                link.close()
                return
            link.start()

    def close(self) -> None:
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()


class Proxies:
    """Every broker's proxy, and the harness's commands: gate, wait for a held message, release
    it, drop a connection. Use as a context manager; closing releases nothing: it closes every
    connection (the brokers see a network fault) and stops every thread.

    ``pids()`` returns broker id -> the process id of that broker now (to tell followers apart).
    """

    def __init__(self, pids: Callable[[], Dict[int, int]], journal: Optional[Path] = None):
        self.pids = pids
        # evidence: every connection opened and closed, every message held, released or dropped,
        # one line each with the time (the brokers' logs say what they did with them)
        self.journal = journal
        self._journal_lock = threading.Lock()
        self.proxies: Dict[int, Proxy] = {}
        self.links: List[Link] = []
        self.held: List[Frame] = []
        self.gated = False
        self.keep_stale = False       # a Fetch request whose sender goes away stays, for a stale delivery
        self.closing = False
        self.cond = threading.Condition()

    def __enter__(self) -> "Proxies":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def add(self, broker: int, target_port: int) -> int:
        """A proxy for ``broker``'s replication listener on ``target_port``; returns the proxy's port."""
        proxy = self.proxies[broker] = Proxy(self, broker, target_port)
        return proxy.port

    def identify(self, peer_port: int) -> Optional[int]:
        for _ in range(20):                              # the connecting process's socket is there at once
            who = socket_owner(peer_port, self.pids())
            if who is not None:
                return who
            time.sleep(0.01)
        return None

    def note(self, text: str) -> None:
        if self.journal is None:
            return
        stamp = time.strftime("%H:%M:%S", time.localtime()) + f".{int(time.time() * 1000) % 1000:03d}"
        try:
            with self._journal_lock, open(self.journal, "a") as out:
                out.write(f"{stamp} {text}\n")
        except OSError:
            pass                # the run's folder already removed: a pump's last words after the cluster stopped

    # ------------------------------------------------------------ the pumps' side

    def adopt(self, link: Link) -> bool:
        with self.cond:
            if self.closing:
                return False
            self.links.append(link)
        self.note(f"open {link!r}")
        return True

    def forget(self, link: Link) -> None:
        self.note(f"close {link!r}")
        with self.cond:
            if link in self.links:
                self.links.remove(link)
            for frame in [f for f in self.held if f.link is link]:
                frame.dropped = True
                frame.released.set()
                self.held.remove(frame)
            self.cond.notify_all()

    def hold(self, frame: Frame) -> bool:
        """Called by a pump: block while the proxy is gated until ``frame`` is released (True) or
        its connection dropped (False)."""
        with self.cond:
            if not self.gated:
                return not self.closing
            self.held.append(frame)
            self.cond.notify_all()
        self.note(f"hold {frame!r} on {frame.link!r}")
        sender = frame.link.client if frame.direction == REQUEST else frame.link.server
        while not frame.released.wait(0.05):
            if not frame.orphan and _closed_by_peer(sender):
                if self.orphan(frame):
                    continue
                # the sender gave up the connection (a fetcher stopped, a broker died): what it
                # sent on it dies with it, as on a real network
                self.note(f"sender closed {frame.link!r}: {frame!r} dies with it")
                frame.link.close()
                return False
        self.note(("dropped " if frame.dropped else "pass ") + repr(frame))
        return not frame.dropped

    def _may_orphan(self, frame: Frame) -> bool:
        """A held Fetch request outlives its sender when asked (``keep_stale``): one per follower,
        as the model keeps one stale request."""
        with self.cond:
            return (self.keep_stale and frame.direction == REQUEST and frame.api_key == FETCH
                    and not any(f.orphan and f.follower == frame.follower for f in self.held))

    # ------------------------------------------------------------ the harness's side

    def gate(self, on: bool = True) -> None:
        """Hold every Fetch and OffsetsForLeaderEpoch from now on (``on``), or pass them all and
        release what is held."""
        with self.cond:
            self.gated = on
            if not on:
                for frame in self.held:
                    frame.dropped = frame.orphan        # a stale request nobody delivered is lost
                    frame.released.set()
                self.held.clear()
            self.cond.notify_all()

    def wait_held(self, direction: str, follower: int, leader: int, api_key: Optional[int] = None,
                  timeout: float = 30.0, after: Optional[Frame] = None, stale: bool = False) -> Frame:
        """The first held message of that kind between ``follower`` and ``leader`` (a response to
        ``after`` if given; with ``stale``, a request whose sender has gone), waiting up to
        ``timeout`` seconds for it."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for frame in self.held:
                    if (frame.direction == direction and frame.follower == follower and frame.leader == leader
                            and frame.orphan == stale and (api_key is None or frame.api_key == api_key)
                            and (after is None or (frame.correlation_id == after.correlation_id
                                                   and frame.link is after.link))):
                        return frame
                left = deadline - time.monotonic()
                if left <= 0:
                    kind = GATED.get(api_key, "replication") if api_key is not None else "replication"
                    kind = f"stale {kind}" if stale else kind
                    a, b = (follower, leader) if direction == REQUEST else (leader, follower)
                    held = ", ".join(map(repr, self.held)) or "nothing"
                    raise ProxyError(f"no {kind} {direction} r{a}->r{b} reached the proxy in {timeout:.0f} s "
                                     f"(held: {held})")
                self.cond.wait(min(left, 0.2))

    def release(self, frame: Frame) -> None:
        with self.cond:
            if frame in self.held:
                self.held.remove(frame)
            frame.released.set()
            self.cond.notify_all()

    def drop(self, follower: int, leader: int) -> int:
        """Close every connection from ``follower`` to ``leader``'s proxy, with what it held, but the
        one that keeps the follower's stale request (``orphan``): that request is the model's, and a
        later step delivers it or ungating loses it; returns how many were closed."""
        with self.cond:
            links = [l for l in self.links
                     if l.follower == follower and l.proxy.leader == leader and not l.orphaned]
        for link in links:
            link.close()
        return len(links)

    def orphan(self, frame: Frame) -> bool:
        """Close the follower's side of ``frame``'s connection and keep ``frame``, a held Fetch
        request, for the leader as a stale request (the follower sees a disconnection), if it may
        (``_may_orphan``); whether it did."""
        if not self._may_orphan(frame):
            return False
        frame.link.orphan(frame)
        return True

    def holding(self) -> List[Frame]:
        with self.cond:
            return list(self.held)

    def close(self) -> None:
        with self.cond:
            self.closing = True
            links = list(self.links)
            for frame in self.held:
                frame.dropped = True
                frame.released.set()
            self.held.clear()
        for proxy in self.proxies.values():
            proxy.close()
        for link in links:
            link.close()
        for proxy in self.proxies.values():
            proxy.thread.join(2)
        for link in links:
            for t in link.threads:
                t.join(2)
