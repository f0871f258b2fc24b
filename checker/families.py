"""Model families: which spec built a model, and a model from a family name and its config.

A trace records its family in ``#meta.hwcheck.model``; traces without it are of the DESIGN
model (``design``), so older traces replay unchanged.

>>> m = make_model("kafka-tla", {"mode": "kip279"})
>>> family_of(m), m.cfg.mode
('kafka-tla', 'kip279')
>>> family_of(make_model("design", {"mode": "hw"}))
'design'
>>> family_of(model_of(kafka_tla.Config(mode="kip320")))
'kafka-tla'
"""

from __future__ import annotations

from hwcheck.spec import Config, ConfigError, Model
from hwcheck.spec import kafka_tla

DESIGN = "design"
FAMILIES = {DESIGN: (Config, Model), kafka_tla.FAMILY: (kafka_tla.Config, kafka_tla.Model)}


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


def model_of(config):
    """The model of a Config of either family."""
    for config_cls, model_cls in FAMILIES.values():
        if isinstance(config, config_cls):
            return model_cls(config)
    raise ConfigError(f"not the settings of a model family: {config!r}")
