"""The interface every engine sees: a ``Model`` (after Stateright's ``Model`` trait).

checker/'s engines are generic: they reach a model only through these names, never through a
family's state layout. Each model family supplies its own class (spec/model.py for the design model,
spec/kafka_tla/model.py for the community's TLA+ spec); checker/families.py builds one from a
config. The exception is checker/symbolic.py, the design family's z3 encoding (and what is built on
it: bmc.py, houdini.py, cubes.py, lemma_file.py): it reads the design model's ``rules`` and
``_actions`` and its state layout (spec/terms.py), and the design family only is sent there
(checker/check.py refuses ``--engine z3`` for another).

Required:

- ``cfg``: the settings it was built from (``cfg.mode``, ``cfg.replicas``, ``as_dict()``);
- ``init_states()``, ``successors(s)`` (``(label, next state)`` pairs), ``step(s, label)``;
- ``invariants``: ``(name, predicate)`` pairs; ``violated(s)``: the names that fail in ``s``;
- ``format_label(label)``, ``parse_label(text)``: labels as traces write them;
- ``to_json(s)``: the state as ITF variables.

Optional (an engine that needs one checks for it and refuses the model without it, in one line, or
does without it where said):

- ``rename(s, perm)``, ``symmetry_keys(s)``: the state with replica r renamed perm[r], and per
  replica what renaming cannot change (``--symmetry``, ``graph --reduce symmetry``);
- ``summary(s)``: the state in a few lines (``hwcheck graph``'s export);
- ``liveness``: ``(name, settled)`` pairs, and ``fair_actions``: the kinds of action under weak
  fairness (``verify --liveness``);
- ``action_names``: the kinds of action, and ``events``: those that happen to the brokers
  (failures, an operator's steps) rather than what they do (checker/simulate.py's swarm; none
  without them);
- ``moves``: every step the model can take, ``(label, fn, args)`` in ``successors``' order, with
  ``fn(s, *args)`` the state ``step(s, label)`` reaches or None (checker/simulate.py then draws a
  walk's step by trying moves in a random order until one is enabled, instead of building every
  successor; without it, from ``successors``);
- ``narrowed(s)``: the model with its budgets cut to what the path to ``s`` used (checker/shrink.py
  confirms a shrunk trace by a bfs of it first; without it, only of the model as it is);
- ``itf_vars``: the names of the ITF variables (checker/trace.py; the design model's by default);
- ``story(states, labels, names)``: how the invariants ``names``, broken in the last state, came to
  break, a few lines (under a trace table, in ``--json`` and the HTML report; none without it).

>>> from hwcheck.spec import Config, Model as DesignModel
>>> from hwcheck.spec import kafka_tla
>>> isinstance(DesignModel(Config(mode="hw")), Model), isinstance(kafka_tla.Model(kafka_tla.Config()), Model)
(True, True)
>>> has(DesignModel(Config(mode="hw")), "liveness"), has(kafka_tla.Model(kafka_tla.Config()), "liveness")
(True, False)
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, List, Optional, Protocol, Tuple, runtime_checkable

Label = Tuple          # (action name, arguments...)

OPTIONAL = ("rename", "symmetry_keys", "summary", "liveness", "fair_actions", "action_names", "events", "moves",
            "narrowed", "itf_vars", "story")


@runtime_checkable
class Model(Protocol):
    cfg: Any
    invariants: Tuple[Tuple[str, Callable[[Any], bool]], ...]

    def init_states(self) -> List[Any]: ...

    def successors(self, s) -> Iterator[Tuple[Label, Any]]: ...

    def step(self, s, label: Label) -> Optional[Any]: ...

    def violated(self, s) -> List[str]: ...

    def format_label(self, label: Label) -> str: ...

    def parse_label(self, text: str) -> Label: ...

    def to_json(self, s) -> dict: ...


def has(model, piece: str) -> bool:
    """Whether the model supplies the optional piece ``piece`` (one of ``OPTIONAL``)."""
    if piece not in OPTIONAL:
        raise ValueError(f"not an optional piece of the Model protocol: {piece!r}")
    return getattr(model, piece, None) is not None
