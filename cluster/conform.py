"""Conformance walks: a random walk of the model, run step by step on a real cluster of one release
through the replication proxy, compared with the model after every step.

The walk is drawn from the model itself (``walk``): at each step, if the model has a step Kafka
takes by itself at once (a broker applying a leadership change, the ISR growing on a fetch, the
controller electing a replica that came back), it takes that one, as the cluster will; otherwise it
picks, with the seed's random generator, one of the steps the harness places -- a client's
produce, a fault, an operator's election, or a message of the fetch path released or held
(``cluster/plan.py`` PLACED and PROXIED). The walk is then an ordinary trace: ``cluster/run.py``
runs it through the proxy, where every step is a checkpoint, and the first step at which the
cluster is not in the model's state (or one the model reaches from it by awaited steps alone) is a
difference. A walk is reproducible by its seed as far as the model goes (the same seed draws the
same steps); the cluster's own timing (a session expiring, a fetcher's back-off) is not seeded.

>>> from hwcheck.spec import Config, Model
>>> m = Model(Config(mode="kip903", records=2, crashes=1))
>>> w = walk(m, seed=3, steps=12)
>>> len(w.labels) <= 12 and w.labels == walk(m, seed=3, steps=12).labels
True
>>> walk_config("kip903", 200).records, walk_config("kip903", 200).response_hw
(25, 'kafka')
"""

from __future__ import annotations

import random
from typing import Callable, Optional

from hwcheck.checker.focus import minimize
from hwcheck.checker.result import Trace

from .plan import PLACED, PROXIED

# steps Kafka takes by itself as soon as it can: the walk takes them at once, as the cluster will
EAGER = ("become_leader", "become_follower", "elect_offline", "register", "controller_handle_failure",
         "controller_handle_failure_leader",
         "follower_handle_old_response")      # an old leader's answer reaches its fetcher thread within ms

# steps a walk places (the proxy places the fetch path); flushes and expired sessions cannot be
# placed (cluster/plan.py UNSUPPORTED). A stale Fetch is delivered only in a curated trace: the model
# makes a Fetch stale whenever its follower restarts its fetcher, but from 1.1 a fetcher thread that
# only changes partitions keeps its connection and waits for the answer before it sends again, so
# the held Fetch has not gone stale there (docs/reproduce.md)
WALKED = (frozenset(PLACED) | frozenset(PROXIED)) - {"leader_handle_stale_fetch"}


def walk(model, seed: int, steps: int) -> Trace:
    """A random walk of at most ``steps`` steps from the model's initial state."""
    rng = random.Random(seed)
    s = model.init_states()[0]
    states, labels = [s], []
    while len(labels) < steps:
        succ = list(model.successors(s))
        step = next(((label, t) for name in EAGER for label, t in succ if label[0] == name), None)
        if step is None:
            # an action first, then one of its instances: the fetch path, always enabled, would
            # crowd out the rarer client and fault steps otherwise
            kinds = sorted({label[0] for label, _ in succ if label[0] in WALKED})
            if not kinds:
                break
            kind = rng.choice(kinds)
            step = rng.choice([(label, t) for label, t in succ if label[0] == kind])
        label, s = step
        labels.append(label)
        states.append(s)
    return Trace(states, labels, None)


def walk_document(model, seed: int, steps: int) -> dict:
    """The walk as an ITF document (``hwcheck replay`` reads it; ``run`` runs it)."""
    from hwcheck.checker.trace import to_itf
    doc = to_itf(model, walk(model, seed, steps), engine="conform")
    doc["#meta"]["description"] = f"a conformance walk of mode {model.cfg.mode}, seed {seed}"
    doc["#meta"]["hwcheck"]["seed"] = seed
    return doc


def schedule(model, labels) -> Optional[Trace]:
    """The trace of ``labels`` from the model's initial state, or None if a step is not enabled."""
    states = [model.init_states()[0]]
    for label in labels:
        nxt = model.step(states[-1], label)
        if nxt is None:
            return None
        states.append(nxt)
    return Trace(states, list(labels), None)


def shrink(model, walk: Trace, parted_at: int, parts_at: Callable[[Trace], Optional[int]], tries: int,
           kept: Optional[list] = None) -> Trace:
    """A walk the cluster parted from at step ``parted_at``, shrunk as simulate shrinks a violation
    (checker/focus.py ``minimize``: steps of one replica, runs, chunks, single steps, largest
    removals first): a shorter schedule the model can run is run on a fresh cluster (``parts_at``:
    the step it parted at, None if it agreed) and kept, cut after that step, when it still parts.
    At most ``tries`` cluster runs; each kept walk is appended to ``kept`` (what an interrupted
    shrink had got to). A cluster's timing is not seeded, so a schedule that agreed once may part
    on another run: the result is minimal only as far as those runs went.

    >>> from hwcheck.spec import Config, Model
    >>> m = Model(Config(mode="kip903", records=2, crashes=1))
    >>> w = walk(m, seed=3, steps=12)
    >>> handled = lambda t: next((i + 1 for i, l in enumerate(t.labels) if l[0] == "follower_handle_fetch"), None)
    >>> [m.format_label(l) for l in shrink(m, w, handled(w), handled, tries=40).labels]  # doctest: +NORMALIZE_WHITESPACE
    ['controlled_shutdown_leader(r0,r1)', 'become_leader(r1)', 'restart(r0)', 'become_follower(r0)',
     'send_fetch(r0)', 'leader_handle_fetch(r1,r0)', 'follower_handle_fetch(r0)']
    """
    kept = [] if kept is None else kept

    def cut(trial: Trace, k: int) -> Trace:
        return Trace(trial.states[:k + 1], trial.labels[:k], None)

    def attempt(labels):
        trial = schedule(model, labels)
        k = None if trial is None else parts_at(trial)
        if k is None:
            return None
        kept.append(cut(trial, k))
        return kept[-1]
    kept.append(cut(walk, parted_at))
    return minimize(kept[-1], model.cfg.replicas, attempt, tries)


def walk_config(mode: str, steps: int, replicas: int = 2):
    """Bounds loose enough for a walk of ``steps`` steps: the model is only simulated, never
    explored, so records, crashes and epochs are not what limits it. A fetch response carries the
    HW as Kafka sends it (``response_hw="kafka"``: read with the records, before the Fetch's
    update; the model's default, from after the update, parted from 4.4.0 at step 91 of seed 0)."""
    from hwcheck.spec import Config
    return Config(mode=mode, replicas=replicas, records=max(2, steps // 8), crashes=max(1, steps // 15),
                  max_epoch=max(3, steps // 4), response_hw="kafka")
