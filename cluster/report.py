"""What a reproduction prints: the step table (the model's state beside the cluster's at every
checkpoint) and the reproductions table of pyproject.toml (``[tool.hwcheck.reproduce.NAME]``)."""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional, Tuple

from hwcheck.spec.releases import UnknownRelease, release
from hwcheck.spec.state import UNDEFINED, members

from .observe import ReplicaView, render_controller, render_replica


def model_replica(rep) -> str:
    """A model replica drawn exactly as render_replica draws a real one."""
    return render_replica(ReplicaView(bool(rep.alive), False, tuple(rep.log), rep.hw))


def model_controller(c, n: int, elr: bool) -> str:
    who = "none" if c.leader == UNDEFINED else f"r{c.leader}"
    names = lambda mask: ",".join(f"r{r}" for r in members(mask, n)) or "·"
    text = f"{who} e{c.epoch} isr={names(c.isr)}"
    if elr:
        text += f" elr={names(c.elr)} lke={names(c.last_known_elr)}"
    return text


def _acks(acked: Dict[int, int]) -> str:
    return ",".join(f"{r}@{o}" for r, o in sorted(acked.items())) or "·"


def step_table(outcome) -> str:
    """Two lines per checkpoint: the model's state, then Kafka's; ``!=`` marks a difference."""
    from .observe import model_acked
    n = len(outcome.prediction.states[0].replicas)
    elr = any(r.view is not None and r.view.elr is not None for r in outcome.rows)
    header = ["step", "action", "side"] + [f"r{r}" for r in range(n)] + ["controller", "acked", ""]
    rows: List[List[str]] = []
    kafka = f"kafka {outcome.release.version}"
    for row in outcome.rows:
        if row.model is not None and row.view is None:
            continue                              # an awaited step between checkpoints
        if row.model is not None:
            s = row.model
            rows.append([str(row.index), row.label, f"model {outcome.prediction.mode}"]
                        + [model_replica(rep) for rep in s.replicas]
                        + [model_controller(s.controller, n, elr), _acks(model_acked(s)), ""])
        v = row.view
        note = ("!= " + "; ".join(row.differences)) if row.differences else (
            "ahead by " + ", ".join(row.ahead) if row.ahead else "")
        rows.append(["" if row.model is not None else str(row.index), "" if row.model is not None else row.label,
                     kafka] + [render_replica(r) for r in v.replicas] + [render_controller(v), _acks(v.acked), note])
    widths = [max(len(r[c]) for r in [header] + rows) for c in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in [header] + rows]
    lines.insert(1, "  ".join("-" * w for w in widths).rstrip())
    return "\n".join(lines)


class Reproduction(NamedTuple):
    name: str
    trace: str
    expect: Dict[str, str]          # exact release -> what its cluster does: "violated" or "kept"
    elr: object = None              # True/False/None (the mode decides)
    # exact release -> the first step where the cluster is known to part from the model (a finding
    # written up in docs/results.md "Real clusters"); every other release must agree throughout
    disagrees: Dict[str, int] = {}
    proxy: object = None            # True: the fetch path through the replication proxy; None: where needed
    # exact release -> what its cluster does when a replaced disk's new directory reaches the
    # controller before the broker's unfencing (the race's other order, Outcome.assigned_first):
    # then the cluster takes the model's path and agrees with it throughout
    assigned_first: Dict[str, str] = {}
    zookeeper: bool = False         # run a 3.x KRaft row's release on ZooKeeper (spec.releases.on_zookeeper)

    def release(self, version: str):
        """The cluster the row runs for ``version``: the releases table's, or on ZooKeeper.

        >>> parse_reproductions({"x": {"trace": "t", "expect": {"3.9.0": "kept"}, "zookeeper": True}})[0].release("3.9.0").metadata
        'zookeeper'
        """
        from hwcheck.spec.releases import on_zookeeper
        rel = release(version)
        return on_zookeeper(rel) if self.zookeeper else rel

    def expected(self, version: str, assigned_first: Optional[bool] = None) -> Tuple[str, Optional[int]]:
        """What the row expects of ``version``'s cluster: its outcome, and the step from which it
        parts from the model (None: it agrees throughout), given the order the run observed.

        >>> row = parse_reproductions({"x": {"trace": "t", "expect": {"4.1.1": "kept"}, "disagrees": {"4.1.1": 14},
        ...                                  "assigned_first": {"4.1.1": "lost"}}})[0]
        >>> row.expected("4.1.1", False), row.expected("4.1.1", True)
        (('kept', 14), ('violated', None))
        """
        if assigned_first and version in self.assigned_first:
            return self.assigned_first[version], None
        return self.expect[version], self.disagrees.get(version)


class TableError(ValueError):
    pass


OUTCOMES = {"lost": "violated", "violated": "violated", "fenced-leader": "violated", "diverged": "violated",
            "replaced": "violated", "kept": "kept"}


def parse_reproductions(table: dict) -> List[Reproduction]:
    """``[tool.hwcheck.reproduce.NAME]`` entries: ``trace``, ``expect = {"3.9.1" = "lost", ...}``
    (what each release's cluster does), optional ``elr``, ``disagrees = {"4.1.1" = 14}`` (a known
    finding: the step from which that release's cluster parts from the model) and ``proxy`` (run
    the fetch path through the replication proxy; default: where the trace needs a message held) and
    ``assigned_first = {"4.1.1" = "lost"}`` (that release's outcome when a replaced disk's directory
    is assigned before the broker is unfenced, a race: ``Reproduction.expected``) and ``zookeeper``
    (run 3.x releases of the table's KRaft rows on ZooKeeper, ``spec.releases.on_zookeeper``).

    >>> parse_reproductions({"x": {"trace": "t.itf.json", "expect": {"3.9.1": "lost"}}})[0].expect
    {'3.9.1': 'violated'}
    """
    out = []
    for name, entry in table.items():
        if not isinstance(entry, dict) or "trace" not in entry or "expect" not in entry:
            raise TableError(f"reproduce.{name}: needs trace and expect")
        unknown = set(entry) - {"trace", "expect", "elr", "description", "disagrees", "proxy", "assigned_first",
                                "zookeeper"}
        if unknown:
            raise TableError(f"reproduce.{name}: unknown key(s) {', '.join(sorted(unknown))}")
        expect = _outcomes(name, entry["expect"])
        disagrees = entry.get("disagrees", {})
        if not isinstance(disagrees, dict) or set(disagrees) - set(expect) or not all(
                isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in disagrees.values()):
            raise TableError(f"reproduce.{name}: disagrees maps releases of expect to a step number")
        assigned_first = _outcomes(name, entry.get("assigned_first", {}))
        if set(assigned_first) - set(expect):
            raise TableError(f"reproduce.{name}: assigned_first names releases of expect only")
        proxy = entry.get("proxy")
        if proxy is not None and not isinstance(proxy, bool):
            raise TableError(f"reproduce.{name}: proxy is true or false")
        zookeeper = entry.get("zookeeper", False)
        if not isinstance(zookeeper, bool):
            raise TableError(f"reproduce.{name}: zookeeper is true or false")
        row = Reproduction(name, entry["trace"], expect, entry.get("elr"), dict(disagrees), proxy, assigned_first,
                           zookeeper)
        if zookeeper:
            try:
                for version in expect:
                    row.release(version)
            except UnknownRelease as e:
                raise TableError(f"reproduce.{name}: {e}") from None
        out.append(row)
    return out


def _outcomes(name: str, table: dict) -> Dict[str, str]:
    """``{"3.9.1" = "lost", ...}``: exact releases to outcomes."""
    expect = {}
    if not isinstance(table, dict):
        raise TableError(f"reproduce.{name}: expected a table of releases to outcomes")
    for version, what in table.items():
        try:
            exact = release(version).version
        except UnknownRelease as e:
            raise TableError(f"reproduce.{name}: {e}") from None
        if exact != version:
            raise TableError(f"reproduce.{name}: name exact releases ({version!r} means {exact})")
        if what not in OUTCOMES:
            raise TableError(f"reproduce.{name}: expect {what!r} for {version} (one of {', '.join(OUTCOMES)})")
        expect[version] = OUTCOMES[what]
    return expect
