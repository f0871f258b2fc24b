"""Blocking clauses learned from counterexamples to induction (the ``blocking`` family of
checker/houdini.py), as IC3 and ICE learners do.

When z3 answers Houdini's query with a step from a state ``s`` that no conjunct excludes, the
templates lack a lemma. If the prefilter saw every reachable state, ``s`` is unreachable as soon as
its valuation of the atoms below differs from every reachable state's, and some small set of
those atoms (a cube: each literal true in ``s``) is false in every reachable state. The clause
"not that cube" holds in every reachable state and excludes ``s``: Houdini adds it instead of
dropping what ``s``'s step broke (and blocks the steps that break only learned clauses too, up to
a few levels: ``discover(..., learn=N, depth=3)``).

The atoms are over the state's scalars (spec/lemmas/atoms.py ``scalars``), each guarded so that an
unused slot reads ``VOID`` (a log entry beyond the LEO, a cache entry beyond its length, a message
field of another kind):

- value atoms ``x = v`` for every value ``v`` the reachable states give ``x``;
- order atoms ``x < y``, ``x > y`` and ``x = y`` for two offsets, or two epochs, of the same state.

The cube is a greedy hitting set (each reachable valuation must disagree with ``s`` on one of its
atoms), order atoms first: a relation between two fields says more at larger bounds than a
value does. Soundness is unchanged: a learned clause is a conjunct like any other, and the proof
still rests on the final unsat query.

>>> from hwcheck.spec import Config, Model
>>> from hwcheck.checker.symbolic import CONCRETE, Encoding
>>> from hwcheck.checker.houdini import reachable
>>> model = Model(Config(mode="kip380", records=1, crashes=1))
>>> cenc = Encoding(model, CONCRETE)
>>> atoms = Atoms(cenc, reachable(model)[0])
>>> list(atoms.cubes(cenc.of_state(model.init_states()[0])))     # a reachable state: no cube
[]
"""

from __future__ import annotations

import itertools
import re
from typing import Iterator, List, Sequence, Tuple

import numpy as np
import z3

from hwcheck.spec.lemmas.atoms import EPOCH, OFFSET, REPLICA, scalars

_REPLICA_NAME = re.compile(r"\br(\d+)\b")


class Atoms:
    """The atoms over ``scalars``, their valuations in the reachable ``states`` (deduplicated),
    and the cube of a state no reachable state agrees with.

    The valuations are kept bit-packed by atom (``packed[a]``: bit i set when valuation i makes
    atom a true), so that a cube's greedy choice counts bits: at the default bounds there are
    thousands of atoms and hundreds of thousands of valuations."""

    CHUNK = 8192                 # states valuated at a time (bounds the memory of one pass)

    def __init__(self, cenc, states: Sequence):
        self.cenc = cenc
        first = scalars(cenc, cenc.of_state(states[0]))
        self.scalar_names = [name for name, _, _ in first]
        self.by_name = {name: i for i, name in enumerate(self.scalar_names)}
        self.sorts = [sort for _, _, sort in first]
        self.replicas = len(states[0].replicas)
        S = np.array([[int(t) for _, t, _ in first]]
                     + [[int(t) for _, t, _ in scalars(cenc, cenc.of_state(st))] for st in states[1:]], dtype=np.int16)
        self.atoms: List[Tuple[str, int, int]] = []   # ('<' | '>' | '=', scalar, scalar) or ('v', scalar, value)
        for sort in (OFFSET, EPOCH):
            idx = [i for i, (_, _, srt) in enumerate(first) if srt == sort]
            for a in range(len(idx)):
                for b in range(a + 1, len(idx)):
                    i, j = idx[a], idx[b]
                    for kind in ("<", ">", "="):
                        self.atoms.append((kind, i, j))
        self.relational = len(self.atoms)
        for i in range(len(first)):
            for v in np.unique(S[:, i]):
                self.atoms.append(("v", i, int(v)))
        A = len(self.atoms)
        # the distinct valuations, packed by row (8 atoms a byte), then re-packed by atom
        rows = np.unique(np.concatenate([np.packbits(self._valuate(S[k:k + self.CHUNK]), axis=1)
                                         for k in range(0, len(S), self.CHUNK)]), axis=0)
        self.valuations = len(rows)
        words = -(-self.valuations // 64)
        self.packed = np.zeros((A, words * 8), dtype=np.uint8)
        for b in range(0, rows.shape[1], 64):                 # 512 atoms at a time
            cols = np.unpackbits(rows[:, b:b + 64], axis=1)[:, :A - 8 * b]
            self.packed[8 * b:8 * b + cols.shape[1], :-(-self.valuations // 8)] = np.packbits(cols.T, axis=1)
        self.packed = self.packed.view(np.uint64)              # atoms x words
        valid = np.zeros(words * 64, dtype=bool)
        valid[:self.valuations] = True
        self.valid = np.packbits(valid).view(np.uint64)        # the words' bits that are valuations
        self.ones = np.bitwise_count(self.packed).sum(axis=1)  # per atom: valuations where it is true
        self.index = {atom: a for a, atom in enumerate(self.atoms)}
        self.cube_of: dict = {}                                    # clause name -> its cube

    def _valuate(self, S: np.ndarray) -> np.ndarray:
        cols = []
        for kind, i, j in self.atoms:
            x = S[:, i]
            cols.append(x < S[:, j] if kind == "<" else x > S[:, j] if kind == ">" else
                        x == S[:, j] if kind == "=" else x == j)
        return np.stack(cols, axis=1)

    def valuation(self, v) -> np.ndarray:
        S = np.array([[int(t) for _, t, _ in scalars(self.cenc, v)]], dtype=np.int64)
        return self._valuate(S)[0]

    def _disagree(self, val: np.ndarray, atoms=None, words=slice(None)) -> np.ndarray:
        """Bit-packed, for each of ``atoms`` (default: all): the valuations (within ``words``)
        that disagree with ``val`` on it."""
        packed = self.packed[:, words] if atoms is None else self.packed[atoms][:, words]
        flip = np.where(val if atoms is None else val[atoms], ~np.uint64(0), np.uint64(0))
        return (packed ^ flip[:, None]) & self.valid[words]

    def cubes(self, v, k: int = 1) -> Iterator[List[Tuple[int, bool]]]:
        """Up to ``k`` distinct cubes of ``v``, lazily: atoms (index, value in ``v``) such that
        every reachable valuation disagrees with ``v`` on one of them, few (greedy, order atoms
        first; the i-th cube starts from the i-th best atom). None at all when a reachable state
        agrees with ``v`` on every atom."""
        val = self.valuation(v)
        weight = np.ones(len(self.atoms))
        weight[self.relational:] = 0.5
        disagreeing = np.where(val, self.valuations - self.ones, self.ones)   # per atom
        first = np.argsort(-(disagreeing * weight), kind="stable")[:k]
        seen = []
        for a0 in first:
            chosen = [int(a0)]
            left = ~self._disagree(val, [a0])[0] & self.valid          # valuations agreeing on the cube
            while True:
                words = np.flatnonzero(left)
                if not len(words):
                    break
                score = np.bitwise_count(self._disagree(val, None, words) & left[words]).sum(axis=1) * weight
                a = int(np.argmax(score))
                if score[a] == 0:               # a reachable valuation agrees with v on every atom
                    return
                chosen.append(a)
                left &= ~self._disagree(val, [a])[0]
            for a in list(chosen):                                # drop what the others cover
                rest = [b for b in chosen if b != a]
                if rest and not (np.bitwise_or.reduce(self._disagree(val, rest), axis=0) ^ self.valid).any():
                    chosen = rest
            cube = sorted((a, bool(val[a])) for a in chosen)
            if cube not in seen:
                seen.append(cube)
                yield cube

    def holds(self, cube: Sequence[Tuple[int, bool]]) -> bool:
        """No reachable valuation has every literal of the cube (its clause holds)."""
        both = self.valid.copy()
        for a, value in cube:
            both &= self.packed[a] if value else ~self.packed[a]
        return not both.any()

    def mirrors(self, cube: Sequence[Tuple[int, bool]]) -> List[List[Tuple[int, bool]]]:
        """The cube with the replicas renamed, for every other permutation of them whose
        clause holds too (the preferred replica and the initial leader break the symmetry, so
        each image is checked against the reachable valuations)."""
        by_name = self.by_name
        out = []
        for perm in itertools.permutations(range(self.replicas)):
            if perm == tuple(range(self.replicas)):
                continue

            def scalar(i):
                return by_name.get(_REPLICA_NAME.sub(lambda m: f"r{perm[int(m.group(1))]}", self.scalar_names[i]))
            image = []
            for a, value in cube:
                kind, i, j = self.atoms[a]
                i2 = scalar(i)
                if kind == "v":
                    atom = ("v", i2, perm[j] if self.sorts[i] == REPLICA and 0 <= j < self.replicas else j)
                else:
                    j2 = scalar(j)
                    if i2 is not None and j2 is not None and i2 > j2:
                        i2, j2, kind = j2, i2, {"<": ">", ">": "<", "=": "="}[kind]
                    atom = (kind, i2, j2)
                if atom not in self.index:
                    break
                image.append((self.index[atom], value))
            else:
                if sorted(image) != sorted(cube) and self.holds(image):
                    out.append(image)
        return out

    def describe(self, a: int, value: bool) -> str:
        return _describe(self.scalar_names, self.atoms[a], value)

    def literals(self, name: str) -> List[Literal]:
        """The literals of the cube of the clause called ``name``, by the scalars' names: what a
        lemma file stores (``cube_from_literals`` and ``blocking_clause`` rebuild the clause)."""
        out = []
        for a, value in self.cube_of[name]:
            kind, i, j = self.atoms[a]
            out.append((kind, self.scalar_names[i], j if kind == "v" else self.scalar_names[j], value))
        return out

    def clause(self, cube: Sequence[Tuple[int, bool]]):
        """The blocking clause: (its name, its term as a function of (encoding, state)); its cube
        is kept by name (``cube_of``)."""
        name, term = blocking_clause(self.scalar_names, [(self.atoms[a], value) for a, value in cube])
        self.cube_of[name] = list(cube)
        return name, term


Literal = Tuple[str, str, object, bool]     # (kind, scalar, scalar or value, its value in the cube)


def _describe(names: Sequence[str], atom: Tuple[str, int, int], value: bool) -> str:
    kind, i, j = atom
    text = f"{names[i]} = {j}" if kind == "v" else f"{names[i]} {kind} {names[j]}"
    return text if value else f"not ({text})"


def blocking_clause(names: Sequence[str], cube: Sequence[Tuple[Tuple[str, int, int], bool]]):
    """The clause "not cube" over the scalars called ``names`` (``scalars``' order): (its name, its
    term as a function of (encoding, state)). ``cube``: ((kind, scalar, scalar or value), value)."""
    cache: list = [None, None, None]         # [state, algebra, its scalars]: every literal reads the same
    name = "not (" + " & ".join(_describe(names, atom, value) for atom, value in cube) + ")"

    def term(enc, s, cube=tuple(cube)):
        o = enc.o
        if not (cache[0] is s and cache[1] is o):
            cache[:] = [s, o, [t for _, t, _ in scalars(enc, s)]]
        sc = cache[2]
        lits = []
        for (kind, i, j), value in cube:
            x = sc[i]
            if kind == "v":
                atom = (x if j else o.Not(x)) if _is_bool(x) else x == j
            else:
                y = sc[j]
                atom = x < y if kind == "<" else x > y if kind == ">" else x == y
            lits.append(o.Not(atom) if value else atom)
        return o.Or(*lits)
    return name, term


def cube_from_literals(names: Sequence[str], literals: Sequence[Literal]) -> List[Tuple[Tuple[str, int, int], bool]]:
    """``Atoms.literals`` read back against the scalars called ``names``; KeyError names a scalar
    this layout lacks, ValueError a malformed literal."""
    index = {name: i for i, name in enumerate(names)}
    out = []
    for kind, x, y, value in literals:
        if kind not in ("v", "<", ">", "=") or not isinstance(value, bool):
            raise ValueError(f"not a literal: {[kind, x, y, value]}")
        if kind == "v":
            if not isinstance(y, int) or isinstance(y, bool):
                raise ValueError(f"not a value: {y!r}")
            out.append(((kind, index[x], y), value))
        else:
            out.append(((kind, index[x], index[y]), value))
    return out


def _is_bool(x) -> bool:
    return isinstance(x, (bool, z3.BoolRef))
