"""How large a breadth-first search will get, and how long it will take, from its first levels.

Generic: it sees only the numbers a level-by-level search reports at the end of each level (the
distinct states found so far, how many of them the level added, the successors generated, the
seconds elapsed), never the model. Two fits of the level sizes bracket the final count, and the
estimate is their weighted geometric mean:

- *Gompertz* (it overshoots): the log-growth of the cumulative count, ``d_k = ln(V_k / V_{k-1})``,
  shrinks by a nearly constant factor ``q`` per level once the first few levels' burst is over
  (0.90-0.93 on the gate's rows), so the rest of the search adds ``d_k q / (1 - q)`` to ``ln V``.
  Its curve has a long right tail, and the searches here end faster: it overestimates (by up to
  2-5x around the widest level).
- *Gaussian* (it undershoots before the widest level): the log of the growth ratio of the level
  sizes, ``ln(n_k / n_{k-1})``, falls about linearly with ``k`` (a bell curve), so the level sizes
  are continued along that line until they vanish; before the widest level it tends to put the
  peak too early. It has weight ``1 - OVER_WEIGHT`` = 0.7.

Both are fitted on the last :data:`WINDOW` levels. An estimate is given only when the search has
done at least :data:`MIN_LEVELS` levels, its newest level grew by less than :data:`MAX_GROWTH`
over the one before, both fits see the growth slowing, the estimates at the last
:data:`AGREE_LEVELS` levels agree within a factor of :data:`AGREEMENT`, and the estimate is at
most :data:`MAX_EXTRAPOLATION` times the states found so far; otherwise there is "no estimate
yet". The last two rules keep wild numbers out: the fits are wild where the level sizes change
course (a second wave of states, a plateau of the growth ratio), and there they disagree from one
level to the next, or, while the growth ratio stays high for several levels, they agree on a far
extrapolation (8x too many states for 3 replicas of kafka19522 without the last rule).

Measured (docs/performance.md, "How big, how long"; ``benchmarks/estimate.py``): on 31 searches
that finish, 22 it was designed on and 9 others, no estimate was more than 2x off (0.56x-1.89x),
and the first came after a median of about 20% of the states, but only after the widest level
(59-84% of the states) on the searches whose level sizes grow again midway. The duplicate rate
(the share of generated successors already seen) was measured too and left out: it falls only
from about 0.35 to 0.25 between 1% and 90% of the space (most duplicates are interleavings of
independent steps met within a level), too flat to read the saturation from.

The time left is the states still to expand times the seconds per expanded state of the last
level (a level's time is spent expanding the previous level's states).

>>> sizes = [1, 8, 39, 125, 287, 506, 763, 1093, 1530, 2071, 2703, 3399, 4144, 4954]
>>> levels = profile(sizes)
>>> estimate(levels[:6]) is None                      # too few levels: no estimate yet
True
>>> e = estimate(levels)
>>> e.states, e.depth, f"{e.seen:.0%}"
(132950, 13, '16%')
>>> estimate_states(sizes + [0]) == sum(sizes)      # a search that ended knows its size
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

WINDOW = 5            # levels each fit looks at
MIN_LEVELS = 8        # no estimate before this many levels (the first ones are a burst of growth)
MAX_GROWTH = 1.5      # no estimate while the newest level is this many times the one before, or more
AGREE_LEVELS = 3      # the estimates at this many consecutive levels ...
AGREEMENT = 1.2       # ... must agree within this factor
MAX_EXTRAPOLATION = 20   # no estimate larger than this many times the states found so far
OVER_WEIGHT = 0.3     # the Gompertz fit's weight in the (geometric) mean of the two fits
MAX_Q = 0.97          # the Gompertz fit's per-level shrink factor of ln V growth, above which: no estimate
LONG_RUN = 120.0      # seconds: an estimated time left past this is worth a hint of what else to try
SAVE_AFTER = 600.0    # seconds: an estimated time left past this turns periodic checkpoints on ...
SAVE_EVERY = 300.0    # ... one at the end of the first level this many seconds after the last


@dataclass(frozen=True)
class Level:
    """The figures at the end of one BFS level."""
    depth: int
    distinct: int         # distinct states found so far (this level's included)
    new: int              # distinct states this level added
    generated: int = 0    # successors generated so far, duplicates included
    elapsed: float = 0.0  # seconds since the search started


@dataclass(frozen=True)
class Estimate:
    """The final number of distinct states and the time the search will take, as estimated at the
    end of level ``depth``; ``seconds_left`` is counted from that level's end (``elapsed``)."""
    states: int
    seconds_left: float
    depth: int
    distinct: int
    elapsed: float

    @property
    def seen(self) -> float:
        """The share of the estimated states already found."""
        return self.distinct / self.states if self.states else 1.0

    def left_at(self, elapsed: float) -> float:
        """Seconds still to go at ``elapsed`` seconds into the search."""
        return max(0.0, self.elapsed + self.seconds_left - elapsed)

    def long(self, elapsed: float, threshold: float = LONG_RUN) -> bool:
        """Whether the search still has more than ``threshold`` seconds to go at ``elapsed``."""
        return self.left_at(elapsed) > threshold

    def as_dict(self) -> dict:
        return {"states": self.states, "seconds_left": round(self.seconds_left, 1), "at_depth": self.depth,
                "at_distinct": self.distinct, "at_elapsed_s": round(self.elapsed, 1)}


def profile(sizes: Sequence[int]) -> List[Level]:
    """Levels from the number of new states per level alone (no timing).

    >>> [(l.depth, l.distinct, l.new) for l in profile([1, 3, 2])]
    [(0, 1, 1), (1, 4, 3), (2, 6, 2)]
    """
    out, total = [], 0
    for depth, n in enumerate(sizes):
        total += n
        out.append(Level(depth, total, n))
    return out


def _gompertz(levels: Sequence[Level]) -> Optional[float]:
    v = [lv.distinct for lv in levels[-WINDOW - 1:]]
    d = [math.log(b / a) for a, b in zip(v, v[1:])]
    if min(d) <= 0:
        return None
    slope, icept = np.polyfit(np.arange(WINDOW), np.log(d), 1)
    q = math.exp(slope)
    if q >= MAX_Q:
        return None
    rest = math.exp(icept + slope * (WINDOW - 1)) * q / (1 - q)
    return v[-1] * math.exp(min(rest, 50.0))


def _gaussian(levels: Sequence[Level]) -> Optional[float]:
    n = [lv.new for lv in levels[-WINDOW - 1:]]
    ratios = [math.log(b / a) for a, b in zip(n, n[1:])]
    slope, icept = np.polyfit(np.arange(WINDOW), ratios, 1)
    if slope >= 0:
        return None
    total, size, k = float(levels[-1].distinct), float(n[-1]), WINDOW - 1
    while True:
        k += 1
        size *= math.exp(min(icept + slope * k, 50.0))
        if size < 0.5 or total > 1e18:
            return total
        total += size


def _raw(levels: Sequence[Level]) -> Optional[float]:
    """The two fits' geometric mean at the last level, or None."""
    if len(levels) < max(MIN_LEVELS, WINDOW + 2):
        return None
    window = levels[-WINDOW - 1:]
    if any(lv.new <= 0 for lv in window) or window[-1].new >= MAX_GROWTH * window[-2].new:
        return None
    over, under = _gompertz(levels), _gaussian(levels)
    if over is None or under is None:
        return None
    return over ** OVER_WEIGHT * under ** (1 - OVER_WEIGHT)


def estimate(levels: Sequence[Level]) -> Optional[Estimate]:
    """The estimate at the end of the last of ``levels`` (in order, from depth 0), or None: no
    estimate yet. A search whose last level added nothing is over: its count is exact."""
    if not levels:
        return None
    last = levels[-1]
    if last.new == 0:
        return Estimate(last.distinct, 0.0, last.depth, last.distinct, last.elapsed)
    if len(levels) < AGREE_LEVELS:
        return None
    recent = [_raw(levels[:len(levels) - i]) for i in range(AGREE_LEVELS)]
    if any(e is None for e in recent) or max(recent) > AGREEMENT * min(recent):
        return None
    states = max(int(round(recent[0])), last.distinct)
    if states > MAX_EXTRAPOLATION * last.distinct:
        return None
    return Estimate(states, _seconds_left(levels, states), last.depth, last.distinct, last.elapsed)


def _seconds_left(levels: Sequence[Level], states: int) -> float:
    """The states not expanded yet (the last level's and those still to be found) times the seconds
    the last level took per state of the level before it, whose expansion it was."""
    last, before = levels[-1], levels[-2]
    per_state = (last.elapsed - before.elapsed) / before.new if before.new else 0.0
    return max(0.0, (states - before.distinct) * per_state)


def estimate_states(sizes: Sequence[int]) -> Optional[int]:
    """The final state count from the sizes of the levels done so far (``hwcheck graph``'s
    layers), or None.

    >>> estimate_states([1, 8, 39]) is None
    True
    """
    e = estimate(profile(sizes))
    return None if e is None else e.states


class Estimator:
    """Feeds on an engine's progress reports (cli/progress.py) and keeps the latest estimate: a
    report with ``level_done`` closes a level (checker/bfs.py sends one at the end of each). A
    level whose figures give no estimate (the fits disagree there) keeps the last one made, so
    the progress line does not flicker, until the search finds more states than it said.

    >>> est = Estimator()
    >>> total = gen = 0
    >>> for depth, n in enumerate([1, 8, 39, 125, 287, 506, 763, 1093, 1530, 2071, 2703, 3399, 4144]):
    ...     total += n; gen += 3 * n
    ...     _ = est({"depth": depth, "distinct": total, "queue": n, "generated": gen, "elapsed": total / 1000,
    ...              "level_done": True})
    >>> est.current.states, round(est.current.seconds_left)
    (116385, 127)
    >>> est.current.as_dict()
    {'states': 116385, 'seconds_left': 126.6, 'at_depth': 12, 'at_distinct': 16669, 'at_elapsed_s': 16.7}
    """

    def __init__(self):
        self.levels: List[Level] = []
        self.current: Optional[Estimate] = None
        self.guess: Optional[Estimate] = None     # the last estimate made before the search ended

    def __call__(self, report: dict) -> Optional[Estimate]:
        if report.get("level_done"):
            level = Level(int(report["depth"]), int(report["distinct"]), int(report.get("queue", 0)),
                          int(report.get("generated", 0)), float(report["elapsed"]))
            if self.levels and level.distinct < self.levels[-1].distinct:
                self.levels = []          # another search started: forget the first one's levels
            if not self.levels or level.distinct != self.levels[-1].distinct or level.new == 0:
                self.levels.append(level)
            made = estimate(self.levels)
            if made is not None and level.new > 0:
                self.guess = made
            # a level that gives none keeps the last estimate, unless the search has passed it
            kept = self.guess if self.guess is not None and self.guess.states > level.distinct else None
            self.current = made if made is not None else kept
        return self.current


class Saving:
    """When a long search should save a checkpoint: first at the end of the level where the
    estimated time left passes ``after`` seconds, then at the end of the first level ``every``
    seconds after the last save.

    >>> s = Saving(after=600, every=300)
    >>> long_run = Estimate(states=10**7, seconds_left=3600, depth=20, distinct=10**5, elapsed=30)
    >>> s.due(None, 30), s.due(long_run, 30)
    (False, True)
    >>> s.saved(30); s.due(long_run, 200), s.due(long_run, 331)
    (False, True)
    """

    def __init__(self, after: float = SAVE_AFTER, every: float = SAVE_EVERY):
        self.after, self.every = after, every
        self.last: Optional[float] = None

    def due(self, current: Optional[Estimate], elapsed: float) -> bool:
        if self.last is None:
            return current is not None and current.long(elapsed, self.after)
        return elapsed - self.last >= self.every

    def saved(self, elapsed: float) -> None:
        self.last = elapsed
