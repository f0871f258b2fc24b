"""One check of a model, as ``hwcheck verify`` asks for it: the request, validated once, run on its engine.

A :class:`CheckRequest` holds the settings (the Config of either model family, the Mode in it)
and how to check them: the engine (``bfs``, ``spark``, ``z3`` bounded model checking, or
``liveness`` on the explored state graph) and that engine's options. :func:`check` validates the
whole request in one place, before any work (a :class:`CheckError` is one line for the user,
naming the options as ``hwcheck verify`` spells them), builds the model and dispatches. A
:class:`CheckObserver` hears what a run reports while it goes (that it starts, the progress,
Spark's start, each depth z3 solved, the state graph built); the :class:`CheckResult` holds the
model and what the engine found.

>>> from hwcheck.spec import Config
>>> done = check(CheckRequest(Config(mode="hw", records=1)))
>>> done.result.verdict, done.result.violations[0].invariant, done.result.violations[0].steps
('violated', 'NoCommittedDataLoss', 12)
>>> check(CheckRequest(Config(mode="hw"), engine="spark", symmetry=True))
Traceback (most recent call last):
...
hwcheck.checker.check.CheckError: --symmetry and --workers apply to --engine bfs only
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Optional, Tuple

from hwcheck.spec import ConfigError
from hwcheck.spec.modes import MODES

from .bfs import CHECKPOINT_FILE, CheckpointError, bfs, default_workers, load_checkpoint
from .families import DESIGN, family_of, model_of
from .graph import DEFAULT_MAX_NODES
from .result import Result

ENGINES = ("bfs", "spark", "z3")
LIVENESS = "liveness"


# the request's fields only the safety engines read, as ``hwcheck verify`` spells them: a liveness
# request giving one of them is refused
SAFETY_ONLY = (("invariants", "--invariant"), ("max_depth", "--max-depth"), ("all_invariants", "--all-invariants"),
               ("depth", "--depth"), ("symmetry", "--symmetry"), ("workers", "--workers"),
               ("checkpoint", "--checkpoint"), ("resume", "--resume"), ("max_memory_gb", "--max-memory"),
               ("master", "--master"), ("partitions", "--partitions"))


class CheckError(ValueError):
    """A request that cannot run, or an engine that could not (Spark failed to start, a
    checkpoint that cannot be read): one line for the user."""


@dataclass(frozen=True)
class CheckRequest:
    """What to check and how. ``config``: a Config of either family (spec.Config, whose mode may
    be a variant's Mode, or spec.kafka_tla.Config). ``invariants``: the invariants to check
    (default: all of the model's). The other fields are the engine's options, as verify's:
    ``max_depth``, ``all_invariants`` (bfs, spark); ``depth`` (z3, required there);
    ``symmetry``, ``workers`` (bfs; None: all cores), ``checkpoint``, ``resume``,
    ``replace_checkpoint`` (bfs: a folder holding another run's checkpoint may be replaced),
    ``max_memory_gb`` (bfs; None: 80% of the machine's memory); ``master``, ``partitions``
    (spark); ``fair``, ``max_nodes`` (liveness; the fields of SAFETY_ONLY are refused there)."""
    config: Any
    engine: str = "bfs"
    invariants: Tuple[str, ...] = ()
    max_depth: Optional[int] = None
    all_invariants: bool = False
    depth: Optional[int] = None
    symmetry: bool = False
    workers: Optional[int] = None
    checkpoint: Optional[Path] = None
    resume: Optional[Path] = None
    replace_checkpoint: bool = False
    max_memory_gb: Optional[float] = None
    master: Optional[str] = None
    partitions: Optional[int] = None
    fair: Tuple[str, ...] = ()
    max_nodes: int = DEFAULT_MAX_NODES


@dataclass
class CheckResult:
    """What a check found. ``model``: the model checked; ``invariants``: those checked (safety
    engines); ``result``: the engine's Result (bfs, spark, z3). Liveness: ``fair``, the weakly
    fair actions; ``graph``, the explored state graph (None if Ctrl-C came first);
    ``properties``, ``(name, Lasso or None)`` per property; ``interrupted``, what Ctrl-C left
    covered ("" if it did not come)."""
    request: CheckRequest
    model: Any
    invariants: List[str] = field(default_factory=list)
    result: Optional[Result] = None
    fair: Tuple[str, ...] = ()
    graph: Any = None
    properties: list = field(default_factory=list)
    interrupted: str = ""


class CheckObserver:
    """What a run reports as it goes; each method here does nothing."""

    def started(self, checked: CheckResult) -> None:
        """The request is valid and the model built (``checked.model``, ``checked.invariants``,
        ``checked.fair``); the engine starts now."""

    def progress(self, report: dict) -> None:
        """bfs and spark: a progress report (cli/progress.py describes its keys)."""

    def spark_started(self, sc, partitions: int) -> None:
        """spark: the SparkContext is up; the search runs on ``partitions`` owner partitions."""

    def depth_solved(self, k: int, seconds: float, answer: str) -> None:
        """z3: depth ``k`` solved (``answer`` "sat": a violation there)."""

    def graph_built(self, graph) -> None:
        """liveness: the state graph is explored; the liveness check starts."""


def check(request: CheckRequest, observer: Optional[CheckObserver] = None) -> CheckResult:
    """Validate ``request`` (CheckError), build its model, run its engine."""
    observer = observer or CheckObserver()
    checked = _validated(request)
    observer.started(checked)
    if request.engine == LIVENESS:
        _liveness(checked, observer)
    elif request.engine == "z3":
        checked.result = _z3(checked, observer)
    elif request.engine == "spark":
        checked.result = _spark(checked, observer)
    else:
        checked.result = _bfs(checked, observer)
    return checked


# ---------------------------------------------------------------- validation

def _validated(r: CheckRequest) -> CheckResult:
    """Every rule a request must follow, in one place; the model, built."""
    if r.engine not in ENGINES + (LIVENESS,):
        raise CheckError(f"unknown engine {r.engine!r}; choose one of {', '.join(ENGINES + (LIVENESS,))}")
    liveness = r.engine == LIVENESS
    if r.fair and not liveness:
        raise CheckError("--fair applies only with --liveness")
    if liveness:
        refused = [option for name, option in SAFETY_ONLY if _given(getattr(r, name))]
        if refused:
            raise CheckError(f"{', '.join(refused)} {'does' if len(refused) == 1 else 'do'} not apply to "
                             "--liveness (it explores the whole state graph of the design model)")
    if r.engine != "spark" and (r.master is not None or r.partitions is not None):
        raise CheckError("--master and --partitions apply to --engine spark only")
    try:
        model = model_of(r.config)
    except ConfigError as e:
        raise CheckError(str(e)) from None
    design = family_of(model) == DESIGN
    if liveness:
        if not design:
            raise CheckError("--liveness applies to --model design only")
        return CheckResult(r, model, fair=tuple(dict.fromkeys(tuple(model.fair_actions) + tuple(r.fair))))
    names = [name for name, _ in model.invariants]
    unknown = [name for name in r.invariants if name not in names]
    if unknown:
        raise CheckError(f"unknown invariant {unknown[0]!r}; choose from {', '.join(names)}")
    if r.engine == "z3" or r.depth is not None:
        if r.engine != "z3" or r.max_depth is not None or r.all_invariants or r.symmetry or r.workers:
            raise CheckError("--depth goes with --engine z3, which takes none of --max-depth, --all-invariants, "
                             "--symmetry, --workers")
        if not design:
            raise CheckError("--engine z3 encodes the design model only (not --model kafka-tla)")
        if r.depth is None:
            raise CheckError("--engine z3 needs --depth K (the longest trace to look for)")
        from .symbolic import check_covered

        try:
            check_covered(model)
        except ConfigError as e:
            raise CheckError(str(e)) from None
    if r.engine != "bfs" and (r.checkpoint or r.resume or r.max_memory_gb):
        raise CheckError("--checkpoint, --resume and --max-memory apply to --engine bfs only")
    if (r.checkpoint or r.resume) and not _known_by_name(model.cfg):
        raise CheckError("--checkpoint and --resume do not combine with --mode-file (a checkpoint records the "
                         "mode's name, not what the file says, so it could not tell an edited file)")
    if r.engine == "spark" and (r.symmetry or r.workers):
        raise CheckError("--symmetry and --workers apply to --engine bfs only")
    return CheckResult(r, model, invariants=list(r.invariants) or names)


def _given(value) -> bool:
    """Whether a request's option is set (the defaults of the safety-only fields: None, False, ())."""
    return not (value is None or value is False or (isinstance(value, (tuple, list)) and not value))


def _known_by_name(cfg) -> bool:
    """Whether the run's mode is the one its name names (a checkpoint records the name): a mode
    of spec/modes.py, not a variant (a kafka-tla mode always is)."""
    mode = getattr(cfg, "mode_definition", None)
    return mode is None or MODES.get(cfg.mode) is mode


# ---------------------------------------------------------------- the engines

def _bfs(checked: CheckResult, observer: CheckObserver) -> Result:
    r = checked.request
    snapshot = _resume_from(Path(r.resume)) if r.resume is not None else None
    if r.checkpoint is not None:
        folder = Path(r.checkpoint)
        _prepare_checkpoint(folder, r.replace_checkpoint,
                            resuming=r.resume is not None and Path(r.resume).resolve() == folder.resolve())
    limit = r.max_memory_gb * 1024 if r.max_memory_gb is not None else default_memory_limit_mb()
    try:
        return bfs(checked.model, max_depth=r.max_depth, all_invariants=r.all_invariants, progress=observer.progress,
                   only=checked.invariants, symmetry=r.symmetry, workers=r.workers or default_workers(),
                   checkpoint=None if r.checkpoint is None else str(r.checkpoint), resume=snapshot,
                   max_rss_mb=limit)
    except CheckpointError as e:
        raise CheckError(f"{r.resume}: {e}") from None


def default_memory_limit_mb() -> float:
    """80% of the machine's memory, in MB."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 20 * 0.8


def _resume_from(folder: Path) -> dict:
    try:
        return load_checkpoint(str(folder))
    except CheckpointError as e:
        raise CheckError(str(e)) from None


def _prepare_checkpoint(folder: Path, replace: bool, resuming: bool) -> None:
    """The checkpoint folder exists (created if need be) and holds no other run's checkpoint,
    unless we resume from it or ``replace`` (--force) says it may be replaced."""
    if folder.exists() and not folder.is_dir():
        raise CheckError(f"{folder} is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CheckError(f"cannot create {folder}: {e.strerror}") from None
    if (folder / CHECKPOINT_FILE).exists() and not (resuming or replace):
        raise CheckError(f"{folder} already holds a checkpoint; resume it with --resume {folder}, or use --force "
                         "to replace it")


def _spark(checked: CheckResult, observer: CheckObserver) -> Result:
    """The Spark engine. Ctrl-C, from the JVM's start to its stop, ends the run with verdict
    ``interrupted`` and what was covered; Spark's temp folder (its log included) is removed
    unless an error names the log."""
    from .spark import (CtrlC, SparkEngineError, default_partitions, interrupted_result, spark_bfs, start_spark,
                        stop_spark)

    r = checked.request
    start = time.monotonic()
    with CtrlC() as ctrl_c:
        try:
            sc = start_spark(r.master)
        except SparkEngineError as e:
            raise CheckError(str(e)) from None
        except KeyboardInterrupt:     # pyspark's own handler, in place for a moment during the start
            return interrupted_result(time.monotonic() - start)
        failed = False
        try:
            if ctrl_c.hit:
                return interrupted_result(time.monotonic() - start)
            n = r.partitions or default_partitions(sc)
            observer.spark_started(sc, n)
            return spark_bfs(checked.model, sc=sc, partitions=n, max_depth=r.max_depth,
                             all_invariants=r.all_invariants, progress=observer.progress, only=checked.invariants,
                             ctrl_c=ctrl_c)
        except SparkEngineError as e:
            failed = True
            raise CheckError(f"{e} (see {sc.hwcheck_log})") from None
        finally:
            stop_spark(sc, keep_log=failed)     # the temp folder goes, but the log an error names stays


def _z3(checked: CheckResult, observer: CheckObserver) -> Result:
    """Bounded model checking, deepening from 0 to the request's depth."""
    from .bmc import EncodingError, bmc

    try:
        return bmc(checked.model, checked.request.depth, only=checked.invariants, progress=observer.depth_solved)
    except (EncodingError, ConfigError) as e:       # ConfigError: a variant the encoding cannot express
        raise CheckError(f"z3 engine: {e}") from None


def _liveness(checked: CheckResult, observer: CheckObserver) -> None:
    """The state graph, then each liveness property under weak fairness of ``checked.fair``."""
    from .graph import GraphInterrupted, GraphTooLarge, counts, explore
    from .liveness import check_liveness

    try:
        g = explore(checked.model, max_nodes=checked.request.max_nodes)
    except GraphTooLarge as e:
        raise CheckError(str(e)) from None
    except GraphInterrupted as e:
        checked.interrupted = f"{e}; no verdict"
        return
    checked.graph = g
    observer.graph_built(g)
    try:
        checked.properties = check_liveness(checked.model, g, checked.fair)
    except KeyboardInterrupt:
        checked.interrupted = (f"the state graph was built ({counts(g)}); the liveness check was under way; "
                               "no verdict")
