"""The hwcheck command line: the ``hwcheck`` group and its entry point. Each command lives in its own
module (cli/verify.py, replay.py, gate.py, modes.py, simulate.py, graph.py, symbolic.py, reproduce.py,
explore.py),
which declares all of its options over its function (sharing the helpers of cli/options.py); this
module only adds the commands to the group. Exit codes: 0 every invariant holds within the bounds
(replay: the trace replays as stored), 1 a violation was found (replay: the stored invariant no
longer breaks), 2 bad usage or input, 130 interrupted."""

from __future__ import annotations

import ctypes
import sys

import click

from hwcheck.checker import variants

from . import jsonout
from .gate import gate
from .graph import graph
from .modes import modes
from .options import EXIT_HOLDS, EXIT_INTERRUPTED, EXIT_USAGE
from .replay import replay
from .reproduce import reproduce
from .conform import conform
from .explore import explore
from .simulate import simulate
from .symbolic import prove
from .verify import verify

COMMANDS = (verify, replay, gate, modes, simulate, graph, prove, reproduce, conform, explore)

_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", None)     # click 8.2+


class OneLineErrors(click.Group):
    """Usage errors (a bad option value, a missing file argument) as one line and exit 2, as
    every other bad input, and so is a --mode-file action function that fails while the engine
    runs; Ctrl-C outside an engine as one line and exit 130."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.ClickException as e:
            if _NO_ARGS_IS_HELP is not None and isinstance(e, _NO_ARGS_IS_HELP):
                e.show()                         # `hwcheck` alone: the help, as click prints it
                sys.exit(e.exit_code)
            hint = ""
            if isinstance(e, click.UsageError) and e.ctx is not None:
                hint = f" (see {e.ctx.command_path} --help)"
            click.echo(f"hwcheck: error: {e.format_message()}{hint}".replace("\n", " "), err=True)
            sys.exit(EXIT_USAGE)
        except click.Abort:
            click.echo("hwcheck: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except variants.VariantError as e:       # a --mode-file's action function failed mid-search
            click.echo(f"hwcheck: error: {e}", err=True)
            sys.exit(EXIT_USAGE)
        sys.exit(code if isinstance(code, int) else EXIT_HOLDS)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=jsonout.version(), prog_name="hwcheck", message="%(prog)s %(version)s")
def cli():
    """hwcheck: a model checker for Kafka's replication protocol (HW, LEO, ISR, leader epoch).

    \b
    Example:
      hwcheck verify --mode=hw            # exit 1: a violation, its trace written
      hwcheck replay hwcheck-hw-NoCommittedDataLoss.itf.json --html loss.html
    Shell completion (bash): eval "$(_HWCHECK_COMPLETE=bash_source hwcheck)"
    """


def main() -> None:
    try:
        cli(standalone_mode=True)
    except KeyboardInterrupt:
        click.echo("hwcheck: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except ctypes.ArgumentError as e:           # Ctrl-C while ctypes converted an argument (z3's C API)
        if "KeyboardInterrupt" not in str(e):
            raise
        click.echo("hwcheck: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)


for _command in COMMANDS:
    cli.add_command(_command)
