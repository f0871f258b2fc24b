"""Kafka's production shape (issue 43): replication factor 3, min.insync.replicas 2, the newest mode,
exhaustively; this tree against a base commit, side by side in one run.

    python benchmarks/rf3.py                                  # every goal row, base b239010 vs this tree
    python benchmarks/rf3.py --rows one-fault --slack 1       # the three one-fault rows, stopped at 60 s
    python benchmarks/rf3.py --rows crashes-2 --limit 120     # one row, stopped at 120 s
    python benchmarks/rf3.py --base HEAD~2 --head HEAD        # two commits (git worktrees in a temp folder)
    python benchmarks/rf3.py --rows defaults --base none      # this tree alone
    python benchmarks/rf3.py --rows power-failure-1 --base HEAD --repeat 3   # 3 alternated runs each, and the medians

Each code is installed by pip into a temp folder first (compiled where its setup.py compiles it, as a
user gets it; ``--plain`` runs the source folders instead); this tree is built from a copy of the
files git knows, so that nothing left in its ignored ``build/`` folder comes along. Every row is one
bfs (the newest mode of each code, ``epoch``: kafka19522 at b239010, pr20716 now, the same rules but
after a disk loss; 3 replicas, min ISR 2, records 2, max epoch 3, ``--symmetry``, 2 workers) in a
fresh process, run on the base code and on this tree one after the other, row by row, so both see
the same machine. A row stops at its goal's time (60 s for one fault, 15 min for two) times
``--slack`` (default 2), or at ``--limit`` seconds; a search stopped there reports how far it got.
``defaults`` is ``hwcheck verify --mode=epoch`` on its defaults (2 replicas, no symmetry), the row
whose speed must not fall.

Printed per row and code: the mode it ran, the verdict, classes (distinct states), generated states, depth, wall
seconds, classes per second and peak RSS (workers included); then the ratio of this tree to the
base: of wall times where both finished, else of classes per second (reached in the same time).
The wall clock of a shared 2-core machine moves by up to 20% between runs of the same code:
``--repeat N`` runs each row N times on each code, alternating, and adds per code the run of median
speed, with the ratio of those medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = "b239010"          # main when issue 43 was first worked on
PACKAGES = ("spec", "checker", "cli", "cluster", "explore")     # hwcheck.<name> = <tree>/<name>
SHAPE = {"mode": "epoch", "replicas": 3, "min_isr": 2, "records": 2, "max_epoch": 3}
ONE, TWO = 60, 900        # the goals, in seconds
ROWS = {   # name -> (settings over SHAPE, symmetry, goal s)
    "crashes-1": ({"crashes": 1}, True, ONE),
    "power-failure-1": ({"power_failures": 1, "crashes": 0}, True, ONE),
    "disk-loss-1": ({"disk_losses": 1, "crashes": 0}, True, ONE),
    "crashes-2": ({"crashes": 2}, True, TWO),
    "crash-power-failure": ({"crashes": 1, "power_failures": 1}, True, TWO),
    "crash-disk-loss": ({"crashes": 1, "disk_losses": 1}, True, TWO),
    "power-failure-disk-loss": ({"power_failures": 1, "disk_losses": 1, "crashes": 0}, True, TWO),
    "defaults": ({"replicas": 2, "min_isr": 1}, False, ONE),
}
GROUPS = {"one-fault": [r for r, (_, _, g) in ROWS.items() if g == ONE and r != "defaults"],
          "two-faults": [r for r, (_, _, g) in ROWS.items() if g == TWO]}

CHILD = r"""
import json, sys, time
from hwcheck.checker.bfs import bfs
from hwcheck.checker.families import make_model
config, symmetry, limit = json.loads(sys.argv[1])
model = make_model("design", config)
start = time.monotonic()

def stop_at_limit(report):
    if time.monotonic() - start > limit:
        raise KeyboardInterrupt      # bfs stops, terminates its workers and says how far it got

r = bfs(model, symmetry=symmetry, workers=2, progress=stop_at_limit)
print(json.dumps({"mode": model.cfg.mode, "verdict": r.verdict, "distinct": r.distinct_states,
                  "generated": r.generated_states, "depth": r.depth, "wall": r.elapsed, "rss": r.peak_rss_mb,
                  "complete": r.complete, "steps": r.violations[0].steps if r.violations else None}))
"""


def install(tree: str, folder: str, plain: bool) -> str:
    """A folder to put on PYTHONPATH so that ``hwcheck.*`` imports come from ``tree``: the package as
    pip installs it (compiled where setup.py compiles it, as a user gets it), or with ``plain`` the
    source folders themselves."""
    if plain:
        pkg = os.path.join(folder, "hwcheck")
        os.makedirs(pkg)
        for name in PACKAGES:
            os.symlink(os.path.join(tree, name), os.path.join(pkg, name))
        return folder
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", folder, tree],
                   check=True, stdout=subprocess.DEVNULL)
    return folder


def copy_of_tree(tree: str, folder: str) -> str:
    """The files of the work tree ``tree`` that git knows or would add (tracked, less those deleted,
    and untracked ones not ignored), copied into ``folder``: what pip builds for "this tree". Built
    in place, pip would reuse the tree's ignored ``build/`` folder, whose ``build/lib`` still holds
    every module an earlier build copied there, those deleted since included, and install them all."""
    listed = subprocess.run(["git", "-C", tree, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = os.path.join(tree, name)
        if os.path.isfile(source):
            os.makedirs(os.path.dirname(os.path.join(folder, name)), exist_ok=True)
            shutil.copy2(source, os.path.join(folder, name))
    return folder


def compiled(path: str) -> str:
    """'compiled' when the installed spec is an extension module, else 'plain'."""
    out = subprocess.run([sys.executable, "-c", "import hwcheck.spec.actions as a; print(a.__file__)"],
                         env=dict(os.environ, PYTHONPATH=path), capture_output=True, text=True)
    return "plain" if out.stdout.strip().endswith(".py") else "compiled"


def checkout(rev: str, folder: str) -> str:
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", "-q", folder, rev], check=True)
    return folder


def run(path: str, config: dict, symmetry: bool, limit: float) -> dict:
    env = dict(os.environ, PYTHONPATH=path)
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps([config, symmetry, limit])], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"rf3.py: the run failed ({config}): {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _interrupted(signum, frame):
    raise KeyboardInterrupt


def describe(r: dict) -> str:
    if r["verdict"] == "violated":
        return f"violated ({r['steps']} steps)"
    return r["verdict"] if r["complete"] else "stopped"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default=",".join(ROWS),
                    help="comma-separated rows or groups (one-fault, two-faults): " + ", ".join(ROWS))
    ap.add_argument("--base", default=BASE, help=f"the commit to compare with (default {BASE}); 'none' for none")
    ap.add_argument("--head", default=None, help="a commit to run instead of this tree")
    ap.add_argument("--slack", type=float, default=2.0, help="a row stops at its goal's time times this (default 2)")
    ap.add_argument("--limit", type=float, default=None, help="stop every row at this many seconds instead")
    ap.add_argument("--plain", action="store_true", help="run the source folders, not the package pip builds from them")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run every row this many times on each code, alternating, and add the median run (default 1)")
    args = ap.parse_args()
    if args.repeat < 1:
        sys.exit(f"rf3.py: --repeat must be at least 1, not {args.repeat}")
    rows = []
    for name in args.rows.split(","):
        if name in GROUPS:
            rows += GROUPS[name]
        elif name in ROWS:
            rows.append(name)
        elif name:
            sys.exit(f"rf3.py: unknown row {name!r}; choose from {', '.join(list(ROWS) + list(GROUPS))}")
    signal.signal(signal.SIGTERM, _interrupted)    # a kill also removes the worktrees and temp folder
    tmp = tempfile.mkdtemp(prefix="hwcheck-rf3-")
    trees = []
    try:
        codes = []
        for which, rev in (("base", args.base), ("head", args.head)):
            if rev is None or rev == "none":
                continue
            tree = checkout(rev, os.path.join(tmp, which))
            trees.append(tree)
            codes.append((rev, install(tree, os.path.join(tmp, which + "-path"), args.plain)))
        if args.head is None:
            tree = ROOT if args.plain else copy_of_tree(ROOT, os.path.join(tmp, "tree"))
            codes.append(("this tree", install(tree, os.path.join(tmp, "tree-path"), args.plain)))
        codes = [(f"{label} ({compiled(path)})", path) for label, path in codes]
        load = os.getloadavg()[0]
        print(f"hwcheck rf3 benchmark: {os.cpu_count()} cores, load average {load:.1f} at start; "
              f"the newest mode of each code, 3 replicas, min ISR 2, records 2, max epoch 3, 2 workers")
        header = ["row", "code", "mode", "verdict", "classes", "generated", "depth", "wall s", "classes/s", "RSS MB",
                  "ratio"]
        table = []
        try:
            measure(rows, codes, args, table)
        except KeyboardInterrupt:
            print(f"rf3.py: interrupted after {len(table)} of {len(rows) * len(codes)} runs", file=sys.stderr)
        widths = [max([len(h)] + [len(row[i]) for row in table]) for i, h in enumerate(header)]
        for row in [header, ["-" * w for w in widths]] + table:
            print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        print(f"goals: one fault under {ONE} s, two faults under {TWO // 60} min (rows stopped at "
              + (f"{args.limit:.0f} s" if args.limit is not None else f"{args.slack:g}x the goal") + ")")
    finally:
        for tree in trees:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", tree], check=False)
        shutil.rmtree(tmp, ignore_errors=True)


def measure(rows, codes, args, table) -> None:
    """Run every row on every code, one after the other (``--repeat`` times, alternating), appending
    a line per run to ``table``; with repeats, then a line per code for its median run."""
    for name in rows:
        settings, symmetry, goal = ROWS[name]
        limit = args.limit if args.limit is not None else goal * args.slack
        config = dict(SHAPE, **settings)
        runs = {label: [] for label, _ in codes}
        for _ in range(args.repeat):
            results = []
            for label, path in codes:
                r = run(path, config, symmetry, limit)
                results.append(r)
                runs[label].append(r)
                table.append(line(name, label, r, ratio(results)))
                print("  " + "  ".join(table[-1]), file=sys.stderr, flush=True)
        if args.repeat > 1:
            medians = []
            for label, _ in codes:
                medians.append(median_run(runs[label]))
                table.append(line(name, f"{label}, median of {args.repeat}", medians[-1], ratio(medians)))


def median_run(results: list) -> dict:
    """The run of median speed (classes a second; the lower middle one of an even count). Runs of a
    row on one code reach the same classes when they finish, so that is also the run of median time."""
    ordered = sorted(results, key=lambda r: r["distinct"] / r["wall"])
    return ordered[(len(ordered) - 1) // 2]


def ratio(results: list) -> str:
    """The second code against the first: of wall times where both finished, else of classes a second."""
    if len(results) != 2:
        return ""
    a, b = results
    if a["complete"] and b["complete"]:
        return f"{b['wall'] / a['wall']:.2f}x time"
    return f"{(b['distinct'] / b['wall']) / (a['distinct'] / a['wall']):.2f}x classes/s"


def line(name: str, label: str, r: dict, ratio_text: str) -> list:
    return [name, label, r["mode"], describe(r), f"{r['distinct']:,}", f"{r['generated']:,}", str(r["depth"]),
            f"{r['wall']:.1f}", f"{r['distinct'] / r['wall']:,.0f}", f"{r['rss']:.0f}", ratio_text]


if __name__ == "__main__":
    main()
