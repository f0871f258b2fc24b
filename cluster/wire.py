"""A minimal Kafka protocol client for observation: what a broker's metadata says of one partition.

One TCP connection, three requests, nothing else: ApiVersions v0 (key 18) to learn what the broker
speaks, then DescribeTopicPartitions v0 (key 75, Kafka 3.7+, KIP-966) which carries the eligible
leader replicas, else Metadata v7 (key 3, Kafka 2.1 to 4.x) which carries the leader epoch but no
ELR. Field layouts follow the message definitions in kafka-clients
(``common/message/*Request.json``/``*Response.json`` @4.1.1).

Framing (``NetworkClient`` / ``RequestHeader`` @4.1.1): every message is an int32 size then the
bytes. A request header is v1 (api key int16, api version int16, correlation id int32, client id as
a nullable int16-length string) or, for a flexible version, v2: the same with tagged fields
appended -- the client id stays a non-compact string (``"flexibleVersions": "none"``). A response
header is v0 (correlation id) or, for a flexible version, v1 (with tagged fields); ApiVersions
responses always carry header v0 so that a client can read them before it knows what the broker
speaks (``ApiKeys.responseHeaderVersion`` @4.1.1). Flexible versions write strings and arrays
"compact" (unsigned-varint length + 1, 0 for null), nullable structs with an int8 presence byte
(-1 null), and end every struct with tagged fields (a count, then tag, size, bytes).
"""

from __future__ import annotations

import socket
import struct
from typing import Callable, NamedTuple, TypeVar

T = TypeVar("T")

METADATA = 3
API_VERSIONS = 18
DESCRIBE_TOPIC_PARTITIONS = 75

CLIENT_ID = "hwcheck"

# The few codes an observer meets (``org.apache.kafka.common.protocol.Errors`` @4.1.1).
ERRORS = {
    -1: "UNKNOWN_SERVER_ERROR", 3: "UNKNOWN_TOPIC_OR_PARTITION", 5: "LEADER_NOT_AVAILABLE",
    6: "NOT_LEADER_OR_FOLLOWER", 7: "REQUEST_TIMED_OUT", 9: "REPLICA_NOT_AVAILABLE",
    17: "INVALID_TOPIC_EXCEPTION", 29: "TOPIC_AUTHORIZATION_FAILED", 35: "UNSUPPORTED_VERSION",
    41: "NOT_CONTROLLER", 42: "INVALID_REQUEST", 72: "LISTENER_NOT_FOUND", 74: "FENCED_LEADER_EPOCH",
    75: "UNKNOWN_LEADER_EPOCH",
}

# Partition errors that still come with the partition's state: KRaftMetadataCache.getPartitionMetadata
# @4.1.1 answers LEADER_NOT_AVAILABLE (or LISTENER_NOT_FOUND) with leader -1 when the leader is not
# a registered broker with this listener, and REPLICA_NOT_AVAILABLE when a replica is not.
PARTITION_STATE_ERRORS = frozenset({0, 5, 9, 72})


class WireError(Exception):
    """A broker that cannot be asked, or answers with an error; the message is one line."""


def error_name(code: int) -> str:
    """``error code 3 (UNKNOWN_TOPIC_OR_PARTITION)``, or just the number for a code not listed."""
    name = ERRORS.get(code)
    return f"error code {code}" + (f" ({name})" if name else "")


class PartitionView(NamedTuple):
    """What a broker's metadata says of one partition."""
    leader: int                          # broker id, -1 none
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...] | None          # None where the API/release has no ELR
    last_known_elr: tuple[int, ...] | None
    offline: tuple[int, ...]


# --- encoding -------------------------------------------------------------------------------------

def int8(v: int) -> bytes:
    return struct.pack(">b", v)


def int16(v: int) -> bytes:
    return struct.pack(">h", v)


def int32(v: int) -> bytes:
    return struct.pack(">i", v)


def uvarint(v: int) -> bytes:
    """Unsigned varint, 7 bits a byte, low bits first (``ByteUtils.writeUnsignedVarint`` @4.1.1)."""
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def string(s: str | None) -> bytes:
    """A (nullable) string: int16 length, -1 for null, then UTF-8."""
    if s is None:
        return int16(-1)
    b = s.encode()
    return int16(len(b)) + b


def compact_string(s: str | None) -> bytes:
    """A flexible-version string: unsigned varint length + 1 (0 for null), then UTF-8."""
    if s is None:
        return uvarint(0)
    b = s.encode()
    return uvarint(len(b) + 1) + b


NO_TAGS = uvarint(0)


def request_header(api_key: int, version: int, correlation_id: int, flexible: bool) -> bytes:
    """Request header v1, or v2 (tagged fields after the still non-compact client id) for a
    flexible version (``RequestHeader.json`` @4.1.1)."""
    head = int16(api_key) + int16(version) + int32(correlation_id) + string(CLIENT_ID)
    return head + NO_TAGS if flexible else head


def api_versions_request(correlation_id: int) -> bytes:
    """ApiVersions v0: header v1 and an empty body; every broker since 0.10 answers it."""
    return request_header(API_VERSIONS, 0, correlation_id, flexible=False)


def describe_topic_partitions_request(topic: str, correlation_id: int) -> bytes:
    """DescribeTopicPartitions v0 (flexible): Topics [Name], ResponsePartitionLimit int32 (2000,
    the default), Cursor null (int8 -1), tagged fields."""
    topics = uvarint(1 + 1) + compact_string(topic) + NO_TAGS
    body = topics + int32(2000) + int8(-1) + NO_TAGS
    return request_header(DESCRIBE_TOPIC_PARTITIONS, 0, correlation_id, flexible=True) + body


def metadata_request(topic: str, correlation_id: int) -> bytes:
    """Metadata v7: Topics [Name] (int32 count), AllowAutoTopicCreation false (an observer must
    not create the topic it asks about)."""
    body = int32(1) + string(topic) + int8(0)
    return request_header(METADATA, 7, correlation_id, flexible=False) + body


# --- decoding -------------------------------------------------------------------------------------

class Reader:
    """Reads Kafka's primitive types off a response (``ByteBufferAccessor`` @4.1.1)."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise WireError(f"response ends at byte {len(self.data)}, {n} more needed at {self.pos}")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def _unpack(self, fmt: str, n: int) -> int:
        return struct.unpack(fmt, self.take(n))[0]

    def int8(self) -> int:
        return self._unpack(">b", 1)

    def int16(self) -> int:
        return self._unpack(">h", 2)

    def int32(self) -> int:
        return self._unpack(">i", 4)

    def int64(self) -> int:
        return self._unpack(">q", 8)

    def uvarint(self) -> int:
        v = shift = 0
        while True:
            b = self.take(1)[0]
            v |= (b & 0x7F) << shift
            if b < 0x80:
                return v
            shift += 7

    def string(self) -> str | None:
        n = self.int16()
        return None if n < 0 else self.take(n).decode()

    def compact_string(self) -> str | None:
        n = self.uvarint() - 1
        return None if n < 0 else self.take(n).decode()

    def array(self, item: Callable[[], T]) -> list[T] | None:
        n = self.int32()
        return None if n < 0 else [item() for _ in range(n)]

    def compact_array(self, item: Callable[[], T]) -> list[T] | None:
        n = self.uvarint() - 1
        return None if n < 0 else [item() for _ in range(n)]

    def skip_tags(self) -> None:
        """Tagged fields: a count, then per field a tag and a size; this client needs none."""
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def response_reader(data: bytes, correlation_id: int | None, flexible: bool) -> Reader:
    """A reader positioned after the response header (v0, or v1 with tagged fields)."""
    r = Reader(data)
    got = r.int32()
    if correlation_id is not None and got != correlation_id:
        raise WireError(f"correlation id {got} in response, expected {correlation_id}")
    if flexible:
        r.skip_tags()
    return r


def decode_api_versions(data: bytes, correlation_id: int | None = None) -> dict[int, tuple[int, int]]:
    """ApiVersions v0 response: ErrorCode, ApiKeys [ApiKey, MinVersion, MaxVersion]."""
    r = response_reader(data, correlation_id, flexible=False)
    error = r.int16()
    keys = r.array(lambda: (r.int16(), r.int16(), r.int16())) or []
    if error:
        raise WireError(f"ApiVersions: {error_name(error)}")
    return {k: (lo, hi) for k, lo, hi in keys}


def _partition_view(topic: str, partition: int, found: dict[int, tuple[int, PartitionView]]) -> PartitionView:
    if partition not in found:
        raise WireError(f"{topic}-{partition}: no such partition in the response ({error_name(3)})")
    error, view = found[partition]
    if error not in PARTITION_STATE_ERRORS:
        raise WireError(f"{topic}-{partition}: {error_name(error)}")
    return view


def _topic_error(topic: str, error: int) -> None:
    if error:
        raise WireError(f"{topic}: {error_name(error)}")


def decode_describe_topic_partitions(data: bytes, topic: str, partition: int = 0,
                                     correlation_id: int | None = None) -> PartitionView:
    """DescribeTopicPartitions v0 response (header v1): ThrottleTimeMs, Topics [ErrorCode, Name,
    TopicId, IsInternal, Partitions [ErrorCode, PartitionIndex, LeaderId, LeaderEpoch, ReplicaNodes,
    IsrNodes, EligibleLeaderReplicas (nullable), LastKnownElr (nullable), OfflineReplicas],
    TopicAuthorizedOperations], NextCursor (nullable struct)."""
    r = response_reader(data, correlation_id, flexible=True)
    r.int32()                                            # ThrottleTimeMs
    ints = lambda: r.compact_array(r.int32)              # noqa: E731

    def part():
        error, index, leader, epoch = r.int16(), r.int32(), r.int32(), r.int32()
        replicas, isr, elr, last_elr, offline = ints(), ints(), ints(), ints(), ints()
        r.skip_tags()
        tup = lambda xs: None if xs is None else tuple(xs)   # noqa: E731
        return index, (error, PartitionView(leader, epoch, tup(replicas), tup(isr), tup(elr), tup(last_elr),
                                            tup(offline) or ()))

    def top():
        error, name = r.int16(), r.compact_string()
        r.take(16)                                       # TopicId
        r.int8()                                         # IsInternal
        parts = r.compact_array(part) or []
        r.int32()                                        # TopicAuthorizedOperations
        r.skip_tags()
        return name, error, dict(parts)

    for name, error, parts in r.compact_array(top) or []:
        if name == topic:
            _topic_error(topic, error)
            return _partition_view(topic, partition, parts)
    raise WireError(f"{topic}: not in the response ({error_name(3)})")


def decode_metadata(data: bytes, topic: str, partition: int = 0, correlation_id: int | None = None) -> PartitionView:
    """Metadata v7 response (header v0): ThrottleTimeMs, Brokers [NodeId, Host, Port, Rack],
    ClusterId, ControllerId, Topics [ErrorCode, Name, IsInternal, Partitions [ErrorCode,
    PartitionIndex, LeaderId, LeaderEpoch, ReplicaNodes, IsrNodes, OfflineReplicas]]. No ELR."""
    r = response_reader(data, correlation_id, flexible=False)
    r.int32()                                            # ThrottleTimeMs
    r.array(lambda: (r.int32(), r.string(), r.int32(), r.string()))
    r.string()                                           # ClusterId
    r.int32()                                            # ControllerId
    ints = lambda: tuple(r.array(r.int32) or ())         # noqa: E731

    def part():
        error, index, leader, epoch = r.int16(), r.int32(), r.int32(), r.int32()
        replicas, isr, offline = ints(), ints(), ints()
        return index, (error, PartitionView(leader, epoch, replicas, isr, None, None, offline))

    def top():
        error, name = r.int16(), r.string()
        r.int8()                                         # IsInternal
        return name, error, dict(r.array(part) or [])

    for name, error, parts in r.array(top) or []:
        if name == topic:
            _topic_error(topic, error)
            return _partition_view(topic, partition, parts)
    raise WireError(f"{topic}: not in the response ({error_name(3)})")


# --- the socket -----------------------------------------------------------------------------------

def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise WireError(f"connection closed by the broker after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def exchange(sock: socket.socket, request: bytes) -> bytes:
    """Send one size-prefixed request, return the response after its int32 size."""
    sock.sendall(int32(len(request)) + request)
    (size,) = struct.unpack(">i", _recv_exactly(sock, 4))
    return _recv_exactly(sock, size)


def _connect(host: str, port: int, timeout: float) -> socket.socket:
    try:
        return socket.create_connection((host, port), timeout=timeout)
    except ConnectionRefusedError:
        raise WireError(f"connection refused by {host}:{port}") from None
    except OSError as e:
        raise WireError(f"cannot connect to {host}:{port}: {e.strerror or e}") from None


def _io(host: str, port: int, what: str, fn: Callable[[], T]) -> T:
    try:
        return fn()
    except socket.timeout:
        raise WireError(f"{what} to {host}:{port}: timed out") from None
    except OSError as e:
        raise WireError(f"{what} to {host}:{port}: {e.strerror or e}") from None


def api_versions(host: str, port: int, timeout: float = 2.0) -> dict[int, tuple[int, int]]:
    """api key -> (min, max) version the broker supports."""
    with _connect(host, port, timeout) as sock:
        return _io(host, port, "ApiVersions", lambda: decode_api_versions(exchange(sock, api_versions_request(1)), 1))


def supports(versions: dict[int, tuple[int, int]], api_key: int, version: int) -> bool:
    """Whether an ApiVersions answer covers ``version`` of ``api_key``."""
    lo, hi = versions.get(api_key, (1, 0))
    return lo <= version <= hi


def partition_view(host: str, port: int, topic: str, partition: int = 0, timeout: float = 2.0) -> PartitionView:
    """The broker's view of ``topic-partition``: DescribeTopicPartitions v0 where the broker has it
    (with ELR), else Metadata v7 (``elr``/``last_known_elr`` None). A leaderless partition (leader
    -1) is returned, not raised; a topic error raises WireError."""
    with _connect(host, port, timeout) as sock:
        def ask() -> PartitionView:
            versions = decode_api_versions(exchange(sock, api_versions_request(1)), 1)
            if supports(versions, DESCRIBE_TOPIC_PARTITIONS, 0):
                resp = exchange(sock, describe_topic_partitions_request(topic, 2))
                return decode_describe_topic_partitions(resp, topic, partition, 2)
            if not supports(versions, METADATA, 7):
                raise WireError(f"{host}:{port} speaks neither DescribeTopicPartitions v0 nor Metadata v7")
            return decode_metadata(exchange(sock, metadata_request(topic, 2)), topic, partition, 2)
        return _io(host, port, "metadata request", ask)


def decode_alive_brokers(data: bytes, correlation_id: int | None = None) -> frozenset[int]:
    """The NodeIds of a Metadata v7 response's Brokers: those the broker's metadata holds alive
    (KRaft: registered and not fenced, ``KRaftMetadataCache.getAliveBrokerNodes``)."""
    r = response_reader(data, correlation_id, flexible=False)
    r.int32()                                            # ThrottleTimeMs
    return frozenset(node for node, _host, _port, _rack in
                     r.array(lambda: (r.int32(), r.string(), r.int32(), r.string())) or [])


def alive_brokers(host: str, port: int, topic: str, timeout: float = 2.0) -> frozenset[int]:
    """The brokers that the broker at host:port holds alive (a Metadata v7 request)."""
    with _connect(host, port, timeout) as sock:
        return _io(host, port, "metadata request",
                   lambda: decode_alive_brokers(exchange(sock, metadata_request(topic, 1)), 1))


# --- leading: whether a broker has applied the LeaderAndIsr that names it -----------------------

LIST_OFFSETS = 2


def list_offsets_request(topic: str, correlation_id: int) -> bytes:
    """ListOffsets v1 (0.10.1+; 4.x still serves it, KIP-896 removed v0 only): ReplicaId -1 (a
    client), [Topic [Partition 0, Timestamp -1: the latest offset]]."""
    body = int32(-1) + int32(1) + string(topic) + int32(1) + int32(0) + struct.pack(">q", -1)
    return request_header(LIST_OFFSETS, 1, correlation_id, flexible=False) + body


def decode_list_offsets(data: bytes, correlation_id: int | None = None) -> int:
    """The error code of partition 0's answer (ListOffsets v1 response: [Topic [Partition,
    ErrorCode, Timestamp, Offset]])."""
    r = response_reader(data, correlation_id, flexible=False)
    for _ in range(r.int32()):
        r.string()
        for _ in range(r.int32()):
            r.int32()
            return r.int16()
    raise WireError("the ListOffsets response names no partition")


def leads(host: str, port: int, topic: str, timeout: float = 2.0) -> bool:
    """Whether the broker at ``port`` leads partition 0 of ``topic`` by its own state: only a leader
    answers ListOffsets to a client (``KafkaApis.handleOffsetRequestV1`` ->
    ``ReplicaManager.getLeaderReplicaIfLocal`` @0.10.2.1; ``Partition.fetchOffsetForTimestamp`` ->
    ``localLogWithEpochOrThrow(.., fetchOnlyFromLeader)`` @4.1.1), others answer
    NOT_LEADER_FOR_PARTITION or UNKNOWN_TOPIC_OR_PARTITION until they apply the LeaderAndIsr (or
    metadata record) that names them. The controller's decision, which the observer reads, comes
    earlier. A broker that cannot be asked does not lead."""
    request = list_offsets_request(topic, 1)
    try:
        with _connect(host, port, timeout) as sock:
            return _io(host, port, "ListOffsets", lambda: decode_list_offsets(exchange(sock, request), 1)) == 0
    except WireError:
        return False


OFFSETS_FOR_LEADER_EPOCH = 23
NOT_LEADER_OR_FOLLOWER = 6


def offsets_for_leader_epoch_request(topic: str, current_epoch: int, correlation_id: int) -> bytes:
    """OffsetsForLeaderEpoch v3 (2.3+; 4.x serves v2 up, KIP-896): ReplicaId -1 (a client),
    [Topic [Partition 0, CurrentLeaderEpoch, LeaderEpoch]] asking of the current epoch itself."""
    body = (int32(-1) + int32(1) + string(topic) + int32(1)
            + int32(0) + int32(current_epoch) + int32(current_epoch))
    return request_header(OFFSETS_FOR_LEADER_EPOCH, 3, correlation_id, flexible=False) + body


def decode_offsets_for_leader_epoch(data: bytes, correlation_id: int | None = None) -> int:
    """The error code of partition 0's answer (v3 response: ThrottleTimeMs, [Topic [ErrorCode,
    Partition, LeaderEpoch, EndOffset]])."""
    r = response_reader(data, correlation_id, flexible=False)
    r.int32()
    for _ in range(r.int32()):
        r.string()
        for _ in range(r.int32()):
            return r.int16()
    raise WireError("the OffsetsForLeaderEpoch response names no partition")


def follows_at(host: str, port: int, topic: str, epoch: int, timeout: float = 2.0) -> bool:
    """Whether the broker at ``port`` holds partition 0 of ``topic`` as a follower at leader epoch
    ``epoch`` by its own state: a client's OffsetsForLeaderEpoch passes the epoch check first
    (UNKNOWN_LEADER_EPOCH while the broker's epoch is older, FENCED_LEADER_EPOCH once newer), then
    only a leader answers (``Partition.lastOffsetForLeaderEpoch`` -> ``getLocalLog(..,
    requireLeader = true)`` @3.9.0): NOT_LEADER_OR_FOLLOWER is a follower at that epoch. A broker
    that cannot be asked does not follow."""
    request = offsets_for_leader_epoch_request(topic, epoch, 1)
    try:
        with _connect(host, port, timeout) as sock:
            return _io(host, port, "OffsetsForLeaderEpoch",
                       lambda: decode_offsets_for_leader_epoch(exchange(sock, request), 1)) == NOT_LEADER_OR_FOLLOWER
    except WireError:
        return False


# --- producing: one record, one request, no retry ------------------------------------------------

PRODUCE = 0


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), the checksum of a v2 record batch (``Crc32C`` @4.1.1).

    >>> hex(crc32c(b"123456789"))
    '0xe3069283'
    """
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def varint(v: int) -> bytes:
    """A zigzag varint (``ByteUtils.writeVarint``)."""
    return uvarint((v << 1) ^ (v >> 63))


def record_batch(value: bytes, timestamp_ms: int) -> bytes:
    """One uncompressed record (no key, no headers) in a v2 batch (``DefaultRecordBatch`` /
    ``DefaultRecord`` @4.1.1): no producer id, so the broker dedups nothing."""
    body = int8(0) + varint(0) + varint(0) + varint(-1) + varint(len(value)) + value + varint(0)
    record = varint(len(body)) + body
    after_crc = (int16(0) + int32(0) + struct.pack(">qq", timestamp_ms, timestamp_ms) + struct.pack(">q", -1)
                 + int16(-1) + int32(-1) + int32(1) + record)
    head = int32(-1) + int8(2) + struct.pack(">I", crc32c(after_crc))
    return struct.pack(">q", 0) + int32(len(head) + len(after_crc)) + head + after_crc


def legacy_message(value: bytes, timestamp_ms: int) -> bytes:
    """One record as a magic 1 message (``LegacyRecord``, Kafka 0.10): offset, size, CRC-32 of
    the rest, magic, attributes, timestamp, null key, value."""
    import zlib
    rest = int8(1) + int8(0) + struct.pack(">q", timestamp_ms) + int32(-1) + int32(len(value)) + value
    message = struct.pack(">I", zlib.crc32(rest)) + rest
    return struct.pack(">q", 0) + int32(len(message)) + message


def produce_request(topic: str, value: bytes, acks: int, timeout_ms: int, correlation_id: int,
                    legacy: bool, timestamp_ms: int = 0) -> bytes:
    """Produce v3 (0.11+: TransactionalId null, Acks, TimeoutMs, [Topic [Partition 0, Records]]) with
    a v2 batch, or v2 with a magic 1 message for 0.10 (no TransactionalId)."""
    records = legacy_message(value, timestamp_ms) if legacy else record_batch(value, timestamp_ms)
    topics = int32(1) + string(topic) + int32(1) + int32(0) + int32(len(records)) + records
    body = int16(acks) + int32(timeout_ms) + topics
    version = 2 if legacy else 3
    return request_header(PRODUCE, version, correlation_id, flexible=False) + (b"" if legacy else int16(-1)) + body


def decode_produce(data: bytes, correlation_id: int | None = None) -> tuple[int, int]:
    """(error code, base offset) of partition 0's answer (Produce v2/v3 response)."""
    r = response_reader(data, correlation_id, flexible=False)
    for _ in range(r.int32()):
        r.string()
        for _ in range(r.int32()):
            r.int32()
            error, offset = r.int16(), r.int64()
            r.int64()                             # log append time
            return error, offset
    raise WireError("the Produce response names no partition")


def produce(host: str, port: int, topic: str, value: bytes, acks: int, timeout_ms: int, legacy: bool) -> int:
    """Send one record to partition 0 of the broker at ``port`` and wait for its answer: the offset
    it was written at (acknowledged), or WireError (refused, or the connection gone: the record may
    or may not be written, as for any client that never got an answer)."""
    import time
    request = produce_request(topic, value, acks, timeout_ms, 1, legacy, int(time.time() * 1000))
    with _connect(host, port, 5.0) as sock:
        sock.settimeout(timeout_ms / 1000 + 30)
        error, offset = _io(host, port, "Produce", lambda: decode_produce(exchange(sock, request), 1))
    if error:
        raise ProduceRefused(error)
    return offset


class ProduceRefused(WireError):
    """A Produce answered with an error code (``code``)."""

    def __init__(self, code: int):
        super().__init__(error_name(code))
        self.code = code


# --- consuming: what a consumer reads from a leader ------------------------------------------------

FETCH = 1


def fetch_request(topic: str, offset: int, correlation_id: int, max_bytes: int = 1 << 20) -> bytes:
    """Fetch v4 (0.11+; 4.x serves v4 up, KIP-896) as a consumer: ReplicaId -1, MaxWaitMs 0, MinBytes
    0, MaxBytes, IsolationLevel 0 (read uncommitted: everything below the HW), [Topic [Partition 0,
    FetchOffset, PartitionMaxBytes]]."""
    body = (int32(-1) + int32(0) + int32(0) + int32(max_bytes) + int8(0)
            + int32(1) + string(topic) + int32(1) + int32(0) + struct.pack(">q", offset) + int32(max_bytes))
    return request_header(FETCH, 4, correlation_id, flexible=False) + body


def decode_fetch(data: bytes, correlation_id: int | None = None) -> tuple[int, int, bytes]:
    """(error code, high watermark, records) of partition 0's answer (Fetch v4 response:
    ThrottleTimeMs, [Topic [Partition, ErrorCode, HighWatermark, LastStableOffset,
    [AbortedTransaction], Records]])."""
    r = response_reader(data, correlation_id, flexible=False)
    r.int32()                                     # throttle time
    for _ in range(r.int32()):
        r.string()
        for _ in range(r.int32()):
            r.int32()
            error, hw = r.int16(), r.int64()
            r.int64()                             # last stable offset
            r.array(lambda: (r.int64(), r.int64()))
            size = r.int32()
            return error, hw, r.take(size) if size > 0 else b""
    raise WireError("the Fetch response names no partition")


def consume(host: str, port: int, topic: str, timeout: float = 5.0) -> list[tuple[int, bytes]]:
    """What a consumer reads from the broker at ``port``: (offset, value) of every record of
    partition 0 below its HW, from offset 0 (a leader serves a consumer up to its HW,
    ``Partition.fetchRecords`` -> ``readRecords(.., FetchHighWatermark)`` @3.9.0). A broker that does
    not lead answers an error: WireError."""
    from . import disk
    out: list[tuple[int, bytes]] = []
    with _connect(host, port, timeout) as sock:
        while True:
            error, hw, records = _io(host, port, "Fetch",
                                     lambda: decode_fetch(exchange(sock, fetch_request(topic, len(out), 1)), 1))
            if error:
                raise WireError(f"Fetch refused: {error_name(error)}")
            got = [(off, value) for batch in disk.batches_in(records) if not batch.attributes & disk.CONTROL_FLAG
                   for off, value in disk.records(batch) if off >= len(out)]
            out += [(off, value) for off, value in got if off < hw]
            if not got or len(out) >= hw:
                return out


# --- reassigning: a partition's replicas changed as an operator would ----------------------------

ALTER_PARTITION_REASSIGNMENTS = 45


def alter_partition_reassignments_request(topic: str, replicas: list[int], correlation_id: int,
                                          timeout_ms: int = 30000) -> bytes:
    """AlterPartitionReassignments v0 (flexible, KIP-455, 2.4+): TimeoutMs, Topics [Name, Partitions
    [PartitionIndex 0, Replicas]] (``AlterPartitionReassignmentsRequest.json`` @3.9.0)."""
    replica_array = uvarint(len(replicas) + 1) + b"".join(int32(r) for r in replicas)
    partitions = uvarint(1 + 1) + int32(0) + replica_array + NO_TAGS
    topics = uvarint(1 + 1) + compact_string(topic) + partitions + NO_TAGS
    return request_header(ALTER_PARTITION_REASSIGNMENTS, 0, correlation_id, flexible=True) + int32(timeout_ms) + topics + NO_TAGS


def decode_alter_partition_reassignments(data: bytes, correlation_id: int | None = None) -> int:
    """The first error code of the answer (its top level, else partition 0's), 0 for none."""
    r = response_reader(data, correlation_id, flexible=True)
    r.int32()                                     # throttle time
    error = r.int16()
    r.compact_string()
    if error:
        return error

    def part():
        r.int32()
        code = r.int16()
        r.compact_string()
        r.skip_tags()
        return code

    def top():
        r.compact_string()
        codes = r.compact_array(part)
        r.skip_tags()
        return codes
    return next((c for codes in r.compact_array(top) or [] for c in codes or [] if c), 0)


def reassign(host: str, port: int, topic: str, replicas: list[int], timeout: float = 30.0) -> None:
    """Reassign partition 0 of ``topic`` to ``replicas`` through the broker at ``port``, which must
    be the active controller in ZooKeeper mode (``KafkaController.alterPartitionReassignments``
    @3.9.0 answers NOT_CONTROLLER elsewhere); WireError if refused."""
    with _connect(host, port, timeout) as sock:
        error = _io(host, port, "AlterPartitionReassignments", lambda: decode_alter_partition_reassignments(
            exchange(sock, alter_partition_reassignments_request(topic, replicas, 1, int(timeout * 1000))), 1))
    if error:
        raise WireError(f"AlterPartitionReassignments refused: {error_name(error)}")
