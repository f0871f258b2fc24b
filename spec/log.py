"""Log and leader-epoch-cache operations shared by every action (one source of truth each).

>>> r = Replica(1, 0, -1, -1, 0, ((0, 0), (1, 0), (2, 1)), 3, 0, ((0, 0), (1, 2)), 0, ())
>>> truncate(r, 2).log, truncate(r, 2).hw, truncate(r, 2).epoch_cache
(((0, 0), (1, 0)), 2, ((0, 0),))
>>> end_offset_for(((0, 0), (2, 5)), 7, 1)
(0, 5)
"""

from __future__ import annotations

from typing import Tuple

from .state import UNDEFINED, Entry, Replica


def truncate(rep: Replica, offset: int) -> Replica:
    """Truncate the log to ``offset`` (Log.truncateTo).

    HW and the flushed point follow the log down; epoch-cache entries that start at or
    beyond the new end are removed (LeaderEpochFileCache.truncateFromEnd). At or beyond the LEO
    the log stays, but the cache is still trimmed to the LEO: a leader that took office and wrote
    nothing left an entry there that conflicts with the new leader's epochs (Kafka 2.1 on,
    "Always truncate epoch cache ..."); without this a follower asks about that epoch forever.
    """
    if offset >= rep.leo:
        cache = tuple(e for e in rep.epoch_cache if e[1] < rep.leo)
        return rep if cache == rep.epoch_cache else rep._replace(epoch_cache=cache)
    return rep._replace(
        log=rep.log[:offset],
        hw=min(rep.hw, offset),
        flushed=min(rep.flushed, offset),
        epoch_cache=tuple(e for e in rep.epoch_cache if e[1] < offset),
    )


def cache_assign(cache: Tuple[Entry, ...], epoch: int, start: int) -> Tuple[Entry, ...]:
    """Record that ``epoch`` starts at ``start`` (LeaderEpochFileCache.assign).

    Nothing changes when the latest entry already is this epoch from an earlier offset;
    otherwise entries that the new one supersedes (epoch >= it, or start >= it) go.
    """
    if cache and cache[-1][0] == epoch and cache[-1][1] <= start:
        return cache
    return tuple(e for e in cache if e[0] < epoch and e[1] < start) + ((epoch, start),)


def latest_epoch(cache: Tuple[Entry, ...]) -> int:
    return cache[-1][0] if cache else UNDEFINED


def epoch_start(cache: Tuple[Entry, ...], epoch: int) -> int:
    """Start offset of ``epoch`` in the cache, or UNDEFINED."""
    for e, start in cache:
        if e == epoch:
            return start
    return UNDEFINED


def end_offset_for(cache: Tuple[Entry, ...], leo: int, requested: int) -> Entry:
    """The ``(epoch, end_offset)`` answer for a requested epoch (KIP-279 endOffsetFor).

    - the latest epoch: its end is the LEO;
    - otherwise the largest epoch <= requested, ending where the next higher epoch starts;
    - below every known epoch: (requested, start of the first epoch);
    - above every known epoch, or an empty cache: (UNDEFINED, UNDEFINED).
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


def append(rep: Replica, entries: Tuple[Entry, ...], track_epochs: bool) -> Replica:
    """Append entries at the LEO. With epochs, every appended entry is assigned to the cache
    (Log.append calls LeaderEpochFileCache.assign per batch): a new epoch gains an entry at its
    offset, and entries it supersedes (a higher epoch, or one starting at or after it) go."""
    cache = rep.epoch_cache
    if track_epochs:
        for offset, (_, epoch) in enumerate(entries, start=rep.leo):
            cache = cache_assign(cache, epoch, offset)
    return rep._replace(log=rep.log + entries, epoch_cache=cache)
