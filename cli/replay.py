"""``hwcheck replay TRACE``: re-run a stored trace through the spec, or its steps under another mode;
cli/main.py adds it to the group, cli/graph.py extends it with --focus and lassos."""

from __future__ import annotations

from pathlib import Path


import click

from hwcheck.checker.trace import TraceError, differential, load_itf, replay as replay_trace

from . import jsonout
from .html import first_breaks, render_html
from .models import DESIGN_MODES, mode_file_option, settings_line, trace_table
from .options import EXIT_HOLDS, EXIT_VIOLATION, check_writable, fail, read_text, write_file


@click.command()
@click.argument("trace_file", metavar="TRACE", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--mode", "other_mode", type=click.Choice(DESIGN_MODES), default=None,
              help="differential replay: run the same schedule of steps under this mode")
@mode_file_option(help="the variant (docs/variants.md) a trace was found under; a trace of another mode is "
                       "replayed under it, as --mode does")
@click.option("--html", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="also write the trace as one self-contained HTML page (step through it in a browser)")
@click.option("--force", is_flag=True, help="overwrite --html if it exists")
@click.option("--quiet", is_flag=True, help="no trace table")
@click.option("--verbose", is_flag=True, help="also list the step where each invariant first breaks")
def replay(trace_file, other_mode, html=None, force=False, quiet=False, verbose=False):
    """Re-run a stored ITF counterexample through the spec, step by step.

    \b
    Example:
      hwcheck replay counterexamples/hw-data-loss.itf.json --html loss.html
    """
    if html is not None:
        if other_mode is not None:
            fail("--html and --mode do not combine (the report shows the trace as stored)")
        check_writable(html, force)
    text = read_text(trace_file)
    try:
        doc = load_itf(text)
        if other_mode is not None:
            diff = differential(doc, other_mode)
        else:
            done = replay_trace(doc)
    except TraceError as e:
        fail(f"{trace_file}: {e}")
    if other_mode is not None:
        report_differential(trace_file, diff)
        orig = diff.original
        jsonout.note(trace=str(trace_file), settings=jsonout.settings(orig.model), steps=orig.trace.steps,
                     claimed=orig.trace.invariant, broken=orig.violated,
                     first_broken=[{"step": i, "invariant": n} for i, n in first_breaks(orig.model, orig.trace.states)],
                     verdict="differential", html=None,
                     differential={"mode": diff.model.cfg.mode, "parted_at": diff.parted_at, "parted_how": diff.parted_how,
                                   "refused_at": diff.refused_at, "refused_why": diff.refused_why,
                                   "breaks": [{"step": i, "invariant": n} for i, n in diff.violated]})
        raise click.exceptions.Exit(EXIT_HOLDS)
    model = done.model
    claimed = done.trace.invariant
    breaks = first_breaks(model, done.trace.states)
    if html is not None:
        if getattr(model, "family", "design") != "design":
            fail(f"{trace_file}: --html draws design-model traces; this trace is of {model.family}")
        write_file(html, render_html(model, done.trace, trace_file.name, claimed))
    stays = claimed is None or claimed in done.violated
    jsonout.note(trace=str(trace_file), settings=jsonout.settings(model), steps=done.trace.steps, claimed=claimed,
                 broken=done.violated, first_broken=[{"step": i, "invariant": name} for i, name in breaks],
                 verdict="replays" if stays else "no-longer-breaks", html=None if html is None else str(html))
    click.echo(f"hwcheck replay: {trace_file}: {settings_line(model.cfg)}")
    if not quiet:
        click.echo(trace_table(model, done.trace, done.violated))
    broken = ", ".join(done.violated) or "no invariant"
    click.echo(f"replayed {done.trace.steps} steps: {broken} broken in the last state")
    if verbose:
        for i, name in breaks:
            click.echo(f"  {name} first breaks at step {i}" + (f": {model.format_label(done.trace.labels[i - 1])}"
                                                                 if i else " (the initial state)"))
    if html is not None:
        click.echo(f"html: {html}")
    if claimed and claimed not in done.violated:
        click.echo(f"the trace was stored as a counterexample to {claimed}, which no longer breaks")
        raise click.exceptions.Exit(EXIT_VIOLATION)
    raise click.exceptions.Exit(EXIT_HOLDS)


def report_differential(trace_file: Path, diff) -> None:
    a, b = diff.original.model.cfg.mode, diff.model.cfg.mode
    click.echo(f"hwcheck replay: {trace_file} (found under {a}) with its steps run under {b}")
    click.echo(trace_table(diff.model, diff.trace, [name for _, name in diff.violated]))
    steps = diff.original.trace.steps
    if diff.parted_at is not None:
        click.echo(f"parts ways at step {diff.parted_at}: {diff.parted_how}")
    else:
        click.echo("the shared state (logs, HWs, roles, controller, acks) never parts ways")
    if diff.refused_at is not None:
        click.echo(f"refused at step {diff.refused_at} of {steps}: {diff.refused_why}")
    else:
        click.echo(f"all {steps} steps run under {b}")
    claimed = diff.original.trace.invariant
    if diff.violated:
        click.echo("breaks under " + b + ": " + ", ".join(f"{name} at step {i}" for i, name in diff.violated))
    else:
        click.echo(f"breaks under {b}: nothing" + (f" ({claimed} holds throughout)" if claimed else ""))
