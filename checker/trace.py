"""Counterexample traces as ITF JSON (the Informal Trace Format of Apalache and Quint), and replay.

A trace stores the run's config in ``#meta.hwcheck.config`` and each state's action label in its
own ``#meta.action``; replay rebuilds the model from the config, re-executes every label through
the spec and checks each stored state against the computed one. ``#meta.hwcheck.model`` names
the model family (checker/families.py); a trace without it is of the DESIGN model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from hwcheck.spec import Config, ConfigError, Model

from .families import DESIGN, family_of, make_model
from .result import Trace

ITF_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
VARS = ["replicas", "controller", "inflight", "stale", "history"]
INIT = "init"


class TraceError(Exception):
    """A trace that cannot be read or does not replay; the message is one line for the user."""


def to_itf(model: Model, trace: Trace, engine: str = "bfs") -> dict:
    """The ITF document of a trace found under ``model``."""
    states = []
    for i, s in enumerate(trace.states):
        action = INIT if i == 0 else model.format_label(trace.labels[i - 1])
        states.append({"#meta": {"index": i, "action": action}, **model.to_json(s)})
    return {
        "#meta": {
            "format": "ITF",
            "format-description": ITF_DESCRIPTION,
            "source": "hwcheck",
            "description": f"{trace.invariant or 'trace'} in mode {model.cfg.mode}, {trace.steps} steps",
            "hwcheck": {"model": family_of(model), "config": model.cfg.as_dict(), "invariant": trace.invariant,
                        "engine": engine},
        },
        "vars": getattr(model, "itf_vars", VARS),
        "states": states,
    }


def load_itf(text: str) -> dict:
    """Parse and shape-check an ITF document written by hwcheck."""
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TraceError(f"malformed JSON: {e}") from None
    except RecursionError:
        raise TraceError("malformed JSON: nested too deeply") from None
    if not isinstance(doc, dict):
        raise TraceError("not an ITF trace: the top level is not a JSON object")
    meta = doc.get("#meta")
    if not isinstance(meta, dict) or not isinstance(meta.get("hwcheck"), dict):
        raise TraceError("not an hwcheck ITF trace: #meta.hwcheck is missing")
    if not isinstance(meta["hwcheck"].get("config"), dict):
        raise TraceError("not an hwcheck ITF trace: #meta.hwcheck.config is missing")
    invariant = meta["hwcheck"].get("invariant")
    if invariant is not None and not isinstance(invariant, str):
        raise TraceError(f"not an hwcheck ITF trace: #meta.hwcheck.invariant is {_short(invariant)}, not a name")
    states = doc.get("states")
    if not isinstance(states, list) or not states:
        raise TraceError("not an ITF trace: 'states' is missing or empty")
    for i, st in enumerate(states):
        if not isinstance(st, dict) or not isinstance(st.get("#meta"), dict) or not isinstance(st["#meta"].get("action"), str):
            raise TraceError(f"state {i}: missing #meta.action")
    return doc


def trace_config(doc: dict, **overrides) -> Config:
    try:
        return Config.from_dict({**doc["#meta"]["hwcheck"]["config"], **overrides})
    except (ConfigError, TypeError) as e:
        raise TraceError(f"bad config in trace: {e}") from None


def trace_family(doc: dict) -> str:
    family = doc["#meta"]["hwcheck"].get("model", DESIGN)
    if not isinstance(family, str):
        raise TraceError(f"bad model in trace: {family!r}")
    return family


def trace_model(doc: dict):
    """The model a trace was found under: its family and its config."""
    try:
        model = make_model(trace_family(doc), doc["#meta"]["hwcheck"]["config"])
    except ConfigError as e:
        raise TraceError(f"bad config in trace: {e}") from None
    return model


def _short(value, limit: int = 80) -> str:
    """A JSON value for a one-line message, cut at ``limit`` characters."""
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _first_difference(expected, got, path="") -> str:
    """The first path where two JSON values differ, for a one-line message."""
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in list(expected) + [k for k in got if k not in expected]:
            if key not in got:
                return f"{path}.{key} is missing" if path else f"{key} is missing"
            if key not in expected:
                return f"{path}.{key} is unexpected" if path else f"{key} is unexpected"
            if expected[key] != got[key]:
                return _first_difference(expected[key], got[key], f"{path}.{key}" if path else key)
    if isinstance(expected, list) and isinstance(got, list) and len(expected) == len(got):
        for i, (a, b) in enumerate(zip(expected, got)):
            if a != b:
                return _first_difference(a, b, f"{path}[{i}]")
    return f"{path}: trace has {_short(got)}, spec gives {_short(expected)}"


@dataclass
class Replay:
    model: Model
    trace: Trace
    violated: List[str] = field(default_factory=list)   # invariants broken in the last state
    loop: Optional[int] = None        # a lasso: after the last state comes states[loop] ...
    closing: Optional[Tuple] = None   # ... by this label (None: stuttering at the last state)


def replay(doc: dict, check_states: bool = True) -> Replay:
    """Re-execute a loaded ITF trace through the spec.

    Raises TraceError naming the step and the reason at the first step that is unknown, not
    enabled, or whose stored state differs from the spec's.
    """
    model = trace_model(doc)
    raw = doc["states"]
    if raw[0]["#meta"]["action"] != INIT:
        raise TraceError(f"step 0: expected action 'init', found {raw[0]['#meta']['action']!r}")
    state = model.init_states()[0]
    states, labels = [state], []
    for i, stored in enumerate(raw):
        text = stored["#meta"]["action"]
        if i > 0:
            try:
                label = model.parse_label(text)
            except ConfigError as e:
                raise TraceError(f"step {i} ({text}): {e}") from None
            nxt = model.step(state, label)
            if nxt is None:
                raise TraceError(f"step {i} ({text}): not enabled in the spec")
            state = nxt
            states.append(state)
            labels.append(label)
        if check_states:
            expected = model.to_json(state)
            got = {k: v for k, v in stored.items() if k != "#meta"}
            if expected != got:
                raise TraceError(f"step {i} ({text}): state differs: {_first_difference(expected, got)}")
    trace = Trace(states, labels, doc["#meta"]["hwcheck"].get("invariant"))
    done = Replay(model, trace, model.violated(state))
    if "loop" in doc:
        done.loop, done.closing = _replay_loop(model, doc, states)
    return done


def _replay_loop(model: Model, doc: dict, states: list):
    """A lasso (ITF ``loop``): the closing step ``#meta.hwcheck.loop_action`` leads from the last
    state back to ``states[loop]``; ``stutter`` closes a one-state loop at the last state."""
    loop, n = doc["loop"], len(states)
    if not isinstance(loop, int) or isinstance(loop, bool) or not 0 <= loop < n:
        raise TraceError(f"loop: {loop!r} is not a state index (0..{n - 1})")
    text = doc["#meta"]["hwcheck"].get("loop_action")
    if not isinstance(text, str):
        raise TraceError("loop: #meta.hwcheck.loop_action is missing")
    if text == "stutter":
        if loop != n - 1:
            raise TraceError(f"loop: stuttering closes only at the last state ({n - 1}), not at {loop}")
        return loop, None
    try:
        label = model.parse_label(text)
    except ConfigError as e:
        raise TraceError(f"loop ({text}): {e}") from None
    back = model.step(states[-1], label)
    if back is None:
        raise TraceError(f"loop ({text}): not enabled in the last state")
    if back != states[loop]:
        raise TraceError(f"loop ({text}): does not lead back to state {loop}: "
                         f"{_first_difference(model.to_json(back), model.to_json(states[loop]))}")
    return loop, label


def _core(model: Model, s) -> dict:
    """What every mode shares: per replica alive/role/epoch/log/HW, the controller, the acks."""
    full = model.to_json(s)
    keep = ("alive", "role", "leader_epoch", "log", "hw")
    return {
        "replicas": {r: {k: v[k] for k in keep} for r, v in full["replicas"].items()},
        "controller": full["controller"],
        "acked": full["history"]["acked"],
    }


def _shared(a: dict, b: dict) -> Tuple[dict, dict]:
    """Two modes' cores with the controller fields only one of them has left out (ELR, broker
    epochs): a difference of behaviour, not of the state's shape.

    >>> _shared({"controller": {"leader": 0, "elr": []}}, {"controller": {"leader": 0}})
    ({'controller': {'leader': 0}}, {'controller': {'leader': 0}})
    """
    both = a["controller"].keys() & b["controller"].keys()
    return tuple({**core, "controller": {k: v for k, v in core["controller"].items() if k in both}}
                 for core in (a, b))


@dataclass
class Differential:
    """The stored schedule of steps run under another mode."""
    original: Replay
    model: Model
    trace: Trace                      # the steps that ran under the other mode
    refused_at: Optional[int] = None  # first step the other mode refuses
    refused_why: str = ""
    parted_at: Optional[int] = None   # first step whose shared state differs
    parted_how: str = ""
    violated: List[Tuple[int, str]] = field(default_factory=list)  # (step, invariant) first breaks


def differential(doc: dict, mode: str) -> Differential:
    """Replay a stored trace's labels under ``mode`` (same other settings): where the other mode
    refuses a step, where the states part ways, and which invariants still break."""
    if trace_family(doc) != DESIGN:
        raise TraceError(f"differential replay (--mode) is for the design model; this trace is of {trace_family(doc)}")
    original = replay(doc)
    model = Model(trace_config(doc, mode=mode))
    state = model.init_states()[0]
    diff = Differential(original, model, Trace([state], [], None))
    seen = set()

    def note(i, s):
        for name in model.violated(s):
            if name not in seen:
                seen.add(name)
                diff.violated.append((i, name))

    note(0, state)
    for i, label in enumerate(original.trace.labels, start=1):
        text = original.model.format_label(label)
        try:
            label = model.parse_label(text)
        except ConfigError as e:
            diff.refused_at, diff.refused_why = i, f"{text}: {e}"
            break
        nxt = model.step(state, label)
        if nxt is None:
            diff.refused_at, diff.refused_why = i, f"{text}: not enabled in mode {model.cfg.mode}"
            break
        state = nxt
        diff.trace.states.append(state)
        diff.trace.labels.append(label)
        note(i, state)
        if diff.parted_at is None:
            a, b = _shared(_core(original.model, original.trace.states[i]), _core(model, state))
            if a != b:
                diff.parted_at = i
                diff.parted_how = f"{text}: " + _first_difference(b, a).replace(
                    "trace has", f"{original.model.cfg.mode} has").replace("spec gives", f"{model.cfg.mode} has")
    return diff


class StartingAt:
    """``model`` with one initial state, ``start``: a search from the middle of a trace (what TLC's
    and Apalache's user-given initial states do). Everything else is ``model``'s, so every engine
    runs on it unchanged.

    >>> from hwcheck.spec import Config, Model
    >>> from hwcheck.checker.bfs import bfs
    >>> doc = load_itf(open("counterexamples/hw-data-loss.itf.json").read())
    >>> model = StartingAt(Model(Config(mode="hw")), state_at(doc, 10))
    >>> bfs(model, only=["NoCommittedDataLoss"]).violations[0].steps   # the trace's last 2 steps
    2
    """

    def __init__(self, model, start):
        self.model, self.start = model, start

    def init_states(self) -> list:
        return [self.start]

    def __getattr__(self, name):
        if name == "model":          # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.model, name)


def state_at(doc: dict, step: int, mode=None):
    """The state after ``step`` steps of a stored trace, under its own mode or (differential
    replay) under ``mode``; a TraceError if the trace has fewer steps or ``mode`` refuses one of
    them."""
    last = len(doc["states"]) - 1
    if not 0 <= step <= last:
        raise TraceError(f"step {step}: the trace has steps 0..{last}")
    if mode is None:
        return replay(doc).trace.states[step]
    diff = differential(doc, mode)
    if diff.refused_at is not None and diff.refused_at <= step:
        raise TraceError(f"mode {mode} does not reach step {step}: step {diff.refused_at}, {diff.refused_why}")
    return diff.trace.states[step]
