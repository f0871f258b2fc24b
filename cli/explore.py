"""``hwcheck explore [TRACE]``: serve the explorer (hwcheck.explore) on 127.0.0.1 until Ctrl-C.
Every option of the command is declared here; the knobs are verify's (cli/options.py)."""

from __future__ import annotations

import webbrowser
from pathlib import Path

import click

from hwcheck.checker.families import model_of
from hwcheck.explore.server import HOST, make_server
from hwcheck.explore.session import ExploreError, Session

from .models import build_config, given, model_options, settings_line
from .options import EXIT_INTERRUPTED, fail, knob_options
from .replay import load_trace, with_mode_file

# the options that choose the mode (--kafka, --elr and --zookeeper where the knobs have them): with TRACE
# they run its steps under that mode; of the other knobs none applies, the trace's own settings do
MODE_CHOOSERS = ("mode", "kafka", "elr", "zookeeper")
WITH_TRACE = frozenset({"mode_file", "model_family", *MODE_CHOOSERS})


@click.command()
@knob_options
@model_options
@click.argument("trace_file", metavar="[TRACE]", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="the port on 127.0.0.1 (0: a free one)")
@click.option("--open", "open_browser", is_flag=True, help="open the page in the default browser")
def explore(trace_file, port, open_browser, **knobs):
    """Walk the protocol by hand in a browser, or step through a trace (and its steps under another
    mode with --mode): a local page on 127.0.0.1 over the same model the engines check.

    \b
    Example:
      hwcheck explore --mode=hw --open
      hwcheck explore counterexamples/kafka15583-power-failure-min-isr-2-loss.itf.json --mode kip966
    """
    ctx = click.get_current_context()
    cfg = build_config(knobs, (), fail)
    session = Session(model_of(cfg))
    try:
        if trace_file is not None:
            open_trace(ctx, session, trace_file, cfg, knobs)
        server = make_server(session, port)
    except ExploreError as e:
        fail(str(e))
    except OSError as e:
        fail(f"cannot serve on {HOST}:{port}: {e.strerror or e}")
    click.echo(f"hwcheck explore: {settings_line(session.model.cfg)}")
    click.echo(f"serving {server.url} (Ctrl-C stops it)", nl=True)
    if open_browser:
        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    click.echo("interrupted: the explorer stopped")
    raise click.exceptions.Exit(EXIT_INTERRUPTED)


def open_trace(ctx, session: Session, trace_file: Path, cfg, knobs: dict) -> None:
    """Step through TRACE under its own settings; with --mode (or a --mode-file of another mode),
    its steps under that mode (a differential replay)."""
    ignored = [p.opts[0] for p in ctx.command.params
               if p.name in knobs and p.name not in WITH_TRACE and given(ctx, p.name)]
    if ignored:
        fail(f"{', '.join(ignored)}: with TRACE the trace's own settings apply (--mode or --mode-file "
             "runs its steps under another mode)")
    doc, error = load_trace(trace_file)
    if doc is None:
        fail(f"{trace_file}: {error}")
    other = cfg.mode if any(given(ctx, name) for name in MODE_CHOOSERS) else None
    doc, other = with_mode_file(trace_file, doc, knobs.get("mode_file"), other, html=None, focus=False)
    session.open_trace(doc, trace_file.name)
    if other is not None and str(getattr(other, "name", other)) != session.mode_name:
        session.switch_mode(other)
