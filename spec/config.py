"""The knobs of one model-checking run, validated once.

A ``Config`` is immutable and hashable; every engine and the ITF ``#meta`` carry it, so a
trace names exactly the settings it was found under.

>>> Config(mode="hw").replicas
2
>>> Config(mode="epoch", min_isr=3)
Traceback (most recent call last):
...
hwcheck.spec.config.ConfigError: min_isr=3 exceeds replicas=2

The mode is given by name (or ``epoch``, the newest) or as a :class:`~hwcheck.spec.modes.Mode`
(a variant, docs/variants.md), and resolved here, once: ``cfg.mode`` is then the mode's name (a
:class:`ModeName`, which is a str) and ``cfg.mode_definition`` the Mode the model runs. Nothing is
registered anywhere: the Mode travels with the Config (into ``dataclasses.replace``, a pickle,
a forked worker), while ``as_dict`` (ITF ``#meta``, checkpoints, ``--json``) records its name.

>>> from hwcheck.spec.modes import MODES as LADDER_MODES
>>> what_if = LADDER_MODES["kip380"].variant("what-if", expand_waits_for_epoch_start=False)
>>> cfg = Config(mode=what_if, records=1)
>>> cfg.mode, cfg.as_dict()["mode"], cfg.mode_definition is what_if
('what-if', 'what-if', True)
>>> from dataclasses import replace
>>> replace(cfg, records=2).mode_definition is what_if, replace(cfg, mode="hw").mode_definition.name
(True, 'hw')
>>> Config(mode="what-if")
Traceback (most recent call last):
...
hwcheck.spec.config.ConfigError: unknown mode 'what-if'; choose one of hw, kip101, kip279, kip320, kip380, kafka10706, kafka10554, kafka13141, kafka14704, kip903, kafka15583, kafka18991, kip966, kafka18991-4.0, kafka19522, pr20716 (or epoch, the newest)
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, fields
from typing import Optional, Tuple, Union

from .modes import ALIASES as MODE_ALIASES, DERIVED as _DERIVED, MODES as _MODES, Mode

MODES = tuple(_MODES)      # the ladder's names
ACKS = ("all", "1")
RESPONSE_HW = ("after", "before", "kafka")
MAX_REPLICAS = 5


# a ceiling on every count knob (records, crashes, epochs, ...): far past any space that can be
# explored, low enough that building the initial state cannot overflow or exhaust memory
MAX_COUNT = 10_000


class ConfigError(ValueError):
    """A knob is out of range or knobs contradict each other (one line, for the user).
    ``setting`` names the knob at fault where one is (``"mode"``: a mode that cannot be resolved)."""

    def __init__(self, message: str, setting: Optional[str] = None):
        super().__init__(message)
        self.setting = setting


class ModeName(str):
    """A Config's ``mode``: the mode's name, a str as every settings line, trace, file name and
    message uses it, that carries the Mode it names (``definition``), resolved once.

    Two ModeNames are equal when their names and their Modes are; a ModeName equals a plain str
    of its name. A mode of the ladder pickles by name, any other Mode by value (a mode file's
    functions: checker/variants.py)."""

    definition: Mode

    def __new__(cls, definition: Mode) -> "ModeName":
        name = super().__new__(cls, definition.name)
        name.definition = definition
        return name

    def __eq__(self, other):
        if isinstance(other, ModeName):
            return str.__eq__(self, other) and self.definition == other.definition
        return str.__eq__(self, other)

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = str.__hash__

    def __reduce__(self):
        if _MODES.get(str(self)) is self.definition:
            return _ladder_mode, (str(self),)
        return ModeName, (self.definition,)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def _ladder_mode(name: str) -> ModeName:
    return ModeName(_MODES[name])


def resolve_mode(mode: Union[str, Mode]) -> ModeName:
    """The one check of a mode: a name of spec/modes.py (or ``epoch``), or a Mode (a variant,
    whose name must not be a built-in mode's unless it is that mode); ConfigError (``setting``
    "mode") otherwise.

    >>> resolve_mode("epoch"), resolve_mode("epoch").definition.kafka
    ('pr20716', '4.3+ (KRaft)')
    >>> resolve_mode("kafka18991-zk").definition.kafka       # spec.modes.DERIVED: 3.9.1 on ZooKeeper
    '3.9.1 (ZooKeeper)'
    >>> resolve_mode("kip96")
    Traceback (most recent call last):
    ...
    hwcheck.spec.config.ConfigError: unknown mode 'kip96' (did you mean kip966?); choose one of hw, kip101, kip279, kip320, kip380, kafka10706, kafka10554, kafka13141, kafka14704, kip903, kafka15583, kafka18991, kip966, kafka18991-4.0, kafka19522, pr20716 (or epoch, the newest)
    """
    if isinstance(mode, ModeName):
        return mode
    if isinstance(mode, Mode):
        if not isinstance(mode.name, str) or not mode.name:
            raise ConfigError(f"a mode's name must be text, got {mode.name!r}", setting="mode")
        taken = _MODES.get(mode.name)
        if mode.name in MODE_ALIASES or (taken is not None and taken != mode):
            raise ConfigError(f"mode name {mode.name!r} is taken by a built-in mode; give the variant a name "
                              "of its own", setting="mode")
        return ModeName(mode)
    if not isinstance(mode, str):
        raise ConfigError(f"mode must be a name, got {mode!r}", setting="mode")
    name = MODE_ALIASES.get(mode, mode)
    if name in _DERIVED:            # a mode derived from a ladder mode (spec.modes.zookeeper), as a trace names it
        return ModeName(_DERIVED[name])
    if name not in _MODES:
        close = difflib.get_close_matches(mode, [*_MODES, *MODE_ALIASES], n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ConfigError(f"unknown mode {mode!r}{hint}; choose one of {', '.join(_MODES)} (or epoch, the newest)",
                          setting="mode")
    return ModeName(_MODES[name])


def config_from_mapping(cls, data: dict):
    """``cls(**data)`` for a Config dataclass, with unknown keys a ConfigError (ITF ``#meta``, gate
    entries): the one way every model family's Config reads a mapping."""
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(unknown)}")
    return cls(**data)


def check_counts(cfg, names) -> None:
    """Every named knob of ``cfg`` is an integer no larger than MAX_COUNT.

    >>> Config(records=20000)
    Traceback (most recent call last):
    ...
    hwcheck.spec.config.ConfigError: records=20000 is beyond the ceiling of 10000
    """
    for name in names:
        value = getattr(cfg, name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"{name} must be an integer, got {value!r}")
        if value > MAX_COUNT:
            raise ConfigError(f"{name}={value} is beyond the ceiling of {MAX_COUNT}")


@dataclass(frozen=True)
class Config:
    mode: Union[str, Mode] = "epoch"     # a name (epoch: the newest) or a Mode; resolved to a ModeName
    replicas: int = 2
    records: int = 2
    crashes: int = 2
    power_failures: int = 0
    disk_losses: int = 0
    max_epoch: int = 3
    min_isr: int = 1
    acks: str = "all"
    unclean_election: bool = False
    response_hw: str = "after"
    follower_reads: bool = False

    def __post_init__(self) -> None:
        mode = resolve_mode(self.mode)
        object.__setattr__(self, "mode", mode)
        check_counts(self, ("replicas", "records", "crashes", "power_failures", "disk_losses", "max_epoch", "min_isr"))
        if not 1 <= self.replicas <= MAX_REPLICAS:
            raise ConfigError(f"replicas={self.replicas} is out of range 1..{MAX_REPLICAS}")
        if self.records < 1:
            raise ConfigError(f"records={self.records} must be at least 1")
        if self.crashes < 0 or self.power_failures < 0 or self.disk_losses < 0:
            raise ConfigError("crashes, power_failures and disk_losses must not be negative")
        if self.max_epoch < 0:
            raise ConfigError(f"max_epoch={self.max_epoch} must not be negative")
        if self.min_isr < 1:
            raise ConfigError(f"min_isr={self.min_isr} must be at least 1")
        if self.min_isr > self.replicas:
            raise ConfigError(f"min_isr={self.min_isr} exceeds replicas={self.replicas}")
        if self.acks not in ACKS:
            raise ConfigError(f"acks={self.acks!r} must be one of {', '.join(ACKS)}")
        if self.response_hw not in RESPONSE_HW:
            raise ConfigError(f"response_hw={self.response_hw!r} must be one of {', '.join(RESPONSE_HW)}")
        for knob in ("unclean_election", "follower_reads"):
            if not isinstance(getattr(self, knob), bool):
                raise ConfigError(f"{knob} must be true or false, got {getattr(self, knob)!r}")
        if self.follower_reads and not mode.definition.follower_reads:
            raise ConfigError(f"follower_reads: mode {mode} ({mode.definition.kafka}) predates reads from "
                              "followers (KIP-392, 2.4)")

    def rules_out(self) -> Tuple[str, ...]:
        """What these bounds leave out altogether, for a run to say beside its verdict (a "holds"
        then says nothing about it).

        >>> Config(max_epoch=0).rules_out()
        ('no leader election (max_epoch=0): r0 leads throughout',)
        """
        out = []
        if self.max_epoch == 0:
            out.append("no leader election (max_epoch=0): r0 leads throughout")
        if self.replicas == 1:
            out.append("no replication (replicas=1): no follower, no fetch")
        if self.crashes == self.power_failures == self.disk_losses == 0:
            out.append("no fault (crashes, power failures and disk losses all 0)")
        return tuple(out)

    @property
    def mode_definition(self) -> Mode:
        """The Mode the run follows: the one ``mode`` names, or the variant it was given as."""
        return self.mode.definition

    def as_dict(self) -> dict:
        """The knobs as plain data, the mode by its name."""
        return {**asdict(self), "mode": str(self.mode)}

    @classmethod
    def from_dict(cls, data: dict) -> "Config":
        """Build a Config from a mapping (ITF ``#meta``, a gate entry); unknown keys are an error."""
        return config_from_mapping(cls, data)
