"""Random simulation over any Model: many random walks, every state checked, violations shrunk.

For configurations bfs cannot finish (TLC's ``-simulate``, ``quint run``, Stateright's simulation
checker). A walk starts at an initial state and takes up to ``depth`` steps; every state on it is
checked against the invariants. A walk ends early when no action is enabled, or at the first
state that breaks an invariant.

**Reproducible.** Walk *i* draws from its own generator, seeded by ``(seed, i)``, so what it does
does not depend on which process or Spark task runs it. The run reports the violation of the
smallest walk index that has one, and its figures count the walks up to that one: the same seed
and settings give the same walks, trace and figures with 1 or 2 worker processes or on Spark
(``--time`` cuts a run where the clock says, so a timed run is not reproducible).

**Swarm** (Groce et al., "Swarm testing", ISSTA 2012), on by default. Each walk draws its own
configuration: which kinds of *event* it may take (the model's ``events``: failures and an
operator's actions, each kind kept with probability 1/2) and how often it takes one (a rate from
``EVENT_RATES``); protocol steps are taken otherwise, uniformly. A uniform walk picks a crash or an
election about as often as a fetch, so almost every walk is a storm of faults that never lets a
record reach the followers: measured on ``hw`` with one record, 10^5 uniform walks of depth 40 did
not find its 11-step loss (an exact computation gives 1.2e-7 per walk), while the swarm finds it
in seconds (docs/simulate.md has the figures).

**Shrinking** (shrink.py) turns the walk that broke an invariant into a short trace that still
breaks it, then asks a bounded bfs whether a shorter one exists.

>>> from hwcheck.spec import Config, Model
>>> r = simulate(Model(Config(mode="hw", records=1, acks="1")), runs=200, depth=30, seed=1)
>>> r.verdict, r.violations[0].invariant, r.walk_index, r.original_steps, r.shrunk_steps
('violated', 'NoCommittedDataLoss', 6, 11, 3)
>>> r.shrink_note
"bfs shortened it: shortest among every schedule within the trace's budgets (56 states)"
"""

from __future__ import annotations

import random
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from hwcheck.spec.protocol import has

from .bfs import peak_rss_mb, pin_mmap_threshold
from .fpset import FingerprintSet
from .result import HOLDS, INTERRUPTED, VIOLATED, Result, Trace

BATCH = 32                # walks per task for worker processes
SPARK_BATCH = 256         # walks per Spark task (a task costs a round trip through the JVM)


class SimulationError(ValueError):
    """Settings a simulation cannot run with (one line for the user)."""


@dataclass
class Found:
    """A walk that broke an invariant: its index, initial state and labels up to the bad state."""
    walk: int
    init: int
    labels: List[tuple]
    invariant: str


@dataclass
class Batch:
    """What a run of consecutive walks saw; ``found`` ends it (walks after it were not run)."""
    first: int
    walks: int = 0
    steps: int = 0
    deepest: int = 0
    coverage: Counter = field(default_factory=Counter)
    fingerprints: Optional[np.ndarray] = None
    found: Optional[Found] = None


@dataclass
class SimulationResult(Result):
    """A :class:`Result` with the figures of a simulation; ``complete`` is always False (a
    simulation never covers a space). ``distinct_states`` counts distinct fingerprints seen,
    ``generated_states`` the states visited (with repeats), ``depth`` the deepest walk."""
    walks: int = 0
    seed: int = 0
    coverage: Dict[str, int] = field(default_factory=dict)
    never_fired: List[str] = field(default_factory=list)
    walk_index: Optional[int] = None      # the walk that broke an invariant
    found_after: Optional[float] = None   # seconds from the start to finding it (before shrinking)
    original_steps: Optional[int] = None  # its length before shrinking
    shrunk_steps: Optional[int] = None
    shrink_note: str = ""                 # what the bounded bfs said of the shrunk length

    @property
    def walks_per_second(self) -> float:
        return self.walks / self.elapsed if self.elapsed > 0 else float(self.walks)

    @property
    def steps_per_second(self) -> float:
        steps = self.generated_states - self.walks
        return steps / self.elapsed if self.elapsed > 0 else float(steps)


def walk_rng(seed: int, walk: int) -> random.Random:
    """Walk ``walk``'s generator: a function of the seed and the index only."""
    return random.Random(seed * 1_000_003 + walk)


def action_kinds(model) -> Tuple[str, ...]:
    """The action names the model can take (for coverage); empty if it does not say."""
    return tuple(getattr(model, "action_names", ()))


EVENT_RATES = (0.02, 0.05, 0.1, 0.2, 0.5, 1.0)


def first_enabled(rng: random.Random, s, moves: Sequence[tuple]) -> Optional[tuple]:
    """``(label, next state)`` for one of ``moves`` (``(label, fn, args)``, the model's ``moves``)
    enabled in ``s``, each enabled one equally likely; None if none is. Moves are drawn without
    replacement and tried until one is enabled: the first enabled move of a random order is uniform
    among the enabled ones, and a walk builds one successor a step instead of all of them.

    >>> from hwcheck.spec import Config, Model
    >>> m = Model(Config(mode="hw", records=1))
    >>> first_enabled(random.Random(0), m.init_states()[0], m.moves)[0] in [l for l, _ in m.successors(m.init_states()[0])]
    True
    """
    pool = list(moves)
    n = len(pool)
    draw = rng.random
    while n:
        j = int(draw() * n)
        label, fn, args = pool[j]
        nxt = fn(s, *args)
        if nxt is not None:
            return label, nxt
        n -= 1
        pool[j] = pool[n]
    return None


@dataclass(frozen=True)
class Swarm:
    """One walk's swarm configuration: the event kinds it may take and how often it takes one.

    At each step the walk takes one of its enabled events with probability ``rate`` (when both an
    event and a protocol step are enabled), else a protocol step: uniformly within the chosen
    group. ``kinds`` is None when every event kind is allowed.
    """
    events: frozenset
    rate: float
    kinds: Optional[frozenset] = None

    def groups(self, moves: Sequence[tuple]) -> Tuple[tuple, tuple, tuple]:
        """``moves`` split into the walk's allowed events, the protocol steps, and the events it
        leaves out (taken only when nothing else is enabled)."""
        allowed = self.events if self.kinds is None else self.events & self.kinds
        ev = tuple(x for x in moves if x[0][0] in allowed)
        proto = tuple(x for x in moves if x[0][0] not in self.events)
        rest = tuple(x for x in moves if x[0][0] in self.events and x[0][0] not in allowed)
        return ev, proto, rest

    def choose(self, rng: random.Random, s, groups: Tuple[tuple, tuple, tuple]) -> Optional[tuple]:
        """The walk's next step from ``s``: ``(label, next state)``, or None at a dead end."""
        ev, proto, rest = groups
        for group in ((ev, proto, rest) if rng.random() < self.rate else (proto, ev, rest)):
            got = first_enabled(rng, s, group) if group else None
            if got is not None:
                return got
        return None


def draw_swarm(rng: random.Random, events: Sequence[str]) -> Swarm:
    """A walk's swarm: a rate from ``EVENT_RATES`` and each event kind kept with probability 1/2
    (never none)."""
    rate = EVENT_RATES[rng.randrange(len(EVENT_RATES))]
    kinds = None
    if events:
        while not kinds:
            kinds = frozenset(k for k in events if rng.random() < 0.5)

    return Swarm(frozenset(events), rate, kinds)


def _successor(s, nxt):
    return nxt


def stepper(model):
    """The moves a walk draws from in a state: the model's own ``moves`` when it lists them (the
    same in every state), else, per state, one per successor (built at once for that state)."""
    if has(model, "moves"):
        every = tuple(model.moves)
        return lambda s: every
    return lambda s: tuple((label, _successor, (nxt,)) for label, nxt in model.successors(s))


def run_walks(model, first: int, last: int, *, depth: int, seed: int, swarm: bool = True,
              only: Optional[Sequence[str]] = None) -> Batch:
    """Walks ``first..last-1``; stops after the first that breaks an invariant.

    >>> from hwcheck.spec import Config, Model
    >>> b = run_walks(Model(Config(mode="hw", records=1)), 0, 5, depth=10, seed=7)
    >>> b.walks, b.steps <= 50, b.found is None
    (5, True, True)
    """
    preds = [(name, pred) for name, pred in model.invariants if only is None or name in only]
    inits = model.init_states()
    events = tuple(getattr(model, "events", ()))
    moves_at = stepper(model)
    fixed = has(model, "moves")
    out = Batch(first)
    fps: List[int] = []
    coverage = out.coverage

    def broken(s) -> Optional[str]:
        for name, pred in preds:
            if not pred(s):
                return name
        return None

    for w in range(first, last):
        rng = walk_rng(seed, w)
        sw = draw_swarm(rng, events) if swarm else None
        groups = sw.groups(moves_at(None)) if sw is not None and fixed else None
        k = rng.randrange(len(inits))
        s = inits[k]
        labels: List[tuple] = []
        out.walks += 1
        fps.append(hash(s))
        bad = broken(s)
        while bad is None and len(labels) < depth:
            if sw is None:
                got = first_enabled(rng, s, moves_at(s))
            else:
                got = sw.choose(rng, s, groups if fixed else sw.groups(moves_at(s)))
            if got is None:
                break
            label, s = got
            labels.append(label)
            coverage[label[0]] += 1
            fps.append(hash(s))
            bad = broken(s)
        out.steps += len(labels)
        out.deepest = max(out.deepest, len(labels))
        if bad is not None:
            out.found = Found(w, k, labels, bad)
            break
    out.fingerprints = np.unique(np.array(fps, dtype=np.int64).view(np.uint64))
    return out


def batches(runs: Optional[int], size: int) -> Iterator[Tuple[int, int]]:
    """Consecutive walk ranges of ``size`` up to ``runs`` walks (forever if runs is None)."""
    first = 0
    while runs is None or first < runs:
        last = first + size if runs is None else min(first + size, runs)
        yield first, last
        first = last


# ------------------------------------------------------------------ executors
_JOB: Optional[tuple] = None      # (model, kwargs) a forked worker runs walks of


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # the parent alone handles Ctrl-C


def _run_in_worker(span):
    model, kw = _JOB
    return run_walks(model, span[0], span[1], **kw)


def _serial(model, spans, kw):
    for first, last in spans:
        yield run_walks(model, first, last, **kw)


def _processes(model, spans, kw, workers: int):
    import multiprocessing
    global _JOB
    _JOB = (model, kw)
    pool = multiprocessing.get_context("fork").Pool(workers, initializer=_ignore_sigint)
    try:
        yield from pool.imap(_run_in_worker, spans)
    finally:
        pool.terminate()
        pool.join()
        _JOB = None


def _spark(model, spans, kw, sc, parallelism: int):
    """Waves of Spark tasks, one walk range each, collected in order. Ctrl-C is a flag while Spark
    runs (spark.CtrlC: never an exception inside a py4j call); the wave under way is cancelled and
    the run ends as interrupted."""
    from .spark import CtrlC, Interrupted, run_action

    spans = iter(spans)
    with CtrlC() as ctrl_c:
        while True:
            wave = [span for _, span in zip(range(4 * parallelism), spans)]
            if not wave:
                return
            job = sc.parallelize(wave, len(wave)).map(lambda span: run_walks(model, span[0], span[1], **kw))
            try:
                done = run_action(sc, job.collect, ctrl_c)
            except Interrupted:
                raise KeyboardInterrupt from None
            yield from done


# ------------------------------------------------------------------ the run
def simulate(model, *, runs: Optional[int] = 1000, depth: int = 50, seed: int = 0,
             time_limit: Optional[float] = None, workers: int = 1, swarm: bool = True,
             only: Optional[Sequence[str]] = None, shrink: bool = True, confirm_states: int = 200_000,
             sc=None, progress: Optional[Callable[[dict], None]] = None,
             progress_every: float = 0.5) -> SimulationResult:
    """Up to ``runs`` random walks of at most ``depth`` steps (``runs=None``: until ``time_limit``).

    ``workers`` > 1 runs walks in that many forked processes; ``sc`` (a SparkContext) runs them as
    Spark tasks instead. The first violation (smallest walk index) is shrunk (``shrink``) and,
    when a bfs of at most ``confirm_states`` states can tell, compared with the shortest trace.
    Ctrl-C stops the run and returns what was covered with verdict ``interrupted``.
    """
    check_settings(runs=runs, depth=depth, time_limit=time_limit, workers=workers)
    pin_mmap_threshold()
    start = time.monotonic()
    kw = dict(depth=depth, seed=seed, swarm=swarm, only=only)
    if sc is not None:
        parallelism = max(1, sc.defaultParallelism)
        results = _spark(model, batches(runs, SPARK_BATCH), kw, sc, parallelism)
    elif workers > 1:
        results = _processes(model, batches(runs, BATCH), kw, workers)
    else:
        results = _serial(model, batches(runs, BATCH), kw)
    seen = FingerprintSet()
    walks = steps = deepest = 0
    coverage: Counter = Counter()
    found: Optional[Found] = None
    verdict, reason = HOLDS, ""
    last_report = start
    try:
        for b in results:
            walks += b.walks
            steps += b.steps
            deepest = max(deepest, b.deepest)
            coverage.update(b.coverage)
            seen.add_new(b.fingerprints)
            now = time.monotonic()
            if b.found is not None:
                found = b.found
                break
            if time_limit is not None and now - start >= time_limit:
                reason = f"time limit of {time_limit:g} s"
                break
            if progress is not None and now - last_report >= progress_every:
                last_report = now
                progress({"engine": "simulate", "phase": f"{walks:,} walks", "distinct": len(seen),
                          "generated": steps + walks, "walks": walks, "deepest": deepest, "elapsed": now - start})
    except KeyboardInterrupt:
        verdict, reason = INTERRUPTED, "interrupted"
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()
    elapsed = time.monotonic() - start
    result = SimulationResult(
        engine="simulate", verdict=verdict, distinct_states=len(seen), generated_states=steps + walks,
        depth=deepest, elapsed=elapsed, peak_rss_mb=peak_rss_mb(), complete=False, reason=reason,
        walks=walks, seed=seed, coverage=dict(sorted(coverage.items())),
        never_fired=[k for k in action_kinds(model) if k not in coverage])
    if found is not None:
        from .shrink import shrink_trace
        trace = replay_walk(model, found)
        result.verdict = VIOLATED
        result.walk_index, result.original_steps = found.walk, trace.steps
        result.found_after = elapsed
        if shrink:
            trace, result.shrink_note = shrink_trace(model, trace, confirm_states=confirm_states)
        result.shrunk_steps = trace.steps
        result.violations = [trace]
        result.elapsed = time.monotonic() - start
    return result


def check_settings(*, runs: Optional[int], depth: int, time_limit: Optional[float], workers: int) -> None:
    """Raise :class:`SimulationError` (one line) for settings no run can take.

    >>> check_settings(runs=0, depth=10, time_limit=None, workers=1)
    Traceback (most recent call last):
    hwcheck.checker.simulate.SimulationError: runs=0: a run takes at least 1 walk
    """
    if depth < 1:
        raise SimulationError(f"depth={depth}: a walk takes at least 1 step")
    if runs is not None and runs < 1:
        raise SimulationError(f"runs={runs}: a run takes at least 1 walk")
    if runs is None and time_limit is None:
        raise SimulationError("give a number of runs or a time limit")
    if time_limit is not None and time_limit <= 0:
        raise SimulationError(f"time={time_limit} must be positive")
    if workers < 1:
        raise SimulationError(f"workers={workers} must be at least 1")


def replay_walk(model, found: Found) -> Trace:
    """The walk's states, by stepping its labels from its initial state."""
    states = [model.init_states()[found.init]]
    for label in found.labels:
        states.append(model.step(states[-1], label))
    return Trace(states, list(found.labels), found.invariant)
