"""Lemma discovery for ``hwcheck prove`` (Houdini): candidate lemmas, kept when true in every state
bfs reaches, then pruned by z3 to the largest subset that is inductive together with the property.
The lemmas are protocol knowledge and live in spec/lemmas/; this module is the algorithm.

1. ``candidates(enc)`` (spec/lemmas/): instances of the template families (``FAMILIES``) for every
   replica, pair of replicas, FetchResponse slot and offset of the layout, plus the hand-written
   lemmas of spec/auxiliary.py (family ``hand-written``); ``discover`` adds the clause family
   (``Clauses``, over spec/lemmas/atoms.py's ``state_atoms``) and the lookahead family
   (``lookahead``). Each candidate is written once over the encoding's term algebra, so the same
   function is evaluated on concrete states and encoded for z3.
2. ``prefilter``: every candidate is evaluated on reachable states (all of them when the space is
   small enough, else the first ``limit`` in breadth-first order: whole levels); one false
   reachable state rejects it before z3 sees it, with that state as the witness.
3. ``houdini``: one query ``wf(s) and A(s) and T(s, s') and not A(s')`` over the set ``A`` (the
   survivors, the property's invariants and EncodingBounds); each model drops every member of
   ``A`` false in ``s'``, until the query is unsat. Then ``A`` holds in the initial state (checked
   concretely) and is 1-inductive: every member holds in every reachable state, whatever the
   prefilter saw. The property is proved when its invariants are still in ``A``.

The prefilter only saves z3 work: soundness rests on the final unsat query alone.

>>> from hwcheck.spec import Config, Model
>>> from hwcheck.checker.symbolic import CONCRETE, Encoding
>>> enc = Encoding(Model(Config(mode="kip380", records=1)), CONCRETE)
>>> lemmas = candidates(enc)
>>> sorted({lem.family for lem in lemmas} | {"lookahead", "clause", "blocking"}) == sorted(FAMILIES)
True
"""

from __future__ import annotations

import ctypes
import itertools
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import z3

from hwcheck.spec import Model
from hwcheck.spec.lemmas import FAMILIES, Lemma, candidates
from hwcheck.spec.lemmas.atoms import state_atoms
from hwcheck.spec.lemmas.common import holds_acked, implies

from .cubes import Atoms
from .bmc import BOUNDS, CTRL_C, Interrupted, Unrolling, check_sat, is_ctrl_c, new_solver, symbolic_encoding
from .result import HOLDS, INTERRUPTED, VIOLATED
from .symbolic import CONCRETE, Encoding, Z3

# FAMILIES, Lemma and candidates (spec/lemmas/) are part of this module's interface: candidates in,
# discovery out
__all__ = ["FAMILIES", "NOT_INDUCTIVE", "Clauses", "Cti", "Discovery", "Drop", "Lemma", "candidates", "check_lemmas",
           "discover", "drop_chain", "lookahead", "only_clauses_blocked", "prefilter", "proof_model", "reachable"]

NOT_INDUCTIVE = "not k-inductive"


# ---------------------------------------------------------------- clauses over boolean atoms

class Clauses:
    """The clause family: clauses of at most ``size`` literals over ``state_atoms`` that hold in
    all ``states``, computed on the set of atom valuations seen (so it costs little whatever the
    number of states). Houdini starts from the strongest (``strongest``: none implied by a shorter
    one that holds) and, when z3 drops a one-literal clause, tries its weakenings that hold
    (``weakenings``), as Daikon and ICE learners walk the lattice: hundreds of conjuncts at a time
    instead of tens of thousands.

    >>> from hwcheck.spec import Config, Model
    >>> from hwcheck.checker.symbolic import CONCRETE, Encoding
    >>> model = Model(Config(mode="kip380", records=1, crashes=1))
    >>> clauses = Clauses(Encoding(model, CONCRETE), reachable(model)[0])
    >>> "not r0 alive -> not r0 leader" in [lem.name for lem in clauses.strongest()]
    True
    >>> len(clauses.weakenings("not r0 alive -> not r0 leader"))
    0
    """

    def __init__(self, cenc: Encoding, states: Sequence, size: int = 3):
        self.size = size
        self.names = [name for name, _ in state_atoms(cenc.o, cenc.of_state(states[0]))] if states else []
        seen = {tuple(bool(t) for _, t in state_atoms(cenc.o, cenc.of_state(st))) for st in states}
        self.P = np.array(sorted(seen), dtype=bool).reshape(len(seen), len(self.names))   # valuations x atoms
        self.lits: Dict[str, Tuple[Tuple[int, bool], ...]] = {}
        self._last: tuple = (None, None, [])          # (state, algebra, its atoms): every clause reads the same

    def _atoms(self, o, s) -> list:
        if not (self._last[0] is s and self._last[1] is o):
            self._last = (s, o, [t for _, t in state_atoms(o, s)])
        return self._last[2]

    def _holds(self, lits) -> bool:
        """No valuation seen makes every literal (atom, polarity) false."""
        atoms = [i for i, _ in lits]
        return not (self.P[:, atoms] != np.array([v for _, v in lits])).all(axis=1).any()

    def _lemma(self, lits) -> Lemma:
        lits = tuple(sorted(lits))
        pre = [("" if not v else "not ") + self.names[i] for i, v in lits[:-1]]     # a & b -> c
        i, v = lits[-1]
        name = f"{' & '.join(pre)} -> {'' if v else 'not '}{self.names[i]}" if pre else f"{'' if v else 'not '}{self.names[i]}"
        self.lits[name] = lits

        def term(enc, s, lits=lits):
            atoms = self._atoms(enc.o, s)
            return enc.o.Or(*[atoms[i] if v else enc.o.Not(atoms[i]) for i, v in lits])
        return Lemma(name, "clause", term)

    def strongest(self) -> List[Lemma]:
        k, out, found = len(self.names), [], set()
        for width in range(1, self.size + 1):
            for atoms in itertools.combinations(range(k), width):
                for values in itertools.product((True, False), repeat=width):
                    lits = tuple(zip(atoms, values))
                    if any(sub in found for w in range(1, width) for sub in itertools.combinations(lits, w)):
                        continue
                    if self._holds(lits):
                        found.add(lits)
                        out.append(self._lemma(lits))
        return out

    def literals(self, name: str) -> List[Tuple[str, bool]]:
        """A clause's literals by the atoms' names (what a lemma file stores)."""
        return [(self.names[i], v) for i, v in self.lits[name]]

    def from_literals(self, literals: Sequence[Tuple[str, bool]]) -> Lemma:
        """``literals`` read back (KeyError: an atom this layout lacks)."""
        index = {name: i for i, name in enumerate(self.names)}
        return self._lemma(tuple((index[name], bool(v)) for name, v in literals))

    def weakenings(self, name: str) -> List[Lemma]:
        """The clauses one literal longer than ``name``'s that hold, for a one-literal clause (an
        atom constant in every state seen: a fact the small bounds may only make look constant)."""
        lits = self.lits.get(name)
        if lits is None or len(lits) > 1:           # only a fact found constant: the rest would be too many
            return []
        used = {i for i, _ in lits}
        return [self._lemma(lits + ((i, v),)) for i in range(len(self.names)) if i not in used
                for v in (True, False) if self._holds(lits + ((i, v),))]


# ---------------------------------------------------------------- the lookahead family (depends on the property)

RECEIVE = ("follower_handle_fetch", "follower_handle_epoch_response", "leader_handle_fetch",
           "leader_handle_stale_fetch")


def keeps_goal(enc, s, i, goal):
    """Taking step ``i`` (when enabled) keeps the invariant ``goal``."""
    guard, t = enc.action(i, s)
    return implies(enc.o, guard, enc.invariant(goal, t))


def keeps_acked(enc, s, i, f):
    """Taking step ``i`` (when enabled) leaves follower f, an ISR member, holding every acknowledged record."""
    o = enc.o
    guard, t = enc.action(i, s)
    return implies(o, o.And(guard, s.ctl.isr[f]), holds_acked(o, t.reps[f], t.hist.acked))


def keeps_after_answer(enc, s, i, j, f, goals):
    """Taking step ``i`` then step ``j`` (an answer, then follower f handling it) keeps ``goals``
    and, while f is in the controller's ISR, every acknowledged record in f's log."""
    o = enc.o
    g1, t1 = enc.action(i, s)
    g2, t2 = enc.action(j, t1)
    return implies(o, o.And(g1, g2), o.And(implies(o, s.ctl.isr[f], holds_acked(o, t2.reps[f], t2.hist.acked)),
                                           *[enc.invariant(goal, t2) for goal in goals]))


def lookahead(enc: Encoding, goals: Sequence[str]) -> List[Lemma]:
    """For every message-receiving step of the run: taking it keeps each goal (and, for a follower,
    the acknowledged records it holds while in the controller's ISR)."""
    out = []
    for i, label in enumerate(enc.instances):
        if label[0] not in RECEIVE:
            continue
        tag = f"{label[0]}({','.join(f'r{x}' for x in label[1:])})"
        for goal in goals:
            if goal != BOUNDS:
                out.append(Lemma(f"{tag} keeps {goal}", "lookahead", partial(keeps_goal, i=i, goal=goal)))
        if label[0].startswith("follower"):
            out.append(Lemma(f"{tag} keeps the acknowledged records of an ISR member", "lookahead",
                             partial(keeps_acked, i=i, f=label[1])))
    # two steps: a request answered, then the answer handled by the follower
    index = {label: i for i, label in enumerate(enc.instances)}
    for (ask, answer) in (("leader_handle_epoch_request", "follower_handle_epoch_response"),
                          ("leader_handle_fetch", "follower_handle_fetch")):
        for label, i in index.items():
            if label[0] != ask or (answer, label[2]) not in index:
                continue
            l, f = label[1], label[2]
            tag = f"{ask}(r{l},r{f}) then {answer}(r{f})"
            out.append(Lemma(f"{tag} keeps the property and an ISR member's acknowledged records", "lookahead",
                             partial(keeps_after_answer, i=i, j=index[(answer, f)], f=f,
                                     goals=tuple(g for g in goals if g != BOUNDS))))
    return out


def proof_model(cfg) -> Model:
    """The model ``hwcheck prove`` checks: the spec with its history variables ``exposed_epoch``,
    ``epoch_leader`` and ``stale_entry`` (spec/model.py), which the families of
    spec/lemmas/exposed_epoch.py, epoch_leader.py and stale_entry.py read."""
    return Model(cfg, history_variables=True)


# ---------------------------------------------------------------- the bfs prefilter

def reachable(model, limit: Optional[int] = None) -> Tuple[list, bool]:
    """Reachable states breadth first (whole levels), and whether that is all of them."""
    seen = set(model.init_states())
    frontier, out = list(seen), list(seen)
    while frontier:
        if limit is not None and len(out) >= limit:
            return out, False
        nxt = []
        for s in frontier:
            CTRL_C.poll()
            for _, t in model.successors(s):
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
                    out.append(t)
        frontier = nxt
    return out, True


def prefilter(cenc: Encoding, lemmas: Sequence[Lemma], states: Sequence) -> Tuple[List[Lemma], Dict[str, object]]:
    """(the lemmas true in every state, {name: a state where it is false} for the others)."""
    alive = list(lemmas)
    rejected: Dict[str, object] = {}
    for i, s in enumerate(states):
        if i % 256 == 0:
            CTRL_C.poll()
        v = cenc.of_state(s)
        keep = []
        for lem in alive:
            if lem.term(cenc, v):
                keep.append(lem)
            else:
                rejected[lem.name] = s
        alive = keep
    return alive, rejected


# ---------------------------------------------------------------- the z3 loop

@dataclass
class Cti:
    """A counterexample to induction: ``before`` satisfies every assumed conjunct, ``after`` (one
    step later) breaks ``broken``."""
    before: object
    label: tuple
    after: object
    broken: List[str]
    excluded_by: Dict[str, List[str]] = field(default_factory=dict)   # family -> candidate lemmas false in before


@dataclass
class Discovery:
    verdict: str                          # holds / violated / not k-inductive / interrupted
    goals: List[str]                      # the property's invariants (and EncodingBounds)
    generated: int = 0
    reachable_states: int = 0
    reachable_complete: bool = False
    rejected: Dict[str, object] = field(default_factory=dict)        # by the prefilter: name -> witness state
    dropped: List[Tuple[int, str]] = field(default_factory=list)     # by z3: (round, name)
    trail: List[Tuple[int, tuple, List[str]]] = field(default_factory=list)  # (round, step z3 chose, dropped)
    befores: Dict[int, object] = field(default_factory=dict)          # round -> z3's first state (values)
    lemmas: Dict[str, "Lemma"] = field(default_factory=dict)          # every candidate, by name
    survivors: List[Lemma] = field(default_factory=list)             # the inductive lemmas
    rounds: int = 0
    learned: List[Lemma] = field(default_factory=list)                # blocking clauses, in the order learned
    cti: Optional[Cti] = None             # the first step that broke a goal
    violated_in: Optional[object] = None  # violated: a reachable state breaking a goal
    seconds: Dict[str, float] = field(default_factory=dict)
    interrupted_in: str = ""
    clauses: Optional["Clauses"] = None   # the clause family's atoms (a lemma file names their literals)
    atoms: Optional[Atoms] = None         # the learner's atoms (likewise for blocking clauses)

    @property
    def families(self) -> Dict[str, int]:
        out: Dict[str, int] = {}
        for lem in self.survivors:
            out[lem.family] = out.get(lem.family, 0) + 1
        return out


def _goal_term(enc: Encoding, name: str, s, un: Optional[Unrolling] = None, k: int = 0):
    if name == BOUNDS:
        return un.bounds_ok(k) if un is not None else enc.bounds_ok(s)
    return enc.invariant(name, s)


def discover(model, goals: Sequence[str], *, limit: Optional[int] = 200_000, extra: Sequence[Lemma] = (),
             families: Optional[Sequence[str]] = None, progress: Optional[Callable[[str], None]] = None,
             learn: int = 0, depth: int = 3) -> Discovery:
    """Houdini for the conjunction of ``goals`` (the model's invariants) and EncodingBounds: the
    templates' instances and ``extra`` lemmas, prefiltered on up to ``limit`` reachable states,
    then pruned by z3 to a fixed point. With ``learn`` > 0, up to that many counterexamples to
    induction are blocked by a clause (checker/cubes.py) instead of dropping what they break:
    a step that breaks a template lemma or a goal (level 0), or, up to level ``depth``, a step that
    breaks only clauses learned at the level below.
    Ctrl-C returns verdict ``interrupted``."""
    say = progress or (lambda msg: None)
    goals = list(dict.fromkeys(goals)) + [BOUNDS]
    d = Discovery(HOLDS, goals)
    try:
        with CTRL_C:
            _discover(model, d, limit, list(extra), families, say, learn, depth)
    except (KeyboardInterrupt, Interrupted, ctypes.ArgumentError, z3.Z3Exception) as e:
        if not is_ctrl_c(e):
            raise
        d.verdict = INTERRUPTED
    return d


def _discover(model, d: Discovery, limit, extra, families, say, learn=0, depth_limit=3) -> None:
    cenc = Encoding(model, CONCRETE)
    zenc = symbolic_encoding(model)
    lemmas = candidates(cenc, families) + list(extra)
    if families is None or "lookahead" in families:
        lemmas += lookahead(cenc, d.goals)
    d.generated = len(lemmas)
    # 1. the prefilter, on the states bfs reaches
    d.interrupted_in = "the prefilter"
    t0 = time.monotonic()
    states, d.reachable_complete = reachable(model, limit)
    d.reachable_states = len(states)
    preds = dict(model.invariants)
    for s in states:
        broken = [g for g in d.goals if g != BOUNDS and not preds[g](s)]
        if broken:
            d.verdict, d.violated_in = VIOLATED, (s, broken)
            d.seconds["prefilter"] = time.monotonic() - t0
            return
    kept, d.rejected = prefilter(cenc, lemmas, states)
    clauses = d.clauses = Clauses(cenc, states if families is None or "clause" in families else [])
    strongest = clauses.strongest()
    kept += strongest
    lemmas += strongest
    d.generated += len(strongest)
    atoms = d.atoms = Atoms(cenc, states) if learn else None
    d.seconds["prefilter"] = time.monotonic() - t0
    say(f"prefilter: {len(kept)} of {len(lemmas)} candidates hold in the {len(states)} states bfs reached"
        f"{'' if d.reachable_complete else ' (the first levels only)'} ({d.seconds['prefilter']:.1f} s)")
    # 2. Houdini
    d.interrupted_in = "the z3 pruning"
    t0 = time.monotonic()
    un = Unrolling(zenc, "h")
    s0 = un.new_state()
    step = un.step()
    s1 = un.states[1]
    members: List[Tuple[str, object, object]] = []     # (name, term at s0, its negation at s1)
    for g in d.goals:
        members.append((g, _goal_term(zenc, g, s0, un, 0), Z3.Not(_goal_term(zenc, g, s1, un, 1))))
    by_name = {lem.name: lem for lem in kept}
    for lem in kept:
        members.append((lem.name, lem.term(zenc, s0), Z3.Not(lem.term(zenc, s1))))
    alive = {name for name, _, _ in members}
    init = cenc.of_state(model.init_states()[0])
    not_at_init = [name for name in alive if name in by_name and not by_name[name].term(cenc, init)]
    alive -= set(not_at_init)          # cannot happen after the prefilter (the initial state is in it)
    all_candidates = d.lemmas = {lem.name: lem for lem in lemmas}
    wf = zenc.wf(s0)

    level_of: Dict[str, int] = {}       # learned clause -> its level (below)

    def add(lem: Lemma) -> None:
        all_candidates[lem.name] = by_name[lem.name] = lem
        kept.append(lem)
        lemmas.append(lem)
        d.generated += 1
        members.append((lem.name, lem.term(zenc, s0), Z3.Not(lem.term(zenc, s1))))
        alive.add(lem.name)

    # Every round ends the loop, learns a clause (at most ``learn``) or drops a conjunct, and a
    # conjunct joins at most once (a template instance, a clause's weakening, a learned clause), so
    # the loop stops (a cap of 500 rounds stopped epoch at 3 replicas, records=1, crashes=1 short).
    while True:
        d.rounds += 1
        current = [(name, a, b) for name, a, b in members if name in alive]
        solver = new_solver(True)
        solver.add(wf, *step)
        solver.add(*[a for _, a, _ in current if a is not True])
        tq = time.monotonic()
        answer = check_sat(solver, Z3.Or(*[broken for _, _, broken in current]))
        if answer == z3.unsat:
            say(f"  round {d.rounds}: unsat: {len(current)} conjuncts are inductive ({time.monotonic() - tq:.1f} s)")
            break
        zm = solver.model()
        before, after = zenc.values(zm, s0), zenc.values(zm, s1)
        dead = [name for name, _, _ in current if not _holds(cenc, all_candidates, name, after)]
        # how far back from a template lemma or a goal this step is: 0 when one of them broke,
        # else one more than the shallowest learned clause it broke
        level = min([0 if name not in level_of else level_of[name] + 1 for name in dead], default=0)
        if atoms is not None and len(d.learned) < learn and level <= depth_limit:
            # block before (no reachable state agrees with it on a cube's atoms) by up to three
            # clauses and their images under renaming the replicas; deeper, drop what broke
            fresh, found = [], False
            for cube in atoms.cubes(before, 24):           # the first three new ones, with their images
                found = True
                for c in [cube] + atoms.mirrors(cube):
                    name, term = atoms.clause(c)
                    if name not in all_candidates:
                        fresh.append(Lemma(name, "blocking", term))
                        add(fresh[-1])
                        level_of[name] = level
                if len(fresh) >= 3:
                    break
            if fresh:
                d.learned += fresh
                say(f"  round {d.rounds}: learned {len(fresh)}: {fresh[0].name} ({time.monotonic() - tq:.1f} s)")
                continue
            say(f"  round {d.rounds}: no new clause blocks it ("
                f"{'every cube found was learned before' if found else 'a reachable state agrees on every atom'})")
        if not dead:
            raise RuntimeError("z3's model breaks no conjunct when evaluated: the encodings disagree")
        say(f"  round {d.rounds}: {len(dead)} dropped, {len(current) - len(dead)} left ({time.monotonic() - tq:.1f} s)")
        label = zenc.instances[zm.eval(un.acts[0], model_completion=True).as_long()]
        d.trail.append((d.rounds, label, dead))
        d.befores[d.rounds] = before
        broken_goals = [g for g in d.goals if g in dead]
        if broken_goals and d.cti is None:
            excluded: Dict[str, List[str]] = {}
            for lem in lemmas:
                if lem.name not in d.rejected and not lem.term(cenc, before):
                    excluded.setdefault(lem.family, []).append(lem.name)
            d.cti = Cti(zenc.to_state(before), label, zenc.to_state(after), broken_goals, excluded)
        for name in dead:
            alive.discard(name)
            if name in by_name:
                d.dropped.append((d.rounds, name))
            for weaker in clauses.weakenings(name):          # a dropped clause: try its weakenings
                if weaker.name not in all_candidates:
                    add(weaker)
    d.seconds["z3"] = time.monotonic() - t0
    d.survivors = [lem for lem in kept if lem.name in alive]
    d.verdict = HOLDS if all(g in alive for g in d.goals) else NOT_INDUCTIVE
    d.interrupted_in = ""


def check_lemmas(model, goals: Sequence[str], lemmas: Sequence[Lemma]) -> Discovery:
    """The proof a lemma file stands for (checker/lemma_file.py), checked from scratch: ``goals``
    (the model's invariants), EncodingBounds and ``lemmas`` hold in the initial state and are
    1-inductive together, by one z3 query; no prefilter and no pruning, so the check costs the
    same whatever found the lemmas. Verdict holds; violated (a goal false in the initial state,
    ``violated_in``); not k-inductive, with ``rejected`` naming the lemmas false in the initial
    state or ``cti`` the step z3 found and every conjunct it breaks; interrupted on Ctrl-C.

    >>> from hwcheck.spec import Config, Model
    >>> model = Model(Config(mode="hw", records=1, crashes=0))
    >>> d = discover(model, ["NoLogDivergence"])
    >>> check_lemmas(model, ["NoLogDivergence"], d.survivors).verdict == d.verdict == HOLDS
    True
    """
    d = Discovery(HOLDS, list(dict.fromkeys(goals)) + [BOUNDS], generated=len(lemmas))
    d.lemmas = {lem.name: lem for lem in lemmas}
    try:
        with CTRL_C:
            _check_lemmas(model, d, list(lemmas))
    except (KeyboardInterrupt, Interrupted, ctypes.ArgumentError, z3.Z3Exception) as e:
        if not is_ctrl_c(e):
            raise
        d.verdict = INTERRUPTED
    return d


def _check_lemmas(model, d: Discovery, lemmas: List[Lemma]) -> None:
    cenc = Encoding(model, CONCRETE)
    zenc = symbolic_encoding(model)
    t0 = time.monotonic()
    d.interrupted_in = "the base case"
    names = d.goals + [lem.name for lem in lemmas]
    for init in model.init_states():
        v = cenc.of_state(init)
        broken = [g for g in d.goals if not _holds(cenc, d.lemmas, g, v)]
        if broken:
            d.verdict, d.violated_in = VIOLATED, (init, broken)
            return
        d.rejected.update({lem.name: init for lem in lemmas if not lem.term(cenc, v)})
    if d.rejected:
        d.verdict = NOT_INDUCTIVE
        return
    d.interrupted_in = "the z3 query"
    un = Unrolling(zenc, "h")
    s0 = un.new_state()
    step = un.step()
    s1 = un.states[1]
    now = [_goal_term(zenc, g, s0, un, 0) for g in d.goals] + [lem.term(zenc, s0) for lem in lemmas]
    later = [_goal_term(zenc, g, s1, un, 1) for g in d.goals] + [lem.term(zenc, s1) for lem in lemmas]
    solver = new_solver(True)
    solver.add(zenc.wf(s0), *step)
    solver.add(*[a for a in now if a is not True])
    d.rounds = 1
    answer = check_sat(solver, Z3.Or(*[Z3.Not(b) for b in later]))
    d.seconds["z3"] = time.monotonic() - t0
    d.interrupted_in = ""
    if answer == z3.unsat:
        d.survivors = lemmas
        return
    zm = solver.model()
    before, after = zenc.values(zm, s0), zenc.values(zm, s1)
    label = zenc.instances[zm.eval(un.acts[0], model_completion=True).as_long()]
    broken = [name for name in names if not _holds(cenc, d.lemmas, name, after)]
    d.verdict = NOT_INDUCTIVE
    d.cti = Cti(zenc.to_state(before), label, zenc.to_state(after), broken)


@dataclass
class Drop:
    """Why z3 dropped ``name`` in round ``round``: the step ``label`` from a state where every
    conjunct then assumed held; ``blockers`` are the conjuncts dropped in earlier rounds that are
    false in that state (had one of them been inductive, this counterexample would not exist)."""
    name: str
    round: int
    label: tuple
    blockers: List[str]


def drop_chain(model, d: Discovery, target: str) -> Tuple[Dict[str, Drop], List[str]]:
    """Follow ``target``'s drop back through the lemmas whose earlier drop let its counterexample
    to induction in: ({name: Drop} for every conjunct on the way, the roots). A root's
    counterexample satisfies every candidate z3 ever saw that was dropped before it (and every
    survivor): no lemma of the templates excludes it, so that is where a new lemma is needed (or
    the root's first state is reachable beyond the states the prefilter saw, and the root is
    not an invariant)."""
    cenc = Encoding(model, CONCRETE)
    dropped_in = {name: (r, label) for r, label, dead in d.trail for name in dead}
    if target not in dropped_in:
        raise KeyError(f"{target} was not dropped")
    chain: Dict[str, Drop] = {}
    todo = [target]
    while todo:
        name = todo.pop()
        if name in chain:
            continue
        r, label = dropped_in[name]
        before = d.befores[r]
        blockers = [m for m, (rm, _) in dropped_in.items() if rm < r and not _holds(cenc, d.lemmas, m, before)]
        chain[name] = Drop(name, r, label, blockers)
        todo += blockers
    roots = sorted((n for n, drop in chain.items() if not drop.blockers), key=lambda n: chain[n].round)
    return chain, roots


def only_clauses_blocked(chain: Dict[str, Drop], lemmas: Dict[str, Lemma]) -> List[str]:
    """The named lemmas on a drop chain whose counterexample only clauses excluded (every blocker
    of the clause family), by round. A clause fits the states the prefilter saw, so these are the
    named lemmas that lost their support to the clause family's guesses: a new named lemma must
    exclude the state, or the state is reachable and the named lemma false (a larger reach limit
    tells which).

    >>> lem = {"c": Lemma("c", "clause", None), "n": Lemma("n", "history", None)}
    >>> only_clauses_blocked({"n": Drop("n", 5, ("step",), ["c"]), "c": Drop("c", 2, ("step",), [])}, lem)
    ['n']
    """
    def is_clause(name):
        return name in lemmas and lemmas[name].family == "clause"
    return sorted((name for name, drop in chain.items()
                   if drop.blockers and not is_clause(name) and all(is_clause(b) for b in drop.blockers)),
                  key=lambda name: chain[name].round)


def _holds(cenc: Encoding, lemmas: Dict[str, Lemma], name: str, v) -> bool:
    if name in lemmas:
        return bool(lemmas[name].term(cenc, v))
    return bool(cenc.bounds_ok(v) if name == BOUNDS else cenc.invariant(name, v))
