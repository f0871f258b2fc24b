"""The hwcheck command line: the ``hwcheck`` group and its entry point. Each command lives in its own
module (cli/verify.py, replay.py, gate.py, modes.py, simulate.py, graph.py, symbolic.py), sharing the helpers of
cli/options.py; this module only assembles them and wraps their callbacks (--mode-file on replay,
--quiet/--verbose, --json). Exit codes: 0 every invariant holds within the bounds (replay: the trace
replays as stored), 1 a violation was found (replay: the stored invariant no longer breaks), 2 bad
usage or input, 130 interrupted."""

from __future__ import annotations

import ctypes
import sys

import click

from hwcheck.checker import variants

from . import jsonout
from .models import replay_mode_file
from .options import EXIT_HOLDS, EXIT_INTERRUPTED, EXIT_USAGE, fail, read_text, refuse_quiet_with_verbose
from . import graph as _graph, symbolic as _symbolic
from .gate import gate
from .modes import modes
from .replay import replay
from .reproduce import reproduce
from .simulate import simulate
from .verify import verify

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


for _command in (verify, replay, gate, modes):
    cli.add_command(_command)

# the state-graph commands (issue 6): `hwcheck graph`, `verify --liveness`, `replay --focus`
cli.add_command(_graph.graph)
_graph.register(verify, replay)

# the z3 engine (issue 4): `verify --engine z3 --depth K` (in verify above), `hwcheck prove`
cli.add_command(_symbolic.prove)

# random walks for what bfs cannot finish (issue 15): `hwcheck simulate`
cli.add_command(simulate)

# real Kafka clusters (issue 37): `hwcheck reproduce`
cli.add_command(reproduce)

# --mode-file on replay: outside --focus and lassos (cli/graph.py), which replay the variant too
replay.callback = replay_mode_file(replay.callback, fail, read_text)

# --quiet with --verbose is refused on every command that has both
for _command in (verify, replay, gate, simulate):
    _command.callback = refuse_quiet_with_verbose(_command.callback)

# --json on verify, replay, gate and modes (issue 9): registered last, so it wraps every other option
jsonout.register(verify, "verify", refuse=("liveness",))
jsonout.register(replay, "replay", refuse=("focus",))
jsonout.register(gate, "gate")
jsonout.register(modes, "modes", done="modes")
