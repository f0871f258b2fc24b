"""hwcheck gate: expected vs got, exit codes, JUnit output, bad files."""

import tomllib
import xml.etree.ElementTree as ET

import pytest

from hwcheck.checker.gate import GateError, parse_gate, run_entry
from hwcheck.spec.modes import LADDER

from .conftest import ROOT, run_cli

SMALL = """
[gate.hw-loss]
description = "KIP-101 scenario 1"
mode = "hw"
records = 1
crashes = 2
max_epoch = 1
expect = "NoCommittedDataLoss"
steps = 12

[gate.epoch-small]
mode = "epoch"
records = 1
crashes = 1
max_epoch = 1
expect = "holds"

[gate.acks-1]
mode = "epoch"
acks = "1"
records = 1
crashes = 1
max_epoch = 1
expect = "NoCommittedDataLoss"
"""


def test_gate_passes_and_writes_junit(tmp_path):
    (tmp_path / "gate.toml").write_text(SMALL)
    proc = run_cli("gate", tmp_path / "gate.toml", "--junit", tmp_path / "j.xml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all 3 verdicts as expected" in proc.stdout
    suite = ET.parse(tmp_path / "j.xml").getroot()
    assert suite.get("tests") == "3" and suite.get("failures") == "0"
    assert [tc.get("name") for tc in suite] == ["hw-loss", "epoch-small", "acks-1"]


@pytest.mark.parametrize("old, new", [
    ('expect = "holds"', 'expect = "NoLogDivergence"'),      # a holding row now expected to break
    ("steps = 12", "steps = 11"),                            # the shortest trace moved
    ('acks = "1"', 'acks = "all"'),                          # the settings changed under the expectation
])
def test_a_moved_verdict_fails_the_gate_and_the_junit_file(tmp_path, old, new):
    (tmp_path / "gate.toml").write_text(SMALL.replace(old, new, 1))
    proc = run_cli("gate", tmp_path / "gate.toml", "--junit", tmp_path / "j.xml")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "MOVED" in proc.stdout and "verdict moved:" in proc.stdout
    suite = ET.parse(tmp_path / "j.xml").getroot()
    assert suite.get("failures") == "1"
    [failed] = [tc for tc in suite if tc.find("failure") is not None]
    assert "expected" in failed.find("failure").get("message")


@pytest.mark.parametrize("text, words", [
    ('[gate.x]\nmode = "hw"\nexpect = "holds"\ncolour = "red"\n', "unknown key(s) colour"),
    ('[gate.x]\nmode = "hw"\nexpect = "Sometimes"\n', "expect must be"),
    ('[gate.x]\nmode = "hw"\nexpect = "holds"\nmin_isr = 5\n', "min_isr=5"),
    ('[gate.x\nmode = "hw"\n', "malformed TOML"),
    ('[other]\nx = 1\n', "no gate entries"),
    ('[gate.x]\nmode = "hw"\nexpect = "holds"\nsteps = "ten"\n', "steps must be"),
    ('[gate.x]\ntrace = "none.json"\nexpect = "holds"\n', "cannot read"),
])
def test_bad_gate_files_exit_2_with_one_line(tmp_path, text, words):
    (tmp_path / "gate.toml").write_text(text)
    proc = run_cli("gate", tmp_path / "gate.toml")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr


def test_gate_never_overwrites_a_junit_file(tmp_path):
    (tmp_path / "gate.toml").write_text(SMALL)
    (tmp_path / "j.xml").write_text("mine")
    proc = run_cli("gate", tmp_path / "gate.toml", "--junit", tmp_path / "j.xml")
    assert proc.returncode == 2 and (tmp_path / "j.xml").read_text() == "mine"


def test_the_projects_matrix_is_valid_and_covers_every_mode_and_knob():
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hwcheck"]["gate"]
    entries = parse_gate(table, ROOT)
    assert {e.config.mode for e in entries} == {m.name for m in LADDER}
    assert any(e.config.unclean_election for e in entries)
    assert any(e.config.power_failures for e in entries)
    assert any(e.config.min_isr > 1 for e in entries)
    assert any(e.config.acks == "1" for e in entries)
    assert any(e.config.response_hw == "before" for e in entries)
    assert any(e.config.replicas >= 3 for e in entries)
    assert any(e.expect == "holds" for e in entries) and any(e.expect != "holds" for e in entries)


LOSS = "counterexamples/hw-data-loss.itf.json"      # KIP-101 scenario 1, 12 steps


def test_an_entry_searches_from_a_step_of_a_trace():
    """``trace`` and ``from_step``: the search starts at the trace's state after that many steps,
    under the trace's mode or another (a differential replay), with the trace's settings."""
    shortest, later, fixed, narrowed = parse_gate({
        "on": {"trace": LOSS, "from_step": 10, "expect": "NoCommittedDataLoss", "steps": 2},
        "later": {"trace": LOSS, "from_step": 11, "expect": "NoCommittedDataLoss", "steps": 1},
        "fixed": {"trace": LOSS, "from_step": 8, "mode": "kip101", "expect": "holds"},
        "narrowed": {"trace": LOSS, "from_step": 8, "expect": "holds", "invariants": ["NoLogDivergence"]},
    }, ROOT)
    assert shortest.config.mode == "hw" and shortest.config.records == 2 and fixed.config.mode == "kip101"
    outcome = run_entry(shortest)
    assert outcome.passed and outcome.got == "NoCommittedDataLoss(2)"
    assert outcome.result.violations[0].states[0] == shortest.start
    assert run_entry(later).passed
    held = run_entry(fixed)       # KIP-101 (0.11) closes scenario 1 from before r1 follows again (step 8)
    assert held.passed and held.result.distinct_states > 1000
    diverges = run_entry(narrowed)                 # hw breaks NoLogDivergence from there too
    assert not diverges.passed and diverges.got == "NoLogDivergence(5)"


@pytest.mark.parametrize("spec, words", [
    ({"from_step": 3, "mode": "hw", "expect": "holds"}, "from_step needs a trace"),
    ({"trace": LOSS, "from_step": 13, "expect": "holds"}, "the trace has steps 0..12"),
    ({"trace": LOSS, "records": 2, "expect": "holds"}, "records: a trace entry takes its settings from the trace"),
    ({"trace": LOSS, "expect": "holds", "engine": "simulate"}, "a trace entry searches with bfs"),
    ({"trace": "counterexamples/kip966-kafka-19522-fenced-leader.itf.json", "from_step": 7, "mode": "kafka19522",
      "expect": "holds"}, "mode kafka19522 does not reach step 7: step 7, elect_offline"),
    ({"trace": 3, "expect": "holds"}, "trace must be a file name"),
    ({"mode": "hw", "expect": "NoLogDivergence", "invariants": ["NoLogDivergence"]}, "invariants applies to"),
    ({"mode": "hw", "expect": "holds", "invariants": ["LeaderUnfenced"]}, "does not check LeaderUnfenced"),
    ({"mode": "hw", "expect": "holds", "invariants": "NoLogDivergence"}, "must be a list"),
])
def test_bad_trace_entries_and_invariant_lists_are_refused(spec, words):
    with pytest.raises(GateError, match=words.replace("(", r"\(").replace(".", r"\.")):
        parse_gate({"x": spec}, ROOT)
