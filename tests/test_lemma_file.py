"""checker/lemma_file.py and ``prove --save-lemmas`` / ``prove --lemmas``: a proof's lemmas saved,
read back and checked by one z3 query."""

import json

from hwcheck.checker.cubes import blocking_clause
from hwcheck.checker.houdini import HOLDS, NOT_INDUCTIVE, Lemma, check_lemmas, discover
from hwcheck.checker.lemma_file import LemmaFileError, read_back, to_json
from hwcheck.checker.symbolic import CONCRETE, Encoding
from hwcheck.spec import Config, Model
from hwcheck.spec.lemmas.atoms import scalars

import pytest

from .conftest import exact_reachable, one_line_error, run_cli, run_cli_here

TINY = ["--mode", "hw", "--records", "1", "--crashes", "0"]


def test_learned_and_template_lemmas_read_back_to_the_same_proof():
    """Blocking clauses (learned from counterexamples) and template lemmas survive the file: the
    rebuilt lemmas have the same names, mean the same on every reachable state, and prove the goal
    again by one query."""
    model = Model(Config(mode="epoch", records=1, crashes=0))
    d = discover(model, ["NoLogDivergence"], families=["scalar-order", "clause"], learn=400)
    assert d.verdict == HOLDS
    doc = json.loads(json.dumps(to_json(model, d)))           # through the text, as the CLI writes it
    assert {e["family"] for e in doc["lemmas"]} >= {"blocking", "scalar-order"}
    goals, lemmas = read_back(model, doc)
    assert goals == ["NoLogDivergence"]
    assert [lem.name for lem in lemmas] == [lem.name for lem in d.survivors]
    cenc = Encoding(model, CONCRETE)
    for s in exact_reachable(model):
        v = cenc.of_state(s)
        assert [lem.term(cenc, v) for lem in lemmas] == [lem.term(cenc, v) for lem in d.survivors]
    assert check_lemmas(model, goals, lemmas).verdict == HOLDS


def test_a_lemma_set_that_is_not_inductive_is_no_proof():
    model = Model(Config(mode="epoch", records=1, crashes=0))
    d = discover(model, ["NoLogDivergence"], families=["scalar-order", "clause"], learn=400)
    # without the learned clauses the rest is not inductive: z3's step breaks the goal or a lemma
    rest = [lem for lem in d.survivors if lem.family != "blocking"]
    c = check_lemmas(model, ["NoLogDivergence"], rest)
    assert c.verdict == NOT_INDUCTIVE and c.cti.broken
    cenc = Encoding(model, CONCRETE)
    after = cenc.of_state(c.cti.after)
    conjuncts = {lem.name: lem for lem in rest}
    for name in c.cti.broken:                                  # each named conjunct is false after the step
        holds = conjuncts[name].term(cenc, after) if name in conjuncts else (
            cenc.bounds_ok(after) if name == "EncodingBounds" else cenc.invariant(name, after))
        assert not holds, name
    # a lemma false in the initial state is rejected before z3: "not (r0 leo = 0)"
    names = [name for name, _, _ in scalars(cenc, cenc.of_state(model.init_states()[0]))]
    name, term = blocking_clause(names, [(("v", names.index("r0 leo"), 0), True)])
    bad = Lemma(name, "blocking", term)
    assert bad.name == "not (r0 leo = 0)"
    c = check_lemmas(model, ["NoLogDivergence"], d.survivors + [bad])
    assert c.verdict == NOT_INDUCTIVE and list(c.rejected) == [bad.name] and c.cti is None


def test_a_file_for_other_settings_or_another_version_is_refused():
    model = Model(Config(mode="hw", records=1, crashes=0))
    d = discover(model, ["NoLogDivergence"])
    doc = to_json(model, d)
    with pytest.raises(LemmaFileError, match="other settings"):
        read_back(Model(Config(mode="hw", records=1, crashes=1)), doc)
    renamed = json.loads(json.dumps(doc))
    renamed["lemmas"][0]["name"] += " (renamed)"
    with pytest.raises(LemmaFileError, match="cannot build it"):
        read_back(model, renamed)
    flipped = json.loads(json.dumps(doc))
    clause = next(e for e in flipped["lemmas"] if e["family"] == "clause")
    clause["literals"][0][1] = not clause["literals"][0][1]
    with pytest.raises(LemmaFileError, match="reads back as"):
        read_back(model, flipped)
    with pytest.raises(LemmaFileError, match="not a lemma file"):
        read_back(model, {"lemmas": []})


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """``prove --discover --save-lemmas`` once for this module's tests (about 8 s): the file and
    the run's output."""
    path = tmp_path_factory.mktemp("lemmas") / "lemmas.json"
    r = run_cli("prove", *TINY, "--invariant", "NoLogDivergence", "--discover", "--save-lemmas", path)
    assert r.returncode == 0, r.stdout + r.stderr
    return path, r.stdout


def test_cli_save_then_check(saved, tmp_path):
    path, out = saved
    assert f"lemmas saved to {path}" in out
    text = path.read_text()
    # the file is the user's now: not replaced without --force
    err = one_line_error(run_cli_here("prove", *TINY, "--invariant", "NoLogDivergence", "--discover",
                                      "--save-lemmas", path))
    assert "exists" in err and path.read_text() == text
    r = run_cli("prove", *TINY, "--invariant", "NoLogDivergence", "--lemmas", path)
    assert r.returncode == 0, r.stdout + r.stderr
    lemmas = len(json.loads(text)["lemmas"])
    assert f"the property and {lemmas} lemmas hold in the initial state and are 1-inductive" in r.stdout
    # the same lemmas with one learned away: the CLI shows the counterexample to induction
    doc = json.loads(text)
    doc["lemmas"] = [e for e in doc["lemmas"] if e["family"] not in ("lookahead", "history", "prefix-agreement",
                                                                       "clause", "implication")]
    weak = tmp_path / "weak.json"
    weak.write_text(json.dumps(doc))
    r = run_cli("prove", *TINY, "--invariant", "NoLogDivergence", "--lemmas", weak)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "are not inductive" in r.stdout and "counterexample to induction:" in r.stdout


def test_cli_lemma_file_errors(saved, tmp_path):
    path, _ = saved
    err = one_line_error(run_cli_here("prove", "--mode", "hw", "--records", "1", "--invariant", "NoLogDivergence",
                                      "--lemmas", path))
    assert "found under crashes=0; this run has crashes=2" in err
    assert "not NoCommittedDataLoss" in one_line_error(
        run_cli("prove", *TINY, "--invariant", "NoCommittedDataLoss", "--lemmas", path))
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert str(bad) in one_line_error(run_cli_here("prove", *TINY, "--invariant", "NoLogDivergence", "--lemmas", bad))
    assert "cannot read" in one_line_error(
        run_cli("prove", *TINY, "--invariant", "NoLogDivergence", "--lemmas", tmp_path / "none.json"))
    assert "--discover" in one_line_error(
        run_cli("prove", *TINY, "--invariant", "NoLogDivergence", "--lemmas", path, "--discover"))
    assert "goes with --discover" in one_line_error(
        run_cli("prove", *TINY, "--invariant", "NoLogDivergence", "--save-lemmas", tmp_path / "x.json"))
    assert not (tmp_path / "x.json").exists()


VARIANT = '''
from hwcheck.spec.modes import MODES

MODE = MODES["hw"].variant("my-hw", isr_only_live=True)
'''


def test_cli_save_then_check_under_a_mode_file(tmp_path):
    """A proof found under a variant reads back under the run's --mode-file (its mode is registered
    nowhere, so the file's mode name alone could not rebuild the settings); the file records where
    the variant came from, and a run without --mode-file is told."""
    variant, path = tmp_path / "v.py", tmp_path / "lemmas.json"
    variant.write_text(VARIANT)
    tiny = ["--mode-file", variant, "--records", "1", "--crashes", "0", "--invariant", "NoLogDivergence"]
    r = run_cli("prove", *tiny, "--discover", "--save-lemmas", path)
    assert r.returncode == 0, r.stdout + r.stderr
    saved = json.loads(path.read_text())
    assert saved["config"]["mode"] == "my-hw" and saved["mode_file"] == str(variant.resolve())
    r = run_cli("prove", *tiny, "--lemmas", path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "are 1-inductive" in r.stdout
    err = one_line_error(run_cli_here("prove", *TINY, "--invariant", "NoLogDivergence", "--lemmas", path))
    assert "unknown mode 'my-hw'" in err and f"--mode-file {variant.resolve()}" in err
