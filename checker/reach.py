"""The shortest trace that ends with a given kind of step: a breadth-first search over
``Model.successors`` that stops at the first step ``(state, label)`` for which ``wanted`` holds
(Stateright's "sometimes" properties, for steps rather than states). What a step means is the
spec's business (e.g. ``spec/actions.exits_on_out_of_range``); this module only searches.

``eager`` names actions taken at once whenever one is enabled, as a real cluster takes them by
itself (``cluster/conform.EAGER``): the trace then leaves no such step for later, which a cluster
could not be made to wait for. The search is exact within that restriction.

>>> from hwcheck.spec import Config, Model
>>> m = Model(Config(mode="hw", records=1))
>>> trace = first_step(m, lambda s, label: label[0] == "follower_handle_fetch")
>>> [m.format_label(label) for label in trace.labels]
['send_fetch(r1)', 'leader_handle_fetch(r0,r1)', 'follower_handle_fetch(r1)']
"""

from __future__ import annotations

from collections import deque
from typing import Callable, Iterable, Optional

from .result import Trace


def first_step(model, wanted: Callable, eager: Iterable[str] = (), limit: Optional[int] = None) -> Optional[Trace]:
    """The shortest trace whose last step satisfies ``wanted(state, label)`` (None if no reachable
    step does, or none within ``limit`` states)."""
    eager = frozenset(eager)
    init = model.init_states()[0]
    parent = {init: None}
    queue = deque([init])
    while queue and (limit is None or len(parent) < limit):
        s = queue.popleft()
        steps = list(model.successors(s))
        steps = [step for step in steps if step[0][0] in eager] or steps
        for label, t in steps:
            if wanted(s, label):
                return _trace(parent, s, label, t)
            if t not in parent:
                parent[t] = (s, label)
                queue.append(t)
    return None


def _trace(parent, s, label, t) -> Trace:
    states, labels = [t, s], [label]
    while parent[s] is not None:
        s, label = parent[s]
        states.append(s)
        labels.append(label)
    return Trace(states[::-1], labels[::-1], None)
