"""``hwcheck explore``: its JSON API driven in this process over HTTP (a server on an ephemeral port in
a thread), the command's bad inputs, Ctrl-C, and three browser tests in a real headless Chromium
(Debian's /usr/bin/chromium via Playwright, conftest's ``browser_page``: CI=true always runs it,
elsewhere it skips, saying why, only when chromium or playwright is missing)."""

import json
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from hwcheck.checker.result import Trace
from hwcheck.checker.trace import differential, to_itf
from hwcheck.explore.server import make_server
from hwcheck.explore.session import Session
from hwcheck.spec import Config, Model, kafka_tla

from .conftest import ROOT, run_cli_here, sigint_at_default

CX = ROOT / "counterexamples"
HW_LOSS = CX / "hw-data-loss.itf.json"
KIP966_CASE = CX / "kafka15583-power-failure-min-isr-2-loss.itf.json"


def _labels(path: Path):
    return [s["#meta"]["action"] for s in json.loads(path.read_text())["states"]][1:]


@contextmanager
def served(model):
    """A server on 127.0.0.1:<free port> in a thread; stopped and joined when the block ends."""
    server = make_server(Session(model))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="explore-test-server")
    thread.start()
    try:
        yield Client(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        assert not thread.is_alive()


class Client:
    def __init__(self, server):
        self.server, self.base = server, server.url.rstrip("/")

    def request(self, method, path, body=None, headers=None, raw=False):
        data = None if body is None else json.dumps(body).encode()
        hdrs = {"Content-Type": "application/json"} if method == "POST" else {}
        hdrs.update(headers or {})
        req = urllib.request.Request(self.base + path, data=data if method == "POST" else None, method=method,
                                     headers=hdrs)
        if method == "POST" and data is None:
            req.data = b"{}"
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                payload = r.read()
                return (r.status, payload, r.headers) if raw else (r.status, json.loads(payload))
        except urllib.error.HTTPError as e:
            payload = e.read()
            return (e.code, payload, e.headers) if raw else (e.code, json.loads(payload))

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        status, answer = self.request("POST", path, body if body is not None else {}, **kw)
        assert status == 200, answer
        return answer


def _holds(view, name):
    return next(i["holds"] for i in view["invariants"] if i["name"] == name)


# ---------------------------------------------------------------- the API

def test_the_initial_state_and_its_steps_come_from_the_model():
    model = Model(Config(mode="hw"))
    with served(model) as c:
        status, v = c.get("/api/view")
    assert status == 200
    init = model.init_states()[0]
    assert v["cursor"] == 0 and v["last"] == 0 and v["action"] == "init" and v["mode"] == "hw"
    assert v["state"] == model.to_json(init) and v["changed"] == []
    assert [a["label"] for a in v["enabled"]] and {a["label"] for a in v["enabled"]} == {
        model.format_label(label) for label, _ in model.successors(init)}
    kinds = {a["label"]: a["kind"] for a in v["enabled"]}
    assert kinds["produce(r0)"] == "client" and kinds["send_fetch(r1)"] == "replication"
    assert kinds["crash(r1)"] == "faults"
    assert [i["name"] for i in v["invariants"]] == [name for name, _ in model.invariants]
    assert all(i["holds"] for i in v["invariants"])
    assert "kip966" in v["modes"] and v["path"][0]["action"] == "init"


def test_every_action_of_both_families_has_a_button_group():
    from hwcheck.explore.session import kind_of
    from hwcheck.spec.actions import ACTIONS
    from hwcheck.spec.kafka_tla.actions import ARGS
    names = [name for name, _, _ in ACTIONS] + list(ARGS)
    assert [name for name in names if kind_of(name) == "other"] == []


def test_kip101_scenario_1_clicked_through_in_hw_breaks_no_committed_data_loss(tmp_path):
    """KIP-101 scenario 1, step by step as counterexamples/hw-data-loss.itf.json stores it: every state
    the server answers is the trace's state, and NoCommittedDataLoss breaks at the last step only;
    the path downloaded replays with ``hwcheck replay``."""
    doc = json.loads(HW_LOSS.read_text())
    labels = _labels(HW_LOSS)
    with served(Model(Config(mode="hw"))) as c:
        for i, label in enumerate(labels, start=1):
            assert label in {a["label"] for a in c.get("/api/view")[1]["enabled"]}
            v = c.post("/api/step", {"action": label})
            assert v["cursor"] == i and v["action"] == label
            assert v["state"] == {k: x for k, x in doc["states"][i].items() if k != "#meta"}
            assert v["changed"], f"step {i} changed nothing"
            assert _holds(v, "NoCommittedDataLoss") == (i < len(labels)), f"step {i}"
        broken = next(x for x in v["invariants"] if x["name"] == "NoCommittedDataLoss")
        assert broken["first_broken_at"] == len(labels)
        assert v["path"][-1]["broken"] == ["NoCommittedDataLoss"]
        status, body, headers = c.get("/api/path.itf.json", raw=True)
    assert status == 200 and "attachment" in headers["Content-Disposition"]
    path = tmp_path / "walked.itf.json"
    path.write_bytes(body)
    walked = json.loads(body)
    assert [s["#meta"]["action"] for s in walked["states"]] == ["init"] + labels
    assert walked["#meta"]["hwcheck"]["invariant"] == "NoCommittedDataLoss"
    proc = run_cli_here("replay", path, "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert f"replayed {len(labels)} steps: NoCommittedDataLoss broken in the last state" in proc.stdout


def test_back_forward_goto_and_a_new_step_replacing_what_followed():
    with served(Model(Config(mode="hw"))) as c:
        for label in ("produce(r0)", "send_fetch(r1)", "leader_handle_fetch(r0,r1)"):
            c.post("/api/step", {"action": label})
        v = c.post("/api/back")
        assert (v["cursor"], v["last"]) == (2, 3)
        assert [a["label"] for a in v["enabled"] if a["next"]] == ["leader_handle_fetch(r0,r1)"]
        assert c.post("/api/forward")["cursor"] == 3
        assert c.post("/api/goto", {"step": 1})["cursor"] == 1
        v = c.post("/api/step", {"action": "send_fetch(r1)"})      # the path's own next step: kept
        assert (v["cursor"], v["last"]) == (2, 3)
        v = c.post("/api/step", {"action": "crash(r1)"})           # another step: what followed goes
        assert (v["cursor"], v["last"]) == (3, 3) and v["path"][-1]["action"] == "crash(r1)"
        status, err = c.request("POST", "/api/goto", {"step": 9})
        assert status == 400 and err["error"] == "step 9: the path has steps 0..3"
        v = c.post("/api/reset")
        assert (v["cursor"], v["last"]) == (0, 0)


def test_refused_requests_are_one_line_errors():
    with served(Model(Config(mode="hw"))) as c:
        status, err = c.request("POST", "/api/step", {"action": "restart(r0)"})
        assert status == 400 and err["error"] == "restart(r0) is not enabled at step 0"
        status, err = c.request("POST", "/api/step", {"action": "teleport(r0)"})
        assert status == 400 and err["error"] == "unknown action 'teleport' in mode hw"
        status, err = c.request("POST", "/api/step", {})
        assert status == 400 and "'action' is missing" in err["error"]
        status, err = c.request("POST", "/api/open", {"trace": "{not json", "name": "x.json"})
        assert status == 400 and err["error"].startswith("x.json: malformed JSON")
        odd = json.loads(HW_LOSS.read_text())
        odd["#meta"]["hwcheck"]["model"] = 5
        status, err = c.request("POST", "/api/open", {"trace": json.dumps(odd), "name": "odd.json"})
        assert status == 400 and err["error"] == "odd.json: bad model in trace: 5"
        status, err = c.request("POST", "/api/mode", {"mode": "kip999"})
        assert status == 400 and "kip999" in err["error"] and "\n" not in err["error"]
        status, err = c.get("/api/nothing")
        assert status == 404


def test_a_foreign_host_and_a_non_json_post_are_refused():
    with served(Model(Config(mode="hw"))) as c:
        port = c.server.port
        status, err = c.get("/api/view", headers={"Host": f"evil.example:{port}"})
        assert status == 403 and "evil.example" in err["error"]
        status, _, _ = c.get("/", headers={"Host": "attacker.test"}, raw=True)
        assert status == 403
        assert c.get("/api/view", headers={"Host": f"localhost:{port}"})[0] == 200
        status, page, headers = c.get("/", raw=True)
        assert status == 200 and headers["Content-Type"].startswith("text/html")
        assert b"http://" not in page and b"https://" not in page         # nothing from the network
        status, err = c.request("POST", "/api/step", {"action": "produce(r0)"},
                                headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert status == 400 and err["error"] == "POST bodies are application/json"


def test_a_trace_under_another_release_shows_the_step_it_refuses():
    """KIP-966's case found in kafka15583, its steps run under kip966 (4.0): controller_handle_failure(r0)
    at step 10 is refused (the record that fences r0 elects r1 from the ELR), and NoCommittedDataLoss
    holds on every step kip966 takes."""
    doc = json.loads(KIP966_CASE.read_text())
    with served(Model(Config())) as c:
        v = c.post("/api/open", {"trace": KIP966_CASE.read_text(), "name": KIP966_CASE.name})
        assert v["mode"] == "kafka15583" and v["last"] == len(doc["states"]) - 1 and v["source"] == KIP966_CASE.name
        assert c.post("/api/goto", {"step": v["last"]})["invariants"][0] == {
            **v["invariants"][0], "holds": False, "first_broken_at": v["last"],
            "why": "record 0, acknowledged at offset 0, is not there on r0, the leader in office at epoch 2: "
                   "its log ends at offset 0"}
        v = c.post("/api/mode", {"mode": "kip966"})
        assert v["mode"] == "kip966" and v["last"] == 9
        assert v["refusal"]["at"] == 10 and v["refusal"]["mode"] == "kafka15583"
        assert v["refusal"]["why"] == "controller_handle_failure(r0): not enabled in mode kip966"
        assert v["refusal"]["labels"] == _labels(KIP966_CASE)[9:]
        # as replay --mode says: the shared state never parts before the refused step
        assert v["parted"] is None and differential(doc, "kip966").parted_at is None
        assert all(not row["broken"] for row in v["path"])
        status, err = c.request("POST", "/api/forward")
        assert status == 400 and "step 10 is refused in mode kip966" in err["error"]
        v = c.post("/api/mode", {"mode": "kafka19522"})          # the path as walked, under 4.1
        assert v["refusal"]["mode"] == "kafka15583" and v["refusal"]["at"] == 10
        v = c.post("/api/mode", {"mode": "kafka15583"})          # and back: every step again
        assert v["refusal"] is None and v["last"] == len(doc["states"]) - 1
        assert [row["action"] for row in v["path"]][1:] == _labels(KIP966_CASE)


def test_a_trace_of_another_model_family_is_refused():
    tla = kafka_tla.Model(kafka_tla.Config(mode="kip320"))
    s0 = tla.init_states()[0]
    label, s1 = next(iter(tla.successors(s0)))
    text = json.dumps(to_itf(tla, Trace([s0, s1], [label])))
    with served(Model(Config(mode="hw"))) as c:
        status, err = c.request("POST", "/api/open", {"trace": text, "name": "tla.json"})
    assert status == 400 and err["error"] == "tla.json: a trace of model kafka-tla; this explorer runs model design"
    with served(tla) as c:                                # the reference model explores too
        v = c.post("/api/open", {"trace": text, "name": "tla.json"})
        assert v["model"] == "kafka-tla" and v["last"] == 1 and v["modes"] == []
        assert "replicaLog" in v["state"] and v["path"][1]["replicas"]


def test_the_shortest_way_to_break_from_here_and_its_stop():
    """From step 10 of KIP-101 scenario 1, bfs finds the trace's last 2 steps; taking them puts them
    after the cursor. A search that would run long stops on request and says what it covered."""
    labels = _labels(HW_LOSS)
    with served(Model(Config(mode="hw"))) as c:
        for label in labels[:10]:
            c.post("/api/step", {"action": label})
        found = c.post("/api/search", {"invariant": "NoCommittedDataLoss"})
        deadline = time.monotonic() + 20
        while found["state"] == "running" and time.monotonic() < deadline:
            time.sleep(0.05)
            found = c.get("/api/search")[1]
        assert found["state"] == "done" and found["verdict"] == "violated"
        assert len(found["labels"]) == 2
        v = c.post("/api/search/take")
        assert (v["cursor"], v["last"]) == (10, 12)
        assert not _holds(c.post("/api/goto", {"step": 12}), "NoCommittedDataLoss")
        status, err = c.request("POST", "/api/search", {"invariant": "Nope"})
        assert status == 400 and err["error"].startswith("unknown invariant 'Nope'")
    with served(Model(Config(mode="epoch"))) as c:        # holds: bfs would cover the whole space
        assert c.post("/api/search", {"invariant": "NoCommittedDataLoss"})["state"] == "running"
        time.sleep(0.5)
        stopped = c.post("/api/search/stop")
        assert stopped["state"] == "done" and stopped["verdict"] == "interrupted" and not stopped["complete"]
        assert stopped["distinct"] > 0 and stopped["labels"] == []


# ---------------------------------------------------------------- the command

def test_bad_input_is_one_line_and_exit_2(tmp_path):
    def refused(*args):
        proc = run_cli_here("explore", *args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        [line] = proc.stderr.strip().splitlines()
        assert line.startswith("hwcheck: error: ")
        return line

    assert "kip999" in refused("--mode", "kip999")
    bad = tmp_path / "bad.itf.json"
    bad.write_text("{not json")
    assert refused(bad) == f"hwcheck: error: {bad}: malformed JSON: Expecting property name enclosed in " \
                           "double quotes: line 1 column 2 (char 1)"
    assert "No such file" in refused(tmp_path / "missing.itf.json")
    tla = kafka_tla.Model(kafka_tla.Config(mode="kip320"))
    other = tmp_path / "tla.itf.json"
    other.write_text(json.dumps(to_itf(tla, Trace(tla.init_states(), []))))
    assert "a trace of model kafka-tla" in refused(other)
    assert "with TRACE the trace's own settings apply" in refused(HW_LOSS, "--replicas", "3")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert refused("--port", port) == f"hwcheck: error: cannot serve on 127.0.0.1:{port}: Address already in use"


def test_a_trace_under_another_mode_served_then_ctrl_c_exits_130():
    """``hwcheck explore TRACE --mode kip966``: the page opens on the trace's steps under kip966, with
    the step kip966 refuses; Ctrl-C stops the server, exit 130."""
    proc = subprocess.Popen([sys.executable, "-m", "hwcheck.cli", "explore", KIP966_CASE, "--mode", "kip966"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=sigint_at_default)
    try:
        assert proc.stdout.readline().startswith("hwcheck explore: mode=kip966 replicas=2 records=2 crashes=0 "
                                                  "power_failures=1")
        served_at = proc.stdout.readline()
        assert served_at.startswith("serving http://127.0.0.1:") and "(Ctrl-C stops it)" in served_at
        url = served_at.split()[1]
        with urllib.request.urlopen(url + "api/view", timeout=10) as r:
            view = json.loads(r.read())
        assert view["mode"] == "kip966" and view["source"] == KIP966_CASE.name and view["refusal"]["at"] == 10
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and out == "interrupted: the explorer stopped\n" and err == ""


# ---------------------------------------------------------------- in a browser

def test_clicking_through_kip101_scenario_1_turns_no_committed_data_loss_red(browser_page):
    page = browser_page
    labels = _labels(HW_LOSS)
    with served(Model(Config(mode="hw"))) as c:
        page.goto(c.server.url)
        page.wait_for_selector('button.action[data-label="produce(r0)"]')
        assert page.locator("#replicas .replica").count() == 2
        assert page.locator('#invariants li[data-invariant="NoCommittedDataLoss"]').get_attribute("class") == "holds"
        for i, label in enumerate(labels, start=1):
            page.click(f'#actions button.action[data-label="{label}"]')
            page.wait_for_function(f"document.getElementById('counter').textContent === 'step {i} / {i}'")
            assert page.inner_text("#caption") == label
            assert page.locator(".changed").count() > 0, f"step {i}: nothing highlighted"
        red = page.locator('#invariants li[data-invariant="NoCommittedDataLoss"]')
        assert red.get_attribute("class") == "broken" and "broken" in red.inner_text()
        assert "record 0, acknowledged at offset 0, is not there on r1" in red.inner_text()
        assert page.evaluate("document.body.dataset.broken") == "NoCommittedDataLoss"
        # r1 leads at epoch 2 with an empty log: the acknowledged record 0 is gone from the leader
        r1 = page.locator('#replicas .replica[data-replica="r1"]')
        assert "leader epoch 2" in r1.inner_text() and r1.locator(".cell[data-record]").count() == 0
        assert page.locator('#replicas .replica[data-replica="r0"] .cell[data-record="0"]').count() == 1
        assert page.locator("#path tr[data-step]").count() == len(labels) + 1
        page.click("#back")
        page.wait_for_function(f"document.getElementById('counter').textContent === 'step {len(labels) - 1} / {len(labels)}'")
        assert red.get_attribute("class") == "holds"
        assert page.errors == []
        assert all(url.startswith(c.server.url) for url in page.requests), page.requests   # no network


def test_a_shorter_path_to_the_current_state():
    """Two Fetch round trips, the second of which changes nothing (the first records the leader's LEO
    at r1's Fetch), then produce: bfs from the initial state reaches the same state in 4 steps;
    taking them replaces the 7 steps walked."""
    trip = ("send_fetch(r1)", "leader_handle_fetch(r0,r1)", "follower_handle_fetch(r1)")
    with served(Model(Config(mode="hw"))) as c:
        for label in trip + trip + ("produce(r0)",):
            v = c.post("/api/step", {"action": label})
        found = c.post("/api/search", {"shorter": True})
        deadline = time.monotonic() + 20
        while found["state"] == "running" and time.monotonic() < deadline:
            time.sleep(0.05)
            found = c.get("/api/search")[1]
        assert (found["state"], found["kind"], found["walked"], len(found["labels"])) == ("done", "shorter", 7, 4)
        taken = c.post("/api/search/take")
        assert (taken["cursor"], taken["last"]) == (4, 4) and taken["state"] == v["state"]


def test_a_mode_file_variant_walks_downloads_and_replays(tmp_path):
    from hwcheck.checker import variants
    example = ROOT / "docs" / "examples" / "expand_at_hw.py"
    with served(Model(Config(mode=variants.load(example)))) as c:
        for label in ("produce(r0)", "send_fetch(r1)", "leader_handle_fetch(r0,r1)"):
            v = c.post("/api/step", {"action": label})
        assert v["mode"] == "expand-at-hw"
        status, body, _ = c.get("/api/path.itf.json", raw=True)
        switched = c.post("/api/mode", {"mode": "kip380"})
        assert switched["mode"] == "kip380" and switched["last"] == 3 and switched["refusal"] is None
    path = tmp_path / "variant.itf.json"
    path.write_bytes(body)
    assert json.loads(body)["#meta"]["hwcheck"]["mode_file"] == str(example.resolve())
    proc = run_cli_here("replay", path, "--mode-file", example, "--quiet")
    assert proc.returncode == 0 and "replayed 3 steps" in proc.stdout, proc.stderr


def test_a_loaded_trace_switched_to_kip966_marks_the_refused_step(browser_page):
    """The curated kafka15583 trace opened through the page's file input, then run under kip966:
    the step 4.0 refuses (10, controller_handle_failure(r0): 4.0 elects r1 from the ELR as it fences
    r0) is marked in the path and named in the banner."""
    page = browser_page
    with served(Model(Config())) as c:
        page.goto(c.server.url)
        page.wait_for_selector("#actions button.action")
        page.set_input_files("#open", str(KIP966_CASE))
        page.wait_for_function("document.getElementById('counter').textContent.endsWith('/ 13')")
        page.select_option("#mode", "kip966")
        page.click("#switch")
        page.wait_for_selector("#refusal:not([hidden])")
        assert ("refuses step 10" in page.inner_text("#refusal")
                and "controller_handle_failure(r0)" in page.inner_text("#refusal"))
        refused = page.locator('#path tr.refused[data-step="10"]')
        assert refused.count() == 1 and "refused in mode kip966" in refused.inner_text()
        assert page.errors == []


def test_the_downloaded_path_replays(browser_page, tmp_path):
    """Three steps clicked, the path downloaded from the page and given to hwcheck replay."""
    page = browser_page
    with served(Model(Config(mode="hw", records=1))) as c:
        page.goto(c.server.url)
        for i, label in enumerate(("produce(r0)", "send_fetch(r1)", "leader_handle_fetch(r0,r1)"), start=1):
            page.click(f'#actions button.action[data-label="{label}"]')
            page.wait_for_function(f"document.getElementById('counter').textContent === 'step {i} / {i}'")
        with page.expect_download() as download:
            page.click("#download")
        path = tmp_path / "walked.itf.json"
        download.value.save_as(path)
    done = run_cli_here("replay", path, "--quiet")
    assert done.returncode == 0, done.stderr
    assert "replayed 3 steps" in done.stdout
