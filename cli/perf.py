"""``verify --symmetry`` and ``verify --workers N`` (issue 8).

main.py's verify calls ``bfs``; ``register`` adds the two options and wraps verify's callback so
that, for the duration of the call, verify's ``bfs`` is one with these settings bound.
"""

from __future__ import annotations

import functools

import click

from hwcheck.checker.bfs import bfs, default_workers

PERF_OPTIONS = [
    click.Option(["--symmetry"], is_flag=True,
                 help="explore one state per class of states equal up to renaming replicas "
                      "(counts are of classes; verdicts and trace lengths do not change)"),
    click.Option(["--workers"], type=click.IntRange(min=1), default=None,
                 help="processes expanding each large BFS level (default: all cores; results do not depend on it)"),
]


def register(verify, module) -> None:
    """Extend ``verify`` (defined in ``module``, which calls ``module.bfs``) with the options."""
    verify.params.extend(PERF_OPTIONS)
    inner = verify.callback

    @functools.wraps(inner)
    def callback(*args, symmetry=False, workers=None, **kwargs):
        engine = functools.partial(bfs, symmetry=symmetry, workers=workers or default_workers())
        saved, module.bfs = module.bfs, engine
        try:
            return inner(*args, **kwargs)
        finally:
            module.bfs = saved

    verify.callback = callback
