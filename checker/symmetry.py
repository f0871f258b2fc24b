"""Symmetry: replicas are interchangeable, so states equal up to renaming replica ids are one state.

The algorithm is generic; the renaming is the model's (spec/protocol.py: ``Model.rename`` and
``Model.symmetry_keys``; the kafka-tla family is symmetric under every permutation of replica ids,
the design model under every permutation that keeps r0, the preferred replica).
``canonical_form(model)(s)`` picks one representative per class: the least renaming of ``s`` (as a
tuple) among the permutations that list the replicas in order of an id-free key; the set of those
renamings is the same for every member of a class, so so is its least element. Breadth-first
search over representatives visits one state per class.

>>> from hwcheck.spec import Config, Model
>>> m = Model(Config(mode="hw", replicas=3))
>>> [s] = m.init_states()
>>> a, b = m.step(s, ("send_fetch", 1)), m.step(s, ("send_fetch", 2))
>>> canonical = canonical_form(m)
>>> a == b, canonical(a)[0] == canonical(b)[0]
(False, True)
>>> c, perm = canonical(b)
>>> m.rename(b, perm) == c, canonical(c)[0] == c
(True, True)
"""

from __future__ import annotations

import functools
import itertools
from typing import Callable, Optional, Tuple

from hwcheck.spec.protocol import has

Perm = Tuple[int, ...]


# ------------------------------------------------------------------ one canonical form

def _candidates(keys: list):
    """Permutations (perm[r] = new name of r) that list the replicas in key order; ties tried
    every way."""
    n = len(keys)
    order = sorted(range(n), key=keys.__getitem__)
    groups, start = [], 0
    for i in range(1, n + 1):
        if i == n or keys[order[i]] != keys[order[start]]:
            groups.append(order[start:i])
            start = i
    for choice in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield inverse([r for g in choice for r in g])     # r's new name: its place in the order


@functools.lru_cache(maxsize=None)
def _identity(n: int) -> Perm:
    return tuple(range(n))


def _canonical_with(rename, keys_of):
    def canonical(s) -> Tuple[object, Perm]:
        keys = keys_of(s)
        n = len(keys)
        prev = keys[0]
        for i in range(1, n):             # keys already in strict order (most states): s itself
            k = keys[i]
            if not prev < k:
                break
            prev = k
        else:
            return s, _identity(n)
        order = sorted(range(n), key=keys.__getitem__)
        prev, ties = keys[order[0]], False
        for r in order[1:]:
            if keys[r] == prev:
                ties = True
                break
            prev = keys[r]
        if not ties:                    # all keys differ: one candidate
            perm = inverse(order)
            return rename(s, perm), perm    # not the identity: that is the strict order above
        best, best_perm = None, None
        for perm in _candidates(keys):
            t = s if perm == _identity(n) else rename(s, perm)
            if best is None or t < best:
                best, best_perm = t, perm
        return best, best_perm
    return canonical


def canonical_form(model) -> Callable:
    """``state -> (canonical state, the permutation that gives it)`` for the model's renaming;
    ValueError (one line) for a model without one."""
    if not (has(model, "rename") and has(model, "symmetry_keys")):
        raise ValueError(f"the {getattr(model, 'family', 'design')} model has no renaming of replicas: "
                         "symmetry does not apply")
    return _canonical_with(model.rename, model.symmetry_keys)


def rename_label(label: Tuple, perm: Perm) -> Tuple:
    return (label[0],) + tuple(perm[a] for a in label[1:])


def inverse(perm: Perm) -> Perm:
    inv = [0] * len(perm)
    for r, p in enumerate(perm):
        inv[p] = r
    return tuple(inv)


def canonicalizer(model) -> Optional[Callable]:
    """``state -> canonical state`` for the model (None for a single replica)."""
    if model.cfg.replicas < 2:
        return None
    fn = canonical_form(model)

    def canon(s):
        return fn(s)[0]
    return canon
