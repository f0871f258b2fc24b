"""hwcheck simulate (issue 15): reproducible random walks, shrinking, the swarm, the gate's
simulate entries, and the command line's answers to bad input and Ctrl-C."""

import json
import os
import re
import shutil
import sys

import pytest

from hwcheck.checker.focus import replays_to
from hwcheck.checker.gate import GateError, parse_gate, run_entry
from hwcheck.checker.shrink import OnlyActions, shrink_trace, without_loops
from hwcheck.checker.simulate import SimulationError, replay_walk, run_walks, simulate
from hwcheck.spec import Config, Model

from .conftest import one_line_error, run_cli, run_cli_here
from .test_interrupts import _ctrl_c, _no_traceback, _start

PF = Config(mode="hw", power_failures=1, crashes=0)      # found within a few hundred walks


def _figures(r):
    return (r.verdict, r.walks, r.generated_states, r.distinct_states, r.depth, r.coverage, r.walk_index,
            r.original_steps, [m for m in (r.violations[0].labels if r.violations else [])])


def test_same_seed_same_walks_with_one_and_two_workers():
    m = Model(PF)
    one = simulate(m, runs=2000, depth=30, seed=4, workers=1)
    two = simulate(m, runs=2000, depth=30, seed=4, workers=2)
    assert one.verdict == "violated" and one.walk_index == 41       # in the second range of 32 walks
    assert _figures(one) == _figures(two)
    other = simulate(m, runs=2000, depth=30, seed=5, workers=1)
    assert _figures(other) != _figures(one)


def test_a_run_without_violation_counts_the_same_with_any_workers():
    m = Model(Config(mode="epoch", records=1))
    one = simulate(m, runs=300, depth=20, seed=0, workers=1)
    two = simulate(m, runs=300, depth=20, seed=0, workers=2)
    assert one.verdict == two.verdict == "holds" and one.walks == 300 and not one.complete
    assert _figures(one) == _figures(two)
    assert sum(one.coverage.values()) == one.generated_states - one.walks     # every step counted once
    assert one.distinct_states <= one.generated_states and one.depth <= 20


def test_walks_are_a_function_of_seed_and_index_only():
    m = Model(PF)
    whole = run_walks(m, 0, 60, depth=30, seed=4)
    part = run_walks(m, 40, 60, depth=30, seed=4)
    assert whole.found is not None and whole.found.walk == 41
    assert part.found.labels == whole.found.labels


def test_a_step_is_drawn_uniformly_among_the_enabled_ones():
    """first_enabled tries labels in a random order: it only takes enabled steps, and each about
    equally often (the walk's law is that of picking among every successor)."""
    from collections import Counter
    import random
    from hwcheck.checker.simulate import first_enabled
    m = Model(Config(mode="hw", records=1))
    s = m.init_states()[0]
    enabled = {label for label, _ in m.successors(s)}
    rng = random.Random(0)
    counts = Counter(first_enabled(rng, s, m.moves)[0] for _ in range(4000))
    assert set(counts) == enabled and len(enabled) < len(m.moves)
    assert all(abs(n - 4000 / len(enabled)) < 0.15 * 4000 / len(enabled) for n in counts.values())


def test_coverage_names_what_never_fired():
    m = Model(Config(mode="hw", records=1))
    r = simulate(m, runs=20, depth=1, seed=0, swarm=False)
    # before 2.1 a stuck follower may leave the ISR at once, at the leader's LEO (shrink_isr)
    assert set(r.coverage) <= {"produce", "send_fetch", "crash", "controlled_shutdown", "controlled_shutdown_leader",
                               "session_expire", "elect_preferred", "shrink_isr"}
    assert set(r.never_fired) == set(m.action_names) - set(r.coverage)
    assert "follower_handle_fetch" in r.never_fired


def test_shrunk_trace_replays_and_breaks_the_same_invariant():
    m = Model(PF)
    r = simulate(m, runs=2000, depth=30, seed=3, shrink=False)
    walk = r.violations[0]
    short, note = shrink_trace(m, walk)
    assert short.invariant == walk.invariant == "NoCommittedDataLoss"
    assert short.steps < walk.steps
    again = replays_to(m, short.labels, short.invariant)
    assert again is not None and again.steps == short.steps and again.states[-1] == short.states[-1]
    assert note.startswith("bfs")


def test_shrinking_finds_the_bfs_shortest_of_the_hw_loss():
    """hw with one record: walk 255 of seed 23 is 14 steps; shrinking gives 12, the gate's bfs length
    (seed 23: the smallest whose 1,000 walks find it since a bounce the controller missed gets no
    LeaderAndIsr; seeds 0-22 find nothing)."""
    r = simulate(Model(Config(mode="hw", records=1)), runs=1000, depth=50, seed=23, only=["NoCommittedDataLoss"])
    assert r.walk_index == 255 and r.original_steps == 14 and r.shrunk_steps == 12


def test_without_loops_cuts_returns_to_a_state():
    from hwcheck.checker.result import Trace
    t = Trace([0, 1, 2, 1, 0, 3, 4], ["a", "b", "c", "d", "e", "f"], "X")
    cut = without_loops(None, t)
    assert cut.states == [0, 3, 4] and cut.labels == ["e", "f"]


def test_only_actions_restricts_the_successors():
    m = OnlyActions(Model(Config(mode="hw", records=1)), {"produce", "crash"})
    assert {label[0] for label, _ in m.successors(m.init_states()[0])} == {"produce", "crash"}
    assert {label[0] for label, _, _ in m.moves} == {"produce", "crash"}       # what a walk draws from
    assert set(simulate(m, runs=20, depth=5, seed=0, shrink=False).coverage) <= {"produce", "crash"}


def test_replay_walk_rebuilds_the_states():
    m = Model(PF)
    found = run_walks(m, 0, 60, depth=30, seed=4).found
    t = replay_walk(m, found)
    assert t.steps == len(found.labels) and t.invariant == found.invariant
    assert not dict(m.invariants)[t.invariant](t.states[-1])


@pytest.mark.slow
def test_the_swarm_finds_what_uniform_walks_do_not():
    """hw, one record: 10,000 uniform walks miss the 11-step loss; the swarm finds it (seed 4, walk
    9,449: the smallest seed whose 10,000 swarm walks find it since a stuck follower leaves the ISR
    at the leader's LEO before 2.1; seed 2 since the HW waits for caught-up followers, seed 1 since
    walks drew their steps lazily)."""
    m = Model(Config(mode="hw", records=1))
    swarm = simulate(m, runs=10000, depth=40, seed=4, workers=2, shrink=False, only=["NoCommittedDataLoss"])
    uniform = simulate(m, runs=10000, depth=40, seed=4, workers=2, swarm=False, only=["NoCommittedDataLoss"])
    assert swarm.verdict == "violated" and uniform.verdict == "holds" and uniform.walks == 10000


@pytest.mark.parametrize("settings", [dict(runs=0), dict(depth=0), dict(runs=None), dict(time_limit=-1),
                                      dict(workers=0)])
def test_settings_no_run_can_take(settings):
    with pytest.raises(SimulationError):
        simulate(Model(PF), **{"runs": 10, "depth": 10, **settings})


# ------------------------------------------------------------------ the gate
def test_gate_entry_with_engine_simulate():
    entries = parse_gate({
        "loss": {"mode": "hw", "power_failures": 1, "crashes": 0, "expect": "NoCommittedDataLoss", "steps": 7,
                 "engine": "simulate", "runs": 2000, "depth": 30, "seed": 3},
        "quiet": {"mode": "epoch", "records": 1, "expect": "holds", "engine": "simulate", "runs": 200, "depth": 20},
    })
    loss, quiet = (run_entry(e) for e in entries)
    assert loss.passed and loss.got == "NoCommittedDataLoss(7)"
    assert quiet.passed and quiet.result.walks == 200


@pytest.mark.parametrize("bad, words", [({"engine": "z3"}, "engine must be one of"),
                                        ({"engine": "simulate", "max_depth": 3}, "max_depth does not apply"),
                                        ({"runs": 5}, "runs does not apply to engine bfs"),
                                        ({"engine": "simulate", "depth": 0}, "depth must be a positive integer")])
def test_gate_refuses_a_bad_simulate_entry(bad, words):
    with pytest.raises(GateError, match=words):
        parse_gate({"x": {"mode": "hw", "expect": "holds", **bad}})


def test_gate_command_runs_a_simulate_entry(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.hwcheck.gate.walks]\nmode = "hw"\nacks = "1"\nexpect = "NoCommittedDataLoss"\nsteps = 3\n'
        'engine = "simulate"\nruns = 200\nseed = 1\n')
    p = run_cli("gate", "--quiet", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr


# ------------------------------------------------------------------ the command line
def test_cli_writes_a_shrunk_trace_that_replays(tmp_path):
    out, html = tmp_path / "t.itf.json", tmp_path / "t.html"
    p = run_cli("simulate", "--mode", "hw", "--power-failures", "1", "--crashes", "0", "--seed", "3",
                "--runs", "2000", "--depth", "30", "--workers", "1", "--out", out, "--html", html)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "verdict: violated: NoCommittedDataLoss in walk 21 after 13 steps" in p.stdout
    assert "shrunk to 7 steps (bfs" in p.stdout and "coverage: " in p.stdout
    doc = json.loads(out.read_text())
    assert len(doc["states"]) == 8 and doc["#meta"]["hwcheck"]["engine"] == "simulate"
    assert html.read_text().startswith("<!DOCTYPE html>")
    again = run_cli("replay", out)
    assert again.returncode == 0 and "NoCommittedDataLoss broken in the last state" in again.stdout


def test_json_document_of_a_violation_and_of_a_run_without_one(tmp_path):
    import jsonschema
    from hwcheck.cli.jsonout import SCHEMA
    out = tmp_path / "t.itf.json"
    found = run_cli_here("simulate", "--mode", "hw", "--power-failures", "1", "--crashes", "0", "--seed", "3",
                         "--runs", "2000", "--depth", "30", "--workers", "1", "--out", out, "--json")
    doc = json.loads(found.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert (doc["exit_code"], doc["verdict"], doc["seed"], doc["seed_random"]) == (1, "violated", 3, False)
    story = doc["violations"][0].pop("story")      # how it came about (tests/test_story.py)
    assert doc["violations"] == [{"invariant": "NoCommittedDataLoss", "walk": 21, "walk_steps": 13, "steps": 7,
                                  "found_after_s": doc["violations"][0]["found_after_s"],
                                  "shrink_note": doc["violations"][0]["shrink_note"], "trace": str(out)}]
    assert story and story[-1].endswith("is gone")
    none = json.loads(run_cli_here("simulate", "--mode", "epoch", "--records", "1", "--runs", "20", "--depth", "8",
                                   "--workers", "1", "--json").stdout)
    jsonschema.validate(none, SCHEMA)
    assert none["verdict"] == "no-violation" and none["seed_random"] and none["figures"]["walks"] == 20
    assert none["coverage"]["produce"] >= 1 and none["violations"] == []


def test_cli_without_violation_says_it_proves_nothing(tmp_path):
    p = run_cli("simulate", "--mode", "epoch", "--records", "1", "--runs", "50", "--depth", "10",
                "--workers", "1", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "verdict: no violation in 50 walks" in p.stdout and "proves nothing" in p.stdout
    assert "figures: 50 walks" in p.stdout and not list(tmp_path.iterdir())


def test_without_seed_a_run_draws_one_prints_it_and_the_printed_seed_repeats_it(tmp_path):
    import re
    args = ["simulate", "--mode", "epoch", "--records", "1", "--runs", "30", "--depth", "12", "--workers", "1"]
    first = run_cli_here(*args, cwd=tmp_path)
    seed = re.search(r"seed (\d+) \(random; --seed (\d+) repeats this run\)", first.stdout)
    assert seed and seed.group(1) == seed.group(2), first.stdout
    again = run_cli_here(*args, "--seed", seed.group(1), cwd=tmp_path)
    visited = [re.search(r"figures: (30 walks, [\d,]+ states visited \([\d,]+ distinct\))", p.stdout).group(1)
               for p in (first, again)]
    assert visited[0] == visited[1] and "(random" not in again.stdout


@pytest.mark.parametrize("args, words", [
    (["--depth", "0"], "depth=0"),
    (["--runs", "0"], "runs=0"),
    (["--seed", "abc"], "'abc' is not a valid integer"),
    (["--time", "0"], "time=0"),
    (["--workers", "0"], "workers=0"),
    (["--master", "local[2]"], "--master applies to --engine spark only"),
    (["--invariant", "Nope"], "unknown invariant 'Nope'"),
    (["--quiet", "--verbose"], "exclude each other"),
])
def test_cli_bad_input_is_one_line(args, words):
    line = one_line_error(run_cli_here("simulate", "--mode", "hw", *args))
    assert words in line


def test_cli_refuses_to_overwrite(tmp_path):
    out = tmp_path / "t.itf.json"
    out.write_text("mine")
    line = one_line_error(run_cli_here("simulate", "--mode", "hw", "--acks", "1", "--out", out))
    assert "exists" in line and out.read_text() == "mine"


def test_cli_spark_without_java_is_one_line(tmp_path):
    """A PATH with the shell tools pyspark's launcher needs and no java, JAVA_HOME unset."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in ("bash", "sh", "env", "dirname", "basename", "uname", "ps", "cat", "head", "tail", "sed", "grep",
                 "awk", "readlink", "ls", "rm", "mkdir", "mktemp"):
        found = shutil.which(tool)
        if found:
            (bin_ / tool).symlink_to(found)
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    env.update(PATH=str(bin_), TMPDIR=str(tmp_path))
    import subprocess
    p = subprocess.run([sys.executable, "-m", "hwcheck.cli", "simulate", "--engine", "spark", "--runs", "5"],
                       capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=300)
    assert "Java" in one_line_error(p)


@pytest.mark.slow
def test_spark_local2_gives_the_same_walks(tmp_path):
    outs = []
    for extra in (["--workers", "1"], ["--engine", "spark", "--master", "local[2]"]):
        out = tmp_path / f"{extra[-1]}.itf.json"
        p = run_cli("simulate", "--mode", "hw", "--power-failures", "1", "--crashes", "0", "--seed", "3",
                    "--runs", "2000", "--depth", "30", "--quiet", "--out", out, *extra, cwd=tmp_path)
        assert p.returncode == 1, p.stdout + p.stderr
        figures = [re.sub(r"found in [0-9.]+ s", "", line) for line in p.stdout.splitlines()
                   if line.startswith(("verdict:", "coverage:", "figures:"))]
        figures[-1] = re.sub(r", [0-9,]+ walks/s.*", "", figures[-1])     # walks, states visited, distinct, deepest
        outs.append((figures, json.loads(out.read_text())["states"]))
    assert outs[0] == outs[1]


def test_ctrl_c_says_what_was_covered(tmp_path):
    child = _start("simulate", "--mode", "epoch", "--replicas", "3", "--time", "300", "--workers", "2", "--verbose",
                   cwd=tmp_path)
    code, out, err = _ctrl_c(child, child.stderr, until=lambda line: "simulate" in line, after=1.0)
    _no_traceback(out, err)
    assert code == 130, out + err
    [line] = [x for x in out.splitlines() if x.startswith("interrupted:")]
    assert "walks" in line and "no violation among them" in line
