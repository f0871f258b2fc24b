"""`hwcheck reproduce` without a cluster: the releases table, the trace compiler, the checkpoint
comparison against recorded cluster states, the reproductions table, and bad input."""

import json
import tomllib

import re

import pytest

from hwcheck.checker.trace import load_itf, replay
from hwcheck.cluster.observe import ReplicaView, View, compare
from hwcheck.cluster.plan import PlanError, awaited_closure, compile_trace
from hwcheck.cluster.report import parse_reproductions
from hwcheck.cluster.run import cluster_mode, judge, predict
from hwcheck.spec import Config, Model
from hwcheck.spec.modes import MODES
from hwcheck.spec.releases import RELEASES, UnknownRelease, release, releases_of

from .conftest import ROOT, one_line_error, run_cli, run_cli_here

CX = ROOT / "counterexamples"


def _doc(name):
    return load_itf((CX / f"{name}.itf.json").read_text())


def _plan(doc):
    return compile_trace(replay(doc).trace.states, [s["#meta"]["action"] for s in doc["states"][1:]])


def test_every_release_names_a_mode_and_a_line_picks_its_newest():
    assert all(r.mode in MODES for r in RELEASES)
    assert [r.version for r in releases_of("kip966")] == ["4.0.0"]
    # KAFKA-18991's fix: 3.9.1 and 4.0.1 each follow the mode that takes it on their line
    assert (release("3.9.1").mode, release("4.0.1").mode) == ("kafka18991", "kafka18991-4.0")
    assert release("4.0").version == "4.0.1" and release("2.6.0").metadata == "zookeeper"
    assert (release("3.5").version, release("3.5.2").mode) == ("3.5.2", "kafka14704")
    with pytest.raises(UnknownRelease, match=re.escape("(its mode, kafka14704, is pinned at 3.5.2)")):
        release("3.5.0")
    with pytest.raises(UnknownRelease, match="not a Kafka version"):
        release("latest")


def test_the_ranges_cover_every_pinned_release_with_its_own_mode_and_each_mode_once():
    from hwcheck.spec.modes import LADDER
    from hwcheck.spec.releases import LINES, covering, version_key
    assert all(covering(r.version).mode == r.mode for r in RELEASES)
    assert [line.mode for line in LINES] == [m.name for m in LADDER]
    assert all(version_key(a.last) < version_key(b.first) for a, b in zip(LINES, LINES[1:]))


@pytest.mark.parametrize("version, elr, mode", [
    ("0.10.2.1", None, "hw"), ("1.0.2", None, "kip101"), ("2.6", None, "kafka10706"), ("3.3.2", None, "kafka13141"),
    ("3.9", None, "kafka18991"), ("4.0.0", None, "kafka15583"), ("4.0.0", True, "kip966"),
    ("4.0", None, "kafka18991"), ("4.0", True, "kafka18991-4.0"), ("4.1.1", None, "kafka19522"),
    ("4", False, "kafka18991"), ("3.4.0", None, "kafka13141"), ("3.4.1", None, "kafka14704"),
    ("3.5.1", None, "kafka14704"), ("3.5", None, "kafka14704"), ("3.6.1", None, "kip903"),
])
def test_kafka_version_picks_the_mode_with_elr_as_the_release_formats(version, elr, mode):
    from hwcheck.spec.releases import mode_for
    assert mode_for(version, elr)[0] == mode


@pytest.mark.parametrize("version, mode", [
    ("3.4.1", "kafka14704"), ("3.5", "kafka14704"), ("3.6.2", "kip903-zk"), ("3.7.0", "kafka15583-zk"),
    ("3.9.0", "kafka15583-zk"), ("3.9.1", "kafka18991-zk"), ("3.9", "kafka18991-zk"), ("3.3", "kafka13141"),
])
def test_kafka_version_on_zookeeper_picks_its_kraft_modes_zookeeper_mode(version, mode):
    from hwcheck.spec import Config
    from hwcheck.spec.releases import mode_for
    assert mode_for(version, zookeeper=True)[0] == mode
    assert Config(mode=mode).mode == mode        # a derived mode's name resolves, as a trace names it


@pytest.mark.parametrize("version, elr, words", [
    ("2.0.1", None, "not KIP-320's fencing"), ("0.9.0.1", None, "older than the oldest mode"),
    ("4.5.0", None, "newer than the newest release read (4.4.0)"), ("3.9.1", True, "ELR modes start at 4.0.0"),
])
def test_a_version_no_mode_covers_names_the_nearest(version, elr, words):
    from hwcheck.spec.releases import mode_for
    with pytest.raises(UnknownRelease, match=re.escape(words)):
        mode_for(version, elr)


@pytest.mark.parametrize("version", ["4.0", "4.1.1", "4"])
def test_zookeeper_is_refused_from_4_0(version):
    from hwcheck.spec.releases import mode_for
    with pytest.raises(UnknownRelease, match=re.escape(f"--zookeeper: Kafka {version} has no ZooKeeper mode")):
        mode_for(version, zookeeper=True)


def test_a_follower_that_never_gets_a_record_is_paused_until_its_leader_dies():
    steps = {s.index: s for s in _plan(_doc("kafka15583-power-failure-min-isr-2-loss")).steps}
    assert steps[1].pause_before == ()            # record 0 reaches r1 (by step 5)
    assert steps[4].pause_before == (1,)          # record 1 never does
    assert steps[9].do == "power_fail" and steps[9].resume_after == (1,)
    assert [i for i, s in steps.items() if s.checkpoint] == [3, 8, 10, 13]


def test_a_second_death_is_held_when_the_first_victim_must_register_before_it_is_noticed():
    # r1 crashes (step 7), r0 loses its disk (8); r1 is noticed and back (9, 10) before r0 is noticed (11)
    model = Model(Config(mode="kafka19522", disk_losses=1, crashes=1, min_isr=2))
    labels = ["produce(r0)", "send_fetch(r1)", "leader_handle_fetch(r0,r1)", "follower_handle_fetch(r1)",
              "send_fetch(r1)", "leader_handle_fetch(r0,r1)", "crash(r1)", "lose_disk(r0)",
              "controller_handle_failure(r1)", "restart(r1)", "controller_handle_failure(r0)", "restart(r0)",
              "assign_dir(r0)", "elect_offline(r0)", "become_leader(r0)"]
    states = [model.init_states()[0]]
    for label in labels:
        states.append(model.step(states[-1], model.parse_label(label)))
        assert states[-1] is not None, label
    assert model.violated(states[-1]) == ["NoCommittedDataLoss"]
    steps = {s.index: s for s in compile_trace(states, labels).steps}
    assert steps[8].do == "lose_disk" and steps[8].hold
    assert not steps[7].hold
    steps = {s.index: s for s in _plan(_doc("kafka13141-disk-loss")).steps}
    assert not any(s.hold for s in steps.values())


def test_a_step_no_process_level_action_places_is_refused():
    with pytest.raises(PlanError, match="step 1 flush\\(r0\\) needs the flushed point moved on command"):
        compile_trace(replay(_doc("kip380-unclean-loss")).trace.states, ["flush(r0)"])


def _view(s, logs=None, leader=None, isr=None, acked=None, elr=None):
    n = len(s.replicas)
    reps = tuple(ReplicaView(bool(rep.alive), False, tuple(logs[r] if logs else rep.log), rep.hw)
                 for r, rep in enumerate(s.replicas))
    c = s.controller
    return View(c.leader if leader is None else leader, c.epoch,
                frozenset(r for r in range(n) if c.isr >> r & 1) if isr is None else frozenset(isr),
                elr, None, reps, {k: v for k, v in enumerate(s.history.acked) if v >= 0} if acked is None else acked)


def test_a_checkpoint_allows_replication_ahead_and_nothing_else():
    states = replay(_doc("kafka15583-power-failure-min-isr-2-loss")).trace.states
    s3, s8 = states[3], states[8]
    assert compare(s3, _view(s3), s8, False) == []
    # r1 already copied record 0 and the producer heard of its ack: ahead by replication
    ahead = _view(s3, logs=[((0, 0),), ((0, 0),)], acked={0: 0})
    assert compare(s3, ahead, s8, False) == []
    # a record its leader does not have is not replication
    assert compare(s3, _view(s3, logs=[((0, 0),), ((1, 0),)]), s8, False) == ["r1 log [·] vs [1]"]
    assert compare(s3, _view(s3, leader=1), s8, False) == ["leader r0 vs r1"]
    assert compare(s8, _view(s8, isr=[0, 1]), s8, False) == ["isr r0 vs r0,r1"]


def test_kraft_elects_from_the_elr_in_the_same_event_that_fences_the_leader():
    """Recorded on Kafka 4.1.1 (this trace, step 10): the controller fenced r0 and elected r1 from
    the ELR at once, at epoch 1. The model does the same in one step, which the trace's
    ``controller_handle_failure(r0)`` (a leaderless fence) is not: the prediction stops there, and
    the closure of awaited steps from step 9 reaches what the cluster showed, epoch included."""
    doc = _doc("kafka15583-power-failure-min-isr-2-loss")
    p = predict(doc, "kafka19522")
    assert p.refused_at == 10 and p.outcome == "kept"
    s9 = p.states[9]
    real = View(1, 1, frozenset({1}), frozenset({0}), frozenset(), (
        ReplicaView(False, False, (), 1), ReplicaView(True, False, ((0, 0),), 1)), {0: 0})
    assert compare(s9, real, s9, True, epochs=True) != []
    matches = [path for t, path in awaited_closure(p.model, s9)
               if not compare(t, real, t, True, low=s9, epochs=True)]
    assert ("controller_handle_failure_leader(r0,r1)",) in matches
    assert compare(s9, real._replace(epoch=2), s9, True, epochs=True) != []


def test_the_verdict_is_what_the_clients_saw():
    from hwcheck.spec.releases import release as rel
    down, up = ReplicaView(False, False, (), 0), ReplicaView(True, False, (), 0)
    gone = View(0, 2, frozenset({0}), None, None, (up, ReplicaView(True, False, ((0, 0),), 1)), {0: 0})
    assert judge("NoCommittedDataLoss", gone, None, rel("3.9.1")) == (
        "violated", "lost: record 0, acknowledged at offset 0, is gone on Kafka 3.9.1")
    kept = gone._replace(leader=1)
    assert judge("NoCommittedDataLoss", kept, None, rel("3.9.1"))[0] == "kept"
    fenced = View(0, 3, frozenset({0}), frozenset(), frozenset(), (down, up), {})
    assert judge("LeaderUnfenced", fenced, None, rel("4.0.1"))[0] == "violated"
    forked = View(0, 2, frozenset({0}), None, None, (ReplicaView(True, False, ((1, 1),), 1),
                                                     ReplicaView(False, False, ((0, 0),), 1)), {})
    assert judge("NoLogDivergence", forked, None, rel("2.6.0")) == (
        "violated", "diverged: offset 0 holds record 1 on r0 and record 0 on r1, below both HWs, on Kafka 2.6.0")
    assert judge("NoLogDivergence", forked._replace(replicas=(forked.replicas[0], forked.replicas[1]._replace(hw=0))),
                 None, rel("2.6.0"))[0] == "kept"
    from hwcheck.cluster.run import Reading
    read = [Reading(20, 1, ((0, 0),)), Reading(26, 0, ()), Reading(29, 1, ((0, 1),))]
    assert judge("ConsumerConsistency", gone, None, rel("3.9.0"), read) == (
        "violated", "replaced: record 0, read at offset 0 from r1 after step 20, is record 1 there (read from r1 "
                    "after step 29) on Kafka 3.9.0")
    assert judge("ConsumerConsistency", gone, None, rel("3.9.1"), read[:2])[0] == "kept"
    assert judge("ConsumerConsistency", gone, None, rel("3.9.1"), [])[1] == "kept: consumers read nothing on Kafka 3.9.1"


def test_kafka_18991s_trace_expires_a_session_and_keeps_fetcher_threads_for_its_old_answers():
    """Step 16 is a ZooKeeper session expiry; the answers of steps 10 and 15 wait across a leader
    change each, on a thread a keeper partition keeps (added right after each answer), and go to
    their follower once it follows that leader again (steps 21 and 26)."""
    from hwcheck.cluster.run import _plan_keepers
    from hwcheck.spec.releases import on_zookeeper
    doc = _doc("kafka15583-zk-kafka-18991-old-epoch-response")
    done = replay(doc)
    plan = compile_trace(done.trace.states, [s["#meta"]["action"] for s in doc["states"][1:]], proxied=True)
    _plan_keepers(doc, plan, on_zookeeper(release("3.9.0")))
    steps = {s.index: s for s in plan.steps}
    assert steps[16].do == "expire_session" and steps[16].checkpoint is False
    assert [(i, s.do, s.link, s.to_follower) for i, s in steps.items() if s.action == "follower_handle_old_response"] == [
        (21, "deliver_response", (0, 1), True), (26, "deliver_response", (1, 0), True)]
    assert {i: s.keeper for i, s in steps.items() if s.keeper} == {10: (0, 1), 15: (1, 0)}
    # the fixed release's mode refuses step 21, and its plan keeps the same keepers up to there
    p = predict(doc, cluster_mode(on_zookeeper(release("3.9.1")), None)[0])
    assert p.refused_at == 21 and p.outcome == "kept"


@pytest.mark.parametrize("version, proxied, says", [
    ("3.9.0", True, "run Kafka 3.9.0 on ZooKeeper (--zookeeper, 3.9.x and older)"),
    ("3.4.0", False, "the trace delivers an answer of an old leader epoch: run it with --proxy"),
])
def test_a_trace_with_old_answers_needs_zookeeper_and_the_proxy(version, proxied, says):
    from hwcheck.cluster.run import _plan_keepers
    doc = _doc("kafka15583-zk-kafka-18991-old-epoch-response")
    plan = compile_trace(replay(doc).trace.states, [s["#meta"]["action"] for s in doc["states"][1:]], proxied=True)
    plan.proxied = proxied
    with pytest.raises(PlanError, match=re.escape(says)):
        _plan_keepers(doc, plan, release(version))


def test_the_reproductions_table_parses_and_its_traces_replay():
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hwcheck"]["reproduce"]
    rows = parse_reproductions(table)
    assert len(rows) >= 6
    for row in rows:
        doc = load_itf((ROOT / row.trace).read_text())
        done = replay(doc)                               # compiles, through the proxy where the row says so
        compile_trace(done.trace.states, [s["#meta"]["action"] for s in doc["states"][1:]], proxied=row.proxy is True)
        for version, expected in row.expect.items():
            if version not in row.disagrees:       # a known disagreement is documented in docs/results.md
                mode, _ = cluster_mode(row.release(version), row.elr)
                assert predict(doc, mode).outcome == expected, (row.name, version)


@pytest.mark.parametrize("args, says", [
    ((), "give a TRACE, --all or --check-releases"),
    ((str(CX / "kip380-unclean-loss.itf.json"), "--kafka", "3.5.1"), "Kafka 3.5.1 is not in the releases table"),
    ((str(CX / "kip380-unclean-loss.itf.json"), "--kafka", "x"), "is not a Kafka version"),
    ((str(CX / "kafka15583-zk-kafka-18991-old-epoch-response.itf.json"), "--kafka", "4.1.1", "--zookeeper"),
     "--zookeeper: Kafka 4.1.1 has no ZooKeeper mode"),
    ((str(CX / "kafka15583-zk-kafka-18991-old-epoch-response.itf.json"),),
     "mode kafka15583-zk has no pinned release in the releases table"),
    (("missing.itf.json",), "missing.itf.json"),
])
def test_bad_input_is_one_line(args, says, tmp_path):
    assert says in one_line_error(run_cli_here("reproduce", *args, cwd=tmp_path))


def test_a_response_in_flight_at_a_death_needs_the_proxy_and_the_reproduced_rows_do_not():
    """KIP-101 scenario 1's ingredient: r1 dies with the HW-raising response in flight, restarts,
    truncates to its HW on following r0 and is elected (uncleanly, r0 gone) without the record.
    Delivered first, the response would raise r1's HW and keep the record: it must be held."""
    from hwcheck.cluster.plan import needs_proxy
    from .conftest import run_labels
    model = Model(Config(mode="hw", unclean_election=True))
    labels = [("produce", 0), ("send_fetch", 1), ("leader_handle_fetch", 0, 1), ("follower_handle_fetch", 1),
              ("send_fetch", 1), ("leader_handle_fetch", 0, 1), ("crash", 1), ("controller_handle_failure", 1),
              ("restart", 1), ("become_follower", 1), ("crash", 0), ("controller_handle_failure", 0),
              ("elect_offline", 1), ("become_leader", 1)]
    states = run_labels(model, labels)
    assert model.violated(states[-1]) == ["NoCommittedDataLoss"]
    plan = compile_trace(states, [model.format_label(label) for label in labels])
    assert needs_proxy(model, states, plan.steps, "NoCommittedDataLoss").startswith(
        "step 7 crash(r1): the FetchResponse r0->r1 in flight would reach r1 first (r1's HW 0 -> 1), and then "
        "NoCommittedDataLoss holds")
    why = {}
    for name in ("kafka19522-crash-and-power-failure-loss", "kafka13141-disk-loss"):
        done = replay(_doc(name))
        labels = [done.model.format_label(label) for label in done.trace.labels]
        why[name] = needs_proxy(done.model, done.trace.states, compile_trace(done.trace.states, labels).steps,
                                done.trace.invariant)
    # the same kind of response raises a follower's HW there too, but the loss does not depend on it
    assert why["kafka19522-crash-and-power-failure-loss"] is None and why["kafka13141-disk-loss"] is None


def test_a_trace_needing_a_held_fetch_is_one_line(tmp_path):
    line = one_line_error(run_cli_here("reproduce", str(CX / "hw-data-loss.itf.json"), "--no-proxy", cwd=tmp_path))
    assert line.endswith("step 9 leader_handle_stale_fetch(r0,r1) needs a Fetch delivered after its sender's "
                         "connection closed: run it with --proxy")


def test_a_trace_of_the_tla_port_is_refused(tmp_path):
    run_cli("verify", "--model", "kafka-tla", "--mode", "kip101", "--out", "t.json", cwd=tmp_path)
    assert "reproduce runs traces of the design model" in one_line_error(run_cli_here("reproduce", "t.json", cwd=tmp_path))


def test_the_step_table_and_the_json_document_of_an_outcome():
    """A recorded run (Kafka 3.9.1, the 15583 trace, checkpoints 0 and 13) rendered as the CLI
    prints it and as --json / --keep's observed.json write it."""
    from hwcheck.cli.reproduce import outcome_doc
    from hwcheck.cluster.report import step_table
    from hwcheck.cluster.run import Outcome, Row
    doc = _doc("kafka15583-power-failure-min-isr-2-loss")
    p = predict(doc, "kafka15583")
    s0, s13 = p.states[0], p.states[13]
    empty = ReplicaView(True, False, (), 0)
    first = View(0, 0, frozenset({0, 1}), None, None, (empty, empty), {})
    last = View(0, 2, frozenset({0}), None, None, (empty, ReplicaView(True, False, ((0, 0),), 1)), {0: 0})
    out = Outcome(release("3.9.1"), p, [Row(0, "init", s0, first, []), Row(13, "become_leader(r0)", s13, last, [])],
                  "lost: record 0, acknowledged at offset 0, is gone on Kafka 3.9.1", "violated", None, 16.0)
    table = step_table(out).splitlines()
    assert table[0].split()[:5] == ["step", "action", "side", "r0", "r1"]
    assert "kafka 3.9.1" in table[-1] and "up [0@0] leo=1 hw=1" in table[-1] and "r0 e2 isr=r0" in table[-1]
    got = json.loads(json.dumps(outcome_doc(out)))
    assert (got["kafka"], got["predicted"], got["real"], got["agrees"]) == ("3.9.1", "violated", "violated", True)
    assert got["rows"][1]["kafka"]["replicas"][1]["log"] == [[0, 0]] and got["rows"][1]["kafka"]["acked"] == {"0": 0}
    from hwcheck.cluster.run import Reading
    out.readings = [Reading(13, 0, ((0, 0),))]
    assert outcome_doc(out)["readings"] == [{"step": 13, "broker": 0, "records": [[0, 0]]}]


def test_the_proxy_is_used_where_a_trace_needs_a_message_held_or_when_asked():
    from hwcheck.cluster.run import plan_for
    for name, auto in (("hw-data-loss", True), ("kafka15583-power-failure-min-isr-2-loss", False)):
        doc = _doc(name)
        prediction, invariant = predict(doc, doc["#meta"]["hwcheck"]["config"]["mode"]), doc["#meta"]["hwcheck"]["invariant"]
        assert plan_for(prediction, invariant, None).proxied is auto, name
        assert plan_for(prediction, invariant, True).proxied, name
        if auto:
            with pytest.raises(PlanError, match="run it with --proxy"):
                plan_for(prediction, invariant, False)


def test_the_lag_check_fires_on_a_proxied_run_only_where_the_trace_has_it():
    """A proxied trace with a shrink_isr waits replica.lag.time.max.ms for it; one without sets the
    lag past any run, so a slow machine cannot drop a follower the model keeps in the ISR."""
    from hwcheck.cluster.run import PROXIED_NO_LAG_TIMING, PROXIED_TIMING, default_timing, plan_for
    lags = {}
    for name in ("kip101-exit-on-out-of-range", "kafka15583-zk-kafka-18991-old-epoch-response",
                 "kafka15583-power-failure-min-isr-2-loss"):
        doc = _doc(name)
        prediction = predict(doc, doc["#meta"]["hwcheck"]["config"]["mode"])
        plan = plan_for(prediction, doc["#meta"]["hwcheck"]["invariant"], True)
        lags[name] = default_timing(plan).lag
    assert lags == {"kip101-exit-on-out-of-range": PROXIED_TIMING.lag,              # shrink_isr at step 5
                    "kafka15583-zk-kafka-18991-old-epoch-response": PROXIED_NO_LAG_TIMING.lag,
                    "kafka15583-power-failure-min-isr-2-loss": PROXIED_TIMING.lag}
    assert PROXIED_NO_LAG_TIMING.lag >= 3_600_000 > PROXIED_TIMING.lag


def test_ctrl_c_lost_inside_librdkafka_poll_is_still_an_interrupt():
    """confluent-kafka answers a KeyboardInterrupt raised inside its C poll with a SystemError
    (CI saw it once in the Ctrl-C test); the client raises it as the interrupt it was."""
    from hwcheck.cluster.client import Client

    class Producer:
        def __init__(self, message):
            self.message = message

        def poll(self, timeout):
            raise SystemError(self.message)
    client = Client.__new__(Client)
    client.producer = Producer("<method 'poll' of 'cimpl.Producer' objects> returned NULL without setting an exception")
    with pytest.raises(KeyboardInterrupt):
        client.sleep(1)
    client.producer = Producer("something else")
    with pytest.raises(SystemError, match="something else"):
        client.sleep(1)


def test_listening_ports_are_below_the_ephemeral_range():
    """A broker dialling a port in the ephemeral range before its server listens can connect to
    itself (cluster/brokers.free_port): the harness's ports stay below that range."""
    from hwcheck.cluster.brokers import PORTS_FROM, _ephemeral_low, free_port
    low = _ephemeral_low()
    assert all(PORTS_FROM <= free_port() < low for _ in range(50))
    assert _ephemeral_low("/nonexistent") == 32768


def test_the_zookeeper_kafka_18991_trace_is_the_kafka13141_one_searched_on_from_step_15():
    """counterexamples/README.md's derivation, run again: the file is the checker's, not edited."""
    from hwcheck.checker.bfs import bfs
    from hwcheck.checker.result import Trace
    from hwcheck.checker.trace import StartingAt, differential, to_itf, trace_config
    doc = _doc("kafka13141-kafka-18991-old-epoch-response")
    model = Model(trace_config(doc, mode="kafka15583-zk"))
    prefix = differential(doc, "kafka15583-zk").trace
    states, labels = list(prefix.states[:16]), list(prefix.labels[:15])
    found = bfs(StartingAt(model, states[-1]), only=["ConsumerConsistency"]).violations[0]
    trace = Trace(states + list(found.states[1:]), labels + list(found.labels), found.invariant)
    assert json.dumps(to_itf(model, trace), indent=1) + "\n" == (
        CX / "kafka15583-zk-kafka-18991-old-epoch-response.itf.json").read_text()


def test_the_clean_follower_trace_is_counterexamples_readmes_derivation_run_again():
    """counterexamples/README.md's snippet for kafka19522-clean-follower-passed-over, run again (its
    ``open`` caught): it writes the stored file byte for byte."""
    readme = (CX / "README.md").read_text()
    blocks = re.findall(r"```\npython - <<'PY'\n(.*?)PY\n```", readme, re.S)
    code = next(b for b in blocks if "kafka19522-clean-follower-passed-over.itf.json" in b)
    written = {}

    class Catch:
        def __init__(self, path):
            self.path = path

        def write(self, text):
            written[self.path] = written.get(self.path, "") + text

    exec(compile(code, "counterexamples/README.md", "exec"),
         {"open": lambda path, mode="r": Catch(path), "__name__": "derivation"})
    assert written == {"counterexamples/kafka19522-clean-follower-passed-over.itf.json":
                       (CX / "kafka19522-clean-follower-passed-over.itf.json").read_text()}


def test_a_preferred_election_whose_answer_never_comes_is_placed_by_the_controllers_record(monkeypatch):
    """Admin.electLeaders without an answer in 30 s (seen once in CI on 3.9.0 on ZooKeeper, with r0
    leading at the next epoch within a second): the step is placed if the controller's record names
    r0 at a newer epoch, and is an error in one line otherwise."""
    from concurrent.futures import TimeoutError as NoAnswer
    from types import SimpleNamespace

    from hwcheck.cluster import observe as observe_module
    from hwcheck.cluster.brokers import ClusterError
    from hwcheck.cluster.client import Client

    class Silent:
        def result(self, timeout=None):
            raise NoAnswer()

    client = object.__new__(Client)
    client.cluster = SimpleNamespace(kraft=True, release=release("4.1.1"))
    client.admin = SimpleNamespace(elect_leaders=lambda *a, **k: Silent())
    views = iter([SimpleNamespace(leader=1, leader_epoch=3), SimpleNamespace(leader=0, leader_epoch=4)])
    monkeypatch.setattr(observe_module, "recorded_partition", lambda cluster: next(views))
    client.elect_preferred()                                  # r0 leads at epoch 4: placed
    views = iter([SimpleNamespace(leader=1, leader_epoch=3), SimpleNamespace(leader=1, leader_epoch=3)])
    with pytest.raises(ClusterError, match="no answer within 30 s, and the controller's record does not name r0"):
        client.elect_preferred()
