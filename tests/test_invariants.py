"""Each invariant names what breaks it (spec/invariants.py ``why_broken``): the record, the offset,
the replicas. Checked on the last state of every curated counterexample."""

import json

import pytest

from hwcheck.checker.trace import load_itf, replay

from .conftest import ROOT

CURATED = sorted(p for p in (ROOT / "counterexamples").glob("*.itf.json") if "loop" not in json.loads(p.read_text()))


@pytest.mark.parametrize("path", CURATED, ids=lambda p: p.name.split(".")[0])
def test_every_broken_invariant_says_what_breaks_it_and_a_holding_one_nothing(path):
    done = replay(load_itf(path.read_text()))
    last = done.trace.states[-1]
    broken = set(done.model.violated(last))
    assert done.trace.invariant in broken
    for name, _ in done.model.invariants:
        why = done.model.why_broken(last, name)
        assert (why is not None) == (name in broken), (name, why)
        if why is not None:
            assert "offset" in why or "fenced" in why or "LEO" in why, why


def test_the_cells_at_fault_are_those_the_explanation_names():
    done = replay(load_itf((ROOT / "counterexamples" / "kip380-unclean-min-isr-2-divergence.itf.json").read_text()))
    last = done.trace.states[-1]
    cells = done.model.broken_cells(last, "NoLogDivergence")
    o = cells[0][1]
    assert cells == [(0, o), (1, o)] and f"differ at offset {o}" in done.model.why_broken(last, "NoLogDivergence")
    assert done.model.broken_cells(done.trace.states[0], "NoLogDivergence") == []


@pytest.mark.parametrize("name, invariant, words", [
    ("hw-divergence", "NoLogDivergence", "r0 and r1 differ at offset"),
    ("kafka13141-kafka-14704-follower-read", "ConsumerConsistency", "follower with HW"),
    ("kip966-kafka-19522-fenced-leader", "LeaderUnfenced", "while it is fenced"),
    ("kip380-power-failure-min-isr-2-loss", "NoCommittedDataLoss", "acknowledged at offset"),
])
def test_the_explanation_of_each_invariant(name, invariant, words):
    done = replay(load_itf((ROOT / "counterexamples" / f"{name}.itf.json").read_text()))
    assert words in done.model.why_broken(done.trace.states[-1], invariant)


def test_a_trace_table_says_what_clients_saw_marks_changes_and_fits_a_terminal():
    """The newcomer's 3-replica table was over 200 columns; in a 120-column terminal it keeps every
    step, what clients saw and what breaks, and says what it left out (--wide: everything)."""
    from hwcheck.cli.render import trace_table
    done = replay(load_itf((ROOT / "counterexamples" / "kafka19522-3-replicas-crash-and-power-failure-loss.itf.json")
                           .read_text()))
    wide = trace_table(done.model, done.trace, ["NoCommittedDataLoss"]).splitlines()
    assert max(map(len, wide)) > 120
    narrow = trace_table(done.model, done.trace, ["NoCommittedDataLoss"], width=120).splitlines()
    assert max(map(len, narrow)) <= 120
    text = " ".join(narrow)
    assert "left out to fit 120 columns" in text and "NoCommittedDataLoss: record 0, acknowledged at offset" in text
    rows = [line for line in narrow if line[:2].strip().isdigit()]
    assert len(rows) == len(done.trace.states)
    acked = [row for row in rows if " ack" in row]
    assert acked and all("#" in row for row in acked)
    assert all("*" in row for row in rows[1:] if not row.split()[1].startswith(("send_", "leader_handle_fetch")))
    # narrower than the compact table: its rows stay whole (only the lines under it wrap)
    tiny = trace_table(done.model, done.trace, ["NoCommittedDataLoss"], width=60).splitlines()
    assert [line for line in tiny if line[:2].strip().isdigit()] == [row for row in rows]
