"""Kafka releases pinned to modes: the exact versions a mode stands for, and how to run one.

Each mode (spec/modes.py) is a release range; this table names the exact releases inside it that
``hwcheck reproduce`` runs on a real cluster, ``hwcheck modes`` lists, and ``--kafka`` picks. A row
says where the release's metadata lives (ZooKeeper or KRaft), whether Eligible Leader Replicas
(KIP-966) exist there and are on by default, and the Maven coordinates of its broker. A version no
row covers is refused with the versions the table has, never guessed.

>>> release("4.1.1").mode, release("4.1").version, release("3.9").version
('kafka19522', '4.1.1', '3.9.1')
>>> [r.version for r in releases_of("kafka15583")]
['3.7.2', '3.9.0']
>>> release("3.5.1")
Traceback (most recent call last):
...
hwcheck.spec.releases.UnknownRelease: Kafka 3.5.1 is not in the releases table (3.4.1-3.5.x: no mode covers it yet); the table has 0.10.2.1, 0.11.0.3, 2.0.0, 2.1.1, 2.6.0, 2.7.2, 2.8.0, 2.8.1, 3.4.0, 3.6.2, 3.7.2, 3.9.0, 3.9.1, 4.0.0, 4.0.1, 4.1.1, 4.2.0, 4.4.0
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Tuple

ZOOKEEPER, KRAFT = "zookeeper", "kraft"
# ELR (KIP-966): absent from the release; present, off unless the feature is set at format; on
ELR_NONE, ELR_OFF, ELR_ON = "none", "off", "on"


class Release(NamedTuple):
    version: str          # the exact Kafka release, e.g. "3.9.1"
    mode: str             # the mode whose rules it follows (spec/modes.py)
    metadata: str         # ZOOKEEPER or KRAFT
    elr: str              # ELR_NONE / ELR_OFF (can be enabled: eligible.leader.replicas.version=1) / ELR_ON
    scala: str            # the Scala suffix of its broker artifact on Maven Central (kafka_<scala>)
    zookeeper: str = ""   # the ZooKeeper server it runs with (ZooKeeper mode only)

    @property
    def coordinate(self) -> str:
        """The broker's Maven coordinate.

        >>> release("2.6.0").coordinate
        'org.apache.kafka:kafka_2.13:2.6.0'
        """
        return f"org.apache.kafka:kafka_{self.scala}:{self.version}"

    @property
    def elr_default(self) -> bool:
        """Whether a cluster formatted at this release has ELR on without being asked (4.1+)."""
        return self.elr == ELR_ON

    def key(self) -> Tuple[int, ...]:
        return version_key(self.version)


def version_key(version: str) -> Tuple[int, ...]:
    """A version as a tuple of ints for ordering.

    >>> version_key("3.9.1") < version_key("3.10.0")
    True
    """
    return tuple(int(p) for p in version.split("."))


# One row per exact release. Each mode gets its newest patch release that still follows its rules
# (and the release before a fix where a row pair shows the fix). Releases no mode covers:
# 1.0-1.1 (kip101's range, not pinned), 2.2-2.5, 2.9 does not exist, 3.0-3.3 (kafka13141's range, not
# pinned), 3.4.1-3.5.x (KAFKA-14704's fix without KIP-903's epochs: no mode), ZooKeeper mode past 3.4
# (no mode). A 4.x row's mode is the one with ELR on; with ELR off (4.0's default, a 4.1+ cluster
# upgraded from 3.x) it follows spec.modes.without_elr of it: kafka15583 for 4.0.0, kafka18991 after.
RELEASES: Tuple[Release, ...] = (
    Release("0.10.2.1", "hw", ZOOKEEPER, ELR_NONE, "2.12", "3.4.9"),
    Release("0.11.0.3", "kip101", ZOOKEEPER, ELR_NONE, "2.12", "3.4.10"),
    Release("2.0.0", "kip279", ZOOKEEPER, ELR_NONE, "2.12", "3.4.13"),
    Release("2.1.1", "kip320", ZOOKEEPER, ELR_NONE, "2.12", "3.4.13"),
    Release("2.6.0", "kip380", ZOOKEEPER, ELR_NONE, "2.13", "3.5.8"),
    Release("2.7.2", "kafka10706", ZOOKEEPER, ELR_NONE, "2.13", "3.5.9"),
    Release("2.8.0", "kafka10554", ZOOKEEPER, ELR_NONE, "2.13", "3.5.9"),
    Release("2.8.1", "kafka13141", ZOOKEEPER, ELR_NONE, "2.13", "3.5.9"),
    Release("3.4.0", "kafka13141", ZOOKEEPER, ELR_NONE, "2.13", "3.6.3"),
    Release("3.6.2", "kip903", KRAFT, ELR_NONE, "2.13"),
    Release("3.7.2", "kafka15583", KRAFT, ELR_NONE, "2.13"),
    Release("3.9.0", "kafka15583", KRAFT, ELR_OFF, "2.13"),
    Release("3.9.1", "kafka18991", KRAFT, ELR_OFF, "2.13"),
    Release("4.0.0", "kip966", KRAFT, ELR_OFF, "2.13"),
    Release("4.0.1", "kafka18991-4.0", KRAFT, ELR_OFF, "2.13"),   # still KAFKA-19522 (canElectLastKnownLeader @4.0.1)
    Release("4.1.1", "kafka19522", KRAFT, ELR_ON, "2.13"),
    Release("4.2.0", "kafka19522", KRAFT, ELR_ON, "2.13"),
    Release("4.4.0", "kafka19522", KRAFT, ELR_ON, "2.13"),
)

# ranges known to have no mode, for the refusal's wording
_UNCOVERED = (("3.4.1", "3.5.99", "3.4.1-3.5.x: no mode covers it yet"),)


class UnknownRelease(ValueError):
    """A version the table has no row for (the message lists what it has)."""


def releases_of(mode: str) -> Tuple[Release, ...]:
    """The pinned releases of a mode, oldest first."""
    return tuple(r for r in RELEASES if r.mode == mode)


def newest_of(mode: str) -> Optional[Release]:
    rows = releases_of(mode)
    return rows[-1] if rows else None


def release(version: str) -> Release:
    """The row for an exact version ("3.9.1") or the newest row of a line ("3.9", "4")."""
    version = version.strip()
    if not version or not all(p.isdigit() for p in version.split(".")):
        raise UnknownRelease(f"{version!r} is not a Kafka version (e.g. 3.9.1, or 3.9 for the newest 3.9.x)")
    for r in RELEASES:
        if r.version == version:
            return r
    prefix = version_key(version)
    if len(prefix) < 3:
        line = [r for r in RELEASES if r.key()[:len(prefix)] == prefix]
        if line:
            return line[-1]
    why = ""
    for low, high, text in _UNCOVERED:
        if version_key(low) <= prefix <= version_key(high):
            why = f" ({text})"
    have = ", ".join(r.version for r in RELEASES)
    raise UnknownRelease(f"Kafka {version} is not in the releases table{why}; the table has {have}")
