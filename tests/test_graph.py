"""The state graph: symmetry quotient, chains, SCCs, export, liveness lassos, trace focusing."""

import itertools
import json

import click
import networkx as nx
import pytest
from click.testing import CliRunner

from hwcheck.checker.bfs import bfs
from hwcheck.checker.focus import focus, replays_to
from hwcheck.checker.graph import (compress_chains, concrete_trace, condense, explore, GraphTooLarge,
                                   mark_violations, shortest_violation, symmetry_quotient)
from hwcheck.checker.liveness import check_liveness, lasso_to_itf, lasso_violates, replay_lasso
from hwcheck.spec.liveness import follower_hw_caught_up
from hwcheck.checker.trace import TraceError, load_itf, replay, to_itf
from hwcheck.spec import Config, Model

from hwcheck.cli.main import cli

from .conftest import ROOT, one_line_error, run_cli, run_cli_here

CX = ROOT / "counterexamples"


# ------------------------------------------------------------------ symmetry quotient

def json_canonical(model, state) -> str:
    """An independent canonicalisation: rename replica names inside the ITF JSON of a state
    under every permutation that keeps r0 (the preferred replica) and keep the least serialisation."""
    doc = model.to_json(state)
    n = model.cfg.replicas
    best = None
    for perm in itertools.permutations(range(n)):
        if perm[0] != 0:
            continue
        name = {f"r{r}": f"r{perm[r]}" for r in range(n)}

        def ren(x):
            return None if x is None else name[x]

        replicas = {}
        for r, v in doc["replicas"].items():
            v = dict(v, leader=ren(v["leader"]))
            if "isr" in v:
                v["isr"] = sorted(ren(x) for x in v["isr"]["#set"])
                v["remote_leo"] = {ren(f): o for f, o in v["remote_leo"].items()}
                v["remote_fetch_leo"] = {ren(f): o for f, o in v["remote_fetch_leo"].items()}
                v["remote_caught_up"] = sorted(ren(x) for x in v["remote_caught_up"]["#set"])
            replicas[ren(r)] = v
        c = doc["controller"]
        out = {"replicas": replicas, "history": doc["history"],
               "controller": {"leader": ren(c["leader"]), "epoch": c["epoch"],
                              "isr": sorted(ren(x) for x in c["isr"]["#set"]),
                              "live": sorted(ren(x) for x in c["live"]["#set"])},
               "inflight": {ren(f): dict(m, leader=ren(m["leader"])) for f, m in doc["inflight"].items()},
               "stale": {ren(f): dict(m, leader=ren(m["leader"])) for f, m in doc["stale"].items()}}
        text = json.dumps(out, sort_keys=True)
        if best is None or text < best:
            best = text
    return best


@pytest.mark.slow
def test_symmetry_quotient_on_three_replicas_counts_the_canonical_states_and_keeps_the_verdict():
    # kip320 (182,271 states, about 100 s here): hw's space grew to 322,714 (199 s in a CI run) once a
    # stuck follower leaves the ISR at the leader's LEO before 2.1; both lose an acks=1 record in 3 steps
    model = Model(Config(mode="kip320", replicas=3, records=1, crashes=1, max_epoch=1, acks="1"))
    g = explore(model)
    q = symmetry_quotient(g, model)
    # independent: every reachable state (own search through successors), canonicalised on JSON
    seen, todo = set(), list(model.init_states())
    seen.update(todo)
    while todo:
        s = todo.pop()
        for _, t in model.successors(s):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    assert len(seen) == g.number_of_nodes()
    classes = {json_canonical(model, s) for s in seen}
    assert q.number_of_nodes() == len(classes) < g.number_of_nodes()
    # the verdict: same broken invariants, same shortest length, a replayable concrete trace
    result = bfs(model)
    assert result.verdict == "violated"
    names = lambda h: {n for _, d in h.nodes(data=True) for n in d["violated"]}  # noqa: E731
    assert names(q) == names(g) and "NoCommittedDataLoss" in names(g)
    steps, path = shortest_violation(q)
    assert steps == shortest_violation(g)[0] == result.violations[0].steps
    trace = concrete_trace(model, q, path, "NoCommittedDataLoss")
    assert replays_to(model, trace.labels, "NoCommittedDataLoss") is not None


def test_chains_and_components_keep_the_violation_and_partition_the_states():
    # acks=1 and one fault: a small graph with a violation (a leader change now costs a fault)
    model = Model(Config(mode="hw", records=1, crashes=1, max_epoch=1, acks="1"))
    g = explore(model)
    q = symmetry_quotient(g, model)
    c = compress_chains(q)
    assert c.number_of_nodes() < q.number_of_nodes()
    assert shortest_violation(c)[0] == shortest_violation(q)[0] == 3
    assert sum(d["steps"] for _, _, d in c.edges(data=True)) >= q.number_of_edges()
    s = condense(c)
    assert nx.is_directed_acyclic_graph(s)
    assert sum(d["size"] for _, d in s.nodes(data=True)) == c.number_of_nodes()
    assert mark_violations(s) == sum(1 for _, d in s.nodes(data=True) if d["violated"]) > 0
    marked = [v for v, d in s.nodes(data=True) if d["on_path"]]
    assert any(s.nodes[v]["init"] for v in marked)


def test_explore_refuses_past_the_node_limit_with_an_estimate_only_once_the_front_shrinks():
    with pytest.raises(GraphTooLarge) as e:
        explore(Model(Config(mode="epoch")), max_nodes=500)
    assert "--max-nodes=500" in str(e.value) and "no estimate of the total yet" in str(e.value)
    assert e.value.estimate is None
    # 2,088 nodes in all (test_graph_command_exports_each_format): near the end the front shrinks
    with pytest.raises(GraphTooLarge) as e:
        explore(Model(Config(mode="hw", records=1, crashes=1, max_epoch=1, acks="1")), max_nodes=1_700)
    assert "estimated" in str(e.value) and 1_700 < e.value.estimate < 4_176


def test_graph_command_exports_each_format(tmp_path):
    knobs = ["--mode=hw", "--records=1", "--crashes=1", "--max-epoch=1", "--acks=1"]
    for suffix in (".dot", ".graphml", ".json"):
        out = tmp_path / f"g{suffix}"
        proc = run_cli("graph", *knobs, "--out", out)
        assert proc.returncode == 1, proc.stderr          # violating states exist
        for name in ("explored", "symmetry", "chains", "scc"):
            assert name in proc.stdout
        assert "2,088 nodes" in proc.stdout and "nearest violation 3 steps" in proc.stdout
    dot = (tmp_path / "g.dot").read_text()
    assert dot.startswith("digraph") and "fillcolor" in dot and "color=red" in dot
    assert nx.read_graphml(tmp_path / "g.graphml").number_of_nodes() > 0
    doc = json.loads((tmp_path / "g.json").read_text())
    assert any(n["violated"] for n in doc["nodes"]) and any(e["on_path"] for e in doc["links"])
    paths = run_cli("graph", *knobs, "--reduce", "symmetry", "--paths-only", "--out", tmp_path / "p.dot")
    assert "paths" in paths.stdout and "NoCommittedDataLoss" in (tmp_path / "p.dot").read_text()


def test_graph_command_refuses_bad_input_in_one_line(tmp_path):
    def err(*args):
        proc = run_cli("graph", *args)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
        return lines[0]
    assert "no estimate of the total yet" in err("--mode=epoch", "--max-nodes=300", "--out", tmp_path / "a.dot")
    assert "unknown graph format" in err("--mode=hw", "--out", tmp_path / "a.png")
    assert "unknown reduction" in err("--mode=hw", "--reduce", "magic", "--out", tmp_path / "a.dot")
    (tmp_path / "mine.dot").write_text("precious")
    assert "exists" in err("--mode=hw", "--records=1", "--out", tmp_path / "mine.dot")
    assert (tmp_path / "mine.dot").read_text() == "precious"


# ------------------------------------------------------------------ liveness

class StopFetching:
    """Test-only unfair variant: follower r1 may stop fetching forever (a flag no step clears)."""

    def __init__(self, model):
        self.inner, self.cfg = model, model.cfg
        self.invariants = tuple((name, lambda w, p=p: p(w[0])) for name, p in model.invariants)
        self.format_label = model.format_label
        self.liveness = tuple((name, lambda w, p=p: p(w[0])) for name, p in model.liveness)
        self.fair_actions = model.fair_actions

    def init_states(self):
        return [(s, 0) for s in self.inner.init_states()]

    def successors(self, w):
        s, stopped = w
        for label, t in self.inner.successors(s):
            if not (stopped and label == ("send_fetch", 1)):
                yield label, (t, stopped)
        if not stopped:
            yield ("stop_fetching", 1), (s, 1)

    def violated(self, w):
        return self.inner.violated(w[0])


def test_a_follower_that_stops_fetching_forever_yields_a_lasso():
    honest = Model(Config(mode="hw", records=1, crashes=0, max_epoch=0))
    assert all(lasso is None for _, lasso in check_liveness(honest, explore(honest)))
    unfair = StopFetching(honest)
    props = unfair.liveness
    results = dict(check_liveness(unfair, explore(unfair)))
    lasso = results["FollowerHwCatchesUp"]
    assert lasso is not None
    assert ("stop_fetching", 1) in lasso.trace.labels[:lasso.loop]
    assert lasso_violates(unfair, lasso, props[1][1]) is None
    # the lasso is a behaviour of the wrapper: each step re-executes
    states = unfair.init_states()
    for label in lasso.trace.labels:
        states.append(dict(unfair.successors(states[-1]))[label])
    assert states == lasso.trace.states


def test_epoch_mode_liveness_holds_without_crashes():
    """Without a fault the leader never changes (r0 leads and is the preferred replica), so no
    fair behaviour stays unsettled; the KAFKA-10706 livelock (below) needs two faults."""
    model = Model(Config(mode="epoch", records=2, crashes=0, max_epoch=3))
    results = dict(check_liveness(model, explore(model)))
    assert results == {"AckedReachesLiveIsr": None, "FollowerHwCatchesUp": None, "PartitionHasLeader": None}


def test_kip380_follower_livelock_is_kafka_10706_and_the_trim_at_the_leo_ends_it():
    """The curated lasso: under kip380 (2.2-2.6.0) a follower asks about an epoch it led without
    writing, forever (docs/results.md "KAFKA-10706"). With the 2.6.1/2.7.0 fix, Log.truncateTo
    trimming the epoch cache at the LEO (the rule trim_cache_at_leo, off in every mode of the
    ladder), the same schedule leaves the exchange: the cycle cannot be taken again."""
    from hwcheck.spec.modes import MODES
    doc = load_itf((CX / "kip380-liveness-kafka-10706.itf.json").read_text())
    done, why = replay_lasso(doc)
    assert why is None and done.model.cfg.mode == "kip380" and done.trace.invariant == "FollowerHwCatchesUp"
    assert not any(follower_hw_caught_up(s) for s in done.trace.states[done.loop:])
    assert not MODES["kip380"].trim_cache_at_leo
    trimmed = MODES["kip380"].variant(name="kip380-trim", trim_cache_at_leo=True)
    fixed = Model(Config(**dict(doc["#meta"]["hwcheck"]["config"], mode=trimmed)))
    schedule = list(done.trace.labels) + [done.closing]    # the cycle once, then the step closing it
    states = [fixed.init_states()[0]]
    for label in schedule:
        nxt = fixed.step(states[-1], label)
        if nxt is None:
            break
        states.append(nxt)
    # under kip380 the closing step returns to where the cycle starts
    assert done.model.step(done.trace.states[-1], done.closing) == done.trace.states[done.loop]
    # with the trim the same steps run, but the closing step ends the exchange: r0 fetches again
    # instead of coming back to the cycle's start
    assert len(states) == len(schedule) + 1
    assert states[-1] != states[done.loop] and not states[-1].replicas[0].truncating


def test_lasso_replays_and_its_loop_is_checked():
    # a cycle closed by a step, not stuttering: r0's ZooKeeper session expires, the controller
    # handles it as failed, r1 keeps fetching from r0 and nobody takes office (elections are unfair).
    # With restarts and the controller's handling of a failure fair too, a crashed leader cannot
    # just stutter (as deep a lasso: which of the two the search meets first is the graph's order)
    model = Model(Config(mode="hw", records=1, crashes=1, max_epoch=1))
    fair = model.fair_actions + ("restart", "controller_handle_failure")
    lasso = dict(check_liveness(model, explore(model), fair=fair))["PartitionHasLeader"]
    assert lasso is not None and 0 <= lasso.loop < lasso.trace.steps and lasso.closing is not None
    doc = load_itf(json.dumps(lasso_to_itf(model, lasso, fair)))
    assert doc["loop"] == lasso.loop
    done, why = replay_lasso(doc)
    assert why is None and done.loop == lasso.loop
    # a loop index that does not close the cycle is refused
    doc["loop"] = next(i for i in range(len(doc["states"])) if i != lasso.loop
                       and doc["states"][i] != doc["states"][lasso.loop])
    with pytest.raises(TraceError, match="does not lead back"):
        replay(doc)
    # replay without a loop is unchanged
    plain = json.loads((CX / "hw-data-loss.itf.json").read_text())
    assert replay(plain).loop is None


def test_verify_liveness_writes_lassos_that_replay(tmp_path):
    out = tmp_path / "lasso.itf.json"
    proc = run_cli("verify", "--liveness", "--mode=hw", "--records=1", "--crashes=2", "--max-epoch=1",
                   "--out", out, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "AckedReachesLiveIsr: violated: a lasso" in proc.stdout
    assert "PartitionHasLeader: violated" in proc.stdout
    for f in [out, tmp_path / "hwcheck-hw-PartitionHasLeader.itf.json"]:
        rep = run_cli("replay", f)
        assert rep.returncode == 0, rep.stderr
        assert "replayed a lasso" in rep.stdout and "violated: the cycle never settles" in rep.stdout
    # the same stutter lasso is no counterexample once restart is assumed fair
    doc = json.loads((tmp_path / "hwcheck-hw-PartitionHasLeader.itf.json").read_text())
    doc["#meta"]["hwcheck"]["fair"] = doc["#meta"]["hwcheck"]["fair"] + ["restart"]
    (tmp_path / "fairer.json").write_text(json.dumps(doc))
    rep = run_cli("replay", tmp_path / "fairer.json")
    assert rep.returncode == 1 and "restart(r0) stays enabled on the cycle but is never taken" in rep.stdout
    doc["loop"] = 99
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    bad = run_cli("replay", tmp_path / "bad.json")
    assert bad.returncode == 2 and "loop: 99 is not a state index" in bad.stderr
    assert run_cli("verify", "--liveness", "--max-depth=3").returncode == 2


def _verify_options_liveness_does_not_take():
    from hwcheck.cli.verify import LIVENESS_TAKES
    from hwcheck.cli.main import verify
    for p in verify.params:
        if p.name in LIVENESS_TAKES or not isinstance(p, click.Option):
            continue
        if p.is_flag:
            yield p.opts[0], [p.opts[0]]
        else:
            value = p.type.choices[-1] if isinstance(p.type, click.Choice) else "1"
            yield p.opts[0], [p.opts[0], value]


@pytest.mark.parametrize("flag,args", list(_verify_options_liveness_does_not_take()),
                         ids=lambda x: x if isinstance(x, str) else "")
def test_liveness_refuses_every_other_verify_option_in_one_line(flag, args):
    """An allow-list, not a deny-list: an option added to verify later lands here and is refused."""
    result = CliRunner().invoke(cli, ["verify", "--liveness", "--records", "1", "--crashes", "0", *args])
    assert result.exit_code == 2, result.output
    assert f"{flag} does not apply to --liveness" in result.output
    assert len(result.output.strip().splitlines()) == 1


# ------------------------------------------------------------------ focusing

def _is_lasso(path) -> bool:
    return "loop" in json.loads(path.read_text())


SAFETY_CX = [p for p in sorted(CX.glob("*.itf.json")) if not _is_lasso(p)]
LASSO_CX = [p for p in sorted(CX.glob("*.itf.json")) if _is_lasso(p)]


def test_the_curated_counterexamples_are_safety_traces_or_lassos():
    assert SAFETY_CX and LASSO_CX
    assert sorted(SAFETY_CX + LASSO_CX) == sorted(CX.glob("*.itf.json"))


@pytest.mark.parametrize("path", LASSO_CX, ids=lambda p: p.name)
def test_focusing_a_lasso_is_refused(path):
    """Focusing applies to safety traces: a lasso's property is not an invariant of the model, and
    cutting its schedule would lose the cycle. The checker and the command both refuse it."""
    done, why = replay_lasso(load_itf(path.read_text()))
    assert why is None
    with pytest.raises(ValueError, match=f"{done.trace.invariant} is not an invariant of the model"):
        focus(done.model, done.trace.labels, done.trace.invariant)
    line = one_line_error(run_cli_here("replay", path, "--focus"))
    assert "a lasso (liveness trace)" in line


@pytest.mark.parametrize("path", SAFETY_CX, ids=lambda p: p.name)
def test_focusing_every_counterexample_yields_a_trace_that_replays(path):
    done = replay(load_itf(path.read_text()))
    invariant = done.trace.invariant
    focused = focus(done.model, done.trace.labels, invariant)
    assert focused.steps <= done.trace.steps
    again = replay(load_itf(json.dumps(to_itf(done.model, focused))))
    assert invariant in again.violated
    # 1-minimal: dropping any single step loses replay or the violation
    for i in range(focused.steps):
        shorter = focused.labels[:i] + focused.labels[i + 1:]
        assert replays_to(done.model, shorter, invariant) is None


def test_focus_drops_the_steps_of_an_uninvolved_replica(tmp_path):
    model = Model(Config(mode="hw", replicas=3, records=1, crashes=1, max_epoch=1, acks="1"))
    short = bfs(model).violations[0]
    noise = [("send_fetch", 2), ("leader_handle_fetch", 0, 2), ("follower_handle_fetch", 2)]
    labels = noise + short.labels[:1] + noise + short.labels[1:]
    padded = replays_to(model, labels, short.invariant)
    assert padded is not None and padded.steps == short.steps + 6
    focused = focus(model, padded.labels, short.invariant)
    assert focused.steps == short.steps and all(2 not in l[1:] for l in focused.labels)
    path = tmp_path / "padded.itf.json"
    path.write_text(json.dumps(to_itf(model, padded)))
    proc = run_cli("replay", path, "--focus")
    assert proc.returncode == 0, proc.stderr
    assert f"focused {padded.steps} -> {short.steps} steps, still breaking {short.invariant}" in proc.stdout
    assert "replicas never named: r2" in proc.stdout
    assert run_cli("replay", path, "--focus", "--mode=epoch").returncode == 2


@pytest.mark.parametrize("name", ["hwcheck.checker.graph", "hwcheck.checker.liveness", "hwcheck.checker.focus"])
def test_docstring_examples_run(name):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("command", [["graph", "--out", "g.dot"], ["verify", "--liveness"]])
def test_ctrl_c_while_exploring_says_how_far_it_got(tmp_path, command):
    """SIGINT to the process group while the graph grows: exit 130, one line, no traceback."""
    from .test_interrupts import _ctrl_c, _no_traceback, _start
    child = _start(*command, "--mode", "epoch", "--replicas", "3", cwd=tmp_path)
    code, out, err = _ctrl_c(child, child.stdout, until=lambda line: line.startswith("hwcheck "), after=3.0)
    _no_traceback(out, err)
    assert code == 130, out + err
    [line] = [x for x in out.splitlines() if x.startswith("interrupted:")]
    assert "states of the state graph to depth" in line and "no verdict" in line
    assert not (tmp_path / "g.dot").exists()
