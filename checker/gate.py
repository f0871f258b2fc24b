"""The invariant gate: a matrix of (mode, settings) -> expected verdict, checked on every change.

An entry names a mode and any knobs, and ``expect``: ``"holds"`` (no invariant breaks within the
bounds: every invariant is checked over the whole space) or the name of an invariant that must
break (only that invariant is checked, and the search stops at its first, shortest violation);
``steps`` optionally pins the length of that shortest trace.

>>> entries = parse_gate({"hw-loss": {"mode": "hw", "records": 1, "expect": "NoCommittedDataLoss", "steps": 11}})
>>> outcome = run_entry(entries[0])
>>> outcome.passed, outcome.got
(True, 'NoCommittedDataLoss(11)')
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Dict, List, Optional, Sequence
from xml.sax.saxutils import escape, quoteattr

from hwcheck.spec import Config, ConfigError, Model
from hwcheck.spec.invariants import ELR_ONLY, INVARIANTS, invariants_for

from .bfs import bfs
from .result import INTERRUPTED, Result

HOLDS = "holds"
KNOBS = {f.name for f in fields(Config)}
ENTRY_KEYS = KNOBS | {"expect", "steps", "max_depth", "description"}


class GateError(ValueError):
    """A gate file that cannot be used (one line for the user)."""


@dataclass(frozen=True)
class Entry:
    name: str
    config: Config
    expect: str
    steps: Optional[int] = None
    max_depth: Optional[int] = None
    description: str = ""


@dataclass
class Outcome:
    entry: Entry
    result: Result

    @property
    def broken(self) -> Dict[str, int]:
        return {t.invariant: t.steps for t in self.result.violations}

    @property
    def interrupted(self) -> bool:
        """Ctrl-C cut the search: there is no verdict, neither as expected nor moved."""
        return self.result.verdict == INTERRUPTED

    @property
    def got(self) -> str:
        if self.interrupted:
            return INTERRUPTED
        return ", ".join(f"{name}({steps})" for name, steps in self.broken.items()) or HOLDS

    @property
    def passed(self) -> bool:
        e, broken = self.entry, self.broken
        if self.interrupted:
            return False
        if e.expect == HOLDS:
            return not broken and self.result.verdict == "holds"
        return e.expect in broken and (e.steps is None or broken[e.expect] == e.steps)

    def failure(self) -> str:
        e = self.entry
        want = e.expect + (f" in {e.steps} steps" if e.steps is not None and e.expect != HOLDS else "")
        return f"expected {want}, got {self.got}"


def parse_gate(table: dict) -> List[Entry]:
    """Entries from a mapping of name -> settings (the ``[tool.hwcheck.gate]`` table)."""
    if not isinstance(table, dict) or not table:
        raise GateError("the gate has no entries")
    names = {name for name, _ in INVARIANTS + ELR_ONLY}
    entries = []
    for name, spec in table.items():
        if not isinstance(spec, dict):
            raise GateError(f"entry {name!r}: expected a table of settings")
        unknown = sorted(set(spec) - ENTRY_KEYS)
        if unknown:
            raise GateError(f"entry {name!r}: unknown key(s) {', '.join(unknown)}")
        expect = spec.get("expect")
        if not isinstance(expect, str) or (expect != HOLDS and expect not in names):
            raise GateError(f"entry {name!r}: expect must be 'holds' or one of {', '.join(sorted(names))}, got {expect!r}")
        for key in ("steps", "max_depth"):
            if key in spec and (not isinstance(spec[key], int) or isinstance(spec[key], bool) or spec[key] < 0):
                raise GateError(f"entry {name!r}: {key} must be a non-negative integer")
        try:
            cfg = Config.from_dict({k: v for k, v in spec.items() if k in KNOBS})
        except (ConfigError, TypeError) as e:
            raise GateError(f"entry {name!r}: {e}") from None
        if expect != HOLDS and expect not in {n for n, _ in invariants_for(cfg)}:
            raise GateError(f"entry {name!r}: mode {cfg.mode} does not check {expect}")
        entries.append(Entry(name, cfg, expect, spec.get("steps"), spec.get("max_depth"),
                             str(spec.get("description", ""))))
    return entries


def run_entry(entry: Entry, progress=None) -> Outcome:
    """Run one entry with bfs; ``progress`` receives bfs's progress reports (cli/progress.py)."""
    only = None if entry.expect == HOLDS else [entry.expect]
    return Outcome(entry, bfs(Model(entry.config), max_depth=entry.max_depth, only=only, progress=progress))


def junit_xml(outcomes: List[Outcome], not_run: Sequence[Entry] = ()) -> str:
    """JUnit XML, one testcase per entry, as CI systems display it. An interrupted entry and the
    entries an interrupted gate never ran (``not_run``) are skipped, never failed."""
    failures = sum(not o.passed and not o.interrupted for o in outcomes)
    skipped = sum(o.interrupted for o in outcomes) + len(not_run)
    total_time = sum(o.result.elapsed for o in outcomes)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuite name="hwcheck-gate" tests="{len(outcomes) + len(not_run)}" failures="{failures}" '
             f'errors="0" skipped="{skipped}" time="{total_time:.3f}">']
    for o in outcomes:
        attrs = f'classname="hwcheck.gate.{o.entry.config.mode}" name={quoteattr(o.entry.name)} time="{o.result.elapsed:.3f}"'
        out = (f"{o.entry.config.as_dict()}\ngot {o.got}; {o.result.distinct_states} distinct states, "
               f"depth {o.result.depth}")
        if o.interrupted:
            why = (f"interrupted (Ctrl-C) after {o.result.elapsed:.1f} s: {o.result.distinct_states} distinct "
                   f"states to depth {o.result.depth}, no verdict")
            lines.append(f"  <testcase {attrs}><skipped message={quoteattr(why)}/>"
                         f"<system-out>{escape(out)}</system-out></testcase>")
        elif o.passed:
            lines.append(f"  <testcase {attrs}><system-out>{escape(out)}</system-out></testcase>")
        else:
            lines.append(f"  <testcase {attrs}><failure message={quoteattr(o.failure())}>{escape(out)}</failure></testcase>")
    for e in not_run:
        lines.append(f'  <testcase classname="hwcheck.gate.{e.config.mode}" name={quoteattr(e.name)} time="0.000">'
                     f'<skipped message="not run: the gate was interrupted (Ctrl-C)"/></testcase>')
    lines.append("</testsuite>")
    return "\n".join(lines) + "\n"
