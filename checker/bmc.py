"""Bounded model checking and k-induction with z3 over the encoding of checker/symbolic.py.

``bmc(model, depth)`` unrolls the transition relation one step at a time and asks at each depth
k = 0, 1, ..., depth whether a state reachable in exactly k steps breaks a checked invariant; the
first sat depth is therefore the length of a shortest counterexample. The labels z3 picked are
re-executed through ``model.step`` (the decoded z3 states must equal the spec's states, or the
engine stops with EncodingError), so the trace is the spec's own and replays.

``prove(model, names, k)`` is k-induction: base case = BMC to depth k-1; inductive step = k+1
well-formed states linked by the transition relation (pairwise distinct), the property holding in
the first k, broken in the last. Both unsat: the property holds at every depth. The property is
the conjunction of the invariants named, ``aux`` (spec/auxiliary.py) and EncodingBounds.

>>> from hwcheck.spec import Config, Model
>>> r = bmc(Model(Config(mode="hw", records=1, crashes=1)), 3)
>>> r.verdict, r.depth
('holds', 3)
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence

import z3

from .bfs import peak_rss_mb
from .result import HOLDS, INTERRUPTED, VIOLATED, Result, Trace
from .symbolic import CONCRETE, Z3, Encoding, bv_width, equal, leaves, z3_ops

NOT_INDUCTIVE = "not k-inductive"
BOUNDS = "EncodingBounds"


class EncodingError(RuntimeError):
    """The encoding and the spec disagree, or a bound of the layout is too small."""


def symbolic_encoding(model, bitvectors: bool = True) -> Encoding:
    """The z3 encoding of ``model``: bit-vectors (bit-blasted: fast) or integers."""
    return Encoding(model, z3_ops(bv_width(model.cfg) if bitvectors else None))


class Unrolling:
    """States s0, s1, ... of one encoding with the transition constraints between them."""

    def __init__(self, enc: Encoding, prefix: str = "s"):
        self.enc, self.prefix = enc, prefix
        self.states = []
        self.acts = []
        self._effects = {}

    def new_state(self):
        s = self.enc.fresh(f"{self.prefix}{len(self.states)}_")
        self.states.append(s)
        return s

    def effects(self, k: int):
        if k not in self._effects:
            s = self.states[k]
            effects = []
            for i in range(len(self.enc.instances)):
                CTRL_C.poll()
                effects.append(self.enc.action(i, s))
            self._effects[k] = effects
        return self._effects[k]

    def step(self) -> List:
        """Constraints for a new state s_{k+1} reached from s_k by one action (chosen by act_k)."""
        enc, k = self.enc, len(self.states) - 1
        s = self.states[k]
        effects = self.effects(k)
        t = self.new_state()
        act = z3.BitVec(f"{self.prefix}act{k}", max(8, len(effects).bit_length() + 1))
        self.acts.append(act)
        cs = [z3.ULT(act, len(effects))]
        cs += [z3.Implies(act == i, g) for i, (g, _) in enumerate(effects) if g is not True]
        cs += [z3.Not(act == i) for i, (g, _) in enumerate(effects) if g is False]
        effect_leaves = [list(leaves(nxt)) for _, nxt in effects]
        for j, (old, new) in enumerate(zip(leaves(s), leaves(t))):
            term = old
            for i in reversed(range(len(effects))):
                e = effect_leaves[i][j]
                if not (e is old or (isinstance(e, z3.ExprRef) and isinstance(old, z3.ExprRef) and e.eq(old))):
                    term = z3.If(act == i, e, term)
            cs.append(new == term)
        cs.append(enc.wf(t))
        return cs

    def bounds_ok(self, k: int):
        """EncodingBounds at s_k (which the unrolling already constrains to be well formed)."""
        enc, s = self.enc, self.states[k]
        return Z3.And(*[Z3.Or(Z3.Not(g), enc.wf_step(s, nxt)) for g, nxt in self.effects(k)])

    def property(self, k: int, names: Sequence[str]):
        s = self.states[k]
        return Z3.And(*[self.bounds_ok(k) if name == BOUNDS else self.enc.invariant(name, s) for name in names])

    def labels(self, zmodel, upto: int):
        return [self.enc.instances[zmodel.eval(a, model_completion=True).as_long()] for a in self.acts[:upto]]


class Interrupted(Exception):
    """Ctrl-C during a query (z3 catches the SIGINT itself and answers unknown)."""


class _CtrlC:
    """Ctrl-C while a z3 search runs. A KeyboardInterrupt raised inside z3's Python API can be
    swallowed by a ``__del__`` ("Exception ignored in ...": the search goes on) or wrapped by
    ctypes, and z3's own SIGINT handler can consume a Ctrl-C that lands as a query ends. So, inside
    ``with CTRL_C``: z3's handler is off, SIGINT only sets ``hit`` (polled between queries and
    while the unrolling is built), and a thread woken by the signal (``signal.set_wakeup_fd``)
    interrupts the query under way, which then answers unknown."""

    def __init__(self):
        self.hit, self.old, self.fds, self.old_fd = False, None, None, -1

    def __enter__(self):
        self.hit = False
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            r, w = os.pipe()
            os.set_blocking(w, False)
            self.fds = (r, w)
            self.old = signal.signal(signal.SIGINT, self._handle)
            self.old_fd = signal.set_wakeup_fd(w)
            z3.set_param("ctrl_c", False)
            threading.Thread(target=self._watch, args=(r,), daemon=True).start()
        return self

    def _handle(self, signum, frame):
        self.hit = True

    def _watch(self, r: int) -> None:
        while True:
            try:
                got = os.read(r, 64)
            except OSError:
                return
            if not got:
                return
            if signal.SIGINT in got:
                self.hit = True
                z3.main_ctx().interrupt()

    def poll(self) -> None:
        if self.hit:
            raise Interrupted("interrupted from keyboard")

    def __exit__(self, *exc):
        if self.old is not None:
            signal.set_wakeup_fd(self.old_fd)
            signal.signal(signal.SIGINT, self.old)
            z3.set_param("ctrl_c", True)
            os.close(self.fds[1])               # the watcher reads end-of-file and ends
            self.old, self.fds = None, None
        return False


CTRL_C = _CtrlC()


def is_ctrl_c(e: BaseException) -> bool:
    """Ctrl-C, however it surfaces: z3's unknown answer, a KeyboardInterrupt, one raised while
    ctypes converted an argument for z3's C API (it arrives as ctypes.ArgumentError), or any z3
    error after a Ctrl-C (an interrupted call other than a query fails with 'canceled')."""
    return (isinstance(e, (KeyboardInterrupt, Interrupted))
            or (isinstance(e, ctypes.ArgumentError) and "KeyboardInterrupt" in str(e))
            or (CTRL_C.hit and isinstance(e, (z3.Z3Exception, EncodingError))))


def check_sat(solver, *extra) -> z3.CheckSatResult:
    solver.add(*extra)
    CTRL_C.poll()
    r = solver.check()
    CTRL_C.poll()
    if r == z3.unknown:
        why = solver.reason_unknown()
        if "interrupted" in why or "canceled" in why:
            raise Interrupted(why)
        raise EncodingError(f"z3 gave up: {why}")
    return r


def _replay(model, enc: Encoding, unrolling: Unrolling, zmodel, upto: int, name: Optional[str]) -> Trace:
    """The labels z3 chose, re-executed by the spec; every decoded z3 state must match."""
    labels = unrolling.labels(zmodel, upto)
    states = [model.init_states()[0]]
    for j, label in enumerate(labels):
        nxt = model.step(states[-1], label)
        if nxt is None:
            raise EncodingError(f"step {j + 1}: {model.format_label(label)} is not enabled in the spec")
        states.append(nxt)
    for j, s in enumerate(states):
        if enc.to_state(enc.values(zmodel, unrolling.states[j])) != s:
            raise EncodingError(f"step {j}: the z3 state differs from the spec's")
    return Trace(states, labels, name)


# bit-blasting to SAT after cheap rewriting: an order of magnitude faster than z3's incremental
# solver on this encoding (docs/engines.md has the figures)
TACTIC = ("simplify", "propagate-values", "solve-eqs", "elim-uncnstr", "simplify", "bit-blast", "sat")


def new_solver(bitvectors: bool):
    return z3.Then(*TACTIC).solver() if bitvectors else z3.Solver()


def bmc(model, depth: int, *, only: Optional[Sequence[str]] = None,
        progress: Optional[Callable[[int, float, str], None]] = None, check_bounds: bool = True,
        bitvectors: bool = True) -> Result:
    """A shortest violation of length <= ``depth`` of the invariants ``only`` (default all), or holds.
    ``progress(k, seconds, answer)`` is called after each depth is solved. Ctrl-C returns verdict
    ``interrupted``, ``reason`` naming the depth under way (the depths below it hold).

    Each depth is a fresh query over the unrolling so far; once depth k is unsat, the property
    (and EncodingBounds) at s_k is a proven lemma and is added for the deeper queries."""
    start = time.monotonic()
    names = [name for name, _ in model.invariants if only is None or name in only]
    under_way = [0]             # the depth being solved; those below it hold
    try:
        with CTRL_C:
            return _bmc(model, depth, names, progress, check_bounds, bitvectors, start, under_way)
    except (KeyboardInterrupt, Interrupted, ctypes.ArgumentError, z3.Z3Exception, EncodingError) as e:
        if not is_ctrl_c(e):
            raise
        k = under_way[0]
        return Result("z3", INTERRUPTED, 0, 0, max(k - 1, 0), time.monotonic() - start, peak_rss_mb(), [],
                      complete=False, reason=f"interrupted at depth {k}")


def _bmc(model, depth, names, progress, check_bounds, bitvectors, start, under_way) -> Result:
    enc = symbolic_encoding(model, bitvectors)
    un = Unrolling(enc)
    constraints = [enc.init(un.new_state())]
    for k in range(depth + 1):
        under_way[0] = k
        if k > 0:
            constraints += un.step()
        t0 = time.monotonic()
        good = un.property(k, names)
        if check_bounds and k < depth:
            good = Z3.And(good, un.bounds_ok(k))
        solver = new_solver(bitvectors)
        solver.add(*constraints)
        answer = check_sat(solver, Z3.Not(good)) if not isinstance(good, bool) else (z3.unsat if good else z3.sat)
        if progress is not None:
            progress(k, time.monotonic() - t0, str(answer))
        if answer == z3.sat:
            zm = solver.model()
            final = enc.to_state(enc.values(zm, un.states[k]))
            broken = [name for name, pred in model.invariants if name in names and not pred(final)]
            if not broken:
                raise EncodingError(f"depth {k}: an enabled action leaves the encoding's bounds "
                                    f"(records/max_epoch slots); the encoding cannot check this run")
            trace = _replay(model, enc, un, zm, k, broken[0])
            return Result("z3", VIOLATED, 0, 0, k, time.monotonic() - start, peak_rss_mb(), [trace], complete=False)
        constraints.append(good)
    return Result("z3", HOLDS, 0, 0, depth, time.monotonic() - start, peak_rss_mb(), [], complete=False)


@dataclass
class Proof:
    verdict: str                    # holds / violated / not k-inductive
    k: int
    names: List[str]                # the property's conjuncts
    base_seconds: float = 0.0
    step_seconds: float = 0.0
    trace: Optional[Trace] = None   # violated: a counterexample from the initial state
    cti: list = field(default_factory=list)     # not k-inductive: the k+1 states of the step
    cti_labels: list = field(default_factory=list)
    broken: List[str] = field(default_factory=list)  # conjuncts false in the last CTI state
    interrupted_in: str = ""        # interrupted: the query Ctrl-C cut


def prove(model, names: Sequence[str], k: int = 1, *, aux: Sequence = (), simple_path: bool = True, bitvectors: bool = True,
          progress: Optional[Callable[[str, float, str], None]] = None) -> Proof:
    """k-induction of the conjunction of ``names`` (the model's invariants), ``aux`` ((name,
    predicate) pairs of spec/auxiliary.py, encoded in symbolic.INVARIANT_ENCODINGS) and
    EncodingBounds. Ctrl-C returns verdict ``interrupted`` with ``interrupted_in`` naming the
    query under way ("base case at depth j" or "inductive step")."""
    conj = list(names) + [name for name, _ in aux] + [BOUNDS]
    proof = Proof(HOLDS, k, conj)
    try:
        with CTRL_C:
            return _prove(model, proof, k, aux, simple_path, bitvectors, progress)
    except (KeyboardInterrupt, Interrupted, ctypes.ArgumentError, z3.Z3Exception, EncodingError) as e:
        if not is_ctrl_c(e):
            raise
        proof.verdict, proof.broken, proof.trace, proof.cti = INTERRUPTED, [], None, []
        return proof


def _prove(model, proof: Proof, k: int, aux, simple_path: bool, bitvectors: bool, progress) -> Proof:
    enc = symbolic_encoding(model, bitvectors)
    conj = proof.names
    # base case: no violation from the initial state within k-1 steps
    t0 = time.monotonic()
    un = Unrolling(enc, "b")
    constraints = [enc.init(un.new_state())]
    for j in range(k):
        proof.interrupted_in = f"base case at depth {j}"
        if j > 0:
            constraints += un.step()
        solver = new_solver(bitvectors)
        solver.add(*constraints)
        if check_sat(solver, Z3.Not(un.property(j, conj))) == z3.sat:
            zm = solver.model()
            final = enc.to_state(enc.values(zm, un.states[j]))
            preds = dict(model.invariants) | dict(aux)
            broken = [n for n in conj if n != BOUNDS and not preds[n](final)] or [BOUNDS]
            proof.verdict, proof.broken = VIOLATED, broken
            proof.trace = _replay(model, enc, un, zm, j, broken[0])
            proof.base_seconds = time.monotonic() - t0
            return proof
        constraints.append(un.property(j, conj))
    proof.base_seconds = time.monotonic() - t0
    if progress is not None:
        progress("base", proof.base_seconds, "unsat")
    # inductive step
    proof.interrupted_in = "inductive step"
    t0 = time.monotonic()
    un = Unrolling(enc, "i")
    solver = new_solver(bitvectors)
    solver.add(enc.wf(un.new_state()))
    for j in range(k):
        solver.add(un.property(j, conj))
        solver.add(*un.step())
    if simple_path:
        for a in range(k + 1):
            for b in range(a + 1, k + 1):
                solver.add(z3.Not(equal(Z3, un.states[a], un.states[b])))
    answer = check_sat(solver, Z3.Not(un.property(k, conj)))
    proof.step_seconds = time.monotonic() - t0
    if progress is not None:
        progress("step", proof.step_seconds, str(answer))
    if answer == z3.sat:
        zm = solver.model()
        proof.verdict = NOT_INDUCTIVE
        proof.cti = [enc.to_state(enc.values(zm, s)) for s in un.states]
        proof.cti_labels = un.labels(zm, k)
        last = enc.values(zm, un.states[k])
        concrete = Encoding(model, CONCRETE)
        proof.broken = [n for n in conj if not _holds(concrete, n, last)]
    proof.interrupted_in = ""
    return proof


def _holds(enc: Encoding, name: str, v) -> bool:
    return bool(enc.bounds_ok(v) if name == BOUNDS else enc.invariant(name, v))
