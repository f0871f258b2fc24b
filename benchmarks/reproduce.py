"""Run the reproductions table (pyproject.toml [tool.hwcheck.reproduce]) several times on real
Kafka clusters and print, per row and release, the outcomes and times: the evidence that a row's
outcome is stable (CI runs each row once).

    python benchmarks/reproduce.py --runs 5                 # every row
    python benchmarks/reproduce.py --runs 5 --only kafka15583-power-failure-min-isr-2
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    from hwcheck.checker.trace import load_itf
    from hwcheck.cluster import jars
    from hwcheck.cluster.report import parse_reproductions
    from hwcheck.cluster.run import artifacts, run
    from hwcheck.spec.releases import release

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", action="append", default=[], help="a row name (repeatable)")
    ap.add_argument("--kafka", action="append", default=[], help="only these exact releases")
    args = ap.parse_args()
    rows = parse_reproductions(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hwcheck"]["reproduce"])
    print(f"{'row':<40} {'kafka':<7} {'expected':<9} {'outcomes':<22} {'checkpoints':<16} {'seconds (min/median/max)'}")
    bad = 0
    for row in rows:
        if args.only and row.name not in args.only:
            continue
        doc = load_itf((ROOT / row.trace).read_text())
        for version, expected in row.expect.items():
            if args.kafka and version not in args.kafka:
                continue
            rel = row.release(version)
            lib = jars.resolve(f"kafka-{rel.version}", artifacts(rel))
            outcomes, diffs, secs = Counter(), Counter(), []
            for _ in range(args.runs):
                t0 = time.monotonic()
                out = run(doc, rel, lib, elr=row.elr, proxy=row.proxy)
                secs.append(time.monotonic() - t0)
                # a row's race (Reproduction.expected): each outcome with the order that explains it
                order = {True: " (assigned first)", False: " (unfenced first)"}.get(out.assigned_first, "")
                outcomes[out.real + order] += 1
                diffs["agree" if out.first_difference is None else f"differ@{out.first_difference}"] += 1
                bad += (out.real, out.first_difference) != row.expected(version, out.assigned_first)
            print(f"{row.name:<40} {version:<7} {expected:<9} "
                  f"{', '.join(f'{k} x{v}' for k, v in outcomes.items()):<22} "
                  f"{', '.join(f'{k} x{v}' for k, v in diffs.items()):<16} "
                  f"{min(secs):.0f}/{statistics.median(secs):.0f}/{max(secs):.0f}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
