"""The Model interface (as ``hwcheck.spec.Model``) over the community's TLA+ replication spec.

>>> m = Model(Config(mode="kip320"))
>>> [s] = m.init_states()
>>> [m.format_label(label) for label, _ in m.successors(s)]
['ControllerElectLeader(r0)', 'ControllerElectLeader(r1)', 'ControllerShrinkIsr(r0)', 'ControllerShrinkIsr(r1)']
>>> m.parse_label("BecomeLeader(r1,e0)")
('BecomeLeader', 1, 0)
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Callable, Iterator, List, Tuple

from ..config import ConfigError, check_counts, config_from_mapping
from . import renaming
from .actions import ARGS, NEXT, Constants
from .invariants import INVARIANTS
from .state import NONE, State, initial_state, members

FAMILY = "kafka-tla"
MODES = tuple(NEXT)
MODULES = {"truncate-to-hw": "KafkaTruncateToHighWatermark", "kip101": "Kip101", "kip279": "Kip279",
           "kip320": "Kip320", "kip320-first-try": "Kip320FirstTry"}
MAX_REPLICAS = 5
_LABEL = re.compile(r"^([A-Za-z][A-Za-z0-9]*)\(((?:[re]\d+)(?:,[re]\d+)*)?\)$")


@dataclass(frozen=True)
class Config:
    """The TLA+ constants (Replicas = r0..r{replicas-1}), the module, and the invariants checked
    (TLC's INVARIANT lines). Defaults: the figures' model, 2 replicas, LogSize 2, MaxRecords 2,
    MaxLeaderEpoch 3, StrongIsr."""
    mode: str = "kip320"
    replicas: int = 2
    log_size: int = 2
    max_records: int = 2
    max_leader_epoch: int = 3
    invariants: Tuple[str, ...] = ("StrongIsr",)

    def __post_init__(self) -> None:
        if not isinstance(self.mode, str) or self.mode not in MODES:
            raise ConfigError(f"unknown kafka-tla mode {self.mode!r}; choose one of {', '.join(MODES)}")
        check_counts(self, ("replicas", "log_size", "max_records", "max_leader_epoch"))
        if not 1 <= self.replicas <= MAX_REPLICAS:
            raise ConfigError(f"replicas={self.replicas} is out of range 1..{MAX_REPLICAS}")
        if self.log_size < 1 or self.max_records < 1:
            raise ConfigError("log_size and max_records must be at least 1")
        if self.max_leader_epoch < 0:
            raise ConfigError(f"max_leader_epoch={self.max_leader_epoch} must not be negative")
        invariants = self.invariants
        if isinstance(invariants, str) or not isinstance(invariants, (list, tuple)):
            raise ConfigError(f"invariants must be a list of names, got {invariants!r}")
        object.__setattr__(self, "invariants", tuple(invariants))
        unknown = [name for name in self.invariants if name not in INVARIANTS]
        if unknown or not self.invariants:
            raise ConfigError(f"unknown invariant {', '.join(unknown) or '(none given)'}; "
                              f"choose from {', '.join(INVARIANTS)}")

    def as_dict(self) -> dict:
        d = asdict(self)
        d["invariants"] = list(self.invariants)
        return d

    @classmethod
    def from_dict(cls, data: dict) -> "Config":
        return config_from_mapping(cls, data)


class Model:
    """KafkaReplication.tla under one of its variant modules (``cfg.mode``)."""

    family = FAMILY
    # the optional pieces of the Model protocol (spec/protocol.py) this family has
    rename = staticmethod(renaming.rename)
    symmetry_keys = staticmethod(renaming.symmetry_keys)
    itf_vars = ["replicaLog", "replicaState", "nextRecordId", "nextLeaderEpoch",
                "leaderAndIsrRequests", "quorumState"]

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.rules = None   # the DESIGN model's Rules; nothing here
        self.k = Constants(cfg.replicas, cfg.log_size, cfg.max_records, cfg.max_leader_epoch)
        self._next = NEXT[cfg.mode]
        self.invariants: Tuple[Tuple[str, Callable[[State], bool]], ...] = tuple(
            (name, _bind(INVARIANTS[name], self.k)) for name in cfg.invariants)

    def init_states(self) -> List[State]:
        return [initial_state(self.cfg.replicas, self.cfg.log_size)]

    def successors(self, s: State) -> Iterator[Tuple[tuple, State]]:
        k = self.k
        for action in self._next:
            yield from action(s, k)

    def step(self, s: State, label: tuple):
        """The successor the labelled action reaches, or None if it is not enabled."""
        for got, t in self.successors(s):
            if got == label:
                return t
        return None

    def violated(self, s: State) -> List[str]:
        return [name for name, pred in self.invariants if not pred(s)]

    # ------------------------------------------------------------ labels
    @staticmethod
    def format_label(label: tuple) -> str:
        kinds = ARGS.get(label[0], "r" * (len(label) - 1))
        return f"{label[0]}({','.join(f'{k}{a}' for k, a in zip(kinds, label[1:]))})"

    def parse_label(self, text: str) -> tuple:
        m = _LABEL.match(text.strip()) if isinstance(text, str) else None
        if not m:
            raise ConfigError(f"malformed action label {text!r}")
        name, tokens = m.group(1), m.group(2).split(",") if m.group(2) else []
        if name not in ARGS:
            raise ConfigError(f"unknown action {name!r}")
        kinds = "".join(t[0] for t in tokens)
        if kinds != ARGS[name]:
            raise ConfigError(f"action {text!r}: {name} takes ({','.join(ARGS[name])})")
        args = tuple(int(t[1:]) for t in tokens)
        if any(a >= self.cfg.replicas for a, kind in zip(args, kinds) if kind == "r"):
            raise ConfigError(f"action {text!r} names the wrong replicas for {self.cfg.replicas} replicas")
        return (name,) + args

    # ------------------------------------------------------------ encoding
    def to_json(self, s: State) -> dict:
        """The six TLA+ variables as ITF JSON: functions over replicas as objects keyed r0..,
        sets as ``#set``, ``None`` as null, ``Nil`` as -1."""
        names = [f"r{r}" for r in range(self.cfg.replicas)]

        def who(r):
            return names[r] if r != NONE else None

        def isr(mask):
            return {"#set": [names[r] for r in members(mask)]}

        def quorum(q):
            return {"leaderEpoch": q.leader_epoch, "leader": who(q.leader), "isr": isr(q.isr)}

        return {
            "replicaLog": {names[r]: {"endOffset": len(log), "records": [{"id": i, "epoch": e} for i, e in log]}
                           for r, log in enumerate(s.replica_log)},
            "replicaState": {names[r]: {"hw": rs.hw, "leaderEpoch": rs.leader_epoch, "leader": who(rs.leader),
                                        "isr": isr(rs.isr)} for r, rs in enumerate(s.replica_state)},
            "nextRecordId": s.next_record_id,
            "nextLeaderEpoch": s.next_leader_epoch,
            "leaderAndIsrRequests": {"#set": [quorum(q) for q in s.leader_and_isr_requests]},
            "quorumState": quorum(s.quorum_state),
        }


def _bind(pred, k):
    def check(s):
        return pred(s, k)
    check.__name__ = pred.__name__
    return check
