"""One rule, one place? The measurement behind issue "One home for the protocol", item 4.

The question: can an action be written once, as guard and effect over a small term algebra with a
concrete interpretation (bfs, simulate, Spark) and a z3 one (BMC, Houdini), without slowing the
concrete engines by more than 5%? checker/symbolic.py's ``Encoding`` is already such a term-algebra
transcription of every action (``o.If/And/Or/select`` over fixed slots) and has a concrete
interpretation (``CONCRETE``); this script times it against spec/actions.py's own functions on
the same reachable states, for the three actions the issue names and for every action, so the
figure is that route's cost with no new code to blame.

    python benchmarks/one_rule.py                      # the defaults (mode epoch), 3 rounds
    python benchmarks/one_rule.py --mode hw --states 3000 --rounds 5

Printed per action: microseconds per (state, instance) for the spec and for the algebra (guard and
effect only: no layout check, no conversion between the two state shapes, the algebra's best case),
and the ratio; then the same for bfs's inner loop as a whole (every action instance of a state).
"""

from __future__ import annotations

import argparse
import time

from hwcheck.checker.symbolic import CONCRETE, Encoding
from hwcheck.spec import Config, Model

NAMED = ("leader_handle_fetch", "follower_handle_fetch", "elect_offline")


def reachable(model: Model, limit: int) -> list:
    seen, frontier = set(), list(model.init_states())
    out = []
    while frontier and len(out) < limit:
        nxt = []
        for s in frontier:
            if s in seen:
                continue
            seen.add(s)
            out.append(s)
            nxt += [t for _, t in model.successors(s)]
        frontier = nxt
    return out[:limit]


def best_of(rounds: int, fn) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", default="epoch")
    ap.add_argument("--states", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    model = Model(Config(mode=args.mode))
    enc = Encoding(model, CONCRETE)
    states = reachable(model, args.states)
    terms = [enc.of_state(s) for s in states]
    rules = model.rules
    by_name = {name: fn for name, fn, _ in model._actions}
    print(f"mode {model.cfg.mode}, {len(states)} reachable states, best of {args.rounds} rounds")
    print(f"{'action':<32} {'spec us':>9} {'algebra us':>11} {'ratio':>7}")
    groups = [(name, [i for i, label in enumerate(enc.instances) if label[0] == name])
              for name in dict.fromkeys(label[0] for label in enc.instances)]
    totals = [0.0, 0.0]
    for name, idx in groups:
        labels = [enc.instances[i] for i in idx]
        fn = by_name[name]

        def spec_run():
            for s in states:
                for label in labels:
                    fn(s, rules, *label[1:])

        def algebra_run():
            for v in terms:
                for i in idx:
                    enc.action(i, v)     # guard and effect only (no layout check, no conversion)

        calls = len(states) * len(labels)
        a, b = best_of(args.rounds, spec_run), best_of(args.rounds, algebra_run)
        totals[0] += a
        totals[1] += b
        mark = " *" if name in NAMED else ""
        print(f"{name + mark:<32} {a / calls * 1e6:>9.2f} {b / calls * 1e6:>11.2f} {b / a:>6.1f}x")
    per_state = [t / len(states) * 1e6 for t in totals]
    print(f"{'every action (bfs inner loop)':<32} {per_state[0]:>9.1f} {per_state[1]:>11.1f} "
          f"{totals[1] / totals[0]:>6.1f}x   (us per state)")
    print("* the three actions the issue names")


if __name__ == "__main__":
    main()
