"""The replication proxy (cluster/proxy.py) against a loopback server that speaks Kafka's framing:
frames pass, Fetch and OffsetsForLeaderEpoch wait while gated until released, a drop is a closed
connection, and closing leaves no thread or listener behind. No broker is started here."""

import os
import socket
import struct
import threading
import time

import pytest

from hwcheck.cluster.proxy import (FETCH, OFFSETS_FOR_LEADER_EPOCH, REQUEST, RESPONSE, Proxies, ProxyError,
                                   read_frame, socket_owner)

METADATA = 3


def request(api_key: int, corr: int, body: bytes = b"x") -> bytes:
    payload = struct.pack(">hhi", api_key, 0, corr) + body
    return struct.pack(">i", len(payload)) + payload


class Broker:
    """Answers each request with a response of the same correlation id; counts what it saw."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.seen = []
        self.conns = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        while True:
            frame = read_frame(conn)
            if frame is None:
                return
            key, _, corr = struct.unpack(">hhi", frame[4:12])
            self.seen.append((key, corr))
            body = struct.pack(">i", corr) + b"answer"
            conn.sendall(struct.pack(">i", len(body)) + body)

    def close(self):
        self.listener.close()
        for c in self.conns:
            c.close()


@pytest.fixture
def rig():
    broker = Broker()
    with Proxies(lambda: {1: os.getpid()}) as proxies:
        port = proxies.add(0, broker.port)
        client = socket.create_connection(("127.0.0.1", port), timeout=5)
        yield broker, proxies, client
        client.close()
    broker.close()


def test_frames_pass_and_other_apis_are_never_held(rig):
    broker, proxies, client = rig
    proxies.gate()
    client.sendall(request(METADATA, 5))
    assert struct.unpack(">i", read_frame(client)[4:8]) == (5,)
    assert broker.seen == [(METADATA, 5)] and proxies.holding() == []


def test_a_gated_fetch_waits_for_each_release(rig):
    broker, proxies, client = rig
    proxies.gate()
    client.sendall(request(FETCH, 7))
    held = proxies.wait_held(REQUEST, 1, 0, FETCH, timeout=5)
    assert repr(held) == "Fetch request r1->r0 #7"
    assert broker.seen == []                       # the leader has not handled it
    proxies.release(held)
    answer = proxies.wait_held(RESPONSE, 1, 0, FETCH, timeout=5, after=held)
    assert broker.seen == [(FETCH, 7)]
    client.settimeout(0.3)
    with pytest.raises(socket.timeout):
        client.recv(1)                             # the follower has not got it
    proxies.release(answer)
    client.settimeout(5)
    assert read_frame(client)[8:] == b"answer"


def test_an_epoch_request_is_gated_too_and_ungating_releases_everything(rig):
    broker, proxies, client = rig
    proxies.gate()
    client.sendall(request(OFFSETS_FOR_LEADER_EPOCH, 9))
    proxies.wait_held(REQUEST, 1, 0, OFFSETS_FOR_LEADER_EPOCH, timeout=5)
    proxies.gate(False)
    assert struct.unpack(">i", read_frame(client)[4:8]) == (9,)


def test_a_drop_closes_the_followers_connection(rig):
    broker, proxies, client = rig
    proxies.gate()
    client.sendall(request(FETCH, 1))
    held = proxies.wait_held(REQUEST, 1, 0, FETCH, timeout=5)
    assert proxies.drop(1, 0) == 1
    assert held.dropped
    assert client.recv(1) == b""                   # the follower sees the connection closed
    assert broker.seen == []


def test_waiting_for_a_message_that_never_comes_says_what_is_held(rig):
    _, proxies, client = rig
    proxies.gate()
    client.sendall(request(FETCH, 3))
    proxies.wait_held(REQUEST, 1, 0, FETCH, timeout=5)
    with pytest.raises(ProxyError, match=r"no Fetch response r0->r1 .* \(held: Fetch request r1->r0 #3\)"):
        proxies.wait_held(RESPONSE, 1, 0, FETCH, timeout=0.3)


def test_the_follower_is_the_process_that_owns_the_peer_socket():
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        peer, _ = server.accept()
        port = client.getsockname()[1]
        assert socket_owner(port, {4: os.getpid()}) == 4
        assert socket_owner(port, {4: 1}) is None
        client.close()
        peer.close()


def test_closing_leaves_no_thread_and_no_listener():
    broker = Broker()
    proxies = Proxies(lambda: {1: os.getpid()})
    port = proxies.add(0, broker.port)
    client = socket.create_connection(("127.0.0.1", port), timeout=5)
    proxies.gate()
    client.sendall(request(FETCH, 2))
    proxies.wait_held(REQUEST, 1, 0, FETCH, timeout=5)
    proxies.close()
    assert client.recv(1) == b""
    assert not [t for t in threading.enumerate() if t.name.startswith("hwcheck-proxy") and t.is_alive()]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1)
    client.close()
    broker.close()


def test_a_held_request_dies_with_the_connection_its_sender_closed(rig):
    broker, proxies, client = rig
    proxies.gate()
    client.sendall(request(FETCH, 4))
    held = proxies.wait_held(REQUEST, 1, 0, FETCH, timeout=5)
    client.close()                                 # the follower's fetcher gives the connection up
    for _ in range(100):
        if not proxies.holding():
            break
        threading.Event().wait(0.02)
    assert proxies.holding() == [] and held.link.closed.is_set()
    assert broker.seen == []                       # never delivered


def test_a_stale_fetch_outlives_its_sender_and_reaches_the_leader_on_command(rig):
    """``keep_stale``: a held Fetch whose sender closes stays (the model's stale request, one per
    follower) until delivered; the leader answers nobody and the connection closes."""
    broker, proxies, client = rig
    proxies.gate()
    proxies.keep_stale = True
    client.sendall(request(FETCH, 4))
    held = proxies.wait_held(REQUEST, 1, 0, FETCH, timeout=5)
    client.close()                                 # the follower's process goes away
    stale = proxies.wait_held(REQUEST, 1, 0, FETCH, timeout=5, stale=True)
    assert stale is held and broker.seen == []
    with pytest.raises(ProxyError, match="no Fetch request r1->r0"):
        proxies.wait_held(REQUEST, 1, 0, FETCH, timeout=0.2)       # a live request is another thing
    proxies.release(stale)
    assert held.link.closed.wait(5) and broker.seen == [(FETCH, 4)]
    assert proxies.holding() == []


def test_the_harness_orphans_a_held_fetch_and_the_follower_sees_a_disconnection(rig):
    broker, proxies, client = rig
    proxies.gate()
    proxies.keep_stale = True
    client.sendall(request(FETCH, 6))
    held = proxies.wait_held(REQUEST, 1, 0, FETCH, timeout=5)
    proxies.orphan(held)                           # before 1.1 the fetcher cannot stop by itself
    assert client.recv(1) == b""
    assert proxies.wait_held(REQUEST, 1, 0, FETCH, timeout=5, stale=True) is held
    proxies.gate(False)                            # nobody delivered it: it is lost
    assert held.link.closed.wait(5) and broker.seen == [] and held.dropped


def test_dropping_a_followers_connections_keeps_its_stale_fetch(rig):
    """The follower's side of a connection closed with a Fetch held (the stale request, kept), and
    the follower sent a new Fetch on a new connection: dropping the follower's connections closes
    the new one only. The stale request is the model's, delivered or lost by a later step (a
    0.11.0.3 reproduction lost it to a controlled shutdown's drop)."""
    broker, proxies, client = rig
    proxies.gate()
    proxies.keep_stale = True
    client.sendall(request(FETCH, 3))
    stale = proxies.wait_held(REQUEST, 1, 0, FETCH, timeout=5)
    client.close()                                 # the fetcher gives the connection up
    assert proxies.wait_held(REQUEST, 1, 0, FETCH, timeout=5, stale=True) is stale
    again = socket.create_connection(("127.0.0.1", stale.link.proxy.port), timeout=5)
    again.sendall(request(FETCH, 4))
    live = proxies.wait_held(REQUEST, 1, 0, FETCH, timeout=5)
    assert proxies.drop(1, 0) == 1
    assert live.dropped and again.recv(1) == b""
    assert proxies.holding() == [stale] and not stale.dropped
    proxies.release(stale)
    assert stale.link.closed.wait(5) and broker.seen == [(FETCH, 3)]
    again.close()


def test_the_journal_says_what_was_held_and_released_and_when_a_side_closed(tmp_path):
    broker = Broker()
    journal = tmp_path / "proxy.log"
    with Proxies(lambda: {1: os.getpid()}, journal=journal) as proxies:
        client = socket.create_connection(("127.0.0.1", proxies.add(0, broker.port)), timeout=5)
        proxies.gate()
        client.sendall(request(FETCH, 7))
        proxies.release(proxies.wait_held(REQUEST, 1, 0, FETCH, timeout=5))
        proxies.release(proxies.wait_held(RESPONSE, 1, 0, FETCH, timeout=5))
        assert read_frame(client)[8:] == b"answer"
        client.close()
        deadline = time.monotonic() + 5
        while "close link" not in journal.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
    broker.close()
    lines = [line.split(" ", 1)[1] for line in journal.read_text().splitlines()]
    port = lines[0].rsplit("port ", 1)[1].rstrip(")")
    assert lines[:5] == [f"open link r1->r0 (port {port})",
                         f"hold Fetch request r1->r0 #7 on link r1->r0 (port {port})", "pass Fetch request r1->r0 #7",
                         f"hold Fetch response r0->r1 #7 on link r1->r0 (port {port})", "pass Fetch response r0->r1 #7"]
    assert f"the follower's side of link r1->r0 (port {port}) ended" in lines
    assert f"close link r1->r0 (port {port})" in lines
