"""``hwcheck verify``: explore every behaviour within the bounds (bfs, spark or z3); cli/main.py adds it
to the group, cli/graph.py extends it with --liveness."""

from __future__ import annotations

import os
from pathlib import Path


import click

from hwcheck.checker import variants
from hwcheck.checker.bfs import CHECKPOINT_FILE, CheckpointError, bfs, default_workers, load_checkpoint
from hwcheck.checker.result import INTERRUPTED, VIOLATED
from hwcheck.checker.trace import to_itf
from hwcheck.spec import ConfigError

from . import jsonout
from .models import build_model, model_options, settings_line, trace_table
from .options import (EXIT_HOLDS, EXIT_INTERRUPTED, EXIT_VIOLATION, check_writable, fail, free_default_path,
                      knob_options, write_trace)
from .progress import Progress, level as progress_level
from .render import figures_line
from .engines import ENGINES, engine_options, run_spark
from . import symbolic as _symbolic


@click.command()
@knob_options
@model_options
@click.option("--engine", type=click.Choice(ENGINES), default="bfs", show_default=True)
@click.option("--depth", type=click.IntRange(min=0), default=None, help="z3: the longest trace BMC looks for")
@engine_options
@click.option("--max-depth", type=click.IntRange(min=0), default=None, help="stop exploring at this depth")
@click.option("--all-invariants", is_flag=True, help="keep going after a violation: first trace of each invariant")
@click.option("--invariant", "only", multiple=True, metavar="NAME",
              help="check only this invariant (repeatable); default: all")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="where to write the counterexample (ITF JSON); default hwcheck-<mode>-<invariant>.itf.json")
@click.option("--force", is_flag=True, help="overwrite --out if it exists")
@click.option("--quiet", is_flag=True, help="no progress line, no trace table")
@click.option("--verbose", is_flag=True, help="progress as a log line each second, terminal or not")
@click.option("--symmetry", is_flag=True,
              help="explore one state per class of states equal up to renaming replicas "
                   "(counts are of classes; verdicts and trace lengths do not change)")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="processes expanding each large BFS level (default: all cores; results do not depend on it)")
@click.option("--checkpoint", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="bfs: save the search state in DIR at the end of every level")
@click.option("--resume", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="bfs: continue the search saved in DIR (same settings); reaches the uninterrupted verdict")
@click.option("--max-memory", type=click.FloatRange(min=0.1), default=None, metavar="GB",
              help="bfs: stop, saying what was covered, once the process passes this size "
                   "[default: 80% of the machine's memory]")
def verify(engine, depth, master, partitions, max_depth, all_invariants, only, out, force, quiet, verbose=False,
           symmetry=False, workers=None, checkpoint=None, resume=None, max_memory=None, **knobs):
    """Explore every behaviour within the bounds; report 'holds' or a shortest counterexample.

    \b
    Example:
      hwcheck verify --mode=hw --out loss.itf.json
    """
    model = build_model(knobs, only, fail)
    cfg = model.cfg
    if out is not None:
        check_writable(out, force)
    names = [name for name, _ in model.invariants]
    unknown = [name for name in only if name not in names]
    if unknown:
        fail(f"unknown invariant {unknown[0]!r}; choose from {', '.join(names)}")
    checked = list(only) or names
    if engine == "z3" or depth is not None:
        if engine != "z3" or max_depth is not None or all_invariants or symmetry or workers:
            fail("--depth goes with --engine z3, which takes none of --max-depth, --all-invariants, "
                 "--symmetry, --workers")
        try:
            _symbolic.verify_z3(model, depth, checked, out, force, quiet)
        except ConfigError as e:                # a mode (a variant) the z3 encoding cannot express
            fail(f"z3 engine: {e}")
    click.echo(f"hwcheck verify: {settings_line(cfg)}")
    click.echo(f"engine {engine}; invariants {', '.join(checked)}")
    progress = Progress(progress_level(quiet, verbose), engine=engine)
    if engine != "bfs" and (checkpoint or resume or max_memory):
        fail("--checkpoint, --resume and --max-memory apply to --engine bfs only")
    if (checkpoint or resume) and variants.file_of(cfg.mode):
        fail("--checkpoint and --resume do not combine with --mode-file (a checkpoint records the mode's name, "
             "not what the file says, so it could not tell an edited file)")
    snapshot = resume_from(resume) if resume is not None else None
    if checkpoint is not None:
        prepare_checkpoint(checkpoint, force, resuming=resume is not None and resume.resolve() == checkpoint.resolve())
    if engine == "spark":
        if symmetry or workers:
            fail("--symmetry and --workers apply to --engine bfs only")
        result = run_spark(model, max_depth=max_depth, all_invariants=all_invariants, only=checked,
                           progress=progress, master=master, partitions=partitions, fail=fail)
    else:
        limit = max_memory * 1024 if max_memory is not None else default_memory_limit_mb()
        try:
            result = bfs(model, max_depth=max_depth, all_invariants=all_invariants, progress=progress,
                         only=checked, symmetry=symmetry, workers=workers or default_workers(),
                         checkpoint=None if checkpoint is None else str(checkpoint), resume=snapshot,
                         max_rss_mb=limit)
        except CheckpointError as e:
            fail(f"{resume}: {e}")
    progress.done()
    # --all-invariants cut by Ctrl-C after some violations: their traces are kept, the run is interrupted
    cut = result.verdict == VIOLATED and result.reason == "interrupted"
    jsonout.note(settings=jsonout.settings(model), engine=engine, invariants=checked, max_depth=max_depth,
                 verdict=INTERRUPTED if cut else result.verdict, complete=result.complete,
                 figures=jsonout.figures(result), violations=[])
    if result.verdict == INTERRUPTED:
        saved = f"; resume with --resume {checkpoint}" if checkpoint is not None else ""
        if result.reason.startswith("memory limit"):
            per_state = result.peak_rss_mb * 2 ** 20 / max(result.distinct_states, 1)
            fail(f"stopped at the {result.reason}: covered {result.distinct_states:,} distinct states to depth "
                 f"{result.depth} (~{per_state:,.0f} bytes a state), no violation among them; the space is larger "
                 f"than memory allows: raise --max-memory, or use --symmetry or --engine spark{saved}")
        click.echo(f"interrupted: covered {result.distinct_states:,} distinct states to depth {result.depth} "
                   f"in {result.elapsed:.1f} s; no violation among them{saved}")
        raise click.exceptions.Exit(EXIT_INTERRUPTED)
    if result.verdict != VIOLATED:
        scope = "every reachable state" if result.complete else f"every state within depth {result.depth}"
        click.echo(f"verdict: holds: all {len(checked)} invariants hold in {scope}")
        click.echo(f"figures: {figures_line(result)}")
        raise click.exceptions.Exit(EXIT_HOLDS)
    for i, trace in enumerate(result.violations):
        click.echo(f"verdict: violated: {trace.invariant} after {trace.steps} steps (a shortest trace)")
        if not quiet:
            click.echo(trace_table(model, trace, [trace.invariant]))
        path = out if (out is not None and i == 0) else free_default_path(cfg, trace.invariant)
        written = write_trace(path, variants.stamp(to_itf(model, trace, result.engine)))
        jsonout.note(violation={"invariant": trace.invariant, "steps": trace.steps,
                                "trace": str(path) if written else None})
    click.echo(f"figures: {figures_line(result)}")
    if cut:
        found = ", ".join(t.invariant for t in result.violations)
        click.echo(f"interrupted: covered {result.distinct_states:,} distinct states to depth {result.depth} in "
                   f"{result.elapsed:.1f} s; {found} broken there, the other invariants not checked to the end")
        raise click.exceptions.Exit(EXIT_INTERRUPTED)
    raise click.exceptions.Exit(EXIT_VIOLATION)


def default_memory_limit_mb() -> float:
    """80% of the machine's memory, in MB."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 20 * 0.8


def resume_from(folder: Path) -> dict:
    try:
        return load_checkpoint(str(folder))
    except CheckpointError as e:
        fail(str(e))


def prepare_checkpoint(folder: Path, force: bool, resuming: bool) -> None:
    """The checkpoint folder exists (created if need be) and holds no other run's checkpoint,
    unless we resume from it or --force says it may be replaced."""
    if folder.exists() and not folder.is_dir():
        fail(f"{folder} is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        fail(f"cannot create {folder}: {e.strerror}")
    if (folder / CHECKPOINT_FILE).exists() and not (resuming or force):
        fail(f"{folder} already holds a checkpoint; resume it with --resume {folder}, or use --force to replace it")
