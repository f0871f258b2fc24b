""""Find the shortest way to break X from here": bfs (checker/bfs.py) from the explorer's current
state (checker/trace.py ``StartingAt``), in a thread, with progress and a stop.

bfs stops on Ctrl-C (KeyboardInterrupt) and returns what it covered as verdict ``interrupted``;
the stop asks for exactly that, raised from bfs's own progress callback in the search's thread,
so the engine is used unchanged.

>>> from hwcheck.spec import Config, Model
>>> m = Model(Config(mode="hw"))
>>> s = m.init_states()[0]
>>> job = Search(m, s, "NoCommittedDataLoss")
>>> job.start().join()
>>> r = job.report()
>>> r["state"], r["verdict"], r["labels"][:2]
('done', 'violated', ['produce(r0)', 'send_fetch(r1)'])
"""

from __future__ import annotations

import threading
import time
from typing import Optional

from hwcheck.checker.bfs import bfs
from hwcheck.checker.trace import StartingAt


REACHES = "ReachesThisState"


class Reaching:
    """``model`` whose one invariant is "not this state": bfs's first violation of it is a shortest
    path from the initial state to ``target`` ("is this state reachable by a shorter path?").
    Everything else is ``model``'s, as with ``StartingAt``.

    >>> from hwcheck.spec import Config, Model
    >>> m = Model(Config(mode="hw", records=1))
    >>> s0 = m.init_states()[0]
    >>> def round_trip(s):
    ...     s = m.step(m.step(s, ("send_fetch", 1)), ("leader_handle_fetch", 0, 1))
    ...     return m.step(s, ("follower_handle_fetch", 1))
    >>> s = m.step(round_trip(round_trip(s0)), ("produce", 0))
    >>> job = Search(Reaching(m, s), s0, REACHES)
    >>> job.start().join()
    >>> len(job.report()["labels"])     # 7 steps walked, 4 needed: the second round trip changed nothing
    4
    """

    def __init__(self, model, target):
        self.model, self.target = model, target
        self.invariants = ((REACHES, self._elsewhere),)

    def _elsewhere(self, s) -> bool:
        return s != self.target

    def __getattr__(self, name):
        if name in ("model", "target"):     # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.model, name)


class Search:
    """One bfs from ``start`` for the shortest violation of ``invariant``."""

    def __init__(self, model, start, invariant: str, max_depth: Optional[int] = None, **note):
        self.note = note                  # what the caller wants said with every report
        names = [name for name, _ in model.invariants]
        if invariant not in names:
            raise ValueError(f"unknown invariant {invariant!r}; this model checks {', '.join(names)}")
        self.model, self.start_state, self.invariant, self.max_depth = model, start, invariant, max_depth
        self._stop = threading.Event()
        self.progress = {"depth": 0, "distinct": 0, "elapsed": 0.0}
        self.result = None
        self.error: Optional[str] = None
        self.thread = threading.Thread(target=self._run, name="hwcheck-explore-search", daemon=True)
        self.started = None

    def start(self) -> threading.Thread:
        self.started = time.monotonic()
        self.thread.start()
        return self.thread

    def stop(self) -> None:
        self._stop.set()

    def _progress(self, report: dict) -> None:
        self.progress = {k: report[k] for k in ("depth", "distinct", "elapsed")}
        if self._stop.is_set():
            raise KeyboardInterrupt       # bfs's own way to stop: it returns what it covered

    def _run(self) -> None:
        try:
            self.result = bfs(StartingAt(self.model, self.start_state), only=[self.invariant],
                              max_depth=self.max_depth, progress=self._progress, progress_every=0.0)
        except Exception as e:            # reported to the page, never a dead thread's traceback
            self.error = f"{type(e).__name__}: {e}"

    def report(self) -> dict:
        """Where the search is: running (with progress), done (its verdict, what it covered, the
        continuation's labels), or failed."""
        if self.error is not None:
            return {"state": "failed", "invariant": self.invariant, "error": self.error, **self.note}
        r = self.result
        if r is None:
            return {"state": "running", "invariant": self.invariant, **self.progress,
                    "elapsed": time.monotonic() - (self.started or time.monotonic()), **self.note}
        out = {"state": "done", "invariant": self.invariant, "verdict": r.verdict, "complete": r.complete,
               "distinct": r.distinct_states, "depth": r.depth, "elapsed": r.elapsed, "labels": [], **self.note}
        if r.violations:
            out["labels"] = [self.model.format_label(lb) for lb in r.violations[0].labels]
        return out
