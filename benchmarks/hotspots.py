"""Where one bfs worker's time goes: cProfile over a benchmark row, grouped by part.

    python benchmarks/hotspots.py                              # kip320-3 with --symmetry, to depth 16
    python benchmarks/hotspots.py --row epoch --depth none     # the design model's defaults, whole space
    python benchmarks/hotspots.py --row kip320-3 --no-symmetry --depth 12 --top 20

Prints each part's cumulative share of the profiled time (the spec's successors, the canonical
form, pickling the frontier, invariants, the rest = the engine's loop and numpy), then the
functions with the most time of their own. cProfile slows Python calls down unevenly: read shares,
not seconds.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import ROWS  # noqa: E402  (the benchmark's rows)

from hwcheck.checker.bfs import bfs  # noqa: E402
from hwcheck.checker.families import make_model  # noqa: E402

PARTS = [   # (part, predicate on a pstats key (file, line, function name))
    ("successors (the spec)", lambda f, name: name == "successors" and "/spec/" in f),
    ("canonical form", lambda f, name: name == "canon" and f.endswith("symmetry.py")),
    ("pickling the frontier", lambda f, name: name in ("<built-in method _pickle.dumps>",
                                                       "<built-in method _pickle.loads>")),
    ("invariants", lambda f, name: name == "violations" and f.endswith("bfs.py")),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--row", default="kip320-3", choices=list(ROWS))
    ap.add_argument("--symmetry", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--depth", default="16", help="max depth, or 'none' for the whole space (default 16)")
    ap.add_argument("--top", type=int, default=12, help="functions listed by own time (default 12)")
    args = ap.parse_args()
    family, config, bounds = ROWS[args.row]
    depth = None if args.depth == "none" else int(args.depth)
    model = make_model(family, config)
    profiler = cProfile.Profile()
    result = profiler.runcall(bfs, model, symmetry=args.symmetry, workers=1, max_depth=depth)
    stats = pstats.Stats(profiler)
    total = stats.total_tt
    print(f"{family} {config['mode']} ({bounds}), symmetry {'on' if args.symmetry else 'off'}, depth "
          f"{args.depth}: {result.distinct_states:,} states, {result.generated_states:,} generated, "
          f"{total:.1f} s under cProfile")
    rest = total
    for part, match in PARTS:
        cum = sum(row[3] for (f, _, name), row in stats.stats.items() if match(f, name))
        rest -= cum
        print(f"  {part:<24} {100 * cum / total:5.1f}%")
    print(f"  {'the engine and numpy':<24} {100 * rest / total:5.1f}%")
    print()
    stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
