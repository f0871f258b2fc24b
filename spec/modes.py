"""Protocol variants as small sets of rules, named by the Kafka change that introduced them.

The actions in ``actions.py`` are shared by every mode; a mode only answers these questions:

- ``epochs``: does a follower find its divergence point with OffsetsForLeaderEpoch (and keep an
  epoch cache), or does it truncate to its own HW (before 0.11)?
- ``cache_on_become_leader``: does a new leader add ``(epoch, LEO)`` to its epoch cache when it
  takes office (KAFKA-7415, 2.1), or on its first write in the epoch (0.11 to 2.0)?
- ``fenced``: do Fetch and OffsetsForLeaderEpoch carry the sender's current leader epoch and get
  FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH when it differs from the leader's (KIP-320)?
- ``expand_waits_for_epoch_start``: may a follower join the ISR only once it has reached the start
  offset of the leader's current epoch (KIP-320's ISR rule)?
- ``leader_answer``: how a leader answers OffsetsForLeaderEpoch(requested epoch).
- ``restart_after_detection``: does the controller notice every bounce (KIP-380, 2.2: a restarted
  broker registers with a new broker epoch, and the controller handles it as a failure before the
  broker serves again)? Before that a quick restart could be missed (KAFKA-1120) and the broker
  re-applied the LeaderAndIsr it had before, even as leader at the same epoch.

The follower's side of the exchange is the same function in every epoch mode
(``follower_truncation``): Kafka 2.x follows the 0.11 rule when the answer carries no epoch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

from .log import end_offset_for
from .state import UNDEFINED, Entry, Replica


def kip101_answer(cache: Tuple[Entry, ...], leo: int, requested: int) -> Entry:
    """0.11: the LEO for the leader's latest epoch, else the start offset of the first higher
    epoch; UNDEFINED when no epoch is higher or the requested one predates the cache.
    The answer has no epoch (the 0.11 response carried an offset only)."""
    if cache and cache[-1][0] == requested:
        return (UNDEFINED, leo)
    if not cache or requested < cache[0][0]:
        return (UNDEFINED, UNDEFINED)
    higher = [start for epoch, start in cache if epoch > requested]
    return (UNDEFINED, higher[0]) if higher else (UNDEFINED, UNDEFINED)


def kip279_answer(cache: Tuple[Entry, ...], leo: int, requested: int) -> Entry:
    """2.0 on: ``(epoch, end_offset)`` of the largest epoch <= the requested one."""
    return end_offset_for(cache, leo, requested)


def follower_truncation(rep: Replica, answer: Entry) -> Tuple[int, bool]:
    """Where a follower truncates on an OffsetsForLeaderEpoch answer, and whether it is done
    (AbstractFetcherThread.getOffsetTruncationState)."""
    epoch, end = answer
    if end == UNDEFINED:                       # the leader knows nothing: fall back to the HW
        return rep.hw, True
    if epoch == UNDEFINED:                     # an answer without epoch (0.11 leader)
        return min(end, rep.leo), True
    own_epoch, own_end = end_offset_for(rep.epoch_cache, rep.leo, epoch)
    if own_end == UNDEFINED:                   # follower tracked no such epoch
        return min(end, rep.leo), True
    if own_epoch != epoch:                     # follower lacks the leader's epoch: step back, ask again
        return min(own_end, rep.leo), False
    return min(own_end, end, rep.leo), True


@dataclass(frozen=True)
class Mode:
    name: str
    kafka: str
    epochs: bool
    cache_on_become_leader: bool
    fenced: bool
    expand_waits_for_epoch_start: bool
    leader_answer: Optional[Callable[[Tuple[Entry, ...], int, int], Entry]]
    restart_after_detection: bool


MODE_RULES: Dict[str, Mode] = {
    "hw": Mode("hw", "before 0.11", False, False, False, False, None, False),
    "kip101": Mode("kip101", "0.11", True, False, False, False, kip101_answer, False),
    "kip279": Mode("kip279", "2.0", True, False, False, False, kip279_answer, False),
    "epoch": Mode("epoch", "2.1 to today (KIP-320, with KIP-380's bounce detection)", True, True, True, True,
                  kip279_answer, True),
}
