"""``hwcheck conform``: a random walk of the model run step by step on a real Kafka cluster of one
release (through the replication proxy), the cluster compared with the model after every step
(cluster/conform.py); cli/main.py adds it to the group.

Exit codes: 0 the cluster was in the model's state after every step, 1 it parted from the model
(the table marks the step with ``!=``), 2 bad input, 130 interrupted (the cluster is stopped).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click

from hwcheck.spec.releases import RELEASES, UnknownRelease, release as find_release

from .options import EXIT_HOLDS, EXIT_VIOLATION, fail
from .reproduce import outcome_doc, run_one


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
def conform(version, seed, steps, replicas, keep, as_json, wait):
    """Walk the model at random on a real Kafka cluster and check, after every step, that the
    cluster is in the model's state (or one the model reaches by steps Kafka takes by itself).

    \b
    Example:
      hwcheck conform --kafka 4.1 --seed 7 --steps 50
    """
    from hwcheck.cluster.conform import walk_config, walk_document
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
    if as_json:
        click.echo(json.dumps({"conform": {"seed": seed, "steps": len(doc["states"]) - 1, **outcome_doc(outcome)}},
                              indent=1))
    raise click.exceptions.Exit(EXIT_HOLDS if outcome.first_difference is None else EXIT_VIOLATION)
