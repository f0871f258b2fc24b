"""bfs against the Spark engine on one model, side by side: wall time, states/s, peak memory.

    python benchmarks/spark_vs_bfs.py                      # the >= 1,000,000-state default model
    python benchmarks/spark_vs_bfs.py --records 1 --crashes 1 --partitions 2,4   # a quick look

Every run is a fresh child process, so each peak-memory figure is that run's own:
``driver`` is the Python process that runs the search (for bfs it holds the whole visited set;
for Spark it holds per-level counts only), ``jvm`` the Spark JVM (in local mode driver and
executor at once: shuffle and cached partitions), ``workers`` the Python workers' peaks summed
(expansion, dedup, invariants). ``wall`` includes starting the JVM; ``search`` does not.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def descendants(pid: int):
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in children.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def hwm_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def child(spec: dict) -> dict:
    """One run, in this (child) process; prints its figures as JSON."""
    from hwcheck.checker.bfs import bfs
    from hwcheck.spec import Config, Model

    model = Model(Config(**spec["config"]))
    t0 = time.monotonic()
    if spec["engine"] == "bfs":
        r = bfs(model)
        jvm = workers = 0.0
    else:
        from hwcheck.checker.spark import spark_bfs, start_spark
        sc = start_spark(spec["master"])
        r = spark_bfs(model, sc=sc, partitions=spec["partitions"])
        jvm_pid = sc._gateway.proc.pid
        jvm = hwm_mb(jvm_pid)
        workers = sum(hwm_mb(p) for p in descendants(jvm_pid))
        sc.stop()
    return {"verdict": r.verdict, "distinct": r.distinct_states, "generated": r.generated_states,
            "depth": r.depth, "search": r.elapsed, "wall": time.monotonic() - t0,
            "driver_mb": r.peak_rss_mb, "jvm_mb": jvm, "workers_mb": workers}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", default="epoch")
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--records", type=int, default=3)
    ap.add_argument("--crashes", type=int, default=3)
    ap.add_argument("--max-epoch", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--partitions", default="2,8,32", help="comma-separated partition counts")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(json.loads(a.child))))
        return
    config = dict(mode=a.mode, replicas=a.replicas, records=a.records, crashes=a.crashes, max_epoch=a.max_epoch)
    runs = [("bfs", {"engine": "bfs"})] + [
        (f"spark {a.master} P={p}", {"engine": "spark", "master": a.master, "partitions": int(p)})
        for p in a.partitions.split(",")]
    print(f"model: {' '.join(f'{k}={v}' for k, v in config.items())}; {os.cpu_count()} cores", flush=True)
    head = f"{'engine':<24} {'distinct':>10} {'depth':>5} {'wall s':>8} {'search s':>8} {'states/s':>9} " \
           f"{'driver MB':>9} {'jvm MB':>7} {'workers MB':>10}"
    print(head + "\n" + "-" * len(head), flush=True)
    for name, spec in runs:
        spec["config"] = config
        proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{name:<24} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}", flush=True)
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"{name:<24} {r['distinct']:>10,} {r['depth']:>5} {r['wall']:>8.1f} {r['search']:>8.1f} "
              f"{r['distinct'] / r['search']:>9,.0f} {r['driver_mb']:>9.0f} {r['jvm_mb']:>7.0f} "
              f"{r['workers_mb']:>10.0f}", flush=True)


if __name__ == "__main__":
    main()
