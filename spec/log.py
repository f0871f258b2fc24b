"""The log and the leader-epoch cache (Kafka's ``Log`` and ``LeaderEpochFileCache``), one function
per operation and, where Kafka changed an operation, one function per release that has it. A mode
(spec/modes.py) names the release's functions; nothing here reads a mode.

>>> r = Replica(1, 0, -1, -1, 0, ((0, 0), (1, 0), (2, 1)), 3, 0, ((0, 0), (1, 2)), 0, ())
>>> truncate(r, 2).log, truncate(r, 2).hw, truncate(r, 2).epoch_cache
(((0, 0), (1, 0)), 2, ((0, 0),))
>>> end_offset_for_2_1(((0, 0), (2, 5)), 7, 1)
(0, 5)
"""

from __future__ import annotations

from typing import Callable, Optional, Tuple

from .state import UNDEFINED, Entry, Replica

Cache = Tuple[Entry, ...]


def truncate(rep: Replica, offset: int, trim_cache_at_leo: bool = False) -> Replica:
    """Truncate the log to ``offset`` (``Log.truncateTo``): HW and the flushed point follow the
    log down, and cache entries that start at or beyond the new end go
    (``LeaderEpochFileCache.clearAndFlushLatest`` 0.11-2.0, ``truncateFromEnd`` 2.1 on).

    At or beyond the LEO ``Log.truncateTo`` does nothing up to 2.6.0 ("has no effect"); from 2.6.1
    and 2.7.0 (KAFKA-10706) it still trims cache entries starting at the LEO (``trim_cache_at_leo``): a
    leader that took office and wrote nothing left an entry there that conflicts with the new
    leader's epochs, and without the trim its follower asks about that epoch forever.
    """
    if offset >= rep.leo:
        if not trim_cache_at_leo:
            return rep
        cache = tuple(e for e in rep.epoch_cache if e[1] < rep.leo)
        return rep if cache == rep.epoch_cache else rep._replace(epoch_cache=cache)
    return rep._replace(
        log=rep.log[:offset],
        hw=min(rep.hw, offset),
        flushed=min(rep.flushed, offset),
        epoch_cache=tuple(e for e in rep.epoch_cache if e[1] < offset),
    )


# ---------------------------------------------------------------- LeaderEpochFileCache.assign

def assign_0_11(cache: Cache, epoch: int, start: int) -> Cache:
    """``LeaderEpochFileCache.assign`` 0.11.0.0-2.0.x: append ``(epoch, start)`` only when the
    epoch is above the latest cached one and the offset at or past the latest start; otherwise
    the cache stays as it is ("Once the epoch is assigned it cannot be reassigned").

    >>> assign_0_11(((0, 0), (2, 1)), 1, 1)        # a lower epoch is ignored, nothing truncated
    ((0, 0), (2, 1))
    >>> assign_0_11(((0, 0),), 1, 3)
    ((0, 0), (1, 3))
    """
    latest_epoch, latest_start = cache[-1] if cache else (UNDEFINED, UNDEFINED)
    if epoch >= 0 and epoch > latest_epoch and start >= latest_start:
        return cache + ((epoch, start),)
    return cache


def assign_2_1(cache: Cache, epoch: int, start: int) -> Cache:
    """``LeaderEpochFileCache.assign`` from 2.1.0 (KAFKA-7415): unless the latest entry already is
    this epoch from an earlier offset, ``truncateAndAppend``: entries with an epoch at or above it,
    or a start at or after it, go, and ``(epoch, start)`` is appended.

    >>> assign_2_1(((0, 0), (2, 1)), 1, 1)
    ((0, 0), (1, 1))
    """
    if cache and cache[-1][0] == epoch and cache[-1][1] <= start:
        return cache
    return tuple(e for e in cache if e[0] < epoch and e[1] < start) + ((epoch, start),)


# ---------------------------------------------------------------- LeaderEpochFileCache.endOffsetFor

def end_offset_for_0_11(cache: Cache, leo: int, requested: int) -> Entry:
    """``LeaderEpochFileCache.endOffsetFor`` 0.11.0.0-1.1.x, which answers an offset only (the
    epoch half of the pair is UNDEFINED): the LEO for the latest epoch, UNDEFINED when no epoch is
    higher or the requested one is below the first cached; otherwise the start offset of the
    first higher epoch, even when the leader never had the requested epoch (KAFKA-6361).

    >>> end_offset_for_0_11(((0, 0), (2, 3)), 5, 1)
    (-1, 3)
    """
    latest = cache[-1][0] if cache else UNDEFINED
    if requested == latest:
        return (UNDEFINED, leo)
    higher = [start for e, start in cache if e > requested]
    if not higher or requested < cache[0][0]:
        return (UNDEFINED, UNDEFINED)
    return (UNDEFINED, higher[0])


def end_offset_for_2_0(cache: Cache, leo: int, requested: int) -> Entry:
    """``LeaderEpochFileCache.endOffsetFor`` 2.0.x (KIP-279): ``(epoch, end_offset)`` of the
    largest cached epoch <= the requested one, ending where the next higher epoch starts;
    ``(requested, LEO)`` for the latest epoch; UNDEFINED for UNDEFINED, above every cached epoch,
    or below the first cached epoch.

    >>> end_offset_for_2_0(((1, 0), (2, 3)), 5, 0)
    (-1, -1)
    """
    if requested == UNDEFINED:
        return (UNDEFINED, UNDEFINED)
    if cache and cache[-1][0] == requested:
        return (requested, leo)
    higher = next((i for i, (e, _) in enumerate(cache) if e > requested), None)
    if higher is None or higher == 0:
        return (UNDEFINED, UNDEFINED)
    return (cache[higher - 1][0], cache[higher][1])


def end_offset_for_2_1(cache: Cache, leo: int, requested: int) -> Entry:
    """``LeaderEpochFileCache.endOffsetFor`` from 2.1.0 (KAFKA-7415): as 2.0, but a requested
    epoch below the first cached one is answered ``(requested, start of the first epoch)``.

    >>> end_offset_for_2_1(((1, 0), (2, 3)), 5, 0)
    (0, 0)
    """
    if requested == UNDEFINED or not cache:
        return (UNDEFINED, UNDEFINED)
    if cache[-1][0] == requested:
        return (requested, leo)
    higher = next((i for i, (e, _) in enumerate(cache) if e > requested), None)
    if higher is None:
        return (UNDEFINED, UNDEFINED)
    if higher == 0:
        return (requested, cache[0][1])
    return (cache[higher - 1][0], cache[higher][1])


# ---------------------------------------------------------------- helpers every release shares

def latest_epoch(cache: Cache) -> int:
    return cache[-1][0] if cache else UNDEFINED


def epoch_start(cache: Cache, epoch: int) -> int:
    """Start offset of ``epoch`` in the cache, or UNDEFINED."""
    for e, start in cache:
        if e == epoch:
            return start
    return UNDEFINED


def append(rep: Replica, entries: Tuple[Entry, ...],
           assign: Optional[Callable[[Cache, int, int], Cache]]) -> Replica:
    """Append entries at the LEO (``Log.append``); with epochs every appended batch is assigned to
    the cache at its offset by the release's ``assign`` (one record per batch here)."""
    cache = rep.epoch_cache
    if assign is not None:
        for offset, (_, epoch) in enumerate(entries, start=rep.leo):
            cache = assign(cache, epoch, offset)
    return rep._replace(log=rep.log + entries, epoch_cache=cache)
