"""How long ``hwcheck explore`` takes to answer a step (issue 44's goal: under 100 ms on the defaults).

Starts the explorer's server on 127.0.0.1 (an ephemeral port, in a thread), then walks at random:
each step is one ``POST /api/step`` over HTTP, timed from the request to the parsed JSON answer (the
next state, what changed, every enabled action, the invariants, the whole path table). The walk
goes back to the initial state every ``--path`` steps, so the path table stays that long at most.

    python benchmarks/explore_step.py                 # mode epoch, defaults, 200 steps, paths of 40
    python benchmarks/explore_step.py --mode hw --steps 500 --path 80 --seed 3
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
import urllib.request

from hwcheck.explore.server import make_server
from hwcheck.explore.session import Session
from hwcheck.spec import Config, Model

GOAL_MS = 100.0


def post(base: str, path: str, body: dict) -> dict:
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default="epoch")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--path", type=int, default=40, help="longest path before going back to the start")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    model = Model(Config(mode=args.mode))
    server = make_server(Session(model))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    rng = random.Random(args.seed)
    base = server.url.rstrip("/")
    times = []
    try:
        view = post(base, "/api/reset", {})
        while len(times) < args.steps:
            if not view["enabled"] or view["cursor"] >= args.path:
                view = post(base, "/api/reset", {})
                continue
            label = rng.choice(view["enabled"])["label"]
            t0 = time.perf_counter()
            view = post(base, "/api/step", {"action": label})
            times.append((time.perf_counter() - t0) * 1000)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    times.sort()
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    median = statistics.median(times)
    print(f"hwcheck explore, one step answered over HTTP (POST /api/step): mode={model.cfg.mode} "
          f"(--mode {args.mode}), default knobs, {len(times)} random steps (seed {args.seed}), paths up to "
          f"{args.path} steps")
    print(f"  median {median:.1f} ms, p95 {p95:.1f} ms, max {times[-1]:.1f} ms")
    print(f"  goal: under {GOAL_MS:.0f} ms: {'met' if p95 < GOAL_MS else 'NOT met'} (p95)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
