"""The spec as z3 terms: state, initial predicate, transition relation, invariants.

This is a second, hand-written encoding of spec/actions.py (guard then effect per action). Each
action's encoding sits beside the action itself in spec/actions.py, as ``<action>_terms(enc, s,
*replicas) -> (guard, next state)`` (``TERMS``); this module holds what they share: the term
algebra, the state layout's constraints, the small state updates, the log and epoch-cache
operations, the twins of the helpers most actions share (``advance_hw``, ``with_isr``,
``accepts``, ``abandon``, ``stop``, ...), the history variables (``_dated``) and the invariants. It is
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
- a leader's view of each follower: its LEO (``remote_leo``), the leader's LEO at its last Fetch
  (``remote_fetch_leo``) and whether it caught up outside the ISR view (``remote_caught_up``), 0 and
  false on other roles; with broker epochs (KIP-903) its broker epoch
  (``remote_broker_epoch``, 0 on other roles); with ELR (KIP-966) the clean-shutdown marker
  (``clean_shutdown``); fields a mode lacks are empty tuples or constants;
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

from typing import Callable, Dict, List, Optional, Tuple

import z3

from hwcheck.spec import ConfigError
from hwcheck.spec.actions import ACTIONS, TERMS, _caught_up_waiting_terms
from hwcheck.spec.log import assign_0_11, assign_2_1, end_offset_for_0_11, end_offset_for_2_0, end_offset_for_2_1
from hwcheck.spec.terms import (EPOCH_REQUEST, EPOCH_RESPONSE, FETCH, FETCH_RESPONSE, FETCHING, FOLLOWER, LEADER,
                                NO_MESSAGE, NONE, TRUNCATING_AGAIN, UNDEFINED, ZERO, SCtl, SHist, SMsg, SRep, SState,
                                SStale, equal, in_office_terms, ite, latest_cached_epoch, leaves, rebuild, tmin)


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


# the release functions of spec/log.py this encoding has a copy of (Encoding.assign_*,
# Encoding.end_offset_for_*), by identity
ASSIGN = ((assign_0_11, "0_11"), (assign_2_1, "2_1"))
END_OFFSET_FOR = ((end_offset_for_0_11, "0_11"), (end_offset_for_2_0, "2_0"), (end_offset_for_2_1, "2_1"))


def _release(fn, known) -> Optional[str]:
    return next((tag for f, tag in known if fn is f), None)


def check_covered(model) -> None:
    """Refuse (one-line ConfigError) a run this encoding cannot express: a mode that replaces
    action functions or names an assign / end_offset_for of its own, or a spec with an action that
    has no twin (spec/actions.py ``TERMS``)."""
    mode = model.rules.mode
    why = None
    knobs = [knob for knob in ("disk_losses", "follower_reads") if getattr(model.cfg, knob)]
    if knobs:
        raise ConfigError(f"the z3 engine does not encode {', '.join(knobs)} (use the bfs engine)")
    unknown = [name for name, _, _ in model._actions if name not in TERMS]
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
        # KAFKA-18991 (accept_old_epoch_response): a stale slot may hold a FetchResponse that waits for
        # an old leader's fetcher thread (spec/actions.py _leave_fetcher), in an SMsg's slots and more
        self.parks = self.tof and mode.accept_old_epoch_response
        # KRaft with KAFKA-18991: a follower marked when the leader it fetches from is fenced
        # (spec/actions.py _fence_fetchers)
        self.fences = self.parks and mode.fence_stops_fetchers
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
        self.overrides: Dict[str, Callable] = {}   # tests: replace one action's encoding, fn(enc, s, *replicas)

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
                        B(f"{p}r{r}clean") if mode.elr else False, B(f"{p}r{r}fenced") if self.fences else False,
                        tuple(I(f"{p}r{r}fetchleo{x}") for x in range(n)),
                        tuple(B(f"{p}r{r}caught{x}") for x in range(n)), I(f"{p}r{r}since"))
        reps = tuple(rep(r) for r in range(n))
        ctl = SCtl(I(f"{p}c_leader"), I(f"{p}c_epoch"), tuple(B(f"{p}c_isr{x}") for x in range(n)),
                   tuple(B(f"{p}c_live{x}") for x in range(n)), ints(f"{p}c_bepoch", mode.broker_epochs),
                   bools(f"{p}c_elr", mode.elr), bools(f"{p}c_lke", mode.elr))
        msgs = tuple(SMsg(I(f"{p}m{f}kind"), I(f"{p}m{f}peer"), I(f"{p}m{f}a"), I(f"{p}m{f}b"),
                          I(f"{p}m{f}start"), pairs(f"{p}m{f}recs", L),
                          I(f"{p}m{f}c") if tof else 0, I(f"{p}m{f}d") if tof else 0) for f in range(n))
        stale = tuple(SStale(I(f"{p}o{f}kind"), I(f"{p}o{f}peer"), I(f"{p}o{f}a"), I(f"{p}o{f}b"),
                             I(f"{p}o{f}c") if tof else 0, I(f"{p}o{f}d") if tof else 0,
                             *((I(f"{p}o{f}start"), pairs(f"{p}o{f}recs", L), I(f"{p}o{f}e")) if self.parks else ()))
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
                             len(rep.epoch_cache), rep.truncating, remote, rbe, bool(rep.clean_shutdown),
                             bool(rep.leader_fenced), tuple(rep.remote_fetch_leo) if rep.remote_fetch_leo else (0,) * n,
                             bits(rep.remote_caught_up), rep.leading_since))
        msgs = []
        for m in s.inflight:
            if not m:
                msgs.append(SMsg(NO_MESSAGE, 0, 0, 0, 0, (ZERO,) * L))
            elif m.kind == FETCH_RESPONSE:
                start = m.leader_leo - len(m.records)
                cd = (m.diverging_epoch, m.diverging_end_offset) if self.tof else ()
                msgs.append(SMsg(FETCH_RESPONSE, m.leader, m.hw, m.leader_leo, start, slots(m.records, L, start), *cd))
            else:   # Fetch, EpochRequest, EpochResponse: their fields in the slots a b (c d)
                msgs.append(SMsg(m.kind, m.leader, m[2], m[3], 0, (ZERO,) * L, *(m[4:6] if self.tof else ())))
        stale = []
        for m in s.stale:
            if not m:
                stale.append(self.no_stale())
            elif m.kind == FETCH_RESPONSE:       # waiting for an old leader's fetcher thread (KAFKA-18991)
                start = m.leader_leo - len(m.records)
                stale.append(SStale(FETCH_RESPONSE, m.leader, m.hw, m.leader_leo, m.diverging_epoch,
                                    m.diverging_end_offset, start, slots(m.records, L, start), m.fetch_offset))
            else:
                stale.append(SStale(*(m if self.tof else m[:4]), *self._no_response()))
        stale = tuple(stale)
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
                                tuple(r.remote_broker_epoch) if leads else (), int(r.clean_shutdown),
                                int(r.leader_fenced), tuple(r.remote_fetch_leo) if leads else (),
                                mask(r.remote_caught_up), r.leading_since))
        inflight = []
        for m in v.msgs:
            if m.kind == NO_MESSAGE:
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
        stale = tuple(() if m.kind == NO_MESSAGE else
                      FetchResponse(FETCH_RESPONSE, m.leader, tuple(m.recs[m.start:m.b]), m.a, m.b, m.c, m.d, m.e)
                      if m.kind == FETCH_RESPONSE else
                      Fetch(FETCH, m.leader, m.current_leader_epoch, m.fetch_offset, *extra(m)) for m in v.stale)
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
              o.If(none, o.And(r.leader_epoch == UNDEFINED if self.mode.restart_after_detection
                               else rng(r.leader_epoch, UNDEFINED, E),    # actions._stop: before KIP-380
                               r.leader == UNDEFINED, r.truncating == FETCHING, *[o.Not(b) for b in r.isr]),
                   o.And(rng(r.leader_epoch, 0, E), rng(r.leader, 0, n - 1)))]
        if not self.tracks_flushed:
            cs.append(r.flushed == 0)
        if self.fences:        # only a running follower is marked (actions._fence_fetchers)
            cs.append(o.Or(o.Not(r.leader_fenced), o.And(r.alive, r.role == FOLLOWER)))
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
        cs.append(o.If(r.role == LEADER, o.And(rng(r.leading_since, 0, E), r.leading_since <= r.leader_epoch),
                       r.leading_since == UNDEFINED))
        for x in r.remote_leo:
            cs.append(o.If(r.role == LEADER, rng(x, UNDEFINED, L), x == 0))
        for x in r.remote_broker_epoch:
            cs.append(o.If(r.role == LEADER, rng(x, UNDEFINED, self.max_broker_epoch), x == 0))
        for x in r.remote_fetch_leo:
            cs.append(o.If(r.role == LEADER, rng(x, UNDEFINED, L), x == 0))
        for x, b in enumerate(r.remote_caught_up):      # only a leader's followers outside its ISR view
            cs.append(o.Or(o.Not(b), o.And(r.role == LEADER, o.Not(r.isr[x]))))
        return o.And(*cs)

    def _wf_ctl(self, c: SCtl):
        return self.o.And(self._rng(c.leader, UNDEFINED, self.n - 1), self._rng(c.epoch, 0, self.cfg.max_epoch),
                          *[self._rng(x, 0, self.max_broker_epoch) for x in c.broker_epochs])

    def _wf_msg(self, m: SMsg):
        o, n, L, E, rng, zero = self.o, self.n, self.L, self.cfg.max_epoch, self._rng, self._zero
        kinds = 4 if self.truncates else 2
        no_recs = o.And(*[zero(e) for e in m.recs])
        recs_ok = o.And(*[o.If(o.And(m.start <= j, j < m.b), self._entry_ok(e), zero(e)) for j, e in enumerate(m.recs)])
        # truncation on fetch: a FetchResponse whose HW the follower has applied before truncating
        # carries UNDEFINED (hw_before_truncation)
        low_hw = UNDEFINED if self.mode.hw_before_truncation else 0
        no_cd = o.And(m.c == 0, m.d == 0)
        return o.And(
            rng(m.kind, 0, kinds),
            o.If(m.kind == NO_MESSAGE, o.And(m.peer == 0, m.a == 0, m.b == 0, m.start == 0, no_recs),
                 rng(m.peer, 0, n - 1)),
            o.If(m.kind == FETCH, o.And(rng(m.a, 0, E), rng(m.b, 0, L), m.start == 0, no_recs, self._fetch_cd(m)),
                 True),
            o.If(m.kind == FETCH_RESPONSE,
                 o.And(rng(m.a, low_hw, L), rng(m.b, 0, L), rng(m.start, 0, L), m.start <= m.b, recs_ok,
                       o.Or(o.And(m.c == UNDEFINED, m.d == UNDEFINED), o.And(rng(m.c, 0, E), rng(m.d, 0, L)))
                       if self.tof else True),
                 True),
            o.If(o.Or(m.kind == NO_MESSAGE, m.kind == EPOCH_REQUEST, m.kind == EPOCH_RESPONSE), no_cd, True),
            o.If(m.kind == EPOCH_REQUEST, o.And(rng(m.a, 0, E), rng(m.b, UNDEFINED, E), m.start == 0, no_recs), True),
            o.If(m.kind == EPOCH_RESPONSE,
                 o.And(rng(m.a, UNDEFINED, E), rng(m.b, UNDEFINED, L), m.start == 0, no_recs), True))

    def _fetch_cd(self, m):
        """A Fetch's last fetched epoch and broker epoch (0 before KIP-903)."""
        if not self.tof:
            return True
        be = self._rng(m.d, 0, self.max_broker_epoch) if self.mode.broker_epochs else m.d == 0
        return self.o.And(self._rng(m.c, UNDEFINED, self.cfg.max_epoch), be)

    def _wf_stale(self, m: SStale):
        o, rng, L = self.o, self._rng, self.L
        fetch = o.And(m.kind == FETCH, rng(m.peer, 0, self.n - 1), rng(m.a, 0, self.cfg.max_epoch),
                      rng(m.b, 0, L), self._fetch_cd(m))
        if not self.parks:
            return o.If(m.kind == NO_MESSAGE, o.And(m.peer == 0, m.a == 0, m.b == 0, m.c == 0, m.d == 0), fetch)
        no_response = o.And(m.start == 0, m.e == 0, *[self._zero(e) for e in m.recs])
        low_hw = UNDEFINED if self.mode.hw_before_truncation else 0
        recs_ok = o.And(*[o.If(o.And(m.start <= j, j < m.b), self._entry_ok(e), self._zero(e))
                          for j, e in enumerate(m.recs)])
        response = o.And(m.kind == FETCH_RESPONSE, rng(m.peer, 0, self.n - 1), rng(m.a, low_hw, L), rng(m.b, 0, L),
                         rng(m.start, 0, L), m.start <= m.b, recs_ok,
                         o.Or(o.And(m.c == UNDEFINED, m.d == UNDEFINED), o.And(rng(m.c, 0, self.cfg.max_epoch),
                                                                               rng(m.d, 0, L))),
                         rng(m.e, 0, L))
        return o.If(m.kind == NO_MESSAGE, o.And(m.peer == 0, m.a == 0, m.b == 0, m.c == 0, m.d == 0, no_response),
                    o.Or(o.And(fetch, no_response), response))

    def _wf_hist(self, h: SHist):
        o, L, cfg, rng = self.o, self.L, self.cfg, self._rng
        return o.And(rng(h.produced, 0, L), rng(h.xlen, 0, L), rng(h.crashes, 0, cfg.crashes),
                     rng(h.power_failures, 0, cfg.power_failures), *[rng(a, UNDEFINED, L - 1) for a in h.acked],
                     *[o.If(j < h.xlen, rng(x, 0, L - 1), x == 0) for j, x in enumerate(h.exposed)],
                     *[o.If(j < h.xlen, rng(x, 0, cfg.max_epoch), x == 0) for j, x in enumerate(h.exposed_epoch)],
                     *[rng(x, UNDEFINED, self.n - 1) for x in h.epoch_leader],
                     *[o.And(rng(rec, UNDEFINED, L - 1), rng(ep, UNDEFINED, cfg.max_epoch))
                       for rec, ep in h.stale_entry])

    def init(self, s: SState):
        return equal(self.o, s, self.of_state(self.model.init_states()[0]))

    # ------------------------------------------------------------ small state updates
    def set_replica(self, s: SState, r: int, rep: SRep) -> SState:
        return s._replace(reps=s.reps[:r] + (rep,) + s.reps[r + 1:])

    def send(self, s: SState, f: int, msg: SMsg) -> SState:
        return s._replace(msgs=s.msgs[:f] + (msg,) + s.msgs[f + 1:])

    def with_controller(self, s: SState, c: SCtl) -> SState:
        return s._replace(ctl=c)

    def no_message(self) -> SMsg:
        return SMsg(NO_MESSAGE, 0, 0, 0, 0, (ZERO,) * self.L)

    def no_stale(self) -> SStale:
        return SStale(NO_MESSAGE, 0, 0, 0, 0, 0, *self._no_response())

    def _no_response(self) -> tuple:
        """The slots a stale Fetch leaves empty where a waiting FetchResponse may stand (KAFKA-18991)."""
        return (0, (ZERO,) * self.L, 0) if self.parks else ()

    def set_stale(self, s: SState, f: int, m: SStale) -> SState:
        return s._replace(stale=s.stale[:f] + (m,) + s.stale[f + 1:])

    @staticmethod
    def bit(bits, r: int, value):
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
        latest_epoch = o.If(clen > 0, last[0], UNDEFINED)
        latest_start = o.If(clen > 0, last[1], UNDEFINED)
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
        out = UNDEFINED
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
        return ite(o, o.If(clen > 0, last[0], UNDEFINED) == requested, (UNDEFINED, leo),
                   ite(o, o.Or(h == clen, h == 0), (UNDEFINED, UNDEFINED),
                       (UNDEFINED, o.select([e[1] for e in cache], h))))

    def end_offset_for_2_0(self, cache, clen, leo, requested):
        """log.end_offset_for_2_0: (largest epoch <= requested, its end); UNDEFINED below the first."""
        o = self.o
        last = o.select(cache, clen - 1)
        h = self._higher(cache, clen, requested)
        general = ite(o, o.Or(h == clen, h == 0), (UNDEFINED, UNDEFINED),
                      (o.select([e[0] for e in cache], h - 1), o.select([e[1] for e in cache], h)))
        return ite(o, requested == UNDEFINED, (UNDEFINED, UNDEFINED),
                   ite(o, o.And(clen > 0, last[0] == requested), (requested, leo), general))

    def end_offset_for_2_1(self, cache, clen, leo, requested):
        """log.end_offset_for_2_1: as 2.0, but below the first epoch (requested, first start)."""
        o = self.o
        last = o.select(cache, clen - 1)
        h = self._higher(cache, clen, requested)
        starts = [e[1] for e in cache]
        general = ite(o, h == clen, (UNDEFINED, UNDEFINED),
                      ite(o, h == 0, (requested, cache[0][1]),
                          (o.select([e[0] for e in cache], h - 1), o.select(starts, h))))
        return ite(o, o.Or(requested == UNDEFINED, clen == 0), (UNDEFINED, UNDEFINED),
                   ite(o, last[0] == requested, (requested, leo), general))

    def follower_truncation(self, rep: SRep, epoch, end):
        """modes.follower_truncation: (offset, done)."""
        o = self.o
        own_epoch, own_end = self.end_offset_for(rep.epoch_cache, rep.clen, rep.leo, epoch)
        no_answer = o.If(rep.truncating == TRUNCATING_AGAIN, rep.leo, rep.hw)
        return ite(o, end == UNDEFINED, (no_answer, True),
                   ite(o, epoch == UNDEFINED, (tmin(o, end, rep.leo), True),
                       ite(o, own_end == UNDEFINED, (tmin(o, end, rep.leo), True),
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

    # ------------------------------------------------------------ shared by the actions (spec/actions.py *_terms)
    def advance_hw(self, s: SState, l: int) -> SState:
        """actions.advance_hw (with strict min ISR, KAFKA-15583: not below min.insync.replicas)."""
        o, rep, cfg = self.o, s.reps[l], self.cfg
        low = rep.leo
        caught = _caught_up_waiting_terms(self, s, l)
        for f in range(self.n):
            if f != l:
                low = o.If(o.Or(rep.isr[f], caught[f]), tmin(o, low, rep.remote_leo[f]), low)
        h = s.hist
        exposed = tuple(o.If(o.And(j >= h.xlen, j < low), rep.log[j][0], x) for j, x in enumerate(h.exposed))
        xepoch = tuple(o.If(o.And(j >= h.xlen, j < low), rep.leader_epoch, x) for j, x in enumerate(h.exposed_epoch))
        xlen = o.If(low > h.xlen, low, h.xlen)
        acked = h.acked
        if cfg.acks == "all":
            enough = o.Sum(rep.isr) >= cfg.min_isr
            new = []
            for rec, old in enumerate(acked):
                at = UNDEFINED
                for j in reversed(range(self.L)):
                    e = rep.log[j]
                    at = o.If(o.And(rep.hw <= j, j < low, e[0] == rec, e[1] >= rep.leading_since), j, at)
                new.append(o.If(o.And(enough, old == UNDEFINED, at != UNDEFINED), at, old))
            acked = tuple(new)
        moved = self.set_replica(s, l, rep._replace(hw=low))._replace(hist=h._replace(exposed=exposed, xlen=xlen,
                                                                               acked=acked, exposed_epoch=xepoch))
        stays = low <= rep.hw
        if self.mode.strict_min_isr:      # actions.advance_hw, KAFKA-15583
            stays = o.Or(o.Sum(rep.isr) < cfg.min_isr, stays)
        return ite(o, stays, s, moved)

    def accepts(self, leader: SRep, request_epoch):
        o = self.o
        ok = o.And(leader.alive, leader.role == LEADER)
        return o.And(ok, request_epoch == leader.leader_epoch) if self.mode.fenced else ok

    def leader_alive(self, s: SState, rep: SRep):
        return self.o.select([x.alive for x in s.reps], rep.leader)

    def with_isr(self, c: SCtl, isr, unclean: Optional[int] = None) -> SCtl:
        """actions._with_isr: the new ISR; with ELR (KIP-966) an ISR of min.insync.replicas clears the
        ELR, a smaller one adds the members it loses (but ``unclean``, a broker back from an unclean
        shutdown), and an ISR that empties records its leader as the last known ELR."""
        if not self.mode.elr:
            return c._replace(isr=isr)
        o, n = self.o, self.n
        small = o.Sum(isr) < self.cfg.min_isr
        elr = tuple(o.And(small, o.Or(c.elr[x], c.isr[x]), o.Not(isr[x]), x != unclean) for x in range(n))
        if self.mode.last_known_leader_when_leaderless:       # 4.1.1: _broker_gone records it
            return c._replace(isr=isr, elr=elr)
        empties = o.And(o.Not(o.Or(*isr)), o.Or(*c.isr), c.leader != UNDEFINED)
        known = tuple(o.If(empties, c.leader == x, c.last_known_elr[x]) for x in range(n))
        return c._replace(isr=isr, elr=elr, last_known_elr=known)

    def leader_unfenced(self, s: SState):
        """invariants.leader_unfenced: the controller's leader, if any, is live."""
        o, c = self.o, s.ctl
        return o.Or(c.leader == UNDEFINED, o.select(list(c.live), c.leader))

    def _lost_memory(self, rep: SRep) -> SRep:
        """actions._lost_memory (the clean-shutdown marker is on disk: it stays)."""
        n = self.n
        return rep._replace(alive=False, role=NONE, leader_epoch=UNDEFINED, leader=UNDEFINED, isr=(False,) * n,
                            truncating=FETCHING, remote_leo=(0,) * n, remote_broker_epoch=(0,) * len(rep.remote_broker_epoch),
                            leader_fenced=False, remote_fetch_leo=(0,) * n, remote_caught_up=(False,) * n,
                            leading_since=UNDEFINED)

    def abandon(self, s: SState, f: int) -> SState:
        """actions._abandon: f's outstanding message goes; a Fetch becomes its stale request
        unless it already has one."""
        o, m, old = self.o, s.msgs[f], s.stale[f]
        keep = o.And(m.kind == FETCH, old.kind == NO_MESSAGE)
        s = self.set_stale(s, f, ite(o, keep, SStale(FETCH, m.peer, m.a, m.b, m.c, m.d, *self._no_response()), old))
        return self.send(s, f, self.no_message())

    def _drop_messages_to(self, s: SState, r: int) -> SState:
        """actions._drop_messages_to: messages to or from r are lost; r's own Fetch outlives it."""
        o = self.o
        msgs = tuple(ite(o, o.And(m.kind != NO_MESSAGE, m.peer == r), self.no_message(), m) for m in s.msgs)
        stale = tuple(ite(o, o.And(m.kind != NO_MESSAGE, o.Or(m.peer == r, m.kind == FETCH_RESPONSE if f == r else False)),
                          self.no_stale(), m) for f, m in enumerate(s.stale))
        return self.abandon(s._replace(msgs=msgs, stale=stale), r)

    def stop(self, s: SState, r: int, disk: SRep) -> SState:
        """actions._stop: before KIP-380 the epoch of the last LeaderAndIsr answered stays."""
        answered = UNDEFINED if self.mode.restart_after_detection else s.reps[r].leader_epoch
        return self._drop_messages_to(self.set_replica(s, r, self._lost_memory(disk)._replace(leader_epoch=answered)), r)

    def count_crash(self, s: SState) -> SState:
        return s._replace(hist=s.hist._replace(crashes=s.hist.crashes + 1))

    def action(self, i: int, s: SState):
        """(guard, next state) of action instance ``i`` (a label of ``instances``)."""
        label = self.instances[i]
        fn = self.overrides.get(label[0]) or TERMS[label[0]]
        guard, t = fn(self, s, *label[1:])
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
                below = tuple(o.If(new.b > 0, o.select([e[k] for e in log], new.b - 1), UNDEFINED) for k in (0, 1))
                sentry.append(tuple(o.If(new.kind != FETCH, UNDEFINED,
                                         o.If(old.kind != NO_MESSAGE, h.stale_entry[f][k], below[k]))
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


# name, arity: the actions of spec/actions.py that have a z3 twin (its TERMS), in its order
ACTION_TABLE = tuple((name, arity) for name, _, arity in ACTIONS if name in TERMS)


# ---------------------------------------------------------------- invariants (spec/invariants.py)

def no_committed_data_loss(enc: Encoding, s: SState):
    o = enc.o
    out = []
    for l, rep in enumerate(s.reps):
        in_office = in_office_terms(o, s, l)
        kept = [o.Or(off == UNDEFINED, o.And(off < rep.leo, o.select([e[0] for e in rep.log], off) == rec))
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
        diverging = m.c != UNDEFINED if enc.mode.truncate_on_fetch else False
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
    return o.And(*[o.And(o.Or(rep.alive, o.And(rep.role == NONE, s.msgs[r].kind == NO_MESSAGE)),
                         o.Or(rep.role != LEADER, s.msgs[r].kind == NO_MESSAGE))
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
            applies = o.And(m.kind == kind, m.peer == l, epoch != UNDEFINED, end != UNDEFINED, sender.alive,
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
