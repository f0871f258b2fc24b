"""Explicit-state breadth-first search over any Model.

The visited set holds 64-bit fingerprints (an off-heap numpy table, fpset.py), each with the index
of its state and, beside it, the index of its parent (as TLC does); a violation's trace is rebuilt
by walking parents back and asking the model, at each step, which successor has the next
fingerprint, so the first violation found is a shortest one. The frontier is kept pickled, in
chunks: a visited state costs the table's slot and a parent index, whatever the model.

The search goes level by level, each level in chunks of states: a chunk's successors are
fingerprinted, those visited in earlier levels dropped, the rest checked against the invariants,
then inserted in one batch. The figures and traces are those of a search that checks one state at
a time (the stop point of a violation is computed exactly), and they do not depend on:

- ``workers``: with more than one, each large level is expanded by forked worker processes that
  see the frontier and the visited set as of the level's start (copy on write) and send back only
  the successors not visited before; the chunks are merged in order, so results are identical;
- ``symmetry``: states are replaced by their canonical renaming (symmetry.py), so counts are of
  classes of states; a trace is rebuilt on concrete states by following, at each step, a
  successor whose canonical fingerprint is the next one on the path.

>>> from hwcheck.spec import Config, Model
>>> r = bfs(Model(Config(mode="hw", records=1)))
>>> r.verdict, r.violations[0].invariant, r.violations[0].steps
('violated', 'NoCommittedDataLoss', 12)
>>> bfs(Model(Config(mode="hw", records=1)), symmetry=True).violations[0].steps
12
"""

from __future__ import annotations

import ctypes
import gc
import os
import pickle
import resource
import signal
import time
from array import array
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .fpset import FingerprintSet
from .result import HOLDS, INTERRUPTED, VIOLATED, Result, Trace
from .symmetry import canonicalizer

CHUNK = 2048              # states expanded per batch
PARALLEL_LEVEL = 4096     # smaller levels are expanded in-process even with several workers


def fingerprint(state) -> int:
    """A 64-bit fingerprint, stable across runs: states hold only ints and tuples, whose hash
    does not depend on PYTHONHASHSEED."""
    return hash(state) & 0xFFFFFFFFFFFFFFFF


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def collision_probability(n: int) -> float:
    """Chance that two of n distinct states share a 64-bit fingerprint (birthday bound)."""
    return n * (n - 1) / 2 / 2.0 ** 64


def pin_mmap_threshold() -> None:
    """Keep glibc's mmap threshold at its default (128 KiB): otherwise freeing a big numpy array
    raises it (up to 32 MiB), the search's many mid-size temporaries then come from a heap glibc
    cannot give back, and RSS grows with fragments (kip320, 3 replicas, --symmetry: 178 MB at the
    end without this, 105 MB with it). Setting it explicitly turns the adjustment off; a no-op
    off glibc."""
    try:
        ctypes.CDLL(None).mallopt(-3, 128 * 1024)     # -3 = M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def rebuild_trace(model, parents: Dict[int, Tuple], fp: int, invariant: Optional[str]) -> Trace:
    """Walk parent pointers (``fp -> (parent fp, label)``, ``(None, init index)`` at an initial
    state) from ``fp`` back to an initial state, then replay the labels."""
    labels = []
    while True:
        parent, label = parents[fp]
        if parent is None:
            init_index = label
            break
        labels.append(label)
        fp = parent
    labels.reverse()
    states = [model.init_states()[init_index]]
    for label in labels:
        states.append(model.step(states[-1], label))
    return Trace(states, labels, invariant)


# ------------------------------------------------------------------ one search

ROOT = 0xFFFFFFFF     # the parent of an initial state


class _Search:
    """The state of one run; ``expand`` is what worker processes run (they inherit the object).

    Per visited state the search keeps its fingerprint and index (``table``) and its parent's index
    (``parent``, uint32): about 20-36 bytes. The frontier is a list of chunks ``(blob, keep,
    index)``: ``blob`` the pickled states of one expansion task (at most CHUNK), ``keep`` the
    positions in it that are new states (the others were reached first by another task), ``index``
    their state indices. No action label is kept: a trace is rebuilt by asking the model which
    successor of each state on the parent chain has the next state's fingerprint.
    """

    def __init__(self, model, canon, invariants):
        self.model, self.canon = model, canon
        self.preds = [pred for _, pred in invariants]
        self.table = FingerprintSet()
        self.parent = array("I")
        self.frontier: List[Tuple[bytes, np.ndarray, np.ndarray]] = []

    def violations(self, s) -> int:
        bits = 0
        for i, pred in enumerate(self.preds):
            if not pred(s):
                bits |= 1 << i
        return bits

    def expand(self, task: Tuple[int, int]):
        """Successors of the frontier chunks ``first..last-1`` not visited in earlier levels, first
        occurrences only, in order: (their positions among all successors, their parents' indices,
        fingerprints, violation bits, the pickled states in pieces of at most CHUNK) and the count
        of successors, with this process's peak RSS and pid."""
        first, last = task
        successors, canon = self.model.successors, self.canon
        fps, states, ends, parents = [], [], [], []
        for blob, keep, index in self.frontier[first:last]:
            chunk = pickle.loads(blob)
            for p, i in zip(keep.tolist(), index.tolist()):
                for _, t in successors(chunk[p]):
                    if canon is not None:
                        t = canon(t)
                    fps.append(hash(t))
                    states.append(t)
                ends.append(len(fps))
                parents.append(i)
        n = len(fps)
        fp_arr = np.array(fps, dtype=np.int64).view(np.uint64)     # = fingerprint(t)
        pos = np.flatnonzero(self.table.first_unseen(fp_arr))
        ppos = np.repeat(np.array(parents, dtype=np.uint32), np.diff(np.array([0] + ends)))[pos]
        kept = [states[i] for i in pos.tolist()]
        viol = np.array([self.violations(t) for t in kept], dtype=np.int64)
        blobs = [pickle.dumps(kept[i:i + CHUNK], protocol=pickle.HIGHEST_PROTOCOL)
                 for i in range(0, len(kept), CHUNK)]
        return pos, ppos, fp_arr[pos], viol, blobs, n, peak_rss_mb(), os.getpid()


_ACTIVE: Optional[_Search] = None     # the search a forked worker expands


class _MemoryLimit(Exception):
    pass


def _expand_in_worker(task):
    return _ACTIVE.expand(task)


class _DeferredCtrlC:
    """While a pool expands a level, Ctrl-C only sets ``hit``; the search raises KeyboardInterrupt
    itself between two results, never inside multiprocessing's locks and threads, where an
    exception can leave the pool unable to terminate (a verify on a loaded machine once hung after
    Ctrl-C, tests/test_ux.py). Only the main thread can own a signal handler: elsewhere ``arm`` does
    nothing and Ctrl-C is raised where it lands, as before."""

    def __init__(self) -> None:
        self.hit, self._old = False, None

    def _record(self, signum, frame) -> None:
        self.hit = True

    def arm(self) -> None:
        import threading
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._record)

    def disarm(self) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
            self._old = None


def _worker_ignores_ctrl_c() -> None:
    """A worker leaves Ctrl-C to the parent: a terminal sends SIGINT to the whole process group,
    and the parent, which stops the search and terminates the pool, is the one to report it (a
    worker's own KeyboardInterrupt would print a traceback per worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _tasks(frontier) -> List[Tuple[int, int]]:
    """Consecutive runs of frontier chunks of at least CHUNK states each (the last may be less)."""
    tasks, first, size = [], 0, 0
    for c, (_, keep, _) in enumerate(frontier):
        size += len(keep)
        if size >= CHUNK:
            tasks.append((first, c + 1))
            first, size = c + 1, 0
    if first < len(frontier):
        tasks.append((first, len(frontier)))
    return tasks


class CheckpointError(Exception):
    """A checkpoint that cannot be read or belongs to another run (one line for the user)."""


CHECKPOINT_FILE = "bfs-checkpoint.pickle"
CHECKPOINT_FORMAT = 3     # 2: packed frontier chunks, no labels; 3: messages as fixed-length NamedTuples
#                           (Fetch, FetchResponse, ...), so states and their fingerprints changed


def _run_key(model, order, symmetry) -> dict:
    """What a checkpoint must match to be resumed: the model, its settings, the search options."""
    return {"model": type(model).__module__, "config": model.cfg.as_dict(), "invariants": list(order),
            "symmetry": bool(symmetry)}


def _save_checkpoint(folder: str, key: dict, search: "_Search", counters: dict) -> None:
    """The search state at the end of a level, written atomically (a kill mid-write keeps the old one)."""
    snap = {"format": CHECKPOINT_FORMAT, "key": key, "counters": counters, "table": search.table,
            "parent": search.parent, "frontier": search.frontier}
    tmp = os.path.join(folder, CHECKPOINT_FILE + ".tmp")
    with open(tmp, "wb") as f:
        pickle.dump(snap, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, os.path.join(folder, CHECKPOINT_FILE))


def _differences(saved: dict, now: dict) -> str:
    """'records=2 (this run: 3), symmetry=False (this run: True)'."""
    flat = lambda d: {**{k: v for k, v in d.items() if k != "config"}, **d.get("config", {})}
    a, b = flat(saved), flat(now)
    return ", ".join(f"{k}={a.get(k)!r} (this run: {b.get(k)!r})" for k in sorted(set(a) | set(b))
                     if a.get(k) != b.get(k))


def load_checkpoint(folder: str) -> dict:
    path = os.path.join(folder, CHECKPOINT_FILE)
    try:
        with open(path, "rb") as f:
            snap = pickle.load(f)
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint in {folder} ({CHECKPOINT_FILE} missing)") from None
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError) as e:
        raise CheckpointError(f"cannot read the checkpoint {path}: {e}") from None
    if not isinstance(snap, dict) or "key" not in snap:
        raise CheckpointError(f"{path} is not an hwcheck checkpoint")
    if snap.get("format", 1) != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path} was written by another version of hwcheck "
                              f"(format {snap.get('format', 1)}, this one reads {CHECKPOINT_FORMAT}); start the run again")
    return snap


def bfs(model, *, max_depth: Optional[int] = None, all_invariants: bool = False,
        progress: Optional[Callable[[dict], None]] = None, progress_every: float = 0.5,
        only: Optional[Sequence[str]] = None, symmetry: bool = False, workers: int = 1,
        checkpoint: Optional[str] = None, resume: Optional[dict] = None,
        max_rss_mb: Optional[float] = None) -> Result:
    """Explore every state reachable within ``max_depth`` steps (unbounded by default).

    Stops at the first violation unless ``all_invariants``, which goes on until every
    invariant is broken or the space is exhausted and keeps the first trace of each.
    ``only`` names the invariants to check (default: all of the model's). ``symmetry`` explores
    one state per class of states equal up to renaming replicas; ``workers`` > 1 expands large
    levels in that many processes (same results).
    ``checkpoint``: a folder where the search state is saved at the end of every level (the
    report that closes a level, ``level_done``, carries ``save(folder)`` to save it elsewhere or
    only now and then, as ``hwcheck verify`` does on a long run);
    ``resume``: a snapshot from :func:`load_checkpoint` to continue from (same model, settings,
    invariants and symmetry, else CheckpointError): the verdict and counts are those of an
    uninterrupted run. ``max_rss_mb``: stop (verdict ``interrupted``, ``Result.reason`` says why)
    once the process grows past this much memory, instead of being killed by the system.
    Ctrl-C stops the search and returns what was covered with verdict ``interrupted``.
    """
    global _ACTIVE
    start = time.monotonic()
    pin_mmap_threshold()
    invariants = [(name, pred) for name, pred in model.invariants if only is None or name in only]
    order = [name for name, _ in invariants]
    canon = canonicalizer(model) if symmetry else None
    search = _Search(model, canon, invariants)
    key = _run_key(model, order, symmetry) if (checkpoint is not None or resume is not None) else None
    found: Dict[str, int] = {}          # invariant -> index of the first violating state
    generated = distinct = depth = 0
    verdict, complete, stop = HOLDS, True, False
    reason = ""
    last_report = start
    worker_rss: Dict[int, float] = {}
    rss_at_fork = 0.0

    def record(viol: np.ndarray) -> Optional[int]:
        """Note the first violation of each invariant among a batch of new states (in order);
        the position after which the search stops, or None."""
        for i in np.flatnonzero(viol).tolist():
            bits = int(viol[i])
            for b, name in enumerate(order):
                if bits >> b & 1 and name not in found:
                    found[name] = distinct_base + i
                    if not all_invariants or len(found) == len(order):
                        return i
        return None

    if resume is not None:
        if resume["key"] != key:
            raise CheckpointError("the checkpoint is of another run: " + _differences(resume["key"], key))
        search.table, search.parent, search.frontier = resume["table"], resume["parent"], resume["frontier"]
        c = resume["counters"]
        generated, distinct, depth, found = c["generated"], c["distinct"], c["depth"], dict(c["found"])
    table = search.table

    gc_was_enabled = gc.isenabled()
    gc.disable()    # states are acyclic tuples: the cycle collector only costs time here
    try:
        if resume is None:
            inits = model.init_states()
            init_states = [canon(s) for s in inits] if canon else inits
            fps = np.array([fingerprint(s) for s in init_states], dtype=np.uint64)
            new = table.add_new(fps)
            distinct_base = 0
            new_pos = np.flatnonzero(new)
            search.parent.extend([ROOT] * len(new_pos))
            viol = np.array([search.violations(init_states[i]) for i in new_pos.tolist()], dtype=np.int64)
            hit = record(viol)
            if hit is not None:
                stop = True
                generated = int(new_pos[hit]) + 1
                distinct = hit + 1
            else:
                generated, distinct = len(init_states), len(new_pos)
            kept = [init_states[i] for i in new_pos.tolist()]
            search.frontier = [(pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL),
                                np.arange(len(kept), dtype=np.uint32), np.arange(len(kept), dtype=np.uint32))]
            if progress is not None and not stop:
                progress({"depth": 0, "distinct": distinct, "queue": distinct, "generated": generated,
                          "elapsed": time.monotonic() - start, "level_done": True})

        while search.frontier and not stop:
            if max_depth is not None and depth >= max_depth:
                complete = False
                break
            next_frontier: List[Tuple[bytes, np.ndarray, np.ndarray]] = []
            queued = 0
            tasks = _tasks(search.frontier)
            pool = None
            ctrl_c = _DeferredCtrlC()
            try:
                if workers > 1 and sum(len(keep) for _, keep, _ in search.frontier) >= PARALLEL_LEVEL:
                    import multiprocessing
                    ctrl_c.arm()
                    _ACTIVE = search
                    rss_at_fork = peak_rss_mb()
                    # SIGINT is blocked while the workers fork (each starts with it blocked, then
                    # ignores it), so none can take a Ctrl-C before its initializer has run
                    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
                    try:
                        pool = multiprocessing.get_context("fork").Pool(workers, initializer=_worker_ignores_ctrl_c)
                    finally:
                        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
                    results = pool.imap(_expand_in_worker, tasks)
                else:
                    results = (search.expand(task) for task in tasks)
                for pos, ppos, fps, viol, blobs, n, rss, pid in results:
                    if ctrl_c.hit:
                        raise KeyboardInterrupt
                    if pool is not None:
                        worker_rss[pid] = max(worker_rss.get(pid, 0.0), rss)
                    fresh = table.add_new(fps, distinct=True)
                    distinct_base = distinct
                    fresh_pos = np.flatnonzero(fresh)
                    hit = record(viol[fresh_pos]) if len(found) < len(order) else None
                    if hit is not None:
                        fresh_pos = fresh_pos[:hit + 1]
                        generated += int(pos[fresh_pos[-1]]) + 1
                        stop = True
                    else:
                        generated += n
                    distinct += len(fresh_pos)
                    search.parent.frombytes(ppos[fresh_pos].tobytes())
                    index = np.arange(distinct_base, distinct, dtype=np.uint32)
                    piece = fresh_pos // CHUNK
                    for b, blob in enumerate(blobs):
                        mine = piece == b
                        if mine.any():
                            next_frontier.append((blob, (fresh_pos[mine] - b * CHUNK).astype(np.uint32), index[mine]))
                    queued += len(fresh_pos)
                    if stop:
                        break
                    if max_rss_mb is not None and peak_rss_mb() > max_rss_mb:
                        raise _MemoryLimit()
                    if progress is not None:
                        now = time.monotonic()
                        if now - last_report >= progress_every:
                            last_report = now
                            progress({"depth": depth + 1, "distinct": distinct, "queue": queued,
                                      "generated": generated, "elapsed": now - start})
            finally:
                if pool is not None:
                    pool.terminate()
                    pool.join()
                    _ACTIVE = None
                ctrl_c.disarm()
            if ctrl_c.hit:                  # pressed while the level's last results came in
                raise KeyboardInterrupt
            depth += 1 if (next_frontier or stop) else 0
            search.frontier = next_frontier
            if progress is not None and not stop:
                # the end of a level, always reported (checker/estimate.py fits the level sizes);
                # ``save(folder)``, called from the report, writes a checkpoint of this level's end
                counters = {"generated": generated, "distinct": distinct, "depth": depth, "found": dict(found)}
                progress({"depth": depth, "distinct": distinct, "queue": queued, "generated": generated,
                          "elapsed": time.monotonic() - start, "level_done": True,
                          "save": lambda folder, c=counters: _save_checkpoint(
                              folder, _run_key(model, order, symmetry), search, c) if search.frontier else None})
            if checkpoint is not None and search.frontier and not stop:
                _save_checkpoint(checkpoint, key, search, {"generated": generated, "distinct": distinct,
                                                           "depth": depth, "found": found})
    except KeyboardInterrupt:
        verdict, complete, reason = INTERRUPTED, False, "interrupted"
    except _MemoryLimit:
        verdict, complete = INTERRUPTED, False
        reason = f"memory limit: the process passed {max_rss_mb:,.0f} MB"
    finally:
        if gc_was_enabled:
            gc.enable()
    traces = [_trace(model, search, canon, idx, name) for name, idx in found.items()]
    if found:
        verdict = VIOLATED
    elapsed = time.monotonic() - start
    rss = peak_rss_mb() + sum(max(0.0, r - rss_at_fork) for r in worker_rss.values())
    return Result(
        engine="bfs", verdict=verdict, distinct_states=distinct, generated_states=generated,
        depth=depth, elapsed=elapsed, peak_rss_mb=rss,
        violations=sorted(traces, key=lambda t: order.index(t.invariant)),
        complete=complete and verdict != INTERRUPTED,
        collision_probability=collision_probability(distinct), reason=reason,
    )


def _trace(model, search: _Search, canon, idx: int, invariant: str) -> Trace:
    """The concrete trace to the state of index ``idx``: the parent chain's indices, then from the
    initial state of the chain's first index, at each step the first successor whose (canonical)
    fingerprint has the next index on the chain. Without symmetry that is the edge the search took
    first; under symmetry the trace stays on concrete states (renamings are not undone)."""
    chain = [idx]
    while search.parent[chain[-1]] != ROOT:
        chain.append(search.parent[chain[-1]])
    chain.reverse()

    def index(s):
        return search.table.index_of(fingerprint(canon(s) if canon is not None else s))

    return replay_chain(model, chain, index, invariant)


def replay_chain(model, chain: List, key: Callable, invariant: Optional[str]) -> Trace:
    """The trace along ``chain``, a list of state keys from an initial state on: from the initial
    state whose ``key`` is ``chain[0]``, at each step the first successor whose key is the next."""
    states = [next(s for s in model.init_states() if key(s) == chain[0])]
    labels = []
    for target in chain[1:]:
        label, t = next((lb, u) for lb, u in model.successors(states[-1]) if key(u) == target)
        states.append(t)
        labels.append(label)
    return Trace(states, labels, invariant)
