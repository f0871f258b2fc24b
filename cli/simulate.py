"""``hwcheck simulate``: random walks for configurations bfs cannot finish (checker/simulate.py); every
option of the command is declared here."""

from __future__ import annotations

import secrets
from pathlib import Path

import click

from hwcheck.checker import variants
from hwcheck.checker.bfs import default_workers
from hwcheck.checker.result import INTERRUPTED, VIOLATED
from hwcheck.checker.simulate import SimulationError, check_settings, simulate as run_simulation
from hwcheck.checker.trace import to_itf

from . import jsonout
from .html import render_html
from .models import build_model, model_options, settings_line, trace_table
from .options import (EXIT_HOLDS, EXIT_INTERRUPTED, EXIT_VIOLATION, check_writable, fail, free_default_path,
                      knob_options, refuse_quiet_with_verbose, switch, wide_option, write_after_run,
                      write_trace)
from .progress import Progress, level as progress_level

DEFAULT_RUNS = 30_000      # walks without --runs or --time (docs/simulate.md, "Issue 42's target": why 30,000)


@click.command()
@knob_options
@model_options
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="the same seed and settings give the same walks, with any --workers or on Spark "
                   "[default: a new random seed each run, printed, so --seed repeats it]")
@click.option("--runs", type=int, default=None,
              help=f"walks to take [default: {DEFAULT_RUNS:,}; with --time: as many as it allows]")
@click.option("--depth", type=int, default=50, show_default=True, help="steps a walk takes at most")
@click.option("--time", "time_limit", type=float, default=None, metavar="SECONDS",
              help="stop after this long (a timed run is not reproducible)")
@switch("--swarm/--uniform", default=True, shown="swarm",
        help="swarm: each walk draws its own event kinds and event rate; uniform: every enabled "
                   "step equally likely")
@click.option("--invariant", "only", multiple=True, metavar="NAME",
              help="check only this invariant (repeatable); default: all")
@click.option("--confirm-states", type=click.IntRange(min=0), default=200_000, show_default=True,
              help="states the bounded bfs that confirms or shortens a shrunk trace may visit (0: no bfs)")
@click.option("--workers", type=int, default=None,
              help="processes taking walks [default: all cores]")
@click.option("--engine", type=click.Choice(["processes", "spark"]), default="processes", show_default=True,
              help="where the walks run: worker processes, or Spark tasks")
@click.option("--master", default=None, metavar="URL",
              help="spark: the Spark master [default: spark-submit's --master, else local[*]]")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="where to write the shrunk counterexample (ITF JSON); default hwcheck-<mode>-<invariant>.itf.json")
@click.option("--html", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="also write the shrunk counterexample as an HTML report")
@click.option("--force", is_flag=True, help="overwrite --out and --html if they exist")
@click.option("--quiet", is_flag=True, help="no progress line, no trace table")
@wide_option
@click.option("--verbose", is_flag=True, help="progress as a log line each second, terminal or not")
@jsonout.json_option("simulate")
def simulate(seed, runs, depth, time_limit, swarm, only, confirm_states, workers, engine, master, out, html,
             force, quiet, verbose, **knobs):
    """Random walks from the initial state, every state checked; a violation is shrunk, then
    confirmed or shortened by a bounded bfs. Finds bugs in configurations bfs cannot finish; a
    run without a violation proves nothing.

    \b
    Example:
      hwcheck simulate --mode kafka15583 --replicas 3 --min-isr 2 --power-failures 1 --time 60
    """
    refuse_quiet_with_verbose(quiet, verbose)
    model = build_model(knobs, only, fail)
    names = [name for name, _ in model.invariants]
    unknown = [name for name in only if name not in names]
    if unknown:
        fail(f"unknown invariant {unknown[0]!r}; choose from {', '.join(names)}")
    if engine != "spark" and master is not None:
        fail("--master applies to --engine spark only")
    if engine == "spark" and workers is not None:
        fail("--workers applies to --engine processes only (Spark's master sets the cores)")
    if runs is None and time_limit is None:
        runs = DEFAULT_RUNS
    for path in (out, html):
        if path is not None:
            check_writable(path, force)
    checked = list(only) or names
    workers = workers if workers is not None else default_workers()
    chosen = seed is None
    if chosen:                              # every run explores new walks; the line below says how to repeat it
        seed = secrets.randbelow(1_000_000)
    settings = dict(runs=runs, depth=depth, seed=seed, time_limit=time_limit, workers=workers, swarm=swarm,
                    only=checked, confirm_states=confirm_states)
    try:
        check_settings(runs=runs, depth=depth, time_limit=time_limit, workers=workers)
    except SimulationError as e:            # bad settings: refused before any JVM or worker starts
        fail(str(e))
    cfg = getattr(model, "cfg", None)
    jsonout.note(settings=jsonout.settings(model), engine=engine, seed=seed, seed_random=chosen, runs=runs,
                 time_limit=time_limit, depth=depth, swarm=swarm, invariants=checked, violations=[])
    click.echo(f"hwcheck simulate: {settings_line(cfg) if cfg is not None else model}")
    scope = f"{runs:,} walks" if runs is not None else "walks"
    scope += f" for at most {time_limit:g} s" if time_limit is not None else ""
    where = "spark" if engine == "spark" else f"{workers} worker{'s' if workers != 1 else ''}"
    click.echo(f"simulate: seed {seed}{' (random; --seed ' + str(seed) + ' repeats this run)' if chosen else ''}, "
               f"{scope} of at most {depth} steps, {'swarm' if swarm else 'uniform'}, {where}; invariants "
               f"{', '.join(checked)}")
    progress = Progress(progress_level(quiet, verbose), engine="simulate")
    if engine == "spark":
        result = _on_spark(model, settings, master, progress)
    else:
        result = run_simulation(model, progress=progress, **settings)
    progress.done()
    figures = figures_line(result)
    jsonout.note(figures=jsonout.simulate_figures(result), coverage=dict(result.coverage),
                 never_fired=list(result.never_fired))
    if result.verdict == INTERRUPTED:
        jsonout.note(verdict="interrupted")
        click.echo(f"interrupted: {figures}; no violation among them")
        raise click.exceptions.Exit(EXIT_INTERRUPTED)
    if result.verdict != VIOLATED:
        jsonout.note(verdict="no-violation")
        why = f" ({result.reason})" if result.reason else ""
        click.echo(f"verdict: no violation in {result.walks:,} walks{why}; a simulation proves nothing "
                   f"(hwcheck verify or prove for that)")
        _coverage(result)
        click.echo(f"figures: {figures}")
        raise click.exceptions.Exit(EXIT_HOLDS)
    trace = result.violations[0]
    click.echo(f"verdict: violated: {trace.invariant} in walk {result.walk_index:,} after "
               f"{result.original_steps} steps (found in {result.found_after:.1f} s); shrunk to {trace.steps} "
               f"steps ({result.shrink_note})")
    if not quiet:
        click.echo(_table(model, trace))
    path = out if out is not None else free_default_path(cfg, trace.invariant)
    written = write_trace(path, variants.stamp(to_itf(model, trace, "simulate"), cfg))
    jsonout.note(verdict="violated", violation={
        "invariant": trace.invariant, "walk": result.walk_index, "found_after_s": round(result.found_after, 3),
        "walk_steps": result.original_steps, "steps": trace.steps, "shrink_note": result.shrink_note,
        "trace": str(path) if written else None, **jsonout.story(model, trace, [trace.invariant])})
    if html is not None and write_after_run(html, render_html(model, trace, path.name), "the report"):
        click.echo(f"html: {html}")
    _coverage(result)
    click.echo(f"figures: {figures}")
    raise click.exceptions.Exit(EXIT_VIOLATION)


def _table(model, trace) -> str:
    return trace_table(model, trace, [trace.invariant])


def _coverage(result) -> None:
    fired = ", ".join(f"{name} {n:,}" for name, n in sorted(result.coverage.items(), key=lambda kv: -kv[1]))
    click.echo(f"coverage: {fired or 'no step taken'}")
    if result.never_fired:
        click.echo(f"never fired: {', '.join(result.never_fired)}")


def figures_line(result) -> str:
    """The run's figures in one line.

    >>> from hwcheck.checker.simulate import SimulationResult
    >>> figures_line(SimulationResult(engine="simulate", verdict="holds", distinct_states=900,
    ...     generated_states=5200, depth=50, elapsed=2.0, peak_rss_mb=0, walks=200))
    '200 walks, 5,200 states visited (900 distinct), deepest walk 50 steps, 100 walks/s, 2,500 steps/s, 2.0 s, peak RSS 0 MB'
    """
    return (f"{result.walks:,} walks, {result.generated_states:,} states visited ({result.distinct_states:,} "
            f"distinct), deepest walk {result.depth} steps, {result.walks_per_second:,.0f} walks/s, "
            f"{result.steps_per_second:,.0f} steps/s, {result.elapsed:.1f} s, peak RSS {result.peak_rss_mb:.0f} MB")


def _on_spark(model, settings, master, progress):
    """The walks as Spark tasks; a Spark that cannot start (no Java, a bad master) is one line, exit 2."""
    from hwcheck.checker.spark import SparkEngineError, ship_config, start_spark, stop_spark

    ship_config(model.cfg)      # the walks' tasks hold the model, its Config and Mode
    try:
        sc = start_spark(master, app_name="hwcheck-simulate")
    except SparkEngineError as e:
        fail(str(e))
    failed = False
    try:
        click.echo(f"spark {sc.version}: master {sc.master}, default parallelism {sc.defaultParallelism}")
        return run_simulation(model, progress=progress, sc=sc, **{**settings, "workers": 1})
    except Exception as e:                  # a Spark job that failed past its retries
        failed = True
        fail(f"spark: {str(e).splitlines()[0] if str(e) else type(e).__name__} (see {sc.hwcheck_log})")
    finally:
        stop_spark(sc, keep_log=failed)
