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
                      help="spark: owner partitions of the state space [default: 2 x Spark's default parallelism]")(fn)
    fn = click.option("--master", default=None, metavar="URL",
                      help=f"spark: the Spark master (local[N], spark://host:port, ...) "
                           f"[default: spark-submit's --master, else {DEFAULT_MASTER}]")(fn)
    return fn


def run_spark(model, *, max_depth: Optional[int], all_invariants: bool, only,
              progress: Callable[[dict], None], master: Optional[str], partitions: Optional[int],
              fail: Callable[[str], None]):
    """Run the Spark engine; Spark failures end through ``fail`` (one line, exit 2)."""
    from hwcheck.checker.spark import SparkEngineError, spark_bfs, start_spark
    from hwcheck.checker.variants import ship_to_spark

    ship_to_spark(model.cfg.mode)     # a --mode-file variant's functions travel with the tasks
    try:
        sc = start_spark(master)
    except SparkEngineError as e:
        fail(str(e))
    try:
        n = partitions or max(2, 2 * sc.defaultParallelism)
        click.echo(f"spark {sc.version}: master {sc.master}, {n} partition{'s' if n != 1 else ''}, "
                   f"default parallelism {sc.defaultParallelism}; Spark's log: {sc.hwcheck_log}")
        return spark_bfs(model, sc=sc, partitions=n, max_depth=max_depth,
                         all_invariants=all_invariants, progress=progress, only=only)
    except SparkEngineError as e:
        fail(f"{e} (see {sc.hwcheck_log})")
    finally:
        try:
            sc.stop()
        except Exception:
            pass
