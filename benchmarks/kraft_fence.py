"""Repeat the fence probe (cluster/fence.py) on real clusters: does a fence take a follower's
fetcher thread, and the answer it waits for, away? Yes under KRaft, no under ZooKeeper: the
evidence for the model's ``fence_stops_fetchers`` (tests/test_fence_kafka.py runs it once per
release).

    python benchmarks/kraft_fence.py --kafka 3.9.0 --kafka 4.0.0 --kafka 3.4.0 --runs 3
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path


def main() -> int:
    from hwcheck.cluster import jars
    from hwcheck.cluster.fence import probe
    from hwcheck.cluster.run import artifacts
    from hwcheck.spec.releases import release

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kafka", action="append", default=[], help="a release (repeatable; default 3.9.0)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--keep", type=Path, help="keep each run's brokers (configs, logs, data) under this folder")
    args = ap.parse_args()
    for version in args.kafka or ["3.9.0"]:
        rel = release(version)
        lib = jars.resolve(f"kafka-{rel.version}", artifacts(rel))
        seen = Counter()
        for i in range(args.runs):
            t0 = time.monotonic()
            keep = args.keep / f"{rel.version}-run{i + 1}" if args.keep else None
            got = probe(rel, lib, print if args.verbose else (lambda m: None), keep)
            seen["lost" if got.lost else "kept"] += 1
            print(f"{rel.version} run {i + 1}: {got.line()} ({time.monotonic() - t0:.0f} s)", flush=True)
        print(f"{rel.version}: answer {', '.join(f'{k} x{v}' for k, v in seen.items())}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
