"""``hwcheck reproduce TRACE``: run a counterexample on a real Kafka cluster of the release it names
(and others, as a differential), side by side with the model; cli/main.py adds it to the group.

Exit codes: 0 every run did what the model predicts for its release, 1 a run disagreed (the table
says at which step), 2 bad input (a trace this stage cannot run, a release not in the table, Maven
or Java missing), 130 interrupted (the cluster is stopped; it says how far it got).
"""

from __future__ import annotations

import json
import shutil
import sys
import time
import tomllib
from pathlib import Path
from typing import Optional

import click

from hwcheck.checker.families import DESIGN
from hwcheck.checker.trace import TraceError, load_itf, replay as replay_trace, trace_family
from hwcheck.spec.releases import RELEASES, UnknownRelease, newest_of, release as find_release, releases_of

from .options import EXIT_HOLDS, EXIT_INTERRUPTED, EXIT_VIOLATION, fail, read_text, switch


def _say(msg: str) -> None:
    click.echo(msg, err=True)


def resolve_release(rel, log=_say) -> Path:
    """The release's jars in the cache, resolved on first use (its sources: --check-releases)."""
    from hwcheck.cluster import jars
    from hwcheck.cluster.run import artifacts
    try:
        jars.java_version()
        return jars.resolve(f"kafka-{rel.version}", artifacts(rel), log=log)
    except jars.ResolveError as e:
        fail(str(e))


def check_releases() -> int:
    """Resolve every pinned release, sources included; print what resolved."""
    from hwcheck.cluster import jars
    try:
        jars.java_version()
    except jars.ResolveError as e:
        fail(str(e))
    blocked = 0
    click.echo(f"{'release':<10} {'mode':<12} {'metadata':<10} {'elr':<5} {'jars':>8}  {'time':>6}  coordinate")
    for rel in RELEASES:
        from hwcheck.cluster.run import artifacts
        t0 = time.monotonic()
        try:
            lib = jars.resolve(f"kafka-{rel.version}", artifacts(rel))
            size = f"{jars.lib_size(lib) / 2**20:.0f} MB"
            jars.resolve(f"kafka-{rel.version}-sources", [], sources=[rel.coordinate])
        except jars.ResolveError as e:
            blocked += 1
            size = str(e)
        click.echo(f"{rel.version:<10} {rel.mode:<12} {rel.metadata:<10} {rel.elr:<5} {size:>8}  "
                   f"{time.monotonic() - t0:5.1f}s  {rel.coordinate}")
    click.echo(f"cache: {jars.cache_root()}")
    return EXIT_VIOLATION if blocked else EXIT_HOLDS


def _load_trace(path: Path) -> dict:
    try:
        doc = load_itf(read_text(path))
        if trace_family(doc) != DESIGN:
            fail(f"{path}: a trace of the {trace_family(doc)} model; reproduce runs traces of the design model")
        replay_trace(doc)
    except TraceError as e:
        fail(f"{path}: {e}")
    return doc


def _releases_for(doc: dict, versions, zookeeper: bool = False) -> list:
    """The clusters to run: the releases asked (the newest of the trace's mode by default), each on
    ZooKeeper with ``zookeeper`` (``spec.releases.on_zookeeper``)."""
    from hwcheck.spec.releases import on_zookeeper
    mode = doc["#meta"]["hwcheck"]["config"]["mode"]
    if not versions:
        rel = newest_of(mode)
        if rel is None:
            fail(f"mode {mode} has no pinned release in the releases table (hwcheck modes lists them); "
                 f"name one with --kafka")
        versions = [rel.version]
    out = []
    for v in versions:
        try:
            rel = find_release(v)
        except UnknownRelease as e:
            covers = ", ".join(r.version for r in releases_of(mode)) or "no pinned release"
            fail(f"{e} (the trace's mode {mode} covers {covers})")
        try:
            out.append(on_zookeeper(rel) if zookeeper else rel)
        except UnknownRelease as e:
            fail(str(e))
    return out


def run_one(doc, rel, elr, keep: Optional[Path], as_json: bool, wait: float, proxy: Optional[bool] = None):
    """One run; returns (outcome, expected outcome)."""
    from hwcheck.cluster.brokers import ClusterError
    from hwcheck.cluster.plan import PlanError
    from hwcheck.cluster.report import step_table
    from hwcheck.cluster.run import Interrupted, run
    lib = resolve_release(rel)
    if keep is not None:
        keep = keep / f"kafka-{rel.version}"
        if keep.exists():
            fail(f"{keep} exists: --keep never overwrites evidence (choose another folder)")
    _say(f"reproduce: Kafka {rel.version} ({rel.metadata}, mode {rel.mode}) from {lib}")
    try:
        outcome = run(doc, rel, lib, elr=elr, keep=keep, log=_say, wait=wait, proxy=proxy)
    except PlanError as e:
        fail(str(e))
    except ClusterError as e:
        fail(f"Kafka {rel.version}: {e}")
    except Interrupted as e:
        _say(f"hwcheck: interrupted at step {e.step} on Kafka {rel.version} after {e.outcome.seconds:.0f} s; "
             f"the cluster is stopped")
        sys.exit(EXIT_INTERRUPTED)
    if keep is not None and keep.exists():
        # the observed states beside the brokers' logs, configs and data: what the table was made from
        (keep / "observed.json").write_text(json.dumps(outcome_doc(outcome), indent=1) + "\n")
        (keep / "table.txt").write_text(step_table(outcome) + "\n" + outcome.verdict + "\n")
    if not as_json:
        click.echo(step_table(outcome))
        p = outcome.prediction
        said = (f"the model ({p.mode}) predicts: " + (f"{p.violated} broken" if p.violated else
                f"kept (step {p.refused_at} refused: {p.refused_why})" if p.refused_at else "kept"))
        click.echo(said)
        where = "" if outcome.first_difference is None else f"; the cluster differs from the model from step {outcome.first_difference}"
        if outcome.assigned_first is not None:
            click.echo("the replaced disk's new directory was assigned "
                       + ("before its broker was unfenced: the controller could elect it then"
                          if outcome.assigned_first else
                          "after its broker was unfenced: the controller could not elect it then")
                       + " (metadata log; the two race)")
        click.echo(f"verdict: {outcome.verdict} ({'agrees' if outcome.agrees else 'DISAGREES'} with the model{where}; "
                   f"{outcome.seconds:.0f} s)")
    return outcome


def outcome_doc(outcome) -> dict:
    p = outcome.prediction
    return {"kafka": outcome.release.version, "mode": p.mode, "predicted": p.outcome, "refused_at": p.refused_at,
            "real": outcome.real, "verdict": outcome.verdict, "agrees": outcome.agrees,
            "first_difference": outcome.first_difference, "seconds": round(outcome.seconds, 1), "proxied": outcome.proxied,
            "assigned_first": outcome.assigned_first,
            # ConsumerConsistency: what a consumer read from the leader after each checkpoint
            "readings": [{"step": r.step, "broker": r.broker, "records": [[off, rec] for off, rec in r.records]}
                         for r in outcome.readings],
            "rows": [{"step": r.index, "action": r.label, "differences": r.differences,
                      "kafka": None if r.view is None else {
                          "leader": r.view.leader, "epoch": r.view.epoch,
                          "isr": None if r.view.isr is None else sorted(r.view.isr),
                          "elr": None if r.view.elr is None else sorted(r.view.elr),
                          "replicas": [{"alive": x.alive, "log": [list(e) for e in x.log], "hw": x.hw}
                                       for x in r.view.replicas],
                          "acked": {str(k): v for k, v in r.view.acked.items()}}}
                     for r in outcome.rows if r.view is not None]}


def load_reproductions(path: Path):
    from hwcheck.cluster.report import TableError, parse_reproductions
    try:
        doc = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as e:
        fail(f"{path}: malformed TOML: {e}")
    table = doc.get("tool", {}).get("hwcheck", {}).get("reproduce")
    if not table:
        fail(f"{path}: no [tool.hwcheck.reproduce] entries")
    try:
        return parse_reproductions(table)
    except TableError as e:
        fail(f"{path}: {e}")


@click.command()
@click.argument("trace_file", metavar="[TRACE]", required=False, type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@click.option("--kafka", "versions", multiple=True, metavar="VERSION",
              help="the release to run (3.9.1 exactly, 3.9 the newest 3.9.x in the table); repeat for a "
                   "differential; default: the newest release of the trace's mode")
@switch("--elr/--no-elr", help="the ELR feature at format (KRaft 4.0+); default: the mode's")
@click.option("--keep", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="keep the evidence (brokers' logs, configs, data) in this new folder, one subfolder per release")
@click.option("--json", "as_json", is_flag=True, help="one JSON document instead of the tables")
@click.option("--all", "run_all", is_flag=True, help="run every [tool.hwcheck.reproduce] entry of ./pyproject.toml")
@click.option("--check-releases", is_flag=True, help="resolve every pinned release (and its sources) and print what resolved")
@click.option("--wait", type=click.FloatRange(1, 600), default=45.0, show_default=True,
              help="seconds to wait for the cluster to reach a checkpoint of the model")
@switch("--proxy/--no-proxy",
        help="place every Fetch and OffsetsForLeaderEpoch through the replication proxy; "
                   "default: where the trace needs a message held")
@click.option("--zookeeper", is_flag=True,
              help="run a 3.6-3.9 release on ZooKeeper, predicted by its mode's ZooKeeper variant (kafka15583-zk)")
def reproduce(trace_file, versions, elr, keep, as_json, run_all, check_releases: bool, wait, proxy, zookeeper):
    """Run a counterexample on a real Kafka cluster (brokers from Maven Central's jars, on
    127.0.0.1) and compare every checkpoint with the model's state.

    \b
    Example:
      hwcheck reproduce counterexamples/kafka15583-power-failure-min-isr-2-loss.itf.json --kafka 3.9.1 --kafka 4.1.1
      hwcheck reproduce --check-releases
    """
    if check_releases:
        raise click.exceptions.Exit(globals()["check_releases"]())
    if shutil.which("java") is None:
        fail("java not found on PATH: reproduce starts real brokers (install Java 17)")
    if keep is not None and keep.exists() and any(keep.iterdir()):
        fail(f"--keep {keep}: the folder exists and is not empty (evidence is never overwritten)")
    jobs = []
    if run_all:
        if trace_file is not None or versions:
            fail("--all runs the pyproject table; give no TRACE or --kafka with it")
        for rep in load_reproductions(Path("pyproject.toml")):
            doc = _load_trace(Path(rep.trace))
            for version in rep.expect:
                jobs.append((rep.name, doc, rep.release(version), rep.elr, rep, rep.proxy))
    else:
        if trace_file is None:
            fail("give a TRACE, --all or --check-releases")
        doc = _load_trace(trace_file)
        if proxy is False:              # refused before any cluster starts
            from hwcheck.cluster.plan import PlanError
            from hwcheck.cluster.run import plan_for, predict
            try:
                plan_for(predict(doc, doc["#meta"]["hwcheck"]["config"]["mode"]), doc["#meta"]["hwcheck"].get("invariant"),
                         False)
            except PlanError as e:
                fail(f"{trace_file}: {e}")
        jobs = [(trace_file.name, doc, rel, elr, None, proxy) for rel in _releases_for(doc, versions, zookeeper)]
    results, code = [], EXIT_HOLDS
    for name, doc, rel, entry_elr, row, entry_proxy in jobs:
        outcome = run_one(doc, rel, entry_elr, keep, as_json, wait, entry_proxy if proxy is None else proxy)
        expected = None
        if row is None:
            ok = outcome.agrees
        else:           # the table's row: what the cluster does, and where it is known to part from the model
            real, parts_at = row.expected(rel.version, outcome.assigned_first)
            ok = outcome.real == real and outcome.first_difference == parts_at
            if parts_at is not None and not as_json:
                click.echo(f"known disagreement (pyproject.toml, docs/results.md 'Real clusters'): the model parts "
                           f"from Kafka {rel.version} at step {parts_at}; " + ("still so" if ok else "NOT as recorded"))
            expected = real
        if not ok:
            code = EXIT_VIOLATION
        results.append({"name": name, **outcome_doc(outcome), "expected": expected})
    if as_json:
        click.echo(json.dumps({"reproduce": results}, indent=1))
    raise click.exceptions.Exit(code)
