"""A real Spark standalone cluster on 127.0.0.1 (a master and a worker started from the pyspark
installation): ``hwcheck verify --engine spark --master spark://...`` against bfs, and a worker
killed in the middle of a run. Deselect locally with ``-m 'not spark_cluster'``; CI runs them."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import pyspark

from hwcheck.checker.bfs import bfs
from hwcheck.spec import Config, Model

from .conftest import run_labels
from .test_spark import states_within

pytestmark = [pytest.mark.spark_cluster, pytest.mark.slow]

SPARK_CLASS = Path(pyspark.__file__).resolve().parent / "bin" / "spark-class"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_env(tmp: Path) -> dict:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_WORKER_DIR=str(tmp / "work"),
               PYSPARK_PYTHON=sys.executable,
               # nothing left in /tmp by the daemons, even killed: no hsperfdata, temp files in tmp
               SPARK_DAEMON_JAVA_OPTS=f"-XX:-UsePerfData -Djava.io.tmpdir={tmp}",
               SPARK_LAUNCHER_OPTS="-XX:-UsePerfData", TMPDIR=str(tmp))
    env.pop("SPARK_HOME", None)     # bin/spark-class finds the pyspark installation itself
    return env


def start(tmp: Path, name: str, *args) -> subprocess.Popen:
    """A Spark daemon in its own process group (so its executors die with it), logging to tmp."""
    log = open(tmp / f"{name}.log", "w")
    return subprocess.Popen([str(SPARK_CLASS), *args], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=spark_env(tmp), start_new_session=True)


def stop(proc: subprocess.Popen) -> None:
    """End a daemon we started, and whatever it started, by its process group id."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def wait_for(what: str, check, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


class Cluster:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.port, self.ui = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.master = start(tmp, "master", "org.apache.spark.deploy.master.Master",
                            "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui))
        self.workers = []
        try:
            wait_for("the master", lambda: self.status() is not None)
        except BaseException:
            stop(self.master)                 # a fixture that fails to start leaves nothing running
            raise

    def status(self):
        """The master's JSON summary, or None while it cannot give one: not listening yet, or (while
        its UI is still attaching handlers) answering /json/ with its HTML page."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json/", timeout=2) as r:
                return json.load(r)
        except (OSError, ValueError):
            return None

    def add_worker(self) -> subprocess.Popen:
        # a new worker is one whose id the master did not list before (a killed worker may still
        # be listed ALIVE until its heartbeat times out, or drop out meanwhile: counting races)
        before = {w.get("id") for w in (self.status() or {}).get("workers", [])}
        w = start(self.tmp, f"worker{len(self.workers)}", "org.apache.spark.deploy.worker.Worker", self.url,
                  "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", str(free_port()))
        self.workers.append(w)
        wait_for("a worker to register",
                 lambda: any(x.get("id") not in before for x in self.alive_workers()), 120)
        return w

    def alive_workers(self):
        s = self.status() or {}
        return [w for w in s.get("workers", []) if w.get("state") == "ALIVE"]

    def finished_tasks(self) -> int:
        """Tasks finished by the executors so far, from their logs in the worker folder."""
        return sum(f.read_text(errors="replace").count("Finished task")
                   for f in (self.tmp / "work").glob("app-*/*/stderr"))

    def close(self):
        for p in self.workers + [self.master]:
            stop(p)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A master and one worker (1 core, 1 GiB); tests may kill the worker and add others."""
    c = Cluster(tmp_path_factory.mktemp("spark-cluster"))
    c.add_worker()
    yield c
    c.close()


def verify(cluster, args, cwd, partitions=2):
    cmd = [sys.executable, "-m", "hwcheck.cli", "verify", *args, "--engine=spark", f"--master={cluster.url}",
           f"--partitions={partitions}"]
    return subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)


def test_standalone_cluster_finds_the_same_shortest_trace_as_bfs(cluster, tmp_path):
    model = Model(Config(mode="hw", records=1, crashes=1, acks="1"))
    want = bfs(model)
    out = tmp_path / "loss.itf.json"
    proc = verify(cluster, ["--mode=hw", "--records=1", "--crashes=1", "--acks=1", "--out", str(out)], tmp_path)
    stdout, stderr = proc.communicate(timeout=240)
    assert proc.returncode == 1, stdout + stderr
    assert stderr == ""
    assert f"master {cluster.url}" in stdout
    [w] = want.violations
    assert f"verdict: violated: {w.invariant} after {w.steps} steps" in stdout
    assert f"{states_within(model, w.steps):,} distinct states" in stdout and f"depth {want.depth}," in stdout
    doc = json.loads(out.read_text())
    labels = [model.parse_label(s["#meta"]["action"]) for s in doc["states"][1:]]
    assert w.invariant in model.violated(run_labels(model, labels)[-1])


def test_worker_killed_mid_run_gives_the_same_figures_or_a_clear_error(cluster, tmp_path):
    [first] = [w for w in cluster.workers if w.poll() is None]
    args = ["--mode=hw", "--records=1", "--crashes=0", "--max-epoch=0", "--quiet"]      # 9 levels
    want = bfs(Model(Config(mode="hw", records=1, crashes=0, max_epoch=0)))
    proc = verify(cluster, args, tmp_path, partitions=1)      # one task per stage: the run's pace is set
    # some levels done (their cached partitions and shuffle files live on that executor), then
    # the worker and its executor die
    wait_for("the search to be under way", lambda: cluster.finished_tasks() >= 6, 180)    # 3 levels
    assert proc.poll() is None, "the run ended before the worker could be killed"
    stop(first)
    cluster.add_worker()                   # somewhere for Spark to retry the lost tasks
    stdout, stderr = proc.communicate(timeout=300)
    print(f"after the worker was killed: exit {proc.returncode}\n{stdout}{stderr}")
    if proc.returncode == 0:
        assert f"{want.distinct_states:,} distinct states, {want.generated_states:,} generated, " \
               f"depth {want.depth}," in stdout, stdout
        assert "verdict: holds" in stdout
    else:
        lines = stderr.strip().splitlines()
        assert proc.returncode == 2, stdout + stderr
        assert len(lines) == 1 and lines[0].startswith("hwcheck: error:") and "Traceback" not in stderr
        assert "verdict" not in stdout
