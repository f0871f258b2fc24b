"""The KRaft controller's own view of a partition and of the brokers, replayed from its metadata log.

A broker's Metadata/DescribeTopicPartitions answer hides what the harness needs most: it reports
leader -1 when the elected leader is a fenced broker (``KRaftMetadataCache.getAliveEndpoint``
@4.1.1) and, with no broker running, nobody answers. The controller's metadata log
``<controller log.dirs>/__cluster_metadata-0/`` holds the decisions themselves; the page cache makes
a live controller's writes visible to a reader, and a batch being written is a torn tail that
``cluster.disk.batches`` ignores.

The log is record batches v2 (``cluster.disk``). Each record's value is framed
(``AbstractApiMessageSerde.read`` @4.1.1): frame version (unsigned varint, 1), api key (uvarint),
record version (uvarint), then the message in flexible encoding: compact arrays and strings
(uvarint length + 1, 0 for null), then, at the end of every struct, its tagged fields (a count, then
tag, size, bytes). Field layouts are those of ``common/metadata/*.json`` in kafka-metadata 3.6.2,
3.7.2, 3.9.1, 4.0.0, 4.1.1, 4.2.0, 4.3.0 and 4.4.0 (the binary jar: no sources jar is published);
the newer schemas add fields (record versions), none moves or drops one, so one decoder reads all.

The leader epoch is not in a PartitionChangeRecord: replay derives it (``merge`` below, the same in
every release read). Which changes carry a Leader -- and so bump it -- is the controller's choice
(``PartitionChangeBuilder.build``): an election (-1 included); a reassignment that removes a
replica (``triggerLeaderEpochBumpIfNeeded`` @3.6.2/@3.7.2,
``triggerLeaderEpochBumpForReplicaReassignmentIfNeeded`` @3.9.1..@4.4.0); an ISR shrink only under
metadata.version < 3.6-IV0 (``MetadataVersion.isLeaderEpochBumpRequiredOnIsrShrink``) or, up to
3.9, in ZK migration mode (``triggerLeaderEpochBumpForIsrShrinkIfNeeded`` @3.9.1, without the ZK
case @4.0.0..@4.4.0). ELR changes (KIP-966, record version 2, metadata.version >= 4.0-IV1 and the
``eligible.leader.replicas.version`` feature) do not bump it; a partition's first leaderless change
sets LastKnownElr to the old leader and an election clears it (``maybeUpdateLastKnownLeader``
@4.1.1).

Replayed, in log order (``ClusterControlManager.replay``, ``ReplicationControlManager.replay``
@4.1.1): TopicRecord, RemoveTopicRecord, PartitionRecord, PartitionChangeRecord, RegisterBrokerRecord,
UnregisterBrokerRecord, FenceBrokerRecord, UnfenceBrokerRecord, BrokerRegistrationChangeRecord.
Every other record type is skipped, and so are control batches (leader change, snapshot header and
footer, KRaft voters). Records between a BeginTransactionRecord and its End/AbortTransactionRecord
(KIP-868; ``ActivationRecordsGenerator`` @4.1.1 uses them for the bootstrap records only) apply at
the end, or not at all on abort or when the log ends inside the transaction.

A snapshot (``<end offset>-<epoch>.checkpoint``: the same batches, between a header and a footer
control batch) is a full image: the newest one is replayed first, then the log records from its end
offset on (``KafkaRaftClient`` / ``MetadataLoader`` @4.1.1 load the same way). ``*.checkpoint.part``
(being written) and ``*.deleted`` files are not snapshots.

Limits: compressed batches raise ``DiskError`` (the logs and the snapshot recorded are
uncompressed); a broker in controlled shutdown is not in ``fenced`` until the controller fences it,
which it does when the shutdown completes (``ReplicationControlManager.processBrokerHeartbeat`` ->
``handleBrokerFenced`` @4.1.1); the view is what the controller has appended, which for a
single-voter quorum is what it has replayed -- with several voters an uncommitted tail may still be
truncated.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

from .disk import CONTROL_FLAG, DiskError, batches, records, segments
from .wire import Reader, WireError

METADATA_PARTITION = "__cluster_metadata-0"
FRAME_VERSION = 1
NO_LEADER = -1
NO_LEADER_CHANGE = -2          # PartitionChangeRecord.Leader default (PartitionRegistration)

# Api keys of the records replayed (``MetadataRecordType`` @4.1.1).
REGISTER_BROKER = 0
UNREGISTER_BROKER = 1
TOPIC = 2
PARTITION = 3
PARTITION_CHANGE = 5
FENCE_BROKER = 7
UNFENCE_BROKER = 8
REMOVE_TOPIC = 9
BROKER_REGISTRATION_CHANGE = 17
BEGIN_TRANSACTION = 23
END_TRANSACTION = 24
ABORT_TRANSACTION = 25


class PartitionState(NamedTuple):
    """One partition as the controller holds it (``PartitionRegistration`` @4.1.1)."""
    leader: int                          # broker id, -1 none
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...]                 # () where absent (record version < 2, or ELR off)
    last_known_elr: tuple[int, ...]


class ControllerView(NamedTuple):
    """What the controller's metadata log says of one partition and of the brokers."""
    partition: PartitionState | None     # None: the topic or partition does not exist (yet)
    registered: frozenset[int]           # brokers with a registration
    fenced: frozenset[int]               # registered with the Fenced flag set (not: in controlled shutdown)
    broker_epochs: dict[int, int]        # BrokerEpoch of each registration


class Registration(NamedTuple):
    """A broker registration's replayed fields (``BrokerRegistration`` @4.1.1)."""
    epoch: int
    fenced: bool
    in_controlled_shutdown: bool


class MetadataImage:
    """The replayed image: topic ids by name, partitions by (topic id, index) and their replicas'
    log directory ids (KIP-858: record version 1+, per replica in ``replicas`` order), registrations."""

    def __init__(self) -> None:
        self.topics: dict[str, bytes] = {}
        self.partitions: dict[tuple[bytes, int], PartitionState] = {}
        self.directories: dict[tuple[bytes, int], tuple[bytes, ...]] = {}
        self.brokers: dict[int, Registration] = {}


# --- flexible-version decoding --------------------------------------------------------------------

def _ints(r: Reader) -> tuple[int, ...] | None:
    """A compact (nullable) int32 array."""
    xs = r.compact_array(r.int32)
    return None if xs is None else tuple(xs)


def _uuid(r: Reader) -> bytes:
    return r.take(16)


def _tags(r: Reader) -> dict[int, Reader]:
    """A struct's tagged fields, each as a reader over its bytes."""
    out = {}
    for _ in range(r.uvarint()):
        tag = r.uvarint()
        out[tag] = Reader(r.take(r.uvarint()))
    return out


def _tag(tags: dict[int, Reader], tag: int, valid: bool, read: Callable[[Reader], object], default):
    """The value of a tagged field, or its default when absent or not valid at this version (the
    generated readers keep such a tag as an unknown field)."""
    return read(tags[tag]) if valid and tag in tags else default


def _skip_struct_array(r: Reader, fields: Callable[[], object]) -> None:
    """A compact array of structs whose fields this reader does not keep."""
    def one() -> None:
        fields()
        _tags(r)
    r.compact_array(one)


# --- records --------------------------------------------------------------------------------------

def _topic(st: MetadataImage, r: Reader, version: int) -> None:
    """TopicRecord v0: Name, TopicId (``ReplicationControlManager.replay(TopicRecord)`` @4.1.1)."""
    name, topic_id = r.compact_string(), _uuid(r)
    st.topics[name] = topic_id


def _remove_topic(st: MetadataImage, r: Reader, version: int) -> None:
    """RemoveTopicRecord v0: TopicId; the topic's partitions go with it."""
    topic_id = _uuid(r)
    st.topics = {n: t for n, t in st.topics.items() if t != topic_id}
    st.partitions = {k: p for k, p in st.partitions.items() if k[0] != topic_id}
    st.directories = {k: d for k, d in st.directories.items() if k[0] != topic_id}


def _partition(st: MetadataImage, r: Reader, version: int) -> None:
    """PartitionRecord v0-2: PartitionId, TopicId, Replicas, Isr, RemovingReplicas, AddingReplicas,
    Leader, LeaderEpoch, PartitionEpoch, Directories (v1+); tagged LeaderRecoveryState (0),
    EligibleLeaderReplicas (1, v2+), LastKnownElr (2, v2+). A null ELR is empty
    (``PartitionRegistration(PartitionRecord)`` @4.1.1)."""
    index, topic_id = r.int32(), _uuid(r)
    replicas, isr = _ints(r) or (), _ints(r) or ()
    _ints(r)                                             # RemovingReplicas
    _ints(r)                                             # AddingReplicas
    leader, leader_epoch, partition_epoch = r.int32(), r.int32(), r.int32()
    directories = tuple(r.compact_array(lambda: _uuid(r)) or ()) if version >= 1 else ()
    tags = _tags(r)
    elr = _tag(tags, 1, version >= 2, _ints, None) or ()
    last_known = _tag(tags, 2, version >= 2, _ints, None) or ()
    st.partitions[(topic_id, index)] = PartitionState(leader, leader_epoch, partition_epoch,
                                                      replicas, isr, elr, last_known)
    st.directories[(topic_id, index)] = directories


def merge(p: PartitionState, leader: int, isr, replicas, elr, last_known) -> PartitionState:
    """A PartitionChangeRecord applied to a partition, as ``PartitionRegistration.merge`` does in
    every release read (@3.6.2, @3.7.2, @3.9.1, @4.0.0, @4.1.1, @4.2.0, @4.3.0; @4.4.0 by its
    bytecode): each list field
    replaces the old one when present (not null); a Leader other than -2 (NO_LEADER_CHANGE) -- also
    -1 and also the same leader again -- sets the leader and bumps the leader epoch by one; the
    partition epoch is bumped by every record. Whether a change carries a Leader is the
    controller's choice (``PartitionChangeBuilder`` of each release), which the record records."""
    bump = leader != NO_LEADER_CHANGE
    return PartitionState(
        leader if bump else p.leader,
        p.leader_epoch + 1 if bump else p.leader_epoch,
        p.partition_epoch + 1,
        p.replicas if replicas is None else replicas,
        p.isr if isr is None else isr,
        p.elr if elr is None else elr,
        p.last_known_elr if last_known is None else last_known,
    )


def _partition_change(st: MetadataImage, r: Reader, version: int) -> None:
    """PartitionChangeRecord v0-2: PartitionId, TopicId, then only tagged fields -- Isr (0), Leader
    (1, default -2), Replicas (2), RemovingReplicas (3), AddingReplicas (4), LeaderRecoveryState
    (5), EligibleLeaderReplicas (6, v2+), LastKnownElr (7, v2+), Directories (8, v1+). A change to
    a partition not replayed is ignored (``ReplicationControlManager.replay`` @4.1.1 throws)."""
    index, topic_id = r.int32(), _uuid(r)
    tags = _tags(r)
    old = st.partitions.get((topic_id, index))
    if old is None:
        return
    st.partitions[(topic_id, index)] = merge(
        old,
        leader=_tag(tags, 1, True, Reader.int32, NO_LEADER_CHANGE),
        isr=_tag(tags, 0, True, _ints, None),
        replicas=_tag(tags, 2, True, _ints, None),
        elr=_tag(tags, 6, version >= 2, _ints, None),
        last_known=_tag(tags, 7, version >= 2, _ints, None),
    )
    directories = _tag(tags, 8, version >= 1, lambda t: tuple(t.compact_array(lambda: _uuid(t))), None)
    if directories is not None:
        st.directories[(topic_id, index)] = directories


def _register_broker(st: MetadataImage, r: Reader, version: int) -> None:
    """RegisterBrokerRecord v0-4: BrokerId, IsMigratingZkBroker (v2+), IncarnationId, BrokerEpoch,
    EndPoints [Name, Host, Port uint16, SecurityProtocol], Features [Name, Min, Max], Rack, Fenced,
    InControlledShutdown (v1+); a new registration replaces the old
    (``ClusterControlManager.replay(RegisterBrokerRecord, long)`` @4.1.1)."""
    broker = r.int32()
    if version >= 2:
        r.int8()
    _uuid(r)
    epoch = r.int64()
    _skip_struct_array(r, lambda: (r.compact_string(), r.compact_string(), r.take(2), r.int16()))
    _skip_struct_array(r, lambda: (r.compact_string(), r.int16(), r.int16()))
    r.compact_string()                                   # Rack
    fenced = r.int8() != 0
    shutting_down = r.int8() != 0 if version >= 1 else False
    st.brokers[broker] = Registration(epoch, fenced, shutting_down)


def _unregister_broker(st: MetadataImage, r: Reader, version: int) -> None:
    """UnregisterBrokerRecord v0: BrokerId, BrokerEpoch; removes a registration of that epoch."""
    broker, epoch = r.int32(), r.int64()
    if broker in st.brokers and st.brokers[broker].epoch == epoch:
        del st.brokers[broker]


def _change_registration(st: MetadataImage, broker: int, epoch: int, fenced: bool | None,
                         shutting_down: bool | None) -> None:
    """``ClusterControlManager.replayRegistrationChange`` @4.1.1: a change to the registration of
    that broker epoch (another epoch makes Kafka throw; it is ignored here)."""
    reg = st.brokers.get(broker)
    if reg is None or reg.epoch != epoch:
        return
    st.brokers[broker] = Registration(
        epoch,
        reg.fenced if fenced is None else fenced,
        reg.in_controlled_shutdown if shutting_down is None else shutting_down,
    )


def _fence_broker(st: MetadataImage, r: Reader, version: int) -> None:
    """FenceBrokerRecord v0: Id, Epoch (written by metadata versions before 3.3-IV3)."""
    broker, epoch = r.int32(), r.int64()
    _change_registration(st, broker, epoch, True, None)


def _unfence_broker(st: MetadataImage, r: Reader, version: int) -> None:
    """UnfenceBrokerRecord v0: Id, Epoch."""
    broker, epoch = r.int32(), r.int64()
    _change_registration(st, broker, epoch, False, None)


def _broker_registration_change(st: MetadataImage, r: Reader, version: int) -> None:
    """BrokerRegistrationChangeRecord v0-3: BrokerId, BrokerEpoch; tagged Fenced (0: 1 fence, -1
    unfence, 0 no change; ``BrokerRegistrationFencingChange``), InControlledShutdown (1, v1+: 1 in
    controlled shutdown, 0 no change -- only a new registration leaves that state,
    ``BrokerRegistrationInControlledShutdownChange`` @4.1.1)."""
    broker, epoch = r.int32(), r.int64()
    tags = _tags(r)
    fenced = {1: True, -1: False}.get(_tag(tags, 0, True, Reader.int8, 0))
    shutting_down = True if _tag(tags, 1, version >= 1, Reader.int8, 0) == 1 else None
    _change_registration(st, broker, epoch, fenced, shutting_down)


HANDLERS: dict[int, Callable[[MetadataImage, Reader, int], None]] = {
    TOPIC: _topic,
    REMOVE_TOPIC: _remove_topic,
    PARTITION: _partition,
    PARTITION_CHANGE: _partition_change,
    REGISTER_BROKER: _register_broker,
    UNREGISTER_BROKER: _unregister_broker,
    FENCE_BROKER: _fence_broker,
    UNFENCE_BROKER: _unfence_broker,
    BROKER_REGISTRATION_CHANGE: _broker_registration_change,
}


# --- the log --------------------------------------------------------------------------------------

def frame(value: bytes, offset: int) -> tuple[int, int, Reader]:
    """(api key, version, reader over the message) of a metadata record value
    (``AbstractApiMessageSerde.read`` @4.1.1)."""
    r = Reader(value)
    try:
        frame_version, api_key, version = r.uvarint(), r.uvarint(), r.uvarint()
    except WireError as e:
        raise DiskError(f"metadata record at offset {offset}: {e}") from None
    if frame_version != FRAME_VERSION:
        raise DiskError(f"metadata record at offset {offset}: frame version {frame_version}, "
                        f"expected {FRAME_VERSION}")
    return api_key, version, r


def metadata_records(files: list[Path], start: int = 0) -> Iterator[tuple[int, bytes]]:
    """(offset, value) of the data records at or after ``start`` in these segment or snapshot
    files, control batches skipped, a torn tail ignored."""
    for f in files:
        for b in batches(f):
            if b.attributes & CONTROL_FLAG or b.last_offset < start:
                continue
            yield from ((off, v) for off, v in records(b) if off >= start)


def _apply(st: MetadataImage, offset: int, api_key: int, version: int, r: Reader) -> None:
    try:
        HANDLERS[api_key](st, r, version)
    except WireError as e:
        raise DiskError(f"metadata record at offset {offset} (api key {api_key} v{version}): {e}") from None


def replay(st: MetadataImage, recs: Iterator[tuple[int, bytes]],
           applied: Callable[[int], None] = lambda offset: None) -> None:
    """Apply the records that matter in order; a transaction's records at its end. ``applied`` is
    called with each record's offset once it is applied."""
    pending: list[tuple[int, int, int, Reader]] | None = None
    for offset, value in recs:
        api_key, version, r = frame(value, offset)
        if api_key == BEGIN_TRANSACTION:
            pending = []
        elif api_key in (END_TRANSACTION, ABORT_TRANSACTION):
            if api_key == END_TRANSACTION:
                for item in pending or []:
                    _apply(st, *item)
                    applied(item[0])
            pending = None
        elif api_key in HANDLERS:
            if pending is not None:
                pending.append((offset, api_key, version, r))
            else:
                _apply(st, offset, api_key, version, r)
                applied(offset)


def latest_snapshot(metadata_dir: Path) -> tuple[Path, int] | None:
    """The newest complete snapshot ``<end offset>-<epoch>.checkpoint`` and its end offset
    (``Snapshots.parse`` @4.1.1), or None."""
    found = []
    for p in metadata_dir.glob("*.checkpoint"):
        offset, _, epoch = p.stem.partition("-")
        if offset.isdigit() and epoch.isdigit():
            found.append(((int(offset), int(epoch)), p))
    if not found:
        return None
    (offset, _), path = max(found)
    return path, offset


def resolve(metadata_dir: str | os.PathLike) -> Path:
    """The ``__cluster_metadata-0`` directory: ``metadata_dir`` itself, or that child of it (the
    controller's ``log.dirs``)."""
    d = Path(metadata_dir)
    return d / METADATA_PARTITION if (d / METADATA_PARTITION).is_dir() else d


def replay_dir(metadata_dir: str | os.PathLike) -> MetadataImage:
    """The image replayed from the newest snapshot, then from the log after it; an empty image
    for a missing directory."""
    d, st = resolve(metadata_dir), MetadataImage()
    if not d.is_dir():
        return st
    snap = latest_snapshot(d)
    start = 0
    if snap is not None:
        replay(st, metadata_records([snap[0]]))
        start = snap[1]
    replay(st, metadata_records(segments(d), start))
    return st


def controller_view(metadata_dir: str | os.PathLike, topic: str, partition: int = 0) -> ControllerView:
    """The controller's view of ``topic-partition`` and of the brokers, from its metadata log
    directory (``<log.dirs>/__cluster_metadata-0``, or the log dir holding it). A missing directory
    or a topic not created yet gives ``partition`` None."""
    st = replay_dir(metadata_dir)
    topic_id = st.topics.get(topic)
    state = None if topic_id is None else st.partitions.get((topic_id, partition))
    return ControllerView(
        state,
        frozenset(st.brokers),
        frozenset(b for b, reg in st.brokers.items() if reg.fenced),
        {b: reg.epoch for b, reg in sorted(st.brokers.items())},
    )


def fenced_leaders(metadata_dir: str | os.PathLike, topic: str, partition: int = 0) -> list[tuple[int, int, int]]:
    """Every committed controller event (one record batch: ``QuorumController`` appends one event's
    records atomically) after which the partition's leader was a broker the controller had fenced
    or had no registration of: (batch base offset, leader, leader epoch). The KAFKA-19522 window can
    be a few hundred milliseconds (the election written with the registration, the broker unfenced
    after it catches up), too short to poll for; the log keeps it. Replays the log from its start
    (a snapshot's events are not seen one by one: the limit of a run long enough to snapshot)."""
    d, st = resolve(metadata_dir), MetadataImage()
    if not d.is_dir():
        return []
    out = []
    for f in segments(d):
        for b in batches(f):
            if b.attributes & CONTROL_FLAG:
                continue
            replay(st, records(b))
            topic_id = st.topics.get(topic)
            p = None if topic_id is None else st.partitions.get((topic_id, partition))
            if p is None or p.leader < 0:
                continue
            reg = st.brokers.get(p.leader)
            if reg is None or reg.fenced:
                out.append((b.base_offset, p.leader, p.leader_epoch))
    return out


def directory_id(log_dir: str | os.PathLike) -> bytes | None:
    """The directory id a log directory was formatted with (``meta.properties`` ``directory.id``,
    KIP-858, 3.7+: a Uuid as URL-safe base64 without padding), as the 16 bytes the metadata
    records carry; None without one."""
    import base64
    props = Path(log_dir) / "meta.properties"
    lines = props.read_text().splitlines() if props.exists() else []
    text = next((ln.split("=", 1)[1].strip() for ln in lines if ln.startswith("directory.id=")), None)
    return None if text is None else base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def unfencings(metadata_dir: str | os.PathLike, topic: str, partition: int = 0) -> list[tuple[int, int, bytes | None]]:
    """Every record that unfences a broker holding a replica of the partition: (its offset, the
    broker, the log directory the partition named for that replica just before it). The election
    that follows in the same event (``handleBrokerUnfenced`` @4.1.1) accepts the broker as leader
    only if that directory is one of its online ones (``LeaderAcceptor.test``, ``hasOnlineDir``):
    after a disk replacement, only once the broker's AssignReplicasToDirs has named its new
    directory, and the two reach the controller in either order (both may share one record batch:
    the order is the records'). None: no directory recorded (record version 0)."""
    d = resolve(metadata_dir)
    if not d.is_dir():
        return []
    recs = (rec for f in segments(d) for b in batches(f) if not b.attributes & CONTROL_FLAG for rec in records(b))
    return unfencings_in(MetadataImage(), recs, topic, partition)


def unfencings_in(st: MetadataImage, recs: Iterator[tuple[int, bytes]], topic: str,
                  partition: int = 0) -> list[tuple[int, int, bytes | None]]:
    """``unfencings`` over records replayed onto ``st``."""
    out: list[tuple[int, int, bytes | None]] = []
    fenced = frozenset(b for b, reg in st.brokers.items() if reg.fenced)
    replicas: tuple[int, ...] = ()                   # the partition's, and their directories, before the record
    directories: tuple[bytes, ...] = ()

    def applied(offset: int) -> None:
        nonlocal fenced, replicas, directories
        now = frozenset(b for b, reg in st.brokers.items() if reg.fenced)
        for broker in sorted(fenced - now):
            if broker in st.brokers and broker in replicas:
                at = replicas.index(broker)
                out.append((offset, broker, directories[at] if at < len(directories) else None))
        key = (st.topics.get(topic), partition)
        p = st.partitions.get(key)
        fenced, replicas, directories = now, () if p is None else p.replicas, st.directories.get(key, ())

    replay(st, recs, applied)
    return out
