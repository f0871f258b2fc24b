"""Commands on the state graph: ``hwcheck graph``, ``verify --liveness`` and ``replay --focus``.

cli/main.py adds ``graph`` to the group and calls ``register`` with ``verify`` and ``replay``;
``register`` adds the options here to those commands and wraps their callbacks, which take over
when their option is given (or, for replay, when the trace is a lasso) and otherwise pass the call on.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import click

from hwcheck.checker.focus import focus as focus_trace, uninvolved
from hwcheck.checker.graph import (DEFAULT_MAX_NODES, FORMATS, GraphInterrupted, GraphTooLarge, counts, explore,
                                   mark_violations, reduce_all, shortest_violation, write_graph)
from hwcheck.checker.liveness import check_liveness, lasso_to_itf, replay_lasso
from hwcheck.checker.trace import TraceError, load_itf, replay as replay_trace
from hwcheck.spec import Model
from hwcheck.spec.actions import ACTIONS

from .options import (EXIT_HOLDS, EXIT_INTERRUPTED, EXIT_VIOLATION, check_writable, fail, free_default_path, knob_options,
                      make_config, read_text, write_after_run)
from .models import DESIGN_MODES, DESIGN_ONLY, TLA_ONLY, build_model, given
from .render import settings_line, trace_table

REDUCTIONS = ("symmetry", "chains", "scc")
ACTION_NAMES = [name for name, _, _ in ACTIONS]


def _explore(model, max_nodes):
    try:
        return explore(model, max_nodes=max_nodes)
    except GraphTooLarge as e:
        fail(str(e))
    except GraphInterrupted as e:
        _interrupted(f"{e}; no verdict")


def _interrupted(covered: str):
    """Ctrl-C: one line of what was covered, exit 130."""
    click.echo(f"interrupted: {covered}")
    raise click.exceptions.Exit(EXIT_INTERRUPTED)


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
        _interrupted(f"the state graph was explored{built}; reducing it was under way; nothing written")
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


# ---------------------------------------------------------------- verify --liveness

# what verify takes with --liveness: the design model's settings and where the lasso goes; every
# other verify option given with it is refused, so an option added to verify later is refused too
# until someone decides it applies
LIVENESS_TAKES = frozenset({"liveness", "fair", "max_nodes", "model_family", "mode", "replicas", "out", "force",
                            "quiet", "verbose"} | set(DESIGN_ONLY) | set(TLA_ONLY))


def liveness_callback(fn):
    """verify's callback, taking over with --liveness."""
    @functools.wraps(fn)
    def wrapper(liveness=False, fair=(), max_nodes=DEFAULT_MAX_NODES, **kwargs):
        if not liveness:
            if fair:
                fail("--fair applies only with --liveness")
            return fn(**kwargs)
        ctx = click.get_current_context()
        refused = [p.opts[0] for p in ctx.command.params if p.name not in LIVENESS_TAKES and given(ctx, p.name)]
        if refused:
            fail(f"{', '.join(refused)} {'does' if len(refused) == 1 else 'do'} not apply to --liveness "
                 "(it explores the whole state graph of the design model)")
        return run_liveness(fair=fair, max_nodes=max_nodes, **{k: v for k, v in kwargs.items() if k in LIVENESS_TAKES})
    return wrapper


LIVENESS_OPTIONS = [
    click.Option(["--liveness"], is_flag=True,
                 help="check the liveness properties under weak fairness (a lasso on violation)"),
    click.Option(["--fair"], multiple=True, type=click.Choice(ACTION_NAMES), metavar="ACTION",
                 help="with --liveness: also treat ACTION as weakly fair (repeatable)"),
    click.Option(["--max-nodes"], type=click.IntRange(min=1), default=DEFAULT_MAX_NODES, show_default=True,
                 help="with --liveness: refuse a larger state graph"),
]


def run_liveness(fair, max_nodes, out, force, quiet, verbose=False, **knobs):
    if knobs.get("model_family", "design") != "design":
        fail("--liveness applies to --model design only")
    model = build_model(knobs, (), fail)
    cfg = model.cfg
    if out is not None:
        check_writable(out, force)
    fair_set = tuple(dict.fromkeys(tuple(model.fair_actions) + tuple(fair)))
    click.echo(f"hwcheck verify --liveness: {settings_line(cfg)}")
    click.echo(f"weakly fair: {', '.join(fair_set)} (any other step may never happen; stuttering allowed)")
    g = _explore(model, max_nodes)
    click.echo(f"state graph: {counts(g)}")
    try:
        results = check_liveness(model, g, fair_set)
    except KeyboardInterrupt:
        _interrupted(f"the state graph was built ({counts(g)}); the liveness check was under way; no verdict")
    broken = 0
    for name, lasso in results:
        if lasso is None:
            click.echo(f"  {name}: holds")
            continue
        broken += 1
        closing = "stuttering" if lasso.closing is None else model.format_label(lasso.closing)
        click.echo(f"  {name}: violated: a lasso of {lasso.prefix} steps, then a cycle of {lasso.cycle} "
                   f"state(s) closed by {closing}")
        if not quiet:
            click.echo(trace_table(model, lasso.trace, [f"{name} (loops back to step {lasso.loop})"]))
        path = out if (out is not None and broken == 1) else free_default_path(cfg, name)
        if write_after_run(path, json.dumps(lasso_to_itf(model, lasso, fair_set), indent=1) + "\n", "the lasso"):
            click.echo(f"  trace: {path} (replay with: hwcheck replay {path})")
        else:
            click.echo(f"  trace: not written ({path} refused it)")
    bad_states = sum(1 for _, d in g.nodes(data=True) if d["violated"])
    if bad_states:
        click.echo(f"safety: {bad_states:,} states break an invariant (hwcheck verify without --liveness for a trace)")
    verdict = "violated" if broken else "holds"
    click.echo(f"verdict: {verdict}: {len(results) - broken} of {len(results)} liveness properties hold")
    raise click.exceptions.Exit(EXIT_VIOLATION if broken else EXIT_HOLDS)


# ---------------------------------------------------------------- replay --focus, lassos

def replay_callback(fn):
    """replay's callback, taking over with --focus or for a lasso."""
    @functools.wraps(fn)
    def wrapper(trace_file, other_mode=None, focus=False, **kwargs):
        if focus and other_mode is not None:
            fail("--focus and --mode do not combine")
        if focus and kwargs.get("html") is not None:
            fail("--focus and --html do not combine")
        doc = None
        try:
            doc = load_itf(read_text(trace_file))
        except TraceError:
            pass                                    # main's replay reports it
        if doc is not None and "loop" in doc:
            if focus or other_mode is not None or kwargs.get("html") is not None:
                fail(f"{trace_file}: a lasso (liveness trace): --focus, --mode and --html apply to safety traces")
            return run_lasso_replay(trace_file, doc, quiet=kwargs.get("quiet", False))
        if focus and doc is not None:
            return run_focus(trace_file, doc, quiet=kwargs.get("quiet", False))
        return fn(trace_file=trace_file, other_mode=other_mode, **kwargs)
    return wrapper


FOCUS_OPTIONS = [
    click.Option(["--focus"], is_flag=True,
                 help="drop every step the violation does not need and print the shorter trace"),
]


def register(verify, replay) -> None:
    """Extend main's verify and replay commands with the options of this module."""
    verify.params.extend(LIVENESS_OPTIONS)
    verify.callback = liveness_callback(verify.callback)
    replay.params.extend(FOCUS_OPTIONS)
    replay.callback = replay_callback(replay.callback)


def run_focus(trace_file: Path, doc: dict, quiet: bool = False):
    try:
        done = replay_trace(doc)
    except TraceError as e:
        fail(f"{trace_file}: {e}")
    model, trace = done.model, done.trace
    invariant = trace.invariant if trace.invariant in done.violated else (done.violated or [None])[0]
    if invariant is None:
        fail(f"{trace_file}: no invariant breaks in the last state: nothing to focus on")
    focused = focus_trace(model, trace.labels, invariant)
    click.echo(f"hwcheck replay --focus: {trace_file}: {settings_line(model.cfg)}")
    if not quiet:
        click.echo(trace_table(model, focused, [invariant]))
    idle = uninvolved(focused.labels, model.cfg.replicas)
    note = f"; replicas never named: {', '.join(f'r{r}' for r in idle)}" if idle else ""
    click.echo(f"focused {trace.steps} -> {focused.steps} steps, still breaking {invariant}{note}")
    raise click.exceptions.Exit(EXIT_HOLDS)


def run_lasso_replay(trace_file: Path, doc: dict, quiet: bool = False):
    try:
        done, why = replay_lasso(doc)
    except TraceError as e:
        fail(f"{trace_file}: {e}")
    model = done.model
    name = done.trace.invariant
    click.echo(f"hwcheck replay: {trace_file}: {settings_line(model.cfg)}")
    if not quiet:
        click.echo(trace_table(model, done.trace, [f"{name} (loops back to step {done.loop})"]))
    closing = "stuttering" if done.closing is None else model.format_label(done.closing)
    click.echo(f"replayed a lasso: {done.loop} steps, then states {done.loop}..{done.trace.steps} repeat "
               f"(closed by {closing})")
    if why is not None:
        click.echo(f"the lasso no longer violates {name}: {why}")
        raise click.exceptions.Exit(EXIT_VIOLATION)
    click.echo(f"{name} violated: the cycle never settles and is fair")
    raise click.exceptions.Exit(EXIT_HOLDS)
