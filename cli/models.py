"""The choice of model family on the command line (``--model``), its options, the ``--mode`` and
``--mode-file`` options, and rendering that depends on the family. ``design`` (the default) is the
model of docs/model.md, with the knobs of cli/options.py (``knob_options``); ``kafka-tla`` is the port of
the community's TLA+ spec, with its TLA+ constants. A mode is checked once, by the family's Config;
this module only words the Config's refusal for the command line."""

from __future__ import annotations

from pathlib import Path

import click

from hwcheck.checker import variants
from hwcheck.checker.families import DESIGN, FAMILIES, model_of
from hwcheck.spec import Config, ConfigError, kafka_tla
from hwcheck.spec.config import ModeName, resolve_mode
from hwcheck.spec.kafka_tla.state import NONE, members
from hwcheck.spec.modes import ALIASES, LADDER, without_elr, zookeeper as zookeeper_of
from hwcheck.spec.releases import UnknownRelease, mode_for

from . import render

KAFKA_TLA = kafka_tla.FAMILY
TLA_DEFAULTS = kafka_tla.Config()
# the design model's modes, from spec/modes.py (the ladder, then the aliases); a variant from
# --mode-file is named by its file, not by --mode
DESIGN_MODES = [m.name for m in LADDER] + list(ALIASES)
# kafka-tla modes the design model's --mode choice lacks
OTHER_MODES = [m for m in kafka_tla.MODES if m not in DESIGN_MODES]
DESIGN_ONLY = ("records", "crashes", "power_failures", "disk_losses", "max_epoch", "min_isr", "acks", "unclean_election",
               "response_hw", "follower_reads", "kafka", "elr", "zookeeper")
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
                     show_default=True, help="model family: design (hwcheck's own, docs/model.md) or kafka-tla (the community's "
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


def build_config(knobs: dict, only, fail):
    """The Config (of either family) the options ask for; knobs of the other family are refused
    in one line. ``only`` (``--invariant``) picks the kafka-tla invariants to check (default
    StrongIsr)."""
    ctx = click.get_current_context()
    knobs = dict(knobs)
    family = knobs.pop("model_family")
    tla = {name: knobs.pop(name) for name in TLA_ONLY}
    if family == DESIGN:
        for name in TLA_ONLY:
            if given(ctx, name):
                fail(f"{_flag(name)} applies to --model {KAFKA_TLA} only")
        return design_config(knobs, fail, families=True)
    if knobs.get("mode_file") is not None:
        fail(f"--mode-file applies to --model {DESIGN} only")
    for name in DESIGN_ONLY:
        if given(ctx, name):
            fail(f"{_flag(name)} does not apply to --model {KAFKA_TLA} (its options: --mode --replicas "
                 f"--log-size --max-records --max-leader-epoch --invariant)")
    mode = knobs["mode"] if given(ctx, "mode") else TLA_DEFAULTS.mode
    return configure(kafka_tla.Config, fail, mode=mode, replicas=knobs["replicas"], log_size=tla["log_size"],
                     max_records=tla["max_records"], max_leader_epoch=tla["max_leader_epoch"],
                     invariants=tuple(only) or TLA_DEFAULTS.invariants)


def build_model(knobs: dict, only, fail):
    """The model of :func:`build_config`'s Config."""
    return model_of(build_config(knobs, only, fail))


def configure(config_cls, fail, **settings):
    """``config_cls(**settings)``; a ConfigError becomes ``fail``'s one-line error."""
    try:
        return config_cls(**settings)
    except ConfigError as e:
        fail(str(e))


# ---------------------------------------------------------------- --mode and --mode-file

def mode_option(choices, *param_decls, **extra):
    """``--mode``, shown and completed as a choice of ``choices``; not checked here: the Config
    checks a mode (:func:`mode_named`, :func:`design_config` word its refusal)."""
    choices = list(choices)

    def complete(ctx, param, incomplete):
        return [name for name in choices if name.startswith(incomplete)]
    return click.option(*(param_decls or ("--mode",)), metavar="[" + "|".join(choices) + "]",
                        shell_complete=complete, **extra)


def _bad_mode(e: ConfigError) -> click.BadParameter:
    """The Config's refusal of a mode, as click words a bad option value (one line, exit 2)."""
    return click.BadParameter(str(e), ctx=click.get_current_context(silent=True), param_hint="'--mode'")


def mode_named(name) -> ModeName:
    """The mode an option names (a name, or a Mode from a mode file), resolved by the Config's rules."""
    try:
        return resolve_mode(name)
    except ConfigError as e:
        raise _bad_mode(e) from None


MODE_FILE_HELP = ("a Python file defining MODE, a variant of a mode (docs/variants.md); "
                  "runs with it instead of --mode")


def mode_file_option(help: str = MODE_FILE_HELP, **extra):
    return click.option("--mode-file", type=click.Path(path_type=Path), default=None, metavar="PATH",
                        help=help, **extra)


def load_mode_file(path, fail) -> variants.FileMode:
    """The variant in the file at ``path``; a bad file ends through ``fail``."""
    try:
        return variants.load(path)
    except variants.VariantError as e:
        fail(str(e))


def design_config(knobs: dict, fail, families: bool = False) -> Config:
    """The design model's Config from the knob options; ``--mode-file`` (``knobs['mode_file']``)
    loads a variant and gives its Mode as the mode, which --mode then must not. A mode the Config
    refuses is a bad ``--mode``; with ``families`` (the command has ``--model``), one of the other
    family says so."""
    knobs = dict(knobs)
    path = knobs.pop("mode_file", None)
    kafka, elr, zookeeper = knobs.pop("kafka", None), knobs.pop("elr", None), bool(knobs.pop("zookeeper", None))
    ctx = click.get_current_context(silent=True)
    if zookeeper and elr is not None:
        fail(f"--zookeeper and --{'' if elr else 'no-'}elr do not combine: Eligible Leader Replicas are KRaft's "
             "(4.x), and 4.0 removed ZooKeeper")
    if path is not None:
        if ctx is not None and given(ctx, "mode"):
            fail("--mode and --mode-file do not combine (the file's MODE is the mode)")
        knobs["mode"] = load_mode_file(path, fail)
    if kafka is not None:
        if path is not None or (ctx is not None and given(ctx, "mode")):
            fail("--kafka picks the mode: it does not combine with --mode or --mode-file")
        try:
            knobs["mode"], note = mode_for(kafka, elr, zookeeper)
        except UnknownRelease as e:
            fail(f"--kafka {kafka}: {e}")
        click.echo(f"--kafka {kafka}: mode {knobs['mode']} ({note})", err=True)
    elif elr is not None:
        knobs["mode"] = _with_elr(knobs["mode"], elr, fail)
    elif zookeeper:
        knobs["mode"] = _with_zookeeper(knobs["mode"], fail)
    try:
        return Config(**knobs)
    except ConfigError as e:
        if e.setting != "mode" or path is not None:
            fail(str(e))
        if families and knobs["mode"] in kafka_tla.MODES:
            fail(f"mode {knobs['mode']} belongs to --model {KAFKA_TLA}")
        raise _bad_mode(e) from None


def _with_elr(mode, elr: bool, fail):
    """--elr/--no-elr beside --mode: --no-elr runs the mode (name or Mode) with the ELR feature off
    (spec.modes.without_elr) and says so on stderr; either is refused in one line for a mode
    without ELR."""
    asked = mode_named(mode).definition
    off = without_elr(asked)
    if off is None:
        fail(f"--{'' if elr else 'no-'}elr: mode {asked.name} (Kafka {asked.kafka}) has no Eligible Leader "
             f"Replicas (KIP-966, 4.0+; the modes with it: {', '.join(m.name for m in LADDER if m.elr)})")
    if elr:
        return mode
    click.echo(f"--no-elr: {asked.name} (Kafka {asked.kafka}) with ELR off follows {off.name}'s rules (Kafka "
               f"{off.kafka})", err=True)
    return off


def _with_zookeeper(mode, fail):
    """--zookeeper beside --mode: a KRaft mode of 3.x runs as its ZooKeeper cluster follows it
    (spec.modes.zookeeper), said on stderr; a ZooKeeper mode runs as it is; an ELR mode (4.x) is
    refused in one line."""
    asked = mode_named(mode).definition
    if asked.elr:
        fail(f"--zookeeper: mode {asked.name} (Kafka {asked.kafka}) has no ZooKeeper cluster (4.0 removed ZooKeeper)")
    zk = zookeeper_of(asked)
    if zk is None:
        return mode
    click.echo(f"--zookeeper: {asked.name} (Kafka {asked.kafka}) on ZooKeeper follows {zk.name}'s rules (Kafka "
               f"{zk.kafka})", err=True)
    return zk


# ---------------------------------------------------------------- rendering

def settings_line(cfg) -> str:
    if not isinstance(cfg, kafka_tla.Config):
        return render.settings_line(cfg)
    d = cfg.as_dict()
    return f"model={KAFKA_TLA} " + " ".join(f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in d.items())


WIDE = "hwcheck.wide"       # ctx.meta key set by --wide (cli/options.py wide_option)


def trace_table(model, trace, violated=None) -> str:
    if getattr(model, "family", DESIGN) != KAFKA_TLA:
        ctx = click.get_current_context(silent=True)
        wide = ctx is None or ctx.meta.get(WIDE, True)      # a command without --wide: every field
        return render.trace_table(model, trace, violated, render.terminal_width(wide))
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
