"""The Model interface every engine sees (after Stateright's ``Model`` trait).

>>> m = Model(Config(mode="hw", records=1))
>>> [s] = m.init_states()
>>> [label for label, _ in m.successors(s)][:2]
[('produce', 0), ('send_fetch', 1)]
>>> m.format_label(('leader_handle_fetch', 0, 1))
'leader_handle_fetch(r0,r1)'
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

from .actions import (ACTIONS, DIRECTORY_ONLY, DISK_ONLY, EPOCH_ONLY, EVENTS, FENCE_ELECTS_ONLY, NEEDS, OLD_RESPONSE_ONLY,
                      POWER_ONLY, Rules, dated, initial_state, may_enable, shape)
from .config import Config, ConfigError
from . import render, renaming, story
from .invariants import broken_cells, invariants_for, why_broken
from .liveness import FAIR_ACTIONS, LIVENESS
from .modes import Mode
from .state import (EPOCH_REQUEST, FETCH, FETCH_RESPONSE, MESSAGE_NAMES, ROLE_NAMES, UNDEFINED, Message, State,
                    members, replica_name)

Label = Tuple  # (action name, replica ids...)
_LABEL = re.compile(r"^([a-z_]+)\(((?:r\d+)(?:,r\d+)*)?\)$")


class Model:
    """Kafka partition replication under one Config.

    - ``init_states()``: the initial states;
    - ``successors(state)``: ``(label, next_state)`` pairs, labels like ``('crash', 1)``;
    - ``invariants``: ``(name, predicate)`` pairs;
    - ``step(state, label)``: the successor by label, or None (replay);
    - ``to_json(state)``: the stable canonical encoding (ITF state variables).

    ``history_variables=True`` (``hwcheck prove``) also keeps three history variables, the leader
    epoch that exposed each offset (``History.exposed_epoch``), the leader named with each epoch
    (``History.epoch_leader``) and the entry below each stale Fetch's offset when it was sent
    (``History.stale_entry``): the protocol never reads them and ITF leaves them out, so traces and
    their replay are the same, but states that differ only in them are distinct.
    """

    # the optional pieces of the Model protocol (spec/protocol.py)
    rename = staticmethod(renaming.rename)
    symmetry_keys = staticmethod(renaming.symmetry_keys)
    summary = staticmethod(render.summary)
    liveness = LIVENESS
    fair_actions = FAIR_ACTIONS

    def __init__(self, cfg: Config, history_variables: bool = False):
        self.cfg = cfg
        mode: Mode = cfg.mode_definition
        self.rules = Rules(cfg, mode, cfg.replicas, history_variables)
        n = cfg.replicas
        replaced = dict(mode.actions)
        actions = []
        needs = {}          # action name -> what its guard needs first (spec/actions.py NEEDS; the spec's own functions)
        for name, fn, arity in ACTIONS:
            own = name not in replaced
            fn = replaced.get(name, fn)
            if history_variables:
                fn = dated(fn)
            if name in EPOCH_ONLY and (not mode.epochs or mode.truncate_on_fetch):
                continue
            if name in POWER_ONLY and not cfg.power_failures:
                continue
            if name in DISK_ONLY and not cfg.disk_losses:
                continue
            if name in DIRECTORY_ONLY and not (cfg.disk_losses and mode.directory_assignment):
                continue
            if name in OLD_RESPONSE_ONLY and not (mode.accept_old_epoch_response and mode.truncate_on_fetch):
                continue
            if name in FENCE_ELECTS_ONLY and not mode.fence_elects:
                continue
            if name in NEEDS and own:
                needs[name] = NEEDS[name]
            args = [(r,) for r in range(n)] if arity == 1 else [(a, b) for a in range(n) for b in range(n) if a != b]
            actions.append((name, fn, args))
        self._actions = actions
        # one (label, function, arguments) per possible step, labels built once
        self._steps = tuple(((name,) + args, fn, args) for name, fn, arg_list in actions for args in arg_list)
        self._by_name = {name: fn for name, fn, _ in actions}
        # the steps worth trying in a state, by its shape: a step whose guard needs what the shape
        # lacks is never enabled there (spec/actions.py NEEDS), so successors leaves it out, keeping
        # the order; a shape's steps are worked out once
        self._needs = needs
        self._steps_by_shape: dict = {}
        self._by_label = {label: (fn, args) for label, fn, args in self._steps}
        self.invariants: Tuple[Tuple[str, Callable[[State], bool]], ...] = invariants_for(cfg)

    def init_states(self) -> List[State]:
        return [initial_state(self.rules)]

    def successors(self, s: State) -> Iterator[Tuple[Label, State]]:
        rules = self.rules
        key = shape(s)
        steps = self._steps_by_shape.get(key)
        if steps is None:
            steps = self._steps_by_shape[key] = self._steps_for(key)
        for label, fn, args in steps:
            nxt = fn(s, rules, *args)
            if nxt is not None:
                yield label, nxt

    def _steps_for(self, key: tuple) -> tuple:
        """The steps, in order, less those whose guard needs what a state of shape ``key`` lacks."""
        needs, cfg = self._needs, self.cfg
        return tuple(step for step in self._steps
                     if step[0][0] not in needs or may_enable(needs[step[0][0]], key, step[2], cfg))

    def step(self, s: State, label: Label):
        """The state reached by the labelled action, or None if it is not enabled."""
        known = self._by_label.get(label)
        if known is not None:
            return known[0](s, self.rules, *known[1])
        fn = self._by_name.get(label[0])
        if fn is None:
            raise ConfigError(f"unknown action {label[0]!r} in mode {self.cfg.mode}")
        return fn(s, self.rules, *label[1:])

    def violated(self, s: State) -> List[str]:
        return [name for name, pred in self.invariants if not pred(s)]

    def why_broken(self, s: State, name: str) -> Optional[str]:
        """One line naming the record, offset or replica that breaks the invariant ``name`` in ``s``
        (None while it holds): spec/invariants.py ``why_broken``."""
        return why_broken(dict(self.invariants)[name], s)

    def story(self, states: Sequence[State], labels: Sequence[Label], names: Sequence[str]) -> List[str]:
        """How the invariants ``names``, broken in the last of ``states``, came to break: a few lines,
        one per step that matters, citing the mode's rules (spec/story.py)."""
        preds = dict(self.invariants)
        return story.tell(self.rules.mode, self.cfg, states, labels,
                          [preds[name] for name in names if name in preds])

    def broken_cells(self, s: State, name: str) -> List[Tuple[int, int]]:
        """The log cells (replica, offset) at fault for the invariant ``name`` in ``s``."""
        return broken_cells(dict(self.invariants)[name], s)

    @property
    def moves(self) -> Tuple[Tuple[Label, Callable, tuple], ...]:
        """Every step the model can take, as ``(label, fn, args)`` in the order ``successors`` tries
        them: ``fn(s, *args)`` is ``step(s, label)`` without looking the label up (a random walk
        tries about 20 of them a step).

        >>> m = Model(Config(mode="hw", replicas=2, records=1))
        >>> [label for label, _, _ in m.moves[:3]]
        [('produce', 0), ('produce', 1), ('send_fetch', 0)]
        >>> label, fn, args = m.moves[0]
        >>> fn(m.init_states()[0], *args) == m.step(m.init_states()[0], label)
        True
        """
        rules = self.rules
        return tuple((label, fn, (rules,) + args) for label, fn, args in self._steps)

    @property
    def action_names(self) -> Tuple[str, ...]:
        """The kinds of action this model takes (the first element of every label)."""
        return tuple(name for name, _, _ in self._actions)

    @property
    def events(self) -> Tuple[str, ...]:
        """The kinds that are failures or an operator's actions (spec/actions.py ``EVENTS``).

        >>> Model(Config(mode="hw", records=1)).events
        ('crash', 'controlled_shutdown', 'controlled_shutdown_leader', 'session_expire', 'elect_preferred')
        """
        return tuple(name for name in self.action_names if name in EVENTS)

    def narrowed(self, s: State) -> "Model":
        """This model with its budgets cut to what the path to ``s`` used: records produced,
        crashes, power failures, disk losses, leader epochs. Every path of the narrowed model
        is a path of this one (a smaller budget only disables steps), so a bfs of it looks for
        shorter versions of a trace at a fraction of the cost (checker/shrink.py).

        >>> m = Model(Config(mode="hw", records=2, crashes=2))
        >>> m.narrowed(m.init_states()[0]).cfg.crashes, m.narrowed(m.init_states()[0]).cfg.records
        (0, 1)
        """
        h = s.history
        return Model(replace(self.cfg, records=max(1, h.produced), crashes=h.crashes,
                             power_failures=h.power_failures, disk_losses=h.disk_losses,
                             max_epoch=s.controller.epoch), self.rules.history_variables)

    # ------------------------------------------------------------ labels
    @staticmethod
    def format_label(label: Label) -> str:
        return f"{label[0]}({','.join(replica_name(r) for r in label[1:])})"

    def parse_label(self, text: str) -> Label:
        m = _LABEL.match(text.strip()) if isinstance(text, str) else None
        if not m:
            raise ConfigError(f"malformed action label {text!r}")
        name = m.group(1)
        args = tuple(int(a[1:]) for a in m.group(2).split(",")) if m.group(2) else ()
        if name not in self._by_name:
            raise ConfigError(f"unknown action {name!r} in mode {self.cfg.mode}")
        arity = next(a for nm, _, a in ACTIONS if nm == name)
        if len(args) != arity or any(a >= self.cfg.replicas for a in args):
            raise ConfigError(f"action {text!r} names the wrong replicas for {self.cfg.replicas} replicas")
        return (name,) + args

    # ------------------------------------------------------------ encoding
    def to_json(self, s: State) -> dict:
        """The state as ITF variables: plain JSON, replica names as keys, sets as ``#set``."""
        n = self.cfg.replicas
        names = [replica_name(r) for r in range(n)]

        def isr(mask):
            return {"#set": [names[r] for r in members(mask, n)]}

        def who(r):
            return names[r] if r != UNDEFINED else None

        replicas = {}
        for r, rep in enumerate(s.replicas):
            entry = {
                "alive": bool(rep.alive),
                "role": ROLE_NAMES[rep.role],
                "leader_epoch": rep.leader_epoch,
                "leader": who(rep.leader),
                "log": [{"record": rec, "epoch": ep} for rec, ep in rep.log],
                "leo": rep.leo,
                "hw": rep.hw,
            }
            if self.cfg.power_failures:
                entry["flushed"] = rep.flushed
            if self.rules.mode.epochs:
                entry["epoch_cache"] = [{"epoch": e, "start_offset": o} for e, o in rep.epoch_cache]
                entry["truncating"] = bool(rep.truncating)
                if rep.truncating == 2:
                    entry["fetch_offset"] = "leo"   # an intermediate truncation step moved it there
            if rep.leader_fenced:      # KRaft, KAFKA-18991 modes: its fetcher thread goes with the fence
                entry["leader_fenced"] = True
            if rep.new_directory:      # KRaft 3.7+: a replaced disk's new directory id, not yet registered
                entry["new_directory"] = True
            if rep.role == 1:
                entry["isr"] = isr(rep.isr)
                entry["remote_leo"] = {names[f]: rep.remote_leo[f] for f in range(n) if f != r}
                if rep.remote_broker_epoch:
                    entry["remote_broker_epoch"] = {names[f]: rep.remote_broker_epoch[f] for f in range(n) if f != r}
                entry["remote_fetch_leo"] = {names[f]: rep.remote_fetch_leo[f] for f in range(n) if f != r}
                entry["remote_caught_up"] = isr(rep.remote_caught_up)
                if rep.leading_since != rep.leader_epoch:    # re-elected: its term began earlier
                    entry["leading_since"] = rep.leading_since
            replicas[names[r]] = entry
        on_fetch = self.rules.mode.truncate_on_fetch
        inflight = {names[f]: _message_json(msg, names, on_fetch) for f, msg in enumerate(s.inflight) if msg}
        stale = {names[f]: _message_json(msg, names, on_fetch) for f, msg in enumerate(s.stale) if msg}
        h, c = s.history, s.controller
        controller = {"leader": who(c.leader), "epoch": c.epoch, "isr": isr(c.isr), "live": isr(c.live)}
        if c.broker_epochs:
            controller["broker_epochs"] = {names[r]: e for r, e in enumerate(c.broker_epochs)}
        if self.rules.mode.elr:
            controller.update(elr=isr(c.elr), last_known_elr=isr(c.last_known_elr))
        if c.offline_dirs:      # KRaft 3.7+: replicas back on a replaced disk, not yet assigned to it
            controller["offline_dirs"] = isr(c.offline_dirs)
        history = {
            "produced": h.produced,
            "acked": {str(rec): off for rec, off in enumerate(h.acked) if off != UNDEFINED},
            "exposed": list(h.exposed),
            "crashes": h.crashes,
            "power_failures": h.power_failures,
        }
        if self.cfg.disk_losses:
            history["disk_losses"] = h.disk_losses
        return {
            "replicas": replicas,
            "controller": controller,
            "inflight": inflight,
            "stale": stale,
            "history": history,
        }


def _message_json(msg: Message, names: List[str], on_fetch: bool) -> dict:
    """A message as ITF: its kind's name and fields; the fields of truncation on fetch only in the
    modes that have it (``on_fetch``)."""
    out = {"type": MESSAGE_NAMES[msg.kind], "leader": names[msg.leader]}
    if msg.kind == FETCH:
        out.update(current_leader_epoch=msg.current_leader_epoch, fetch_offset=msg.fetch_offset)
        if on_fetch:
            out.update(last_fetched_epoch=msg.last_fetched_epoch, broker_epoch=msg.broker_epoch)
    elif msg.kind == FETCH_RESPONSE:
        out.update(records=[{"record": r, "epoch": e} for r, e in msg.records], hw=msg.hw, leader_leo=msg.leader_leo)
        if msg.diverging_epoch != UNDEFINED:
            out.update(diverging_epoch={"epoch": msg.diverging_epoch, "end_offset": msg.diverging_end_offset})
        if msg.fetch_offset != UNDEFINED:         # waiting in an old leader's fetcher thread (KAFKA-18991)
            out.update(fetch_offset=msg.fetch_offset)
    elif msg.kind == EPOCH_REQUEST:
        out.update(current_leader_epoch=msg.current_leader_epoch, requested_epoch=msg.requested_epoch)
    else:
        out.update(epoch=msg.epoch, end_offset=msg.end_offset)
    return out
