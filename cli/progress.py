"""Live progress for any engine: the callback contract and the line on stderr.

An engine reports progress by calling ``progress(report)`` now and then (bfs does it every
``progress_every`` seconds), where ``report`` is a dict with these keys:

=============  ========  ===========================================================
key            required  meaning
=============  ========  ===========================================================
``elapsed``    yes       seconds since the search started (float)
``distinct``   yes       distinct states found so far
``depth``      no        the BFS level (or bound, unrolling step) being worked on
``queue``      no        states waiting to be expanded (frontier, queue, open set)
``generated``  no        successor states generated so far (duplicates included)
``engine``     no        the engine's name, shown at the head of the line
``phase``      no        a short word on what the engine is doing ("solving", "level")
``level_done`` no        true on the report that closes a BFS level (checker/estimate.py
                         fits the levels; bfs adds ``save``: save(folder) checkpoints it)
``estimate``   no        (states, seconds left): the search's estimated final size and
                         time to go, shown as ``~N states, ~T left``
=============  ========  ===========================================================

Unknown keys are ignored; an engine calls as often as it likes (the line redraws at most
``min_interval`` apart). Rendering:

- default: one line redrawn in place with ``\\r``, on stderr, only when both stdout and stderr
  are terminals (a pipe or a CI log sees nothing);
- ``--verbose``: one plain line per update (every ``verbose_interval`` s), terminal or not;
- ``--quiet``: nothing.

>>> import io
>>> out = io.StringIO()
>>> p = Progress("verbose", stream=out, verbose_interval=0)
>>> p({"engine": "bfs", "depth": 3, "distinct": 1200, "queue": 300, "generated": 4000, "elapsed": 2.0})
>>> print(out.getvalue().strip())
bfs  depth 3  distinct 1,200  queue 300  generated 4,000  600 states/s  0:02
>>> p({"engine": "bfs", "depth": 14, "distinct": 27461, "elapsed": 3.0, "estimate": (163512, 16.9)})
>>> print(out.getvalue().splitlines()[-1])  # doctest: +ELLIPSIS
bfs  depth 14  distinct 27,461  ...  0:03  ~160,000 states, ~17 s left
"""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO

QUIET, AUTO, VERBOSE = "quiet", "auto", "verbose"
REQUIRED_KEYS = ("elapsed", "distinct")


def level(quiet: bool, verbose: bool) -> str:
    """The progress level from the --quiet/--verbose flags (both given: quiet wins)."""
    return QUIET if quiet else VERBOSE if verbose else AUTO


def rough_count(n: int) -> str:
    """An estimated count to two significant digits.

    >>> rough_count(163512), rough_count(3_590_215), rough_count(47)
    ('160,000', '3,600,000', '47')
    """
    n = int(n)
    if n < 100:
        return f"{n:,}"
    step = 10 ** (len(str(n)) - 2)
    return f"{round(n / step) * step:,}"


def rough_time(seconds: float) -> str:
    """An estimated duration: seconds, minutes or hours.

    >>> rough_time(16.9), rough_time(125), rough_time(5400), rough_time(200000)
    ('17 s', '2 min', '1.5 h', '56 h')
    """
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    hours = seconds / 3600
    return f"{hours:.1f} h" if hours < 10 else f"{hours:.0f} h"


def clock(seconds: float) -> str:
    """Elapsed time as m:ss or h:mm:ss.

    >>> clock(5.4), clock(125), clock(3725)
    ('0:05', '2:05', '1:02:05')
    """
    s = int(seconds)
    h, m, s = s // 3600, s // 60 % 60, s % 60
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """A progress sink for engines (see the module docstring for the report contract)."""

    def __init__(self, mode=AUTO, stream: Optional[TextIO] = None, min_interval: float = 0.2,
                 verbose_interval: float = 1.0, engine: str = ""):
        if isinstance(mode, bool):            # Progress(not quiet), as engines' callers once wrote it
            mode = AUTO if mode else QUIET
        self.stream = stream if stream is not None else sys.stderr
        if mode == AUTO:
            live = self.stream.isatty() and sys.stdout.isatty()
            mode = AUTO if live else QUIET
        self.mode = mode
        self.engine = engine
        self.min_interval = verbose_interval if mode == VERBOSE else min_interval
        self.last_draw = -1e9
        self.last = None            # (elapsed, distinct) of the previous report, for the rate
        self.rate = 0.0
        self.width = 0
        self.reports = 0

    @property
    def enabled(self) -> bool:
        return self.mode != QUIET

    def line(self, report: dict) -> str:
        elapsed, distinct = float(report["elapsed"]), int(report["distinct"])
        if self.last is not None and elapsed > self.last[0]:
            recent = (distinct - self.last[1]) / (elapsed - self.last[0])
            self.rate = recent if self.rate == 0 else 0.5 * self.rate + 0.5 * recent
        elif elapsed > 0:
            self.rate = distinct / elapsed
        self.last = (elapsed, distinct)
        parts = [str(report.get("engine") or self.engine or "")]
        if report.get("phase"):
            parts.append(str(report["phase"]))
        if "depth" in report:
            parts.append(f"depth {report['depth']}")
        parts.append(f"distinct {distinct:,}")
        if "queue" in report:
            parts.append(f"queue {int(report['queue']):,}")
        if "generated" in report:
            parts.append(f"generated {int(report['generated']):,}")
        parts.append(f"{self.rate:,.0f} states/s")
        parts.append(clock(elapsed))
        if report.get("estimate"):
            states, left = report["estimate"]
            parts.append(f"~{rough_count(states)} states, ~{rough_time(left)} left")
        return "  ".join(p for p in parts if p)

    def __call__(self, report: dict) -> None:
        self.reports += 1
        if self.mode == QUIET:
            return
        now = time.monotonic()
        if now - self.last_draw < self.min_interval:
            return
        self.last_draw = now
        text = self.line(report)
        if self.mode == VERBOSE:
            self.stream.write(text + "\n")
        else:
            pad = max(0, self.width - len(text))
            self.stream.write("\r" + text + " " * pad)
            self.width = len(text)
        self.stream.flush()

    def done(self) -> None:
        """Clear the live line (a verbose log keeps its lines)."""
        if self.mode == AUTO and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0
