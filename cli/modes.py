"""``hwcheck modes``: the modes of the design model and what each changes; every option of the command
is declared here."""

from __future__ import annotations

import shutil


import click

from hwcheck.spec.modes import ALIASES, LADDER

from . import jsonout
from .models import load_mode_file, mode_file_option
from .options import EXIT_HOLDS, fail
from .render import modes_table


@click.command()
@mode_file_option(help="also list the variant this Python file defines (docs/variants.md)")
@jsonout.json_option("modes", done="modes")
def modes(mode_file):
    """List the modes: the Kafka releases each stands for and the rules it changes from the one
    before it, each with its KIP/JIRA and the Kafka source (method@tag) it copies.

    \b
    Example:
      hwcheck modes --mode-file docs/examples/expand_at_hw.py
    """
    extra = [load_mode_file(mode_file, fail)] if mode_file is not None else []
    jsonout.note(modes=[jsonout.mode_doc(m) for m in LADDER] + [jsonout.mode_doc(m, variant=True) for m in extra],
                 aliases=dict(ALIASES), newest=LADDER[-1].name)
    width = shutil.get_terminal_size((120, 24)).columns
    click.echo(modes_table(LADDER, ALIASES, extra, width=width))
    raise click.exceptions.Exit(EXIT_HOLDS)
