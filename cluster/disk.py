"""A partition's files as Kafka left them on disk: records, log end offset, checkpoints, and the cut
that emulates a power failure.

A partition directory ``<log.dirs>/<topic>-<partition>/`` holds segments named by their base
offset (``00000000000000000000.log`` with its ``.index``, ``.timeindex``, ``.txnindex``), producer
state snapshots (``<offset>.snapshot``) and the ``leader-epoch-checkpoint``; the log directory above
it holds ``replication-offset-checkpoint`` (high watermarks) and ``recovery-point-offset-checkpoint``
(the offsets below which the log is known flushed).

What the broker does with them on start (read in the sources of kafka-storage 4.1.1 and of
kafka_2.13 3.9.1, where the same logic is Scala):

- ``LogLoader.loadSegmentFiles @4.1.1`` (and ``@3.9.1``) opens every ``.log`` and calls
  ``LogSegment.sanityCheck``, which throws ``NoSuchFileException`` when the offset index is missing;
  the loader then recovers that segment, clean shutdown or not (it only logs an error first when
  the shutdown was clean or the segment lies below the recovery point).
- ``LogSegment.recover @4.1.1`` resets the offset, time and transaction indexes, re-reads every
  batch (``ensureValid``: size and CRC), rebuilds the indexes and re-assigns leader epochs, and
  truncates the file at the first invalid batch -- a torn tail is dropped.
- ``LogLoader.recoverLog @4.1.1`` (no ``.kafka_cleanshutdown`` marker in the log dir) recovers the
  segments from the recovery point on and, once one was truncated, deletes all later ones.
- ``LogLoader.load @4.1.1`` then truncates the leader epoch cache to the log end offset
  (``truncateFromEndAsyncFlush``) and ``ProducerStateManager.truncateAndReload @4.1.1`` deletes
  producer snapshots above it.
"""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path
from typing import Callable, Iterator, NamedTuple, TypeVar

T = TypeVar("T")

LOG_OVERHEAD = 12                 # baseOffset int64 + batchLength int32 (Records.LOG_OVERHEAD)
HEADER_SIZE_UP_TO_MAGIC = 17      # ... + partitionLeaderEpoch int32 + magic int8
RECORD_OVERHEAD_V0 = 14           # the smallest batchLength FileLogInputStream accepts
BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")   # the v2 batch header, 61 bytes (DefaultRecordBatch)
COMPRESSION_MASK = 0x07
CONTROL_FLAG = 0x20
SEGMENT_INDEXES = (".index", ".timeindex", ".txnindex")


class DiskError(Exception):
    """A partition's files that cannot be read as this module expects; the message is one line."""


class Entry(NamedTuple):
    """One data record: its offset, value (b"" for a null value) and the leader epoch of its batch."""
    offset: int
    value: bytes
    epoch: int


class Batch(NamedTuple):
    """A record batch's place in its segment and the fields an observer needs."""
    base_offset: int
    last_offset: int               # baseOffset + lastOffsetDelta
    epoch: int                     # partitionLeaderEpoch
    position: int                  # byte position of the batch in the segment
    size: int                      # LOG_OVERHEAD + batchLength
    attributes: int
    records: bytes                 # the records after the header (magic 0/1: the message after its attributes)
    magic: int = 2


# --- segments and batches -------------------------------------------------------------------------

def segments(partition_dir: str | os.PathLike) -> list[Path]:
    """The ``*.log`` segment files in base-offset order (``.log.deleted``/``.log.swap`` and other
    suffixes are not segments, ``LogFileUtils.isLogFile @4.1.1``)."""
    return sorted(Path(partition_dir).glob("*.log"), key=lambda p: int(p.stem))


def batches(segment: Path) -> Iterator[Batch]:
    """The whole batches of one segment, as ``FileLogInputStream.nextBatch @4.1.1`` reads them:
    fewer than 17 bytes left, or a batch that runs past the end of the file, ends the segment (a
    torn tail); so does a batchLength below the minimum (zeros), which the broker's recovery
    truncates as corrupt. CRCs are not checked. A magic 0/1 entry (message format of 0.10,
    ``LegacyRecord``: crc int32, magic int8, attributes int8, magic 1's timestamp int64, key,
    value) is read as a batch of one record at epoch -1: that format carries no leader epoch."""
    return batches_in(segment.read_bytes(), segment)


def batches_in(data: bytes, where: object = "a Fetch answer") -> Iterator[Batch]:
    """The whole batches of ``data`` (a segment's bytes, or the records of a Fetch answer, which
    ends where the broker's size limit cut it: a partial last batch is left out, as a consumer
    does); ``where`` names it in an error."""
    pos = 0
    while pos + HEADER_SIZE_UP_TO_MAGIC <= len(data):
        base, length, epoch, magic = struct.unpack_from(">qiib", data, pos)
        if length < RECORD_OVERHEAD_V0 or pos + LOG_OVERHEAD + length > len(data):
            return
        if magic in (0, 1):
            size = LOG_OVERHEAD + length
            yield Batch(base, base, -1, pos, size, data[pos + 17], data[pos + 18:pos + size], magic)
            pos += size
            continue
        if magic != 2:
            raise DiskError(f"{where}: batch at byte {pos} has magic {magic}; only magics 0, 1 and 2 are read")
        if LOG_OVERHEAD + length < BATCH_HEADER.size:
            return
        fields = BATCH_HEADER.unpack_from(data, pos)
        attributes, last_delta = fields[5], fields[6]
        size = LOG_OVERHEAD + length
        yield Batch(base, base + last_delta, epoch, pos, size, attributes,
                    data[pos + BATCH_HEADER.size:pos + size])
        pos += size


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint/varlong (``ByteUtils.readVarint`` @4.1.1) and the position after it."""
    v = shift = 0
    while True:
        b = data[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return (v >> 1) ^ -(v & 1), pos
        shift += 7


def records(batch: Batch) -> Iterator[tuple[int, bytes]]:
    """(offset, value) of each record of an uncompressed v2 batch (``DefaultRecord.readFrom``
    @4.1.1): length, attributes int8, timestampDelta varlong, offsetDelta varint, key, value,
    headers -- lengths as zigzag varints, -1 for null."""
    if batch.attributes & COMPRESSION_MASK:
        raise DiskError(f"batch at offset {batch.base_offset} is compressed "
                        f"(codec {batch.attributes & COMPRESSION_MASK}); only uncompressed batches are read")
    if batch.magic < 2:                               # LegacyRecord: [timestamp], key, value
        p = 8 if batch.magic == 1 else 0
        (klen,) = struct.unpack_from(">i", batch.records, p)
        p += 4 + max(klen, 0)
        (vlen,) = struct.unpack_from(">i", batch.records, p)
        yield batch.base_offset, batch.records[p + 4:p + 4 + vlen] if vlen >= 0 else b""
        return
    data, pos = batch.records, 0
    while pos < len(data):
        length, pos = _varint(data, pos)
        end = pos + length
        p = pos + 1                                   # attributes
        _, p = _varint(data, p)                       # timestampDelta
        delta, p = _varint(data, p)                   # offsetDelta
        klen, p = _varint(data, p)
        p += max(klen, 0)
        vlen, p = _varint(data, p)
        value = data[p:p + vlen] if vlen >= 0 else b""
        yield batch.base_offset + delta, value
        pos = end


def read_log(partition_dir: str | os.PathLike) -> list[Entry]:
    """Every data record of every segment, in offset order, with its batch's leader epoch. Control
    batches (attributes bit 5: transaction markers, ``RecordBatch.isControlBatch``) are skipped --
    their offsets are taken but hold no data; a torn tail is ignored, as recovery drops it.
    Compressed batches raise DiskError (the harness produces uncompressed)."""
    out = []
    for seg in segments(partition_dir):
        for b in batches(seg):
            if b.attributes & CONTROL_FLAG:
                continue
            out.extend(Entry(off, value, b.epoch) for off, value in records(b))
    return out


def leo(partition_dir: str | os.PathLike) -> int:
    """The log end offset: one past the last offset of the last whole batch (its lastOffsetDelta,
    not its record count: compaction and control batches leave gaps; ``LogSegment.readNextOffset``
    @4.1.1); 0 for an empty log. A segment without batches counts from its base offset."""
    end = 0
    for seg in segments(partition_dir):
        end = max(end, int(seg.stem))
        for b in batches(seg):
            end = b.last_offset + 1
    return end


def byte_position(partition_dir: str | os.PathLike, offset: int) -> tuple[Path, int]:
    """The segment and byte position where the batch containing (or, past a gap, the first batch
    after) ``offset`` begins; at or past the end, the end of the last segment's whole batches."""
    segs = segments(partition_dir)
    if not segs:
        raise DiskError(f"{partition_dir}: no segments")
    for seg in segs:
        end = 0
        for b in batches(seg):
            if b.last_offset >= offset:
                return seg, b.position
            end = b.position + b.size
    return segs[-1], end


# --- the cut --------------------------------------------------------------------------------------

def _unlink(path: Path) -> None:
    path.unlink(missing_ok=True)


def cut(partition_dir: str | os.PathLike, offset: int) -> None:
    """Emulate a power failure that lost everything from ``offset`` on: truncate the segment holding
    it to the batch boundary at or below it, delete later segments with their indexes, delete
    producer snapshots above the new end, and delete the cut segment's ``.index``/``.timeindex``
    so that the broker rebuilds them (``LogLoader.loadSegmentFiles`` -> ``LogSegment.recover``
    @4.1.1, @3.9.1). The leader-epoch-checkpoint is left: ``LogLoader.load`` @4.1.1 truncates the
    epoch cache to the new log end itself. A clean-shutdown marker in the log dir above would make
    the broker skip ``recoverLog`` for other segments; the harness kills the broker first."""
    d = Path(partition_dir)
    seg, pos = byte_position(d, offset)
    base = int(seg.stem)
    new_end = next((b.base_offset for b in batches(seg) if b.position >= pos), None)
    with open(seg, "r+b") as f:
        f.truncate(pos)
    for later in segments(d):
        if int(later.stem) > base:
            for suffix in SEGMENT_INDEXES + (".log",):
                _unlink(later.with_suffix(suffix))
    for suffix in (".index", ".timeindex"):
        _unlink(seg.with_suffix(suffix))
    if new_end is None:
        new_end = leo(d)
    for snap in d.glob("*.snapshot"):
        if snap.stem.isdigit() and int(snap.stem) > new_end:
            _unlink(snap)


# --- checkpoints ----------------------------------------------------------------------------------

def _checkpoint(path: Path, entry: Callable[[str], T]) -> list[T]:
    """The entries of a checkpoint file (``CheckpointFile.CheckpointReadBuffer.read`` @4.1.1):
    version line (0), count line, one whitespace-separated entry a line. An empty file has no
    entries (the broker creates the file empty), nor has a missing one. Kafka rewrites these by
    writing ``<name>.tmp`` and renaming it; if the move falls back to a non-atomic one a read can
    see a short file, so a garbled read is retried once."""
    for attempt in (0, 1):
        try:
            lines = path.read_text().splitlines()
        except FileNotFoundError:
            return []
        try:
            if len(lines) < 2:
                if lines and int(lines[0]) != 0:
                    raise ValueError(f"version {lines[0]}")
                return []
            version, count = int(lines[0]), int(lines[1])
            if version != 0:
                raise DiskError(f"{path}: checkpoint version {version}, expected 0")
            entries = [entry(line) for line in lines[2:]]
            if len(entries) == count:
                return entries
            problem = f"{len(entries)} entries, {count} announced"
        except ValueError as e:
            problem = str(e)
        if attempt == 0:
            time.sleep(0.05)
    raise DiskError(f"{path}: malformed checkpoint ({problem})")


def _offset_entry(line: str) -> tuple[tuple[str, int], int]:
    topic, partition, offset = line.split()
    return (topic, int(partition)), int(offset)


def _epoch_entry(line: str) -> tuple[int, int]:
    epoch, start_offset = line.split()
    return int(epoch), int(start_offset)


def offset_checkpoint(path: str | os.PathLike) -> dict[tuple[str, int], int]:
    """``replication-offset-checkpoint`` or ``recovery-point-offset-checkpoint`` (entries "topic
    partition offset", ``OffsetCheckpointFile.Formatter`` @4.1.1) as {(topic, partition): offset};
    a missing file is empty."""
    return dict(_checkpoint(Path(path), _offset_entry))


def epoch_checkpoint(partition_dir: str | os.PathLike) -> list[tuple[int, int]]:
    """``<partition_dir>/leader-epoch-checkpoint`` (entries "epoch startOffset",
    ``LeaderEpochCheckpointFile.Formatter`` @4.1.1) as [(epoch, start_offset)]; missing is []."""
    return _checkpoint(Path(partition_dir) / "leader-epoch-checkpoint", _epoch_entry)
