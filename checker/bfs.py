"""Explicit-state breadth-first search over any Model.

The visited set holds 64-bit fingerprints, each with its parent's fingerprint and the action
label that reached it (as TLC does); a violation's trace is rebuilt by walking parents back and
re-executing the labels through the model, so the first violation found is a shortest one.

>>> from hwcheck.spec import Config, Model
>>> r = bfs(Model(Config(mode="hw", records=1)))
>>> r.verdict, r.violations[0].invariant, r.violations[0].steps
('violated', 'NoCommittedDataLoss', 10)
"""

from __future__ import annotations

import resource
import time
from typing import Callable, Dict, Optional, Sequence, Tuple

from .result import HOLDS, INTERRUPTED, VIOLATED, Result, Trace


def fingerprint(state) -> int:
    """A 64-bit fingerprint, stable across runs: states hold only ints and tuples, whose hash
    does not depend on PYTHONHASHSEED."""
    return hash(state) & 0xFFFFFFFFFFFFFFFF


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def collision_probability(n: int) -> float:
    """Chance that two of n distinct states share a 64-bit fingerprint (birthday bound)."""
    return n * (n - 1) / 2 / 2.0 ** 64


def rebuild_trace(model, parents: Dict[int, Tuple], fp: int, invariant: Optional[str]) -> Trace:
    """Walk parent pointers from ``fp`` back to an initial state, then replay the labels."""
    labels = []
    while True:
        parent, label = parents[fp]
        if parent is None:
            init_index = label
            break
        labels.append(label)
        fp = parent
    labels.reverse()
    states = [model.init_states()[init_index]]
    for label in labels:
        states.append(model.step(states[-1], label))
    return Trace(states, labels, invariant)


def bfs(model, *, max_depth: Optional[int] = None, all_invariants: bool = False,
        progress: Optional[Callable[[dict], None]] = None, progress_every: float = 0.5,
        only: Optional[Sequence[str]] = None) -> Result:
    """Explore every state reachable within ``max_depth`` steps (unbounded by default).

    Stops at the first violation unless ``all_invariants``, which goes on until every
    invariant is broken or the space is exhausted and keeps the first trace of each.
    ``only`` names the invariants to check (default: all of the model's).
    Ctrl-C stops the search and returns what was covered with verdict ``interrupted``.
    """
    start = time.monotonic()
    parents: Dict[int, Tuple] = {}
    frontier = []
    generated = 0
    found: Dict[str, Trace] = {}
    depth = 0
    invariants = [(name, pred) for name, pred in model.invariants if only is None or name in only]
    wanted = {name for name, _ in invariants}
    last_report = start
    verdict = HOLDS
    complete = True

    def check(state, fp) -> bool:
        """Record violations of ``state``; True when the search should stop."""
        for name, pred in invariants:
            if name not in found and not pred(state):
                found[name] = rebuild_trace(model, parents, fp, name)
                if not all_invariants or len(found) == len(wanted):
                    return True
        return False

    try:
        stop = False
        for i, s in enumerate(model.init_states()):
            generated += 1
            fp = fingerprint(s)
            if fp in parents:
                continue
            parents[fp] = (None, i)
            frontier.append(s)
            if check(s, fp):
                stop = True
                break
        successors = model.successors
        while frontier and not stop:
            if max_depth is not None and depth >= max_depth:
                complete = False
                break
            next_frontier = []
            for s in frontier:
                sfp = fingerprint(s)
                for label, t in successors(s):
                    generated += 1
                    tfp = fingerprint(t)
                    if tfp in parents:
                        continue
                    parents[tfp] = (sfp, label)
                    next_frontier.append(t)
                    if check(t, tfp):
                        stop = True
                        break
                if stop:
                    break
                if progress is not None:
                    now = time.monotonic()
                    if now - last_report >= progress_every:
                        last_report = now
                        progress({"depth": depth + 1, "distinct": len(parents), "queue": len(next_frontier),
                                  "generated": generated, "elapsed": now - start})
            depth += 1 if (next_frontier or stop) else 0
            frontier = next_frontier
    except KeyboardInterrupt:
        verdict = INTERRUPTED
        complete = False
    if found:
        verdict = VIOLATED
    elapsed = time.monotonic() - start
    order = [name for name, _ in invariants]
    return Result(
        engine="bfs", verdict=verdict, distinct_states=len(parents), generated_states=generated,
        depth=depth, elapsed=elapsed, peak_rss_mb=peak_rss_mb(),
        violations=sorted(found.values(), key=lambda t: order.index(t.invariant)),
        complete=complete and verdict != INTERRUPTED,
        collision_probability=collision_probability(len(parents)),
    )
