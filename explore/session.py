"""One exploration: a model, the path walked so far and a cursor on it; every answer is JSON built
from the Model the engines use (``successors``, ``step``, ``invariants``, ``format_label``,
``to_json``) and from checker/trace.py (``to_itf``, ``replay``, ``differential``). Nothing here
knows a protocol rule: the page draws what this sends.

>>> from hwcheck.spec import Config, Model
>>> s = Session(Model(Config(mode="hw", records=1)))
>>> [a["label"] for a in s.view()["enabled"]][:2]
['produce(r0)', 'shrink_isr(r0,r1)']
>>> v = s.apply("produce(r0)")
>>> v["cursor"], v["action"], v["changed"][:2]
(1, 'produce(r0)', ['history.produced', 'replicas.r0.leo'])
>>> s.back()["cursor"], s.forward()["cursor"]
(0, 1)
>>> s.apply("restart(r0)")
Traceback (most recent call last):
...
hwcheck.explore.session.ExploreError: restart(r0) is not enabled at step 1
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

from hwcheck.checker import variants
from hwcheck.checker.families import DESIGN, family_of
from hwcheck.checker.result import Trace
from hwcheck.checker.trace import TraceError, differential, replay, to_itf, trace_family
from hwcheck.spec import ConfigError

# the kind of each action, for grouping the buttons (the client / replication / faults /
# controller); an action not listed here is shown under "other"
KINDS = {
    "produce": "client",
    "send_fetch": "replication", "leader_handle_fetch": "replication", "leader_handle_stale_fetch": "replication",
    "follower_handle_fetch": "replication", "follower_handle_old_response": "replication",
    "send_epoch_request": "replication", "leader_handle_epoch_request": "replication",
    "follower_handle_epoch_response": "replication", "reject_request": "replication",
    "shrink_isr": "replication", "lag_expires": "replication", "flush": "replication",
    "crash": "faults", "power_fail": "faults", "lose_disk": "faults", "restart": "faults",
    "controlled_shutdown": "faults", "controlled_shutdown_leader": "faults", "session_expire": "faults",
    "session_expire_leader": "faults", "controller_handle_failure_leader": "controller",
    "controller_handle_failure": "controller", "register": "controller", "assign_dir": "controller",
    "elect_offline": "controller",
    "elect_preferred": "controller", "become_leader": "controller", "become_follower": "controller",
    # the reference model (--model kafka-tla, spec/kafka_tla/actions.py ARGS)
    "LeaderWrite": "client",
    "LeaderShrinkIsr": "replication", "LeaderExpandIsr": "replication", "LeaderIncHighWatermark": "replication",
    "FollowerReplicate": "replication", "FencedFollowerFetch": "replication",
    "FencedLeaderIncHighWatermark": "replication", "FencedLeaderShrinkIsr": "replication",
    "FencedLeaderExpandIsr": "replication", "FollowerTruncate": "replication",
    "ImprovedLeaderIncHighWatermark": "replication", "FollowerFetch": "replication",
    "LeaderShrinkIsrBetterFencing": "replication", "LeaderExpandIsrBetterFencing": "replication",
    "ControllerElectLeader": "controller", "ControllerShrinkIsr": "controller", "BecomeLeader": "controller",
    "BecomeFollowerTruncateToHighWatermark": "controller", "BecomeFollowerTruncateKip101": "controller",
    "BecomeFollowerTruncateKip279": "controller", "FencedBecomeFollowerAndTruncate": "controller",
    "BecomeFollower": "controller",
}
KIND_ORDER = ("client", "replication", "faults", "controller", "other")


class ExploreError(Exception):
    """A request the session refuses; the message is one line for the user."""


def kind_of(name: str) -> str:
    """The button group of an action.

    >>> kind_of("crash"), kind_of("become_leader"), kind_of("something_new")
    ('faults', 'controller', 'other')
    """
    return KINDS.get(name, "other")


def changed_paths(before, after, path: str = "") -> List[str]:
    """The JSON paths (``replicas.r0.hw``, ``replicas.r0.log[1]``) where two ITF states differ,
    a key present on one side only included.

    >>> changed_paths({"a": {"b": 1, "c": [1, 2]}}, {"a": {"b": 1, "c": [1, 3], "d": 0}})
    ['a.c[1]', 'a.d']
    """
    if isinstance(before, dict) and isinstance(after, dict):
        out = []
        for key in sorted(set(before) | set(after)):
            sub = f"{path}.{key}" if path else key
            if key not in before or key not in after:
                out.append(sub)
            elif before[key] != after[key]:
                out += changed_paths(before[key], after[key], sub)
        return out
    if isinstance(before, list) and isinstance(after, list):
        out = []
        for i, (a, b) in enumerate(zip(before, after)):
            if a != b:
                out += changed_paths(a, b, f"{path}[{i}]")
        out += [f"{path}[{i}]" for i in range(min(len(before), len(after)), max(len(before), len(after)))]
        return out
    return [] if before == after else [path]


@dataclass
class Refusal:
    """Steps of the path the current mode did not take (a differential replay)."""
    mode: str                         # the mode the path was walked under
    at: int                           # the first step this mode refuses
    why: str
    labels: List[str] = field(default_factory=list)   # that step and the ones after it, as walked


class Session:
    """The path walked so far (``states``, ``labels``) and the ``cursor`` on it. Applying an
    action at the cursor replaces what followed it, unless it is the step that followed (then it
    only moves forward). Not thread-safe: the server holds a lock around every call."""

    def __init__(self, model, source: Optional[str] = None):
        self.model = model
        self.states = [model.init_states()[0]]
        self.labels: list = []
        self.cursor = 0
        self.source = source              # the trace opened, if any
        self.refusal: Optional[Refusal] = None
        self.parted: Optional[dict] = None
        self._walked: Optional[dict] = None      # the path as walked, while a mode switch refuses part of it
        self._json: dict = {}
        self._rows: dict = {}

    # ------------------------------------------------------------ moving
    def apply(self, text: str) -> dict:
        try:
            label = self.model.parse_label(text)
        except ConfigError as e:
            raise ExploreError(str(e)) from None
        here = self.states[self.cursor]
        nxt = self.model.step(here, label)
        if nxt is None:
            raise ExploreError(f"{self.model.format_label(label)} is not enabled at step {self.cursor}")
        if self.cursor < len(self.labels) and self.labels[self.cursor] == label:
            self.cursor += 1
            return self.view()
        del self.states[self.cursor + 1:]
        del self.labels[self.cursor:]
        self.refusal = self.parted = self._walked = None
        self.states.append(nxt)
        self.labels.append(label)
        self.cursor += 1
        return self.view()

    def goto(self, step) -> dict:
        if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step < len(self.states):
            raise ExploreError(f"step {step!r}: the path has steps 0..{len(self.states) - 1}")
        self.cursor = step
        return self.view()

    def back(self) -> dict:
        return self.goto(max(0, self.cursor - 1))

    def forward(self) -> dict:
        if self.cursor == len(self.states) - 1 and self.refusal is not None:
            raise ExploreError(f"step {self.refusal.at} is refused in mode {self.mode_name}: {self.refusal.why}")
        return self.goto(min(len(self.states) - 1, self.cursor + 1))

    def reset(self) -> dict:
        """Back to the initial state, the path forgotten."""
        self.__init__(self.model)
        return self.view()

    # ------------------------------------------------------------ traces and modes
    def open_trace(self, doc: dict, source: str = "trace") -> dict:
        """Step through a loaded ITF trace (checker/trace.py ``load_itf``) from its initial state;
        the model becomes the trace's (its family and settings)."""
        try:
            family = trace_family(doc)
            if family != family_of(self.model):
                raise ExploreError(f"{source}: a trace of model {family}; this explorer runs model "
                                   f"{family_of(self.model)}")
            done = replay(doc)
        except TraceError as e:
            raise ExploreError(f"{source}: {e}") from None
        self.__init__(done.model, source)
        self.states, self.labels = list(done.trace.states), list(done.trace.labels)
        return self.view()

    def switch_mode(self, mode) -> dict:
        """Run the whole path's steps under another mode (``differential``): the path becomes the
        steps that mode takes; a step it refuses and those after it are kept as the refusal. While
        a refusal stands, the path as walked (under the mode it was walked in) is what the next
        switch runs, so switching back gives every step again."""
        if family_of(self.model) != DESIGN:
            raise ExploreError(f"switching modes is for the design model; this is {family_of(self.model)}")
        if self.refusal is not None and self._walked is not None:
            doc, before = self._walked, self.refusal.mode
        else:
            doc, before = self.itf(whole=True), self.mode_name
            doc["#meta"]["hwcheck"]["config"]["mode"] = self.model.cfg.mode   # a --mode-file variant: its Mode
        try:
            diff = differential(doc, mode)
        except (TraceError, ConfigError) as e:
            raise ExploreError(str(e)) from None
        cursor, source = self.cursor, self.source
        self.__init__(diff.model, source)
        self.states, self.labels = list(diff.trace.states), list(diff.trace.labels)
        if diff.refused_at is not None:
            walked = [diff.original.model.format_label(lb) for lb in diff.original.trace.labels]
            self.refusal = Refusal(before, diff.refused_at, diff.refused_why, walked[diff.refused_at - 1:])
            self._walked = doc
        if diff.parted_at is not None:
            self.parted = {"at": diff.parted_at, "how": diff.parted_how, "mode": before}
        self.cursor = min(cursor, len(self.states) - 1)
        return self.view()

    @property
    def mode_name(self) -> str:
        mode = self.model.cfg.mode
        return mode if isinstance(mode, str) else getattr(mode, "name", str(mode))

    def itf(self, whole: bool = False) -> dict:
        """The path up to the cursor (``whole``: all of it) as the ITF document verify writes
        (checker/trace.py ``to_itf``, and under a --mode-file variant the file, as verify stamps
        it), naming the first invariant broken in its last state."""
        end = len(self.states) if whole else self.cursor + 1
        states, labels = self.states[:end], self.labels[:end - 1]
        broken = self.model.violated(states[-1])
        doc = to_itf(self.model, Trace(states, labels, broken[0] if broken else None), engine="explore")
        return variants.stamp(doc, self.model.cfg) if family_of(self.model) == DESIGN else doc

    # ------------------------------------------------------------ answers
    def to_json(self, s) -> dict:
        if s not in self._json:
            self._json[s] = self.model.to_json(s)
        return self._json[s]

    def view(self) -> dict:
        """Everything the page draws at the cursor."""
        m, i = self.model, self.cursor
        here = self.states[i]
        state = self.to_json(here)
        previous = self.to_json(self.states[i - 1]) if i else None
        walked_next = self.labels[i] if i < len(self.labels) else None
        enabled = []
        for label, _ in m.successors(here):
            enabled.append({"label": m.format_label(label), "name": label[0], "kind": kind_of(label[0]),
                            "replica": _first_replica(m, label), "next": label == walked_next})
        enabled.sort(key=lambda a: (KIND_ORDER.index(a["kind"]), a["replica"] or "", a["label"]))
        broken = set(m.violated(here))
        why = getattr(m, "why_broken", None)          # the design model names the record, offset or replica
        invariants = [{"name": name, "holds": name not in broken, "doc": " ".join((pred.__doc__ or "").split()),
                       "why": why(here, name) if why is not None and name in broken else None,
                       "first_broken_at": self._first_break(name)} for name, pred in m.invariants]
        return {
            "model": family_of(m),
            "mode": self.mode_name,
            "settings": _settings(m),
            "replicas": [f"r{r}" for r in range(m.cfg.replicas)],
            "source": self.source,
            "cursor": i,
            "last": len(self.states) - 1,
            "action": m.format_label(self.labels[i - 1]) if i else "init",
            "state": state,
            "changed": changed_paths(previous, state) if previous is not None else [],
            "enabled": enabled,
            "invariants": invariants,
            "path": [self._row(k) for k in range(len(self.states))],
            "refusal": None if self.refusal is None else vars(self.refusal),
            "parted": self.parted,
        }

    def _first_break(self, name: str) -> Optional[int]:
        pred = dict(self.model.invariants)[name]
        for k, s in enumerate(self.states):
            if not pred(s):
                return k
        return None

    def _row(self, k: int) -> dict:
        """One row of the path table, as ``hwcheck replay`` prints the trace table."""
        s = self.states[k]
        if s not in self._rows:
            self._rows[s] = _cells(self.model, s)
        return {"step": k, "action": self.model.format_label(self.labels[k - 1]) if k else "init",
                "broken": self.model.violated(s), **self._rows[s]}


def _first_replica(model, label) -> Optional[str]:
    """The first replica an action names (the button's column), from its formatted label."""
    text = model.format_label(label)
    inner = text[text.index("(") + 1:-1]
    first = inner.split(",")[0] if inner else ""
    return first if first.startswith("r") else None


def _settings(model) -> str:
    from hwcheck.cli.models import settings_line
    return settings_line(model.cfg)


def _cells(model, s) -> dict:
    """The trace table's cells of one state (cli/render.py and cli/models.py render them)."""
    from hwcheck.cli import models, render
    n = model.cfg.replicas
    if family_of(model) == DESIGN:
        return {"replicas": [render.replica_cell(model, s.replicas[r], r) for r in range(n)],
                "controller": render.controller_cell(model, s.controller),
                "messages": render.messages_cell(model, s)}
    return {"replicas": [models.tla_replica_cell(s, r) for r in range(n)],
            "controller": models.tla_quorum_cell(s), "messages": ""}
