"""The command line as a user meets it: exit codes, output, files, bad input."""

import json
import os

import pytest
from click.testing import CliRunner

from hwcheck.cli.main import cli
from hwcheck.spec.modes import ALIASES, LADDER

from .conftest import ROOT, one_line_error, run_cli, run_cli_here

CX = ROOT / "counterexamples"


def test_verify_hw_finds_data_loss_and_writes_a_replayable_trace(tmp_path):
    out = tmp_path / "loss.itf.json"
    proc = run_cli("verify", "--mode=hw", "--out", out)
    assert proc.returncode == 1, proc.stderr
    assert "verdict: violated: NoCommittedDataLoss" in proc.stdout
    assert "<- broken: NoCommittedDataLoss" in proc.stdout          # the trace table
    assert "distinct states" in proc.stdout and "peak RSS" in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["#meta"]["format"] == "ITF" and doc["#meta"]["hwcheck"]["invariant"] == "NoCommittedDataLoss"
    rep = run_cli("replay", out)
    assert rep.returncode == 0, rep.stderr
    assert "NoCommittedDataLoss broken in the last state" in rep.stdout


def test_verify_a_holding_epoch_run_says_so():
    """How verify renders a run that holds over its whole space. One crash instead of the default
    two (14,207 states, not 287,803: 1 s, not 15 s): the epoch defaults themselves are verified by
    test_bfs.py::test_epoch_defaults_hold_over_the_whole_space."""
    proc = run_cli("verify", "--mode=epoch", "--crashes=1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verdict: holds" in proc.stdout and "every reachable state" in proc.stdout
    assert "crashes=1" in proc.stdout and "figures: 14,207 distinct states" in proc.stdout


def test_verify_never_overwrites_an_existing_file(tmp_path):
    out = tmp_path / "mine.json"
    out.write_text("precious")
    line = one_line_error(run_cli_here("verify", "--mode=hw", "--records=1", "--out", out))
    assert "exists" in line and out.read_text() == "precious"
    assert run_cli("verify", "--mode=hw", "--records=1", "--out", out, "--force").returncode == 1
    assert out.read_text() != "precious"


def test_verify_default_trace_name_does_not_replace_files(tmp_path):
    (tmp_path / "hwcheck-hw-NoCommittedDataLoss.itf.json").write_text("x")
    proc = run_cli("verify", "--mode=hw", "--records=1", cwd=tmp_path)
    assert proc.returncode == 1
    assert (tmp_path / "hwcheck-hw-NoCommittedDataLoss.itf.json").read_text() == "x"
    assert (tmp_path / "hwcheck-hw-NoCommittedDataLoss-1.itf.json").exists()


@pytest.mark.parametrize("args, words", [
    (["--min-isr=3"], "min_isr=3 exceeds replicas=2"),
    (["--records=0"], "records=0"),
    (["--replicas=9"], "replicas=9"),
])
def test_verify_bad_knobs_exit_2_with_one_line(args, words):
    assert words in one_line_error(run_cli_here("verify", *args))


@pytest.mark.parametrize("args, words", [
    (["--mode=kafka15583", "--no-elr"], "--no-elr: mode kafka15583 (Kafka 3.7-3.9.0 (KRaft)) has no Eligible Leader Replicas"),
    (["--mode=hw", "--elr"], "--elr: mode hw"),
    (["--model=kafka-tla", "--no-elr"], "--elr does not apply to --model kafka-tla"),
    (["--model=kafka-tla", "--kafka=3.9"], "--kafka does not apply to --model kafka-tla"),
    (["--kafka=3.9", "--mode=hw"], "--kafka picks the mode: it does not combine with --mode or --mode-file"),
    (["--kafka=2.0.1"], "--kafka 2.0.1: no mode covers Kafka 2.0.1"),
    (["--kafka=4.0", "--zookeeper"], "--kafka 4.0: --zookeeper: Kafka 4.0 has no ZooKeeper mode (4.0 removed it"),
    (["--mode=kip966", "--zookeeper"], "--zookeeper: mode kip966 (Kafka 4.0.0 (KRaft, ELR enabled)) has no ZooKeeper"),
    (["--kafka=3.9", "--zookeeper", "--no-elr"], "--zookeeper and --no-elr do not combine"),
    (["--kafka=3.9", "--elr"], "the model has no mode for Kafka 3.9.2 with Eligible Leader Replicas"),
    (["--kafka=three"], "'three' is not a Kafka version"),
    (["--mode=kip96"], "unknown mode 'kip96' (did you mean kip966?)"),
])
def test_elr_and_kafka_version_refusals_are_one_line(args, words):
    assert words in one_line_error(run_cli_here("verify", *args))


@pytest.mark.parametrize("command, args", [
    ("verify", ["--unclean-election", "--clean-election"]), ("verify", ["--follower-reads", "--leader-reads"]),
    ("verify", ["--elr", "--no-elr"]), ("simulate", ["--swarm", "--uniform"]), ("prove", ["--aux", "--no-aux"]),
    ("reproduce", ["--proxy", "--no-proxy"]),
])
def test_contradictory_flags_are_refused_not_resolved_by_the_last(command, args):
    assert f"{args[0]} and {args[1]} contradict each other: give one" in one_line_error(run_cli_here(command, *args))


def test_a_trace_is_read_from_a_pipe_as_dash():
    from click.testing import CliRunner
    from hwcheck.cli.main import cli
    text = (CX / "hw-data-loss.itf.json").read_text()
    done = CliRunner().invoke(cli, ["replay", "-", "--quiet"], input=text, catch_exceptions=False)
    assert done.exit_code == 0 and "NoCommittedDataLoss broken in the last state" in done.stdout
    bad = CliRunner().invoke(cli, ["replay", "-"], input="{", catch_exceptions=False)
    assert bad.exit_code == 2 and "-: malformed JSON" in bad.stderr


def test_prove_json_gives_the_verdict_of_its_exit_code():
    import jsonschema
    from hwcheck.cli.jsonout import SCHEMA
    done = run_cli_here("prove", "--mode=hw", "--records=1", "--crashes=0", "--invariant=NoCommittedDataLoss", "--json")
    assert done.returncode == 3, done.stderr
    doc = json.loads(done.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert (doc["command"], doc["method"], doc["k"], doc["verdict"], doc["exit_code"]) == \
        ("prove", "k-induction", 1, "not-inductive", 3)
    assert doc["verdict_line"].startswith("verdict: not k-inductive (k=1)")


def test_bounds_that_leave_elections_out_say_so_beside_the_verdict():
    done = run_cli_here("verify", "--max-epoch=0", "--records=1", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "note: these bounds allow no leader election (max_epoch=0): r0 leads throughout" in done.stdout
    assert "note:" not in run_cli_here("verify", "--mode=hw", "--records=1", "--crashes=1", "--max-depth=3").stdout


def test_no_elr_runs_the_mode_without_elr_and_says_so():
    """4.1 upgraded from 3.x (ELR off) loses a record after one power failure at min ISR 2, which 4.1
    with ELR survives (the gate's kafka19522-power-failure-min-isr-2 and -no-elr- rows)."""
    done = run_cli_here("verify", "--mode=kafka19522", "--no-elr", "--min-isr=2", "--power-failures=1",
                        "--crashes=0", "--out", os.devnull, "--force")
    assert done.returncode == 1, done.stderr
    assert "--no-elr: kafka19522 (Kafka 4.1.1-4.2 (KRaft)) with ELR off follows kafka18991's rules" in done.stderr
    assert "mode=kafka18991 " in done.stdout
    assert "violated: NoCommittedDataLoss after 13 steps" in done.stdout


def test_kafka_version_picks_the_mode_and_says_which():
    done = run_cli_here("verify", "--kafka=4.0", "--min-isr=2", "--power-failures=1", "--crashes=0",
                        "--out", os.devnull, "--force")
    assert done.returncode == 1, done.stderr
    assert "--kafka 4.0: mode kafka18991 (Kafka 4.0.2, KRaft, ELR off (4.0 formats without it" in done.stderr
    assert "mode=kafka18991 " in done.stdout


@pytest.mark.parametrize("args, said, mode", [
    (["--kafka=3.5.1"], "--kafka 3.5.1: mode kafka14704 (Kafka 3.5.1, ZooKeeper", "kafka14704"),
    (["--kafka=3.4.1"], "--kafka 3.4.1: mode kafka14704 (Kafka 3.4.1, ZooKeeper", "kafka14704"),
    (["--kafka=3.9", "--zookeeper"], "--kafka 3.9: mode kafka18991-zk (Kafka 3.9.2, ZooKeeper (--zookeeper: "
                                     "kafka18991 without its KRaft-only rules))", "kafka18991-zk"),
    (["--mode=kip903", "--zookeeper"], "--zookeeper: kip903 (Kafka 3.6 (KRaft)) on ZooKeeper follows kip903-zk's "
                                       "rules", "kip903-zk"),
])
def test_kafka_version_and_zookeeper_pick_the_mode_and_say_which(args, said, mode):
    done = run_cli_here("verify", *args, "--records=1", "--crashes=0", "--max-epoch=1", "--quiet")
    assert done.returncode == 0, done.stderr
    assert said in done.stderr and f"mode={mode} " in done.stdout


def test_a_trace_of_a_derived_zookeeper_mode_replays_by_its_name(tmp_path):
    """3.7-3.9.0 on ZooKeeper (kafka15583-zk, no ladder mode) loses record 0 after one power failure at
    min ISR 2, as on KRaft; the trace names its mode and replays without --zookeeper."""
    out = tmp_path / "zk.itf.json"
    done = run_cli_here("verify", "--kafka=3.9.0", "--zookeeper", "--min-isr=2", "--power-failures=1", "--crashes=0",
                        "--out", str(out), "--quiet")
    assert done.returncode == 1 and "mode kafka15583-zk" in done.stderr and out.exists()
    again = run_cli_here("replay", str(out), "--quiet")
    assert again.returncode == 0, again.stderr
    assert "mode=kafka15583-zk " in again.stdout


def test_verify_unknown_mode_is_a_usage_error():
    proc = run_cli("verify", "--mode=kafka")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_max_depth_bounds_the_search():
    proc = run_cli("verify", "--mode=hw", "--max-depth=5")
    assert proc.returncode == 0 and "within depth 5" in proc.stdout


def test_every_counterexample_replays():
    """In-process (click's CliRunner: an exception escaping the command is ``result.exception``):
    a child process per file cost half a second of imports each; the other tests here replay
    through the real command line."""
    files = sorted(CX.glob("*.itf.json"))
    assert files
    for f in files:
        result = CliRunner().invoke(cli, ["replay", str(f)])
        assert result.exit_code == 0 and result.exception is None, f"{f.name}: {result.output} {result.exception!r}"
        claimed = json.loads(f.read_text())["#meta"]["hwcheck"]["invariant"]
        assert f"{claimed}" in result.output.splitlines()[-1]


def corrupt(tmp_path, mutate):
    doc = json.loads((CX / "hw-data-loss.itf.json").read_text())
    mutate(doc)
    path = tmp_path / "bad.itf.json"
    path.write_text(json.dumps(doc))
    return path


def test_replay_refuses_a_changed_state(tmp_path):
    def change(doc):
        doc["states"][8]["replicas"]["r0"]["hw"] = 0
    line = one_line_error(run_cli_here("replay", corrupt(tmp_path, change)))
    assert "step 8" in line and "replicas.r0.hw" in line


def test_replay_refuses_a_step_that_is_not_enabled(tmp_path):
    def swap(doc):
        doc["states"][1]["#meta"]["action"] = "produce(r1)"
    line = one_line_error(run_cli_here("replay", corrupt(tmp_path, swap)))
    assert "step 1 (produce(r1)): not enabled" in line


def test_replay_refuses_an_unknown_action(tmp_path):
    def rename(doc):
        doc["states"][2]["#meta"]["action"] = "teleport(r1)"
    assert "unknown action 'teleport'" in one_line_error(run_cli_here("replay", corrupt(tmp_path, rename)))


def test_replay_refuses_malformed_and_truncated_files(tmp_path):
    text = (CX / "hw-data-loss.itf.json").read_text()
    (tmp_path / "cut.json").write_text(text[: len(text) // 2])
    assert "malformed JSON" in one_line_error(run_cli_here("replay", tmp_path / "cut.json"))
    (tmp_path / "other.json").write_text(json.dumps({"vars": [], "states": []}))
    assert "not an hwcheck ITF trace" in one_line_error(run_cli_here("replay", tmp_path / "other.json"))
    assert "cannot read" in one_line_error(run_cli_here("replay", tmp_path / "missing.json"))


def test_replay_refuses_a_trace_with_bad_settings(tmp_path):
    def bad(doc):
        doc["#meta"]["hwcheck"]["config"]["min_isr"] = 7
    assert "min_isr=7" in one_line_error(run_cli_here("replay", corrupt(tmp_path, bad)))


def test_replay_says_when_the_stored_violation_no_longer_breaks(tmp_path):
    """A trace cut before its last step replays but no longer shows the stored violation."""
    def cut(doc):
        doc["states"] = doc["states"][:-1]
    proc = run_cli("replay", corrupt(tmp_path, cut))
    assert proc.returncode == 1 and "no longer breaks" in proc.stdout


def test_five_replicas_run_end_to_end():
    proc = run_cli("verify", "--replicas=5", "--records=1", "--crashes=1", "--max-epoch=1", "--max-depth=5",
                   "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "replicas=5" in proc.stdout and "within depth 5" in proc.stdout


def test_differential_replay_shows_how_epochs_block_the_hw_loss():
    proc = run_cli("replay", CX / "hw-data-loss.itf.json", "--mode", "kip101")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    # 0.10 truncates to the HW when r1 follows r0 again (makeFollowers); 0.11 keeps the record
    assert "parts ways at step 10: become_follower(r1): replicas.r1.log" in out
    assert "all 12 steps run under kip101" in out
    assert "breaks under kip101: nothing (NoCommittedDataLoss holds throughout)" in out
    # from KIP-320 (2.1) the stale Fetch names epoch 0 and is fenced: r1 stays out of the ISR and
    # cannot take over (the newest protocol, which epoch names, refuses the same step)
    epoch = run_cli("replay", CX / "hw-data-loss.itf.json", "--mode", "epoch")
    assert (f"refused at step 11 of 12: controlled_shutdown_leader(r0,r1): not enabled in mode {LADDER[-1].name}"
            in epoch.stdout)


def test_differential_replay_shows_kafka_6361_still_diverging_under_2_0():
    proc = run_cli("replay", CX / "kip101-divergence-kafka-6361.itf.json", "--mode", "kip279")
    assert proc.returncode == 0, proc.stderr
    assert "all 21 steps run under kip279" in proc.stdout
    assert "breaks under kip279: NoLogDivergence at step 21" in proc.stdout


def test_differential_replay_across_state_shapes_leads_with_behaviour():
    """kafka15583 (3.9) has no ELR fields and kafka19522 (4.1) has: the ELR field's absence is no
    difference, so the shared state never parts before step 10, which 4.1 refuses: the record that
    fences r0 elects r1 from the ELR (in-process)."""
    from hwcheck.checker.trace import differential, load_itf
    diff = differential(load_itf((CX / "kafka15583-power-failure-min-isr-2-loss.itf.json").read_text()), "kafka19522")
    assert diff.parted_at is None and diff.refused_at == 10
    assert diff.refused_why == "controller_handle_failure(r0): not enabled in mode kafka19522"


def test_differential_replay_under_the_same_mode_never_parts():
    proc = run_cli("replay", CX / "hw-data-loss.itf.json", "--mode", "hw")
    assert "never parts ways" in proc.stdout and "NoCommittedDataLoss at step 12" in proc.stdout


def test_modes_lists_the_ladder_with_releases_and_references():
    proc = run_cli("modes")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    words = " ".join(proc.stdout.split())
    table = lines[:lines.index("", len(lines) - 1 - lines[::-1].index(""))] if "" in lines else lines
    for mode in LADDER:
        row = [line for line in table if line.split()[:1] == [mode.name]]
        assert len(row) == 1 and mode.kafka in row[0], (mode.name, row)
        assert row[0].split()[1] == (mode.parent or "-")              # the tree: each mode's parent
        assert mode.changes
        for change in mode.changes:
            assert change.ref in proc.stdout
            assert " ".join(change.rule.split()) in words and f"source: {change.source}" in words
    # the ladder in order, then the alias of the newest
    firsts = [line.split()[0] for line in table if line and not line[0].isspace()]
    assert [name for name in firsts if name in {m.name for m in LADDER}] == [m.name for m in LADDER]
    assert ALIASES == {"epoch": LADDER[-1].name}
    assert "kafka15583 branches: kafka18991 for Kafka 3.9.1 (KRaft), kip966 for Kafka 4.0.0" in proc.stdout
    assert lines[-1].startswith(f"epoch names the newest mode: {LADDER[-1].name}, Kafka {LADDER[-1].kafka}")


def test_mode_choices_come_from_the_ladder():
    help_text = " ".join(run_cli("verify", "--help").stdout.split())
    assert "--mode [" + "|".join([m.name for m in LADDER] + list(ALIASES)) in help_text
    assert "kafka" not in [m.name for m in LADDER] and "kip320" in [m.name for m in LADDER]
    proc = run_cli("verify", "--mode=kip320", "--records=1", "--max-depth=2")
    assert proc.returncode == 0 and "mode=kip320 " in proc.stdout
