"""bfs against the Spark engine, side by side: wall time, states/s, peak memory, per-level overhead, scaling.

    python benchmarks/spark_vs_bfs.py                        # all three sections below (~12 min on 2 busy cores)
    python benchmarks/spark_vs_bfs.py --sections main        # only bfs vs Spark on the ~1.5 M-state model
    python benchmarks/spark_vs_bfs.py --records 1 --crashes 1 --sections main   # a quick look

Sections (one invocation runs them one after another, so their ratios are side by side):

- ``main``: on the default model (epoch, 2 replicas, 3 records, 2 crashes, epoch <= 3: 1,178,638
  states, depth 46; the 3-crash model the figures used before has grown to 10.6 million states
  with the spec's later rules): ``bfs --workers 1``, ``bfs --workers 2`` and Spark ``--master``
  (default local[2]) with ``--main-partitions`` (default 2, the engine's default there); the
  ratios Spark / bfs. ``--repeat N`` runs N (bfs --workers 2, Spark) pairs one after the other
  and prints each pair's ratio and the median: on a shared machine the load drifts between runs.
- ``overhead``: Spark on a tiny model (epoch, 1 record, 1 crash, epoch <= 1: 1,068 states in 19
  levels of at most a few hundred states): the wall time of a level with a handful of states.
- ``scaling``: the ``--scaling-*`` model (default 2 records, 2 crashes, epoch <= 2: 152,045 states,
  depth 38; smaller than the main one so that six Spark runs fit in minutes on 2 cores) with
  local[1] and local[2] and 2, 8, 32 partitions; each run's time relative to local[1] with 2.

Every run is a fresh child process, so each peak-memory figure is that run's own: ``driver`` is
the Python process that runs the search (for bfs it holds the whole visited set; for Spark it holds
per-level counts only), ``jvm`` the Spark JVM (in local mode driver and executor at once: shuffle
and task buffers), ``workers`` the Python workers alive at the end, their peaks summed (expansion,
merges). ``wall`` includes starting the JVM; ``search`` does not. ``small lvl`` is the median
wall time of the run's levels with at most 100 new states.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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
    levels = []          # (new states, wall s) per level
    last = [0.0]

    def progress(p):
        levels.append((p["queue"], p["elapsed"] - last[0]))
        last[0] = p["elapsed"]

    t0 = time.monotonic()
    if spec["engine"] == "bfs":
        r = bfs(model, workers=spec["workers"])
        jvm = workers = 0.0
    else:
        from hwcheck.checker.spark import spark_bfs, start_spark, stop_spark
        sc = start_spark(spec["master"])
        r = spark_bfs(model, sc=sc, partitions=spec["partitions"], progress=progress)
        jvm_pid = sc._gateway.proc.pid
        jvm = hwm_mb(jvm_pid)
        workers = sum(hwm_mb(p) for p in descendants(jvm_pid))
        stop_spark(sc)
    small = [t for n, t in levels if n <= 100]
    return {"verdict": r.verdict, "distinct": r.distinct_states, "generated": r.generated_states,
            "depth": r.depth, "search": r.elapsed, "wall": time.monotonic() - t0,
            "driver_mb": r.peak_rss_mb, "jvm_mb": jvm, "workers_mb": workers,
            "levels": len(levels), "small_levels": len(small),
            "small_level_s": statistics.median(small) if small else None}


HEAD = (f"{'run':<24} {'distinct':>10} {'depth':>5} {'verdict':>8} {'wall s':>8} {'search s':>8} {'states/s':>9} "
        f"{'small lvl':>9} {'driver MB':>9} {'jvm MB':>7} {'workers MB':>10}")


def run(name: str, spec: dict) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"{name:<24} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}", flush=True)
        return {}
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    small = f"{r['small_level_s']:.2f}" if r["small_level_s"] is not None else "-"
    print(f"{name:<24} {r['distinct']:>10,} {r['depth']:>5} {r['verdict']:>8} {r['wall']:>8.1f} {r['search']:>8.1f} "
          f"{r['distinct'] / max(r['search'], 1e-9):>9,.0f} {small:>9} {r['driver_mb']:>9.0f} {r['jvm_mb']:>7.0f} "
          f"{r['workers_mb']:>10.0f}", flush=True)
    return r


def section(title: str, config: dict) -> None:
    print(f"\n== {title}; model: {' '.join(f'{k}={v}' for k, v in config.items())}; {os.cpu_count()} cores", flush=True)
    print(HEAD + "\n" + "-" * len(HEAD), flush=True)


def same(results: dict) -> str:
    figures = {(r["distinct"], r["depth"], r["verdict"]) for r in results.values() if r}
    return "all runs agree (distinct, depth, verdict)" if len(figures) == 1 else f"RUNS DISAGREE: {figures}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sections", default="main,overhead,scaling")
    ap.add_argument("--mode", default="epoch")
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--records", type=int, default=3)
    ap.add_argument("--crashes", type=int, default=2)
    ap.add_argument("--max-epoch", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--main-partitions", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1, help="main: bfs --workers 2 / Spark pairs to run")
    ap.add_argument("--scaling-records", type=int, default=2)
    ap.add_argument("--scaling-crashes", type=int, default=2)
    ap.add_argument("--scaling-max-epoch", type=int, default=2)
    ap.add_argument("--partitions", default="2,8,32", help="scaling: comma-separated partition counts")
    ap.add_argument("--masters", default="local[1],local[2]", help="scaling: comma-separated masters")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(json.loads(a.child))))
        return
    sections = a.sections.split(",")
    spark = lambda master, p, config: {"engine": "spark", "master": master, "partitions": p, "config": config}
    bfs = lambda w, config: {"engine": "bfs", "workers": w, "config": config}

    if "main" in sections:
        config = dict(mode=a.mode, replicas=a.replicas, records=a.records, crashes=a.crashes, max_epoch=a.max_epoch)
        section("main: bfs vs Spark", config)
        name = f"spark {a.master} P={a.main_partitions}"
        res = {"bfs --workers 1": run("bfs --workers 1", bfs(1, config))}
        pairs = []
        for i in range(a.repeat):
            # bfs --workers 2 and Spark one after the other, a.repeat times: on a shared machine the
            # load drifts, and a ratio is only fair between neighbours
            suffix = f" #{i + 1}" if a.repeat > 1 else ""
            res["bfs --workers 2" + suffix] = b = run("bfs --workers 2" + suffix, bfs(2, config))
            res[name + suffix] = s = run(name + suffix, spark(a.master, a.main_partitions, config))
            if b and s:
                pairs.append((b, s))
        print(same(res))
        for i, (b, s) in enumerate(pairs):
            w1 = res["bfs --workers 1"]
            print(f"{'pair ' + str(i + 1) + ': ' if len(pairs) > 1 else ''}wall: {name} / bfs --workers 2 = "
                  f"{s['wall'] / b['wall']:.2f}x (search {s['search'] / b['search']:.2f}x)"
                  + (f"; / bfs --workers 1 = {s['wall'] / w1['wall']:.2f}x" if w1 and i == 0 else ""))
        if len(pairs) > 1:
            print(f"median wall ratio: {statistics.median(s['wall'] / b['wall'] for b, s in pairs):.2f}x")

    if "overhead" in sections:
        config = dict(mode="epoch", replicas=2, records=1, crashes=1, max_epoch=1)
        section("overhead: levels of a handful of states", config)
        res = {p: run(f"spark {a.master} P={p}", spark(a.master, p, config)) for p in (2, 8, 32)}
        for p, r in res.items():
            if r:
                print(f"P={p}: {r['levels']} levels, search {r['search']:.1f} s = {r['search'] / r['levels']:.2f} s a level; "
                      f"median of the {r['small_levels']} levels with <= 100 new states: {r['small_level_s']:.2f} s")

    if "scaling" in sections:
        config = dict(mode="epoch", replicas=2, records=a.scaling_records, crashes=a.scaling_crashes,
                      max_epoch=a.scaling_max_epoch)
        section("scaling: cores x partitions", config)
        res = {"bfs --workers 1": run("bfs --workers 1", bfs(1, config)),
               "bfs --workers 2": run("bfs --workers 2", bfs(2, config))}
        for master in a.masters.split(","):
            for p in a.partitions.split(","):
                res[f"spark {master} P={p}"] = run(f"spark {master} P={p}", spark(master, int(p), config))
        print(same(res))
        base_name = f"spark {a.masters.split(',')[0]} P={a.partitions.split(',')[0]}"
        base = res.get(base_name)
        if base:
            print(f"search time relative to {base_name} (lower is faster):")
            for name, r in res.items():
                if r:
                    print(f"  {name:<24} {r['search'] / base['search']:.2f}")
            for p in a.partitions.split(","):
                one, two = (res.get(f"spark {m} P={p}") for m in a.masters.split(",")[:2])
                if one and two:
                    print(f"  P={p}: {a.masters.split(',')[0]} / {a.masters.split(',')[1]} search = "
                          f"{one['search'] / two['search']:.2f}x")


if __name__ == "__main__":
    main()
