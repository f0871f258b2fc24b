"""Text rendering of settings, figures and traces (the tables of the source articles)."""

from __future__ import annotations

import shutil
import sys
import textwrap
from typing import List, Optional, Sequence, Tuple

from hwcheck.checker import variants
from hwcheck.spec.modes import without_elr, zookeeper
from hwcheck.spec.releases import releases_of
from hwcheck.spec.render import clients_saw
from hwcheck.spec.state import FOLLOWER, LEADER, UNDEFINED, members, replica_name


def settings_line(cfg) -> str:
    d = cfg.as_dict()
    line = " ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in d.items())
    path = variants.file_of(cfg)
    return line + (f" mode_file={path}" if path else "")


def rule_value(value) -> str:
    """A rule's value as the table shows it: a function by name."""
    if callable(value):
        return getattr(value, "__qualname__", None) or repr(value)
    return str(value)


def modes_table(ladder, aliases, extra=(), width: int = 120) -> str:
    """``hwcheck modes``: per mode its parent in the tree of release lines, its Kafka releases and
    summary, then each rule it changes from its parent with the KIP/JIRA and the Kafka source it
    copies; ``extra`` (variants from --mode-file) also lists the rules and actions it differs in from
    the nearest built-in mode."""
    header = ["mode", "parent", "Kafka", "ref", "what changes from its parent (and the Kafka source it copies)"]
    rows = []
    for mode in list(ladder) + list(extra):
        rows.append([mode.name, mode.parent or "-", mode.kafka, "", mode.summary or "(no summary)"])
        pinned = releases_of(mode.name)
        if pinned:
            rows.append(["", "", "", "", "releases pinned (hwcheck reproduce --kafka): "
                         + ", ".join(f"{r.version} ({r.metadata})" for r in pinned)])
        off = without_elr(mode)
        if off is not None:
            rows.append(["", "", "", "", f"with ELR off (--no-elr: 4.0's default, a 4.1+ cluster upgraded from 3.x) "
                                         f"it follows {off.name}'s rules"])
        zk = zookeeper(mode)
        if zk is not None:
            rows.append(["", "", "", "", f"on a ZooKeeper cluster (--zookeeper) it follows {zk.name}'s rules"
                                         + ("" if zk.name in {m.name for m in ladder} else
                                            f" ({mode.name} without its KRaft-only rules)")])
        for c in mode.changes:
            rows.append(["", "", "", c.ref, f"{c.rule}\nsource: {c.source}"])
        if mode in extra:
            base = variants.closest(mode)
            where = variants.file_of(mode)
            rows.append(["", "", "", "", f"a variant of {base.name}" + (f", from {where}" if where else "")])
            for name, old, new in variants.differences(mode, base):
                rows.append(["", "", "", "(this file)", f"{name}: {rule_value(old)} -> {rule_value(new)}"])
        rows.append(None)
    rows.pop()
    cols = len(header) - 1
    widths = [max(len(r[c]) for r in [header] + [r for r in rows if r]) for c in range(cols)]
    left = sum(widths) + 2 * cols
    text_width = max(40, width - left)
    lines = ["  ".join(h.ljust(w) for h, w in zip(header[:cols], widths)) + "  " + header[cols],
             "  ".join("-" * w for w in widths) + "  " + "-" * min(text_width, len(header[cols]))]
    for row in rows:
        if row is None:
            lines.append("")
            continue
        wrapped = []
        for part in row[cols].split("\n"):
            wrapped += textwrap.wrap(part, text_width, break_long_words=False, break_on_hyphens=False,
                                     subsequent_indent="  ") or [""]
        for i, chunk in enumerate(wrapped):
            cells = row[:cols] if i == 0 else [""] * cols
            lines.append(("  ".join(c.ljust(w) for c, w in zip(cells, widths)) + "  " + chunk).rstrip())
    kafka = {m.name: m.kafka for m in ladder}
    branches = [m for m in ladder if sum(1 for c in ladder if c.parent == m.name) > 1]
    lines.append("")
    for m in branches:
        children = [c for c in ladder if c.parent == m.name]
        lines.append(f"{m.name} branches: " + ", ".join(f"{c.name} for Kafka {c.kafka}" for c in children))
    for alias, name in aliases.items():
        lines.append(f"{alias} names the newest mode: {name}, Kafka {kafka.get(name, '?')}; "
                     f"--mode {alias} follows it when a newer mode is added")
    return "\n".join(lines)


def figures_line(result) -> str:
    return (f"{result.distinct_states:,} distinct states, {result.generated_states:,} generated, "
            f"depth {result.depth}, {result.elapsed:.1f} s, {result.states_per_second:,.0f} states/s, "
            f"peak RSS {result.peak_rss_mb:.0f} MB, fingerprint collision probability "
            f"{result.collision_probability:.1e}")


def replica_parts(model, rep, r: int) -> List[Tuple[str, str]]:
    """One replica in one step as (field, text) pairs: role and epoch, log as record@epoch, LEO,
    HW, flushed point, epoch cache and, on a leader, the remote LEOs it has learned."""
    if not rep.alive:
        head = "down"
    elif rep.role == LEADER:
        head = f"L{rep.leader_epoch}"
    elif rep.role == FOLLOWER:
        head = f"F{rep.leader_epoch}" + ("T" if rep.truncating else "")
    else:
        head = "-"
    log = " ".join(f"{rec}@{ep}" for rec, ep in rep.log) or "·"
    parts = [("role", head), ("log", f"[{log}]"), ("leo", f"leo={rep.leo}"), ("hw", f"hw={rep.hw}")]
    if model.cfg.power_failures:
        parts.append(("fl", f"fl={rep.flushed}"))
    if model.rules.mode.epochs:
        parts.append(("ec", "ec=" + (",".join(f"{e}:{o}" for e, o in rep.epoch_cache) or "·")))
    if rep.role == LEADER and rep.alive:
        remote = ",".join(f"{replica_name(f)}:{'?' if v == UNDEFINED else v}"
                          for f, v in enumerate(rep.remote_leo) if f != r)
        parts.append(("rl", f"rl={remote}"))
        if rep.remote_caught_up:      # caught up outside the ISR: the HW waits for them too
            parts.append(("cu", "cu=" + ",".join(replica_name(f) for f in range(len(rep.remote_leo))
                                                 if rep.remote_caught_up >> f & 1)))
    return parts


def replica_cell(model, rep, r: int, leave_out=()) -> str:
    """One replica in one step (:func:`replica_parts`), without the fields in ``leave_out``."""
    return " ".join(text for name, text in replica_parts(model, rep, r) if name not in leave_out)


def _field(value) -> str:
    if isinstance(value, list):             # records, as the log column shows them: record@epoch
        return "[" + " ".join(f"{r['record']}@{r['epoch']}" for r in value) + "]"
    if isinstance(value, dict):             # the diverging epoch of a 2.7+ fetch response
        return "{" + ",".join(f"{k}={v}" for k, v in value.items()) + "}"
    return str(value)


def messages_cell(model, s, which: str = "inflight") -> str:
    """The messages of a state (``inflight`` or ``stale``), named as the protocol names them:
    ``r1->r0 Fetch(current_leader_epoch=0 fetch_offset=1)``, records as record@epoch."""
    cells = []
    for follower, msg in model.to_json(s)[which].items():
        kind, leader = msg["type"], msg["leader"]
        src, dst = (follower, leader) if not kind.endswith("Response") else (leader, follower)
        fields = " ".join(f"{k}={_field(v)}" for k, v in msg.items() if k not in ("type", "leader"))
        cells.append(f"{src}->{dst} {kind}({fields})")
    return "  ".join(cells) or "·"


def replica_names(model, mask) -> str:
    """The replicas of a bitmask (an ISR, the ELR, the live brokers), comma-separated; "" for none."""
    return ",".join(replica_name(r) for r in members(mask, model.cfg.replicas))


def controller_cell(model, c, leave_out=()) -> str:
    leader = "none" if c.leader == UNDEFINED else replica_name(c.leader)
    cell = f"{leader} e{c.epoch} isr={replica_names(model, c.isr)}"
    if model.rules.mode.elr:
        cell += f" elr={replica_names(model, c.elr) or '·'} lke={replica_names(model, c.last_known_elr) or '·'}"
    if c.offline_dirs:      # KRaft 3.7+: replicas on a replaced disk, refused as leaders until assigned
        cell += f" dir-offline={replica_names(model, c.offline_dirs)}"
    if c.broker_epochs and "be" not in leave_out:
        cell += " be=" + ",".join(str(e) for e in c.broker_epochs)
    return cell


def trace_table(model, trace, violated: Optional[Sequence[str]] = None, width: Optional[int] = None) -> str:
    """One row per step: the action, what clients saw (``ack #0 at 0``: record 0 acknowledged at
    offset 0; ``read #0 at 0``: exposed to consumers), each replica,
    the controller; a cell the step changed starts with ``*`` (as the TLA+ Toolbox marks changed
    variables); the last row names the broken invariant(s), the lines under the table what
    breaks each and, under ``story:``, how it came about (``Model.story``). Legend: L<e>/F<e>
    leader/follower at epoch e (T: truncating), rec@epoch log entries, rl remote LEOs (? unknown),
    ec epoch cache epoch:start.

    ``width`` (a terminal's columns): a wider table first leaves out the LEO (the log shows it),
    per replica the fields no step changes and the replicas no step changes (said under the table);
    then, if still too wide, the remote LEOs, epoch caches, broker epochs and the last column
    (``--wide``: everything)."""
    n = model.cfg.replicas

    def build(leave_out, columns, note_text, controller_out=()):
        header = ["step", "action", "clients"] + [replica_name(r) for r in columns] + ["controller"] + \
                 ([""] if note_text else [])
        rows: List[List[str]] = []
        was = None
        for i, s in enumerate(trace.states):
            action = "init" if i == 0 else model.format_label(trace.labels[i - 1])
            note = note_text if i == len(trace.states) - 1 and violated else ""
            cells = [replica_cell(model, s.replicas[r], r, leave_out[r]) for r in columns] + \
                    [controller_cell(model, s.controller, controller_out)]
            marked = cells if was is None else [("*" if c != w else "") + c for c, w in zip(cells, was)]
            saw = clients_saw(trace.states[i - 1], s) if i else ""
            rows.append([str(i), action, saw] + marked + ([note] if note_text else []))
            was = cells
        widths = [max(len(row[c]) for row in [header] + rows) for c in range(len(header))]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [header] + rows]
        lines.insert(1, "  ".join("-" * w for w in widths).rstrip())
        return lines

    lines = build([()] * n, range(n), "<- broken: " + ", ".join(violated or ()))
    under: List[str] = []               # the lines under the table
    if width is not None and max(map(len, lines)) > width:
        def cells(r, leave_out=()):
            return {replica_cell(model, s.replicas[r], r, leave_out) for s in trace.states}

        def constant(r, name):
            return len({dict(replica_parts(model, s.replicas[r], r)).get(name) for s in trace.states}) == 1
        for drop, controller_out, note in (((), (), "<- broken"), (("rl", "ec"), ("be",), "")):
            leave_out = [("leo",) + drop + tuple(name for name in ("fl", "ec") if constant(r, name))
                         for r in range(n)]
            still = [r for r in range(n) if len(cells(r, leave_out[r])) == 1]
            lines = build(leave_out, [r for r in range(n) if r not in still], note, controller_out)
            under = [f"{replica_name(r)} throughout: {cells(r, leave_out[r]).pop()}" for r in still]
            if max(map(len, lines + under)) <= width:
                break
        left = ["LEO", "fields and replicas no step changes"] + \
               (["remote LEOs (rl)", "epoch caches (ec)", "broker epochs (be)"] if drop else [])
        under.append(f"left out to fit {width} columns: {', '.join(left)} (--wide shows every field)")
    # under the table, what breaks each invariant in the last state (spec/invariants.py why_broken)
    checked = {name for name, _ in model.invariants}
    for name in violated or ():
        if name in checked and trace.states:
            why = model.why_broken(trace.states[-1], name)
            if why:
                under.append(f"{name}: {why}")
    # and how it came about, step by step (spec/story.py)
    told = model.story(trace.states, trace.labels, [name for name in violated or () if name in checked])
    if told:
        under += ["story:"] + ["  " + line for line in told]
    if width is not None:       # the lines under the table (never its rows) wrap at the terminal's width
        under = [part for line in under for part in
                 textwrap.wrap(line, width, subsequent_indent=" " * (len(line) - len(line.lstrip()) + 2))]
    return "\n".join(lines + under)


def terminal_width(wide: bool) -> Optional[int]:
    """The columns a trace table may take: the terminal's, unless ``--wide`` or stdout is not a
    terminal (a file or a pipe gets every field)."""
    if wide or not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size((120, 24)).columns
