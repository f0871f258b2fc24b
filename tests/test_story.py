"""The story under a trace table (spec/story.py ``Model.story``): told from the curated
counterexamples' states and labels, it names the record, the steps and the mode's rule; the same
lines are printed under the table, in ``--json`` and in the HTML report. Replays only: well under a
second in all."""

import json
import re

import jsonschema
import pytest

from hwcheck.checker.trace import load_itf, replay
from hwcheck.cli.html import report_data
from hwcheck.cli.jsonout import SCHEMA
from hwcheck.cli.render import trace_table
from hwcheck.spec.modes import MODES

from .conftest import ROOT, run_cli_here

CX = ROOT / "counterexamples"
CURATED = sorted(p for p in CX.glob("*.itf.json") if "loop" not in json.loads(p.read_text()))


def _story(name: str):
    done = replay(load_itf((CX / name).read_text()))
    return done, done.model.story(done.trace.states, done.trace.labels, done.violated)


def _line(story, step: str) -> str:
    [line] = [line for line in story if line.startswith(f"step {step}: ")]
    return line


@pytest.mark.parametrize("path", CURATED, ids=lambda p: p.name.split(".")[0])
def test_every_curated_violation_has_a_short_story_in_step_order(path):
    done, story = _story(path.name)
    assert 2 <= len(story) <= 8, story
    steps = [int(re.match(r"step (\d+)(?:-(\d+))?: ", line).group(1)) for line in story]
    assert steps == sorted(steps) and steps[-1] <= done.trace.steps
    # the record or replica the last state's breach names is the one the story is about
    why = done.model.why_broken(done.trace.states[-1], done.trace.invariant)
    named = re.search(r"record \d+|r\d+", why).group(0)
    assert any(named in line for line in story), (why, story)


def test_the_hw_loss_acknowledged_truncated_to_the_hw_and_elected_without_it():
    _, story = _story("hw-data-loss.itf.json")
    assert [line.split(":")[0] for line in story] == ["step 8", "step 10", "step 11-12"]
    assert "acknowledges record 0 at offset 0" in _line(story, "8") and "ISR r0)" in _line(story, "8")
    truncated = _line(story, "10")
    assert "r1 truncates its log to its HW 0 on following r0" in truncated and "losing record 0" in truncated
    # the rule of the mode, with the Kafka source it copies (spec/modes.py HW.changes)
    assert MODES["hw"].changes[0].rule.split(";")[0] in truncated and "ReplicaManager.makeFollowers" in truncated
    assert "r1 becomes leader at epoch 2 (controlled_shutdown_leader(r0,r1)" in _line(story, "11-12")
    assert "record 0, acknowledged at offset 0, is gone" in _line(story, "11-12")


def test_the_same_steps_under_two_releases_cite_each_releases_rule():
    # KAFKA-6361 (kip101) and its 2.0.0 twin (kip279): the follower keeps record 1 at step 18
    for name, ref, source in (("kip101-divergence-kafka-6361", "KIP-101", "LeaderEpochFileCache.endOffsetFor @0.11.0.0"),
                              ("kip279-divergence-2.0.0", "KIP-279", "getOffsetTruncationState @2.0.0")):
        _, story = _story(name + ".itf.json")
        kept = _line(story, "18")
        assert "r0 ends its truncation" in kept and "keeping record 1 (epoch 2) at offset 0" in kept
        assert "where r1 holds record 0 (epoch 1)" in kept and ref in kept and source in kept
        assert "r0 takes HW 2" in _line(story, "21")


def test_a_power_failure_and_an_unclean_registration_lose_the_record_under_kraft():
    _, story = _story("kafka19522-crash-and-power-failure-loss.itf.json")
    assert "r0 loses power: its log falls back to its flushed offset 0, losing record 0" in _line(story, "8")
    left = _line(story, "10")
    assert "r1 leaves the ELR holding record 0 at offset 0 (restart(r1))" in left and "KAFKA-15586" in left
    elected = _line(story, "13-14")
    assert "the last known leader" in elected and "PartitionChangeBuilder.electAnyLeader" in elected


def test_an_old_epoch_response_and_a_fenced_leader_have_their_stories():
    _, story = _story("kafka13141-kafka-18991-old-epoch-response.itf.json")
    assert "r1 (leader, epoch 3) exposes record 0 at offset 0 to consumers" in _line(story, "20")
    assert "losing record 0" in _line(story, "27") and "KAFKA-18991" in _line(story, "27")
    _, story = _story("kip966-kafka-19522-fenced-leader.itf.json")
    assert story[0].startswith("step 6: the controller fences r0")
    assert "the controller elects r0 at epoch 2 while it is fenced" in story[1] and "KAFKA-19522" in story[1]


def test_the_story_is_printed_under_the_table_and_wraps_at_the_width():
    done, story = _story("kip101-divergence-kafka-6361.itf.json")
    text = trace_table(done.model, done.trace, done.violated, width=80).splitlines()
    under = text[text.index("story:") + 1:]
    assert all(len(line) <= 80 for line in under)
    assert all(line.startswith("  step ") or line.startswith("    ") for line in under)
    assert " ".join(part.strip() for part in under) == " ".join(story)     # wrapped, not cut
    done = run_cli_here("replay", str(CX / "hw-data-loss.itf.json"))
    assert done.returncode == 0
    assert "\nstory:\n  step 8: r0 (leader, epoch 1) acknowledges record 0" in done.stdout


def test_the_story_is_in_json_and_the_html_report():
    done = run_cli_here("replay", str(CX / "kip380-acks-1-loss.itf.json"), "--json")
    doc = json.loads(done.stdout)
    jsonschema.validate(doc, SCHEMA)
    replayed, story = _story("kip380-acks-1-loss.itf.json")
    assert doc["story"] == story and "acks=1: on its append" in story[0]
    assert report_data(replayed.model, replayed.trace, "kip380-acks-1-loss")["story"] == story


def test_verify_json_tells_the_story_of_each_violation(tmp_path):
    done = run_cli_here("verify", "--mode=kip380", "--acks=1", "--records=1", "--crashes=1", "--json",
                        "--out", tmp_path / "loss.itf.json")
    doc = json.loads(done.stdout)
    jsonschema.validate(doc, SCHEMA)
    [violation] = doc["violations"]
    assert violation["story"][-1].endswith("record 0, acknowledged at offset 0, is gone")
