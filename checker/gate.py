"""The invariant gate: a matrix of (mode, settings) -> expected verdict, checked on every change.

An entry names a mode and any knobs, and ``expect``: ``"holds"`` (no invariant breaks within the
bounds: every invariant is checked over the whole space) or the name of an invariant that must
break (only that invariant is checked, and the search stops at its first, shortest violation);
``steps`` optionally pins the length of that shortest trace. ``invariants`` narrows what a ``"holds"``
entry checks (every invariant by default), as TLC's INVARIANT lines do.

``engine = "simulate"`` (with ``runs``, ``depth``, ``seed``; checker/simulate.py) gates a
configuration bfs cannot finish: ``runs`` random walks with that seed instead of the whole space.
Then ``"holds"`` means no walk broke an invariant (evidence, not a proof), an invariant name means
some walk broke it, and ``steps`` pins the length of the shrunk trace. The same seed and settings
give the same walks, so the entry's verdict is as reproducible as a bfs entry's.

``trace`` (an ITF file, relative to the gate file) with ``from_step = K`` starts the search at the
state after the trace's first K steps, run under the entry's ``mode`` (by default the trace's;
another mode is a differential replay), with the trace's settings: a bug whose whole trace is
beyond bfs here is still gated, by its shortest continuation from that state (``steps`` counts the
steps after K), and a release that fixed it by ``"holds"`` from the same state.

>>> entries = parse_gate({"hw-loss": {"mode": "hw", "records": 1, "expect": "NoCommittedDataLoss", "steps": 12}})
>>> outcome = run_entry(entries[0])
>>> outcome.passed, outcome.got
(True, 'NoCommittedDataLoss(12)')
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence
from xml.sax.saxutils import escape, quoteattr

from hwcheck.spec import INVARIANT_NAMES, Config, ConfigError, Model

from .bfs import bfs
from .families import DESIGN
from .result import INTERRUPTED, Result
from .simulate import simulate
from .trace import StartingAt, TraceError, load_itf, state_at, trace_config, trace_family

HOLDS = "holds"
KNOBS = {f.name for f in fields(Config)}
SIMULATE_KEYS = {"runs", "depth", "seed"}
TRACE_KEYS = {"trace", "from_step"}
ENTRY_KEYS = KNOBS | SIMULATE_KEYS | TRACE_KEYS | {"expect", "steps", "max_depth", "description", "engine", "invariants"}
ENGINES = ("bfs", "simulate")
SIMULATE_DEFAULTS = {"runs": 10_000, "depth": 50, "seed": 0}


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
    engine: str = "bfs"
    runs: int = SIMULATE_DEFAULTS["runs"]
    depth: int = SIMULATE_DEFAULTS["depth"]
    seed: int = SIMULATE_DEFAULTS["seed"]
    trace: Optional[str] = None       # the search starts at this trace's state after from_step steps
    from_step: int = 0
    start: Any = field(default=None, compare=False, repr=False)
    invariants: Optional[tuple] = None   # a "holds" entry checks only these (default: all)


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


def parse_gate(table: dict, base: Path = Path(".")) -> List[Entry]:
    """Entries from a mapping of name -> settings (the ``[tool.hwcheck.gate]`` table); a ``trace``
    is read relative to ``base``, the gate file's folder."""
    if not isinstance(table, dict) or not table:
        raise GateError("the gate has no entries")
    names = set(INVARIANT_NAMES)
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
        for key in ("steps", "max_depth", "seed", "from_step"):
            if key in spec and (not isinstance(spec[key], int) or isinstance(spec[key], bool) or spec[key] < 0):
                raise GateError(f"entry {name!r}: {key} must be a non-negative integer")
        for key in ("runs", "depth"):
            if key in spec and (not isinstance(spec[key], int) or isinstance(spec[key], bool) or spec[key] < 1):
                raise GateError(f"entry {name!r}: {key} must be a positive integer")
        engine = spec.get("engine", "bfs")
        if engine not in ENGINES:
            raise GateError(f"entry {name!r}: engine must be one of {', '.join(ENGINES)}, got {engine!r}")
        misplaced = sorted(set(spec) & (SIMULATE_KEYS if engine == "bfs" else {"max_depth"}))
        if misplaced:
            raise GateError(f"entry {name!r}: {', '.join(misplaced)} do{'es' if len(misplaced) == 1 else ''} not "
                            f"apply to engine {engine}")
        if "trace" in spec:
            cfg, start = _start(name, spec, base)
        elif "from_step" in spec:
            raise GateError(f"entry {name!r}: from_step needs a trace")
        else:
            start = None
            try:
                cfg = Config.from_dict({k: v for k, v in spec.items() if k in KNOBS})
            except (ConfigError, TypeError) as e:
                raise GateError(f"entry {name!r}: {e}") from None
        checked = {n for n, _ in Model(cfg).invariants}
        if expect != HOLDS and expect not in checked:
            raise GateError(f"entry {name!r}: mode {cfg.mode} does not check {expect}")
        only = spec.get("invariants")
        if only is not None:
            if expect != HOLDS:
                raise GateError(f"entry {name!r}: invariants applies to expect = 'holds' (an entry that expects "
                                f"an invariant to break checks only that one)")
            if not isinstance(only, list) or not only or not all(isinstance(n, str) for n in only):
                raise GateError(f"entry {name!r}: invariants must be a list of invariant names")
            unchecked = [n for n in only if n not in checked]
            if unchecked:
                raise GateError(f"entry {name!r}: mode {cfg.mode} does not check {', '.join(unchecked)}")
            only = tuple(only)
        walks = {key: spec[key] for key in SIMULATE_KEYS if key in spec}
        entries.append(Entry(name, cfg, expect, spec.get("steps"), spec.get("max_depth"),
                             str(spec.get("description", "")), engine, **walks, trace=spec.get("trace"),
                             from_step=spec.get("from_step", 0), start=start, invariants=only))
    return entries


def _start(name: str, spec: dict, base: Path):
    """An entry's config and first state from its ``trace`` at ``from_step``."""
    path, settings = spec["trace"], sorted(set(spec) & (KNOBS - {"mode"}))
    if not isinstance(path, str):
        raise GateError(f"entry {name!r}: trace must be a file name")
    if settings:
        raise GateError(f"entry {name!r}: {', '.join(settings)}: a trace entry takes its settings from the "
                        f"trace (only mode may be set)")
    if spec.get("engine", "bfs") != "bfs":
        raise GateError(f"entry {name!r}: a trace entry searches with bfs")
    try:
        doc = load_itf((base / path).read_text())
        if trace_family(doc) != DESIGN:
            raise TraceError(f"a trace of the {trace_family(doc)} model; the gate runs the design model")
        cfg = trace_config(doc, **({"mode": spec["mode"]} if "mode" in spec else {}))
        return cfg, state_at(doc, spec.get("from_step", 0), cfg.mode)
    except OSError as e:
        raise GateError(f"entry {name!r}: cannot read {base / path}: {e.strerror}") from None
    except TraceError as e:
        raise GateError(f"entry {name!r}: {path}: {e}") from None


def run_entry(entry: Entry, progress=None) -> Outcome:
    """Run one entry with its engine; ``progress`` receives the engine's progress reports
    (cli/progress.py).

    >>> e = parse_gate({"acks-1": {"mode": "hw", "acks": "1", "expect": "NoCommittedDataLoss", "steps": 3,
    ...                            "engine": "simulate", "runs": 100, "seed": 1}})[0]
    >>> run_entry(e).got
    'NoCommittedDataLoss(3)'
    """
    only = ([*entry.invariants] if entry.invariants else None) if entry.expect == HOLDS else [entry.expect]
    model = Model(entry.config)
    if entry.start is not None:
        model = StartingAt(model, entry.start)
    if entry.engine == "simulate":
        result = simulate(model, runs=entry.runs, depth=entry.depth, seed=entry.seed, only=only, workers=1,
                          progress=progress)
    else:
        result = bfs(model, max_depth=entry.max_depth, only=only, progress=progress)
    return Outcome(entry, result)


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
        start = f"\nfrom step {o.entry.from_step} of {o.entry.trace}" if o.entry.trace else ""
        out = (f"{o.entry.config.as_dict()}{start}\ngot {o.got}; {o.result.distinct_states} distinct states, "
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
