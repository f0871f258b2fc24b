"""Time to the `hw` loss counterexample (defaults: NoCommittedDataLoss in 11 steps) by bfs and by
z3 BMC, side by side, and BMC's solver time per depth up to the shortest trace length.

Run: python benchmarks/z3_vs_bfs.py [--mode=hw] [extra Config settings as key=value, e.g. records=1 ...]
"""

import sys
import time

from hwcheck.checker.bfs import bfs
from hwcheck.checker.bmc import bmc
from hwcheck.spec import Config, Model


def main(argv):
    settings = dict(mode="hw")
    for arg in argv:
        key, _, value = arg.lstrip("-").partition("=")
        settings[key.replace("-", "_")] = int(value) if value.lstrip("-").isdigit() else value
    model = Model(Config(**settings))
    t = time.monotonic()
    r = bfs(model)
    bfs_seconds = time.monotonic() - t
    if not r.violations:
        print(f"bfs: holds ({r.distinct_states:,} states); nothing to race for")
        return 0
    steps = r.violations[0].steps
    per_depth = []
    t = time.monotonic()
    z = bmc(model, steps, progress=lambda k, sec, ans: per_depth.append((k, sec, ans)))
    z3_seconds = time.monotonic() - t
    print(f"settings: {settings}")
    print(f"{'engine':8} {'result':38} {'seconds':>8}")
    print(f"{'bfs':8} {r.violations[0].invariant + f' in {steps} steps':38} {bfs_seconds:8.2f}"
          f"   ({r.distinct_states:,} states)")
    zt = z.violations[0]
    print(f"{'z3 BMC':8} {zt.invariant + f' in {zt.steps} steps':38} {z3_seconds:8.2f}")
    print("BMC per depth:")
    for k, sec, ans in per_depth:
        print(f"  depth {k:2}: {ans:5} {sec:7.2f} s")
    same = zt.steps == steps and [a for _, _, a in per_depth] == ["unsat"] * steps + ["sat"]
    print(f"shortest length: {'the same' if same else 'DIFFERENT'} (bfs {steps}, BMC {zt.steps})")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
