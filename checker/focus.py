"""Trace focusing: drop every step a violation does not need (delta debugging over the schedule).

Candidates for removal, largest first: every step naming one replica, each run of consecutive
steps naming one replica, halves/quarters/... of the schedule, single steps. A removal is kept
when the shorter schedule still replays through ``model.step`` (states recomputed) and breaks the
same invariant; the trace is cut at the first state that breaks it. Repeats until no candidate
can go, so the result is 1-minimal: removing any single step breaks replay or the violation.

Only safety traces are focused: a name that is not one of ``model.invariants`` (a liveness
property such as FollowerHwCatchesUp, whose counterexample is a lasso) is refused with a
ValueError that says so (``hwcheck replay LASSO --focus`` refuses lassos before this).

>>> from hwcheck.spec import Config, Model
>>> m = Model(Config(mode="hw", records=1))
>>> from hwcheck.checker.bfs import bfs
>>> t = bfs(m).violations[0]
>>> short = focus(m, t.labels, t.invariant)
>>> short.steps <= t.steps, replays_to(m, short.labels, t.invariant) is not None
(True, True)
>>> focus(m, t.labels, "FollowerHwCatchesUp")
Traceback (most recent call last):
ValueError: FollowerHwCatchesUp is not an invariant of the model (a liveness property?): only safety traces can be focused
"""

from __future__ import annotations

from typing import Iterator, List, Optional, Sequence, Set, Tuple

from .result import Trace


def _invariant(model, name: str):
    """The predicate of invariant ``name``; a ValueError (not a KeyError) for any other name."""
    names = dict(model.invariants)
    if name not in names:
        raise ValueError(f"{name} is not an invariant of the model (a liveness property?): "
                         f"only safety traces can be focused")
    return names[name]


def replays_to(model, labels: Sequence[Tuple], invariant: str) -> Optional[Trace]:
    """The trace of ``labels`` from the initial state cut at the first state breaking
    ``invariant``, or None when a step is not enabled or the invariant never breaks."""
    pred = _invariant(model, invariant)
    s = model.init_states()[0]
    states = [s]
    if not pred(s):
        return Trace(states, [], invariant)
    for i, label in enumerate(labels):
        s = model.step(s, label)
        if s is None:
            return None
        states.append(s)
        if not pred(s):
            return Trace(states, list(labels[:i + 1]), invariant)
    return None


def _candidates(labels: Sequence[Tuple], n: int) -> Iterator[Set[int]]:
    size = len(labels)
    for r in range(n):                                   # every step of one replica
        yield {i for i, l in enumerate(labels) if r in l[1:]}
    for r in range(n):                                   # runs of one replica's steps
        i = 0
        while i < size:
            if r in labels[i][1:]:
                j = i
                while j < size and r in labels[j][1:]:
                    j += 1
                if j - i > 1:
                    yield set(range(i, j))
                i = j
            else:
                i += 1
    chunk = size // 2
    while chunk > 1:                                     # ddmin-style chunks
        for start in range(0, size, chunk):
            yield set(range(start, min(start + chunk, size)))
        chunk //= 2
    for i in range(size):                                # single steps
        yield {i}


def focus(model, labels: Sequence[Tuple], invariant: str) -> Trace:
    """The shortest schedule this greedy search finds that still replays to ``invariant``."""
    best = replays_to(model, labels, invariant)
    if best is None:
        raise ValueError(f"the schedule does not break {invariant}")
    return minimize(best, model.cfg.replicas, lambda trial: replays_to(model, trial, invariant))


def minimize(best, n: int, attempt, tries: Optional[int] = None):
    """Greedy delta debugging (``_candidates``, largest removals first) of ``best``, anything with
    ``labels``: ``attempt(labels)`` returns what a shorter schedule becomes when it keeps the
    property (cut where it shows), else None. With ``tries``, at most that many attempts (a
    conformance walk's attempt runs a real cluster). Returns the last kept one.

    >>> from hwcheck.checker.result import Trace
    >>> def keeps(labels):          # the property: a crash of r0 before a restart of r0
    ...     ok = ("crash", 0) in labels and ("restart", 0) in labels[labels.index(("crash", 0)):]
    ...     return Trace([], list(labels), None) if ok else None
    >>> walk = [("produce", 0), ("crash", 0), ("send_fetch", 1), ("restart", 0), ("produce", 0)]
    >>> minimize(Trace([], walk, None), 2, keeps).labels
    [('crash', 0), ('restart', 0)]
    """
    changed = True
    while changed:
        changed = False
        for drop in _candidates(best.labels, n):
            if not drop or len(drop) == len(best.labels):
                continue
            if tries is not None:
                if tries <= 0:
                    return best
                tries -= 1
            trial = [l for i, l in enumerate(best.labels) if i not in drop]
            found = attempt(trial)
            if found is not None:
                best, changed = found, True
                break
    return best


def uninvolved(labels: List[Tuple], n: int) -> List[int]:
    """Replicas no step of the schedule names."""
    named = {r for l in labels for r in l[1:]}
    return [r for r in range(n) if r not in named]
