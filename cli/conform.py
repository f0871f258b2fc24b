"""``hwcheck conform``: a random walk of the model run step by step on a real Kafka cluster of one
release (through the replication proxy), the cluster compared with the model after every step
(cluster/conform.py); cli/main.py adds it to the group.

Exit codes: 0 the cluster was in the model's state after every step, 1 it parted from the model
(the table marks the step with ``!=``), 2 bad input, 130 interrupted (the cluster is stopped).

A walk that parts is shrunk (``--shrink N``: at most N more cluster runs, each of a shorter
schedule the model can run, kept when that cluster parts too; cluster/conform.py ``shrink``) and
the shortest one's table printed after the walk's.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click

from hwcheck.spec.releases import RELEASES, UnknownRelease, release as find_release

from .options import EXIT_HOLDS, EXIT_INTERRUPTED, EXIT_VIOLATION, fail
from .reproduce import _say, outcome_doc, resolve_release, run_one


@click.command()
@click.option("--kafka", "version", metavar="VERSION", default=None,
              help="the release to run (3.9.1 exactly, 3.9 the newest 3.9.x in the table); default: the newest")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True, help="the walk's random seed")
@click.option("--steps", type=click.IntRange(1, 2000), default=30, show_default=True, help="the walk's length")
@click.option("--replicas", type=click.IntRange(2, 3), default=2, show_default=True)
@click.option("--keep", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="keep the evidence (brokers' logs, configs, data, the walk as ITF) in this new folder")
@click.option("--json", "as_json", is_flag=True, help="one JSON document instead of the table")
@click.option("--wait", type=click.FloatRange(1, 600), default=45.0, show_default=True,
              help="seconds to wait for the cluster to reach the model's state after a step")
@click.option("--shrink", "tries", type=click.IntRange(0), default=12, show_default=True,
              help="if the cluster parts from the walk: at most this many more cluster runs to shrink it (0: none)")
def conform(version, seed, steps, replicas, keep, as_json, wait, tries):
    """Walk the model at random on a real Kafka cluster and check, after every step, that the
    cluster is in the model's state (or one the model reaches by steps Kafka takes by itself).

    \b
    Example:
      hwcheck conform --kafka 4.1 --seed 7 --steps 50
    """
    from hwcheck.cluster.conform import walk, walk_config, walk_document
    from hwcheck.spec import Model
    try:
        rel = find_release(version) if version else RELEASES[-1]
    except UnknownRelease as e:
        fail(str(e))
    if shutil.which("java") is None:
        fail("java not found on PATH: conform starts real brokers (install Java 17)")
    if keep is not None and keep.exists() and any(keep.iterdir()):
        fail(f"--keep {keep}: the folder exists and is not empty (evidence is never overwritten)")
    model = Model(walk_config(rel.mode, steps, replicas))
    doc = walk_document(model, seed, steps)
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        (keep / f"walk-seed-{seed}.itf.json").write_text(json.dumps(doc, indent=1) + "\n")
    click.echo(f"conform: mode {rel.mode}, seed {seed}: a walk of {len(doc['states']) - 1} steps on Kafka "
               f"{rel.version}", err=True)
    outcome = run_one(doc, rel, None, keep, as_json, wait, proxy=True)
    shrunk = None
    if outcome.first_difference is not None and tries:
        shrunk = _shrink(model, walk(model, seed, steps), outcome.first_difference, rel, wait, tries, keep, seed,
                         as_json)
    if as_json:
        click.echo(json.dumps({"conform": {"seed": seed, "steps": len(doc["states"]) - 1, **outcome_doc(outcome),
                                           **({"shrunk": shrunk} if shrunk else {})}}, indent=1))
    raise click.exceptions.Exit(EXIT_HOLDS if outcome.first_difference is None else EXIT_VIOLATION)


def _shrink(model, walked, parted_at, rel, wait, tries, keep, seed, as_json) -> dict:
    """Shrink the walk that parted at step ``parted_at`` (cluster/conform.py ``shrink``), print the
    shortest one's table, keep it as ITF beside the walk; returns what the JSON document says."""
    from hwcheck.checker.trace import to_itf
    from hwcheck.cluster.brokers import ClusterError
    from hwcheck.cluster.conform import shrink
    from hwcheck.cluster.report import step_table
    from hwcheck.cluster.run import Interrupted, run
    lib = resolve_release(rel, log=lambda m: None)
    outcomes, kept, runs = {}, [], [0]

    def parts_at(trial):
        runs[0] += 1
        try:
            out = run(to_itf(model, trial, engine="conform"), rel, lib, wait=wait, proxy=True)
        except ClusterError as e:
            _say(f"shrink run {runs[0]}: {trial.steps} steps: the cluster failed ({e}); not kept")
            return None
        k = out.first_difference
        _say(f"shrink run {runs[0]}: {trial.steps} steps: " + ("agrees" if k is None else f"parts at step {k}"))
        if k is not None:
            outcomes[tuple(trial.labels[:k])] = out
        return k

    _say(f"conform: shrinking the {parted_at} steps up to the difference (at most {tries} cluster runs)")
    interrupted = False
    try:
        best = shrink(model, walked, parted_at, parts_at, tries, kept)
    except (Interrupted, KeyboardInterrupt):        # a run stops its cluster before it raises
        best, interrupted = kept[-1], True
    labels = [model.format_label(label) for label in best.labels]
    out = outcomes.get(tuple(best.labels))
    if keep is not None:
        (keep / f"walk-seed-{seed}-shrunk.itf.json").write_text(json.dumps(to_itf(model, best, engine="conform"),
                                                                           indent=1) + "\n")
    said = (f"shrunk: {parted_at} -> {best.steps} steps in {runs[0]} cluster runs" if out is not None else
            f"shrunk: no shorter walk parted in {runs[0]} cluster runs")
    if not as_json:
        if out is not None:
            click.echo(step_table(out))
        click.echo(said + (": " + ", ".join(labels) if out is not None else ""))
    if interrupted:
        _say(f"hwcheck: interrupted while shrinking after {runs[0]} cluster runs; the shortest walk that parted "
             f"has {best.steps} steps; the cluster is stopped")
        raise click.exceptions.Exit(EXIT_INTERRUPTED)
    return {"steps": best.steps, "labels": labels, "runs": runs[0],
            **({"first_difference": out.first_difference} if out is not None else {})}
