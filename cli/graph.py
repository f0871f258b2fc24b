"""``hwcheck graph``: build the explored state graph, reduce it, mark violations, export it.
(``verify --liveness`` is in cli/verify.py, ``replay --focus`` in cli/replay.py.)"""

from __future__ import annotations

from pathlib import Path

import click

from hwcheck.checker.graph import (DEFAULT_MAX_NODES, FORMATS, GraphInterrupted, GraphTooLarge, counts, explore,
                                   mark_violations, reduce_all, shortest_violation, write_graph)
from hwcheck.spec import Model

from .models import DESIGN_MODES
from .options import EXIT_HOLDS, EXIT_VIOLATION, check_writable, fail, interrupted, knob_options, make_config
from .render import settings_line

REDUCTIONS = ("symmetry", "chains", "scc")


def _explore(model, max_nodes):
    try:
        return explore(model, max_nodes=max_nodes)
    except GraphTooLarge as e:
        fail(str(e))
    except GraphInterrupted as e:
        interrupted(f"{e}; no verdict")


def _reductions(text: str):
    steps = [] if text == "none" else [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in steps if s not in REDUCTIONS]
    if bad:
        fail(f"unknown reduction {bad[0]!r}; use a comma list of {', '.join(REDUCTIONS)} or none")
    return steps


# ---------------------------------------------------------------- hwcheck graph

@click.command()
@knob_options(modes=DESIGN_MODES)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="the graph file: .dot, .graphml or .json")
@click.option("--force", is_flag=True, help="overwrite --out if it exists")
@click.option("--reduce", "reductions", default=",".join(REDUCTIONS), show_default=True,
              help="reductions to apply in order (comma list of symmetry, chains, scc; or none)")
@click.option("--max-nodes", type=click.IntRange(min=1), default=DEFAULT_MAX_NODES, show_default=True,
              help="refuse to build a larger explored graph")
@click.option("--paths-only", is_flag=True, help="export only the shortest paths to violating states")
def graph(out, force, reductions, max_nodes, paths_only, **knobs):
    """Build the explored state graph, reduce it, mark violations, export it by suffix."""
    cfg = make_config(**knobs)
    if out.suffix.lower() not in FORMATS:
        fail(f"{out}: unknown graph format {out.suffix or '(none)'!r}; use {', '.join(FORMATS)}")
    steps = _reductions(reductions)
    check_writable(out, force)
    model = Model(cfg)
    click.echo(f"hwcheck graph: {settings_line(cfg)}")
    g = None
    try:
        for name, g in reduce_all(model, _explore(model, max_nodes), steps):
            mark_violations(g)
            dist, _ = shortest_violation(g)
            unit = "steps" if name != "scc" else "component hops"
            near = f"; nearest violation {dist} {unit} away" if dist is not None else ""
            click.echo(f"  {name:<9} {counts(g)}{near}")
    except KeyboardInterrupt:
        built = f" ({counts(g)} after the last reduction)" if g is not None else ""
        interrupted(f"the state graph was explored{built}; reducing it was under way; nothing written")
    if paths_only:
        # up to the first violating state of each path: what happens after it is another story
        keep = [v for v, d in g.nodes(data=True) if d["on_path"]]
        g = g.edge_subgraph([(u, v) for u, v, d in g.edges(data=True)
                             if d["on_path"] and not g.nodes[u]["violated"]]).copy()
        click.echo(f"  paths     {counts(g)} (only the shortest paths to violating states)"
                   if keep else "  paths     no violating state: nothing to export")
    title = f"hwcheck graph --mode={cfg.mode} ({'+'.join(steps) or 'no reduction'})"
    try:
        write_graph(model, g, out, title)
    except OSError as e:
        fail(f"cannot write {out}: {e.strerror}")
    click.echo(f"graph: {out}")
    bad = any(d["violated"] for _, d in g.nodes(data=True))
    raise click.exceptions.Exit(EXIT_VIOLATION if bad else EXIT_HOLDS)
