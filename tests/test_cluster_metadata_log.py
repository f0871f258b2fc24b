"""The controller's view replayed from its metadata log (cluster/metadata_log.py), against logs a
real KRaft controller wrote (tests/data/cluster/metadata/README.md). No java: the expected states are
those Kafka's own decoder shows, ``kafka.tools.DumpLogSegments --cluster-metadata-decoder`` 4.1.1::

    offset: 25 ... {"type":"PARTITION_RECORD","version":2,"data":{"partitionId":0,"topicId":"5Job...",
        "replicas":[0,1],"isr":[0,1],...,"leader":0,"leaderEpoch":0,"partitionEpoch":0,...}}
    offset: 44 ... {"type":"PARTITION_CHANGE_RECORD","version":2,"data":{...,"isr":[0],
        "eligibleLeaderReplicas":[1]}}
    offset: 45 ... {"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{"brokerId":1,
        "brokerEpoch":18,"fenced":1}}
    offset: 70 ... {"type":"PARTITION_CHANGE_RECORD","version":2,"data":{...,"isr":[],"leader":-1,
        "eligibleLeaderReplicas":[0,1],"lastKnownElr":[0]}}
    offset: 71 ... {"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{"brokerId":0,
        "brokerEpoch":16,"fenced":1}}

and 3.9.1 (no ELR; 3.6.2 alike, with record versions 0)::

    offset: 39 ... {"type":"PARTITION_CHANGE_RECORD","version":1,"data":{...,"isr":[0]}}
    offset: 63 ... {"type":"PARTITION_CHANGE_RECORD","version":1,"data":{...,"leader":-1}}
"""

import shutil
from pathlib import Path

import pytest

from hwcheck.cluster import metadata_log as ml
from hwcheck.cluster.disk import DiskError, batches
from hwcheck.cluster.metadata_log import ControllerView, PartitionState
from hwcheck.cluster.wire import int8, int32, uvarint

DATA = Path(__file__).resolve().parent / "data" / "cluster" / "metadata"
SEGMENT = "00000000000000000000.log"
SNAPSHOT = "00000000000000000048-0000000001.checkpoint"
LOG_411 = DATA / "4.1.1" / SEGMENT
LOG_391 = DATA / "3.9.1" / SEGMENT
LOG_362 = DATA / "3.6.2" / SEGMENT

NONE = frozenset()
BOTH = frozenset({0, 1})

# 4.1.1: brokers 0 (epoch 16) and 1 (epoch 18)
EPOCHS_411 = {0: 16, 1: 18}
CREATED_411 = PartitionState(0, 0, 0, (0, 1), (0, 1), (), ())
B1_FENCED_411 = PartitionState(0, 0, 1, (0, 1), (0,), (1,), ())
BOTH_FENCED_411 = PartitionState(-1, 1, 2, (0, 1), (), (0, 1), (0,))

# 3.9.1: brokers 1 (epoch 12) and 0 (epoch 14)
EPOCHS_391 = {0: 14, 1: 12}
B1_FENCED_391 = PartitionState(0, 0, 1, (0, 1), (0,), (), ())
BOTH_FENCED_391 = PartitionState(-1, 1, 2, (0, 1), (0,), (), ())

# 3.6.2: brokers 0 (epoch 11) and 1 (epoch 13); the same states as 3.9.1
EPOCHS_362 = {0: 11, 1: 13}


def log_until(src: Path, end: int) -> bytes:
    """The whole batches of ``src`` whose offsets all lie below ``end``."""
    data = src.read_bytes()
    stop = max((b.position + b.size for b in batches(src) if b.last_offset < end), default=0)
    return data[:stop]


def log_from(src: Path, start: int) -> bytes:
    """The batches of ``src`` from the one with base offset ``start`` on."""
    data = src.read_bytes()
    return data[next(b.position for b in batches(src) if b.base_offset == start):]


def metadata_dir(tmp_path: Path, log: bytes, name: str = SEGMENT, snapshot: bool = False) -> Path:
    d = tmp_path / ml.METADATA_PARTITION
    d.mkdir()
    (d / name).write_bytes(log)
    if snapshot:
        shutil.copy(DATA / "4.1.1" / SNAPSHOT, d / SNAPSHOT)
    return d


def view_until(tmp_path: Path, src: Path, end: int) -> ControllerView:
    return ml.controller_view(metadata_dir(tmp_path, log_until(src, end)), "hwcheck")


# --- 4.1.1, ELR on -------------------------------------------------------------------------------

def test_registered_brokers_start_fenced(tmp_path):
    """RegisterBrokerRecord at 16 and 18 carries Fenced true; the unfencing comes at 19 and 21."""
    assert view_until(tmp_path, LOG_411, 19) == ControllerView(None, BOTH, BOTH, EPOCHS_411)


def test_created_partition_has_leader_0_and_full_isr(tmp_path):
    assert view_until(tmp_path, LOG_411, 26) == ControllerView(CREATED_411, BOTH, NONE, EPOCHS_411)


def test_fencing_broker_1_shrinks_isr_into_elr_without_epoch_bump(tmp_path):
    """PartitionChangeRecord 44 has no Leader: the partition epoch moves, the leader epoch not."""
    view = view_until(tmp_path, LOG_411, 47)
    assert view == ControllerView(B1_FENCED_411, BOTH, frozenset({1}), EPOCHS_411)


def test_fencing_both_leaves_no_leader_empty_isr_and_elr(tmp_path):
    view = ml.controller_view(DATA / "4.1.1", "hwcheck")
    assert view == ControllerView(BOTH_FENCED_411, BOTH, BOTH, EPOCHS_411)


def test_log_alone_agrees_with_snapshot_and_log(tmp_path):
    assert view_until(tmp_path, LOG_411, 10**6) == ml.controller_view(DATA / "4.1.1", "hwcheck")


def test_torn_tail_is_ignored(tmp_path):
    """Half of the last batch holding partition changes: that batch is not there yet."""
    whole = log_until(LOG_411, 73)
    torn = whole[:len(log_until(LOG_411, 70)) + 40]
    view = ml.controller_view(metadata_dir(tmp_path, torn), "hwcheck")
    assert view == ControllerView(B1_FENCED_411, BOTH, frozenset({1}), EPOCHS_411)


def test_torn_tail_after_the_last_batch(tmp_path):
    data = LOG_411.read_bytes()
    view = ml.controller_view(metadata_dir(tmp_path, data + data[:30]), "hwcheck")
    assert view.partition == BOTH_FENCED_411


# --- snapshots -----------------------------------------------------------------------------------

def test_snapshot_is_read_first(tmp_path):
    """The snapshot (end offset 48) and a log that starts there, as after Kafka deleted the older
    segment: the TopicRecord and PartitionRecord exist only in the snapshot."""
    d = metadata_dir(tmp_path, log_from(LOG_411, 48), "00000000000000000048.log", snapshot=True)
    assert ml.controller_view(d, "hwcheck") == ControllerView(BOTH_FENCED_411, BOTH, BOTH, EPOCHS_411)


def test_log_tail_without_snapshot_knows_no_topic(tmp_path):
    d = metadata_dir(tmp_path, log_from(LOG_411, 48), "00000000000000000048.log")
    assert ml.controller_view(d, "hwcheck").partition is None


def test_snapshot_image_is_the_state_after_broker_1_fenced(tmp_path):
    d = metadata_dir(tmp_path, log_until(LOG_411, 48), snapshot=True)
    assert ml.controller_view(d, "hwcheck") == ControllerView(B1_FENCED_411, BOTH, frozenset({1}), EPOCHS_411)


def test_partial_snapshot_is_not_a_snapshot(tmp_path):
    d = metadata_dir(tmp_path, log_until(LOG_411, 26))
    (d / "00000000000000000070-0000000001.checkpoint.part").write_bytes(b"\0" * 20)
    assert ml.latest_snapshot(d) is None
    assert ml.controller_view(d, "hwcheck").partition == CREATED_411


# --- 3.9.1, no ELR -------------------------------------------------------------------------------

def test_391_fencing_broker_1_shrinks_isr(tmp_path):
    view = view_until(tmp_path, LOG_391, 42)
    assert view == ControllerView(B1_FENCED_391, BOTH, frozenset({1}), EPOCHS_391)


def test_391_fencing_both_keeps_last_isr_member(tmp_path):
    view = ml.controller_view(DATA / "3.9.1", "hwcheck")
    assert view == ControllerView(BOTH_FENCED_391, BOTH, BOTH, EPOCHS_391)


# --- 3.6.2, record versions 0 ---------------------------------------------------------------------

def test_362_created_partition(tmp_path):
    view = view_until(tmp_path, LOG_362, 19)
    assert view == ControllerView(PartitionState(0, 0, 0, (0, 1), (0, 1), (), ()), BOTH, NONE, EPOCHS_362)


def test_362_fencing_broker_1_shrinks_isr(tmp_path):
    view = view_until(tmp_path, LOG_362, 41)
    assert view == ControllerView(B1_FENCED_391, BOTH, frozenset({1}), EPOCHS_362)


def test_362_fencing_both_keeps_last_isr_member():
    view = ml.controller_view(DATA / "3.6.2", "hwcheck")
    assert view == ControllerView(BOTH_FENCED_391, BOTH, BOTH, EPOCHS_362)


# --- where nothing is -----------------------------------------------------------------------------

def test_missing_directory_gives_no_partition(tmp_path):
    view = ml.controller_view(tmp_path / "nosuch", "hwcheck")
    assert view == ControllerView(None, NONE, NONE, {})


def test_other_topic_or_partition_is_none():
    assert ml.controller_view(DATA / "4.1.1", "other").partition is None
    assert ml.controller_view(DATA / "4.1.1", "hwcheck", 1).partition is None


def test_log_dirs_parent_is_accepted(tmp_path):
    metadata_dir(tmp_path, LOG_411.read_bytes())
    assert ml.controller_view(tmp_path, "hwcheck").partition == BOTH_FENCED_411


# --- record semantics not in the recordings -------------------------------------------------------

def test_leader_set_to_itself_bumps_leader_epoch():
    """``PartitionRegistration.merge``: any Leader but -2 bumps (an ISR shrink under metadata
    versions before 3.6-IV0, a reassignment)."""
    bumped = ml.merge(CREATED_411, leader=0, isr=(0,), replicas=None, elr=None, last_known=None)
    assert bumped == PartitionState(0, 1, 1, (0, 1), (0,), (), ())


def framed(api_key: int, version: int, body: bytes) -> bytes:
    return uvarint(1) + uvarint(api_key) + uvarint(version) + body


def broker_change(broker: int, epoch: int, tags: dict[int, bytes]) -> bytes:
    fields = b"".join(uvarint(t) + uvarint(len(v)) + v for t, v in sorted(tags.items()))
    body = int32(broker) + epoch.to_bytes(8, "big", signed=True) + uvarint(len(tags)) + fields
    return framed(ml.BROKER_REGISTRATION_CHANGE, 1, body)


def replayed(*values: bytes) -> ml.MetadataImage:
    image = ml.MetadataImage()
    image.brokers[0] = ml.Registration(16, False, False)
    ml.replay(image, iter(enumerate(values)))
    return image


def test_controlled_shutdown_is_not_fenced():
    image = replayed(broker_change(0, 16, {1: int8(1)}))
    assert image.brokers[0] == ml.Registration(16, False, True)


def test_registration_change_of_another_epoch_is_ignored():
    assert replayed(broker_change(0, 15, {0: int8(1)})).brokers[0].fenced is False
    assert replayed(broker_change(0, 16, {0: int8(1)})).brokers[0].fenced is True


def test_aborted_transaction_is_not_applied():
    change = broker_change(0, 16, {0: int8(1)})
    begin, end, abort = (framed(k, 0, b"") for k in (ml.BEGIN_TRANSACTION, ml.END_TRANSACTION,
                                                      ml.ABORT_TRANSACTION))
    assert replayed(begin, change, abort).brokers[0].fenced is False
    assert replayed(begin, change, end).brokers[0].fenced is True
    assert replayed(begin, change).brokers[0].fenced is False


def test_unknown_frame_version_raises():
    with pytest.raises(DiskError, match="frame version 0"):
        ml.replay(ml.MetadataImage(), iter([(5, b"\x00\x00\x00")]))


# --- a replaced disk: its directory assignment and the broker's unfencing race (4.1.1) -----------

OLD_DIR, NEW_DIR, R1_DIR, TOPIC_ID = b"\x01" * 16, b"\x02" * 16, b"\x03" * 16, b"\x07" * 16


def compact_ints(xs) -> bytes:
    return uvarint(len(xs) + 1) + b"".join(int32(x) for x in xs)


def compact_uuids(xs) -> bytes:
    return uvarint(len(xs) + 1) + b"".join(xs)


def topic_record() -> bytes:
    return framed(ml.TOPIC, 0, uvarint(len(b"hwcheck") + 1) + b"hwcheck" + TOPIC_ID + uvarint(0))


def partition_record(directories) -> bytes:
    """PartitionRecord v1: replicas [0, 1], ISR [1], leader -1, epochs 1 and 4, the directories."""
    body = (int32(0) + TOPIC_ID + compact_ints((0, 1)) + compact_ints((1,)) + compact_ints(()) + compact_ints(())
            + int32(-1) + int32(1) + int32(4) + compact_uuids(directories) + uvarint(0))
    return framed(ml.PARTITION, 1, body)


def assign_directories(directories) -> bytes:
    """PartitionChangeRecord v1 with Directories (tag 8) alone: what handleAssignReplicasToDirs writes."""
    tag = compact_uuids(directories)
    return framed(ml.PARTITION_CHANGE, 1, int32(0) + TOPIC_ID + uvarint(1) + uvarint(8) + uvarint(len(tag)) + tag)


@pytest.mark.parametrize("assigned_first", [True, False])
def test_an_unfencing_sees_the_directory_assigned_before_it_and_only_that(assigned_first):
    """The record order decides what ``handleBrokerUnfenced``'s election sees: r0's replaced disk
    (NEW_DIR) if its AssignReplicasToDirs came first, its old directory otherwise."""
    image = ml.MetadataImage()
    image.brokers[0] = ml.Registration(16, True, False)
    unfence = broker_change(0, 16, {0: int8(-1)})
    assign = assign_directories((NEW_DIR, R1_DIR))
    recs = [topic_record(), partition_record((OLD_DIR, R1_DIR))] + (
        [assign, unfence] if assigned_first else [unfence, assign])
    seen = ml.unfencings_in(image, iter(enumerate(recs)), "hwcheck")
    assert seen == [(3 if assigned_first else 2, 0, NEW_DIR if assigned_first else OLD_DIR)]
    assert image.directories[(TOPIC_ID, 0)] == (NEW_DIR, R1_DIR)
