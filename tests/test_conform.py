"""``hwcheck conform``'s walk and its shrinking, without a cluster: the cluster's runs are replaced
by a rule that says where a schedule parts (the real walks are tests/test_reproduce_kafka.py's)."""

import json
from types import SimpleNamespace

from click.testing import CliRunner

from hwcheck.cli.main import cli
from hwcheck.cluster.conform import walk, walk_config
from hwcheck.spec import Model


def _parts_at_first_restart(doc):
    """A stand-in cluster: it parts from the model at the first restart of a schedule."""
    actions = [s["#meta"]["action"] for s in doc["states"][1:]]
    return next((i + 1 for i, a in enumerate(actions) if a.startswith("restart(")), None)


def test_a_walk_that_parts_is_shrunk_to_the_steps_the_difference_needs(monkeypatch, tmp_path):
    import hwcheck.cli.conform as cli_conform
    import hwcheck.cluster.report as report
    import hwcheck.cluster.run as cluster_run
    runs = []

    def fake_run(doc, rel, lib, **kw):
        runs.append(len(doc["states"]) - 1)
        return SimpleNamespace(first_difference=_parts_at_first_restart(doc))

    def fake_run_one(doc, rel, elr, keep, as_json, wait, proxy=None):
        return SimpleNamespace(first_difference=_parts_at_first_restart(doc), rows=[], verdict="walked")

    monkeypatch.setattr(cluster_run, "run", fake_run)
    monkeypatch.setattr(cli_conform, "run_one", fake_run_one)
    monkeypatch.setattr(cli_conform, "outcome_doc", lambda outcome: {"first_difference": outcome.first_difference})
    monkeypatch.setattr(cli_conform, "resolve_release", lambda rel, log=None: tmp_path)
    monkeypatch.setattr(report, "step_table", lambda outcome: "(the shrunk walk's table)")
    model = Model(walk_config("kip101", 60))
    labels = [model.format_label(label) for label in walk(model, 0, 60).labels]
    first = next(i + 1 for i, label in enumerate(labels) if label.startswith("restart("))
    assert first > 3                                   # the walk wanders before its first restart

    done = CliRunner().invoke(cli, ["conform", "--kafka", "0.11.0.3", "--steps", "60", "--shrink", "20",
                                    "--keep", str(tmp_path / "kept")])
    assert done.exit_code == 1, done.output
    shrunk = json.loads((tmp_path / "kept" / "walk-seed-0-shrunk.itf.json").read_text())
    actions = [s["#meta"]["action"] for s in shrunk["states"][1:]]
    # a restart needs its broker stopped first: the shortest schedule removal finds is two steps
    assert len(actions) == 2 and actions[1].startswith("restart(") and len(runs) <= 20
    assert f"shrunk: {first} -> 2 steps in {len(runs)} cluster runs: {', '.join(actions)}" in done.output
    assert "(the shrunk walk's table)" in done.output

    done = CliRunner().invoke(cli, ["conform", "--kafka", "0.11.0.3", "--steps", "60", "--shrink", "0", "--json"])
    assert done.exit_code == 1 and "shrunk" not in json.loads(done.output[done.output.index("{"):])["conform"]


def test_ctrl_c_while_shrinking_says_how_far_it_got(monkeypatch, tmp_path):
    """An interrupted shrink exits 130 and names the runs made and the shortest walk that parted."""
    import hwcheck.cli.conform as cli_conform
    import hwcheck.cluster.report as report
    import hwcheck.cluster.run as cluster_run
    calls = []

    def fake_run(doc, rel, lib, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise cluster_run.Interrupted(SimpleNamespace(seconds=1.0), 3)
        return SimpleNamespace(first_difference=_parts_at_first_restart(doc))

    monkeypatch.setattr(cluster_run, "run", fake_run)
    monkeypatch.setattr(cli_conform, "run_one", lambda doc, *a, **kw: SimpleNamespace(
        first_difference=_parts_at_first_restart(doc)))
    monkeypatch.setattr(cli_conform, "resolve_release", lambda rel, log=None: tmp_path)
    monkeypatch.setattr(report, "step_table", lambda outcome: "(the table)")
    done = CliRunner().invoke(cli, ["conform", "--kafka", "0.11.0.3", "--steps", "60"])
    assert done.exit_code == 130
    assert "interrupted while shrinking after 2 cluster runs; the shortest walk that parted has 2 steps" in done.output
