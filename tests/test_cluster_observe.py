"""The observers of real brokers (cluster/wire.py, cluster/disk.py) against bytes a real Kafka 4.1.1
broker wrote: responses it sent and the files it left (tests/data/cluster/README.md). No Kafka, no
java: the socket path runs against a fake broker thread serving the recorded responses."""

import shutil
import socket
import struct
import threading
from pathlib import Path

import pytest

from hwcheck.cluster import disk, wire
from hwcheck.cluster.disk import Entry
from hwcheck.cluster.wire import PartitionView, WireError

DATA = Path(__file__).resolve().parent / "data" / "cluster"
SEGMENT = "00000000000000000000.log"
BATCH = 69                                           # each recorded batch: 61-byte header + one 8-byte record


def recorded(name: str) -> bytes:
    """A recorded response, after its int32 size (asked with correlation id 1 for ApiVersions, 2 else)."""
    return bytes.fromhex((DATA / f"{name}.hex").read_text())


DTP = recorded("describe_topic_partitions_v0")
METADATA = recorded("metadata_v7")
VERSIONS = recorded("api_versions_v0")

# topic hw, one replica on broker 1, epoch 2 after one clean restart
HW_0 = PartitionView(leader=1, leader_epoch=2, replicas=(1,), isr=(1,), elr=(), last_known_elr=(), offline=())


# --- wire: decoding what the broker sent -----------------------------------------------------------

def test_describe_topic_partitions_gives_leader_epoch_isr_and_elr():
    assert wire.decode_describe_topic_partitions(DTP, "hw", 0, correlation_id=2) == HW_0


def test_metadata_v7_gives_the_same_without_elr():
    assert wire.decode_metadata(METADATA, "hw", 0, correlation_id=2) == HW_0._replace(elr=None, last_known_elr=None)


def test_metadata_v7_names_the_brokers_held_alive():
    """The recorded answer came from a cluster where broker 1 alone was unfenced."""
    assert wire.decode_alive_brokers(METADATA, correlation_id=2) == {1}
    with pytest.raises(wire.WireError):
        wire.decode_alive_brokers(METADATA[:6])


def test_api_versions_of_kafka_4_1():
    versions = wire.decode_api_versions(VERSIONS, correlation_id=1)
    assert versions[wire.API_VERSIONS] == (0, 4)
    assert versions[wire.METADATA] == (0, 13)          # KIP-896 (4.0) left Metadata whole
    assert versions[wire.DESCRIBE_TOPIC_PARTITIONS] == (0, 0)


def test_unknown_topic_is_an_error_naming_the_code():
    with pytest.raises(WireError, match=r"^nosuch: error code 3 \(UNKNOWN_TOPIC_OR_PARTITION\)$"):
        wire.decode_describe_topic_partitions(recorded("describe_topic_partitions_v0_unknown"), "nosuch")


def test_missing_partition_and_wrong_correlation_id_are_errors():
    with pytest.raises(WireError, match="hw-1: no such partition"):
        wire.decode_describe_topic_partitions(DTP, "hw", 1)
    with pytest.raises(WireError, match="correlation id 2 in response, expected 3"):
        wire.decode_metadata(METADATA, "hw", 0, correlation_id=3)
    with pytest.raises(WireError, match="response ends"):
        wire.decode_metadata(METADATA[:-3], "hw")


def patched(data: bytes, at: int, old: bytes, new: bytes) -> bytes:
    assert data[at:at + len(old)] == old, "the recorded layout moved"
    return data[:at] + new + data[at + len(new):]


def test_a_leaderless_partition_is_returned_not_raised():
    # DTP: correlation 4, tags 1, throttle 4, topics 1, error 2, name 3, id 16, internal 1, partitions 1,
    # error 2, index 4 -> LeaderId at byte 39
    dtp = patched(DTP, 39, wire.int32(1), wire.int32(-1))
    assert wire.decode_describe_topic_partitions(dtp, "hw").leader == -1
    # Metadata v7 answers LEADER_NOT_AVAILABLE with leader -1 (KRaftMetadataCache.getPartitionMetadata):
    # partition ErrorCode at byte 76, LeaderId at 82
    md = patched(patched(METADATA, 76, wire.int16(0), wire.int16(5)), 82, wire.int32(1), wire.int32(-1))
    assert wire.decode_metadata(md, "hw") == HW_0._replace(leader=-1, elr=None, last_known_elr=None)
    with pytest.raises(WireError, match=r"hw-0: error code 6 \(NOT_LEADER_OR_FOLLOWER\)"):
        wire.decode_metadata(patched(METADATA, 76, wire.int16(0), wire.int16(6)), "hw")


# --- wire: encoding what we ask --------------------------------------------------------------------

CLIENT = b"\x00\x07hwcheck"


def test_request_bytes():
    assert wire.api_versions_request(2) == bytes.fromhex("0012 0000 00000002") + CLIENT
    assert wire.describe_topic_partitions_request("hw", 2) == (
        bytes.fromhex("004b 0000 00000002") + CLIENT + b"\x00"          # header v2: tags after client id
        + b"\x02" + b"\x03hw" + b"\x00"                                 # compact [Name], tags
        + bytes.fromhex("000007d0") + b"\xff" + b"\x00")                # limit 2000, null cursor, tags
    assert wire.metadata_request("hw", 2) == (
        bytes.fromhex("0003 0007 00000002") + CLIENT
        + bytes.fromhex("00000001") + b"\x00\x02hw" + b"\x00")         # [Name], AllowAutoTopicCreation false


@pytest.mark.parametrize("encode, key, version, flexible", [
    (lambda c: wire.api_versions_request(c), 18, 0, False),
    (lambda c: wire.describe_topic_partitions_request("hw", c), 75, 0, True),
    (lambda c: wire.metadata_request("hw", c), 3, 7, False),
])
def test_request_header_round_trips(encode, key, version, flexible):
    r = wire.Reader(encode(123456))
    assert (r.int16(), r.int16(), r.int32(), r.string()) == (key, version, 123456, "hwcheck")
    if flexible:
        r.skip_tags()
        assert r.compact_array(lambda: (r.compact_string(), r.skip_tags())[0]) == ["hw"]
        assert (r.int32(), r.int8()) == (2000, -1)


@pytest.mark.parametrize("n", [0, 1, 127, 128, 300, 16383, 16384, 2**31 - 1])
def test_uvarint_round_trips(n):
    assert wire.Reader(wire.uvarint(n)).uvarint() == n
    assert wire.Reader(wire.compact_string("x" * (n % 200))).compact_string() == "x" * (n % 200)


# --- wire: the socket, against a fake broker --------------------------------------------------------

def api_versions_without_75() -> bytes:
    """An ApiVersions v0 response of a broker before 3.7: Metadata and ApiVersions, no key 75."""
    keys = [(3, 0, 12), (18, 0, 3)]
    return (wire.int32(0) + wire.int16(0) + wire.int32(len(keys))
            + b"".join(wire.int16(k) + wire.int16(lo) + wire.int16(hi) for k, lo, hi in keys))


class FakeBroker:
    """Serves recorded responses by api key on 127.0.0.1, with the request's correlation id."""

    def __init__(self, responses: dict[int, bytes]):
        self.responses, self.asked = responses, []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        conn, _ = self.server.accept()
        with conn:
            while True:
                head = conn.recv(4, socket.MSG_WAITALL)
                if len(head) < 4:
                    return
                request = conn.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
                key, version, correlation = struct.unpack_from(">hhi", request)
                self.asked.append((key, version))
                response = wire.int32(correlation) + self.responses[key][4:]
                conn.sendall(wire.int32(len(response)) + response)

    def close(self):
        self.thread.join(timeout=2)
        self.server.close()


def test_partition_view_over_a_socket_prefers_describe_topic_partitions():
    broker = FakeBroker({18: VERSIONS, 75: DTP, 3: METADATA})
    assert wire.partition_view("127.0.0.1", broker.port, "hw") == HW_0
    broker.close()
    assert broker.asked == [(18, 0), (75, 0)]


def test_partition_view_falls_back_to_metadata_v7():
    broker = FakeBroker({18: api_versions_without_75(), 3: METADATA})
    assert wire.partition_view("127.0.0.1", broker.port, "hw").elr is None
    broker.close()
    assert broker.asked == [(18, 0), (3, 7)]


def list_offsets_v1_response(error: int) -> bytes:
    """A ListOffsets v1 response (correlation id, [Topic [Partition, ErrorCode, Timestamp, Offset]])."""
    return (wire.int32(0) + wire.int32(1) + wire.string("hw") + wire.int32(1) + wire.int32(0) + wire.int16(error)
            + struct.pack(">qq", -1, 3 if error == 0 else -1))


@pytest.mark.parametrize("error, leads", [(0, True), (6, False), (3, False)])
def test_a_broker_leads_when_it_answers_list_offsets(error, leads):
    """Only the leader answers a client's ListOffsets; NOT_LEADER_FOR_PARTITION (6) or
    UNKNOWN_TOPIC_OR_PARTITION (3) until it applies the LeaderAndIsr naming it (cluster/run.py
    ``_await_leading`` waits for it)."""
    broker = FakeBroker({wire.LIST_OFFSETS: list_offsets_v1_response(error)})
    assert wire.leads("127.0.0.1", broker.port, "hw") is leads
    broker.close()
    assert broker.asked == [(wire.LIST_OFFSETS, 1)]


def test_a_closed_port_is_a_one_line_error():
    s = socket.create_server(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(WireError, match=f"^connection refused by 127.0.0.1:{port}$"):
        wire.api_versions("127.0.0.1", port, timeout=1)
    assert wire.leads("127.0.0.1", port, "hw", timeout=1) is False


# --- disk: the recorded partition ---------------------------------------------------------------------

RECORDS = [Entry(0, b"0", 0), Entry(1, b"1", 0), Entry(2, b"2", 2)]


@pytest.fixture
def part(tmp_path):
    """A copy of the recorded partition directory hw-0, with the index files the broker had."""
    d = tmp_path / "hw-0"
    d.mkdir()
    shutil.copy(DATA / SEGMENT, d)
    shutil.copy(DATA / "leader-epoch-checkpoint", d)
    for name in ("00000000000000000000.index", "00000000000000000000.timeindex", "00000000000000000002.snapshot"):
        (d / name).write_bytes(b"\0" * 12)
    return d


def test_read_log_gives_the_records_with_their_epochs():
    assert disk.read_log(DATA) == RECORDS
    assert disk.leo(DATA) == 3
    assert [(b.base_offset, b.last_offset, b.position, b.size) for b in disk.batches(DATA / SEGMENT)] == [
        (0, 0, 0, BATCH), (1, 1, BATCH, BATCH), (2, 2, 2 * BATCH, BATCH)]


def test_byte_position():
    assert disk.byte_position(DATA, 0) == (DATA / SEGMENT, 0)
    assert disk.byte_position(DATA, 2) == (DATA / SEGMENT, 2 * BATCH)
    assert disk.byte_position(DATA, 3) == disk.byte_position(DATA, 99) == (DATA / SEGMENT, 3 * BATCH)


def test_cut_at_1_leaves_one_record_and_drops_the_indexes(part):
    disk.cut(part, 1)
    assert disk.read_log(part) == RECORDS[:1]
    assert disk.leo(part) == 1
    assert (part / SEGMENT).stat().st_size == BATCH
    assert sorted(p.name for p in part.iterdir()) == [SEGMENT, "leader-epoch-checkpoint"]


def test_a_torn_tail_is_ignored(part):
    seg = part / SEGMENT
    whole = seg.read_bytes()
    seg.write_bytes(whole + whole[:BATCH - 1])                     # a batch cut one byte short
    assert disk.read_log(part) == RECORDS and disk.leo(part) == 3
    assert disk.byte_position(part, 5) == (seg, 3 * BATCH)
    seg.write_bytes(whole + b"\0" * 4096)                         # zeros after a power failure
    assert disk.read_log(part) == RECORDS and disk.leo(part) == 3
    disk.cut(part, 3)
    assert seg.read_bytes() == whole


def test_cut_across_segments(part):
    seg = part / SEGMENT
    whole = seg.read_bytes()
    seg.write_bytes(whole[:2 * BATCH])
    later = part / "00000000000000000002.log"
    later.write_bytes(whole[2 * BATCH:])
    for suffix in (".index", ".timeindex", ".txnindex"):
        later.with_suffix(suffix).write_bytes(b"")
    assert disk.read_log(part) == RECORDS and disk.leo(part) == 3
    assert disk.byte_position(part, 2) == (later, 0)
    disk.cut(part, 1)
    assert sorted(p.name for p in part.iterdir()) == [SEGMENT, "leader-epoch-checkpoint"]
    assert disk.read_log(part) == RECORDS[:1]


def set_attributes(seg: Path, batch: int, attributes: int) -> None:
    data = bytearray(seg.read_bytes())
    struct.pack_into(">h", data, batch * BATCH + 21, attributes)   # after offset, length, epoch, magic, crc
    seg.write_bytes(bytes(data))


def test_control_batches_are_skipped_but_take_their_offset(part):
    set_attributes(part / SEGMENT, 2, 0x20 | 0x10)
    assert disk.read_log(part) == RECORDS[:2]
    assert disk.leo(part) == 3


def test_compressed_batches_are_refused(part):
    set_attributes(part / SEGMENT, 1, 1)                          # gzip
    with pytest.raises(disk.DiskError, match="compressed"):
        disk.read_log(part)


# --- disk: checkpoints -----------------------------------------------------------------------------------

def test_checkpoints():
    assert disk.epoch_checkpoint(DATA) == [(0, 0), (2, 2)]
    assert disk.offset_checkpoint(DATA / "replication-offset-checkpoint") == {("hw", 0): 3}
    assert disk.offset_checkpoint(DATA / "recovery-point-offset-checkpoint") == {("hw", 0): 2}


def test_missing_and_empty_checkpoints(tmp_path):
    assert disk.offset_checkpoint(tmp_path / "replication-offset-checkpoint") == {}
    assert disk.epoch_checkpoint(tmp_path) == []
    (tmp_path / "leader-epoch-checkpoint").write_text("")          # CheckpointFile creates it empty
    assert disk.epoch_checkpoint(tmp_path) == []


def test_a_checkpoint_read_mid_rewrite_is_retried_once(tmp_path, monkeypatch):
    path = tmp_path / "replication-offset-checkpoint"
    path.write_text("0\n2\nhw 0 3\n")                              # the second entry not yet written
    monkeypatch.setattr(disk.time, "sleep", lambda _: path.write_text("0\n2\nhw 0 3\nhw 1 7\n"))
    assert disk.offset_checkpoint(path) == {("hw", 0): 3, ("hw", 1): 7}
    monkeypatch.setattr(disk.time, "sleep", lambda _: None)
    path.write_text("0\n2\nhw 0")
    with pytest.raises(disk.DiskError, match="malformed checkpoint"):
        disk.offset_checkpoint(path)


# --- a consumer, a follower's epoch, a reassignment: the KAFKA-18991 row's requests -----------------

def _batch_at(offset: int, value: bytes) -> bytes:
    """A one-record batch moved to ``offset`` (the base offset is outside the batch's CRC)."""
    return struct.pack(">q", offset) + wire.record_batch(value, 0)[8:]


def fetch_v4_response(error: int, hw: int, records: bytes) -> bytes:
    """Fetch v4: correlation id, ThrottleTimeMs, [Topic [Partition, ErrorCode, HighWatermark,
    LastStableOffset, [AbortedTransaction], Records]]."""
    return (wire.int32(0) + wire.int32(0) + wire.int32(1) + wire.string("hw") + wire.int32(1) + wire.int32(0)
            + wire.int16(error) + struct.pack(">qq", hw, hw) + wire.int32(0) + wire.int32(len(records)) + records)


def test_a_consumer_reads_only_below_the_leaders_hw():
    broker = FakeBroker({wire.FETCH: fetch_v4_response(0, 1, _batch_at(0, b"0") + _batch_at(1, b"1"))})
    assert wire.consume("127.0.0.1", broker.port, "hw") == [(0, b"0")]
    broker.close()
    assert broker.asked == [(wire.FETCH, 4)]


def test_a_consumer_refused_by_a_broker_that_does_not_lead_is_an_error():
    broker = FakeBroker({wire.FETCH: fetch_v4_response(6, -1, b"")})
    with pytest.raises(WireError, match="NOT_LEADER_OR_FOLLOWER"):
        wire.consume("127.0.0.1", broker.port, "hw")
    broker.close()


def offsets_for_leader_epoch_v3_response(error: int) -> bytes:
    return (wire.int32(0) + wire.int32(0) + wire.int32(1) + wire.string("hw") + wire.int32(1)
            + wire.int16(error) + wire.int32(0) + wire.int32(-1) + struct.pack(">q", -1))


@pytest.mark.parametrize("error, follows", [(6, True), (75, False), (74, False), (0, False)])
def test_a_broker_follows_at_an_epoch_when_it_answers_not_leader_at_that_epoch(error, follows):
    """NOT_LEADER_OR_FOLLOWER (6) after the epoch check passed; UNKNOWN_LEADER_EPOCH (75) while the
    broker's epoch is older, FENCED_LEADER_EPOCH (74) once newer; an answer (0) from a leader."""
    broker = FakeBroker({wire.OFFSETS_FOR_LEADER_EPOCH: offsets_for_leader_epoch_v3_response(error)})
    assert wire.follows_at("127.0.0.1", broker.port, "hw", 3) is follows
    broker.close()
    assert broker.asked == [(wire.OFFSETS_FOR_LEADER_EPOCH, 3)]


def test_the_offsets_for_leader_epoch_request_asks_of_the_current_epoch_as_a_client():
    r = wire.Reader(wire.offsets_for_leader_epoch_request("hw", 3, 9))
    assert (r.int16(), r.int16(), r.int32(), r.string()) == (23, 3, 9, "hwcheck")
    assert (r.int32(), r.int32(), r.string(), r.int32(), r.int32(), r.int32(), r.int32()) == (-1, 1, "hw", 1, 0, 3, 3)


def alter_partition_reassignments_response(top: int, partition: int) -> bytes:
    """v0 (flexible, header v1): correlation id, tags, ThrottleTimeMs, ErrorCode, ErrorMessage,
    [Name, [PartitionIndex, ErrorCode, ErrorMessage, tags], tags], tags."""
    part = wire.int32(0) + wire.int16(partition) + wire.compact_string(None) + wire.NO_TAGS
    topic = wire.compact_string("hw") + wire.uvarint(2) + part + wire.NO_TAGS
    return (wire.int32(0) + wire.NO_TAGS + wire.int32(0) + wire.int16(top) + wire.compact_string(None)
            + wire.uvarint(2) + topic + wire.NO_TAGS)


@pytest.mark.parametrize("top, partition, error", [(0, 0, None), (41, 0, "NOT_CONTROLLER"), (0, 3, "UNKNOWN_TOPIC")])
def test_a_reassignment_is_refused_in_one_line(top, partition, error):
    broker = FakeBroker({wire.ALTER_PARTITION_REASSIGNMENTS: alter_partition_reassignments_response(top, partition)})
    if error is None:
        wire.reassign("127.0.0.1", broker.port, "hw", [1, 0])
    else:
        with pytest.raises(WireError, match=error):
            wire.reassign("127.0.0.1", broker.port, "hw", [1, 0])
    broker.close()
    assert broker.asked == [(wire.ALTER_PARTITION_REASSIGNMENTS, 0)]


def test_the_reassignment_request_names_the_new_replicas():
    r = wire.Reader(wire.alter_partition_reassignments_request("hw", [1, 0], 9, 5000))
    assert (r.int16(), r.int16(), r.int32(), r.string()) == (45, 0, 9, "hwcheck")
    r.skip_tags()
    assert r.int32() == 5000
    topics = r.compact_array(lambda: (r.compact_string(), r.compact_array(
        lambda: (r.int32(), r.compact_array(r.int32), r.skip_tags())[:2]), r.skip_tags())[:2])
    assert topics == [("hw", [(0, [1, 0])])]
