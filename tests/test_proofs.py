"""proofs/: each kept lemma file still proves its goals under its own settings (one z3 query, as
``prove --lemmas`` checks it), the same lemmas prove nothing in a mode where a goal is violated,
and the README lists every file."""

import json
from pathlib import Path

import pytest

from hwcheck.checker.bfs import bfs
from hwcheck.checker.houdini import HOLDS, check_lemmas, proof_model
from hwcheck.checker.lemma_file import read_back, read_back_what_it_can, settings

from .conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent
PROOFS = sorted((ROOT / "proofs").glob("*.json"))


def _load(path):
    doc = json.loads(path.read_text())
    return doc, proof_model(settings(doc))


def test_there_are_proofs_and_the_readme_lists_each():
    assert PROOFS
    readme = (ROOT / "proofs" / "README.md").read_text()
    for path in PROOFS:
        assert f"({path.name})" in readme, path.name


# the proof a user is most likely to check again is checked through the command line (`prove
# --lemmas`), the others through the library: each is one z3 query, run once
BY_CLI = "epoch-records-1-crashes-1-NoLogDivergence-NoCommittedDataLoss-ConsumerConsistency"


@pytest.mark.slow
@pytest.mark.parametrize("path", PROOFS, ids=[p.stem for p in PROOFS])
def test_a_kept_proof_still_proves(path):
    doc, model = _load(path)
    if path.stem == BY_CLI:
        assert doc["config"]["mode"] in ("epoch", "kafka19522") and doc["config"]["records"] == 1
        r = run_cli("prove", "--mode", "kafka19522", "--records", "1", "--crashes", "1", "--invariant", "NoLogDivergence",
                    "--lemmas", path)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "verdict: holds at every depth" in r.stdout
        checked = next(line for line in r.stdout.splitlines() if line.startswith("property:"))
        assert all(goal in checked for goal in ("NoLogDivergence", "NoCommittedDataLoss", "ConsumerConsistency"))
        return
    goals, lemmas = read_back(model, doc)
    d = check_lemmas(model, goals, lemmas)
    assert d.verdict == HOLDS, (d.verdict, d.rejected or (d.cti and d.cti.broken) or d.violated_in)


@pytest.mark.slow
@pytest.mark.parametrize("name, where", [
    ("epoch-records-1-crashes-1-NoLogDivergence-NoCommittedDataLoss-ConsumerConsistency", dict(mode="hw", crashes=2)),
    ("epoch-records-1-crashes-1-NoLogDivergence-NoCommittedDataLoss-ConsumerConsistency",
     dict(mode="kafka13141", records=2, crashes=2))])
def test_the_same_lemmas_prove_nothing_where_the_invariant_breaks(name, where):
    """Sanity: the lemmas of a proof, rebuilt where bfs finds its invariant violated, are no proof
    there: z3 finds a step that breaks the conjunction, or a lemma is false in the initial state.
    The epoch proof at one crash, in hw at two crashes (KIP-101's first scenario loses an acknowledged
    record) and in kafka13141 (2.8-3.4.0) at the defaults, where the log diverges: the follower
    applies the HW of a diverging response before it truncates (KAFKA-14704). Its lemmas over what
    the older mode lacks (broker epochs, ELR) have nothing to say there and are left out. (The hw
    proof at one crash, checked here too until the HW came to wait for caught-up followers, was not
    found again: proofs/README.md.)"""
    doc, _ = _load(ROOT / "proofs" / f"{name}.json")
    doc = dict(doc, config=dict(doc["config"], **where))
    model = proof_model(settings(doc))
    goals, lemmas, left_out = read_back_what_it_can(model, doc)
    assert name.endswith("-".join(goals)) and bfs(model, only=goals).violations
    assert len(lemmas) > len(left_out)
    assert bool(left_out) == ("mode" in where)
    d = check_lemmas(model, goals, lemmas)
    assert d.verdict != HOLDS
    assert d.rejected or d.cti.broken
