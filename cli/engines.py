"""Engine choice for ``hwcheck verify``: ``--engine bfs|spark``, ``--master``, ``--partitions``.

Kept apart from cli/main.py so that each engine's options and plumbing live in one place;
main.py only adds ``@engine_options`` and calls :func:`run_spark`.
"""

from __future__ import annotations

import functools
from typing import Callable, Optional

import click

ENGINES = ("bfs", "spark", "z3")
DEFAULT_MASTER = "local[*]"


def engine_options(fn):
    """``--master`` and ``--partitions`` (the ``--engine`` choice itself is in main.py); refuses
    them with another engine before any work is done."""

    verify = fn

    @functools.wraps(verify)
    def checked(*args, **kwargs):
        if kwargs.get("engine") != "spark" and (kwargs.get("master") is not None
                                                 or kwargs.get("partitions") is not None):
            click.echo("hwcheck: error: --master and --partitions apply to --engine spark only", err=True)
            raise click.exceptions.Exit(2)
        return verify(*args, **kwargs)

    fn = checked
    fn = click.option("--partitions", type=click.IntRange(min=1), default=None,
                      help="spark: owner partitions of the state space [default: Spark's default parallelism, at least 2]")(fn)
    fn = click.option("--master", default=None, metavar="URL",
                      help=f"spark: the Spark master (local[N], spark://host:port, ...) "
                           f"[default: spark-submit's --master, else {DEFAULT_MASTER}]")(fn)
    return fn


def run_spark(model, *, max_depth: Optional[int], all_invariants: bool, only,
              progress: Callable[[dict], None], master: Optional[str], partitions: Optional[int],
              fail: Callable[[str], None]):
    """Run the Spark engine; Spark failures end through ``fail`` (one line, exit 2). Ctrl-C, from
    the JVM's start to its stop, ends the run with verdict ``interrupted`` and what was covered;
    Spark's temp folder (its log included) is removed unless an error names the log."""
    import time

    from hwcheck.checker.spark import (CtrlC, SparkEngineError, default_partitions, interrupted_result,
                                       spark_bfs, start_spark, stop_spark)
    from hwcheck.checker.variants import ship_to_spark

    ship_to_spark(model.cfg.mode)     # a --mode-file variant's functions travel with the tasks
    start = time.monotonic()
    with CtrlC() as ctrl_c:
        try:
            sc = start_spark(master)
        except SparkEngineError as e:
            fail(str(e))
        except KeyboardInterrupt:     # pyspark's own handler, in place for a moment during the start
            return interrupted_result(time.monotonic() - start)
        failed = False
        try:
            if ctrl_c.hit:
                return interrupted_result(time.monotonic() - start)
            n = partitions or default_partitions(sc)
            click.echo(f"spark {sc.version}: master {sc.master}, {n} partition{'s' if n != 1 else ''}, "
                       f"default parallelism {sc.defaultParallelism}; Spark's log: {sc.hwcheck_log}")
            return spark_bfs(model, sc=sc, partitions=n, max_depth=max_depth, all_invariants=all_invariants,
                             progress=progress, only=only, ctrl_c=ctrl_c)
        except SparkEngineError as e:
            failed = True
            fail(f"{e} (see {sc.hwcheck_log})")
        finally:
            stop_spark(sc, keep_log=failed)     # the temp folder goes, but the log an error names stays
