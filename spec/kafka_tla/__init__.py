"""A second model family: the Kafka community's TLA+ replication spec (KafkaReplication.tla and
its variants, github.com/hachikuji/kafka-specification, Apache-2.0), ported to the Model interface.

>>> from hwcheck.spec.kafka_tla import Config, Model
>>> Model(Config(mode="kip279")).cfg.log_size
2
"""

from .model import FAMILY, MODES, MODULES, Config, Model

__all__ = ["FAMILY", "MODES", "MODULES", "Config", "Model"]
