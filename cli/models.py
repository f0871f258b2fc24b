"""The choice of model family on the command line (``--model``), its options, and rendering that
depends on the family. ``design`` (the default) is the model of DESIGN.md, with the knobs of
cli/main.py; ``kafka-tla`` is the port of the community's TLA+ spec, with its TLA+ constants."""

from __future__ import annotations

import click

from hwcheck.checker.families import DESIGN, FAMILIES
from hwcheck.spec import Config, ConfigError, Model, kafka_tla
from hwcheck.spec.config import MODE_ALIASES, MODES
from hwcheck.spec.kafka_tla.state import NONE, members

from . import render

KAFKA_TLA = kafka_tla.FAMILY
TLA_DEFAULTS = kafka_tla.Config()
# kafka-tla modes the design model's --mode choice lacks
OTHER_MODES = [m for m in kafka_tla.MODES if m not in MODES and m not in MODE_ALIASES]
DESIGN_ONLY = ("records", "crashes", "power_failures", "max_epoch", "min_isr", "acks", "unclean_election",
               "response_hw")
TLA_ONLY = ("log_size", "max_records", "max_leader_epoch")


def with_options(fn, options):
    """Decorate ``fn`` with click options, listed in the order --help shows them."""
    for option in reversed(options):
        fn = option(fn)
    return fn


def model_options(fn):
    """``--model`` and the constants of the kafka-tla family."""
    options = [
        click.option("--model", "model_family", type=click.Choice(list(FAMILIES)), default=DESIGN,
                     show_default=True, help="model family: design (DESIGN.md) or kafka-tla (the community's "
                     "TLA+ spec; modes " + ", ".join(kafka_tla.MODES) + ")"),
        click.option("--log-size", type=int, default=TLA_DEFAULTS.log_size, show_default=True,
                     help="kafka-tla: LogSize"),
        click.option("--max-records", type=int, default=TLA_DEFAULTS.max_records, show_default=True,
                     help="kafka-tla: MaxRecords"),
        click.option("--max-leader-epoch", type=int, default=TLA_DEFAULTS.max_leader_epoch, show_default=True,
                     help="kafka-tla: MaxLeaderEpoch"),
    ]
    return with_options(fn, options)


def given(ctx, name: str) -> bool:
    """Whether the user set the option ``name`` (not left to its default)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source != click.core.ParameterSource.DEFAULT


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def build_model(knobs: dict, only, fail):
    """The model the options ask for; knobs of the other family are refused in one line. ``only``
    (``--invariant``) picks the kafka-tla invariants to check (default StrongIsr)."""
    ctx = click.get_current_context()
    family = knobs.pop("model_family")
    tla = {name: knobs.pop(name) for name in TLA_ONLY}
    if family == DESIGN:
        for name in TLA_ONLY:
            if given(ctx, name):
                fail(f"{_flag(name)} applies to --model {KAFKA_TLA} only")
        if knobs["mode"] in OTHER_MODES:
            fail(f"mode {knobs['mode']} belongs to --model {KAFKA_TLA}")
        return Model(configure(Config, fail, **knobs))
    for name in DESIGN_ONLY:
        if given(ctx, name):
            fail(f"{_flag(name)} does not apply to --model {KAFKA_TLA} (its options: --mode --replicas "
                 f"--log-size --max-records --max-leader-epoch --invariant)")
    mode = knobs["mode"] if given(ctx, "mode") else TLA_DEFAULTS.mode
    return kafka_tla.Model(configure(kafka_tla.Config, fail, mode=mode, replicas=knobs["replicas"],
                                     log_size=tla["log_size"], max_records=tla["max_records"],
                                     max_leader_epoch=tla["max_leader_epoch"],
                                     invariants=tuple(only) or TLA_DEFAULTS.invariants))


def configure(config_cls, fail, **settings):
    """``config_cls(**settings)``; a ConfigError becomes ``fail``'s one-line error."""
    try:
        return config_cls(**settings)
    except ConfigError as e:
        fail(str(e))


# ---------------------------------------------------------------- rendering

def settings_line(cfg) -> str:
    if not isinstance(cfg, kafka_tla.Config):
        return render.settings_line(cfg)
    d = cfg.as_dict()
    return f"model={KAFKA_TLA} " + " ".join(f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in d.items())


def trace_table(model, trace, violated=None) -> str:
    if getattr(model, "family", DESIGN) != KAFKA_TLA:
        return render.trace_table(model, trace, violated)
    return tla_trace_table(model, trace, violated)


def _names(mask: int) -> str:
    return ",".join(f"r{r}" for r in members(mask)) or "·"


def tla_replica_cell(s, r: int) -> str:
    """L<e> presumed leader at epoch e (with its ISR view), F<e>>rL follower of rL at epoch e,
    '-' before any LeaderAndIsr; the log as id@epoch; the hw."""
    rs = s.replica_state[r]
    if rs.leader == r:
        head = f"L{rs.leader_epoch} isr={_names(rs.isr)}"
    elif rs.leader != NONE:
        head = f"F{rs.leader_epoch}>r{rs.leader}"
    else:
        head = "-"
    log = " ".join(f"{i}@{e}" for i, e in s.replica_log[r]) or "·"
    return f"{head} [{log}] hw={rs.hw}"


def tla_quorum_cell(s) -> str:
    q = s.quorum_state
    leader = "none" if q.leader == NONE else f"r{q.leader}"
    return f"{leader} e{q.leader_epoch} isr={_names(q.isr)}"


def tla_trace_table(model, trace, violated=None) -> str:
    """One row per step: the action, each replica, the quorum state and the LeaderAndIsr requests
    sent so far (e<epoch>:<leader>)."""
    n = model.cfg.replicas
    header = ["step", "action"] + [f"r{r}" for r in range(n)] + ["quorum", "requests", ""]
    rows = []
    for i, s in enumerate(trace.states):
        action = "init" if i == 0 else model.format_label(trace.labels[i - 1])
        note = "<- broken: " + ", ".join(violated) if i == len(trace.states) - 1 and violated else ""
        reqs = " ".join(f"e{q.leader_epoch}:{'none' if q.leader == NONE else f'r{q.leader}'}"
                        for q in s.leader_and_isr_requests) or "·"
        rows.append([str(i), action] + [tla_replica_cell(s, r) for r in range(n)]
                    + [tla_quorum_cell(s), reqs, note])
    widths = [max(len(row[c]) for row in [header] + rows) for c in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [header] + rows]
    lines.insert(1, "  ".join("-" * w for w in widths).rstrip())
    return "\n".join(lines)
