"""The hwcheck command line: parse, call an engine, render. Exit codes: 0 every invariant holds
within the bounds (replay: the trace replays as stored), 1 a violation was found (replay: the stored
invariant no longer breaks), 2 bad usage or input, 130 interrupted."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import sys
from pathlib import Path

import tomllib

import click

from hwcheck.checker import variants
from hwcheck.checker.bfs import CHECKPOINT_FILE, CheckpointError, bfs, default_workers, load_checkpoint
from hwcheck.checker.gate import GateError, junit_xml, parse_gate, run_entry
from hwcheck.checker.result import INTERRUPTED, VIOLATED
from hwcheck.checker.trace import TraceError, differential, load_itf, replay as replay_trace, to_itf
from hwcheck.spec import Config, ConfigError
from hwcheck.spec.modes import ALIASES, LADDER

from . import jsonout
from .html import first_breaks, render_html
from .models import DESIGN_MODES, build_model, load_mode_file, mode_file_option, model_options, replay_mode_file, \
    settings_line, trace_table
from .options import (DEFAULTS, EXIT_HOLDS, EXIT_INTERRUPTED, EXIT_USAGE, EXIT_VIOLATION, check_writable, fail,
                      free_default_path, knob_options, read_text, refuse_quiet_with_verbose, write_after_run,
                      write_file)
from .progress import Progress, level as progress_level
from .render import figures_line, modes_table
from .engines import ENGINES, engine_options, run_spark
from . import graph as _graph, symbolic as _symbolic

_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", None)     # click 8.2+


class OneLineErrors(click.Group):
    """Usage errors (a bad option value, a missing file argument) as one line and exit 2, as
    every other bad input, and so is a --mode-file action function that fails while the engine
    runs; Ctrl-C outside an engine as one line and exit 130."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.ClickException as e:
            if _NO_ARGS_IS_HELP is not None and isinstance(e, _NO_ARGS_IS_HELP):
                e.show()                         # `hwcheck` alone: the help, as click prints it
                sys.exit(e.exit_code)
            hint = ""
            if isinstance(e, click.UsageError) and e.ctx is not None:
                hint = f" (see {e.ctx.command_path} --help)"
            click.echo(f"hwcheck: error: {e.format_message()}{hint}".replace("\n", " "), err=True)
            sys.exit(EXIT_USAGE)
        except click.Abort:
            click.echo("hwcheck: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except variants.VariantError as e:       # a --mode-file's action function failed mid-search
            click.echo(f"hwcheck: error: {e}", err=True)
            sys.exit(EXIT_USAGE)
        sys.exit(code if isinstance(code, int) else EXIT_HOLDS)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=jsonout.version(), prog_name="hwcheck", message="%(prog)s %(version)s")
def cli():
    """hwcheck: a model checker for Kafka's replication protocol (HW, LEO, ISR, leader epoch).

    \b
    Example:
      hwcheck verify --mode=hw            # exit 1: a violation, its trace written
      hwcheck replay hwcheck-hw-NoCommittedDataLoss.itf.json --html loss.html
    Shell completion (bash): eval "$(_HWCHECK_COMPLETE=bash_source hwcheck)"
    """


@cli.command()
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
        doc = json.dumps(variants.stamp(to_itf(model, trace, result.engine)), indent=1)
        path = out if (out is not None and i == 0) else free_default_path(cfg, trace.invariant)
        written = write_after_run(path, doc + "\n", "the trace")
        jsonout.note(violation={"invariant": trace.invariant, "steps": trace.steps,
                                "trace": str(path) if written else None})
        click.echo(f"trace: {path} (replay with: hwcheck replay {path})" if written
                   else f"trace: not written ({path} refused it)")
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


@cli.command()
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


def load_gate_table(gate_file):
    """The gate entries: from FILE (``[gate.NAME]`` tables, or a pyproject's
    ``[tool.hwcheck.gate.NAME]``), else from ./pyproject.toml."""
    path = gate_file if gate_file is not None else Path("pyproject.toml")
    if gate_file is None and not path.exists():
        fail(f"no FILE given and no pyproject.toml in {Path.cwd()}: gate reads [tool.hwcheck.gate] from "
             "./pyproject.toml (run it in the project's folder) or the entries of FILE")
    text = read_text(path)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        fail(f"{path}: malformed TOML: {e}")
    if "tool" in doc:
        tool = doc["tool"]
        hw = tool.get("hwcheck", {}) if isinstance(tool, dict) else None
        table = hw.get("gate") if isinstance(hw, dict) else None
    else:
        table = doc.get("gate")
    if table is None:
        where = "[tool.hwcheck.gate]" if "tool" in doc or gate_file is None else "[gate.NAME] tables"
        fail(f"{path}: no gate entries ({where} missing)")
    unknown = sorted(set(doc) - {"gate"}) if "tool" not in doc else []
    if unknown:
        fail(f"{path}: unknown top-level key(s) {', '.join(unknown)} (entries go under [gate.NAME])")
    try:
        return path, parse_gate(table)
    except GateError as e:
        fail(f"{path}: {e}")


def non_default_settings(cfg: Config) -> str:
    d, base = cfg.as_dict(), DEFAULTS.as_dict()
    return " ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                    for k, v in d.items() if k != "mode" and v != base[k]) or "defaults"


@cli.command()
@click.argument("gate_file", metavar="[FILE]", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="also write the results as JUnit XML")
@click.option("--force", is_flag=True, help="overwrite --junit if it exists")
@click.option("--quiet", is_flag=True, help="only the verdicts that moved and the summary")
@click.option("--verbose", is_flag=True, help="a progress log line each second while an entry runs")
@mode_file_option(multiple=True, help="a Python file defining MODE, a variant (docs/variants.md) that entries "
                                      "may then name as their mode (repeatable)")
def gate(gate_file, junit, force, quiet=False, verbose=False, mode_file=()):
    """Check a matrix of (mode, settings) -> expected verdict; exit 1 when a verdict moved.

    The entries are read from [tool.hwcheck.gate] in ./pyproject.toml (the current folder), or
    from FILE ([gate.NAME] tables, or a pyproject with [tool.hwcheck.gate]); docs/ci.md. Ctrl-C
    stops it, naming the entries that ran and those that did not (exit 130).

    \b
    Example:
      hwcheck gate --junit gate.xml --force
    """
    for path in mode_file:
        load_mode_file(path, fail)
    path, entries = load_gate_table(gate_file)
    if junit is not None:
        check_writable(junit, force)
    say = (lambda *a, **k: None) if quiet else click.echo
    say(f"hwcheck gate: {len(entries)} entries from {path}")
    outcomes, stopped, progress = [], None, None
    try:
        for entry in entries:
            stopped = entry                      # the entry under way, should Ctrl-C come now
            progress = Progress(progress_level(quiet, verbose), engine=entry.name)
            outcome = run_entry(entry, progress=progress)
            progress.done()
            outcomes.append(outcome)
            if outcome.interrupted:              # Ctrl-C inside the search: no verdict
                break
            mark = "ok  " if outcome.passed else "FAIL"
            say(f"  {mark} {entry.name}: {outcome.got} ({outcome.result.elapsed:.1f} s)")
            e = entry
            jsonout.note(entry={"name": e.name, "settings": jsonout.settings(e.config), "expect": e.expect,
                                "steps": e.steps, "got": outcome.got, "passed": outcome.passed,
                                "figures": jsonout.figures(outcome.result)})
            stopped = None
    except KeyboardInterrupt:                    # Ctrl-C between two searches
        if progress is not None:
            progress.done()
    cut = outcomes[-1] if outcomes and outcomes[-1].interrupted else None     # stopped mid-search
    finished = [o for o in outcomes if not o.interrupted]
    not_run = entries[entries.index(stopped) + 1:] if stopped is not None else []
    skipped = not_run if cut is not None or stopped is None else [stopped] + not_run
    header = ["entry", "mode", "settings", "expected", "got", "states", "depth", "time", ""]
    rows = []
    for o in outcomes:
        e = o.entry
        want = e.expect + (f"({e.steps})" if e.steps is not None and e.expect != "holds" else "")
        rows.append([e.name, e.config.mode, non_default_settings(e.config), want, o.got,
                     f"{o.result.distinct_states:,}", str(o.result.depth), f"{o.result.elapsed:.1f} s",
                     "interrupted" if o.interrupted else "ok" if o.passed else "MOVED"])
    widths = [max(len(r[c]) for r in [header] + rows) for c in range(len(header))]
    say("")
    for r in [header, ["-" * w for w in widths]] + rows:
        say("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    failed = [o for o in finished if not o.passed]
    verdict = "interrupted" if stopped is not None else "moved" if failed else "passed"
    junit_written = junit is not None and write_after_run(junit, junit_xml(outcomes, skipped), "the JUnit report")
    if junit_written:
        say(f"junit: {junit}")
    jsonout.note(file=str(path), verdict=verdict, junit=str(junit) if junit_written else None)
    if stopped is not None:
        jsonout.note(interrupted=stopped.name, not_run=[e.name for e in not_run])
    for o in failed:
        click.echo(f"verdict moved: {o.entry.name}: {o.failure()}")
    if stopped is not None:
        click.echo(gate_interrupted_line(len(entries), finished, cut, stopped, not_run))
        raise click.exceptions.Exit(EXIT_INTERRUPTED)
    if failed:
        raise click.exceptions.Exit(EXIT_VIOLATION)
    click.echo(f"all {len(outcomes)} verdicts as expected")
    raise click.exceptions.Exit(EXIT_HOLDS)


def gate_interrupted_line(total, finished, cut, stopped, not_run) -> str:
    """One line: what an interrupted gate covered and what it did not."""
    moved = [o.entry.name for o in finished if not o.passed]
    ran = ", ".join(o.entry.name for o in finished) or "none"
    how = f"{len(moved)} moved" if moved else "as expected" if finished else ""
    where = (f"interrupted {stopped.name} after {cut.result.elapsed:.1f} s ({cut.result.distinct_states:,} distinct "
             f"states to depth {cut.result.depth}, no verdict)" if cut is not None
             else f"interrupted before {stopped.name}")
    return (f"interrupted: {len(finished)} of {total} entries ran ({ran}{': ' + how if how else ''}); "
            f"{where}; not run: {', '.join(e.name for e in not_run) or 'none'}")


@cli.command()
@mode_file_option(help="also list the variant this Python file defines (docs/variants.md)")
def modes(mode_file=None):
    """List the modes: the Kafka releases each stands for and the rules it changes from the one
    before it, each with its KIP/JIRA and the Kafka source (method@tag) it copies.

    \b
    Example:
      hwcheck modes --mode-file docs/examples/expand_at_hw.py
    """
    extra = [load_mode_file(mode_file, fail)] if mode_file is not None else []
    jsonout.note(modes=[jsonout.mode_doc(m) for m in LADDER] + [jsonout.mode_doc(m, variant=True) for m in extra],
                 aliases=dict(ALIASES), newest=LADDER[-1].name)
    width = shutil.get_terminal_size((120, 24)).columns
    click.echo(modes_table(LADDER, ALIASES, extra, width=width))
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


def main() -> None:
    try:
        cli(standalone_mode=True)
    except KeyboardInterrupt:
        click.echo("hwcheck: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except ctypes.ArgumentError as e:           # Ctrl-C while ctypes converted an argument (z3's C API)
        if "KeyboardInterrupt" not in str(e):
            raise
        click.echo("hwcheck: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)


# the state-graph commands (issue 6): `hwcheck graph`, `verify --liveness`, `replay --focus`
cli.add_command(_graph.graph)
_graph.register(verify, replay)

# the z3 engine (issue 4): `verify --engine z3 --depth K` (in verify above), `hwcheck prove`
cli.add_command(_symbolic.prove)

# --mode-file on replay: outside --focus and lassos (cli/graph.py), which replay the variant too
replay.callback = replay_mode_file(replay.callback, fail, read_text)

# --quiet with --verbose is refused on every command that has both
for _command in (verify, replay, gate):
    _command.callback = refuse_quiet_with_verbose(_command.callback)

# --json on verify, replay, gate and modes (issue 9): registered last, so it wraps every other option
jsonout.register(verify, "verify", refuse=("liveness",))
jsonout.register(replay, "replay", refuse=("focus",))
jsonout.register(gate, "gate")
jsonout.register(modes, "modes", done="modes")
