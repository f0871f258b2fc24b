"""The spec as z3 terms: state, initial predicate, transition relation, invariants.

This is a second, hand-written encoding of spec/actions.py (guard then effect per action); it is
kept honest by tests/test_symbolic.py, which checks on thousands of reachable states of every mode
that the successors the spec enumerates equal the models of ``T(s, s')`` (both directions).

The encoding is written once against a tiny term algebra (``If``/``And``/``Or``/``Not``/``Sum`` and
Python's comparison operators) and instantiated twice: with z3 terms (``Z3``) for the solver, and
with plain Python values (``CONCRETE``) so that the agreement test can evaluate the very same
guards and effects on ten thousand states in seconds.

Modes. The rules of a mode (spec/modes.py) select the encoding's branches: the boolean rules as
they are, every rung of the ladder from ``hw`` to the newest (truncation on fetch, KRaft's broker
epochs, strict min ISR, Eligible Leader Replicas); the release functions of spec/log.py
(``assign``, ``end_offset_for``) by identity, each with its own copy here (``ASSIGN``,
``END_OFFSET_FOR``). A mode that replaces action functions, or names a release function this
encoding has no copy of, and a run with disk losses or follower reads, are refused with a
ConfigError (``check_covered``): the bfs engine runs them.

Layout of a state (``n`` replicas, ``L = records`` log slots, ``C`` epoch-cache slots):

- a log is ``L`` slots of ``(record, epoch)`` with a length (the LEO); slots at or beyond the LEO
  are ``(0, 0)``. A record only ever sits at the offset it was produced at, so ``L`` slots suffice;
- an epoch cache is ``C = min(max_epoch, records) + 1`` slots of ``(epoch, start)`` with a length
  (epochs and starts strictly increase, so that many entries at most);
- ``truncating`` is 0/1/2 (fetching, truncating, truncating again after an intermediate step);
- with broker epochs (KIP-903) a leader's view of each follower's broker epoch (``rbe``, 0 on
  other roles); with ELR (KIP-966) the clean-shutdown marker (``clean``); fields a mode lacks are
  empty tuples or constants;
- the controller: leader, epoch, the ISR and the brokers it believes live (``n`` booleans each);
  with broker epochs each broker's epoch; with ELR the ELR and the last known ELR (``n`` booleans);
- in-flight messages: per follower a kind (0 = none), the leader, two fields ``a``/``b``, and for
  a FetchResponse the records at their absolute offsets ``start .. b-1`` (``b`` = leader's LEO);
  with truncation on fetch two more fields ``c``/``d`` (a Fetch: last fetched epoch, broker epoch;
  a FetchResponse: the diverging epoch and its end offset, UNDEFINED when none);
- stale requests: per follower none or one abandoned Fetch (kind, leader, epoch, offset, and
  ``c``/``d`` as a Fetch's);
- history: ``produced``, ``acked`` per record, ``exposed`` per offset with a length, counters.

Every action whose effect would leave this layout (a log longer than ``L``, ...) is disabled in
``T``; the property ``EncodingBounds`` says no enabled action ever does so, and both engines check
it, so a bound that is too small is reported, never silently cut.

>>> from hwcheck.spec import Config, Model
>>> enc = Encoding(Model(Config(mode="hw", records=1)), CONCRETE)
>>> [s] = enc.model.init_states()
>>> sorted(enc.model.format_label(lab) for lab, _ in enc.successors(s))[:3]
['controlled_shutdown(r1)', 'controlled_shutdown_leader(r0,r1)', 'crash(r0)']
"""

from __future__ import annotations

from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

import z3

from hwcheck.spec import ConfigError
from hwcheck.spec.log import assign_0_11, assign_2_1, end_offset_for_0_11, end_offset_for_2_0, end_offset_for_2_1

# constants of spec/state.py and spec/modes.py, restated (this encoding is the engine's own copy of
# the protocol)
NONE, LEADER, FOLLOWER = 0, 1, 2
NO_MSG, FETCH, FETCH_RESPONSE, EPOCH_REQUEST, EPOCH_RESPONSE = 0, 1, 2, 3, 4
FETCHING, TRUNCATING, TRUNCATING_AGAIN = 0, 1, 2
PREFERRED = 0
UNDEF = -1


# ---------------------------------------------------------------- the term algebra

class _Z3Ops:
    """Terms are z3 expressions: integers (``width=None``) or signed bit-vectors of ``width`` bits
    (Python ints are lifted where z3 needs them)."""
    name = "z3"

    def __init__(self, width: Optional[int] = None):
        self.width = width

    def num(self, x):
        return z3.BitVecVal(x, self.width) if self.width else z3.IntVal(x)

    def var(self, name: str):
        return z3.BitVec(name, self.width) if self.width else z3.Int(name)

    def value(self, v) -> int:
        return v.as_signed_long() if self.width else v.as_long()

    def If(self, c, a, b):
        if c is True:
            return a
        if c is False:
            return b
        if a is b or (isinstance(a, z3.ExprRef) and isinstance(b, z3.ExprRef) and a.eq(b)):
            return a
        if type(a) is int and type(b) is int:
            if a == b:
                return a
            a = self.num(a)
        return z3.If(c, a, b)

    @staticmethod
    def And(*xs):
        xs = [x for x in xs if x is not True]
        if any(x is False for x in xs):
            return False
        return True if not xs else xs[0] if len(xs) == 1 else z3.And(*xs)

    @staticmethod
    def Or(*xs):
        xs = [x for x in xs if x is not False]
        if any(x is True for x in xs):
            return True
        return False if not xs else xs[0] if len(xs) == 1 else z3.Or(*xs)

    @staticmethod
    def Not(x):
        return (not x) if isinstance(x, bool) else z3.Not(x)

    def Sum(self, xs):
        terms = [(1 if x else 0) if isinstance(x, bool) else z3.If(x, self.num(1), self.num(0)) for x in xs]
        return sum(terms[1:], terms[0]) if terms else 0

    def select(self, arr, idx):
        if isinstance(idx, int):
            return arr[idx] if 0 <= idx < len(arr) else arr[0]
        out = arr[0]
        for j in range(1, len(arr)):
            out = ite(self, idx == j, arr[j], out)
        return out


class _ConcreteOps:
    """Terms are Python ints and bools: the same encoding, evaluated."""
    name = "concrete"

    @staticmethod
    def If(c, a, b):
        return a if c else b

    @staticmethod
    def And(*xs):
        return all(xs)

    @staticmethod
    def Or(*xs):
        return any(xs)

    @staticmethod
    def Not(x):
        return not x

    @staticmethod
    def Sum(xs):
        return sum(1 for x in xs if x)

    @staticmethod
    def select(arr, idx):
        return arr[idx] if 0 <= idx < len(arr) else arr[0]


Z3, CONCRETE = _Z3Ops(), _ConcreteOps()


def z3_ops(width: Optional[int] = None) -> _Z3Ops:
    return _Z3Ops(width)


def bv_width(cfg) -> int:
    """Bits (signed) for every value the encoding computes: offsets up to twice the records
    (a LEO plus a response's records), epochs + 1, counters + 1 (a broker epoch counts the restarts,
    at most crashes + power failures); two bits of headroom."""
    top = max(2 * cfg.records + 2, cfg.max_epoch + 2, cfg.crashes + cfg.power_failures + 2, cfg.replicas + 2)
    return top.bit_length() + 2


def leaves(t):
    if isinstance(t, tuple):
        for x in t:
            yield from leaves(x)
    else:
        yield t


def rebuild(template, it):
    if isinstance(template, tuple):
        vals = [rebuild(x, it) for x in template]
        return type(template)(*vals) if hasattr(template, "_fields") else tuple(vals)
    return next(it)


def ite(o, c, a, b):
    """``If`` over two terms of the same shape (tuples, NamedTuples, leaves)."""
    if c is True or c is False:
        return a if c else b
    if not isinstance(a, tuple):
        return o.If(c, a, b)
    return rebuild(a, iter([o.If(c, x, y) for x, y in zip(leaves(a), leaves(b))]))


def latest_cached_epoch(o, rep: SRep):
    """The latest epoch in ``rep``'s epoch cache (UNDEF when empty): LeaderEpochFileCache.latestEpoch."""
    return o.If(rep.clen > 0, o.select(rep.epoch_cache, rep.clen - 1)[0], UNDEF)


def _same(a, b) -> bool:
    """The two terms are the same term, leaf for leaf (not: equal in value)."""
    for x, y in zip(leaves(a), leaves(b)):
        if x is y:
            continue
        if isinstance(x, z3.ExprRef) or isinstance(y, z3.ExprRef):
            if not (isinstance(x, z3.ExprRef) and isinstance(y, z3.ExprRef) and x.eq(y)):
                return False
        elif x != y:
            return False
    return True


def equal(o, a, b):
    return o.And(*[x == y for x, y in zip(leaves(a), leaves(b))])


def tmin(o, a, b):
    return o.If(a <= b, a, b)


# ---------------------------------------------------------------- the symbolic state

class SRep(NamedTuple):
    alive: object
    role: object
    leader_epoch: object
    leader: object
    isr: tuple          # n booleans (a leader's view)
    log: tuple          # L (record, epoch) slots
    leo: object
    hw: object
    flushed: object
    epoch_cache: tuple  # C (epoch, start) slots
    clen: object
    truncating: object  # FETCHING / TRUNCATING / TRUNCATING_AGAIN
    remote_leo: tuple   # n ints (meaningful on a leader only; 0 otherwise)
    remote_broker_epoch: tuple = ()   # broker_epochs: n ints, a leader's remote broker epochs (0 on other roles)
    clean_shutdown: object = False    # elr: the clean-shutdown marker (KAFKA-15586)


class SCtl(NamedTuple):
    leader: object
    epoch: object
    isr: tuple          # n booleans
    live: tuple         # n booleans: the brokers the controller believes up
    broker_epochs: tuple = ()    # broker_epochs: n ints, each broker's epoch
    elr: tuple = ()     # elr: n booleans, Eligible Leader Replicas
    last_known_elr: tuple = ()   # elr: n booleans, the last known ELR (last known leader)


class SMsg(NamedTuple):
    """A message in flight, one layout for every kind: the slots ``a b c d`` mean what the kind's
    message in spec/state.py calls them, and are read by those names (``m.fetch_offset``)."""
    kind: object
    peer: object
    a: object           # Fetch: leader epoch; FetchResponse: hw; EpochRequest: leader epoch; EpochResponse: epoch
    b: object           # Fetch: fetch offset; FetchResponse: leader LEO; EpochRequest: requested; EpochResponse: end
    start: object       # FetchResponse: offset of its first record (= b - number of records)
    recs: tuple         # FetchResponse: L (record, epoch) slots at absolute offsets start .. b-1
    c: object = 0       # truncate_on_fetch: Fetch: last fetched epoch; FetchResponse: diverging epoch
    d: object = 0       # truncate_on_fetch: Fetch: broker epoch (0 before KIP-903); FetchResponse: its end

    # the spec's field names (spec/state.py), each for the kinds that have it
    leader = property(lambda m: m.peer)                   # every kind: the leader it goes to or comes from
    current_leader_epoch = property(lambda m: m.a)        # Fetch, EpochRequest
    fetch_offset = property(lambda m: m.b)                # Fetch
    last_fetched_epoch = property(lambda m: m.c)          # Fetch (truncation on fetch)
    broker_epoch = property(lambda m: m.d)                # Fetch (KIP-903)
    hw = property(lambda m: m.a)                          # FetchResponse
    leader_leo = property(lambda m: m.b)                  # FetchResponse
    diverging_epoch = property(lambda m: m.c)             # FetchResponse (truncation on fetch)
    diverging_end_offset = property(lambda m: m.d)        # FetchResponse (truncation on fetch)
    requested_epoch = property(lambda m: m.b)             # EpochRequest
    epoch = property(lambda m: m.a)                       # EpochResponse
    end_offset = property(lambda m: m.b)                  # EpochResponse


class SStale(NamedTuple):
    """A Fetch its sender abandoned (spec/state.py ``State.stale``), read by the Fetch's field names."""
    kind: object        # NO_MSG or FETCH
    peer: object        # the leader it was sent to
    a: object           # its current leader epoch
    b: object           # its fetch offset
    c: object = 0       # truncate_on_fetch: its last fetched epoch
    d: object = 0       # truncate_on_fetch: its broker epoch

    leader = property(lambda m: m.peer)
    current_leader_epoch = property(lambda m: m.a)
    fetch_offset = property(lambda m: m.b)
    last_fetched_epoch = property(lambda m: m.c)
    broker_epoch = property(lambda m: m.d)


class SHist(NamedTuple):
    produced: object
    acked: tuple
    exposed: tuple
    xlen: object
    crashes: object
    power_failures: object
    # the history variables of Model(cfg, history_variables=True):
    exposed_epoch: tuple = ()   # History.exposed_epoch: L slots, 0 at or past xlen
    epoch_leader: tuple = ()  # History.epoch_leader: one slot per epoch 0..max_epoch
    stale_entry: tuple = ()   # History.stale_entry: one (record, epoch) per follower, (UNDEF, UNDEF) for none


class SState(NamedTuple):
    reps: tuple
    ctl: SCtl
    msgs: tuple
    stale: tuple
    hist: SHist


ZERO = (0, 0)

# the release functions of spec/log.py this encoding has a copy of (Encoding.assign_*,
# Encoding.end_offset_for_*), by identity
ASSIGN = ((assign_0_11, "0_11"), (assign_2_1, "2_1"))
END_OFFSET_FOR = ((end_offset_for_0_11, "0_11"), (end_offset_for_2_0, "2_0"), (end_offset_for_2_1, "2_1"))


def _release(fn, known) -> Optional[str]:
    return next((tag for f, tag in known if fn is f), None)


def check_covered(model) -> None:
    """Refuse (one-line ConfigError) a run this encoding cannot express: a mode that replaces
    action functions or names an assign / end_offset_for of its own, or a spec with an action this
    encoding lacks."""
    mode = model.rules.mode
    why = None
    knobs = [knob for knob in ("disk_losses", "follower_reads") if getattr(model.cfg, knob)]
    if knobs:
        raise ConfigError(f"the z3 engine does not encode {', '.join(knobs)} (use the bfs engine)")
    unknown = [name for name, _, _ in model._actions if name not in dict(ACTION_TABLE)]
    if unknown:
        raise ConfigError(f"the z3 engine does not encode action(s) {', '.join(unknown)} of the spec "
                          f"(use the bfs engine)")
    if mode.actions:
        why = f"it replaces action(s) {', '.join(name for name, _ in mode.actions)}"
    elif mode.assign is not None and _release(mode.assign, ASSIGN) is None:
        why = f"its epoch-cache assign {getattr(mode.assign, '__name__', mode.assign)!s} is not one of spec/log.py's"
    elif mode.end_offset_for is not None and _release(mode.end_offset_for, END_OFFSET_FOR) is None:
        why = (f"its end_offset_for {getattr(mode.end_offset_for, '__name__', mode.end_offset_for)!s} "
               f"is not one of spec/log.py's")
    elif mode.epochs and mode.end_offset_for is None:
        why = "it has epochs but no end_offset_for"
    elif mode.cache_on_become_leader and mode.assign is None:
        why = "it caches the epoch on becoming leader but has no assign"
    elif mode.truncate_on_fetch and not mode.epochs:
        why = "it truncates on fetch without epochs"
    if why is not None:
        raise ConfigError(f"the z3 engine does not cover mode {mode.name}: {why} (use the bfs engine)")


class Encoding:
    """The transition system of one Model (config + mode) over the term algebra ``o``.

    - ``fresh(prefix)``: a state of z3 constants; ``of_state(s)``/``to_state(v)``: concrete states;
    - ``init(s)``, ``wf(s)`` (the layout), ``instances`` (labels), ``action(i, s)`` -> (guard, next);
    - ``invariant(name, s)`` for the spec's invariants, the auxiliary ones and EncodingBounds.
    """

    def __init__(self, model, o=Z3):
        self.model, self.o = model, o
        cfg, mode = model.cfg, model.rules.mode
        check_covered(model)
        self.cfg, self.mode = cfg, mode
        self.assign_rule = _release(mode.assign, ASSIGN)                  # None: no epoch cache is written
        self.end_offset_rule = _release(mode.end_offset_for, END_OFFSET_FOR)
        self.n, self.L = cfg.replicas, cfg.records
        self.C = min(cfg.max_epoch, cfg.records) + 1
        self.tracks_flushed = cfg.power_failures > 0     # flushed points exist only with power failures
        self.tracks_history = model.rules.history_variables   # exposed_epoch, epoch_leader, stale_entry
        # truncation on fetch (2.8+): Fetch and FetchResponse carry two more fields, no follower
        # ever truncates by OffsetsForLeaderEpoch (truncating stays FETCHING)
        self.tof = mode.truncate_on_fetch
        self.truncates = mode.epochs and not self.tof
        # a broker epoch counts a broker's registrations after a restart: at most one per stop
        self.max_broker_epoch = cfg.crashes + cfg.power_failures
        self.instances: List[Tuple] = []
        for name, arity in ACTION_TABLE:
            args = [(r,) for r in range(self.n)] if arity == 1 else \
                [(a, b) for a in range(self.n) for b in range(self.n) if a != b]
            if not args:
                continue
            try:
                model.parse_label(model.format_label((name,) + args[0]))
            except ConfigError:      # the action does not exist in this run (mode / power failures)
                continue
            self.instances.extend((name,) + a for a in args)
        self.overrides: Dict[str, Callable] = {}   # tests: replace one action's encoding

    # ------------------------------------------------------------ states
    def fresh(self, p: str) -> SState:
        n, L, C = self.n, self.L, self.C
        I, B = self.o.var, z3.Bool

        def pairs(tag, k):
            return tuple((I(f"{tag}_{j}_0"), I(f"{tag}_{j}_1")) for j in range(k))
        cached, mode, tof = self.assign_rule is not None, self.mode, self.tof

        def ints(tag, on):
            return tuple(I(f"{tag}{x}") for x in range(n)) if on else ()

        def bools(tag, on):
            return tuple(B(f"{tag}{x}") for x in range(n)) if on else ()

        def rep(r):
            # fields a run can never change are constants, not variables (no cache without an
            # assign, no truncation state without OffsetsForLeaderEpoch, nothing flushed without
            # power failures, no clean-shutdown marker without ELR)
            return SRep(B(f"{p}r{r}alive"), I(f"{p}r{r}role"), I(f"{p}r{r}lepoch"), I(f"{p}r{r}leader"),
                        tuple(B(f"{p}r{r}isr{x}") for x in range(n)), pairs(f"{p}r{r}log", L),
                        I(f"{p}r{r}leo"), I(f"{p}r{r}hw"), I(f"{p}r{r}flushed") if self.tracks_flushed else 0,
                        pairs(f"{p}r{r}cache", C) if cached else (ZERO,) * C,
                        I(f"{p}r{r}clen") if cached else 0, I(f"{p}r{r}trunc") if self.truncates else FETCHING,
                        tuple(I(f"{p}r{r}remote{x}") for x in range(n)), ints(f"{p}r{r}rbe", mode.broker_epochs),
                        B(f"{p}r{r}clean") if mode.elr else False)
        reps = tuple(rep(r) for r in range(n))
        ctl = SCtl(I(f"{p}c_leader"), I(f"{p}c_epoch"), tuple(B(f"{p}c_isr{x}") for x in range(n)),
                   tuple(B(f"{p}c_live{x}") for x in range(n)), ints(f"{p}c_bepoch", mode.broker_epochs),
                   bools(f"{p}c_elr", mode.elr), bools(f"{p}c_lke", mode.elr))
        msgs = tuple(SMsg(I(f"{p}m{f}kind"), I(f"{p}m{f}peer"), I(f"{p}m{f}a"), I(f"{p}m{f}b"),
                          I(f"{p}m{f}start"), pairs(f"{p}m{f}recs", L),
                          I(f"{p}m{f}c") if tof else 0, I(f"{p}m{f}d") if tof else 0) for f in range(n))
        stale = tuple(SStale(I(f"{p}o{f}kind"), I(f"{p}o{f}peer"), I(f"{p}o{f}a"), I(f"{p}o{f}b"),
                             I(f"{p}o{f}c") if tof else 0, I(f"{p}o{f}d") if tof else 0)
                      for f in range(n))
        hist = SHist(I(f"{p}h_produced"), tuple(I(f"{p}h_acked{j}") for j in range(L)),
                     tuple(I(f"{p}h_exposed{j}") for j in range(L)), I(f"{p}h_xlen"), I(f"{p}h_crashes"),
                     I(f"{p}h_pfails"),
                     tuple(I(f"{p}h_xepoch{j}") for j in range(L)) if self.tracks_history else (),
                     tuple(I(f"{p}h_eleader{e}") for e in range(self.cfg.max_epoch + 1)) if self.tracks_history else (),
                     pairs(f"{p}h_sentry", n) if self.tracks_history else ())
        return SState(reps, ctl, msgs, stale, hist)

    def of_state(self, s) -> SState:
        """A spec state as concrete terms (raises ValueError if it does not fit the layout)."""
        n, L, C = self.n, self.L, self.C

        def slots(entries, k, base=0):
            if base + len(entries) > k:
                raise ValueError("state does not fit the encoding's bounds")
            out = [ZERO] * k
            for i, e in enumerate(entries):
                out[base + i] = tuple(e)
            return tuple(out)

        def bits(mask):
            return tuple(bool(mask >> x & 1) for x in range(n))
        mode = self.mode
        reps = []
        for rep in s.replicas:
            remote = tuple(rep.remote_leo) if rep.remote_leo else (0,) * n
            rbe = ((tuple(rep.remote_broker_epoch) if rep.remote_broker_epoch else (0,) * n)
                   if mode.broker_epochs else ())
            reps.append(SRep(bool(rep.alive), rep.role, rep.leader_epoch, rep.leader, bits(rep.isr),
                             slots(rep.log, L), len(rep.log), rep.hw, rep.flushed, slots(rep.epoch_cache, C),
                             len(rep.epoch_cache), rep.truncating, remote, rbe, bool(rep.clean_shutdown)))
        msgs = []
        for m in s.inflight:
            if not m:
                msgs.append(SMsg(NO_MSG, 0, 0, 0, 0, (ZERO,) * L))
            elif m.kind == FETCH_RESPONSE:
                start = m.leader_leo - len(m.records)
                cd = (m.diverging_epoch, m.diverging_end_offset) if self.tof else ()
                msgs.append(SMsg(FETCH_RESPONSE, m.leader, m.hw, m.leader_leo, start, slots(m.records, L, start), *cd))
            else:   # Fetch, EpochRequest, EpochResponse: their fields in the slots a b (c d)
                msgs.append(SMsg(m.kind, m.leader, m[2], m[3], 0, (ZERO,) * L, *(m[4:6] if self.tof else ())))
        stale = tuple(SStale(*(m if self.tof else m[:4])) if m else self._no_stale() for m in s.stale)
        h = s.history
        if len(h.exposed) > L:
            raise ValueError("state does not fit the encoding's bounds")
        hist = SHist(h.produced, tuple(h.acked), tuple(h.exposed) + (0,) * (L - len(h.exposed)), len(h.exposed),
                     h.crashes, h.power_failures,
                     tuple(h.exposed_epoch) + (0,) * (L - len(h.exposed)) if self.tracks_history else (),
                     tuple(h.epoch_leader) if self.tracks_history else (),
                     tuple(h.stale_entry) if self.tracks_history else ())
        c = s.controller
        ctl = SCtl(c.leader, c.epoch, bits(c.isr), bits(c.live), tuple(c.broker_epochs),
                   bits(c.elr) if mode.elr else (), bits(c.last_known_elr) if mode.elr else ())
        return SState(tuple(reps), ctl, tuple(msgs), stale, hist)

    def to_state(self, v: SState):
        """Concrete terms (of_state, a z3 model's values) back to a spec state."""
        from hwcheck.spec.state import (Controller, EpochRequest, EpochResponse, Fetch, FetchResponse, History,
                                        Replica, State)

        def mask(bs):
            return sum(1 << x for x, b in enumerate(bs) if b)
        extra = (lambda m: (m.c, m.d)) if self.tof else (lambda m: ())    # truncation on fetch's fields
        reps = []
        for r in v.reps:
            leads = r.role == LEADER
            reps.append(Replica(int(r.alive), r.role, r.leader_epoch, r.leader, mask(r.isr), tuple(r.log[:r.leo]), r.hw,
                                r.flushed, tuple(r.epoch_cache[:r.clen]), r.truncating, tuple(r.remote_leo) if leads else (),
                                tuple(r.remote_broker_epoch) if leads else (), int(r.clean_shutdown)))
        inflight = []
        for m in v.msgs:
            if m.kind == NO_MSG:
                inflight.append(())
            elif m.kind == FETCH_RESPONSE:
                inflight.append(FetchResponse(FETCH_RESPONSE, m.leader, tuple(m.recs[m.start:m.leader_leo]), m.hw,
                                              m.leader_leo, *extra(m)))
            elif m.kind == FETCH:
                inflight.append(Fetch(FETCH, m.leader, m.current_leader_epoch, m.fetch_offset, *extra(m)))
            elif m.kind == EPOCH_REQUEST:
                inflight.append(EpochRequest(EPOCH_REQUEST, m.leader, m.current_leader_epoch, m.requested_epoch))
            else:
                inflight.append(EpochResponse(EPOCH_RESPONSE, m.leader, m.epoch, m.end_offset))
        stale = tuple(() if m.kind == NO_MSG else Fetch(FETCH, m.leader, m.current_leader_epoch, m.fetch_offset,
                                                        *extra(m)) for m in v.stale)
        h, c = v.hist, v.ctl
        ctl = Controller(c.leader, c.epoch, mask(c.isr), mask(c.live), tuple(c.broker_epochs), mask(c.elr), mask(c.last_known_elr))
        return State(tuple(reps), ctl, tuple(inflight), stale,
                     History(h.produced, tuple(h.acked), tuple(h.exposed[:h.xlen]), h.crashes, h.power_failures,
                             exposed_epoch=tuple(h.exposed_epoch[:h.xlen]), epoch_leader=tuple(h.epoch_leader),
                             stale_entry=tuple(tuple(e) for e in h.stale_entry)))

    def values(self, zmodel, s: SState) -> SState:
        """The concrete terms of a z3 model at the symbolic state ``s``."""
        def val(x):
            if not isinstance(x, z3.ExprRef):      # a constant of the layout
                return x
            v = zmodel.eval(x, model_completion=True)
            return z3.is_true(v) if z3.is_bool(v) else self.o.value(v)
        return rebuild(s, iter([val(x) for x in leaves(s)]))

    # ------------------------------------------------------------ the layout
    def wf(self, s: SState):
        """The layout's constraints (ranges, canonical padding): every state the encoding
        represents satisfies them, and each satisfying assignment is exactly one spec state."""
        return self.o.And(*[check(part) for part, check in self._parts(s)])

    def wf_step(self, s: SState, t: SState):
        """``wf(t)`` for a state ``t`` computed from a well-formed ``s``: the constraints of the
        parts of ``t`` that are not term for term those of ``s`` (an action leaves most parts as
        they are; the solver need not be told again that they are well formed)."""
        return self.o.And(*[check(b) for (a, _), (b, check) in zip(self._parts(s), self._parts(t))
                            if not _same(a, b)])

    def _parts(self, s: SState):
        """The parts of a state, each with the function giving its layout constraints."""
        return ([(r, self._wf_rep) for r in s.reps] + [(s.ctl, self._wf_ctl)] + [(m, self._wf_msg) for m in s.msgs]
                + [(m, self._wf_stale) for m in s.stale] + [(s.hist, self._wf_hist)])

    def _rng(self, x, lo, hi):
        return self.o.And(lo <= x, x <= hi)

    def _entry_ok(self, e):
        return self.o.And(self._rng(e[0], 0, self.L - 1), self._rng(e[1], 0, self.cfg.max_epoch))

    def _zero(self, e):
        return self.o.And(e[0] == 0, e[1] == 0)

    def _wf_rep(self, r: SRep):
        o, n, L, C, E, rng, zero = self.o, self.n, self.L, self.C, self.cfg.max_epoch, self._rng, self._zero
        none = r.role == NONE
        cs = [rng(r.role, 0, 2), rng(r.leo, 0, L), rng(r.hw, 0, L), rng(r.flushed, 0, L), rng(r.clen, 0, C),
              rng(r.truncating, 0, 2),
              o.If(none, o.And(r.leader_epoch == UNDEF, r.leader == UNDEF, r.truncating == FETCHING,
                               *[o.Not(b) for b in r.isr]),
                   o.And(rng(r.leader_epoch, 0, E), rng(r.leader, 0, n - 1)))]
        if not self.tracks_flushed:
            cs.append(r.flushed == 0)
        if self.assign_rule is None:
            cs.append(r.clen == 0)
        if not self.truncates:
            cs.append(r.truncating == FETCHING)
        for j, e in enumerate(r.log):
            cs.append(o.If(j < r.leo, self._entry_ok(e), zero(e)))
        for j, e in enumerate(r.epoch_cache):
            ok = o.And(rng(e[0], 0, E), rng(e[1], 0, L))
            if j > 0:
                prev = r.epoch_cache[j - 1]
                ok = o.And(ok, prev[0] < e[0], prev[1] < e[1])
            cs.append(o.If(j < r.clen, ok, zero(e)))
        for x in r.remote_leo:
            cs.append(o.If(r.role == LEADER, rng(x, UNDEF, L), x == 0))
        for x in r.remote_broker_epoch:
            cs.append(o.If(r.role == LEADER, rng(x, UNDEF, self.max_broker_epoch), x == 0))
        return o.And(*cs)

    def _wf_ctl(self, c: SCtl):
        return self.o.And(self._rng(c.leader, UNDEF, self.n - 1), self._rng(c.epoch, 0, self.cfg.max_epoch),
                          *[self._rng(x, 0, self.max_broker_epoch) for x in c.broker_epochs])

    def _wf_msg(self, m: SMsg):
        o, n, L, E, rng, zero = self.o, self.n, self.L, self.cfg.max_epoch, self._rng, self._zero
        kinds = 4 if self.truncates else 2
        no_recs = o.And(*[zero(e) for e in m.recs])
        recs_ok = o.And(*[o.If(o.And(m.start <= j, j < m.b), self._entry_ok(e), zero(e)) for j, e in enumerate(m.recs)])
        # truncation on fetch: a FetchResponse whose HW the follower has applied before truncating
        # carries UNDEFINED (hw_before_truncation)
        low_hw = UNDEF if self.mode.hw_before_truncation else 0
        no_cd = o.And(m.c == 0, m.d == 0)
        return o.And(
            rng(m.kind, 0, kinds),
            o.If(m.kind == NO_MSG, o.And(m.peer == 0, m.a == 0, m.b == 0, m.start == 0, no_recs),
                 rng(m.peer, 0, n - 1)),
            o.If(m.kind == FETCH, o.And(rng(m.a, 0, E), rng(m.b, 0, L), m.start == 0, no_recs, self._fetch_cd(m)),
                 True),
            o.If(m.kind == FETCH_RESPONSE,
                 o.And(rng(m.a, low_hw, L), rng(m.b, 0, L), rng(m.start, 0, L), m.start <= m.b, recs_ok,
                       o.Or(o.And(m.c == UNDEF, m.d == UNDEF), o.And(rng(m.c, 0, E), rng(m.d, 0, L)))
                       if self.tof else True),
                 True),
            o.If(o.Or(m.kind == NO_MSG, m.kind == EPOCH_REQUEST, m.kind == EPOCH_RESPONSE), no_cd, True),
            o.If(m.kind == EPOCH_REQUEST, o.And(rng(m.a, 0, E), rng(m.b, UNDEF, E), m.start == 0, no_recs), True),
            o.If(m.kind == EPOCH_RESPONSE, o.And(rng(m.a, UNDEF, E), rng(m.b, UNDEF, L), m.start == 0, no_recs), True))

    def _fetch_cd(self, m):
        """A Fetch's last fetched epoch and broker epoch (0 before KIP-903)."""
        if not self.tof:
            return True
        be = self._rng(m.d, 0, self.max_broker_epoch) if self.mode.broker_epochs else m.d == 0
        return self.o.And(self._rng(m.c, UNDEF, self.cfg.max_epoch), be)

    def _wf_stale(self, m: SStale):
        o, rng = self.o, self._rng
        return o.If(m.kind == NO_MSG, o.And(m.peer == 0, m.a == 0, m.b == 0, m.c == 0, m.d == 0),
                    o.And(m.kind == FETCH, rng(m.peer, 0, self.n - 1), rng(m.a, 0, self.cfg.max_epoch),
                          rng(m.b, 0, self.L), self._fetch_cd(m)))

    def _wf_hist(self, h: SHist):
        o, L, cfg, rng = self.o, self.L, self.cfg, self._rng
        return o.And(rng(h.produced, 0, L), rng(h.xlen, 0, L), rng(h.crashes, 0, cfg.crashes),
                     rng(h.power_failures, 0, cfg.power_failures), *[rng(a, UNDEF, L - 1) for a in h.acked],
                     *[o.If(j < h.xlen, rng(x, 0, L - 1), x == 0) for j, x in enumerate(h.exposed)],
                     *[o.If(j < h.xlen, rng(x, 0, cfg.max_epoch), x == 0) for j, x in enumerate(h.exposed_epoch)],
                     *[rng(x, UNDEF, self.n - 1) for x in h.epoch_leader],
                     *[o.And(rng(rec, UNDEF, L - 1), rng(ep, UNDEF, cfg.max_epoch)) for rec, ep in h.stale_entry])

    def init(self, s: SState):
        return equal(self.o, s, self.of_state(self.model.init_states()[0]))

    # ------------------------------------------------------------ small state updates
    def _set(self, s: SState, r: int, rep: SRep) -> SState:
        return s._replace(reps=s.reps[:r] + (rep,) + s.reps[r + 1:])

    def _send(self, s: SState, f: int, msg: SMsg) -> SState:
        return s._replace(msgs=s.msgs[:f] + (msg,) + s.msgs[f + 1:])

    def _with_ctl(self, s: SState, c: SCtl) -> SState:
        return s._replace(ctl=c)

    def _none(self) -> SMsg:
        return SMsg(NO_MSG, 0, 0, 0, 0, (ZERO,) * self.L)

    @staticmethod
    def _no_stale() -> SStale:
        return SStale(NO_MSG, 0, 0, 0)

    def _set_stale(self, s: SState, f: int, m: SStale) -> SState:
        return s._replace(stale=s.stale[:f] + (m,) + s.stale[f + 1:])

    @staticmethod
    def _bit(bits, r: int, value):
        return tuple(value if x == r else b for x, b in enumerate(bits))

    # ------------------------------------------------------------ log and epoch cache (spec/log.py)
    def _prefix(self, slots, k):
        """Slots below k kept, the rest zeroed."""
        return tuple(ite(self.o, j < k, e, ZERO) for j, e in enumerate(slots))

    def cache_filter(self, cache, clen, keep):
        """Entries (a prefix, as starts and epochs increase) for which keep(entry) holds."""
        o = self.o
        k = o.Sum([o.And(j < clen, keep(e)) for j, e in enumerate(cache)])
        return self._prefix(cache, k), k

    def truncate(self, rep: SRep, offset, trim_cache_at_leo: bool = False) -> SRep:
        """log.truncate: below the LEO the log, HW, flushed point and cache follow it down; at or
        beyond the LEO nothing changes, but with ``trim_cache_at_leo`` entries starting at the LEO go."""
        o = self.o
        beyond = offset >= rep.leo
        newlen = o.If(beyond, rep.leo, offset)
        cache, clen = self.cache_filter(rep.epoch_cache, rep.clen, lambda e: e[1] < newlen)
        if not trim_cache_at_leo:
            cache, clen = ite(o, beyond, (rep.epoch_cache, rep.clen), (cache, clen))
        return rep._replace(log=self._prefix(rep.log, newlen), leo=newlen,
                            hw=o.If(beyond, rep.hw, tmin(o, rep.hw, offset)),
                            flushed=o.If(beyond, rep.flushed, tmin(o, rep.flushed, offset)),
                            epoch_cache=cache, clen=clen)

    def assign(self, cache, clen, epoch, start):
        """The mode's LeaderEpochFileCache.assign."""
        if self.assign_rule == "0_11":
            return self.assign_0_11(cache, clen, epoch, start)
        return self.assign_2_1(cache, clen, epoch, start)

    def assign_0_11(self, cache, clen, epoch, start):
        """log.assign_0_11: append only above the latest epoch, at or past the latest start."""
        o = self.o
        last = o.select(cache, clen - 1)
        latest_epoch = o.If(clen > 0, last[0], UNDEF)
        latest_start = o.If(clen > 0, last[1], UNDEF)
        ok = o.And(epoch >= 0, epoch > latest_epoch, start >= latest_start)
        new = tuple(ite(o, j == clen, (epoch, start), e) for j, e in enumerate(cache))
        return ite(o, ok, (new, clen + 1), (cache, clen))

    def assign_2_1(self, cache, clen, epoch, start):
        """log.assign_2_1: unless the latest entry is this epoch from an earlier offset, drop
        the conflicting entries and append."""
        o = self.o
        last = o.select(cache, clen - 1)
        same = o.And(clen > 0, last[0] == epoch, last[1] <= start)
        k = o.Sum([o.And(j < clen, e[0] < epoch, e[1] < start) for j, e in enumerate(cache)])
        new = tuple(ite(o, j < k, e, ite(o, j == k, (epoch, start), ZERO)) for j, e in enumerate(cache))
        return ite(o, same, (cache, clen), (new, k + 1))

    def latest_epoch(self, rep: SRep):
        return latest_cached_epoch(self.o, rep)

    def epoch_start(self, rep: SRep, epoch):
        out = UNDEF
        for j in reversed(range(self.C)):
            e = rep.epoch_cache[j]
            out = self.o.If(self.o.And(j < rep.clen, e[0] == epoch), e[1], out)
        return out

    def _higher(self, cache, clen, requested):
        """Index of the first entry with an epoch above ``requested`` (= clen if none)."""
        o = self.o
        return o.Sum([o.And(j < clen, e[0] <= requested) for j, e in enumerate(cache)])

    def end_offset_for(self, cache, clen, leo, requested):
        """The mode's LeaderEpochFileCache.endOffsetFor."""
        return getattr(self, f"end_offset_for_{self.end_offset_rule}")(cache, clen, leo, requested)

    def end_offset_for_0_11(self, cache, clen, leo, requested):
        """log.end_offset_for_0_11: an offset only; the LEO for the latest epoch (UNDEFINED when
        the cache is empty), else the start of the first higher epoch unless none is higher or
        the requested one is below the first."""
        o = self.o
        last = o.select(cache, clen - 1)
        h = self._higher(cache, clen, requested)
        return ite(o, o.If(clen > 0, last[0], UNDEF) == requested, (UNDEF, leo),
                   ite(o, o.Or(h == clen, h == 0), (UNDEF, UNDEF),
                       (UNDEF, o.select([e[1] for e in cache], h))))

    def end_offset_for_2_0(self, cache, clen, leo, requested):
        """log.end_offset_for_2_0: (largest epoch <= requested, its end); UNDEFINED below the first."""
        o = self.o
        last = o.select(cache, clen - 1)
        h = self._higher(cache, clen, requested)
        general = ite(o, o.Or(h == clen, h == 0), (UNDEF, UNDEF),
                      (o.select([e[0] for e in cache], h - 1), o.select([e[1] for e in cache], h)))
        return ite(o, requested == UNDEF, (UNDEF, UNDEF),
                   ite(o, o.And(clen > 0, last[0] == requested), (requested, leo), general))

    def end_offset_for_2_1(self, cache, clen, leo, requested):
        """log.end_offset_for_2_1: as 2.0, but below the first epoch (requested, first start)."""
        o = self.o
        last = o.select(cache, clen - 1)
        h = self._higher(cache, clen, requested)
        starts = [e[1] for e in cache]
        general = ite(o, h == clen, (UNDEF, UNDEF),
                      ite(o, h == 0, (requested, cache[0][1]),
                          (o.select([e[0] for e in cache], h - 1), o.select(starts, h))))
        return ite(o, o.Or(requested == UNDEF, clen == 0), (UNDEF, UNDEF),
                   ite(o, last[0] == requested, (requested, leo), general))

    def follower_truncation(self, rep: SRep, epoch, end):
        """modes.follower_truncation: (offset, done)."""
        o = self.o
        own_epoch, own_end = self.end_offset_for(rep.epoch_cache, rep.clen, rep.leo, epoch)
        no_answer = o.If(rep.truncating == TRUNCATING_AGAIN, rep.leo, rep.hw)
        return ite(o, end == UNDEF, (no_answer, True),
                   ite(o, epoch == UNDEF, (tmin(o, end, rep.leo), True),
                       ite(o, own_end == UNDEF, (tmin(o, end, rep.leo), True),
                           ite(o, own_epoch != epoch, (tmin(o, own_end, rep.leo), False),
                               (tmin(o, tmin(o, own_end, end), rep.leo), True)))))

    def append(self, rep: SRep, entries, k) -> SRep:
        """Append the first ``k`` of ``entries`` at the LEO (assigning epochs to the cache)."""
        o = self.o
        log = []
        for j, old in enumerate(rep.log):
            v = old
            for i, e in enumerate(entries):
                v = ite(o, o.And(i < k, rep.leo + i == j), e, v)
            log.append(v)
        cache, clen = rep.epoch_cache, rep.clen
        if self.assign_rule is not None:
            for i, e in enumerate(entries):
                cache, clen = ite(o, i < k, self.assign(cache, clen, e[1], rep.leo + i), (cache, clen))
        return rep._replace(log=tuple(log), leo=rep.leo + k, epoch_cache=cache, clen=clen)

    # ------------------------------------------------------------ actions (spec/actions.py)
    def advance_hw(self, s: SState, l: int) -> SState:
        """actions.advance_hw (with strict min ISR, KAFKA-15583: not below min.insync.replicas)."""
        o, rep, cfg = self.o, s.reps[l], self.cfg
        low = rep.leo
        for f in range(self.n):
            if f != l:
                low = o.If(rep.isr[f], tmin(o, low, rep.remote_leo[f]), low)
        h = s.hist
        exposed = tuple(o.If(o.And(j >= h.xlen, j < low), rep.log[j][0], x) for j, x in enumerate(h.exposed))
        xepoch = tuple(o.If(o.And(j >= h.xlen, j < low), rep.leader_epoch, x) for j, x in enumerate(h.exposed_epoch))
        xlen = o.If(low > h.xlen, low, h.xlen)
        acked = h.acked
        if cfg.acks == "all":
            enough = o.Sum(rep.isr) >= cfg.min_isr
            new = []
            for rec, old in enumerate(acked):
                at = UNDEF
                for j in reversed(range(self.L)):
                    e = rep.log[j]
                    at = o.If(o.And(rep.hw <= j, j < low, e[0] == rec, e[1] == rep.leader_epoch), j, at)
                new.append(o.If(o.And(enough, old == UNDEF, at != UNDEF), at, old))
            acked = tuple(new)
        moved = self._set(s, l, rep._replace(hw=low))._replace(hist=h._replace(exposed=exposed, xlen=xlen,
                                                                               acked=acked, exposed_epoch=xepoch))
        stays = low <= rep.hw
        if self.mode.strict_min_isr:      # actions.advance_hw, KAFKA-15583
            stays = o.Or(o.Sum(rep.isr) < cfg.min_isr, stays)
        return ite(o, stays, s, moved)

    def in_office(self, s: SState, r: int):
        rep = s.reps[r]
        return self.o.And(rep.alive, rep.role == LEADER, s.ctl.leader == r, rep.leader_epoch == s.ctl.epoch)

    def accepts(self, leader: SRep, request_epoch):
        o = self.o
        ok = o.And(leader.alive, leader.role == LEADER)
        return o.And(ok, request_epoch == leader.leader_epoch) if self.mode.fenced else ok

    def leader_alive(self, s: SState, rep: SRep):
        return self.o.select([x.alive for x in s.reps], rep.leader)

    def _with_isr(self, c: SCtl, isr, unclean: Optional[int] = None) -> SCtl:
        """actions._with_isr: the new ISR; with ELR (KIP-966) an ISR of min.insync.replicas clears the
        ELR, a smaller one adds the members it loses (but ``unclean``, a broker back from an unclean
        shutdown), and an ISR that empties records its leader as the last known ELR."""
        if not self.mode.elr:
            return c._replace(isr=isr)
        o, n = self.o, self.n
        small = o.Sum(isr) < self.cfg.min_isr
        elr = tuple(o.And(small, o.Or(c.elr[x], c.isr[x]), o.Not(isr[x]), x != unclean) for x in range(n))
        empties = o.And(o.Not(o.Or(*isr)), o.Or(*c.isr), c.leader != UNDEF)
        known = tuple(o.If(empties, c.leader == x, c.last_known_elr[x]) for x in range(n))
        return c._replace(isr=isr, elr=elr, last_known_elr=known)

    def leader_unfenced(self, s: SState):
        """invariants.leader_unfenced: the controller's leader, if any, is live."""
        o, c = self.o, s.ctl
        return o.Or(c.leader == UNDEF, o.select(list(c.live), c.leader))

    def _lost_memory(self, rep: SRep) -> SRep:
        """actions._lost_memory (the clean-shutdown marker is on disk: it stays)."""
        n = self.n
        return rep._replace(alive=False, role=NONE, leader_epoch=UNDEF, leader=UNDEF, isr=(False,) * n,
                            truncating=FETCHING, remote_leo=(0,) * n, remote_broker_epoch=(0,) * len(rep.remote_broker_epoch))

    def _abandon(self, s: SState, f: int) -> SState:
        """actions._abandon: f's outstanding message goes; a Fetch becomes its stale request
        unless it already has one."""
        o, m, old = self.o, s.msgs[f], s.stale[f]
        keep = o.And(m.kind == FETCH, old.kind == NO_MSG)
        s = self._set_stale(s, f, ite(o, keep, SStale(FETCH, m.peer, m.a, m.b, m.c, m.d), old))
        return self._send(s, f, self._none())

    def _drop_messages_to(self, s: SState, r: int) -> SState:
        """actions._drop_messages_to: messages to or from r are lost; r's own Fetch outlives it."""
        o = self.o
        msgs = tuple(ite(o, o.And(m.kind != NO_MSG, m.peer == r), self._none(), m) for m in s.msgs)
        stale = tuple(ite(o, o.And(m.kind != NO_MSG, m.peer == r), self._no_stale(), m) for m in s.stale)
        return self._abandon(s._replace(msgs=msgs, stale=stale), r)

    def _stop(self, s: SState, r: int, rep: SRep) -> SState:
        return self._drop_messages_to(self._set(s, r, self._lost_memory(rep)), r)

    def _count_crash(self, s: SState) -> SState:
        return s._replace(hist=s.hist._replace(crashes=s.hist.crashes + 1))

    def diverging(self, leader: SRep, m):
        """actions._diverging: (out of range, diverging, epoch, end) for a Fetch ``m`` (with truncation
        on fetch the leader looks its last fetched epoch up with endOffsetFor)."""
        o = self.o
        if not self.tof:
            return False, False, UNDEF, UNDEF
        epoch, end = self.end_offset_for(leader.epoch_cache, leader.clen, leader.leo, m.c)
        lookup = m.c != UNDEF
        out_of_range = o.And(lookup, o.Or(epoch == UNDEF, end == UNDEF))
        diverging = o.And(lookup, o.Not(out_of_range), o.Or(epoch < m.c, end < m.b))
        return out_of_range, diverging, epoch, end

    def _read_for_follower(self, s: SState, l: int, f: int, m):
        """actions._read_for_follower: (state, FetchResponse) for the Fetch ``m`` (SMsg or SStale)."""
        o, leader, mode = self.o, s.reps[l], self.mode
        offset = m.b
        out_of_range, diverging, epoch, end = self.diverging(leader, m)
        refused = o.Or(out_of_range, o.And(offset > leader.leo, o.Not(diverging)))
        no_cd = (UNDEF, UNDEF) if self.tof else ()
        remote = tuple(offset if x == f else v for x, v in enumerate(leader.remote_leo))
        rbe = tuple(m.d if x == f else v for x, v in enumerate(leader.remote_broker_epoch))   # empty without broker epochs
        t = self.advance_hw(self._set(s, l, leader._replace(remote_leo=remote, remote_broker_epoch=rbe)), l)
        if not mode.diverging_fetch_updates_follower:
            # actions._read_for_follower, KAFKA-13141's fix: a diverging Fetch leaves f's fetch state alone
            t = ite(o, diverging, s, t)
        hw = leader.hw if self.cfg.response_hw == "before" else t.reps[l].hw
        recs = tuple(ite(o, o.And(j >= offset, o.Not(diverging)), e, ZERO) for j, e in enumerate(leader.log))
        cd = (o.If(diverging, epoch, UNDEF), o.If(diverging, end, UNDEF)) if self.tof else ()
        answer = SMsg(FETCH_RESPONSE, l, hw, leader.leo, o.If(diverging, leader.leo, offset), recs, *cd)
        out_of_range_answer = SMsg(FETCH_RESPONSE, l, leader.hw, leader.leo, leader.leo, (ZERO,) * self.L, *no_cd)
        return ite(o, refused, s, t), ite(o, refused, out_of_range_answer, answer)

    def produce(self, s, r):
        o, rep, cfg = self.o, s.reps[r], self.cfg
        h = s.hist
        guard = o.And(rep.alive, rep.role == LEADER, h.produced < cfg.records)
        if cfg.acks == "all":
            guard = o.And(guard, o.Sum(rep.isr) >= cfg.min_isr)
        new = self.append(rep, ((h.produced, rep.leader_epoch),), 1)
        acked = h.acked if cfg.acks == "all" else \
            tuple(o.If(h.produced == j, rep.leo, a) for j, a in enumerate(h.acked))
        s = self._set(s, r, new)._replace(hist=h._replace(produced=h.produced + 1, acked=acked))
        return guard, self.advance_hw(s, r)

    def send_fetch(self, s, f):
        o, rep = self.o, s.reps[f]
        guard = o.And(rep.alive, rep.role == FOLLOWER, rep.truncating == FETCHING, s.msgs[f].kind == NO_MSG,
                      self.leader_alive(s, rep))
        # truncation on fetch: the last fetched epoch and (KIP-903) the broker epoch (actions.send_fetch)
        cd = () if not self.tof else \
            (self.latest_epoch(rep), s.ctl.broker_epochs[f] if self.mode.broker_epochs else 0)
        return guard, self._send(s, f, SMsg(FETCH, rep.leader, rep.leader_epoch, rep.leo, 0, (ZERO,) * self.L, *cd))

    def leader_handle_fetch(self, s, l, f):
        o, m = self.o, s.msgs[f]
        guard = o.And(m.kind == FETCH, m.peer == l, self.accepts(s.reps[l], m.a))
        t, response = self._read_for_follower(s, l, f, m)
        return guard, self._send(t, f, response)

    def leader_handle_stale_fetch(self, s, l, f):
        o, m = self.o, s.stale[f]
        guard = o.And(m.kind != NO_MSG, m.peer == l)
        t = self._set_stale(s, f, self._no_stale())
        read, _ = self._read_for_follower(t, l, f, m)
        return guard, ite(o, self.accepts(t.reps[l], m.a), read, t)

    def follower_handle_fetch(self, s, f):
        o, m, rep = self.o, s.msgs[f], s.reps[f]
        guard = m.kind == FETCH_RESPONSE
        new = ite(o, m.b < rep.leo, self.truncate(rep, m.b, self.mode.trim_cache_at_leo), rep)
        entries = [o.select(m.recs, m.start + i) for i in range(self.L)]
        new = self.append(new, entries, m.b - m.start)
        new = new._replace(hw=tmin(o, new.leo, m.a))
        t = self._send(self._set(s, f, new), f, self._none())
        if self.tof:                      # actions.follower_handle_fetch: a diverging answer truncates
            t = ite(o, m.c != UNDEF, self._truncate_on_fetch_response(s, f), t)
        return guard, t

    def _truncate_on_fetch_response(self, s: SState, f: int) -> SState:
        """actions._truncate_on_fetch_response: before KAFKA-14704's fix the response's HW is applied
        first (a step of its own, the response kept with HW UNDEFINED); then the follower truncates
        where follower_truncation says (as after an intermediate step: no answer means its LEO)."""
        o, m, rep = self.o, s.msgs[f], s.reps[f]
        offset, _ = self.follower_truncation(rep._replace(truncating=TRUNCATING_AGAIN), m.c, m.d)
        t = self._send(self._set(s, f, self.truncate(rep, offset, self.mode.trim_cache_at_leo)), f, self._none())
        if not self.mode.hw_before_truncation:
            return t
        hw_first = self._send(self._set(s, f, rep._replace(hw=tmin(o, rep.leo, m.a))), f, m._replace(a=UNDEF))
        return ite(o, m.a != UNDEF, hw_first, t)

    def reject_request(self, s, l, f):
        o, m = self.o, s.msgs[f]
        guard = o.And(o.Or(m.kind == FETCH, m.kind == EPOCH_REQUEST), m.peer == l,
                      o.Not(self.accepts(s.reps[l], m.a)))
        return guard, self._send(s, f, self._none())

    def send_epoch_request(self, s, f):
        o, rep = self.o, s.reps[f]
        guard = o.And(rep.alive, rep.role == FOLLOWER, rep.truncating != FETCHING, s.msgs[f].kind == NO_MSG,
                      self.leader_alive(s, rep))
        msg = SMsg(EPOCH_REQUEST, rep.leader, rep.leader_epoch, self.latest_epoch(rep), 0, (ZERO,) * self.L)
        return guard, self._send(s, f, msg)

    def leader_handle_epoch_request(self, s, l, f):
        o, m, leader = self.o, s.msgs[f], s.reps[l]
        guard = o.And(m.kind == EPOCH_REQUEST, m.peer == l, self.accepts(leader, m.a))
        epoch, end = self.end_offset_for(leader.epoch_cache, leader.clen, leader.leo, m.b)
        return guard, self._send(s, f, SMsg(EPOCH_RESPONSE, l, epoch, end, 0, (ZERO,) * self.L))

    def follower_handle_epoch_response(self, s, f):
        o, m, rep = self.o, s.msgs[f], s.reps[f]
        offset, done = self.follower_truncation(rep, m.a, m.b)
        rep = self.truncate(rep, offset, self.mode.trim_cache_at_leo)._replace(
            truncating=o.If(done, FETCHING, TRUNCATING_AGAIN))
        return m.kind == EPOCH_RESPONSE, self._send(self._set(s, f, rep), f, self._none())

    # faults
    def crash(self, s, r):
        o, rep = self.o, s.reps[r]
        guard = o.And(rep.alive, s.hist.crashes < self.cfg.crashes)
        return guard, self._count_crash(self._stop(s, r, rep))

    def power_fail(self, s, r):
        o, rep, cfg = self.o, s.reps[r], self.cfg
        used = s.hist.power_failures
        guard = o.And(rep.alive, used < cfg.power_failures)
        t = self._stop(s, r, self.truncate(rep, rep.flushed))
        forgotten = t._replace(reps=tuple(x._replace(flushed=0) for x in t.reps))
        t = ite(o, used + 1 == cfg.power_failures, forgotten, t)
        return guard, t._replace(hist=t.hist._replace(power_failures=used + 1))

    def flush(self, s, r):
        o, rep = self.o, s.reps[r]
        guard = o.And(rep.alive, s.hist.power_failures < self.cfg.power_failures, rep.flushed < rep.leo)
        return guard, self._set(s, r, rep._replace(flushed=rep.leo))

    def _registered(self, c: SCtl, r: int, rep: SRep) -> SCtl:
        """actions._registered: r is live again; with KIP-903 its broker epoch moves on; with ELR a
        broker back without a clean-shutdown marker leaves the ISR and the ELR (KAFKA-15586)."""
        o = self.o
        c = c._replace(live=self._bit(c.live, r, True))
        if self.mode.broker_epochs:
            c = c._replace(broker_epochs=tuple(e + 1 if x == r else e for x, e in enumerate(c.broker_epochs)))
        if self.mode.elr:
            unclean = o.And(o.Not(rep.clean_shutdown), o.Or(c.isr[r], c.elr[r]))
            left = self._with_isr(c._replace(elr=self._bit(c.elr, r, False)), self._bit(c.isr, r, False), unclean=r)
            c = ite(o, unclean, left, c)
        return c

    def restart(self, s, r):
        o, rep, c = self.o, s.reps[r], s.ctl
        guard = o.Not(rep.alive)
        if self.mode.restart_after_detection:
            guard = o.And(guard, o.Not(c.live[r]))
        # actions.restart: loading the log trims the cache at the LEO, the marker is consumed, the
        # controller registers r (actions._registered)
        up = self.truncate(rep, rep.leo, trim_cache_at_leo=True)
        t = self._set(s, r, up._replace(alive=True, clean_shutdown=False if self.mode.elr else rep.clean_shutdown))
        return guard, self._with_ctl(t, self._registered(c, r, rep))

    # controller
    def _broker_gone(self, s: SState, r: int):
        """actions._broker_gone: (the epoch bound holds, next state). A leader leaves the
        partition offline (and the ISR, unless the last member before ELR) at the same epoch; an ISR
        member that is not the last (before ELR) leaves it, with a new epoch unless
        ``isr_removal_bumps_epoch`` is off (KRaft 3.6+)."""
        o, c, mode = self.o, s.ctl, self.mode
        leads = c.leader == r
        if mode.elr:            # actions._broker_gone, keeps_last false: the ISR may empty (KIP-966)
            removing = o.And(o.Not(leads), c.isr[r])
            isr = self._bit(c.isr, r, False)
        else:
            removing = o.And(o.Not(leads), c.isr[r], o.Sum(c.isr) > 1)
            isr = self._bit(c.isr, r, o.And(c.isr[r], o.Not(o.Sum(c.isr) > 1)))
        bump = removing if mode.isr_removal_bumps_epoch else False
        new = ite(o, o.Or(leads, removing), self._with_isr(c, isr), c)
        new = new._replace(leader=o.If(leads, UNDEF, c.leader), epoch=o.If(bump, c.epoch + 1, c.epoch),
                           live=self._bit(c.live, r, False))
        return o.Not(o.And(bump, c.epoch + 1 > self.cfg.max_epoch)), self._with_ctl(s, new)

    def controller_handle_failure(self, s, r):
        o = self.o
        ok, t = self._broker_gone(s, r)
        return o.And(o.Not(s.reps[r].alive), s.ctl.live[r], ok), t

    def session_expire(self, s, r):
        o = self.o
        ok, t = self._broker_gone(s, r)
        return o.And(s.reps[r].alive, s.ctl.live[r], s.hist.crashes < self.cfg.crashes, ok), self._count_crash(t)

    def register(self, s, r):
        o, c = self.o, s.ctl
        return o.And(s.reps[r].alive, o.Not(c.live[r])), self._with_ctl(s, c._replace(live=self._bit(c.live, r, True)))

    def elect_offline(self, s, r):
        o, c, cfg = self.o, s.ctl, self.cfg
        if self.mode.elr:                 # actions.elect_offline -> actions._elect_with_elr
            return self._elect_with_elr(s, r)
        live_isr = tuple(o.And(b, up) for b, up in zip(c.isr, c.live))
        eligible = o.Or(live_isr[r], o.And(cfg.unclean_election, o.Not(o.Or(*live_isr))))
        guard = o.And(c.leader == UNDEF, c.live[r], c.epoch < cfg.max_epoch, eligible)
        isr = ite(o, live_isr[r], live_isr, tuple(x == r for x in range(self.n)))
        return guard, self._with_ctl(s, c._replace(leader=r, epoch=c.epoch + 1, isr=isr))

    def _elect_with_elr(self, s, r):
        """actions._elect_with_elr: a live ISR member; else (empty ISR) a live ELR member, which
        becomes the ISR; else (ISR and ELR empty) the last known leader, if live or
        ``elect_fenced_last_leader``; else an unclean election when enabled."""
        o, c, cfg, n = self.o, s.ctl, self.cfg, self.n
        has_isr, has_elr = o.Or(*c.isr), o.Or(*c.elr)
        eligible = tuple(o.And(o.If(has_isr, c.isr[x], c.elr[x]), c.live[x]) for x in range(n))
        any_eligible = o.Or(*eligible)
        last_known = o.And(o.Not(has_isr), o.Not(has_elr), o.Sum(c.last_known_elr) == 1,
                           o.Or(o.Or(*[o.And(k, up) for k, up in zip(c.last_known_elr, c.live)]),
                                self.mode.elect_fenced_last_leader))
        alone = tuple(x == r for x in range(n))
        is_last_known = o.And(*[k if x == r else o.Not(k) for x, k in enumerate(c.last_known_elr)])
        chosen = o.Or(o.And(any_eligible, eligible[r]),
                      o.And(o.Not(any_eligible), last_known, is_last_known),
                      o.And(o.Not(any_eligible), o.Not(last_known), cfg.unclean_election, c.live[r]))
        guard = o.And(c.leader == UNDEF, c.epoch < cfg.max_epoch, chosen)
        from_isr = ite(o, has_isr, self._with_isr(c, tuple(o.And(b, up) for b, up in zip(c.isr, c.live))),
                       c._replace(isr=alone, elr=self._bit(c.elr, r, False)))
        new = ite(o, any_eligible, from_isr, c._replace(isr=alone, elr=(False,) * n))
        return guard, self._with_ctl(s, new._replace(leader=r, epoch=c.epoch + 1, last_known_elr=(False,) * n))

    def elect_preferred(self, s, r):
        o, c = self.o, s.ctl
        if r != PREFERRED:
            return False, s
        guard = o.And(c.leader != r, c.live[r], c.isr[r], c.epoch < self.cfg.max_epoch)
        return guard, self._with_ctl(s, c._replace(leader=r, epoch=c.epoch + 1))

    def _shutdown_cleanly(self, s: SState, r: int):
        """actions._shutdown_cleanly: (the epoch bound holds, next state)."""
        o, rep, cfg = self.o, s.reps[r], self.cfg
        if cfg.power_failures:       # flushed points matter only while a power failure is left
            rep = ite(o, s.hist.power_failures < cfg.power_failures, rep._replace(flushed=rep.leo), rep)
        if self.mode.elr:            # actions._shutdown_cleanly: the clean-shutdown marker (KAFKA-15586)
            rep = rep._replace(clean_shutdown=True)
        ok, t = self._broker_gone(self._stop(s, r, rep), r)
        return ok, self._count_crash(t)

    def controlled_shutdown(self, s, r):
        o, c, rep = self.o, s.ctl, s.reps[r]
        peer = o.Or(*[o.And(c.isr[x], c.live[x]) for x in range(self.n) if x != r])
        ok, t = self._shutdown_cleanly(s, r)
        guard = o.And(rep.alive, c.live[r], s.hist.crashes < self.cfg.crashes, o.Not(o.And(c.leader == r, peer)), ok)
        return guard, t

    def controlled_shutdown_leader(self, s, l, r):
        o, c, rep, cfg = self.o, s.ctl, s.reps[l], self.cfg
        guard = o.And(c.leader == l, rep.alive, c.live[l], c.live[r], c.isr[r], s.hist.crashes < cfg.crashes,
                      c.epoch < cfg.max_epoch)
        t = self._with_ctl(s, self._with_isr(c, self._bit(c.isr, l, False))._replace(leader=r, epoch=c.epoch + 1))
        follows, t = self.become_follower(t, l)      # enabled wherever the spec takes this step
        ok, t = self._shutdown_cleanly(t, l)
        return o.And(guard, follows, ok), t

    def become_leader(self, s, r):
        o, c, rep = self.o, s.ctl, s.reps[r]
        # actions.become_leader, isr_update: KRaft 3.6+ applies an ISR change at the same epoch (KAFKA-15021)
        isr_update = o.And(rep.role == LEADER, c.epoch == rep.leader_epoch, o.Not(equal(o, rep.isr, c.isr)))
        guard = o.And(rep.alive, c.leader == r, o.Or(c.epoch > rep.leader_epoch, isr_update))
        cache, clen = rep.epoch_cache, rep.clen
        if self.mode.cache_on_become_leader:
            cache, clen = self.assign(cache, clen, c.epoch, rep.leo)
        remote = ite(o, rep.role == LEADER, rep.remote_leo, (UNDEF,) * self.n)
        rbe = ite(o, rep.role == LEADER, rep.remote_broker_epoch, (UNDEF,) * len(rep.remote_broker_epoch))
        new = rep._replace(role=LEADER, leader_epoch=c.epoch, leader=r, isr=c.isr, truncating=FETCHING, remote_leo=remote,
                           remote_broker_epoch=rbe, epoch_cache=cache, clen=clen)
        return guard, self.advance_hw(self._abandon(self._set(s, r, new), r), r)

    def become_follower(self, s, r):
        o, c, rep = self.o, s.ctl, s.reps[r]
        guard = o.And(rep.alive, c.leader != UNDEF, c.leader != r, c.epoch > rep.leader_epoch)
        new = rep._replace(role=FOLLOWER, leader_epoch=c.epoch, leader=c.leader, isr=(False,) * self.n,
                           remote_leo=(0,) * self.n, remote_broker_epoch=(0,) * len(rep.remote_broker_epoch))
        if not self.mode.epochs:
            new = self.truncate(new, new.hw)._replace(truncating=FETCHING)
        elif self.tof:         # actions.become_follower, 2.8+: fetching from the LEO at once (initialFetchOffset)
            new = new._replace(truncating=FETCHING)
        else:
            new = new._replace(truncating=o.If(new.clen > 0, TRUNCATING, FETCHING))
        follow = self._abandon(self._set(s, r, new), r)
        if self.mode.follow_on_new_epoch:
            return guard, follow
        unchanged = self._set(s, r, rep._replace(leader_epoch=c.epoch))     # same leader: nothing to do
        return guard, ite(o, rep.leader == c.leader, unchanged, follow)

    def shrink_isr(self, s, l, f):
        o, rep = self.o, s.reps[l]
        guard = o.And(self.in_office(s, l), equal(o, rep.isr, s.ctl.isr), rep.isr[f], rep.remote_leo[f] < rep.leo)
        isr = self._bit(rep.isr, f, False)
        t = self._set(s, l, rep._replace(isr=isr))._replace(ctl=self._with_isr(s.ctl, isr))
        return guard, self.advance_hw(t, l)

    def expand_isr(self, s, l, f):
        o, rep = self.o, s.reps[l]
        remote = rep.remote_leo[f]
        guard = o.And(self.in_office(s, l), equal(o, rep.isr, s.ctl.isr), o.Not(rep.isr[f]),
                      remote != UNDEF, remote >= rep.hw)
        if self.mode.expand_waits_for_epoch_start:
            guard = o.And(guard, remote >= self.epoch_start(rep, rep.leader_epoch))
        if self.mode.isr_only_live:       # actions.expand_isr, KIP-841: the controller refuses a fenced broker
            guard = o.And(guard, s.ctl.live[f])
        if self.mode.broker_epochs:       # KIP-903: and a broker epoch other than the registered one
            guard = o.And(guard, rep.remote_broker_epoch[f] == s.ctl.broker_epochs[f])
        isr = self._bit(rep.isr, f, True)
        return guard, self._set(s, l, rep._replace(isr=isr))._replace(ctl=self._with_isr(s.ctl, isr))

    def action(self, i: int, s: SState):
        """(guard, next state) of action instance ``i`` (a label of ``instances``)."""
        label = self.instances[i]
        fn = self.overrides.get(label[0]) or getattr(self, label[0])
        guard, t = fn(s, *label[1:])
        return guard, (self._dated(s, t) if self.tracks_history else t)

    def _dated(self, s: SState, t: SState) -> SState:
        """The history variables as spec/actions.py ``dated`` keeps them: a step that hands out a
        new leader epoch records the leader the controller named with it; a Fetch that becomes
        stale records the entry below its offset in its sender's log."""
        o, h = self.o, t.hist
        if not _same(s.ctl.epoch, t.ctl.epoch):
            h = h._replace(epoch_leader=tuple(o.If(o.And(t.ctl.epoch == e, s.ctl.epoch != e), t.ctl.leader, x)
                                         for e, x in enumerate(h.epoch_leader)))
        if not _same(s.stale, t.stale):
            sentry = []
            for f, (old, new) in enumerate(zip(s.stale, t.stale)):
                if _same(old, new):
                    sentry.append(h.stale_entry[f])
                    continue
                log = s.reps[f].log
                below = tuple(o.If(new.b > 0, o.select([e[k] for e in log], new.b - 1), UNDEF) for k in (0, 1))
                sentry.append(tuple(o.If(new.kind == NO_MSG, UNDEF, o.If(old.kind != NO_MSG, h.stale_entry[f][k], below[k]))
                                    for k in (0, 1)))
            h = h._replace(stale_entry=tuple(sentry))
        return t._replace(hist=h)

    # ------------------------------------------------------------ evaluation and invariants
    def successors(self, state):
        """The encoding's successors of a spec state, evaluated (``o`` must be CONCRETE)."""
        v = self.of_state(state)
        for i, label in enumerate(self.instances):
            guard, nxt = self.action(i, v)
            if guard and self.wf(nxt):
                yield label, self.to_state(nxt)

    def invariant(self, name: str, s: SState):
        return INVARIANT_ENCODINGS[name](self, s)

    def bounds_ok(self, s: SState):
        """EncodingBounds: no enabled action leaves the layout (``s`` well formed)."""
        o = self.o
        out = []
        for i in range(len(self.instances)):
            guard, nxt = self.action(i, s)
            out.append(o.Or(o.Not(guard), self.wf_step(s, nxt)))
        return o.And(*out)


# name, arity: the actions of spec/actions.py, in its order
ACTION_TABLE = (
    ("produce", 1), ("send_fetch", 1), ("leader_handle_fetch", 2), ("leader_handle_stale_fetch", 2),
    ("follower_handle_fetch", 1), ("send_epoch_request", 1), ("leader_handle_epoch_request", 2),
    ("follower_handle_epoch_response", 1), ("reject_request", 2), ("crash", 1), ("power_fail", 1), ("flush", 1),
    ("restart", 1), ("controlled_shutdown", 1), ("controlled_shutdown_leader", 2), ("controller_handle_failure", 1),
    ("session_expire", 1), ("register", 1), ("elect_offline", 1), ("elect_preferred", 1), ("become_leader", 1),
    ("become_follower", 1), ("shrink_isr", 2), ("expand_isr", 2),
)


# ---------------------------------------------------------------- invariants (spec/invariants.py)

def no_committed_data_loss(enc: Encoding, s: SState):
    o, c = enc.o, s.ctl
    out = []
    for l, rep in enumerate(s.reps):
        in_office = o.And(c.leader == l, rep.alive, rep.role == LEADER, rep.leader_epoch == c.epoch)
        kept = [o.Or(off == UNDEF, o.And(off < rep.leo, o.select([e[0] for e in rep.log], off) == rec))
                for rec, off in enumerate(s.hist.acked)]
        out.append(o.Or(o.Not(in_office), o.And(*kept)))
    return o.And(*out)


def no_log_divergence(enc: Encoding, s: SState):
    o, reps = enc.o, s.reps
    out = []
    for a in range(len(reps)):
        for b in range(a + 1, len(reps)):
            below = tmin(o, reps[a].hw, reps[b].hw)
            ea, eb = tmin(o, below, reps[a].leo), tmin(o, below, reps[b].leo)
            out.append(o.And(ea == eb, *[o.Or(j >= ea, equal(o, x, y))
                                         for j, (x, y) in enumerate(zip(reps[a].log, reps[b].log))]))
    return o.And(*out)


def consumer_consistency(enc: Encoding, s: SState):
    o, h = enc.o, s.hist
    out = []
    for rep in s.reps:
        serving = o.And(rep.alive, rep.role == LEADER)
        upto = tmin(o, rep.hw, h.xlen)
        same = [o.Or(j >= upto, rep.log[j][0] == h.exposed[j]) for j in range(enc.L)]
        out.append(o.Or(o.Not(serving), o.And(*same)))
    return o.And(*out)


def hw_not_above_leo(enc: Encoding, s: SState):
    return enc.o.And(*[rep.hw <= rep.leo for rep in s.reps])


INVARIANT_ENCODINGS: Dict[str, Callable] = {
    "NoCommittedDataLoss": no_committed_data_loss,
    "NoLogDivergence": no_log_divergence,
    "ConsumerConsistency": consumer_consistency,
    "HwNotAboveLeo": hw_not_above_leo,
    "EncodingBounds": lambda enc, s: enc.bounds_ok(s),
    "LeaderUnfenced": lambda enc, s: enc.leader_unfenced(s),
}


# ---------------------------------------------------------------- auxiliary invariants (spec/auxiliary.py)

def leo_within_produced(enc: Encoding, s: SState):
    o, p = enc.o, s.hist.produced
    return o.And(*[rep.leo <= p for rep in s.reps],
                 *[o.Or(m.kind != FETCH_RESPONSE, m.b <= p) for m in s.msgs])


def fetch_matches_log(enc: Encoding, s: SState):
    o = enc.o
    out = []
    for f, m in enumerate(s.msgs):
        leo = s.reps[f].leo
        out.append(o.Or(m.kind != FETCH, m.b == leo))
        diverging = m.c != UNDEF if enc.mode.truncate_on_fetch else False
        out.append(o.Or(m.kind != FETCH_RESPONSE, m.start == leo, o.And(m.start == m.b, o.Or(m.b < leo, diverging))))
    return o.And(*out)


def leader_epoch_bounded(enc: Encoding, s: SState):
    o, e = enc.o, s.ctl.epoch
    return o.And(*[o.And(rep.leader_epoch <= e, *[o.Or(j >= rep.leo, x[1] <= e) for j, x in enumerate(rep.log)])
                   for rep in s.reps])


def remote_leo_bounded(enc: Encoding, s: SState):
    o = enc.o
    return o.And(*[o.Or(rep.role != LEADER, x <= rep.leo) for rep in s.reps for x in rep.remote_leo])


def down_means_no_role(enc: Encoding, s: SState):
    o = enc.o
    return o.And(*[o.And(o.Or(rep.alive, o.And(rep.role == NONE, s.msgs[r].kind == NO_MSG)),
                         o.Or(rep.role != LEADER, s.msgs[r].kind == NO_MSG))
                   for r, rep in enumerate(s.reps)])


INVARIANT_ENCODINGS.update({
    "DownMeansNoRole": down_means_no_role,
    "LeoWithinProduced": leo_within_produced,
    "FetchMatchesLog": fetch_matches_log,
    "LeaderEpochBounded": leader_epoch_bounded,
    "RemoteLeoBounded": remote_leo_bounded,
})


# ---------------------------------------------------------------- candidate lemmas (spec/auxiliary.py CANDIDATES)

def epoch_answer_cuts_sender_log(enc: Encoding, s: SState):
    o = enc.o
    out = []
    for f, m in enumerate(s.msgs):
        rep = s.reps[f]
        for l, sender in enumerate(s.reps):
            if l == f:
                continue
            # an OffsetsForLeaderEpoch answer, or a FetchResponse's diverging epoch (truncation on fetch)
            on_fetch = enc.mode.truncate_on_fetch
            kind, epoch, end = (FETCH_RESPONSE, m.c, m.d) if on_fetch else (EPOCH_RESPONSE, m.a, m.b)
            applies = o.And(m.kind == kind, m.peer == l, epoch != UNDEF, end != UNDEF, sender.alive,
                            sender.role == LEADER, sender.leader_epoch == rep.leader_epoch)
            body = [end <= sender.leo]
            for j, e in enumerate(sender.log):
                body.append(o.Or(o.Not(o.And(j < end, j < sender.leo)), e[1] <= epoch))
                body.append(o.Or(o.Not(o.And(j == end, j < sender.leo)), e[1] > epoch, e[1] == sender.leader_epoch))
            out.append(o.Or(o.Not(applies), o.And(*body)))
    return o.And(*out)


def follower_behind_leader_epoch(enc: Encoding, s: SState):
    o = enc.o
    out = []
    for r, rep in enumerate(s.reps):
        for l, leader in enumerate(s.reps):
            if l == r:
                continue
            applies = o.And(rep.alive, rep.role == FOLLOWER, rep.leader == l, leader.alive, leader.role == LEADER,
                            leader.leader_epoch == rep.leader_epoch)
            body = [o.Or(o.Not(j < rep.leo), e[1] <= leader.leader_epoch) for j, e in enumerate(rep.log)]
            body += [o.Or(o.Not(j < rep.clen), e[0] <= leader.leader_epoch) for j, e in enumerate(rep.epoch_cache)]
            out.append(o.Or(o.Not(applies), o.And(*body)))
    return o.And(*out)


def broker_epochs_within_bounces(enc: Encoding, s: SState):
    o, c, h = enc.o, s.ctl, s.hist
    if not c.broker_epochs:
        return True
    waiting = o.Sum([o.Not(o.And(rep.alive, live)) for rep, live in zip(s.reps, c.live)])
    return waiting + sum(c.broker_epochs[1:], c.broker_epochs[0]) <= h.crashes + h.power_failures


INVARIANT_ENCODINGS.update({
    "BrokerEpochsWithinBounces": broker_epochs_within_bounces,
    "EpochAnswerCutsSenderLog": epoch_answer_cuts_sender_log,
    "FollowerBehindLeaderEpoch": follower_behind_leader_epoch,
})
