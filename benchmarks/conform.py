"""Conformance walks on real Kafka clusters (``hwcheck conform``, cluster/conform.py): per release
and seed, how many steps the walk took, where the cluster first parted from the model (if it did),
its differences there, and the time.

    python benchmarks/conform.py --kafka 0.11.0.3 --kafka 3.9.1 --kafka 4.4.0 --steps 200 --seeds 1
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    from hwcheck.cluster import jars
    from hwcheck.cluster.conform import walk_config, walk_document
    from hwcheck.cluster.run import artifacts, run
    from hwcheck.spec import Model
    from hwcheck.spec.releases import release

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kafka", action="append", required=True, help="an exact release (repeatable)")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=1, help="seeds 0 .. N-1")
    ap.add_argument("--keep", type=Path, default=None, help="keep each walk's evidence under this folder")
    args = ap.parse_args()
    print(f"{'kafka':<9} {'mode':<11} {'seed':>4} {'steps':>5} {'parted at':>9} {'seconds':>7}  differences")
    for version in args.kafka:
        rel = release(version)
        lib = jars.resolve(f"kafka-{rel.version}", artifacts(rel))
        for seed in range(args.seeds):
            doc = walk_document(Model(walk_config(rel.mode, args.steps)), seed, args.steps)
            keep = None if args.keep is None else args.keep / f"kafka-{rel.version}-seed-{seed}"
            t0 = time.monotonic()
            out = run(doc, rel, lib, keep=keep, proxy=True)
            parted = out.first_difference
            diffs = next((r.differences for r in out.rows if r.index == parted), []) if parted else []
            print(f"{rel.version:<9} {rel.mode:<11} {seed:>4} {len(doc['states']) - 1:>5} "
                  f"{parted if parted is not None else '-':>9} {time.monotonic() - t0:7.0f}  {'; '.join(diffs)[:160]}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
