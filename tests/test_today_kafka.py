"""Today's Kafka (2.6.1 to 4.1+): each bug of the issue "Today's Kafka" in the release that had it
and not in the one that fixed it, and the rules behind them (spec/modes.py, docs/results.md)."""

import json

import pytest

from hwcheck.checker.bfs import bfs
from hwcheck.spec import Config, ConfigError, Model
from hwcheck.spec.state import FETCH_RESPONSE, UNDEFINED

from .conftest import ROOT, run_cli, run_labels
from .test_html_report import _report

CX = ROOT / "counterexamples"


def _labels(name):
    doc = json.loads((CX / f"{name}.itf.json").read_text())
    model = Model(Config.from_dict(doc["#meta"]["hwcheck"]["config"]))
    return [model.parse_label(s["#meta"]["action"]) for s in doc["states"][1:]], doc["#meta"]["hwcheck"]


def _run(mode, labels, **knobs):
    """States of the labelled steps under ``mode``; stops where a step is refused (None last)."""
    model = Model(Config(mode=mode, **knobs))
    states = model.init_states()
    for label in labels:
        nxt = model.step(states[-1], label)
        states.append(nxt)
        if nxt is None:
            break
    return model, states


@pytest.mark.parametrize("name, fixed, refused_at", [
    ("kafka10554-kafka-13141-loss", "kafka13141", ("controlled_shutdown_leader", 1, 0)),  # KAFKA-13141
    ("kip966-kafka-19522-fenced-leader", "kafka19522", ("elect_offline", 0)),   # KAFKA-19522
    ("kafka15583-power-failure-min-isr-2-loss", "kip966", ("controller_handle_failure", 0)),  # KIP-966's own
    # case: the record that fences r0 elects r1 from the ELR
    ("kafka13141-disk-loss", "kafka19522", ("elect_offline", 0)),               # clean-shutdown detection
])
def test_a_fix_refuses_the_step_its_bug_needs(name, fixed, refused_at):
    labels, meta = _labels(name)
    knobs = {k: v for k, v in meta["config"].items() if k != "mode"}
    model, states = _run(meta["config"]["mode"], labels, **knobs)
    assert states[-1] is not None and meta["invariant"] in model.violated(states[-1])
    model, states = _run(fixed, labels, **knobs)
    assert states[-1] is None and labels[len(states) - 2] == refused_at
    assert all(not model.violated(s) for s in states[:-1])


@pytest.mark.parametrize("name", ["kafka13141-kafka-14704-divergence", "kafka13141-kafka-14704-follower-read"])
def test_kafka_14704_fixed_the_divergent_follower_truncates_before_it_takes_the_hw(name):
    labels, meta = _labels(name)
    knobs = {k: v for k, v in meta["config"].items() if k != "mode"}
    _, states = _run("kafka13141", labels, **knobs)
    assert meta["invariant"] in Model(Config(mode="kafka13141", **knobs)).violated(states[-1])
    model, states = _run("kip903", labels, **knobs)
    assert states[-1] is not None and not model.violated(states[-1])
    follower = states[-1].replicas[0]
    assert follower.log == () and follower.hw == 0 and not states[-1].inflight[0]   # truncated, HW untouched


def test_a_diverging_fetch_gets_the_divergence_point_and_no_records():
    labels, _ = _labels("kafka10554-kafka-13141-loss")
    upto = labels.index(("leader_handle_fetch", 1, 0)) + 1
    for mode in ("kafka10554", "kafka13141"):
        model, states = _run(mode, labels[:upto])
        kind, leader, records, hw, leader_leo, epoch, end = states[-1].inflight[0][:7]
        assert (kind, leader, records, epoch, end) == (FETCH_RESPONSE, 1, (), 0, 0)   # epoch 0 ends at 0 on r1
        # KAFKA-13141: only the buggy release takes the diverging fetch offset as r0's LEO
        assert states[-1].replicas[1].remote_leo[0] == (1 if mode == "kafka10554" else UNDEFINED)


# KAFKA-14139, closed by KIP-903: r1's Fetch from before it lost its disk reaches the leader after r1
# came back empty; the leader (which had shrunk r1 out of the ISR at the same epoch, so the Fetch is
# not fenced) takes its offset and, handling it, adds the empty r1 back to the ISR, then hands over to it
STALE_INCARNATION = [
    ("produce", 0), ("produce", 0), ("send_fetch", 1), ("leader_handle_fetch", 0, 1), ("follower_handle_fetch", 1),
    ("send_fetch", 1), ("shrink_isr", 0, 1), ("lose_disk", 1), ("controller_handle_failure", 1), ("restart", 1),
    ("leader_handle_stale_fetch", 0, 1), ("controlled_shutdown_leader", 0, 1), ("become_leader", 1)]


def test_kip_903_refuses_the_isr_addition_of_a_stale_incarnation():
    knobs = dict(crashes=1, disk_losses=1)
    model, states = _run("kafka13141", STALE_INCARNATION, **knobs)
    assert states[-1] is not None and "NoCommittedDataLoss" in model.violated(states[-1])
    assert all(not model.violated(s) for s in states[:-1])
    assert states[-3].controller.isr == 0b11 and states[-3].replicas[1].log == ()   # an empty ISR member
    for mode in ("kip903", "kafka19522"):
        model, states = _run(mode, STALE_INCARNATION, **knobs)
        # the stale Fetch moves r1's LEO but not the ISR: r0 has no ISR peer to hand over to
        at = STALE_INCARNATION.index(("controlled_shutdown_leader", 0, 1))
        assert states[-1] is None and len(states) - 2 == at
        leader, c = states[-2].replicas[0], states[-2].controller
        assert leader.remote_leo[1] == 2 and leader.remote_broker_epoch[1] == 0 and c.broker_epochs[1] == 1
        assert c.isr == 0b01


def test_lose_disk_leaves_an_empty_disk_and_counts():
    model = Model(Config(mode="epoch", disk_losses=1))
    s = run_labels(model, [("produce", 0), ("send_fetch", 1), ("leader_handle_fetch", 0, 1),
                           ("follower_handle_fetch", 1), ("lose_disk", 1)])[-1]
    r1 = s.replicas[1]
    assert (r1.alive, r1.log, r1.hw, r1.epoch_cache, r1.flushed) == (0, (), 0, (), 0)
    assert s.history.disk_losses == 1 and model.step(s, ("lose_disk", 0)) is None       # budget spent
    with pytest.raises(ConfigError):
        Model(Config(mode="epoch")).step(s, ("lose_disk", 0))                         # no such action


def test_follower_reads_are_a_knob_of_releases_that_have_them():
    with pytest.raises(ConfigError, match="KIP-392"):
        Config(mode="kip320", follower_reads=True)
    reads = dict(Model(Config(mode="kip903", follower_reads=True)).invariants)
    plain = dict(Model(Config(mode="kip903")).invariants)
    assert reads["ConsumerConsistency"] is not plain["ConsumerConsistency"]
    # a follower's HW rise exposes what it holds
    model = Model(Config(mode="kip903", follower_reads=True, records=1))
    s = run_labels(model, [("produce", 0), ("send_fetch", 1), ("leader_handle_fetch", 0, 1),
                           ("follower_handle_fetch", 1), ("send_fetch", 1), ("leader_handle_fetch", 0, 1)])[-1]
    assert s.history.exposed == (0,)                          # the leader's HW moved
    s = model.step(s, ("follower_handle_fetch", 1))
    assert s.replicas[1].hw == 1 and s.history.exposed == (0,)


def test_leader_unfenced_is_checked_where_elections_can_break_it():
    assert "LeaderUnfenced" in dict(Model(Config(mode="kip966")).invariants)
    assert "LeaderUnfenced" not in dict(Model(Config(mode="kip903")).invariants)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["kafka13141", "kip903", "kafka19522"])
def test_symmetry_keeps_the_verdicts_of_the_new_modes(mode):
    cfg = Config(mode=mode, replicas=3, records=1, crashes=0, disk_losses=1, max_epoch=1)
    plain, reduced = bfs(Model(cfg), all_invariants=True), bfs(Model(cfg), symmetry=True, all_invariants=True)
    assert {t.invariant: t.steps for t in plain.violations} == {t.invariant: t.steps for t in reduced.violations}
    assert reduced.distinct_states < plain.distinct_states


def test_the_stories_of_the_counterexamples_replay():
    for name in ("kafka10554-kafka-13141-loss", "kip966-kafka-19522-fenced-leader",
                 "kafka19522-two-disk-losses-loss", "kafka19522-crash-and-disk-loss"):
        proc = run_cli("replay", CX / f"{name}.itf.json", "--quiet")
        assert proc.returncode == 0 and "broken in the last state" in proc.stdout, proc.stderr


def test_the_html_report_shows_the_elr_and_broker_epochs(tmp_path, browser_page):
    """The 4.1+ disk-loss trace in Chromium: the controller line names ELR, last known leader,
    broker epochs and a replaced disk's offline directory, the history line the disk losses."""
    page = browser_page
    page.goto(_report(tmp_path, CX / "kafka19522-two-disk-losses-loss.itf.json").as_uri())
    page.keyboard.press("End")
    controller = page.inner_text("#controller")
    assert "ELR {}" in controller and "last known leader {}" in controller and "broker epochs r0:1 r1:0" in controller
    assert "disk losses 2" in page.inner_text("#history")
    page.keyboard.press("Home")
    assert "broker epochs r0:0 r1:0" in page.inner_text("#controller")
    for _ in range(11):                     # step 11, restart(r0): back on its new disk, not yet assigned
        page.keyboard.press("ArrowRight")
    assert "directory offline {r0}" in page.inner_text("#controller")
    page.keyboard.press("ArrowRight")       # step 12, assign_dir(r0)
    assert "directory offline" not in page.inner_text("#controller")
    assert page.errors == []
