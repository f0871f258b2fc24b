"""What the commands share: exit codes, the one-line error, the knob options, and reading and
writing the files a command names. Every command module imports from here and declares its
options over its own function (the shared groups here as named decorators); the entry point
(cli/main.py) only adds the commands to the ``hwcheck`` group, and no module imports main.py."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from hwcheck.spec import Config
from hwcheck.spec.config import ACKS, RESPONSE_HW

from .models import WIDE, DESIGN_MODES, OTHER_MODES, design_config, mode_file_option, mode_option, with_options

EXIT_HOLDS, EXIT_VIOLATION, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
DEFAULTS = Config()


def fail(message: str) -> "click.exceptions.Exit":
    """One line on stderr, exit 2: the way every bad input ends."""
    # a name read from a file may hold a line break (\n, \x85, \u2028, ...): escape it, keep one line
    one_line = "".join(ch.encode("unicode_escape").decode() if len(f"a{ch}b".splitlines()) > 1 else ch
                       for ch in message)
    click.echo(f"hwcheck: error: {one_line}", err=True)
    raise click.exceptions.Exit(EXIT_USAGE)


def switch(decls: str, *names, default=None, shown: str = "", **extra):
    """A flag pair ``--on/--off``: the last one given wins in click, so giving both is refused
    here in one line (exit 2); ``shown`` is the default as --help shows it."""
    def one_way(ctx, param, values):
        if len(set(values)) > 1:
            fail(f"{param.opts[0]} and {param.secondary_opts[0]} contradict each other: give one")
        return values[-1] if values else default
    if shown:
        extra["help"] = f"{extra.get('help', '')}  [default: {shown}]".strip()
    return click.option(decls, *names, multiple=True, callback=one_way, **extra)


# --wide is read where trace tables are drawn (cli/models.trace_table), through the context
wide_option = click.option("--wide", is_flag=True, expose_value=False,
                           callback=lambda ctx, param, value: ctx.meta.__setitem__(WIDE, value),
                           help="the trace table with every field however wide (default: a terminal narrower than "
                                "the table gets it without the LEO and the fields no step changes)")


def knob_options(fn=None, *, modes=None):
    """Every knob of Config as an option, defaults from Config itself (one source of truth).
    ``modes``: the --mode choices (default: the design model's modes and the kafka-tla ones,
    for a command that also takes --model)."""
    if fn is None:
        return lambda f: knob_options(f, modes=modes)
    choices = list(modes) if modes is not None else DESIGN_MODES + OTHER_MODES
    options = [
        mode_option(choices, default=DEFAULTS.mode, show_default=True,
                    help="the Kafka release range to model (hwcheck modes lists them; epoch = the newest)"),
        mode_file_option(),
        click.option("--replicas", type=int, default=DEFAULTS.replicas, show_default=True),
        click.option("--records", type=int, default=DEFAULTS.records, show_default=True,
                     help="records the producer sends"),
        click.option("--crashes", type=int, default=DEFAULTS.crashes, show_default=True,
                     help="broker crashes (memory lost, disk kept)"),
        click.option("--power-failures", type=int, default=DEFAULTS.power_failures, show_default=True,
                     help="crashes that also lose the unflushed log tail"),
        click.option("--disk-losses", type=int, default=DEFAULTS.disk_losses, show_default=True,
                     help="crashes after which the broker comes back to an empty disk"),
        click.option("--max-epoch", type=int, default=DEFAULTS.max_epoch, show_default=True,
                     help="leader elections allowed (epoch bound)"),
        click.option("--min-isr", type=int, default=DEFAULTS.min_isr, show_default=True,
                     help="min.insync.replicas"),
        click.option("--acks", type=click.Choice(ACKS), default=DEFAULTS.acks, show_default=True),
        switch("--unclean-election/--clean-election", default=DEFAULTS.unclean_election,
               shown="unclean" if DEFAULTS.unclean_election else "clean", help="unclean.leader.election.enable"),
        click.option("--response-hw", type=click.Choice(RESPONSE_HW), default=DEFAULTS.response_hw,
                     show_default=True, help="fetch response carries the leader HW from after or before its update; "
                                             "kafka: before when it carries records, after when empty"),
        switch("--follower-reads/--leader-reads", default=DEFAULTS.follower_reads,
               shown="follower" if DEFAULTS.follower_reads else "leader",
               help="consumers may also read from followers (KIP-392, 2.4+)"),
        click.option("--kafka", "kafka", metavar="VERSION", default=None,
                     help="pick the mode by Kafka release instead of --mode: 3.9.1, or 3.9 for the newest 3.9.x "
                     "(hwcheck modes lists the ranges)"),
        switch("--elr/--no-elr", "elr",
                     help="Eligible Leader Replicas on or off (4.x): --no-elr runs the mode a cluster without the "
                     "feature follows (4.0's default; a 4.1+ cluster upgraded from 3.x); default: the mode's, or "
                     "with --kafka the release's"),
        click.option("--zookeeper", "zookeeper", is_flag=True, default=None,
                     help="a ZooKeeper cluster (3.x): with --kafka 3.6-3.9 or a KRaft --mode of those releases, run "
                     "the mode its ZooKeeper cluster follows (the KRaft-only rules off), said on stderr"),
    ]
    return with_options(fn, options)


def refuse_quiet_with_verbose(quiet: bool, verbose: bool) -> None:
    """--quiet and --verbose exclude each other (one line, exit 2); a command that has both
    checks it before any work."""
    if quiet and verbose:
        fail("--quiet and --verbose exclude each other: give one")


def interrupted(covered: str):
    """Ctrl-C: one line of what was covered, exit 130."""
    click.echo(f"interrupted: {covered}")
    raise click.exceptions.Exit(EXIT_INTERRUPTED)


def make_config(**knobs) -> Config:
    return design_config(knobs, fail)


def check_writable(path: Path, force: bool) -> None:
    """Refuse, before any work, to replace an existing file unless --force or a yes at an
    interactive prompt; refuse a path whose folder does not exist, or that cannot be opened for
    writing (a read-only folder, /sys, no permission), so a long search never ends in a file it
    cannot write. Nothing is written: a new file is created and removed again, an existing one
    opened for appending and closed."""
    if path.is_dir():
        fail(f"{path} is a directory")
    if not path.parent.is_dir():
        fail(f"cannot write {path}: folder {path.parent} does not exist")
    exists = path.exists()
    if exists and not force:
        if not (sys.stdin.isatty() and click.confirm(f"{path} exists; overwrite?", default=False, err=True)):
            fail(f"{path} exists; not overwriting it (use --force or another path)")
    try:
        if exists:                              # non-blocking: a pipe without a reader is refused, not waited on
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK))
        else:
            with open(path, "x"):
                pass
            path.unlink()
    except FileExistsError:
        pass                                    # created meanwhile by someone else: the write decides
    except OSError as e:
        fail(f"cannot write {path}: {e.strerror}")


def write_file(path: Path, text: str) -> Path:
    try:
        path.write_text(text)
    except OSError as e:
        fail(f"cannot write {path}: {e.strerror}")
    return path


def write_after_run(path: Path, text: str, what: str) -> bool:
    """Write what a finished search produced. A failure (a full disk, /dev/full) is one line on
    stderr saying what could not go where, and the command keeps the exit code of its verdict:
    the search's answer is not lost to a file. False when the write failed."""
    try:
        path.write_text(text)
    except OSError as e:
        click.echo(f"hwcheck: cannot write {what} to {path}: {e.strerror} (the verdict stands)", err=True)
        return False
    return True


def write_trace(path: Path, doc: dict) -> bool:
    """Write an ITF document after a search and say where (or that ``path`` refused it, the
    verdict standing: ``write_after_run``). False when the write failed."""
    written = write_after_run(path, json.dumps(doc, indent=1) + "\n", "the trace")
    click.echo(f"trace: {path} (replay with: {replay_command(path, doc['#meta']['hwcheck'].get('mode_file'))})"
               if written else f"trace: not written ({path} refused it)")
    return written


def replay_command(path: Path, mode_file=None) -> str:
    """The command that replays a trace written at ``path``, with the mode file of a variant's."""
    return f"hwcheck replay {path}" + (f" --mode-file {mode_file}" if mode_file else "")


def free_default_path(cfg: Config, invariant: str) -> Path:
    """hwcheck-<mode>-<invariant>.itf.json in the current directory, numbered if taken."""
    base = f"hwcheck-{cfg.mode}-{invariant}"
    path, i = Path(f"{base}.itf.json"), 1
    while path.exists():
        path, i = Path(f"{base}-{i}.itf.json"), i + 1
    return path


def read_text(path: Path) -> str:
    """The text of a file a command names; ``-`` is standard input (a trace piped in)."""
    try:
        if str(path) == "-":
            return sys.stdin.read()
        return path.read_text()
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    except UnicodeDecodeError:
        fail(f"{path}: not a text file")
