"""``hwcheck gate``: the matrix of expected verdicts (checker/gate.py runs an entry); every option of
the command is declared here."""

from __future__ import annotations

from pathlib import Path

import tomllib

import click

from hwcheck.checker.gate import GateError, junit_xml, parse_gate, run_entry
from hwcheck.spec import Config

from . import jsonout
from .models import load_mode_file, mode_file_option
from .options import (DEFAULTS, EXIT_HOLDS, EXIT_INTERRUPTED, EXIT_VIOLATION, check_writable, fail, read_text,
                      refuse_quiet_with_verbose, write_after_run)
from .progress import Progress, level as progress_level


def load_gate_table(gate_file, modes=()):
    """The gate entries: from FILE (``[gate.NAME]`` tables, or a pyproject's
    ``[tool.hwcheck.gate.NAME]``), else from ./pyproject.toml. An entry whose mode names one of
    ``modes`` (the variants of --mode-file; the last of a name wins) runs that Mode."""
    path = gate_file if gate_file is not None else Path("pyproject.toml")
    if gate_file is None and not path.exists():
        fail(f"no FILE given and no pyproject.toml in {Path.cwd()}: gate reads [tool.hwcheck.gate] from "
             "./pyproject.toml (run it in the project's folder) or the entries of FILE")
    text = read_text(path)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        fail(f"{path}: malformed TOML: {e}")
    if "tool" in doc:
        tool = doc["tool"]
        hw = tool.get("hwcheck", {}) if isinstance(tool, dict) else None
        table = hw.get("gate") if isinstance(hw, dict) else None
    else:
        table = doc.get("gate")
    if table is None:
        where = "[tool.hwcheck.gate]" if "tool" in doc or gate_file is None else "[gate.NAME] tables"
        fail(f"{path}: no gate entries ({where} missing)")
    unknown = sorted(set(doc) - {"gate"}) if "tool" not in doc else []
    if unknown:
        fail(f"{path}: unknown top-level key(s) {', '.join(unknown)} (entries go under [gate.NAME])")
    named = {mode.name: mode for mode in modes}
    if named and isinstance(table, dict):
        table = {name: ({**spec, "mode": named[spec["mode"]]}
                        if isinstance(spec, dict) and isinstance(spec.get("mode"), str) and spec["mode"] in named
                        else spec)
                 for name, spec in table.items()}
    try:
        return path, parse_gate(table, path.parent)
    except GateError as e:
        fail(f"{path}: {e}")


def non_default_settings(cfg: Config) -> str:
    d, base = cfg.as_dict(), DEFAULTS.as_dict()
    return " ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                    for k, v in d.items() if k != "mode" and v != base[k]) or "defaults"


@click.command()
@click.argument("gate_file", metavar="[FILE]", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="also write the results as JUnit XML")
@click.option("--force", is_flag=True, help="overwrite --junit if it exists")
@click.option("--quiet", is_flag=True, help="only the verdicts that moved and the summary")
@click.option("--verbose", is_flag=True, help="a progress log line each second while an entry runs")
@mode_file_option(multiple=True, help="a Python file defining MODE, a variant (docs/variants.md) that entries "
                                      "may then name as their mode (repeatable)")
@jsonout.json_option("gate")
def gate(gate_file, junit, force, quiet, verbose, mode_file):
    """Check a matrix of (mode, settings) -> expected verdict; exit 1 when a verdict moved.

    The entries are read from [tool.hwcheck.gate] in ./pyproject.toml (the current folder), or
    from FILE ([gate.NAME] tables, or a pyproject with [tool.hwcheck.gate]); docs/ci.md. Ctrl-C
    stops it, naming the entries that ran and those that did not (exit 130).

    \b
    Example:
      hwcheck gate --junit gate.xml --force
    """
    refuse_quiet_with_verbose(quiet, verbose)
    modes = [load_mode_file(path, fail) for path in mode_file]
    path, entries = load_gate_table(gate_file, modes)
    if junit is not None:
        check_writable(junit, force)
    say = (lambda *a, **k: None) if quiet else click.echo
    say(f"hwcheck gate: {len(entries)} entries from {path}")
    outcomes, stopped, progress = [], None, None
    try:
        for entry in entries:
            stopped = entry                      # the entry under way, should Ctrl-C come now
            progress = Progress(progress_level(quiet, verbose), engine=entry.name)
            outcome = run_entry(entry, progress=progress)
            progress.done()
            outcomes.append(outcome)
            if outcome.interrupted:              # Ctrl-C inside the search: no verdict
                break
            mark = "ok  " if outcome.passed else "FAIL"
            say(f"  {mark} {entry.name}: {outcome.got} ({outcome.result.elapsed:.1f} s)")
            e = entry
            jsonout.note(entry={"name": e.name, "settings": jsonout.settings(e.config), "expect": e.expect,
                                "steps": e.steps, "got": outcome.got, "passed": outcome.passed,
                                "figures": jsonout.figures(outcome.result),
                                **({"trace": e.trace, "from_step": e.from_step} if e.trace else {}),
                                **({"invariants": list(e.invariants)} if e.invariants else {})})
            stopped = None
    except KeyboardInterrupt:                    # Ctrl-C between two searches
        if progress is not None:
            progress.done()
    cut = outcomes[-1] if outcomes and outcomes[-1].interrupted else None     # stopped mid-search
    finished = [o for o in outcomes if not o.interrupted]
    not_run = entries[entries.index(stopped) + 1:] if stopped is not None else []
    skipped = not_run if cut is not None or stopped is None else [stopped] + not_run
    header = ["entry", "mode", "settings", "expected", "got", "states", "depth", "time", ""]
    rows = []
    for o in outcomes:
        e = o.entry
        want = e.expect + (f"({e.steps})" if e.steps is not None and e.expect != "holds" else "")
        where = non_default_settings(e.config) + (f", from step {e.from_step} of {Path(e.trace).name}" if e.trace else "")
        if e.invariants:
            want += f" ({', '.join(e.invariants)})"
        rows.append([e.name, e.config.mode, where, want, o.got,
                     f"{o.result.distinct_states:,}", str(o.result.depth), f"{o.result.elapsed:.1f} s",
                     "interrupted" if o.interrupted else "ok" if o.passed else "MOVED"])
    widths = [max(len(r[c]) for r in [header] + rows) for c in range(len(header))]
    say("")
    for r in [header, ["-" * w for w in widths]] + rows:
        say("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    failed = [o for o in finished if not o.passed]
    verdict = "interrupted" if stopped is not None else "moved" if failed else "passed"
    junit_written = junit is not None and write_after_run(junit, junit_xml(outcomes, skipped), "the JUnit report")
    if junit_written:
        say(f"junit: {junit}")
    jsonout.note(file=str(path), verdict=verdict, junit=str(junit) if junit_written else None)
    if stopped is not None:
        jsonout.note(interrupted=stopped.name, not_run=[e.name for e in not_run])
    for o in failed:
        click.echo(f"verdict moved: {o.entry.name}: {o.failure()}")
    if stopped is not None:
        click.echo(gate_interrupted_line(len(entries), finished, cut, stopped, not_run))
        raise click.exceptions.Exit(EXIT_INTERRUPTED)
    if failed:
        raise click.exceptions.Exit(EXIT_VIOLATION)
    click.echo(f"all {len(outcomes)} verdicts as expected")
    raise click.exceptions.Exit(EXIT_HOLDS)


def gate_interrupted_line(total, finished, cut, stopped, not_run) -> str:
    """One line: what an interrupted gate covered and what it did not."""
    moved = [o.entry.name for o in finished if not o.passed]
    ran = ", ".join(o.entry.name for o in finished) or "none"
    how = f"{len(moved)} moved" if moved else "as expected" if finished else ""
    where = (f"interrupted {stopped.name} after {cut.result.elapsed:.1f} s ({cut.result.distinct_states:,} distinct "
             f"states to depth {cut.result.depth}, no verdict)" if cut is not None
             else f"interrupted before {stopped.name}")
    return (f"interrupted: {len(finished)} of {total} entries ran ({ran}{': ' + how if how else ''}); "
            f"{where}; not run: {', '.join(e.name for e in not_run) or 'none'}")
