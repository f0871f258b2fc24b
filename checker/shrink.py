"""Shrinking a random walk's violation into a short trace, then asking bfs for a shorter one.

A random walk that breaks an invariant is long and wanders. Three passes, each keeping a schedule
only if it still replays through ``model.step`` and still breaks the same invariant (cut at the
first state that does):

1. **loops**: where the walk comes back to a state it was in, the steps in between go;
2. **drop** (delta debugging, focus.py): steps, runs of steps and single steps are removed
   while the violation stays (1-minimal: no single step can go);
3. **reorder**: two neighbouring steps are swapped when, after the swap, dropping finds a shorter
   schedule (an enabling step moved next to what it enables lets another step go).

Then a **bounded bfs** from the initial state looks for a shorter violation of the same invariant
among schedules that use only the action kinds the shrunk trace uses, with every budget (records,
faults, epochs) cut to what the trace used when the model can say so (``model.narrowed``). If it
finds one within ``confirm_states`` states it replaces the trace (that is a shortest trace of the
narrowed model); if it finishes without one, the trace is confirmed shortest among those
schedules; otherwise the note says it was not confirmed.

>>> from hwcheck.spec import Config, Model
>>> from hwcheck.checker.simulate import simulate
>>> m = Model(Config(mode="hw", power_failures=1, crashes=0))
>>> walk = simulate(m, runs=2000, depth=30, seed=3, shrink=False).violations[0]
>>> short, note = shrink_trace(m, walk)
>>> walk.invariant, walk.steps, short.steps
('NoCommittedDataLoss', 16, 5)
>>> [m.format_label(label) for label in short.labels]
['produce(r0)', 'shrink_isr(r0,r1)', 'power_fail(r0)', 'restart(r0)', 'become_leader(r0)']
>>> note.split(":")[0]
'shortened by bfs to 5 steps'
"""

from __future__ import annotations

from typing import List, Tuple

from .bfs import bfs
from .focus import focus, replays_to
from .result import Trace


class _Budget(Exception):
    """The confirming bfs grew past its budget."""


class OnlyActions:
    """``model`` restricted to the given action kinds (the rest of the interface unchanged).

    >>> from hwcheck.spec import Config, Model
    >>> m = OnlyActions(Model(Config(mode="hw", records=1)), {"produce"})
    >>> [label for label, _ in m.successors(m.init_states()[0])]
    [('produce', 0)]
    """

    def __init__(self, model, kinds):
        self._model, self._kinds = model, frozenset(kinds)

    def successors(self, s):
        return ((label, t) for label, t in self._model.successors(s) if label[0] in self._kinds)

    def __getattr__(self, name):
        return getattr(self._model, name)


def without_loops(model, trace: Trace) -> Trace:
    """The trace with every stretch between two visits of one state cut out."""
    states, labels = trace.states, trace.labels
    last = {}
    for i, s in enumerate(states):
        last[s] = i
    keep_labels: List[tuple] = []
    i = last[states[0]]
    keep_states = [states[i]]
    while i < len(labels):
        keep_labels.append(labels[i])
        i = last[states[i + 1]]
        keep_states.append(states[i])
    return Trace(keep_states, keep_labels, trace.invariant)


def reorder(model, best: Trace) -> Trace:
    """Neighbour swaps that let dropping find a shorter schedule, until none does."""
    improved = True
    while improved:
        improved = False
        labels = best.labels
        for i in range(len(labels) - 1):
            trial = labels[:i] + [labels[i + 1], labels[i]] + labels[i + 2:]
            if replays_to(model, trial, best.invariant) is None:
                continue
            shorter = focus(model, trial, best.invariant)
            if shorter.steps < best.steps:
                best, improved = shorter, True
                break
    return best


def confirm(model, trace: Trace, confirm_states: int) -> Tuple[Trace, str]:
    """A bounded bfs for a shorter violation among schedules like ``trace``'s (see the module)."""
    kinds = sorted({label[0] for label in trace.labels})
    narrowed = getattr(model, "narrowed", None)
    small = model
    if narrowed is not None:
        try:
            small = narrowed(trace.states[-1])
        except ValueError:          # the cut budgets are not a valid configuration: keep them all
            narrowed = None
    space = f"schedules of {', '.join(kinds)}" + (" within the trace's budgets" if narrowed else "")
    if trace.steps <= 1:
        return trace, f"shortest (a {trace.steps}-step trace)"

    def budget(p):
        if p["distinct"] > confirm_states:
            raise _Budget()

    try:
        r = bfs(OnlyActions(small, kinds), max_depth=trace.steps - 1, only=[trace.invariant], progress=budget,
                progress_every=0.2)
    except _Budget:
        return trace, f"not confirmed: a bfs of {space} passed {confirm_states:,} states"
    if r.verdict == "interrupted":
        return trace, "not confirmed: the bfs was interrupted"
    if r.violations:
        shorter = replays_to(model, r.violations[0].labels, trace.invariant)
        if shorter is not None and shorter.steps < trace.steps:
            return shorter, (f"shortened by bfs to {shorter.steps} steps: shortest among {space} "
                             f"({r.distinct_states:,} states)")
        return trace, "not confirmed: the narrowed model's trace does not replay in the model"
    return trace, f"shortest among {space} (bfs, {r.distinct_states:,} states)"


def shrink_trace(model, trace: Trace, confirm_states: int = 200_000) -> Tuple[Trace, str]:
    """The shrunk trace and a note on how it compares with the shortest (see the module)."""
    best = without_loops(model, trace)
    cut = replays_to(model, best.labels, trace.invariant)
    best = cut if cut is not None else trace
    best = focus(model, best.labels, trace.invariant)
    best = reorder(model, best)
    if confirm_states > 0:
        return confirm(model, best, confirm_states)
    return best, "not confirmed: no bfs asked for"
