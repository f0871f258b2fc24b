"""The explored state graph as a networkx DiGraph, its reductions, and export.

- ``explore(model)``: every reachable state, nodes keyed by fingerprint with the state and the
  invariants it breaks, edges carrying the action labels that lead along them;
- ``symmetry_quotient``: states equal up to renaming replicas become one node (every
  permutation that keeps r0, the preferred replica: with two replicas nothing merges);
- ``compress_chains``: a node with one way in and one way out becomes part of one labelled edge;
- ``condense``: each strongly connected component becomes one node (a DAG remains);
- ``mark_violations``: violating nodes and a shortest path to each, as attributes a DOT renderer
  shows; ``write_graph`` exports by suffix (.dot, .graphml, .json).

>>> from hwcheck.spec import Config, Model
>>> m = Model(Config(mode="hw", records=1, crashes=1, max_epoch=1, acks="1"))
>>> g = explore(m)
>>> g.number_of_nodes(), min(d["depth"] for _, d in g.nodes(data=True) if d["violated"])
(2088, 3)
>>> q = symmetry_quotient(g, m)
>>> q.number_of_nodes() == g.number_of_nodes(), shortest_violation(q)[0]
(True, 3)
>>> m3 = Model(Config(mode="hw", replicas=3, records=1, crashes=0, max_epoch=1, acks="1"))
>>> g3 = explore(m3)
>>> g3.number_of_nodes(), symmetry_quotient(g3, m3).number_of_nodes()
(2204, 1128)
"""

from __future__ import annotations

import heapq
import json
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Tuple

import networkx as nx


from .bfs import fingerprint
from .estimate import estimate_states
from .symmetry import canonical_form, inverse, rename_label
from .result import Trace

# the main job's defaults (`verify --liveness --mode=epoch`: 287,803 nodes) fit, with room
DEFAULT_MAX_NODES = 500_000
FORMATS = (".dot", ".graphml", ".json")


class GraphTooLarge(Exception):
    """The graph passed the node limit; the message says how far it got and estimates the size."""

    def __init__(self, limit: int, explored: int, depth: int, open_states: int, estimate: Optional[int]):
        self.limit, self.explored, self.depth, self.open_states, self.estimate = (
            limit, explored, depth, open_states, estimate)
        guess = (f"estimated ~{estimate:,} nodes in all (extrapolated from the BFS layer sizes)" if estimate else
                 "no estimate of the total yet (too few BFS layers, or their sizes have not settled)")
        super().__init__(
            f"the state graph has more than --max-nodes={limit:,} nodes: {explored:,} found by depth "
            f"{depth} with {open_states:,} still unexplored; {guess}; raise --max-nodes or tighten the bounds")


class GraphInterrupted(Exception):
    """Ctrl-C while the graph was being explored: how far it got."""

    def __init__(self, explored: int, depth: int):
        self.explored, self.depth = explored, depth
        super().__init__(f"explored {explored:,} states of the state graph to depth {depth}")


def _estimate(layers: List[int], total: int) -> Optional[int]:
    """The total from the sizes of the BFS layers done so far (checker/estimate.py), or None: too
    few layers, layer sizes that do not settle, or an estimate the ``total`` nodes found (the layer
    under way included) already pass. (A mirror of a growing front had guessed ~20 nodes for
    194,557.)

    >>> _estimate([1, 4, 9], 14) is None
    True
    >>> _estimate([1, 8, 39, 125, 287, 506, 763, 1093, 1530, 2071, 2703, 3399, 4144, 4954], 25_000)
    132950
    """
    guess = estimate_states(layers)
    return guess if guess is not None and guess > total else None


# ------------------------------------------------------------------ exploration

def explore(model, max_nodes: int = DEFAULT_MAX_NODES) -> nx.DiGraph:
    """The full reachable state graph (breadth first, not stopping at violations).

    Node attributes: ``state``, ``violated`` (tuple of invariant names), ``depth`` (BFS distance),
    ``init``, ``parent`` (fingerprint on a shortest path, None for an initial state).
    Edge attributes: ``chain`` (a list of steps, each a list of alternative labels; one step
    here), ``steps`` (1). Raises GraphTooLarge past ``max_nodes`` nodes, GraphInterrupted on Ctrl-C."""
    g = nx.DiGraph(reduction="none", mode=model.cfg.mode)
    frontier = []
    for s in model.init_states():
        fp = fingerprint(s)
        if fp not in g:
            g.add_node(fp, state=s, violated=tuple(model.violated(s)), depth=0, init=True, parent=None)
            frontier.append((fp, s))
    layers = [len(frontier)]
    try:
        _grow(model, g, frontier, layers, max_nodes)
    except KeyboardInterrupt:
        raise GraphInterrupted(g.number_of_nodes(), len(layers) - 1) from None
    return g


def _grow(model, g: nx.DiGraph, frontier: list, layers: List[int], max_nodes: int) -> None:
    """Breadth-first, level by level, from ``frontier`` (``explore``'s loop); ``layers`` gets the
    size of each level as it is found."""
    depth = len(layers) - 1
    while frontier:
        nxt = []
        for i, (sfp, s) in enumerate(frontier):
            for label, t in model.successors(s):
                tfp = fingerprint(t)
                if tfp not in g:
                    if g.number_of_nodes() >= max_nodes:
                        open_states = len(frontier) - i + len(nxt)
                        raise GraphTooLarge(max_nodes, g.number_of_nodes(), depth + 1, open_states,
                                            _estimate(layers, g.number_of_nodes()))
                    g.add_node(tfp, state=t, violated=tuple(model.violated(t)), depth=depth + 1,
                               init=False, parent=sfp)
                    nxt.append((tfp, t))
                if g.has_edge(sfp, tfp):
                    step = g[sfp][tfp]["chain"][0]
                    if label not in step:
                        step.append(label)
                else:
                    g.add_edge(sfp, tfp, chain=[[label]], steps=1)
        frontier = nxt
        if nxt:
            depth += 1
            layers.append(len(nxt))


def counts(g: nx.DiGraph) -> str:
    viol = sum(1 for _, d in g.nodes(data=True) if d["violated"])
    return f"{g.number_of_nodes():,} nodes, {g.number_of_edges():,} edges, {viol:,} violating"


# ------------------------------------------------------------------ symmetry

def symmetry_quotient(g: nx.DiGraph, model) -> nx.DiGraph:
    """One node per class of states equal up to renaming replicas, keyed by the fingerprint of
    the canonical state; an edge's labels are renamed into its source's canonical frame, so a
    node's out-edges are steps of its canonical state. ``members`` counts the merged states."""
    q = nx.DiGraph(reduction="symmetry", mode=g.graph.get("mode"))
    frame: Dict[int, Tuple[int, Tuple[int, ...]]] = {}
    canonical = canonical_form(model)
    for v, d in g.nodes(data=True):
        c, perm = canonical(d["state"])
        cfp = fingerprint(c)
        frame[v] = (cfp, perm)
        if cfp in q:
            node = q.nodes[cfp]
            node["members"] += 1
            node["init"] = node["init"] or d["init"]
            node["depth"] = min(node["depth"], d["depth"])
        else:
            q.add_node(cfp, state=c, violated=d["violated"], depth=d["depth"], init=d["init"], members=1)
    for u, v, d in g.edges(data=True):
        cu, perm = frame[u]
        cv = frame[v][0]
        steps = [[rename_label(label, perm) for label in step] for step in d["chain"]]
        if q.has_edge(cu, cv):
            old = q[cu][cv]["chain"]
            if len(old) == len(steps):
                for a, b in zip(old, steps):
                    a.extend(x for x in b if x not in a)
        else:
            q.add_edge(cu, cv, chain=steps, steps=len(steps))
    return q


def concrete_trace(model, q: nx.DiGraph, path: List[int], invariant: Optional[str] = None) -> Trace:
    """A concrete, replayable trace for a path of the symmetry quotient: each quotient label is
    in its node's canonical frame, so it is renamed back into the concrete state's frame."""
    s = model.init_states()[0]
    states, labels = [s], []
    canonical = canonical_form(model)
    for u, v in zip(path, path[1:]):
        _, perm = canonical(s)
        back = inverse(perm)
        for step in q[u][v]["chain"]:
            label = rename_label(step[0], back)
            s = model.step(s, label)
            if s is None:
                raise ValueError(f"quotient path does not replay at {model.format_label(label)}")
            _, perm = canonical(s)
            back = inverse(perm)
            states.append(s)
            labels.append(label)
    return Trace(states, labels, invariant)


# ------------------------------------------------------------------ chains and SCCs

def compress_chains(g: nx.DiGraph) -> nx.DiGraph:
    """Fold every node with exactly one way in and one way out (not initial, not violating)
    into the edge around it; the edge's ``chain`` lists the steps, ``steps`` counts them."""
    h = g.copy()
    h.graph["reduction"] = g.graph.get("reduction", "none") + "+chains"
    for v in list(h.nodes):
        d = h.nodes[v]
        if d.get("init") or d["violated"] or h.in_degree(v) != 1 or h.out_degree(v) != 1:
            continue
        (u,), (w,) = list(h.predecessors(v)), list(h.successors(v))
        if v in (u, w) or h.has_edge(u, w):
            continue
        chain = h[u][v]["chain"] + h[v][w]["chain"]
        h.remove_node(v)
        h.add_edge(u, w, chain=chain, steps=len(chain))
    return h


def condense(g: nx.DiGraph) -> nx.DiGraph:
    """Each strongly connected component as one node (``size`` states, ``violated`` the union,
    ``init`` if it holds an initial state); edges between components keep one sample chain and
    ``edges``, the number of edges they stand for."""
    c = nx.condensation(g)
    out = nx.DiGraph(reduction=g.graph.get("reduction", "none") + "+scc", mode=g.graph.get("mode"))
    for k, d in c.nodes(data=True):
        mem = d["members"]
        names = sorted({n for v in mem for n in g.nodes[v]["violated"]})
        one = next(iter(mem))
        attrs = dict(violated=tuple(names), init=any(g.nodes[v].get("init") for v in mem), size=len(mem),
                     depth=min(g.nodes[v].get("depth", 0) for v in mem))
        if len(mem) == 1:
            attrs["state"] = g.nodes[one].get("state")
        out.add_node(k, **attrs)
    mapping = c.graph["mapping"]
    for u, v, d in g.edges(data=True):
        a, b = mapping[u], mapping[v]
        if a == b:
            continue
        if out.has_edge(a, b):
            out[a][b]["edges"] += 1
        else:
            out.add_edge(a, b, chain=d["chain"], steps=1, edges=1)
    return out


# ------------------------------------------------------------------ violation paths

def _distances(g: nx.DiGraph):
    """Dijkstra from every initial node, weight ``steps``: distances and predecessors."""
    dist, pred, heap = {}, {}, []
    for v, d in g.nodes(data=True):
        if d.get("init"):
            dist[v] = 0
            heapq.heappush(heap, (0, v))
    while heap:
        du, u = heapq.heappop(heap)
        if du > dist[u]:
            continue
        for w, e in g[u].items():
            dw = du + e.get("steps", 1)
            if w not in dist or dw < dist[w]:
                dist[w], pred[w] = dw, u
                heapq.heappush(heap, (dw, w))
    return dist, pred


def mark_violations(g: nx.DiGraph) -> int:
    """Mark violating nodes and a shortest path from an initial node to each (``on_path`` on
    nodes and edges); returns how many violating nodes are reachable."""
    dist, pred = _distances(g)
    nx.set_node_attributes(g, False, "on_path")
    nx.set_edge_attributes(g, False, "on_path")
    found = 0
    for v, d in g.nodes(data=True):
        d["dist"] = dist.get(v)
        if not d["violated"] or v not in dist:
            continue
        found += 1
        d["on_path"] = True
        while v in pred:
            u = pred[v]
            g[u][v]["on_path"] = True
            if g.nodes[u]["on_path"]:
                break
            g.nodes[u]["on_path"] = True
            v = u
    return found


def shortest_violation(g: nx.DiGraph) -> Tuple[Optional[int], List[int]]:
    """(steps, node path) to the nearest violating node, or (None, [])."""
    dist, pred = _distances(g)
    bad = [v for v, d in g.nodes(data=True) if d["violated"] and v in dist]
    if not bad:
        return None, []
    v = min(bad, key=lambda x: (dist[x], x))
    path = [v]
    while path[-1] in pred:
        path.append(pred[path[-1]])
    return dist[v], path[::-1]


# ------------------------------------------------------------------ export

def chain_text(chain: List[List[Tuple]], format_label: Callable, limit: int = 3) -> str:
    steps = ["|".join(format_label(label) for label in step) for step in chain]
    if len(steps) > limit:
        steps = steps[:1] + [f"... {len(steps) - 2} steps ..."] + steps[-1:]
    return "\n".join(steps)


def export_view(g: nx.DiGraph, model) -> nx.DiGraph:
    """A copy with only plain attributes (strings, ints, bools) for DOT/GraphML/JSON; a state is
    labelled by the model's ``summary`` (spec/protocol.py; its ``str`` without one), a step by its
    ``format_label``."""
    summary = getattr(model, "summary", None) or str
    out = nx.DiGraph(**{k: str(v) for k, v in g.graph.items()})
    ids = {}
    for i, (v, d) in enumerate(sorted(g.nodes(data=True), key=lambda x: (x[1].get("depth", 0), str(x[0])))):
        ids[v] = f"n{i}"
        if d.get("state") is not None:
            label = summary(d["state"])
        else:
            label = f"SCC of {d.get('size', 1)} states"
        if d.get("size", 1) > 1 and d.get("state") is None:
            label = f"{d['size']} states (SCC)"
        attrs = dict(label=label, violated=",".join(d["violated"]), init=bool(d.get("init")),
                     on_path=bool(d.get("on_path")), depth=int(d.get("depth", 0)))
        for key in ("members", "size"):
            if key in d:
                attrs[key] = int(d[key])
        out.add_node(ids[v], **attrs)
    for u, v, d in g.edges(data=True):
        attrs = dict(label=chain_text(d["chain"], model.format_label), steps=int(d.get("steps", 1)), on_path=bool(d.get("on_path")))
        if "edges" in d:
            attrs["edges"] = int(d["edges"])
        out.add_edge(ids[u], ids[v], **attrs)
    return out


def _q(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(view: nx.DiGraph, title: str = "") -> str:
    """DOT text: violating states filled red, the shortest paths to them drawn red and thick,
    initial states doubly outlined; everything else grey."""
    lines = ["digraph hwcheck {", "  rankdir=TB;",
             '  node [shape=box, fontname="monospace", fontsize=9, color=gray40];',
             '  edge [fontname="monospace", fontsize=8, color=gray60, fontcolor=gray30];']
    if title:
        lines.append(f"  label={_q(title)}; labelloc=t; fontname=\"sans\";")
    for v, d in view.nodes(data=True):
        attrs = [f"label={_q(d['label'] + (chr(10) + 'broken: ' + d['violated'] if d['violated'] else ''))}"]
        if d["violated"]:
            attrs += ["style=filled", 'fillcolor="#f4b4b4"', "color=red", "penwidth=2"]
        elif d["on_path"]:
            attrs += ["color=red", "penwidth=2"]
        if d["init"]:
            attrs += ["peripheries=2"]
        lines.append(f"  {v} [{', '.join(attrs)}];")
    for u, v, d in view.edges(data=True):
        attrs = [f"label={_q(d['label'])}"]
        if d["on_path"]:
            attrs += ["color=red", "fontcolor=red", "penwidth=2"]
        lines.append(f"  {u} -> {v} [{', '.join(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_graph(model, g: nx.DiGraph, path: Path, title: str = "") -> None:
    """Export by suffix: .dot (written here, no pydot needed), .graphml, .json (node-link)."""
    view = export_view(g, model)
    suffix = path.suffix.lower()
    if suffix == ".dot":
        path.write_text(to_dot(view, title))
    elif suffix == ".graphml":
        nx.write_graphml(view, str(path))
    elif suffix == ".json":
        path.write_text(json.dumps(nx.node_link_data(view, edges="links"), indent=1) + "\n")
    else:
        raise ValueError(f"unknown graph format {suffix!r}; use one of {', '.join(FORMATS)}")


def reduce_all(model, g: nx.DiGraph, steps: Iterable[str] = ("symmetry", "chains", "scc")):
    """Apply the reductions in order; yields (name, graph) after each, starting with the
    explored graph ("explored")."""
    yield "explored", g
    for name in steps:
        if name == "symmetry":
            g = symmetry_quotient(g, model)
        elif name == "chains":
            g = compress_chains(g)
        elif name == "scc":
            g = condense(g)
        else:
            raise ValueError(f"unknown reduction {name!r}")
        yield name, g
