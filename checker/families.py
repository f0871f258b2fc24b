"""Model families: which spec built a model, and a model from a family name and its config.

A trace records its family in ``#meta.hwcheck.model``; traces without it are of the DESIGN
model (``design``), so older traces replay unchanged.

>>> m = make_model("kafka-tla", {"mode": "kip279"})
>>> family_of(m), m.cfg.mode
('kafka-tla', 'kip279')
>>> family_of(make_model("design", {"mode": "hw"}))
'design'
"""

from __future__ import annotations

from hwcheck.spec import Config, ConfigError, Model
from hwcheck.spec import kafka_tla

DESIGN = "design"
FAMILIES = {DESIGN: (Config, Model), kafka_tla.FAMILY: (kafka_tla.Config, kafka_tla.Model)}


# a ceiling on every count knob (records, crashes, epochs, ...): far past any space that can be
# explored, low enough that building the initial state cannot overflow or exhaust memory
MAX_COUNT = 10_000


def out_of_bounds(cfg) -> str:
    """'' when every integer knob of ``cfg`` is at most MAX_COUNT, else a one-line reason.

    >>> out_of_bounds(Config(records=20000))
    'records=20000 is beyond the ceiling of 10000'
    """
    for name, value in cfg.as_dict().items():
        if isinstance(value, int) and not isinstance(value, bool) and value > MAX_COUNT:
            return f"{name}={value} is beyond the ceiling of {MAX_COUNT}"
    return ""


def family_of(model) -> str:
    return getattr(model, "family", DESIGN)


def make_model(family: str, config: dict):
    """The model of ``family`` under the settings ``config``; ConfigError names what is wrong."""
    if family not in FAMILIES:
        raise ConfigError(f"unknown model {family!r}; choose one of {', '.join(FAMILIES)}")
    config_cls, model_cls = FAMILIES[family]
    try:
        return model_cls(config_cls.from_dict(config))
    except TypeError as e:
        raise ConfigError(str(e)) from None
