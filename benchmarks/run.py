"""hwcheck's performance benchmark (issue 8): one table, every row in a fresh process, then the
issue's four targets checked against the figures of this run.

    python benchmarks/run.py                 # every row: (symmetry off/on) x (1, 2 workers)
    python benchmarks/run.py --skip-large    # without the ~10-million-state kafka-tla kip320 3-replica row
    python benchmarks/run.py --rows epoch,hw --workers 1

Columns: distinct and generated states, wall and CPU seconds (CPU includes worker processes),
distinct states per wall second, peak RSS (MB, worker processes' own growth added), bytes per
visited state = (peak RSS - RSS after imports) / distinct states, and, on the reference-model
rows, hwcheck's wall time over TLC's (TLC without symmetry, the figure TLA+ users get today).

TLC: set TLC_JAR to tla2tools.jar and TLC_SPECS to a checkout of
github.com/hachikuji/kafka-specification to run TLC (2 workers, JVM start included) on the
reference-model rows in this run, with and without TLC's own SYMMETRY (never commit either; the
script writes its .cfg and a one-line wrapper module into TLC_SPECS). Without them the issue's
TLC figures are quoted instead: Kip279, 2 replicas, LogSize 2, MaxRecords 2, MaxLeaderEpoch 3:
53,099 distinct, 152,513 generated, ~7 s wall; 3 replicas: ~75,000 generated states per second,
from which the kip320 3-replica time is estimated (marked ~).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROWS = {
    "epoch": ("design", {"mode": "epoch"}, "defaults"),
    "hw": ("design", {"mode": "hw"}, "defaults, to counterexample"),
    "kip279": ("kafka-tla", {"mode": "kip279", "replicas": 2, "log_size": 2, "max_records": 2, "max_leader_epoch": 3},
               "2 replicas, LogSize 2, MaxRecords 2, MaxLeaderEpoch 3"),
    "kip320-3": ("kafka-tla", {"mode": "kip320", "replicas": 3}, "3 replicas, LogSize 2, MaxRecords 2, MaxLeaderEpoch 3"),
}
TLC_QUOTED = {"kip279": {"distinct": 53_099, "generated": 152_513, "wall": 7.0, "rss": None, "how": "quoted"}}
TLC_RATE_3_REPLICAS = 75_000   # generated states per second (issue 8)
TLC_MODULES = {"kip279": "Kip279", "kip320-3": "Kip320"}

CHILD = r"""
import json, resource, sys, time
from hwcheck.checker.bfs import bfs
from hwcheck.checker.families import make_model
family, config, symmetry, workers = json.loads(sys.argv[1])
model = make_model(family, config)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
c0 = time.process_time()
r = bfs(model, symmetry=symmetry, workers=workers)
cpu = time.process_time() - c0 + resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
print(json.dumps({"verdict": r.verdict, "distinct": r.distinct_states, "generated": r.generated_states,
                  "depth": r.depth, "wall": r.elapsed, "cpu": cpu, "rss": r.peak_rss_mb, "base": base,
                  "steps": r.violations[0].steps if r.violations else None}))
"""


def run_hwcheck(family, config, symmetry, workers) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps([family, config, symmetry, workers])],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_tlc(row: str, config: dict, symmetry: bool):
    """TLC's figures on a reference-model row, or None when TLC_JAR / TLC_SPECS are not set."""
    jar, specs = os.environ.get("TLC_JAR"), os.environ.get("TLC_SPECS")
    if not (jar and specs) or row not in TLC_MODULES:
        return None
    module = TLC_MODULES[row]
    if symmetry:
        # SYMMETRY needs an operator over the spec's Replicas; the variant modules declare Next
        # LOCAL, so a module extending them cannot name it: the copy gets the definition instead
        with open(os.path.join(specs, f"{module}.tla")) as f:
            text = f.read()
        wrapper = f"HwcheckBench{module}Sym"
        end = re.search(r"^={4,}", text, re.M).start()
        text = (text[:end].replace(f"MODULE {module}", f"MODULE {wrapper}", 1)
                + "LOCAL INSTANCE TLC\nReplicaPerms == Permutations(Replicas)\n" + text[end:])
        with open(os.path.join(specs, f"{wrapper}.tla"), "w") as f:
            f.write(text)
        module = wrapper
    replicas = ", ".join(f"r{i}" for i in range(config["replicas"]))
    cfg = (f"CONSTANTS\n  Replicas = {{{replicas}}}\n  LogSize = {config.get('log_size', 2)}\n"
           f"  MaxRecords = {config.get('max_records', 2)}\n  MaxLeaderEpoch = {config.get('max_leader_epoch', 3)}\n"
           f"  None = None\nINIT Init\nNEXT Next\nINVARIANT StrongIsr\nCHECK_DEADLOCK FALSE\n"
           + ("SYMMETRY ReplicaPerms\n" if symmetry else ""))
    path = os.path.join(specs, f"hwcheck-bench-{module}.cfg")
    with open(path, "w") as f:
        f.write(cfg)
    t0 = time.monotonic()
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(["java", "-XX:+UseParallelGC", "-cp", jar, "tlc2.TLC", "-workers", "2", "-config", path,
                                 "-metadir", os.path.join(specs, "states", "hwcheck-bench"), f"{module}.tla"],
                                cwd=specs, stdout=out, stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(proc.pid, 0)     # this child's own CPU time and peak RSS
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - t0
        out.seek(0)
        stdout = out.read()
    m = re.search(r"([\d,]+) states generated, ([\d,]+) distinct states found", stdout)
    if not m:
        sys.exit(f"run.py: TLC printed no state counts on {row}:\n{stdout[-2000:]}")
    return {"generated": int(m.group(1).replace(",", "")), "distinct": int(m.group(2).replace(",", "")),
            "wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss / 1024.0, "how": "measured",
            "verdict": "violated" if "is violated" in stdout else "holds"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default=",".join(ROWS), help="comma-separated: " + ", ".join(ROWS))
    ap.add_argument("--skip-large", action="store_true", help="leave out kip320-3 (~10 M states without symmetry)")
    ap.add_argument("--workers", default="1,2", help="worker counts to run (default 1,2)")
    ap.add_argument("--symmetry", default="off,on", help="off, on or both (default off,on)")
    args = ap.parse_args()
    rows = [r for r in args.rows.split(",") if r and not (args.skip_large and r == "kip320-3")]
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        sys.exit(f"run.py: unknown row {unknown[0]!r}; choose from {', '.join(ROWS)}")
    workers = [int(w) for w in args.workers.split(",")]
    symmetries = [s == "on" for s in args.symmetry.split(",")]
    header = ["checker", "model", "mode", "bounds", "sym", "w", "verdict", "distinct", "generated", "wall s",
              "CPU s", "states/s", "RSS MB", "B/state", "vs TLC"]
    table, notes, runs, tlcs = [], [], {}, {}
    load = os.getloadavg()[0]

    def add(checker, family, mode, bounds, symmetry, w, r, tlc=None):
        verdict = r["verdict"] + (f" ({r['steps']} steps)" if r.get("steps") else "")
        rss = r.get("rss")
        per_state = "" if rss is None or "base" not in r else f"{(rss - r['base']) * 2**20 / max(r['distinct'], 1):.0f}"
        ratio = "" if tlc is None else ("~" if tlc["how"] == "estimated" else "") + f"{r['wall'] / tlc['wall']:.2f}"
        table.append([checker, family, mode, bounds, "on" if symmetry else "off", str(w), verdict, f"{r['distinct']:,}",
                      f"{r['generated']:,}", ("~" if r.get("how") == "estimated" else "") + f"{r['wall']:.1f}",
                      "" if r.get("cpu") is None else f"{r['cpu']:.1f}",
                      f"{r['distinct'] / r['wall']:,.0f}", "" if rss is None else f"{rss:.0f}", per_state, ratio])
        print("  ".join(table[-1]), file=sys.stderr, flush=True)

    for row in rows:
        family, config, bounds = ROWS[row]
        tlc = None
        if family == "kafka-tla":
            tlc = run_tlc(row, config, False)     # the reference of every ratio, so always run
            for symmetry in sorted(set(symmetries) | {False}):
                t = tlc if not symmetry else run_tlc(row, config, True)
                if t is not None:
                    add("TLC", family, config["mode"], bounds, symmetry, 2, t)
            if tlc is None and row in TLC_QUOTED:
                tlc = TLC_QUOTED[row]
                notes.append(f"TLC on {row}: not run (TLC_JAR/TLC_SPECS unset); issue 8's figures quoted "
                             f"({tlc['distinct']:,} distinct, {tlc['generated']:,} generated, ~{tlc['wall']:.0f} s)")
        for symmetry in symmetries:
            for w in workers:
                r = run_hwcheck(family, config, symmetry, w)
                runs[(row, symmetry, w)] = r
                if family == "kafka-tla" and tlc is None and not symmetry:      # the 3-replica estimate
                    tlc = {"wall": r["generated"] / TLC_RATE_3_REPLICAS, "how": "estimated"}
                    notes.append(f"TLC on {row}: not run; time estimated as hwcheck's generated states / issue "
                                 f"8's ~75,000 generated states/s on 3 replicas (~{tlc['wall']:.0f} s)")
                add("hwcheck", family, config["mode"], bounds, symmetry, w, r, tlc)
        if tlc is not None:
            tlcs[row] = tlc
    widths = [max(len(x[c]) for x in [header] + table) for c in range(len(header))]
    print(f"hwcheck benchmark: {os.cpu_count()} cores, load average {load:.1f} at start, Python {sys.version.split()[0]}")
    for line in [header, ["-" * w for w in widths]] + table:
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip())
    for note in notes:
        print("note:", note)
    for line in targets(runs, tlcs, max(workers)):
        print("target:", line)


def targets(runs: dict, tlcs: dict, w: int) -> list:
    """Issue 8's four targets, judged on this run's figures (each line says met / NOT met)."""
    out = []

    def verdict(ok):
        return "met" if ok else "NOT met"

    tlc, r = tlcs.get("kip279"), runs.get(("kip279", False, w))
    if tlc and r:
        ratio = r["wall"] / tlc["wall"]
        same = r["distinct"] == tlc["distinct"]
        out.append(f"kip279, no symmetry, {w} workers: hwcheck/TLC wall = {ratio:.2f} (<= 1.0), distinct "
                   f"{r['distinct']:,} vs TLC {tlc['distinct']:,}: {verdict(ratio <= 1.0 and same)}"
                   + (" (TLC quoted)" if tlc["how"] == "quoted" else ""))
    tlc, r = tlcs.get("kip320-3"), runs.get(("kip320-3", True, w))
    if tlc and r:
        speedup = tlc["wall"] / r["wall"]
        out.append(f"kip320 3 replicas, --symmetry, {w} workers: {speedup:.1f}x faster than TLC (>= 3x): "
                   f"{verdict(speedup >= 3)}" + (" (TLC estimated)" if tlc["how"] == "estimated" else ""))
    for (row, symmetry, workers), r in sorted(runs.items(), key=str):
        if r["distinct"] >= 9_000_000:
            per_state = (r["rss"] - r["base"]) * 2**20 / r["distinct"]
            out.append(f"{row}, symmetry {'on' if symmetry else 'off'}, {workers} workers, {r['distinct']:,} states: "
                       f"{per_state:.0f} bytes per visited state (<= 64): {verdict(per_state <= 64)}")
    for (row, symmetry, workers), r in sorted(runs.items(), key=str):
        two = runs.get((row, symmetry, 2))
        if workers == 1 and two and r["distinct"] >= 1_000_000:
            speedup = r["wall"] / two["wall"]
            out.append(f"{row}, symmetry {'on' if symmetry else 'off'}, {r['distinct']:,} states: 2 workers "
                       f"{speedup:.2f}x one worker (>= 1.6): {verdict(speedup >= 1.6)}")
    return out


if __name__ == "__main__":
    main()
