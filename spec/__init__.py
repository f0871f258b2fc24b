"""hwcheck.spec: the executable specification of Kafka's partition replication protocol.

Pure: no I/O and no engine code. Engines use ``Model`` only.
"""

from .config import Config, ConfigError, MODES
from .invariants import INVARIANT_NAMES
from .model import Model

__all__ = ["Config", "ConfigError", "INVARIANT_NAMES", "MODES", "Model"]
