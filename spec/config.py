"""The knobs of one model-checking run, validated once.

A ``Config`` is immutable and hashable; every engine and the ITF ``#meta`` carry it, so a
trace names exactly the settings it was found under.

>>> Config(mode="hw").replicas
2
>>> Config(mode="epoch", min_isr=3)
Traceback (most recent call last):
...
hwcheck.spec.config.ConfigError: min_isr=3 exceeds replicas=2
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from .modes import ALIASES as MODE_ALIASES, MODES as _MODES

MODES = tuple(_MODES)      # the ladder's names (a registered variant is accepted too)
ACKS = ("all", "1")
RESPONSE_HW = ("after", "before")
MAX_REPLICAS = 5


# a ceiling on every count knob (records, crashes, epochs, ...): far past any space that can be
# explored, low enough that building the initial state cannot overflow or exhaust memory
MAX_COUNT = 10_000


class ConfigError(ValueError):
    """A knob is out of range or knobs contradict each other (one line, for the user)."""


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
    mode: str = "epoch"        # the alias of the newest mode
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
        if not isinstance(self.mode, str):
            raise ConfigError(f"mode must be a name, got {self.mode!r}")
        mode = MODE_ALIASES.get(self.mode, self.mode)
        object.__setattr__(self, "mode", mode)
        if mode not in _MODES:
            raise ConfigError(f"unknown mode {self.mode!r}; choose one of {', '.join(_MODES)} (or epoch, the newest)")
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
        if self.follower_reads and not _MODES[mode].follower_reads:
            raise ConfigError(f"follower_reads: mode {mode} ({_MODES[mode].kafka}) predates reads from "
                              "followers (KIP-392, 2.4)")

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Config":
        """Build a Config from a mapping (ITF ``#meta``, a gate entry); unknown keys are an error."""
        return config_from_mapping(cls, data)
