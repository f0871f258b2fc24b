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
>>> release("3.5").version, release("3.5.2").mode, release("3.5.2").metadata
('3.5.2', 'kafka14704', 'zookeeper')
>>> release("3.5.1")
Traceback (most recent call last):
...
hwcheck.spec.releases.UnknownRelease: Kafka 3.5.1 is not in the releases table (its mode, kafka14704, is pinned at 3.5.2); the table has 0.10.2.1, 0.11.0.3, 1.1.1, 2.0.0, 2.1.1, 2.6.0, 2.7.2, 2.8.0, 2.8.1, 3.4.0, 3.5.2, 3.6.2, 3.7.2, 3.9.0, 3.9.1, 4.0.0, 4.0.1, 4.1.1, 4.2.0, 4.4.0
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
# (and the release before a fix where a row pair shows the fix). Releases not pinned: 1.0.x and
# 1.1.0 (kip101's range), 2.2-2.5, 2.9 does not exist, 3.0-3.3 (kafka13141's range), 3.4.1-3.5.1
# (kafka14704's, pinned at 3.5.2), and 3.6-3.9 on ZooKeeper: a 3.6+ row is a KRaft cluster, and on
# ZooKeeper the release follows spec.modes.zookeeper of its mode (kip903-zk for 3.6, kafka15583-zk
# for 3.7-3.9.0, kafka18991-zk after), which `--zookeeper` runs and no row pins (the version would
# need a second row). A 4.x row's mode is the one with ELR on; with ELR off (4.0's default, a 4.1+
# cluster upgraded from 3.x) it follows spec.modes.without_elr of it: kafka15583 for 4.0.0,
# kafka18991 after.
RELEASES: Tuple[Release, ...] = (
    Release("0.10.2.1", "hw", ZOOKEEPER, ELR_NONE, "2.12", "3.4.9"),
    Release("0.11.0.3", "kip101", ZOOKEEPER, ELR_NONE, "2.12", "3.4.10"),
    Release("1.1.1", "kip101", ZOOKEEPER, ELR_NONE, "2.12", "3.4.10"),      # KAFKA-6361 before its fix
    Release("2.0.0", "kip279", ZOOKEEPER, ELR_NONE, "2.12", "3.4.13"),
    Release("2.1.1", "kip320", ZOOKEEPER, ELR_NONE, "2.12", "3.4.13"),
    Release("2.6.0", "kip380", ZOOKEEPER, ELR_NONE, "2.13", "3.5.8"),
    Release("2.7.2", "kafka10706", ZOOKEEPER, ELR_NONE, "2.13", "3.5.9"),
    Release("2.8.0", "kafka10554", ZOOKEEPER, ELR_NONE, "2.13", "3.5.9"),
    Release("2.8.1", "kafka13141", ZOOKEEPER, ELR_NONE, "2.13", "3.5.9"),
    Release("3.4.0", "kafka13141", ZOOKEEPER, ELR_NONE, "2.13", "3.6.3"),
    Release("3.5.2", "kafka14704", ZOOKEEPER, ELR_NONE, "2.13", "3.6.4"),
    Release("3.6.2", "kip903", KRAFT, ELR_NONE, "2.13"),
    Release("3.7.2", "kafka15583", KRAFT, ELR_NONE, "2.13"),
    Release("3.9.0", "kafka15583", KRAFT, ELR_OFF, "2.13"),
    Release("3.9.1", "kafka18991", KRAFT, ELR_OFF, "2.13"),
    Release("4.0.0", "kip966", KRAFT, ELR_OFF, "2.13"),
    Release("4.0.1", "kafka18991-4.0", KRAFT, ELR_OFF, "2.13"),   # still KAFKA-19522 (canElectLastKnownLeader @4.0.1)
    Release("4.1.1", "kafka19522", KRAFT, ELR_ON, "2.13"),
    Release("4.2.0", "kafka19522", KRAFT, ELR_ON, "2.13"),
    Release("4.4.0", "pr20716", KRAFT, ELR_ON, "2.13"),
)



# the ZooKeeper server the 3.6-3.9 rows' broker artifacts depend on (their POMs: 3.6.2, 3.7.2, 3.9.0,
# 3.9.1), which the harness runs from the release's own jars
ZOOKEEPER_OF_KRAFT_ROWS = "3.8.4"


def on_zookeeper(rel: Release) -> Release:
    """A KRaft row of 3.6-3.9 run as a ZooKeeper cluster (``hwcheck reproduce --zookeeper``): its
    mode is ``spec.modes.zookeeper`` of the row's, by name (``kafka15583-zk`` for 3.9.0); a
    ZooKeeper row is returned as it is. UnknownRelease for 4.x, which has no ZooKeeper mode.

    >>> on_zookeeper(release("3.9.0"))
    Release(version='3.9.0', mode='kafka15583-zk', metadata='zookeeper', elr='none', scala='2.13', zookeeper='3.8.4')
    >>> on_zookeeper(release("3.4.0")) == release("3.4.0")
    True
    """
    if rel.metadata == ZOOKEEPER:
        return rel
    return rel._replace(mode=mode_for(rel.version, zookeeper=True)[0], metadata=ZOOKEEPER, elr=ELR_NONE,
                        zookeeper=ZOOKEEPER_OF_KRAFT_ROWS)


class Line(NamedTuple):
    """The releases one mode covers, first to last (``Mode.kafka`` as versions), and where their
    metadata lives."""
    first: str
    last: str
    mode: str
    metadata: str


# every release range a mode covers, oldest first; between them, what no mode covers (GAPS). The
# newest release read is 4.4.0 (docs/model.md lists the methods compared release by release).
LINES: Tuple[Line, ...] = (
    Line("0.10.0.0", "0.10.2.2", "hw", ZOOKEEPER),
    Line("0.11.0.0", "1.1.1", "kip101", ZOOKEEPER),
    Line("2.0.0", "2.0.0", "kip279", ZOOKEEPER),
    Line("2.1.0", "2.1.1", "kip320", ZOOKEEPER),
    Line("2.2.0", "2.6.0", "kip380", ZOOKEEPER),
    Line("2.6.1", "2.7.2", "kafka10706", ZOOKEEPER),
    Line("2.8.0", "2.8.0", "kafka10554", ZOOKEEPER),
    Line("2.8.1", "3.4.0", "kafka13141", ZOOKEEPER),
    Line("3.4.1", "3.5.2", "kafka14704", ZOOKEEPER),
    Line("3.6.0", "3.6.2", "kip903", KRAFT),
    Line("3.7.0", "3.9.0", "kafka15583", KRAFT),
    Line("3.9.1", "3.9.2", "kafka18991", KRAFT),
    Line("4.0.0", "4.0.0", "kip966", KRAFT),
    Line("4.0.1", "4.0.2", "kafka18991-4.0", KRAFT),
    Line("4.1.1", "4.2.2", "kafka19522", KRAFT),
    Line("4.3.0", "4.4.0", "pr20716", KRAFT),
)
GAPS = (
    ("4.1.0", "4.1.0", "4.1.0 has KAFKA-19522's fix but records the last known leader as 4.0 does "
     "(PartitionChangeBuilder.maybeUpdateLastKnownLeader @4.1.0); 4.1.1 changed that"),
    ("2.0.1", "2.0.1", "2.0.1 already has 2.1's KAFKA-7415, KAFKA-7128 and KAFKA-7164 but not KIP-320's fencing"),
)
# ZooKeeper was removed in 4.0 (KIP-833): --zookeeper covers 3.x only
ZOOKEEPER_UNTIL = "3.9.99"
# a cluster formatted at 4.1+ has ELR on (its bootstrap metadata version is 4.1-IV0 or later); 4.0
# formats without it, and a cluster upgraded from 3.x keeps its bootstrap version
ELR_DEFAULT_FROM = "4.1.0"


class Covered(NamedTuple):
    mode: str       # the mode that covers the release
    version: str    # the exact release ("3.9" read as the newest 3.9.x of the releases table)
    note: str       # what the mode stands for there, in one line


def covering(version: str) -> Covered:
    """The mode whose release range covers a Kafka version; a line ("3.9", "4") means the newest
    release of it that a mode covers. A 3.6-3.9 line is KRaft's here (``mode_for`` with ``zookeeper``
    for a ZooKeeper cluster); 3.5 and older are ZooKeeper's. UnknownRelease, naming the nearest modes
    and what differs, where no mode covers it.

    >>> covering("3.9")
    Covered(mode='kafka18991', version='3.9.2', note='Kafka 3.9.2, KRaft (--zookeeper for a ZooKeeper cluster)')
    >>> covering("3.3.2").note
    'Kafka 3.3.2, ZooKeeper (the model has no KRaft mode before 3.6)'
    >>> covering("2.6").mode, covering("2.6.0").mode, covering("3.5.1").mode, covering("3.4").version
    ('kafka10706', 'kip380', 'kafka14704', '3.4.x')
    >>> covering("2.0.1")
    Traceback (most recent call last):
    ...
    hwcheck.spec.releases.UnknownRelease: no mode covers Kafka 2.0.1: 2.0.1 already has 2.1's KAFKA-7415, KAFKA-7128 and KAFKA-7164 but not KIP-320's fencing; the nearest modes are kip279 (to 2.0.0) and kip320 (from 2.1.0)
    """
    version = _checked(version)
    key = version_key(version)
    exact = len(key) >= 3
    width = len(key) if not exact else None
    lines = [line for line in LINES
             if version_key(line.first)[:width] <= key <= version_key(line.last)[:width]]
    if lines:
        line = lines[-1]
        if not exact:
            version = line.last if version_key(line.last)[:width] == key else f"{version}.x"
        kafka = f"Kafka {version}, {'ZooKeeper' if line.metadata == ZOOKEEPER else 'KRaft'}"
        if line.metadata == ZOOKEEPER and key >= (3, 0):
            kafka += " (the model has no KRaft mode before 3.6)"
        elif line.metadata == KRAFT and key < (4,):
            kafka += " (--zookeeper for a ZooKeeper cluster)"
        return Covered(line.mode, version, kafka)
    below = [line for line in LINES if version_key(line.last) < key]
    above = [line for line in LINES if version_key(line.first) > key]
    why = next((text for low, high, text in GAPS if version_key(low) <= key <= version_key(high)),
               "newer than the newest release read (4.4.0)" if not above else
               "older than the oldest mode" if not below else "no mode covers it")
    near = ([f"{below[-1].mode} (to {below[-1].last})"] if below else []) + \
           ([f"{above[0].mode} (from {above[0].first})"] if above else [])
    raise UnknownRelease(f"no mode covers Kafka {version}: {why}; the nearest mode{'s are' if len(near) > 1 else ' is'} "
                         + " and ".join(near))


def mode_for(version: str, elr: Optional[bool] = None, zookeeper: bool = False) -> Tuple[str, str]:
    """``(mode, note)`` for ``--kafka VERSION``: the covering mode, with the ELR feature as the
    release formats a cluster (off in 4.0, on from 4.1) unless ``elr`` says otherwise; with ELR off a
    4.x mode follows ``spec.modes.without_elr`` of it. With ``zookeeper`` (3.x only) a KRaft line's
    mode follows ``spec.modes.zookeeper`` of it, returned by name (a derived mode's name resolves:
    ``spec.modes.DERIVED``). UnknownRelease where none applies.

    >>> mode_for("4.0"), mode_for("4.0", elr=True)[0], mode_for("4.1")[0], mode_for("4.1.1", elr=False)[0]
    (('kafka18991', 'Kafka 4.0.2, KRaft, ELR off (4.0 formats without it; --elr for kafka18991-4.0)'), 'kafka18991-4.0', 'kafka19522', 'kafka18991')
    >>> mode_for("3.9", zookeeper=True)
    ('kafka18991-zk', 'Kafka 3.9.2, ZooKeeper (--zookeeper: kafka18991 without its KRaft-only rules)')
    >>> mode_for("3.6.2", zookeeper=True)[0], mode_for("3.5.1", zookeeper=True)[0], mode_for("3.7.1", zookeeper=True)[0]
    ('kip903-zk', 'kafka14704', 'kafka15583-zk')
    >>> mode_for("4.1", zookeeper=True)
    Traceback (most recent call last):
    ...
    hwcheck.spec.releases.UnknownRelease: --zookeeper: Kafka 4.1 has no ZooKeeper mode (4.0 removed it, KIP-833); ZooKeeper clusters run 3.9.x and older
    """
    from .modes import MODES, without_elr, zookeeper as zookeeper_of
    name, exact, note = covering(version)
    mode = MODES[name]
    if zookeeper:
        if version_key(exact.replace(".x", ".0")) > version_key(ZOOKEEPER_UNTIL):
            raise UnknownRelease(f"--zookeeper: Kafka {version.strip()} has no ZooKeeper mode (4.0 removed it, KIP-833); "
                                 "ZooKeeper clusters run 3.9.x and older")
        zk = zookeeper_of(mode)
        if zk is None:
            return name, note
        return zk.name, f"Kafka {exact}, ZooKeeper (--zookeeper: {name} without its KRaft-only rules)"
    if not mode.elr:
        if elr:
            raise UnknownRelease(f"--elr: the model has no mode for Kafka {exact} with Eligible Leader Replicas "
                                 "(its ELR modes start at 4.0.0)")
        return name, note
    default = version_key(exact.replace(".x", ".0")) >= version_key(ELR_DEFAULT_FROM)
    on = default if elr is None else elr
    if on:
        return name, note + (", ELR on (a cluster formatted at 4.1+; --no-elr for one upgraded from 3.x)"
                             if default else ", ELR on (--elr)")
    off = without_elr(mode).name
    return off, note + (f", ELR off (--no-elr; {name} with ELR)" if default else
                        f", ELR off (4.0 formats without it; --elr for {name})")


class UnknownRelease(ValueError):
    """A version the table has no row for (the message lists what it has)."""


def releases_of(mode: str) -> Tuple[Release, ...]:
    """The pinned releases of a mode, oldest first."""
    return tuple(r for r in RELEASES if r.mode == mode)


def newest_of(mode: str) -> Optional[Release]:
    rows = releases_of(mode)
    return rows[-1] if rows else None


def _checked(version: str) -> str:
    """A version as given, stripped; UnknownRelease if it is not one ("3.9.1", "3.9", "4")."""
    version = version.strip()
    if not version or not all(p.isdigit() for p in version.split(".")):
        raise UnknownRelease(f"{version!r} is not a Kafka version (e.g. 3.9.1, or 3.9 for the newest 3.9.x)")
    return version


def release(version: str) -> Release:
    """The row for an exact version ("3.9.1") or the newest row of a line ("3.9", "4")."""
    version = _checked(version)
    for r in RELEASES:
        if r.version == version:
            return r
    prefix = version_key(version)
    if len(prefix) < 3:
        line = [r for r in RELEASES if r.key()[:len(prefix)] == prefix]
        if line:
            return line[-1]
    why = ""
    try:
        pinned = newest_of(covering(version).mode)
        if pinned is not None:
            why = f" (its mode, {pinned.mode}, is pinned at {pinned.version})"
    except UnknownRelease:
        pass
    have = ", ".join(r.version for r in RELEASES)
    raise UnknownRelease(f"Kafka {version} is not in the releases table{why}; the table has {have}")
