"""How early, and how well, checker/estimate.py tells the size and the time of a bfs: per row, the
final count and time, the first estimate (at which level, after what share of the states and of
the time, how far off), the estimated total time then against the real one, and the estimate
furthest from the final count over the whole run (as a ratio to it: 0.5x and 2x are equally far).

Run: python benchmarks/estimate.py [ROW ...]
  ROW: a gate row of pyproject.toml (a bfs one), or settings such as mode=hw,records=1, whose whole
  space is explored without invariants; default: kip380-defaults kafka19522-defaults
  kip380-3-replicas mode=hw mode=kafka19522,replicas=3,records=1,crashes=1,max_epoch=2
Each row is one bfs in this process (one worker), so a row takes what `hwcheck verify` takes.
"""

import sys
import tomllib
from pathlib import Path

from hwcheck.checker.bfs import bfs
from hwcheck.checker.estimate import Estimator
from hwcheck.checker.gate import parse_gate, run_entry
from hwcheck.spec import Config, ConfigError, Model

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ROWS = ["kip380-defaults", "kafka19522-defaults", "kip380-3-replicas", "mode=hw",
                "mode=kafka19522,replicas=3,records=1,crashes=1,max_epoch=2"]


def settings(text):
    out = {}
    for pair in text.split(","):
        key, _, value = pair.partition("=")
        out[key.strip()] = int(value) if value.isdigit() else {"true": True, "false": False}.get(value, value)
    return out


def run(row, gate):
    """(final distinct states, seconds, [(depth, distinct, elapsed, estimate)] at each level end)."""
    est, made = Estimator(), []

    def progress(report):
        e = est(report)
        if report.get("level_done") and report["queue"] > 0 and e is not None:
            made.append((report["depth"], report["distinct"], report["elapsed"], e))

    if row in gate:
        if gate[row].engine != "bfs":
            raise SystemExit(f"{row}: a gate row of engine {gate[row].engine}, not bfs")
        result = run_entry(gate[row], progress=progress).result
    elif "=" in row:
        try:
            model = Model(Config(**settings(row)))
        except (ConfigError, TypeError, ValueError) as e:
            raise SystemExit(f"{row}: {e}") from None
        result = bfs(model, only=[], progress=progress)
    else:
        raise SystemExit(f"{row}: neither a gate row nor settings such as mode=hw,records=1")
    if not result.complete or result.verdict != "holds":
        print(f"{row}: stopped early ({result.verdict}, {result.distinct_states:,} states): no final count to "
              f"compare with")
        return None
    return result.distinct_states, result.elapsed, result.depth, made


def main(argv):
    rows = argv or DEFAULT_ROWS
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hwcheck"]["gate"]
    gate = {e.name: e for e in parse_gate(table, ROOT)}
    w = max(44, *(len(r) for r in rows))
    print(f"{'row':{w}} {'states':>9} {'time':>7}  {'first estimate: level, share of states, of time':42} "
          f"{'states':>16} {'total time':>16} {'worst':>6}")
    for row in rows:
        got = run(row, gate)
        if got is None:
            continue
        final, seconds, depth, made = got
        if not made:
            print(f"{row:{w}} {final:>9,} {seconds:6.1f}s  no estimate before the end (depth {depth})")
            continue
        d, seen, at, e = made[0]
        worst = max((m[3].states / final for m in made), key=lambda r: max(r, 1 / r))   # the furthest off
        total = at + e.seconds_left
        print(f"{row:{w}} {final:>9,} {seconds:6.1f}s  level {d:>2}/{depth:<3} {seen / final:4.0%} st {at / seconds:4.0%} t"
              f"{'':14} {e.states:>9,} {e.states / final:5.2f}x {total:8.1f}s {total / seconds:5.2f}x {worst:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
