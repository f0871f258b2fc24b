"""hwcheck's performance benchmark (issue 8): one table, every row in a fresh process.

    python benchmarks/run.py                 # every row: (symmetry off/on) x (1, 2 workers)
    python benchmarks/run.py --skip-large    # without the ~10-million-state kafka-tla kip320 3-replica row
    python benchmarks/run.py --rows epoch,hw --workers 1

Columns: distinct and generated states, wall and CPU seconds (CPU includes worker processes),
distinct states per wall second, peak RSS (MB, worker processes' own growth added), and bytes
per visited state = (peak RSS - RSS after imports) / distinct states.

TLC: set TLC_JAR to tla2tools.jar and TLC_SPECS to a checkout of
github.com/hachikuji/kafka-specification to run TLC (2 workers) on the reference-model rows
beside hwcheck (never commit either). Without them the issue's TLC figures are quoted as the
reference: Kip279, 2 replicas, LogSize 2, MaxRecords 2, MaxLeaderEpoch 3: 53,099 distinct,
152,513 generated, ~7 s wall with 2 workers (JVM start included); 3 replicas: ~75,000 generated
states per second, from which the kip320 3-replica time is estimated (marked ~).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

ROWS = {
    "epoch": ("design", {"mode": "epoch"}, "defaults"),
    "hw": ("design", {"mode": "hw"}, "defaults, to counterexample"),
    "kip279": ("kafka-tla", {"mode": "kip279", "replicas": 2, "log_size": 2, "max_records": 2, "max_leader_epoch": 3},
               "2 replicas, LogSize 2, MaxRecords 2, MaxLeaderEpoch 3"),
    "kip320-3": ("kafka-tla", {"mode": "kip320", "replicas": 3}, "3 replicas, LogSize 2, MaxRecords 2, MaxLeaderEpoch 3"),
}
TLC_QUOTED = {"kip279": {"distinct": 53_099, "generated": 152_513, "wall": 7.0, "note": "issue 8"}}
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


def run_tlc(row: str, config: dict):
    """TLC's figures on a reference-model row, or None when TLC_JAR / TLC_SPECS are not set."""
    jar, specs = os.environ.get("TLC_JAR"), os.environ.get("TLC_SPECS")
    if not (jar and specs) or row not in TLC_MODULES:
        return None
    module = TLC_MODULES[row]
    replicas = ", ".join(f"r{i}" for i in range(config["replicas"]))
    cfg = (f"CONSTANTS\n  Replicas = {{{replicas}}}\n  LogSize = {config.get('log_size', 2)}\n"
           f"  MaxRecords = {config.get('max_records', 2)}\n  MaxLeaderEpoch = {config.get('max_leader_epoch', 3)}\n"
           f"  None = None\n  Nil = Nil\nINIT Init\nNEXT Next\nINVARIANT StrongIsr\n")
    path = os.path.join(specs, f"hwcheck-bench-{module}.cfg")
    with open(path, "w") as f:
        f.write(cfg)
    t0 = time.monotonic()
    out = subprocess.run(["java", "-XX:+UseParallelGC", "-cp", jar, "tlc2.TLC", "-workers", "2", "-config", path,
                          f"{module}.tla"], cwd=specs, capture_output=True, text=True).stdout
    wall = time.monotonic() - t0
    m = re.search(r"([\d,]+) states generated, ([\d,]+) distinct states found", out)
    if not m:
        return None
    return {"generated": int(m.group(1).replace(",", "")), "distinct": int(m.group(2).replace(",", "")),
            "wall": wall, "note": "measured"}


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
    header = ["model", "mode", "bounds", "sym", "w", "verdict", "distinct", "generated", "wall s", "CPU s",
              "states/s", "RSS MB", "B/state", "TLC wall s", "hwcheck/TLC"]
    table = []
    notes = []
    load = os.getloadavg()[0]
    for row in rows:
        family, config, bounds = ROWS[row]
        tlc = run_tlc(row, config) if family == "kafka-tla" else None
        if family == "kafka-tla" and tlc is None:
            tlc = TLC_QUOTED.get(row)
        for symmetry in symmetries:
            for w in workers:
                r = run_hwcheck(family, config, symmetry, w)
                verdict = r["verdict"] + (f" ({r['steps']} steps)" if r["steps"] else "")
                tlc_wall, ratio = "", ""
                if tlc is not None:
                    tlc_wall = f"{tlc['wall']:.1f}"
                    ratio = f"{r['wall'] / tlc['wall']:.2f}"
                elif row == "kip320-3" and not symmetry:
                    est = r["generated"] / TLC_RATE_3_REPLICAS
                    tlc_wall, ratio = f"~{est:.0f}", f"~{r['wall'] / est:.2f}"
                elif row == "kip320-3":
                    tlc_wall = "see sym=off"
                table.append([family, config["mode"], bounds, "on" if symmetry else "off", str(w), verdict,
                              f"{r['distinct']:,}", f"{r['generated']:,}", f"{r['wall']:.1f}", f"{r['cpu']:.1f}",
                              f"{r['distinct'] / r['wall']:,.0f}", f"{r['rss']:.0f}",
                              f"{(r['rss'] - r['base']) * 2**20 / max(r['distinct'], 1):.0f}", tlc_wall, ratio])
                print("  ".join(table[-1]), file=sys.stderr, flush=True)
        if family == "kafka-tla":
            if tlc is not None and tlc.get("note") == "measured":
                notes.append(f"TLC on {row}: measured in this run ({tlc['distinct']:,} distinct, "
                             f"{tlc['generated']:,} generated)")
            elif tlc is not None:
                notes.append(f"TLC on {row}: not run (TLC_JAR/TLC_SPECS unset); issue 8's figures quoted "
                             f"({tlc['distinct']:,} distinct, {tlc['generated']:,} generated, ~{tlc['wall']:.0f} s)")
            else:
                notes.append(f"TLC on {row}: not run; time estimated from issue 8's ~75,000 generated states/s "
                             "on 3 replicas (~)")
    widths = [max(len(x[c]) for x in [header] + table) for c in range(len(header))]
    print(f"hwcheck benchmark: {os.cpu_count()} cores, load average {load:.1f} at start, Python {sys.version.split()[0]}")
    for line in [header, ["-" * w for w in widths]] + table:
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip())
    for note in notes:
        print("note:", note)


if __name__ == "__main__":
    main()
