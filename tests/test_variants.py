"""A user's mode from a Python file (``--mode-file``, checker/variants.py, docs/variants.md): the
example runs through verify and replay with the verdicts bfs gives, every malformed file ends in
one line, and a replaced action function changes what is explored."""

import json
import textwrap

import jsonschema
import pytest

from hwcheck.checker.bfs import bfs
from hwcheck.checker.result import Trace
from hwcheck.checker.trace import to_itf
from hwcheck.cli.jsonout import SCHEMA
from hwcheck.spec import Config, Model
from hwcheck.spec.modes import MODES

from .conftest import ROOT, one_line_error, run_cli, run_cli_here, run_labels

EXAMPLE = ROOT / "docs" / "examples" / "expand_at_hw.py"
# 3 replicas at depth 10: a few seconds, levels large enough for --workers 2 to fork, and the
# example's rule already matters (kip380 has fewer states)
SMALL = ["--replicas", "3", "--records", "1", "--crashes", "1", "--max-epoch", "2", "--max-depth", "10"]
SMALL_CFG = dict(replicas=3, records=1, crashes=1, max_epoch=2)

# the NoCommittedDataLoss trace `hwcheck verify --mode-file docs/examples/expand_at_hw.py --replicas 3
# --records 1 --symmetry` finds (18 steps; 1.1 million state classes, 1.5 minutes): the leader r0 of
# epoch 2 still has HW 0 and lets r2 (LEO 0) into the ISR, although its epoch starts at offset 1
EXPAND_AT_HW_LOSS = [
    ("controlled_shutdown_leader", 0, 1), ("restart", 0), ("become_leader", 1), ("produce", 1),
    ("become_follower", 0), ("send_fetch", 0), ("leader_handle_fetch", 1, 0),
    ("follower_handle_fetch", 0), ("send_fetch", 0), ("leader_handle_fetch", 1, 0), ("shrink_isr", 1, 2),
    ("elect_preferred", 0), ("become_leader", 0), ("become_follower", 2),
    ("send_fetch", 2), ("leader_handle_fetch", 0, 2),
    ("controlled_shutdown_leader", 0, 2), ("become_leader", 2),
]


def _doc_block(marker: str) -> str:
    """The python block of docs/variants.md that starts with ``marker``: the doc's example is the one tested."""
    text = (ROOT / "docs" / "variants.md").read_text()
    start = text.index("```python\n" + marker) + len("```python\n")
    return text[start:text.index("```", start)]


KEEP_LOG = _doc_block("# keep_log.py")


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def doc(proc, code):
    assert proc.returncode == code, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    jsonschema.validate(out, SCHEMA)
    return out


@pytest.fixture(scope="module")
def same_as_example():
    """The example's mode built here, independently of the file loader, under a name of its own
    (a Config takes the Mode itself: nothing is registered)."""
    return MODES["kip380"].variant("test-expand-at-hw", expand_waits_for_epoch_start=False)


# ---------------------------------------------------------------- the example

@pytest.mark.parametrize("extra, symmetry, workers", [
    ([], False, 1), (["--workers", "2"], False, 2), (["--symmetry"], True, 1), (["--symmetry", "--workers", "2"], True, 2),
], ids=["bfs", "workers", "symmetry", "symmetry-workers"])
def test_the_example_verifies_as_bfs_does_with_the_same_rules(same_as_example, extra, symmetry, workers):
    got = doc(run_cli("verify", "--mode-file", EXAMPLE, *SMALL, *extra, "--json"), 0)
    expected = bfs(Model(Config(mode=same_as_example, **SMALL_CFG)), max_depth=10, symmetry=symmetry, workers=1)
    assert got["settings"]["mode"] == "expand-at-hw" and got["settings"]["mode_file"] == str(EXAMPLE)
    assert got["verdict"] == expected.verdict
    assert (got["figures"]["distinct_states"], got["figures"]["depth"]) == (expected.distinct_states, expected.depth)
    assert [(v["invariant"], v["steps"]) for v in got["violations"]] == [
        (t.invariant, t.steps) for t in expected.violations]
    # the file's one rule is in force: kip380 itself explores fewer states within the same bounds
    newest = bfs(Model(Config(mode="kip380", **SMALL_CFG)), max_depth=10, symmetry=symmetry, workers=1)
    assert newest.distinct_states < expected.distinct_states


@pytest.fixture
def example_trace(tmp_path, same_as_example):
    """The example's 18-step loss as hwcheck verify writes it (with #meta.hwcheck.mode_file)."""
    model = Model(Config(mode=same_as_example, replicas=3, records=1, crashes=2, max_epoch=3))
    states = run_labels(model, EXPAND_AT_HW_LOSS)
    assert model.violated(states[-1]) == ["NoCommittedDataLoss"]
    itf = to_itf(model, Trace(states, list(EXPAND_AT_HW_LOSS), "NoCommittedDataLoss"))
    itf["#meta"]["hwcheck"]["config"]["mode"] = "expand-at-hw"
    itf["#meta"]["hwcheck"]["mode_file"] = str(EXAMPLE)
    path = tmp_path / "expand-at-hw-loss.itf.json"
    path.write_text(json.dumps(itf))
    return path


def test_the_example_trace_replays_with_its_mode_file(example_trace):
    proc = run_cli("replay", example_trace, "--mode-file", EXAMPLE, "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "mode=expand-at-hw" in proc.stdout and f"mode_file={EXAMPLE}" in proc.stdout
    assert "replayed 18 steps: NoCommittedDataLoss broken in the last state" in proc.stdout
    # and under kip380 the new leader may not let r2 in
    diff = run_cli("replay", example_trace, "--mode-file", EXAMPLE, "--mode", "kip380")
    assert diff.returncode == 0, diff.stderr
    # (handling r2's Fetch, r0 does not add it to the ISR, so it has no ISR peer to hand over to)
    assert "refused at step 17 of 18: controlled_shutdown_leader(r0,r2): not enabled in mode kip380" in diff.stdout
    assert "breaks under kip380: nothing" in diff.stdout


def test_replay_without_the_mode_file_names_it(example_trace):
    line = one_line_error(run_cli_here("replay", example_trace))
    assert f"replay it with --mode-file {EXAMPLE}" in line and "'expand-at-hw'" in line
    # --focus and --json reach the same line
    assert f"--mode-file {EXAMPLE}" in one_line_error(run_cli_here("replay", example_trace, "--focus"))
    proc = run_cli("replay", example_trace, "--json")
    assert f"--mode-file {EXAMPLE}" in one_line_error(proc) and proc.stdout == ""


def test_a_replaced_action_names_the_built_in_it_replaces():
    from hwcheck.checker.variants import differences
    from hwcheck.spec.actions import produce
    from hwcheck.spec.modes import MODES

    def produce_twice(s, rules, r):
        return produce(s, rules, r)
    mine = MODES["kip380"].variant("twice", actions={"produce": produce_twice})
    assert differences(mine, MODES["kip380"]) == [("action produce", produce, produce_twice)]


def test_the_example_in_hwcheck_modes():
    proc = run_cli("modes", "--mode-file", EXAMPLE)
    assert proc.returncode == 0, proc.stderr
    kafka = MODES["kip380"].kafka + " without KAFKA-7128"
    assert any(line.startswith("expand-at-hw ") and kafka in line for line in proc.stdout.splitlines())
    words = " ".join(proc.stdout.split())
    assert f"a variant of kip380, from {EXAMPLE}" in words
    assert "(this file) expand_waits_for_epoch_start: True -> False" in words
    out = doc(run_cli("modes", "--mode-file", EXAMPLE, "--json"), 0)
    mine = out["modes"][-1]
    assert mine["name"] == "expand-at-hw" and mine["varies"] == "kip380" and mine["mode_file"] == str(EXAMPLE)
    assert mine["differences"] == [{"rule": "expand_waits_for_epoch_start", "base": True, "variant": False}]


# ---------------------------------------------------------------- traces written under a variant

def test_verify_records_the_mode_file_and_replay_needs_it(tmp_path):
    variant = write(tmp_path, "hw_copy.py", 'from hwcheck.spec.modes import MODES\n'
                                         'MODE = MODES["hw"].variant("hw-copy")\n')
    out = tmp_path / "loss.itf.json"
    proc = run_cli("verify", "--mode-file", variant, "--records", "1", "--out", out, "--quiet", cwd=tmp_path)
    expected = bfs(Model(Config(mode="hw", records=1)))
    assert proc.returncode == 1, proc.stderr
    assert f"verdict: violated: NoCommittedDataLoss after {expected.violations[0].steps} steps" in proc.stdout
    assert f"(replay with: hwcheck replay {out} --mode-file {variant})" in proc.stdout
    meta = json.loads(out.read_text())["#meta"]["hwcheck"]
    assert meta["config"]["mode"] == "hw-copy" and meta["mode_file"] == str(variant)
    line = one_line_error(run_cli_here("replay", out))
    assert f"replay it with --mode-file {variant}" in line
    ok = run_cli("replay", out, "--mode-file", variant, "--quiet")
    assert ok.returncode == 0 and "NoCommittedDataLoss broken in the last state" in ok.stdout
    # the default trace name carries the variant's name
    assert run_cli("verify", "--mode-file", variant, "--records", "1", "--quiet", cwd=tmp_path).returncode == 1
    assert (tmp_path / "hwcheck-hw-copy-NoCommittedDataLoss.itf.json").exists()


# ---------------------------------------------------------------- a replaced action

def test_a_replaced_action_changes_what_is_explored(tmp_path):
    """0.10 with a follower that keeps its log: the 11-step loss of truncating to the HW is gone."""
    keep = write(tmp_path, "keep_log.py", KEEP_LOG)
    args = ["--records", "1", "--crashes", "1", "--max-epoch", "2", "--json"]
    hw = doc(run_cli("verify", "--mode", "hw", *args), 0)
    kept = doc(run_cli("verify", "--mode-file", keep, *args), 0)
    assert kept["settings"]["mode"] == "hw-keep-log"
    assert kept["figures"]["distinct_states"] != hw["figures"]["distinct_states"]
    out = tmp_path / "hw.itf.json"
    assert run_cli("verify", "--mode", "hw", "--records", "1", "--out", out, "--quiet").returncode == 1
    assert doc(run_cli("verify", "--mode-file", keep, "--records", "1", "--max-depth", "12", "--json"),
               0)["verdict"] == "holds"
    # the hw trace replayed under the variant (as --mode would): the log survives, nothing is lost
    diff = run_cli("replay", out, "--mode-file", keep)
    assert diff.returncode == 0, diff.stderr
    assert "with its steps run under hw-keep-log" in diff.stdout
    assert "breaks under hw-keep-log: nothing (NoCommittedDataLoss holds throughout)" in diff.stdout


def test_a_failing_action_function_is_one_line(tmp_path):
    bad = write(tmp_path, "bad.py", '''
        from hwcheck.spec.modes import MODES

        def produce(state, rules, r):
            return 1 / 0

        MODE = MODES["hw"].variant("hw-bad", actions={"produce": produce})
    ''')
    line = one_line_error(run_cli_here("verify", "--mode-file", bad, "--records", "1"))
    assert f"{bad}, line 5: action produce(r0) raised ZeroDivisionError: division by zero" in line
    odd = write(tmp_path, "odd.py", '''
        from hwcheck.spec.modes import MODES
        MODE = MODES["hw"].variant("hw-odd", actions={"produce": lambda state, rules, r: "next"})
    ''')
    assert "returned a str, not the next State or None" in one_line_error(run_cli_here("verify", "--mode-file", odd))


# ---------------------------------------------------------------- malformed files: one line, exit 2

GOOD_HEAD = "from hwcheck.spec.modes import MODES\n"
MALFORMED = [
    ("missing", None, "cannot read mode file"),
    ("syntax", GOOD_HEAD + 'MODE = MODES["kip380"].variant(name="x",\n', "line 2: syntax error"),
    ("import error", GOOD_HEAD + "import no_such_module_here\n", "line 2: ModuleNotFoundError: No module named"),
    ("exception", GOOD_HEAD + "x = {}['k']\n", "line 2: KeyError: 'k'"),
    ("exit", "raise SystemExit(3)\n", "line 1: SystemExit: 3"),
    ("no MODE", GOOD_HEAD + "mode = MODES['hw']\n", "defines no MODE"),
    ("not a Mode", "MODE = {'name': 'x'}\n", "MODE is of type dict, not a Mode"),
    ("unknown rule", GOOD_HEAD + 'MODE = MODES["kip380"].variant("x", expand_waits_for_hw=False)\n',
     "unknown rule(s) expand_waits_for_hw; the rules are epochs,"),
    ("built-in name", GOOD_HEAD + 'MODE = MODES["kip380"].variant("kip320")\n',
     "MODE is named 'kip320', the name of a built-in mode"),
    ("alias name", GOOD_HEAD + 'MODE = MODES["kip380"].variant("epoch")\n', "MODE is named 'epoch'"),
    ("unknown action", GOOD_HEAD + 'MODE = MODES["hw"].variant("x", actions={"teleport": print})\n',
     "MODE replaces unknown action 'teleport'"),
    ("not a function", GOOD_HEAD + 'MODE = MODES["hw"].variant("x", actions={"crash": 5})\n',
     "replaces action crash with int 5, not a function"),
    ("not a boolean", GOOD_HEAD + 'MODE = MODES["hw"].variant("x", fenced="yes")\n',
     "rule fenced must be True or False"),
    ("bad name", GOOD_HEAD + 'MODE = MODES["hw"].variant("my mode")\n', "must be a short name"),
]


@pytest.fixture(scope="module")
def hw_trace(tmp_path_factory):
    trace = tmp_path_factory.mktemp("hw") / "t.itf.json"
    assert run_cli("verify", "--mode=hw", "--records=1", "--out", trace, "--quiet").returncode == 1
    return trace


@pytest.mark.parametrize("text, words", [(t, w) for _, t, w in MALFORMED], ids=[n for n, _, _ in MALFORMED])
@pytest.mark.parametrize("command", ["verify", "replay"])
def test_a_malformed_mode_file_is_one_line(tmp_path, hw_trace, command, text, words):
    path = tmp_path / "variant.py"
    if text is not None:
        path.write_text(text)
    args = ["verify", "--mode-file", path, "--records", "1"]
    if command == "replay":
        args = ["replay", hw_trace, "--mode-file", path]
    line = one_line_error(run_cli_here(*args))
    assert words in line and str(path) in line, line


@pytest.mark.parametrize("args, words", [
    (["verify", "--mode", "hw"], "--mode and --mode-file do not combine"),
    (["verify", "--model", "kafka-tla"], "--mode-file applies to --model design only"),
    (["verify", "--liveness"], "--mode-file does not apply to --liveness"),
    (["verify", "--checkpoint", "ck"], "--checkpoint and --resume do not combine with --mode-file"),
])
def test_mode_file_refusals(tmp_path, args, words):
    assert words in one_line_error(run_cli_here(*args, "--mode-file", EXAMPLE, cwd=tmp_path))


# ---------------------------------------------------------------- the other commands and engines

def test_graph_and_gate_take_a_mode_file(tmp_path):
    keep = write(tmp_path, "keep_log.py", KEEP_LOG)
    proc = run_cli("graph", "--mode-file", keep, "--records", "1", "--crashes", "1", "--max-epoch", "1",
                   "--out", tmp_path / "g.json")
    assert proc.returncode in (0, 1), proc.stderr
    assert "mode=hw-keep-log" in proc.stdout and (tmp_path / "g.json").exists()
    gate = write(tmp_path, "g.toml", '[gate.kept]\nmode = "hw-keep-log"\nrecords = 1\nmax_depth = 12\n'
                                     'expect = "holds"\n')
    proc = run_cli("gate", gate, "--mode-file", keep)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok   kept: holds" in proc.stdout
    assert "unknown mode 'hw-keep-log'" in one_line_error(run_cli_here("gate", gate))


def test_z3_refuses_a_variant_it_cannot_encode_in_one_line(tmp_path):
    keep = write(tmp_path, "keep_log.py", KEEP_LOG)
    line = one_line_error(run_cli_here("verify", "--mode-file", keep, "--engine", "z3", "--depth", "3"))
    assert "hw-keep-log" in line and "z3" in line
    line = one_line_error(run_cli_here("prove", "--mode-file", keep, "--invariant", "HwNotAboveLeo"))
    assert "hw-keep-log" in line and "z3" in line


@pytest.mark.slow
def test_spark_runs_a_variant_whose_functions_the_executors_cannot_import(tmp_path):
    """The file is no module the Python workers can import: its functions travel by value."""
    keep = write(tmp_path, "keep_log.py", KEEP_LOG)
    args = ["--mode-file", keep, "--records", "1", "--crashes", "1", "--max-epoch", "2", "--json"]
    local = doc(run_cli("verify", *args), 0)
    spark = doc(run_cli("verify", *args, "--engine", "spark", "--master", "local[2]"), 0)
    assert spark["engine"] == "spark" and spark["verdict"] == local["verdict"]
    assert (spark["figures"]["distinct_states"], spark["figures"]["depth"]) == (
        local["figures"]["distinct_states"], local["figures"]["depth"])


def test_the_loader_docstring_examples_run():
    import doctest

    from hwcheck.checker import variants
    result = doctest.testmod(variants)
    assert result.attempted > 0 and result.failed == 0
