"""Shrinking a random walk's violation into a short trace, then asking bfs for a shorter one.

A random walk that breaks an invariant is long and wanders. Three passes, each keeping a schedule
only if it still replays through ``model.step`` and still breaks the same invariant (cut at the
first state that does):

1. **loops**: where the walk comes back to a state it was in, the steps in between go;
2. **drop** (delta debugging, focus.py): steps, runs of steps and single steps are removed
   while the violation stays (1-minimal: no single step can go);
3. **reorder**: two neighbouring steps are swapped when, after the swap, dropping finds a shorter
   schedule (an enabling step moved next to what it enables lets another step go).

Then a **bounded bfs** from the initial state looks for a shorter violation of the same invariant,
with every budget (records, faults, epochs) cut to what the trace used when the model can say so
(``model.narrowed``): over every action first, and if that space passes ``confirm_states``
states, over the action kinds the shrunk trace uses only. A shorter violation it finds replaces
the trace (a shortest trace of that space); a bfs that finishes without one confirms the trace
shortest in its space; the note says which space, or that neither finished. The bfs of every
action within the trace's budgets is a shortest trace of a model with those budgets: the
unrestricted bfs (``hwcheck verify``) can still be shorter where a larger budget helps.

>>> from hwcheck.spec import Config, Model
>>> from hwcheck.checker.simulate import simulate
>>> m = Model(Config(mode="hw", power_failures=1, crashes=0))
>>> walk = simulate(m, runs=2000, depth=30, seed=3, shrink=False).violations[0]
>>> short, note = shrink_trace(m, walk)
>>> walk.invariant, walk.steps, short.steps
('NoCommittedDataLoss', 13, 7)
>>> [m.format_label(label) for label in short.labels]   # doctest: +NORMALIZE_WHITESPACE
['produce(r0)', 'shrink_isr(r0,r1)', 'power_fail(r0)', 'controller_handle_failure(r0)', 'restart(r0)',
 'elect_offline(r0)', 'become_leader(r0)']
>>> note
"bfs confirms it shortest among every schedule within the trace's budgets (227 states)"

(checker/simulate.py shows a walk that bfs shortens.)
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

    @property
    def moves(self):
        """The model's moves of the given kinds (a walk then draws among those only)."""
        return tuple(move for move in self._model.moves if move[0][0] in self._kinds)

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
    """A bounded bfs for a shorter violation (see the module): first over every action within the
    trace's budgets, then, if that passes ``confirm_states``, over the trace's action kinds only."""
    if trace.steps <= 1:
        return trace, f"bfs not needed: a {trace.steps}-step trace"
    kinds = sorted({label[0] for label in trace.labels})
    narrowed = getattr(model, "narrowed", None)
    spaces = []
    if narrowed is not None:
        try:
            small = narrowed(trace.states[-1])
            spaces += [(small, "every schedule within the trace's budgets"),
                       (OnlyActions(small, kinds), f"schedules of {', '.join(kinds)} within the trace's budgets")]
        except ValueError:          # the cut budgets are not a valid configuration
            pass
    spaces.append((OnlyActions(model, kinds), f"schedules of {', '.join(kinds)}"))

    def budget(p):
        if p["distinct"] > confirm_states:
            raise _Budget()

    for space, words in spaces:
        try:
            r = bfs(space, max_depth=trace.steps - 1, only=[trace.invariant], progress=budget, progress_every=0.2)
        except _Budget:
            continue
        if r.verdict == "interrupted":
            return trace, "not confirmed: the bfs was interrupted"
        if r.violations:
            shorter = replays_to(model, r.violations[0].labels, trace.invariant)
            if shorter is not None and shorter.steps < trace.steps:
                return shorter, f"bfs shortened it: shortest among {words} ({r.distinct_states:,} states)"
            continue
        return trace, f"bfs confirms it shortest among {words} ({r.distinct_states:,} states)"
    return trace, f"not confirmed: each bfs passed {confirm_states:,} states"


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
