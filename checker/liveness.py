"""Liveness under weak fairness, through the strongly connected components of the state graph.

A property is given by a state predicate ``settled``: it is violated when some fair behaviour
stays unsettled forever (F G not settled). Behaviours may stutter (TLA+ semantics): a state where
no fair action is enabled can repeat forever. Weak fairness holds per action instance (label):
an action that stays enabled is eventually taken.

A fair cycle of unsettled states exists iff some SCC C of the unsettled subgraph has, for every
fair label enabled somewhere in C, an edge inside C taking it or a state of C where it is disabled
(a run can then visit all of C forever). The counterexample is a lasso: a shortest prefix into C
and a cycle through C that takes or sees disabled every such label.

>>> from hwcheck.spec import Config, Model
>>> from hwcheck.checker.graph import explore
>>> m = Model(Config(mode="hw", records=1, crashes=0, max_epoch=0))
>>> [(name, lasso is None) for name, lasso in check_liveness(m, explore(m))]
[('AckedReachesLiveIsr', True), ('FollowerHwCatchesUp', True), ('PartitionHasLeader', True)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Tuple

import networkx as nx

from .result import Trace

# the model's properties and fairness (spec/protocol.py: ``Model.liveness``, ``Model.fair_actions``)
STUTTER = "stutter"


def _liveness(model):
    """The model's liveness properties and fair actions, or ValueError (one line) without them."""
    if getattr(model, "liveness", None) is None or getattr(model, "fair_actions", None) is None:
        raise ValueError(f"the {getattr(model, 'family', 'design')} model states no liveness properties")
    return model.liveness, tuple(model.fair_actions)


@dataclass
class Lasso:
    """``trace.states[loop:]`` repeat forever: after the last state comes ``states[loop]`` by
    ``closing`` (a label, or None for stuttering, then ``loop`` is the last index)."""
    trace: Trace
    loop: int
    closing: Optional[Tuple]

    @property
    def prefix(self) -> int:
        return self.loop

    @property
    def cycle(self) -> int:
        return len(self.trace.states) - self.loop


def is_fair(label: Tuple, fair: Iterable[str]) -> bool:
    return label[0] in fair


def _enabled(g: nx.DiGraph, v, fair) -> FrozenSet:
    return frozenset(l for _, _, d in g.out_edges(v, data=True) for step in d["chain"][:1]
                     for l in step if l[0] in fair)


def fair_component(g: nx.DiGraph, comp, fair, enabled: Dict) -> Optional[Dict]:
    """For a set of states, a witness per fair label enabled in it: ("edge", u, v, label) taking
    it inside, or ("off", v) a state where it is disabled; None if some label has neither."""
    everywhere = frozenset.intersection(*(enabled[v] for v in comp))
    somewhere = frozenset().union(*(enabled[v] for v in comp))
    witnesses = {}
    for label in somewhere - everywhere:
        witnesses[label] = ("off", next(v for v in comp if label not in enabled[v]))
    for u in comp:
        for w, d in g[u].items():
            if w in comp:
                for label in d["chain"][0]:
                    if label in everywhere and label not in witnesses:
                        witnesses[label] = ("edge", u, w, label)
    if not everywhere <= set(witnesses):
        return None
    return witnesses


def _prefix(g: nx.DiGraph, v) -> List:
    path = [v]
    while g.nodes[path[-1]]["parent"] is not None:
        path.append(g.nodes[path[-1]]["parent"])
    return path[::-1]


def _label(g, u, v, fair, wanted) -> Tuple:
    step = g[u][v]["chain"][0]
    return next((l for l in step if l in wanted), step[0])


def build_lasso(g: nx.DiGraph, comp, witnesses: Dict, invariant: str) -> Lasso:
    """A shortest prefix to the component's nearest state and a cycle inside the component
    meeting every witness (taking the edge, or passing the state where the label is off)."""
    entry = min(comp, key=lambda v: (g.nodes[v]["depth"], v))
    sub = g.subgraph(comp)
    nodes = _prefix(g, entry)
    labels = [_label(g, a, b, (), ()) for a, b in zip(nodes, nodes[1:])]
    loop = len(nodes) - 1
    wanted = set(witnesses)
    cycle_nodes, cycle_labels = [entry], []

    def walk(target):
        path = nx.shortest_path(sub, cycle_nodes[-1], target)
        for a, b in zip(path, path[1:]):
            lab = _label(g, a, b, (), wanted)
            wanted.discard(lab)
            cycle_labels.append(lab)
            cycle_nodes.append(b)

    for label, w in witnesses.items():
        if label not in wanted:
            continue
        if w[0] == "off":
            walk(w[1])
        else:
            if cycle_nodes[-1] != w[1]:
                walk(w[1])
            if label in wanted:
                wanted.discard(label)
                cycle_labels.append(label)
                cycle_nodes.append(w[2])
    if len(cycle_nodes) > 1 or sub.has_edge(entry, entry):
        if cycle_nodes[-1] != entry or len(cycle_nodes) == 1:
            if len(cycle_nodes) == 1:                      # a self-loop is the whole cycle
                cycle_labels.append(g[entry][entry]["chain"][0][0])
                cycle_nodes.append(entry)
            else:
                walk(entry)
        closing = cycle_labels[-1]
        nodes += cycle_nodes[1:-1]
        labels += cycle_labels[:-1]
    else:
        closing = None                                     # stuttering at entry
    states = [g.nodes[v]["state"] for v in nodes]
    return Lasso(Trace(states, labels, invariant), loop, closing)


def find_lasso(g: nx.DiGraph, settled: Callable, name: str, fair: Iterable[str],
               enabled: Optional[Dict] = None) -> Optional[Lasso]:
    """The lasso with the shortest prefix to a fair cycle of unsettled states, or None."""
    fair = frozenset(fair)
    if enabled is None:
        enabled = {v: _enabled(g, v, fair) for v in g}
    bad = [v for v, d in g.nodes(data=True) if not settled(d["state"])]
    best = None
    for comp in nx.strongly_connected_components(g.subgraph(bad)):
        depth = min(g.nodes[v]["depth"] for v in comp)
        if best is not None and depth >= best[0]:
            continue
        witnesses = fair_component(g, comp, fair, enabled)
        if witnesses is not None:
            best = (depth, comp, witnesses)
    if best is None:
        return None
    return build_lasso(g, best[1], best[2], name)


def check_liveness(model, g: nx.DiGraph, fair: Optional[Iterable[str]] = None,
                   properties=None) -> List[Tuple[str, Optional[Lasso]]]:
    """Each property with its lasso, or None when it holds under the fairness assumption (by
    default the model's properties and fair actions)."""
    own_properties, own_fair = _liveness(model)
    fair = frozenset(own_fair if fair is None else fair)
    properties = own_properties if properties is None else properties
    enabled = {v: _enabled(g, v, fair) for v in g}
    return [(name, find_lasso(g, pred, name, fair, enabled)) for name, pred in properties]


def lasso_violates(model, lasso: Lasso, settled: Callable, fair: Optional[Iterable[str]] = None) -> Optional[str]:
    """Check a lasso on its own (for replay): None if it is a fair behaviour that never settles
    on its cycle, else why not. Enabledness is recomputed through ``model.successors``."""
    fair = frozenset(_liveness(model)[1] if fair is None else fair)
    states = lasso.trace.states
    cycle = states[lasso.loop:]
    taken = set(lasso.trace.labels[lasso.loop:])
    if lasso.closing is not None:
        taken.add(tuple(lasso.closing))
    for i, s in enumerate(cycle, start=lasso.loop):
        if settled(s):
            return f"state {i} on the cycle is settled"
    enabled = [frozenset(l for l, _ in model.successors(s) if l[0] in fair) for s in cycle]
    for label in frozenset().union(*enabled):
        if label not in taken and all(label in e for e in enabled):
            return f"{model.format_label(label)} stays enabled on the cycle but is never taken (unfair)"
    return None


def lasso_to_itf(model, lasso: Lasso, fair: Optional[Iterable[str]] = None) -> dict:
    """The lasso as ITF: the states, ``loop`` (the index the last state returns to), and in
    ``#meta.hwcheck`` the closing step (``loop_action``, ``stutter`` for none) and the fairness."""
    from .trace import to_itf
    doc = to_itf(model, lasso.trace, engine="graph")
    doc["loop"] = lasso.loop
    meta = doc["#meta"]
    meta["hwcheck"]["loop_action"] = STUTTER if lasso.closing is None else model.format_label(lasso.closing)
    meta["hwcheck"]["fair"] = sorted(_liveness(model)[1] if fair is None else fair)
    meta["description"] = (f"{lasso.trace.invariant} in mode {model.cfg.mode}: a lasso, {lasso.prefix} steps "
                           f"then a cycle of {lasso.cycle} states repeated forever")
    return doc


def replay_lasso(doc: dict) -> Tuple[object, Optional[str]]:
    """Replay a stored lasso and check it still violates its liveness property under the stored
    fairness: (Replay, None) when it does, (Replay, why not) otherwise. Raises TraceError when it
    does not replay or is no lasso."""
    from .trace import TraceError, replay
    done = replay(doc)
    if done.loop is None:
        raise TraceError("not a lasso: the ITF 'loop' index is missing")
    name = done.trace.invariant
    try:
        properties, fair = _liveness(done.model)
    except ValueError as e:
        raise TraceError(str(e)) from None
    if name not in dict(properties):
        raise TraceError(f"unknown liveness property {name!r}")
    fair = doc["#meta"]["hwcheck"].get("fair", fair)
    lasso = Lasso(done.trace, done.loop, done.closing)
    return done, lasso_violates(done.model, lasso, dict(properties)[name], fair)
