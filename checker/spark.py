"""Level-synchronous breadth-first search on Spark, the state space partitioned by fingerprint.

Every state has an owner partition, ``fingerprint(state) % partitions``. One level is:

1. **expand** the frontier on the executors (``model.successors``), dropping duplicates
   within each source partition;
2. **shuffle** each successor ``(fp, (parent_fp, label, state))`` to its owner partition
   (``partitionBy`` with the same partition function the visited set uses);
3. **drop visited** partition-locally: the visited set is an RDD with exactly one element per
   partition, the fingerprints that partition owns (a compact ``array('Q')``); it is zipped
   (``RDD.zip``: a narrow dependency, no shuffle) with the successors that partition received,
   so partition *i* of the visited set only ever meets partition *i* of the successors;
4. **check invariants** on the new states, on the executors;
5. keep ``(fp, parent_fp, label)`` for every new state, per level, on the executors.

The driver holds only per-partition counts and, per broken invariant, the smallest violating
fingerprint of the level. On a violation it walks the parent records back one level at a time
(one small job reading one partition per step), re-executes the labels with ``model.step`` and
returns the same :class:`Result` and :class:`Trace` objects as :func:`hwcheck.checker.bfs.bfs`.
Levels are complete: a violation found at depth *d* is reported after the whole level *d* has
been explored, so ``distinct_states`` counts every state within distance *d*.

>>> from hwcheck.spec import Config, Model
>>> with spark_context("local[1]") as sc:                      # doctest: +SKIP
...     r = spark_bfs(Model(Config(mode="hw", records=1)), sc=sc, partitions=2)
>>> r.verdict, r.violations[0].steps                          # doctest: +SKIP
('violated', 10)
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
import tempfile
import time
import zipfile
from array import array
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple

from .bfs import collision_probability, fingerprint, peak_rss_mb, rebuild_trace
from .result import HOLDS, INTERRUPTED, VIOLATED, Result

GENERATED = -1   # key of the per-partition "successors generated" count in the shuffle


class SparkEngineError(RuntimeError):
    """Spark could not run the search (no Java, bad master URL, a job failed for good): one line."""


def owner(fp: int) -> int:
    """The partition function (``partitionBy`` takes it modulo the number of partitions)."""
    return fp


# --------------------------------------------------------------------------- executor side
def expand(model, records: Iterator[Tuple[int, object]]) -> Iterator[Tuple[int, tuple]]:
    """Successors of a frontier partition as ``(fp, (parent_fp, label, state))``, the first
    (smallest ``(parent_fp, label)``) of each fingerprint only, then one count record."""
    best: Dict[int, tuple] = {}
    generated = 0
    successors = model.successors
    for sfp, s in records:
        for label, t in successors(s):
            generated += 1
            tfp = fingerprint(t)
            old = best.get(tfp)
            if old is None or (sfp, label) < (old[0], old[1]):
                best[tfp] = (sfp, label, t)
    yield from best.items()
    yield GENERATED, generated


def gather(records: Iterator[Tuple[int, object]]) -> Iterator[Tuple[dict, int]]:
    """Everything a partition received in the shuffle as one ``({fp: candidate}, generated)``:
    exactly one element per partition, so it zips with the visited set's one element."""
    best: Dict[int, tuple] = {}
    generated = 0
    for fp, value in records:
        if fp == GENERATED:
            generated += value
            continue
        old = best.get(fp)
        if old is None or (value[0], value[1]) < (old[0], old[1]):
            best[fp] = value
    yield best, generated


def drop_visited(model, wanted: frozenset, pairs):
    """Partition-local: keep the candidates this partition has not seen, extend its visited
    fingerprints, check the invariants in ``wanted`` on the new states.

    ``pairs`` holds one ``((visited, levels), (candidates, generated))``: ``visited`` the
    fingerprints this partition owns, ``levels`` one pickled ``(fps, parent_fps, labels)`` per
    level (an initial state is its own parent, its label its init index). Yields one
    ``((visited', levels'), frontier, stats)``: ``frontier`` the new ``(fp, state)`` pairs
    (pickled), ``stats`` ``(new, generated, {invariant: smallest violating fp})``."""
    invariants = [(name, pred) for name, pred in model.invariants if name in wanted]
    for (visited, levels), (candidates, generated) in pairs:
        seen = set(visited)
        visited = array("Q", visited)
        fps, parent_fps, labels, frontier = array("Q"), array("Q"), [], []
        broken: Dict[str, int] = {}
        for fp, (parent, label, state) in candidates.items():
            if fp in seen:
                continue
            fps.append(fp)
            parent_fps.append(fp if parent is None else parent)
            labels.append(label)
            frontier.append((fp, state))
            for name, pred in invariants:
                if not pred(state) and fp < broken.get(name, 1 << 64):
                    broken[name] = fp
        visited.extend(fps)
        levels = levels + [pickle.dumps((fps, parent_fps, labels), pickle.HIGHEST_PROTOCOL)]
        yield ((visited, levels), pickle.dumps(frontier, pickle.HIGHEST_PROTOCOL),
               (len(fps), generated, broken))


def find_parent(fp: int, level: int, parts) -> Iterator[Tuple[Optional[int], object]]:
    """The parent record of ``fp``, a state first reached at ``level``, in the partition that
    owns it (an element ``(visited, levels)``)."""
    for _, levels in parts:
        fps, parent_fps, labels = pickle.loads(levels[level])
        try:
            i = fps.index(fp)
        except ValueError:
            continue
        yield (None if parent_fps[i] == fp else parent_fps[i]), labels[i]


# --------------------------------------------------------------------------- driver side
def _shipped_package() -> str:
    """hwcheck's spec and checker as a zip for executors that do not have hwcheck installed."""
    here = Path(__file__).resolve().parent
    out = Path(tempfile.mkdtemp(prefix="hwcheck-spark-")) / "hwcheck.zip"
    with zipfile.ZipFile(out, "w") as z:
        for pkg, folder in (("spec", here.parent / "spec"), ("checker", here)):
            for f in sorted(folder.glob("*.py")):
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


def start_spark(master: Optional[str] = None, app_name: str = "hwcheck", log_path: Optional[Path] = None,
                conf: Optional[dict] = None):
    """A SparkContext for ``master`` with Spark's console output kept out of ours: the JVM's
    stdout/stderr go to ``log_path`` (default: a file in the temp folder), no progress bars,
    log level ERROR. Python workers run this interpreter unless PYSPARK_PYTHON says otherwise.

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
    log_path = Path(log_path or Path(tempfile.gettempdir()) / f"hwcheck-spark-{os.getpid()}.log")
    spark_conf = (SparkConf().setAppName(app_name)
                  .set("spark.ui.showConsoleProgress", "false")
                  .set("spark.ui.enabled", "false"))
    if master is not None:
        spark_conf.setMaster(master)
        if _loopback(master):
            # everything on this machine: talk over the loopback, whatever the hostname resolves to
            ip = os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")
            spark_conf.set("spark.driver.host", ip).set("spark.driver.bindAddress", ip)
            # everything on one machine: the JVMs mostly move bytes between Python processes,
            # for which the quick C1 compiler pays off at once (seconds less per run)
            spark_conf.set("spark.executor.extraJavaOptions", "-XX:TieredStopAtLevel=1")
        if not submitted:
            # the driver JVM schedules and collects counts: quick start-up beats peak speed
            spark_conf.set("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
    for k, v in (conf or {}).items():
        spark_conf.set(k, v)
    try:
        with (contextlib.nullcontext() if submitted else _quiet_fds(log_path)):
            sc = SparkContext(conf=spark_conf)
            sc.setLogLevel("ERROR")
    except Exception as e:
        raise SparkEngineError(f"cannot start Spark with master {master!r}: {_one_line(e)} (see {log_path})")
    sc.hwcheck_log = "spark-submit's console" if submitted else str(log_path)
    if not sc.master.startswith("local"):
        sc.addPyFile(_shipped_package())
    return sc


def _loopback(master: str) -> bool:
    if master.startswith("local"):
        return True
    host = master.split("://", 1)[-1].split(",")[0].rsplit(":", 1)[0]
    return host in ("127.0.0.1", "localhost", "[::1]")


@contextlib.contextmanager
def spark_context(master: Optional[str] = None, **kw):
    """``start_spark`` that stops the context on exit."""
    sc = start_spark(master, **kw)
    try:
        yield sc
    finally:
        sc.stop()


def _one_line(e: BaseException) -> str:
    """The gist of a (often very long, Java-flavoured) Spark exception."""
    text = str(e).strip() or type(e).__name__
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "Traceback", "File ")):
            return line[:300]
    return type(e).__name__


def spark_bfs(model, *, sc=None, master: Optional[str] = None, partitions: Optional[int] = None,
              max_depth: Optional[int] = None, all_invariants: bool = False,
              progress: Optional[Callable[[dict], None]] = None, only=None) -> Result:
    """Explore every state reachable within ``max_depth`` steps on Spark; the same figures as
    :func:`hwcheck.checker.bfs.bfs` (distinct states, depth, shortest trace length).

    ``sc``: a running SparkContext (else one is started on ``master``, see :func:`start_spark`,
    and stopped at the end);
    ``partitions``: how many owner partitions the state space is split into (default: twice
    Spark's default parallelism); ``only``: the invariants to check (default: all).
    Spark failures raise :class:`SparkEngineError`."""
    own = sc is None
    if own:
        sc = start_spark(master)
    try:
        return _search(sc, model, partitions or max(2, 2 * sc.defaultParallelism), max_depth,
                       all_invariants, progress, only)
    except SparkEngineError:
        raise
    except KeyboardInterrupt:
        raise
    except Exception as e:
        if type(e).__name__ in ("Py4JJavaError", "Py4JError", "Py4JNetworkError", "PythonException",
                                "SparkException", "SparkRuntimeException", "ConnectionRefusedError"):
            raise SparkEngineError(f"the Spark job failed: {_one_line(e)}")
        raise
    finally:
        if own:
            with contextlib.suppress(Exception):
                sc.stop()


def _search(sc, model, P: int, max_depth, all_invariants, progress, only) -> Result:
    from pyspark import StorageLevel

    start = time.monotonic()
    order = [name for name, _ in model.invariants if only is None or name in only]
    wanted = set(order)
    found: Dict[str, object] = {}
    cached: List = []           # the last levels' dedup output (the newest holds every parent record)
    distinct = generated = depth = 0
    verdict, complete = HOLDS, True

    inits = model.init_states()
    candidates = sc.parallelize([(fingerprint(s), (None, i, s)) for i, s in enumerate(inits)]
                                + [(GENERATED, len(inits))], P).partitionBy(P, owner)
    visited = sc.parallelize([(array("Q"), []) for _ in range(P)], P)
    try:
        d = 0
        while True:
            # one Spark job per level: expand + shuffle (map stage), then drop visited + check
            check = frozenset(wanted - set(found))
            grouped = candidates.mapPartitions(gather, preservesPartitioning=True)
            out = visited.zip(grouped).mapPartitions(lambda it, check=check: drop_visited(model, check, it))
            out.persist(StorageLevel.MEMORY_AND_DISK)
            stats = out.map(lambda x: x[2]).collect()
            cached.append(out)
            if len(cached) > 2:
                cached.pop(0).unpersist()
            new = sum(s[0] for s in stats)
            distinct += new
            generated += sum(s[1] for s in stats)
            if new and d > 0:
                depth = d
            broken: Dict[str, int] = {}
            for s in stats:
                for name, fp in s[2].items():
                    broken[name] = min(fp, broken.get(name, fp))
            for name in order:
                if name in broken and name not in found:
                    found[name] = _trace(sc, model, out, P, d, broken[name], name)
                    if not all_invariants:
                        break
            if progress is not None:
                progress({"depth": d, "distinct": distinct, "queue": new, "generated": generated,
                          "elapsed": time.monotonic() - start})
            if found and (not all_invariants or len(found) == len(wanted)):
                break
            if new == 0:
                break
            if max_depth is not None and d >= max_depth:
                complete = False
                break
            visited = out.map(lambda x: x[0])
            frontier = out.flatMap(lambda x: pickle.loads(x[1]))
            candidates = frontier.mapPartitions(lambda it: expand(model, it)).partitionBy(P, owner)
            d += 1
    except KeyboardInterrupt:
        verdict, complete = INTERRUPTED, False
    finally:
        for rdd in cached:
            with contextlib.suppress(Exception):
                rdd.unpersist()
    if found:
        verdict = VIOLATED
    return Result(
        engine="spark", verdict=verdict, distinct_states=distinct, generated_states=generated,
        depth=depth, elapsed=time.monotonic() - start, peak_rss_mb=peak_rss_mb(),
        violations=sorted(found.values(), key=lambda t: order.index(t.invariant)),
        complete=complete and verdict != INTERRUPTED,
        collision_probability=collision_probability(distinct),
    )


def _trace(sc, model, out, P: int, level: int, fp: int, invariant: str):
    """Walk the parent records back from ``fp`` (first reached at ``level``), one partition
    read per level, and replay the labels: only the records on the path reach the driver."""
    parents: Dict[int, Tuple] = {}
    violating = fp
    owned = out.map(lambda x: x[0])
    for k in range(level, -1, -1):
        [(parent, label)] = sc.runJob(owned, lambda it, fp=fp, k=k: find_parent(fp, k, it), [owner(fp) % P])
        parents[fp] = (parent, label)
        if parent is None:
            break
        fp = parent
    return rebuild_trace(model, parents, violating, invariant)
