"""--checkpoint / --resume: a run killed mid-way and resumed reaches the uninterrupted verdict and
counts; --max-memory stops a search that outgrows memory, saying what it covered."""

import pickle
import signal
import subprocess
import sys
import time


from hwcheck.checker.bfs import CHECKPOINT_FILE, bfs, load_checkpoint
from hwcheck.spec import Config, Model

from .conftest import run_cli


def figures(stdout):
    return next(line for line in stdout.splitlines() if line.startswith("figures:")).split(", ")[:3]


def test_killed_run_resumes_to_the_same_verdict_and_counts(tmp_path):
    """The newest mode with one record (53,691 states to depth 34: about 10 s with a checkpoint at
    every level, killed past depth 15 of 34) rather than the defaults (287,803 states to depth 38,
    which test_bfs.py verifies): the resumed command line reaches the counts of an uninterrupted
    search of the same space."""
    ck = tmp_path / "ck"
    settings = ["--mode=epoch", "--records=1", "--quiet", "--workers=1"]
    cmd = [sys.executable, "-m", "hwcheck.cli", "verify", *settings, "--checkpoint", str(ck)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    depth = 0
    while time.monotonic() < deadline and proc.poll() is None and depth < 15:
        time.sleep(0.2)
        try:
            depth = load_checkpoint(str(ck))["counters"]["depth"]
        except Exception:
            pass
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)                 # no chance to clean up
    proc.wait(timeout=30)
    saved = load_checkpoint(str(ck))["counters"]["depth"]
    assert 15 <= saved < 34
    resumed = run_cli("verify", *settings, "--resume", ck)
    whole = bfs(Model(Config(mode="epoch", records=1)))          # uninterrupted, in this process
    assert resumed.returncode == 0, resumed.stderr
    assert whole.verdict == "holds" and whole.complete
    assert "verdict: holds" in resumed.stdout and "every reachable state" in resumed.stdout
    assert figures(resumed.stdout) == [f"figures: {whole.distinct_states:,} distinct states",
                                       f"{whole.generated_states:,} generated", f"depth {whole.depth}"]
    assert "53,691 distinct states" in resumed.stdout and "depth 34" in resumed.stdout


def test_resumed_violating_run_finds_the_same_shortest_trace(tmp_path):
    model = Model(Config(mode="hw"))
    whole = bfs(model)
    part = bfs(model, max_depth=6, checkpoint=str(tmp_path))
    assert part.verdict == "holds" and not part.complete
    resumed = bfs(model, resume=load_checkpoint(str(tmp_path)))
    assert (resumed.distinct_states, resumed.generated_states, resumed.depth) == \
           (whole.distinct_states, whole.generated_states, whole.depth)
    assert resumed.violations[0].labels == whole.violations[0].labels


def test_resume_refuses_another_runs_checkpoint_and_garbage(tmp_path):
    bfs(Model(Config(mode="epoch", records=1)), max_depth=4, checkpoint=str(tmp_path))
    proc = run_cli("verify", "--mode=epoch", "--records=2", "--resume", tmp_path)
    assert proc.returncode == 2 and "another run: records=1 (this run: 2)" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    snap = load_checkpoint(str(tmp_path))
    del snap["format"]                                 # as written by the first checkpoint format
    (tmp_path / CHECKPOINT_FILE).write_bytes(pickle.dumps(snap))
    proc = run_cli("verify", "--mode=epoch", "--records=1", "--resume", tmp_path)
    assert proc.returncode == 2 and "written by another version of hwcheck (format 1" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    (tmp_path / CHECKPOINT_FILE).write_bytes(b"not a pickle")
    proc = run_cli("verify", "--mode=epoch", "--resume", tmp_path)
    assert proc.returncode == 2 and "cannot read the checkpoint" in proc.stderr
    proc = run_cli("verify", "--resume", tmp_path / "nowhere")
    assert proc.returncode == 2 and "no checkpoint in" in proc.stderr and "Traceback" not in proc.stderr


def test_checkpoint_never_replaces_another_checkpoint_silently(tmp_path):
    bfs(Model(Config(mode="epoch", records=1)), max_depth=4, checkpoint=str(tmp_path))
    before = (tmp_path / CHECKPOINT_FILE).read_bytes()
    proc = run_cli("verify", "--mode=hw", "--checkpoint", tmp_path)
    assert proc.returncode == 2 and "already holds a checkpoint" in proc.stderr
    assert (tmp_path / CHECKPOINT_FILE).read_bytes() == before


def test_a_search_past_the_memory_limit_stops_and_says_what_it_covered():
    # 0.1 GB is the least --max-memory takes; 5 replicas with power failures have wide levels of
    # large states, so the search passes it at depth 4 (about 55,000 states, 3 s) where 3 replicas
    # took 290,000 states and 18 s
    proc = run_cli("verify", "--mode=epoch", "--replicas=5", "--records=3", "--crashes=3", "--power-failures=1",
                   "--max-memory=0.1", "--quiet", "--workers=1")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert "memory limit" in line and "covered" in line and "--max-memory" in line
