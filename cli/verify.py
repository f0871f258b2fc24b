"""``hwcheck verify``: explore every behaviour within the bounds (bfs, spark or z3), or check the
liveness properties on the explored state graph (``--liveness``). Every option of the command is
declared here; they parse into a CheckRequest, checker/check.py validates and runs it, and this
module renders what it found."""

from __future__ import annotations

import json
from pathlib import Path

import click

from hwcheck.checker import variants
from hwcheck.checker.estimate import SAVE_EVERY, Estimator, Saving
from hwcheck.checker.bfs import CHECKPOINT_FILE
from hwcheck.checker.check import ENGINES, LIVENESS, CheckError, CheckObserver, CheckRequest, CheckResult, check
from hwcheck.checker.graph import DEFAULT_MAX_NODES, counts
from hwcheck.checker.liveness import lasso_to_itf
from hwcheck.checker.result import INTERRUPTED, VIOLATED
from hwcheck.checker.trace import to_itf
from hwcheck.spec.actions import ACTIONS

from . import jsonout
from .models import DESIGN_ONLY, TLA_ONLY, build_config, given, model_options, settings_line, trace_table
from .options import (EXIT_HOLDS, EXIT_INTERRUPTED, EXIT_VIOLATION, check_writable, fail, free_default_path,
                      interrupted, knob_options, refuse_quiet_with_verbose, replay_command, wide_option, write_after_run,
                      write_trace)
from .progress import Progress, level as progress_level, rough_count, rough_time
from .render import figures_line

DEFAULT_MASTER = "local[*]"
ACTION_NAMES = [name for name, _, _ in ACTIONS]
# what verify takes with --liveness: the design model's settings and where the lasso goes; every
# other verify option given with it is refused, so an option added to verify later is refused too
# until someone decides it applies. checker/check.py refuses a liveness request's safety-only fields
# itself (its SAFETY_ONLY); this list also catches --engine (not in the request), --mode-file, and an
# option given at its default value, all named in one line as the user typed them
LIVENESS_TAKES = frozenset({"liveness", "fair", "max_nodes", "model_family", "mode", "replicas", "out", "force",
                            "quiet", "verbose"} | set(DESIGN_ONLY) | set(TLA_ONLY))


@click.command()
@knob_options
@model_options
@click.option("--engine", type=click.Choice(ENGINES), default="bfs", show_default=True)
@click.option("--depth", type=click.IntRange(min=0), default=None, help="z3: the longest trace BMC looks for")
@click.option("--master", default=None, metavar="URL",
              help=f"spark: the Spark master (local[N], spark://host:port, ...) "
                   f"[default: spark-submit's --master, else {DEFAULT_MASTER}]")
@click.option("--partitions", type=click.IntRange(min=1), default=None,
              help="spark: owner partitions of the state space [default: Spark's default parallelism, at least 2]")
@click.option("--max-depth", type=click.IntRange(min=0), default=None, help="stop exploring at this depth")
@click.option("--all-invariants", is_flag=True, help="keep going after a violation: first trace of each invariant")
@click.option("--invariant", "only", multiple=True, metavar="NAME",
              help="check only this invariant (repeatable); default: all")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="where to write the counterexample (ITF JSON); default hwcheck-<mode>-<invariant>.itf.json")
@click.option("--force", is_flag=True, help="overwrite --out if it exists")
@click.option("--quiet", is_flag=True, help="no progress line, no trace table")
@wide_option
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
@click.option("--liveness", is_flag=True,
              help="check the liveness properties under weak fairness (a lasso on violation)")
@click.option("--fair", multiple=True, type=click.Choice(ACTION_NAMES), metavar="ACTION",
              help="with --liveness: also treat ACTION as weakly fair (repeatable)")
@click.option("--max-nodes", type=click.IntRange(min=1), default=DEFAULT_MAX_NODES, show_default=True,
              help="with --liveness: refuse a larger state graph")
@jsonout.json_option("verify", refuse=("liveness",))
def verify(engine, depth, master, partitions, max_depth, all_invariants, only, out, force, quiet, verbose, symmetry,
           workers, checkpoint, resume, max_memory, liveness, fair, max_nodes, **knobs):
    """Explore every behaviour within the bounds; report 'holds' or a shortest counterexample.

    \b
    Example:
      hwcheck verify --mode=hw --out loss.itf.json
    """
    refuse_quiet_with_verbose(quiet, verbose)
    if liveness:
        refuse_what_liveness_does_not_take()
    request = CheckRequest(build_config(knobs, only, fail), engine=LIVENESS if liveness else engine,
                           invariants=tuple(only), max_depth=max_depth, all_invariants=all_invariants, depth=depth,
                           symmetry=symmetry, workers=workers, checkpoint=checkpoint, resume=resume,
                           replace_checkpoint=force, max_memory_gb=max_memory, master=master, partitions=partitions,
                           fair=tuple(fair), max_nodes=max_nodes)
    say = Say(out, force, quiet, verbose)
    try:
        checked = check(request, say)
    except CheckError as e:
        say.done()
        fail(str(e))
    say.done()
    if request.engine == LIVENESS:
        render_liveness(checked, out, quiet)
    elif request.engine == "z3":
        render_z3(checked, out, quiet, say.solved)
    else:
        render_search(checked, out, quiet, say.estimator.guess, say.auto_checkpoint)


def refuse_what_liveness_does_not_take() -> None:
    """With --liveness, any option outside LIVENESS_TAKES the user gave is refused in one line."""
    ctx = click.get_current_context()
    refused = [p.opts[0] for p in ctx.command.params if p.name not in LIVENESS_TAKES and given(ctx, p.name)]
    if refused:
        fail(f"{', '.join(refused)} {'does' if len(refused) == 1 else 'do'} not apply to --liveness "
             "(it explores the whole state graph of the design model)")


class Say(CheckObserver):
    """What verify prints while the check runs: the settings once the request is valid (after
    refusing an --out it could not write), the progress line, Spark's start, z3's depths, the
    size of the state graph."""

    def __init__(self, out, force: bool, quiet: bool, verbose: bool):
        self.out, self.force, self.quiet, self.verbose = out, force, quiet, verbose
        self.bar = None
        self.solved = []            # z3: the depths solved, for an interrupted run's line
        self.estimator = Estimator()    # bfs: the size and time to go, from the levels done
        self.hinted = False
        self.symmetry = False
        self.saving = None              # bfs without --checkpoint: checkpoints of its own on a long run
        self.auto_checkpoint = None     # ... in this folder, once one was saved
        self.auto_folder = None         # where they go (the --resume folder, or one named for the mode)

    def started(self, checked: CheckResult) -> None:
        if self.out is not None:
            check_writable(self.out, self.force)
        r, cfg = checked.request, checked.model.cfg
        if r.engine == LIVENESS:
            click.echo(f"hwcheck verify --liveness: {settings_line(cfg)}")
            click.echo(f"weakly fair: {', '.join(checked.fair)} (any other step may never happen; stuttering allowed)")
            return
        click.echo(f"hwcheck verify: {settings_line(cfg)}")
        for left_out in getattr(cfg, "rules_out", tuple)():
            click.echo(f"note: these bounds allow {left_out}")
        if r.engine == "z3":
            click.echo(f"engine z3 (bounded model checking to depth {r.depth}); invariants "
                       f"{', '.join(checked.invariants)}")
            return
        click.echo(f"engine {r.engine}; invariants {', '.join(checked.invariants)}")
        self.symmetry = r.symmetry
        if r.engine == "bfs" and r.checkpoint is None:
            self.saving = Saving()
            self.auto_folder = Path(r.resume) if r.resume is not None else free_checkpoint_folder(cfg.mode)
            if r.resume is not None:
                # a resumed run was long: it saves into its folder every 5 minutes from the start,
                # before its own levels give an estimate, and its folder stays resumable
                self.saving.saved(0.0)
                self.auto_checkpoint = self.auto_folder
        self.bar = Progress(progress_level(self.quiet, self.verbose), engine=r.engine)

    def progress(self, report: dict) -> None:
        est = self.estimator(report)
        if est is not None and report.get("elapsed") is not None:
            report = {**report, "estimate": (est.states, est.left_at(float(report["elapsed"])))}
            if not self.hinted and not self.quiet and est.long(float(report["elapsed"])):
                self.hinted = True
                self.hint(est, float(report["elapsed"]))
        if report.get("save") is not None and self.saving is not None and self.saving.due(est, report["elapsed"]):
            self.save(report["save"], est, float(report["elapsed"]))
        if self.bar is not None:
            self.bar(report)

    def save(self, save, est, elapsed: float) -> None:
        """A checkpoint of the level just done into the run's own folder (said on stderr the first
        time); a folder that cannot be written stops these checkpoints, not the search."""
        folder = self.auto_folder
        try:
            folder.mkdir(parents=True, exist_ok=True)
            save(str(folder))
        except OSError as e:
            self.saving = None
            self.say(f"checkpoint: cannot save in {folder} ({e.strerror or e}); the search goes on without")
            return
        self.saving.saved(elapsed)
        if self.auto_checkpoint is None:
            self.auto_checkpoint = folder
            left = f" (~{rough_time(est.left_at(elapsed))} to go)" if est is not None else ""
            self.say(f"checkpoint: a long search{left}: its state is saved in {folder}/ every "
                     f"{SAVE_EVERY / 60:.0f} minutes; after a stop, resume with --resume {folder}")

    def say(self, line: str) -> None:
        """One line on stderr, the live progress line cleared first."""
        if self.bar is not None:
            self.bar.done()
        click.echo(line, err=True)

    def hint(self, est, elapsed: float) -> None:
        """One line on stderr, once, when the search looks long: what else to try."""
        tries = (["--symmetry"] if not self.symmetry else []) + [
            "hwcheck simulate (random walks where bfs cannot finish)",
            "smaller bounds (fewer --records, --max-epoch, --crashes)"]
        self.say(f"hint: this search looks long: ~{rough_count(est.states)} states, ~{rough_time(est.left_at(elapsed))} "
                 f"to go (an estimate from the levels done); to go faster try {', '.join(tries)}")

    def spark_started(self, sc, partitions: int) -> None:
        n = partitions
        click.echo(f"spark {sc.version}: master {sc.master}, {n} partition{'s' if n != 1 else ''}, "
                   f"default parallelism {sc.defaultParallelism}; Spark's log: {sc.hwcheck_log}")

    def depth_solved(self, k: int, seconds: float, answer: str) -> None:
        self.solved.append(k)
        what = "violation found" if answer == "sat" else "no violation"
        click.echo(f"  depth {k}: {what} ({seconds:.2f} s)")

    def graph_built(self, graph) -> None:
        click.echo(f"state graph: {counts(graph)}")

    def done(self) -> None:
        if self.bar is not None:
            self.bar.done()


def free_checkpoint_folder(mode: str) -> Path:
    """hwcheck-<mode>-checkpoint in the current directory, numbered if taken."""
    path, i = Path(f"hwcheck-{mode}-checkpoint"), 1
    while path.exists():
        path, i = Path(f"hwcheck-{mode}-checkpoint-{i}"), i + 1
    return path


def render_search(checked: CheckResult, out, quiet: bool, guess=None, auto_checkpoint=None):
    """bfs and spark: the verdict, the traces written, the figures; the exit code. ``guess``: the
    last estimate of the search's size made while it ran (checker/estimate.py), noted for --json;
    ``auto_checkpoint``: the folder of the checkpoints a long run saved by itself, kept to resume an
    interrupted run, else removed (unless it is the folder the run resumed from)."""
    model, result, r = checked.model, checked.result, checked.request
    # --all-invariants cut by Ctrl-C after some violations: their traces are kept, the run is interrupted
    cut = result.verdict == VIOLATED and result.reason == "interrupted"
    checkpoint = r.checkpoint if r.checkpoint is not None else auto_checkpoint
    if auto_checkpoint is not None and result.verdict != INTERRUPTED and not cut and r.resume is None:
        remove_checkpoint(auto_checkpoint)
    jsonout.note(settings=jsonout.settings(model), engine=r.engine, invariants=checked.invariants,
                 max_depth=r.max_depth, verdict=INTERRUPTED if cut else result.verdict, complete=result.complete,
                 figures=jsonout.figures(result), violations=[])
    if guess is not None:
        jsonout.note(estimate=guess.as_dict())
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
        click.echo(f"verdict: holds: all {len(checked.invariants)} invariants hold in {scope}")
        click.echo(f"figures: {figures_line(result)}")
        raise click.exceptions.Exit(EXIT_HOLDS)
    for i, trace in enumerate(result.violations):
        click.echo(f"verdict: violated: {trace.invariant} after {trace.steps} steps (a shortest trace)")
        if not quiet:
            click.echo(trace_table(model, trace, [trace.invariant]))
        path = out if (out is not None and i == 0) else free_default_path(model.cfg, trace.invariant)
        written = write_trace(path, variants.stamp(to_itf(model, trace, result.engine), model.cfg))
        jsonout.note(violation={"invariant": trace.invariant, "steps": trace.steps,
                                "trace": str(path) if written else None,
                                **jsonout.story(model, trace, [trace.invariant])})
    click.echo(f"figures: {figures_line(result)}")
    if cut:
        found = ", ".join(t.invariant for t in result.violations)
        click.echo(f"interrupted: covered {result.distinct_states:,} distinct states to depth {result.depth} in "
                   f"{result.elapsed:.1f} s; {found} broken there, the other invariants not checked to the end")
        raise click.exceptions.Exit(EXIT_INTERRUPTED)
    raise click.exceptions.Exit(EXIT_VIOLATION)


def remove_checkpoint(folder: Path) -> None:
    """The checkpoint a finished run saved by itself, and its folder if nothing else is in it."""
    for name in (CHECKPOINT_FILE, CHECKPOINT_FILE + ".tmp"):
        try:
            (folder / name).unlink()
        except OSError:
            pass
    try:
        folder.rmdir()
    except OSError:
        pass


def render_z3(checked: CheckResult, out, quiet: bool, solved):
    """``--engine z3``: no violation up to the depth, or a shortest trace; exit like bfs."""
    model, result, depth = checked.model, checked.result, checked.request.depth
    jsonout.note(settings=jsonout.settings(model), engine="z3", invariants=checked.invariants, max_depth=depth,
                 verdict=result.verdict, complete=False, figures=jsonout.figures(result), violations=[])
    if result.verdict == INTERRUPTED:
        proven = (f"no violation up to depth {solved[-1]} (depths 0-{solved[-1]} solved)" if solved
                  else "no depth solved yet")
        click.echo(f"interrupted: {proven}; depth {len(solved)} of {depth} was under way after "
                   f"{result.elapsed:.1f} s")
        raise click.exceptions.Exit(EXIT_INTERRUPTED)
    if result.verdict != VIOLATED:
        click.echo(f"verdict: holds: no violation up to depth {depth} ({result.elapsed:.1f} s)")
        raise click.exceptions.Exit(EXIT_HOLDS)
    trace = result.violations[0]
    click.echo(f"verdict: violated: {trace.invariant} after {trace.steps} steps (a shortest trace)")
    if not quiet:
        click.echo(trace_table(model, trace, [trace.invariant]))
    path = out if out is not None else free_default_path(model.cfg, trace.invariant)
    written = write_trace(path, variants.stamp(to_itf(model, trace, engine="z3"), model.cfg))
    jsonout.note(violation={"invariant": trace.invariant, "steps": trace.steps, "trace": str(path) if written else None,
                            **jsonout.story(model, trace, [trace.invariant])})
    click.echo(f"figures: z3 BMC, {result.depth + 1} depths solved in {result.elapsed:.1f} s")
    raise click.exceptions.Exit(EXIT_VIOLATION)


def render_liveness(checked: CheckResult, out, quiet: bool):
    """``--liveness``: per property holds, or the lasso that breaks it (written as ITF); exit 1 if any broke."""
    if checked.interrupted:
        interrupted(checked.interrupted)
    model, g, fair = checked.model, checked.graph, checked.fair
    broken = 0
    for name, lasso in checked.properties:
        if lasso is None:
            click.echo(f"  {name}: holds")
            continue
        broken += 1
        closing = "stuttering" if lasso.closing is None else model.format_label(lasso.closing)
        click.echo(f"  {name}: violated: a lasso of {lasso.prefix} steps, then a cycle of {lasso.cycle} "
                   f"state(s) closed by {closing}")
        if not quiet:
            click.echo(trace_table(model, lasso.trace, [f"{name} (loops back to step {lasso.loop})"]))
        path = out if (out is not None and broken == 1) else free_default_path(model.cfg, name)
        if write_after_run(path, json.dumps(lasso_to_itf(model, lasso, fair), indent=1) + "\n", "the lasso"):
            click.echo(f"  trace: {path} (replay with: {replay_command(path, variants.file_of(model.cfg))})")
        else:
            click.echo(f"  trace: not written ({path} refused it)")
    bad_states = sum(1 for _, d in g.nodes(data=True) if d["violated"])
    if bad_states:
        click.echo(f"safety: {bad_states:,} states break an invariant (hwcheck verify without --liveness for a trace)")
    verdict = "violated" if broken else "holds"
    click.echo(f"verdict: {verdict}: {len(checked.properties) - broken} of {len(checked.properties)} liveness "
               "properties hold")
    raise click.exceptions.Exit(EXIT_VIOLATION if broken else EXIT_HOLDS)
