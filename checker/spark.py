"""Level-synchronous breadth-first search on Spark, the state space partitioned by fingerprint.

Every state has an owner partition, ``fingerprint(state) % partitions``. What crosses the JVM is
never one state but a *chunk*: a blob of pickled states with numpy arrays beside it (their
fingerprints, their parents' fingerprints), as in :mod:`.bfs`.

The level RDD has exactly one element per partition, ``(visited, parents, frontier, stats)``:
``visited`` the sorted fingerprints (uint64) the partition owns, ``parents`` the parent
fingerprint of each (an initial state is its own parent), ``frontier`` the partition's states
of the last level as chunks ``(blob, positions, fingerprints)``, ``stats`` the level's counts.
One level is one Spark job of two stages:

1. **expand** (map stage): each partition unpickles its frontier chunks (the states of the last
   level, all new), checks the invariants on them (each state once, as in bfs) and runs
   ``model.successors``; the successors are fingerprinted, duplicates among them and those the
   partition itself owns and has visited dropped (the smallest parent kept), and one chunk per
   owner partition pickled. The partition's visited arrays are sent along, to the partition
   itself, with the smallest violating fingerprint per broken invariant;
2. **shuffle** the chunks to their owners (``partitionBy``: the only shuffle of a level);
3. **merge** (result stage): partition *i* receives its own visited arrays and the chunks it
   owns; duplicates across chunks and visited fingerprints are dropped with numpy
   (``lexsort``, ``searchsorted``), the new ones inserted into the sorted arrays, and the
   chunks holding new states, with the positions of the new ones, become the partition's next
   frontier: states are never unpickled here. Only the counts go to the driver.

The level RDD is not cached: the next level's map stage recomputes the merge (numpy only) from
the shuffle files, in the same Python task as the expansion, so a level costs one job, two
stages, two Python tasks per partition; a lost executor's shuffle files are recomputed by Spark
from the lineage, by the same deterministic functions.

The driver receives per partition only the counts and, per broken invariant, the smallest
violating fingerprint of the previous level (whose states the expansion checked: a violation at
depth *d* is known once job *d + 1* ran; the figures reported are those up to level *d*; the
last level of a ``max_depth`` search is checked by a job of its own). On a violation it walks
the parent fingerprints back (one small job reading one partition per step) and rebuilds the trace as :func:`.bfs._trace` does, asking the
model which successor has the next fingerprint on the chain. Levels are complete: a violation
found at depth *d* is reported after the whole level *d* has been explored, so
``distinct_states`` counts every state within distance *d*.

>>> from hwcheck.spec import Config, Model
>>> with spark_context("local[1]") as sc:                      # doctest: +SKIP
...     r = spark_bfs(Model(Config(mode="hw", records=1)), sc=sc, partitions=2)
>>> r.verdict, r.violations[0].steps                          # doctest: +SKIP
('violated', 11)
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import pickle
import shutil
import signal
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Callable, Dict, Iterator, Optional, Tuple

import numpy as np

from .bfs import collision_probability, fingerprint, peak_rss_mb, replay_chain
from .result import HOLDS, INTERRUPTED, VIOLATED, Result, Trace

GROUP = 16384     # frontier states expanded per batch (a batch yields one chunk per owner)
NO_FP = 1 << 64   # above every fingerprint


class SparkEngineError(RuntimeError):
    """Spark could not run the search (no Java, bad master URL, a job failed for good): one line."""


def owner(key: int) -> int:
    """The partition function: chunks are keyed by their owner partition already."""
    return key


def _u64(values: list) -> np.ndarray:
    """Python hashes (signed 64-bit) as fingerprints (uint64), = ``fingerprint``."""
    return np.array(values, dtype=np.int64).view(np.uint64)


def _firsts(fps: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """Indices of one entry per distinct fingerprint, the one with the smallest parent, in
    ascending fingerprint order."""
    order = np.lexsort((parents, fps))
    f = fps[order]
    keep = np.ones(len(f), dtype=bool)
    keep[1:] = f[1:] != f[:-1]
    return order[keep]


# --------------------------------------------------------------------------- executor side
_FROZEN: list = []     # non-empty once this process has frozen its heap (see _without_gc)


def _without_gc(gen):
    """A generator function run with Python's cycle collector off, as bfs runs: states are
    acyclic tuples, and collecting while millions are made costs ~15% of the stage.

    The first run in a Python worker also freezes what the worker holds then (its modules, the
    task's closures): pyspark's daemon runs a full ``gc.collect()`` after every task of a reused
    worker, and a frozen heap makes that quick (a level of a handful of states with 8
    partitions on local[2]: median 0.54-0.55 s instead of 0.66-0.71 s, two runs each)."""
    @functools.wraps(gen)
    def run(*args):
        if not _FROZEN:
            gc.freeze()
            _FROZEN.append(True)
        was = gc.isenabled()
        gc.disable()
        try:
            yield from gen(*args)
        finally:
            if was:
                gc.enable()
    return run


def _check(checks, state, fp: int, broken: Dict[int, int]) -> None:
    """Note ``fp`` in ``broken`` (bit -> smallest violating fingerprint) for each invariant of
    ``checks`` that ``state`` breaks."""
    for bit, pred in checks:
        if not pred(state) and fp < broken.get(bit, NO_FP):
            broken[bit] = fp


@_without_gc
def expand(model, P: int, checks, index: int, elements) -> Iterator[Tuple[int, tuple]]:
    """Stage 1: check the invariants of ``checks`` (``[(bit, predicate)]``) on partition
    ``index``'s frontier, the states of the last level, each of them new (every state is checked
    once, as in bfs, not every candidate), and expand it. Yields ``(owner, chunk)`` records, a
    chunk being ``(blob, fps, parent_fps, generated)`` for one owner partition and ``generated``
    the successors (duplicates included) a batch produced for it; successors this partition owns
    and has visited are dropped here (the others are dropped by their owners). Last, to itself,
    ``(visited, parents, broken)``: its visited arrays and, per invariant bit, the smallest
    fingerprint of a frontier state breaking it."""
    successors = model.successors
    Pu = np.uint64(P)
    for visited, vparents, frontier, _ in elements:
        broken: Dict[int, int] = {}
        batches, size = [[]], 0
        for chunk in frontier:
            batches[-1].append(chunk)
            size += len(chunk[1])
            if size >= GROUP:
                batches.append([])
                size = 0
        for batch in batches:
            if not batch:
                continue
            fps, states, ends, parents = [], [], [], []
            for blob, keep, kfps in batch:
                chunk = pickle.loads(blob)
                for p, sfp in zip(keep.tolist(), kfps.tolist()):
                    s = chunk[p]
                    if checks:
                        _check(checks, s, sfp, broken)
                    for _, t in successors(s):
                        fps.append(hash(t))
                        states.append(t)
                    ends.append(len(fps))
                    parents.append(sfp)
            if not fps:
                continue
            fp_arr = _u64(fps)
            par_arr = np.repeat(np.array(parents, dtype=np.uint64), np.diff(np.array([0] + ends)))
            owners = (fp_arr % Pu).astype(np.int64)
            generated = np.bincount(owners, minlength=P)
            sel = _firsts(fp_arr, par_arr)
            if len(visited):
                cand = fp_arr[sel]
                at = np.minimum(np.searchsorted(visited, cand), len(visited) - 1)
                sel = sel[(owners[sel] != index) | (visited[at] != cand)]
            sel_owner = owners[sel]
            by_owner = np.argsort(sel_owner, kind="stable")
            bounds = np.searchsorted(sel_owner[by_owner], np.arange(P + 1))
            for o in range(P):
                mine = by_owner[bounds[o]:bounds[o + 1]]
                if not len(mine):
                    if generated[o]:       # all visited already: only the count travels
                        yield o, (b"", fp_arr[:0], par_arr[:0], int(generated[o]))
                    continue
                idx = sel[mine]
                blob = pickle.dumps([states[i] for i in idx.tolist()], pickle.HIGHEST_PROTOCOL)
                yield o, (blob, fp_arr[idx], par_arr[idx], int(generated[o]))
        yield index, (visited, vparents, broken)   # the partition's visited set, to itself


def check_frontier(checks, elements) -> Iterator[Dict[int, int]]:
    """Only the invariant checks of :func:`expand` on a partition's frontier (for the last level
    of a ``max_depth`` search, which is not expanded)."""
    for _, _, frontier, _ in elements:
        broken: Dict[int, int] = {}
        for blob, keep, kfps in frontier:
            chunk = pickle.loads(blob)
            for p, sfp in zip(keep.tolist(), kfps.tolist()):
                _check(checks, chunk[p], sfp, broken)
        yield broken


@_without_gc
def merge(records) -> Iterator[tuple]:
    """Stage 2, partition-local, on what the partition received in the shuffle: its own
    ``(visited, parents, broken)`` and the chunks of candidates. Drops the candidates seen
    before, inserts the others into the sorted arrays, and keeps the chunks holding new states
    (with the positions of those) as the next frontier. Yields exactly one
    ``(visited', parents', frontier', (new, generated, broken))``, ``broken`` being about the
    previous level's states (checked by the expansion)."""
    visited = vparents = None
    broken: Dict[int, int] = {}
    chunks = []
    for _, value in records:
        if len(value) == 3:
            visited, vparents, broken = value
        else:
            chunks.append(value)
    if visited is None:             # pragma: no cover - every partition sends its own each level
        raise RuntimeError("a partition received no visited set")
    generated = sum(c[3] for c in chunks)
    chunks = [c for c in chunks if len(c[1])]
    chunks.sort(key=lambda c: (int(c[1][0]), int(c[2][0]), len(c[1])))   # the shuffle's order is not fixed
    if not chunks:
        yield visited, vparents, [], (0, generated, broken)
        return
    fps = np.concatenate([c[1] for c in chunks])
    pars = np.concatenate([c[2] for c in chunks])
    src = np.repeat(np.arange(len(chunks)), [len(c[1]) for c in chunks])
    pos = np.concatenate([np.arange(len(c[1]), dtype=np.uint32) for c in chunks])
    sel = _firsts(fps, pars)                      # ascending fingerprints
    cand = fps[sel]
    at = np.searchsorted(visited, cand)
    seen = np.zeros(len(cand), dtype=bool)
    inside = at < len(visited)
    seen[inside] = visited[at[inside]] == cand[inside]
    new = sel[~seen]
    if len(new):
        visited = np.insert(visited, at[~seen], fps[new])
        vparents = np.insert(vparents, at[~seen], pars[new])
    frontier = []
    by_src = new[np.argsort(src[new], kind="stable")]
    bounds = np.searchsorted(src[by_src], np.arange(len(chunks) + 1))
    for k, chunk in enumerate(chunks):
        mine = by_src[bounds[k]:bounds[k + 1]]
        if len(mine):
            mine = mine[np.argsort(pos[mine])]
            frontier.append((chunk[0], pos[mine], fps[mine]))
    yield visited, vparents, frontier, (len(new), generated, broken)


def parent_of(fp: int, elements) -> Iterator[int]:
    """The parent fingerprint of ``fp`` in the partition that owns it (itself for a root)."""
    key = np.uint64(fp)
    for visited, parents, _, _ in elements:
        i = int(np.searchsorted(visited, key))
        if i < len(visited) and visited[i] == key:
            yield int(parents[i])


# --------------------------------------------------------------------------- driver side
def _shipped_package(folder: str) -> str:
    """hwcheck's spec and checker as a zip for executors that do not have hwcheck installed."""
    here = Path(__file__).resolve().parent
    out = Path(folder) / "hwcheck.zip"
    with zipfile.ZipFile(out, "w") as z:
        for pkg, src in (("spec", here.parent / "spec"), ("checker", here)):
            for f in sorted(src.glob("*.py")):
                z.write(f, f"hwcheck/{pkg}/{f.name}")
    return str(out)


@contextlib.contextmanager
def _quiet_fds(log_path: Path):
    """Point fds 1 and 2 at ``log_path`` while the JVM starts, so it (and every process it
    spawns: executors, Python workers) writes its console noise there, not to the user."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in saved + [fd]:
            os.close(f)


@contextlib.contextmanager
def _environ(**values):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def start_spark(master: Optional[str] = None, app_name: str = "hwcheck", log_path: Optional[Path] = None,
                conf: Optional[dict] = None):
    """A SparkContext for ``master`` with Spark's console output kept out of ours: the JVM's
    stdout/stderr go to ``log_path`` (default: ``spark.log`` in a private temp folder), no
    progress bars, log level ERROR. Everything Spark writes on this machine (its log, local
    dirs, the JVM's temp files, the Python workers' temp files) goes into that folder, which
    :func:`stop_spark` removes. Python workers run this interpreter unless PYSPARK_PYTHON says
    otherwise. The SIGINT handler in place before is put back (pyspark's own would call into
    the JVM from inside the signal handler, mid-call): run under :class:`CtrlC` to turn Ctrl-C
    into a clean stop.

    ``master`` None means: spark-submit's ``--master`` when run under spark-submit (which
    started the JVM already), else ``local[*]``. An existing SparkContext is reused as it is."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    try:
        from pyspark import SparkConf, SparkContext
    except ImportError as e:  # pragma: no cover - pyspark is a dependency
        raise SparkEngineError(f"pyspark is not installed: {e}")
    if SparkContext._active_spark_context is not None:
        sc = SparkContext._active_spark_context
        sc.hwcheck_log = getattr(sc, "hwcheck_log", "the Spark driver's stderr")
        return sc
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ      # spark-submit runs us, its JVM is up
    if master is None and not submitted:
        master = "local[*]"
    if not submitted and not _java_found():
        raise SparkEngineError("Java was not found (no java on the PATH, JAVA_HOME unset or without bin/java): "
                               "the Spark engine needs Java 17 (docs/engines.md)")
    scratch = tempfile.mkdtemp(prefix="hwcheck-spark-")
    log_path = Path(log_path or Path(scratch) / "spark.log")
    # no hsperfdata file in /tmp (written outside java.io.tmpdir, left behind by a killed JVM)
    jvm_opts = f"-Djava.io.tmpdir={scratch} -XX:-UsePerfData"
    spark_conf = (SparkConf().setAppName(app_name)
                  .set("spark.ui.showConsoleProgress", "false")
                  .set("spark.ui.enabled", "false"))
    driver_opts = [jvm_opts]
    if master is not None:
        spark_conf.setMaster(master)
        if master.startswith("local"):
            spark_conf.set("spark.local.dir", scratch)
        if _loopback(master):
            # everything on this machine: talk over the loopback, whatever the hostname resolves to
            ip = os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")
            spark_conf.set("spark.driver.host", ip).set("spark.driver.bindAddress", ip)
            # everything on one machine: the JVMs mostly move bytes between Python processes,
            # for which the quick C1 compiler pays off at once (seconds less per run)
            spark_conf.set("spark.executor.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:-UsePerfData")
            # shuffle files never cross a network here: no use compressing them (152,045 states on
            # local[2]: the JVM's CPU 7.45 s with lz4, 7.37 s without; wall 17.0 s and 16.3 s)
            spark_conf.set("spark.shuffle.compress", "false").set("spark.shuffle.spill.compress", "false")
        if not submitted:
            # the driver JVM schedules and collects counts: quick start-up beats peak speed
            driver_opts.append("-XX:TieredStopAtLevel=1")
    if not submitted:
        spark_conf.set("spark.driver.extraJavaOptions", " ".join(driver_opts))
    for k, v in (conf or {}).items():
        spark_conf.set(k, v)
    main = threading.current_thread() is threading.main_thread()
    handler = signal.getsignal(signal.SIGINT) if main else None
    sc = None
    try:
        # the JVM and the local Python workers inherit TMPDIR: their temp files land in scratch
        with (contextlib.nullcontext() if submitted else _quiet_fds(log_path)), _environ(
                TMPDIR=scratch,
                # no hsperfdata either for the JVM spark-submit runs first to build the command line
                SPARK_LAUNCHER_OPTS=(os.environ.get("SPARK_LAUNCHER_OPTS", "") + " -XX:-UsePerfData").strip()):
            sc = SparkContext(conf=spark_conf)
            sc.setLogLevel("ERROR")
    except KeyboardInterrupt:
        # Ctrl-C while the JVM started (no CtrlC flag in place): nothing of it stays behind
        if sc is not None:
            with contextlib.suppress(Exception):
                sc.stop()
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    except Exception as e:
        raise SparkEngineError(f"cannot start Spark with master {master!r}: {_one_line(e)} (see {log_path})")
    finally:
        # pyspark installs a SIGINT handler that calls into the JVM from inside the signal
        # handler, mid-call: put back the one in place before (CtrlC's flag, or Python's default)
        if main:
            signal.signal(signal.SIGINT, handler)
    sc.hwcheck_log = "spark-submit's console" if submitted else str(log_path)
    sc.hwcheck_scratch = scratch
    if not sc.master.startswith("local"):
        sc.addPyFile(_shipped_package(scratch))
    return sc


def _java_found() -> bool:
    """Whether Spark's launcher will find a java: $JAVA_HOME/bin/java if JAVA_HOME is set, else
    java on the PATH (what bin/spark-class looks for)."""
    home = os.environ.get("JAVA_HOME")
    if home:
        return os.access(os.path.join(home, "bin", "java"), os.X_OK)
    return shutil.which("java") is not None


def stop_spark(sc, keep_log: bool = False) -> None:
    """Stop the context and remove the temp folder :func:`start_spark` made (all but the log
    with ``keep_log``, when an error message points at it)."""
    with contextlib.suppress(Exception):
        sc.stop()
    scratch = getattr(sc, "hwcheck_scratch", None)
    if scratch is None:
        return
    log = Path(sc.hwcheck_log)
    if keep_log and log.parent == Path(scratch):
        for entry in Path(scratch).iterdir():
            if entry != log:
                shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
    else:
        shutil.rmtree(scratch, ignore_errors=True)


def _loopback(master: str) -> bool:
    if master.startswith("local"):
        return True
    host = master.split("://", 1)[-1].split(",")[0].rsplit(":", 1)[0]
    return host in ("127.0.0.1", "localhost", "[::1]")


@contextlib.contextmanager
def spark_context(master: Optional[str] = None, **kw):
    """``start_spark`` that stops the context (and removes its temp folder) on exit."""
    sc = start_spark(master, **kw)
    try:
        yield sc
    finally:
        stop_spark(sc)


def _one_line(e: BaseException) -> str:
    """The gist of a (often very long, Java-flavoured) Spark exception."""
    text = str(e).strip() or type(e).__name__
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "Traceback", "File ")):
            return line[:300]
    return type(e).__name__


class CtrlC:
    """Ctrl-C as a flag while Spark runs (a context manager, effective in the main thread):
    SIGINT never raises inside a py4j call (which would leave its connection unusable and
    print Java tracebacks), however often it comes (``timeout -s INT`` sends it twice: to the
    child and to its group). The search looks at ``hit`` between Spark calls; a job under way
    is cancelled (see :func:`run_action`)."""

    def __init__(self):
        self.hit = False
        self._old = None

    def _on_sigint(self, signum, frame):
        self.hit = True

    def __enter__(self) -> "CtrlC":
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
            self._old = None


class Interrupted(Exception):
    """Ctrl-C seen between two Spark calls (or during one, which was cancelled)."""


def run_action(sc, fn, ctrl_c: Optional[CtrlC] = None):
    """Run a Spark action in a helper thread and wait for it here, watching ``ctrl_c``: on
    Ctrl-C the jobs are cancelled, the helper is waited for, and :class:`Interrupted` raised."""
    if ctrl_c is None or threading.current_thread() is not threading.main_thread():
        return fn()
    if ctrl_c.hit:
        raise Interrupted()
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:      # handed to the waiting thread
            box["error"] = e

    helper = threading.Thread(target=run, name="hwcheck-spark-action", daemon=True)
    helper.start()
    cancelled = False
    while helper.is_alive():
        helper.join(0.05)
        if ctrl_c.hit and not cancelled:
            with contextlib.suppress(Exception):
                sc.cancelAllJobs()
            cancelled = True
    if ctrl_c.hit:
        raise Interrupted()            # whatever the cancelled job ended with
    if "error" in box:
        raise box["error"]
    return box["value"]


def interrupted_result(elapsed: float = 0.0) -> Result:
    """What a run stopped by Ctrl-C before its first level covered."""
    return Result(engine="spark", verdict=INTERRUPTED, distinct_states=0, generated_states=0, depth=0,
                  elapsed=elapsed, peak_rss_mb=peak_rss_mb(), complete=False, reason="interrupted")


_SPARK_ERRORS = ("Py4JJavaError", "Py4JError", "Py4JNetworkError", "PythonException", "SparkException",
                 "SparkRuntimeException", "ConnectionRefusedError")


def spark_bfs(model, *, sc=None, master: Optional[str] = None, partitions: Optional[int] = None,
              max_depth: Optional[int] = None, all_invariants: bool = False,
              progress: Optional[Callable[[dict], None]] = None, only=None,
              ctrl_c: Optional[CtrlC] = None) -> Result:
    """Explore every state reachable within ``max_depth`` steps on Spark; the same figures as
    :func:`hwcheck.checker.bfs.bfs` (distinct states, depth, shortest trace length).

    ``sc``: a running SparkContext (else one is started on ``master``, see :func:`start_spark`,
    and stopped at the end);
    ``partitions``: how many owner partitions the state space is split into (default: Spark's
    default parallelism, at least 2); ``only``: the invariants to check (default: all).
    Ctrl-C ends the search with verdict ``interrupted`` (the job under way cancelled): pass the
    caller's :class:`CtrlC` if it is already in place, else one is for the run.
    Spark failures raise :class:`SparkEngineError`."""
    if ctrl_c is None:
        with CtrlC() as ctrl_c:
            return spark_bfs(model, sc=sc, master=master, partitions=partitions, max_depth=max_depth,
                             all_invariants=all_invariants, progress=progress, only=only, ctrl_c=ctrl_c)
    ship_config(model.cfg)
    start = time.monotonic()
    own = sc is None
    if own:
        sc = start_spark(master)
    failed = False
    try:
        if ctrl_c.hit:
            return interrupted_result(time.monotonic() - start)
        return _search(sc, model, partitions or default_partitions(sc), max_depth, all_invariants, progress,
                       only, ctrl_c)
    except SparkEngineError:
        failed = True
        raise
    except Exception as e:
        if type(e).__name__ in _SPARK_ERRORS:
            failed = True
            raise SparkEngineError(f"the Spark job failed: {_one_line(e)}")
        raise
    finally:
        if own:
            stop_spark(sc, keep_log=failed)


def ship_config(cfg) -> None:
    """Let the executors unpickle ``cfg`` (the model's Config, which carries its Mode): pyspark
    pickles the tasks' closures with cloudpickle, which pickles a function by module and name, and
    the executors cannot import the module a mode file ran as (checker/variants.py); registered,
    that module's functions travel by value with every task (to a cluster too). A built-in mode
    needs nothing. Call it before pickling a task that holds the model (``spark_bfs`` does)."""
    from .variants import module_of

    module = module_of(cfg)
    if module is not None:
        from pyspark import cloudpickle

        cloudpickle.register_pickle_by_value(module)


def default_partitions(sc) -> int:
    """One owner partition per executor core (at least 2): each level costs a Python task per
    partition and stage, ~0.1 s each on 2 cores (docs/engines.md), more partitions pay only
    when their work is uneven."""
    return max(2, sc.defaultParallelism)


def _initial(model, P: int) -> Tuple[list, int]:
    """What each partition receives at level 0, as a shuffle would deliver it: an empty visited
    set and one chunk of the initial states it owns (each its own parent); and their number."""
    inits = model.init_states()
    fps = np.array([fingerprint(s) for s in inits], dtype=np.uint64)
    records = []
    for p in range(P):
        mine = np.flatnonzero(fps % np.uint64(P) == p)
        part = [(p, (np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint64), {}))]
        if len(mine):
            states = [inits[i] for i in mine.tolist()]
            part.append((p, (pickle.dumps(states, pickle.HIGHEST_PROTOCOL), fps[mine], fps[mine], 0)))
        records.append(part)
    return records, len(inits)


def _search(sc, model, P: int, max_depth, all_invariants, progress, only, ctrl_c: CtrlC) -> Result:
    start = time.monotonic()
    order = [name for name, _ in model.invariants if only is None or name in only]
    preds = dict(model.invariants)
    found: Dict[str, Trace] = {}
    distinct = generated = depth = 0
    verdict, complete, interrupted = HOLDS, True, False

    def checks():
        return [(b, preds[name]) for b, name in enumerate(order) if name not in found]

    def note(broken: Dict[int, int], level) -> bool:
        """Rebuild a trace for each invariant newly broken at the level just checked; whether
        the search stops there."""
        for b, name in enumerate(order):
            if b in broken and name not in found:
                found[name] = _trace(sc, model, level, P, broken[b], name, ctrl_c)
                if not all_invariants:
                    return True
        return bool(found) and len(found) == len(order)

    # Job d: expand level d-1 (checking its states' invariants first), shuffle, merge level d.
    # A level is the merge of what its partitions received; it is never cached: the next job
    # recomputes it (numpy, cheap) from the shuffle files in the same task as the expansion, so
    # each level is one job of two stages and two Python tasks per partition. Spark keeps the
    # shuffle files while the lineage refers to them and recomputes lost ones from it.
    records, n_init = _initial(model, P)
    received = sc.parallelize(records, P).flatMap(lambda part: part)
    level = received.mapPartitions(merge)
    try:
        d = 0
        while True:
            if ctrl_c.hit:
                raise Interrupted()
            if d > 0:
                ch = checks()
                received = (level.mapPartitionsWithIndex(lambda i, it, ch=ch: expand(model, P, ch, i, it))
                            .partitionBy(P, owner))
                level = received.mapPartitions(merge)
            stats = run_action(sc, level.map(lambda x: x[3]).collect, ctrl_c)
            new = sum(s[0] for s in stats)
            if d > 0 and note(_smallest(s[2] for s in stats), level):
                break                   # level d-1 broke an invariant: the figures stay those up to d-1
            distinct += new
            generated += n_init if d == 0 else sum(s[1] for s in stats)
            if new and d > 0:
                depth = d
            if progress is not None:
                progress({"depth": d, "distinct": distinct, "queue": new, "generated": generated,
                          "elapsed": time.monotonic() - start})
            if new == 0:
                break
            if max_depth is not None and d >= max_depth:
                # the last level is checked, not expanded
                ch = checks()
                broken = run_action(sc, level.mapPartitions(lambda it, ch=ch: check_frontier(ch, it)).collect, ctrl_c)
                note(_smallest(broken), level)
                complete = False
                break
            d += 1
    except (Interrupted, KeyboardInterrupt):
        verdict, complete, interrupted = INTERRUPTED, False, True
    if found:
        verdict = VIOLATED
    return Result(
        engine="spark", verdict=verdict, distinct_states=distinct, generated_states=generated,
        depth=depth, elapsed=time.monotonic() - start, peak_rss_mb=peak_rss_mb(),
        violations=sorted(found.values(), key=lambda t: order.index(t.invariant)),
        complete=complete and verdict != INTERRUPTED,
        collision_probability=collision_probability(distinct),
        reason="interrupted" if interrupted else "",
    )


def _smallest(brokens) -> Dict[int, int]:
    """Per invariant bit, the smallest violating fingerprint over the partitions."""
    out: Dict[int, int] = {}
    for broken in brokens:
        for bit, fp in broken.items():
            out[bit] = min(fp, out.get(bit, fp))
    return out


def _trace(sc, model, level, P: int, fp: int, invariant: str, ctrl_c: Optional[CtrlC] = None) -> Trace:
    """Walk the parent fingerprints back from ``fp``, one partition read per step, then replay
    forwards: at each step the successor with the next fingerprint on the chain (as bfs does)."""
    chain = [fp]
    while True:
        [parent] = run_action(sc, lambda fp=chain[-1]: sc.runJob(level, lambda it: parent_of(fp, it), [fp % P]), ctrl_c)
        if parent == chain[-1]:
            break
        chain.append(parent)
    chain.reverse()
    return replay_chain(model, chain, fingerprint, invariant)
