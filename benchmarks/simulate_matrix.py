"""hwcheck simulate against the verdict matrix: every violating gate entry, several seeds.

    python benchmarks/simulate_matrix.py                       # 10 seeds, 60 s a seed, every violating entry
    python benchmarks/simulate_matrix.py --seeds 3 --time 20 --entries hw-loss,kip380-unclean
    python benchmarks/simulate_matrix.py --throughput          # walk steps/s: processes vs Spark local[2]
    python benchmarks/simulate_matrix.py --hit --first-seed 100 --seeds 20   # issue 42's target, seeds 100-119
    python benchmarks/simulate_matrix.py --hit --random --seeds 20           # the same, seeds drawn at random

For each entry of ``[tool.hwcheck.gate]`` in pyproject.toml that expects an invariant to break,
and each seed, one run of ``simulate`` (swarm on, depth 50, one worker, only the expected
invariant checked, until a violation or the time limit). Printed per entry: seeds that found it,
median seconds to find it (before shrinking; '>' when half the seeds or more did not find it in
the limit), the shrunk lengths against the gate's bfs shortest length, and the shrink note of the
first seed that found it. Times are wall clock on whatever machine runs it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:          # Python 3.10
    import tomli as tomllib

from hwcheck.checker.gate import HOLDS, parse_gate
from hwcheck.checker.simulate import simulate
from hwcheck.spec import Config, Model

ROOT = Path(__file__).resolve().parent.parent


def entries(names=None):
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hwcheck"]["gate"]
    out = [e for e in parse_gate(table) if e.expect != HOLDS]
    if names:
        known = {e.name for e in out}
        missing = sorted(set(names) - known)
        if missing:
            sys.exit(f"simulate_matrix: not a violating gate entry: {', '.join(missing)}")
        out = [e for e in out if e.name in names]
    return out


def median_time(times, limit):
    """The median of the times to find, a miss counting as 'more than the limit'."""
    ordered = sorted(t if t is not None else float("inf") for t in times)
    m = statistics.median_low(ordered) if len(ordered) % 2 else statistics.median(ordered)
    return f"> {limit:g}" if m == float("inf") else f"{m:.1f}"


def matrix(args) -> None:
    print(f"{'entry':<42} {'found':>5} {'median s':>9} {'bfs':>4} {'shrunk':>12}  note (first seed that found it)")
    for e in entries(args.entries.split(",") if args.entries else None):
        model = Model(e.config)
        times, lengths, note = [], [], ""
        for seed in range(args.seeds):
            r = simulate(model, runs=None, time_limit=args.time, depth=args.depth, seed=seed,
                         only=[e.expect], workers=1, confirm_states=args.confirm_states)
            times.append(r.found_after)
            if r.violations:
                lengths.append(r.shrunk_steps)
                note = note or f"seed {seed}: {r.original_steps} -> {r.shrunk_steps}; {r.shrink_note}"
        found = sum(t is not None for t in times)
        shrunk = "-" if not lengths else (f"{min(lengths)}..{max(lengths)}" if min(lengths) != max(lengths)
                                          else str(lengths[0]))
        if 0 < found < args.seeds:      # which seeds found it, and when
            note = "found by " + ", ".join(f"seed {i} in {t:.1f} s" for i, t in enumerate(times) if t is not None) \
                + "; " + note
        print(f"{e.name:<42} {found:>2}/{args.seeds:<2} {median_time(times, args.time):>9} {e.steps or '?':>4} "
              f"{shrunk:>12}  {note}", flush=True)


def three_replicas(args) -> None:
    """Issue 15's configuration: 3 replicas, min.insync.replicas=2, one power failure."""
    for mode in ("kafka15583", "epoch"):
        model = Model(Config(mode=mode, replicas=3, min_isr=2, power_failures=1))
        for seed in range(args.seeds):
            r = simulate(model, runs=None, time_limit=args.time, depth=args.depth, seed=seed, workers=1,
                         confirm_states=args.confirm_states)
            found = (f"{r.violations[0].invariant} in {r.found_after:.1f} s, {r.original_steps} -> "
                     f"{r.shrunk_steps} steps ({r.shrink_note})") if r.violations else \
                f"no violation in {r.walks:,} walks ({r.elapsed:.0f} s)"
            print(f"{mode} replicas=3 min_isr=2 power_failures=1 seed {seed}: {found}", flush=True)


HIT = dict(mode="kafka19522", replicas=3, min_isr=2, power_failures=1)    # crashes at their default


def hit(args) -> None:
    """Issue 42's target: `hwcheck simulate --mode kafka19522 --replicas 3 --min-isr 2
    --power-failures 1`, every invariant checked, one run at a time, each until a violation or
    ``--time``; per seed: found or not, seconds to find, walk index, the walk's length and the
    shrunk length (shrinking without the confirming bfs)."""
    import os
    import random

    model = Model(Config(**HIT))
    seeds = [random.SystemRandom().randrange(1_000_000) for _ in range(args.seeds)] if args.random \
        else list(range(args.first_seed, args.first_seed + args.seeds))
    print(f"{' '.join(f'--{k.replace(chr(95), chr(45))} {v}' for k, v in HIT.items())}, depth {args.depth}, "
          f"{args.workers} worker(s), {args.time:g} s a seed; load {os.getloadavg()[0]:.2f}")
    print(f"{'seed':>7} {'found':>5} {'s':>6} {'walk':>7} {'steps':>5} {'shrunk':>6}  invariant")
    times = []
    for seed in seeds:
        r = simulate(model, runs=None, time_limit=args.time, depth=args.depth, seed=seed,
                     workers=args.workers, confirm_states=0)
        times.append(r.found_after)
        if r.violations:
            print(f"{seed:>7} {'yes':>5} {r.found_after:>6.1f} {r.walk_index:>7,} {r.original_steps:>5} "
                  f"{r.shrunk_steps:>6}  {r.violations[0].invariant}", flush=True)
        else:
            print(f"{seed:>7} {'no':>5} {'> ' + format(args.time, 'g'):>6} {r.walks:>7,} {'-':>5} {'-':>6}  "
                  f"({r.walks:,} walks, {r.distinct_states:,} distinct states)", flush=True)
    found = sum(t is not None for t in times)
    print(f"found {found}/{len(seeds)} within {args.time:g} s; median {median_time(times, args.time)} s; "
          f"load {os.getloadavg()[0]:.2f}")


def throughput(args) -> None:
    """Walk steps/s of the process swarm and of Spark local[N] on the same walks, side by side."""
    from hwcheck.checker.spark import start_spark, stop_spark

    model = Model(Config(mode="epoch", replicas=3))
    kw = dict(runs=args.walks, depth=args.depth, seed=0, shrink=False)
    rows = []
    for round_ in range(2):
        for name in ("processes", "spark"):
            if name == "spark":
                sc = start_spark(f"local[{args.cores}]")
                try:
                    simulate(model, runs=64, depth=args.depth, seed=1, sc=sc)      # warm the Python workers
                    r = simulate(model, sc=sc, **kw)
                finally:
                    stop_spark(sc)
            else:
                r = simulate(model, workers=args.cores, **kw)
            rows.append((name, r.steps_per_second))
            print(f"round {round_ + 1} {name:<9} {r.walks:,} walks, {r.generated_states - r.walks:,} steps, "
                  f"{r.elapsed:.1f} s, {r.steps_per_second:,.0f} steps/s", flush=True)
    proc = statistics.mean(v for n, v in rows if n == "processes")
    spark = statistics.mean(v for n, v in rows if n == "spark")
    print(f"spark / processes: {spark / proc:.2f}x (mean of 2 rounds each, {args.cores} cores)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--time", type=float, default=60.0, help="seconds a seed may search")
    p.add_argument("--depth", type=int, default=50)
    p.add_argument("--confirm-states", type=int, default=200_000)
    p.add_argument("--entries", default="", help="comma-separated gate entries (default: every violating one)")
    p.add_argument("--three-replicas", action="store_true", help="only the 3-replica min ISR 2 power-failure run")
    p.add_argument("--throughput", action="store_true", help="only processes vs Spark steps/s")
    p.add_argument("--hit", action="store_true", help="only issue 42's kafka19522 3-replica target, per seed")
    p.add_argument("--first-seed", type=int, default=0, help="--hit: the first of --seeds consecutive seeds")
    p.add_argument("--random", action="store_true", help="--hit: seeds drawn at random (printed)")
    p.add_argument("--workers", type=int, default=1, help="--hit: worker processes")
    p.add_argument("--walks", type=int, default=4000, help="--throughput: walks per run")
    p.add_argument("--cores", type=int, default=2, help="--throughput: worker processes and local[N]")
    args = p.parse_args()
    start = time.monotonic()
    if args.throughput:
        throughput(args)
    elif args.hit:
        hit(args)
    elif args.three_replicas:
        three_replicas(args)
    else:
        matrix(args)
    print(f"total {time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    main()
