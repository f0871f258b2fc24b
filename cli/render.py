"""Text rendering of settings, figures and traces (the tables of the source articles)."""

from __future__ import annotations

from typing import List, Optional, Sequence

from hwcheck.spec.state import FOLLOWER, LEADER, UNDEFINED, members, replica_name


def settings_line(cfg) -> str:
    d = cfg.as_dict()
    return " ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in d.items())


def figures_line(result) -> str:
    return (f"{result.distinct_states:,} distinct states, {result.generated_states:,} generated, "
            f"depth {result.depth}, {result.elapsed:.1f} s, {result.states_per_second:,.0f} states/s, "
            f"peak RSS {result.peak_rss_mb:.0f} MB, fingerprint collision probability "
            f"{result.collision_probability:.1e}")


def replica_cell(model, rep, r: int) -> str:
    """One replica in one step: role and epoch, log as record@epoch, LEO, HW, epoch cache and,
    on a leader, the remote LEOs it has learned."""
    if not rep.alive:
        head = "down"
    elif rep.role == LEADER:
        head = f"L{rep.leader_epoch}"
    elif rep.role == FOLLOWER:
        head = f"F{rep.leader_epoch}" + ("T" if rep.truncating else "")
    else:
        head = "-"
    log = " ".join(f"{rec}@{ep}" for rec, ep in rep.log) or "·"
    parts = [head, f"[{log}]", f"leo={rep.leo}", f"hw={rep.hw}"]
    if model.cfg.power_failures:
        parts.append(f"fl={rep.flushed}")
    if model.rules.mode.epochs:
        parts.append("ec=" + (",".join(f"{e}:{o}" for e, o in rep.epoch_cache) or "·"))
    if rep.role == LEADER and rep.alive:
        remote = ",".join(f"{replica_name(f)}:{'?' if v == UNDEFINED else v}"
                          for f, v in enumerate(rep.remote_leo) if f != r)
        parts.append(f"rl={remote}")
    return " ".join(parts)


def controller_cell(model, c) -> str:
    leader = "none" if c.leader == UNDEFINED else replica_name(c.leader)
    isr = ",".join(replica_name(r) for r in members(c.isr, model.cfg.replicas))
    return f"{leader} e{c.epoch} isr={isr}"


def trace_table(model, trace, violated: Optional[Sequence[str]] = None) -> str:
    """One row per step: the action, each replica, the controller; the last row names the broken
    invariant(s). Legend: L<e>/F<e> leader/follower at epoch e (T: truncating), rec@epoch log
    entries, rl remote LEOs (? unknown), ec epoch cache epoch:start."""
    n = model.cfg.replicas
    header = ["step", "action"] + [replica_name(r) for r in range(n)] + ["controller", ""]
    rows: List[List[str]] = []
    for i, s in enumerate(trace.states):
        action = "init" if i == 0 else model.format_label(trace.labels[i - 1])
        note = ""
        if i == len(trace.states) - 1 and violated:
            note = "<- broken: " + ", ".join(violated)
        rows.append([str(i), action] + [replica_cell(model, s.replicas[r], r) for r in range(n)]
                    + [controller_cell(model, s.controller), note])
    widths = [max(len(row[c]) for row in [header] + rows) for c in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [header] + rows]
    lines.insert(1, "  ".join("-" * w for w in widths).rstrip())
    return "\n".join(lines)
