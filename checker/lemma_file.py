"""A proof's lemmas as a file: what ``prove --discover --save-lemmas FILE`` writes and
``prove --lemmas FILE`` checks.

Finding an inductive invariant can take an hour of Houdini rounds and learning (checker/houdini.py
``discover``); checking one is a single z3 query (``check_lemmas``). A lemma file keeps what was
found so that the proof can be checked again, by CI or by a reader, in the time of that query, as
Apalache and TLAPS users keep an inductive invariant beside the spec. Soundness does not depend on
the file: every lemma is rebuilt from this version's templates and atoms, and the check asks z3
from scratch.

The file is JSON: the settings it was found under (a proof is about one set of bounds), the goals
it proves (the invariants and EncodingBounds), and each lemma by family and name; a clause of
the clause or blocking family also lists its literals by the names of the atoms or scalars they
read, so that it reads back without the reachable states it was learned from. Found under a
variant (``--mode-file``, docs/variants.md), the settings name the variant's mode and
``mode_file`` the file it came from: the file is read back under the run's Config, whose Mode
stands for the recorded name when the names agree (a variant is not registered anywhere).

>>> from hwcheck.spec import Config, Model
>>> from hwcheck.checker.houdini import HOLDS, check_lemmas, discover
>>> model = Model(Config(mode="hw", records=1, crashes=0))
>>> d = discover(model, ["NoLogDivergence"])
>>> goals, lemmas = read_back(model, to_json(model, d))
>>> goals, check_lemmas(model, goals, lemmas).verdict == HOLDS
(['NoLogDivergence'], True)
"""

from __future__ import annotations

from dataclasses import asdict
from typing import List, Optional, Tuple

from hwcheck.spec import Config, ConfigError
from hwcheck.spec.config import config_from_mapping
from hwcheck.spec.lemmas.atoms import scalars

from .bmc import BOUNDS
from .cubes import blocking_clause, cube_from_literals
from .houdini import HOLDS, Clauses, Discovery, Lemma, candidates, lookahead
from .symbolic import CONCRETE, Encoding
from .variants import file_of

FORMAT = "hwcheck lemmas 1"


class LemmaFileError(ValueError):
    """The file is not a lemma file this version reads (one line, for the user)."""


def to_json(model, d: Discovery) -> dict:
    """The inductive set ``discover`` found (verdict holds), as a lemma file's JSON."""
    if d.verdict != HOLDS:
        raise ValueError(f"no proof to save: the verdict is {d.verdict}")
    entries = []
    for lem in d.survivors:
        entry = {"family": lem.family, "name": lem.name}
        if lem.family == "clause":
            entry["literals"] = [[name, value] for name, value in d.clauses.literals(lem.name)]
        elif lem.family == "blocking":
            entry["literals"] = [list(lit) for lit in d.atoms.literals(lem.name)]
        entries.append(entry)
    doc = {"format": FORMAT, "config": asdict(model.cfg), "goals": [g for g in d.goals if g != BOUNDS],
           "lemmas": entries}
    path = file_of(model.cfg)
    if path:
        doc["mode_file"] = path
    return doc


def settings(doc: dict, cfg: Optional[Config] = None) -> Config:
    """The settings a lemma file was found under. ``cfg``: the run's Config; when the file's mode
    is the one ``cfg`` names, it is ``cfg``'s Mode (a variant of a mode file has no other home)."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise LemmaFileError(f"not a lemma file (no \"format\": \"{FORMAT}\")")
    found = doc.get("config") or {}
    if cfg is not None and isinstance(found, dict) and found.get("mode") == cfg.mode:
        found = {**found, "mode": cfg.mode_definition}
    try:
        return config_from_mapping(Config, found)
    except (ConfigError, TypeError) as e:
        path = doc.get("mode_file")
        hint = f" (a mode of {path}: check it with --mode-file {path})" if isinstance(path, str) else ""
        raise LemmaFileError(f"its settings: {e}{hint}") from None


def read_back(model, doc: dict) -> Tuple[List[str], List[Lemma]]:
    """(the goals, the lemmas) of a lemma file found under ``model``'s settings, rebuilt: templates
    and lookahead lemmas by name, clauses from their literals (each must read back to its name)."""
    if settings(doc, model.cfg) != model.cfg:
        raise LemmaFileError("it was found under other settings")
    goals, built = _build(model, doc)
    for lem in built:
        if isinstance(lem, str):
            raise LemmaFileError(lem)
    return goals, built


def read_back_what_it_can(model, doc: dict) -> Tuple[List[str], List[Lemma], List[str]]:
    """(the goals, the lemmas ``model``'s layout can state, the names of the others), whatever
    the settings the file was found under: the same lemmas in another mode (a sanity check: in a
    mode where a goal is violated, no subset of them can be a proof)."""
    goals, built = _build(model, doc)
    return (goals, [lem for lem in built if not isinstance(lem, str)],
            [entry["name"] for entry, lem in zip(doc["lemmas"], built) if isinstance(lem, str)])


def _build(model, doc: dict) -> Tuple[List[str], list]:
    """The goals, and per lemma of the file the Lemma or why it cannot be built (a string)."""
    settings(doc, model.cfg)
    goals, entries = doc.get("goals"), doc.get("lemmas")
    known = [name for name, _ in model.invariants]
    if not isinstance(goals, list) or not goals or any(g not in known for g in goals):
        raise LemmaFileError(f"its goals must be invariants of the model ({', '.join(known)})")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise LemmaFileError("its \"lemmas\" must be a list of objects")
    cenc = Encoding(model, CONCRETE)
    init = model.init_states()[0]
    named = {lem.name: lem for lem in candidates(cenc) + lookahead(cenc, goals + [BOUNDS])}
    clauses = Clauses(cenc, [init])
    scalar_names = [name for name, _, _ in scalars(cenc, cenc.of_state(init))]
    out: list = []
    for entry in entries:
        family, name = entry.get("family"), entry.get("name")
        try:
            if family == "clause":
                lem = clauses.from_literals(entry["literals"])
            elif family == "blocking":
                built, term = blocking_clause(scalar_names, cube_from_literals(scalar_names, entry["literals"]))
                lem = Lemma(built, "blocking", term)
            else:
                lem = named[name]
        except (KeyError, TypeError, ValueError) as e:
            out.append(f"lemma {name!r} ({family}): this version cannot build it ({e})")
            continue
        if lem.name != name or lem.family != family:
            out.append(f"lemma {name!r} ({family}) reads back as {lem.name!r} ({lem.family})")
        else:
            out.append(lem)
    return goals, out
