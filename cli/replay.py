"""``hwcheck replay TRACE``: re-run a stored trace through the spec; or its steps under another mode
(``--mode``, or the variant of ``--mode-file``: a differential replay); or only the steps its
violation needs (``--focus``); a lasso (a liveness trace) replays with its cycle. Every option of
the command is declared here."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Tuple

import click

from hwcheck.checker.families import DESIGN
from hwcheck.checker.focus import focus as focus_trace, uninvolved
from hwcheck.checker.liveness import replay_lasso
from hwcheck.checker.trace import TraceError, differential, load_itf, replay as replay_trace
from hwcheck.spec import ConfigError
from hwcheck.spec.config import resolve_mode

from . import jsonout
from .html import first_breaks, render_html
from .models import DESIGN_MODES, load_mode_file, mode_file_option, mode_named, mode_option, settings_line, trace_table
from .options import (EXIT_HOLDS, EXIT_VIOLATION, check_writable, fail, read_text, refuse_quiet_with_verbose,
                      wide_option, write_file)


@click.command()
@click.argument("trace_file", metavar="TRACE", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@mode_option(DESIGN_MODES, "--mode", "other_mode", default=None,
             help="differential replay: run the same schedule of steps under this mode")
@mode_file_option(help="the variant (docs/variants.md) a trace was found under; a trace of another mode is "
                       "replayed under it, as --mode does")
@click.option("--html", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="also write the trace as one self-contained HTML page (step through it in a browser)")
@click.option("--force", is_flag=True, help="overwrite --html if it exists")
@click.option("--quiet", is_flag=True, help="no trace table")
@wide_option
@click.option("--verbose", is_flag=True, help="also list the step where each invariant first breaks")
@click.option("--focus", is_flag=True,
              help="drop every step the violation does not need and print the shorter trace")
@jsonout.json_option("replay", refuse=("focus",))
def replay(trace_file, other_mode, mode_file, html, force, quiet, verbose, focus):
    """Re-run a stored ITF counterexample through the spec, step by step.

    \b
    Example:
      hwcheck replay counterexamples/hw-data-loss.itf.json --html loss.html
    """
    if other_mode is not None:
        other_mode = mode_named(other_mode)
    refuse_quiet_with_verbose(quiet, verbose)
    doc, error = load_trace(trace_file)
    doc, other_mode = with_mode_file(trace_file, doc, mode_file, other_mode, html=html, focus=focus)
    if focus and other_mode is not None:
        fail("--focus and --mode do not combine")
    if focus and html is not None:
        fail("--focus and --html do not combine")
    if doc is not None and "loop" in doc:
        if focus or other_mode is not None or html is not None:
            fail(f"{trace_file}: a lasso (liveness trace): --focus, --mode and --html apply to safety traces")
        replay_lasso_trace(trace_file, doc, quiet=quiet)
    if focus and doc is not None:
        replay_focused(trace_file, doc, quiet=quiet)
    if html is not None:
        if other_mode is not None:
            fail("--html and --mode do not combine (the report shows the trace as stored)")
        check_writable(html, force)
    try:
        if doc is None:
            raise error
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
                     differential={"mode": str(diff.model.cfg.mode), "parted_at": diff.parted_at,
                                   "parted_how": diff.parted_how, "refused_at": diff.refused_at,
                                   "refused_why": diff.refused_why,
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
                 verdict="replays" if stays else "no-longer-breaks", html=None if html is None else str(html),
                 **jsonout.story(model, done.trace, done.violated))
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


def load_trace(trace_file: Path) -> Tuple[Optional[dict], Optional[TraceError]]:
    """The ITF document of the file (a file that cannot be read ends in one line), or None and why
    not (reported once the options are checked)."""
    text = read_text(trace_file)
    try:
        return load_itf(text), None
    except TraceError as e:
        return None, e


def under(doc: dict, mode) -> dict:
    """The trace with the Mode it was found under in its config, in place of its name: the
    Config the replay builds from the trace then runs that Mode."""
    meta = doc["#meta"]["hwcheck"]
    return {**doc, "#meta": {**doc["#meta"], "hwcheck": {**meta, "config": {**meta["config"], "mode": mode}}}}


def with_mode_file(trace_file: Path, doc: Optional[dict], mode_file, other_mode, html, focus):
    """``(doc, other_mode)`` for the replay, given ``--mode-file``:

    - with it, the variant is loaded; a trace found under it replays as stored, under it (and
      ``--mode`` still names a built-in mode to replay it under); any other trace is replayed
      under the variant (``--mode <it>``: a differential replay);
    - without it, a trace found under a variant says in one line that it needs ``--mode-file``.
    """
    meta = doc["#meta"]["hwcheck"] if doc is not None else {}
    recorded = meta.get("config", {}).get("mode")
    design = meta.get("model", DESIGN) == DESIGN
    if mode_file is None:
        if design and isinstance(recorded, str) and not _built_in(recorded):
            path = meta.get("mode_file")
            if isinstance(path, str):
                fail(f"{trace_file}: found under mode {recorded!r} of the mode file {path}; "
                     f"replay it with --mode-file {path}")
            fail(f"{trace_file}: found under mode {recorded!r}, which is not built in "
                 f"({', '.join(DESIGN_MODES)}); if a mode file defines it, replay with --mode-file FILE")
        return doc, other_mode
    if doc is not None and not design:
        fail(f"{trace_file}: --mode-file applies to design-model traces; this trace is of {meta.get('model')}")
    mode = load_mode_file(mode_file, fail)
    if doc is None:
        return doc, other_mode
    if recorded == mode.name:
        return under(doc, mode), other_mode
    if other_mode is not None:
        fail(f"{mode_file} defines mode {mode.name}, but the trace was found under {recorded}: "
             f"--mode-file replays it under {mode.name}, --mode under a built-in mode; give one")
    why = f"{trace_file} was found under {recorded}, {mode_file} defines {mode.name}: "
    if "loop" in doc:
        fail(why + "a differential replay (under the mode file's mode) applies to safety traces, not to a lasso")
    busy = [flag for flag, on in (("--html", html is not None), ("--focus", focus)) if on]
    if busy:
        fail(why + f"a differential replay (under the mode file's mode) does not combine with {busy[0]}")
    return doc, mode_named(mode)


def _built_in(name: str) -> bool:
    try:
        resolve_mode(name)
    except ConfigError:
        return False
    return True


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


def replay_focused(trace_file: Path, doc: dict, quiet: bool = False):
    """``--focus``: the trace cut to the steps its violation needs."""
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


def replay_lasso_trace(trace_file: Path, doc: dict, quiet: bool = False):
    """A lasso: its prefix, then the cycle, which must still violate its property under the stored fairness."""
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
