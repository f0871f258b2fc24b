"""``--json`` on verify, replay, gate, modes, simulate and prove: one JSON document on stdout, nothing else there.

A command notes what it found with ``note(**fields)`` (a no-op without ``--json``); the
``@json_option(...)`` decorator a command applies adds ``--json`` and, with it given, silences the
command's human text on stdout and prints the noted document when the command ends with exit 0,
1 or 130. Bad input (exit 2) prints no
document: the one error line goes to stderr as always. ``SCHEMA`` is the JSON Schema of the
document; docs/hwcheck-json.schema.json holds it (a test keeps the two equal) and docs/cli.md
describes it.

>>> sorted(SCHEMA["$defs"])
['figures', 'gate', 'mode', 'modes', 'prove', 'replay', 'settings', 'simulate', 'verify']
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
from importlib import metadata
from typing import Optional

import click

from hwcheck.checker import variants
from hwcheck.spec.modes import without_elr, zookeeper
from hwcheck.spec.releases import releases_of

META_KEY = "hwcheck.json"

_NUM = {"type": "number", "minimum": 0}
_INT = {"type": "integer", "minimum": 0}
_STR_OR_NULL = {"type": ["string", "null"]}
_STORY = {"type": "array", "items": {"type": "string"},
          "description": "how the violation came about, one line per step that matters (spec/story.py); "
                         "design models only"}

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "hwcheck --json output",
    "type": "object",
    "required": ["hwcheck", "command", "exit_code"],
    "properties": {
        "hwcheck": {"type": "string", "description": "the hwcheck version"},
        "command": {"enum": ["verify", "replay", "gate", "modes", "simulate", "prove"]},
        "exit_code": {"enum": [0, 1, 3, 130], "description": "3: prove only, not k-inductive"},
    },
    "oneOf": [{"$ref": "#/$defs/verify"}, {"$ref": "#/$defs/replay"}, {"$ref": "#/$defs/gate"},
              {"$ref": "#/$defs/modes"}, {"$ref": "#/$defs/simulate"}, {"$ref": "#/$defs/prove"}],
    "$defs": {
        "settings": {
            "type": "object", "required": ["model", "mode", "replicas"],
            "properties": {"model": {"type": "string"}, "mode": {"type": "string"},
                           "replicas": {"type": "integer", "minimum": 1},
                           "mode_file": {"type": "string", "description": "the --mode-file the mode came from"}},
            "description": "the model family and every knob of its Config",
        },
        "figures": {
            "type": "object",
            "required": ["distinct_states", "generated_states", "depth", "elapsed_s", "states_per_second",
                         "peak_rss_mb", "collision_probability"],
            "properties": {"distinct_states": _INT, "generated_states": _INT, "depth": _INT, "elapsed_s": _NUM,
                           "states_per_second": _NUM, "peak_rss_mb": _NUM, "collision_probability": _NUM},
            "additionalProperties": False,
        },
        "verify": {
            "type": "object",
            "required": ["command", "settings", "engine", "invariants", "max_depth", "verdict", "complete",
                         "figures", "violations"],
            "properties": {
                "command": {"const": "verify"},
                "settings": {"$ref": "#/$defs/settings"},
                "engine": {"type": "string"},
                "invariants": {"type": "array", "items": {"type": "string"}, "description": "those checked"},
                "max_depth": {"type": ["integer", "null"]},
                "verdict": {"enum": ["holds", "violated", "interrupted"]},
                "complete": {"type": "boolean", "description": "false when a bound or Ctrl-C cut the search"},
                "figures": {"$ref": "#/$defs/figures"},
                "violations": {"type": "array", "items": {
                    "type": "object", "required": ["invariant", "steps", "trace"],
                    "properties": {"invariant": {"type": "string"}, "steps": _INT,
                                   "trace": {**_STR_OR_NULL, "description": "the file written; null when the "
                                             "write failed (the verdict and exit code stand)"},
                                   "story": _STORY},
                    "additionalProperties": False}},
            },
        },
        "replay": {
            "type": "object",
            "required": ["command", "trace", "settings", "steps", "claimed", "broken", "first_broken", "verdict",
                         "html"],
            "properties": {
                "command": {"const": "replay"},
                "trace": {"type": "string"},
                "settings": {"$ref": "#/$defs/settings"},
                "steps": _INT,
                "claimed": {**_STR_OR_NULL, "description": "the invariant the trace was stored for"},
                "broken": {"type": "array", "items": {"type": "string"}, "description": "in the last state"},
                "first_broken": {"type": "array", "items": {
                    "type": "object", "required": ["step", "invariant"],
                    "properties": {"step": _INT, "invariant": {"type": "string"}}}},
                "verdict": {"enum": ["replays", "no-longer-breaks", "differential"]},
                "html": _STR_OR_NULL,
                "story": {**_STORY, "description": "how the invariants broken in the last state came to break "
                                                   "(spec/story.py); design models only"},
                "differential": {
                    "type": "object",
                    "required": ["mode", "parted_at", "parted_how", "refused_at", "refused_why", "breaks"],
                    "properties": {"mode": {"type": "string"}, "parted_at": {"type": ["integer", "null"]},
                                   "parted_how": {"type": "string"}, "refused_at": {"type": ["integer", "null"]},
                                   "refused_why": {"type": "string"},
                                   "breaks": {"type": "array", "items": {
                                       "type": "object", "required": ["step", "invariant"]}}}},
            },
        },
        "gate": {
            "type": "object",
            "required": ["command", "file", "entries", "verdict", "junit"],
            "properties": {
                "command": {"const": "gate"},
                "file": {"type": "string"},
                "verdict": {"enum": ["passed", "moved", "interrupted"]},
                "junit": _STR_OR_NULL,
                "interrupted": {"type": "string", "description": "Ctrl-C: the entry under way (no verdict)"},
                "not_run": {"type": "array", "items": {"type": "string"},
                            "description": "Ctrl-C: the entries after it, never run"},
                "entries": {"type": "array", "items": {
                    "type": "object",
                    "required": ["name", "settings", "expect", "steps", "got", "passed", "figures"],
                    "properties": {"name": {"type": "string"}, "settings": {"$ref": "#/$defs/settings"},
                                   "expect": {"type": "string"}, "steps": {"type": ["integer", "null"]},
                                   "got": {"type": "string"}, "passed": {"type": "boolean"},
                                   "figures": {"$ref": "#/$defs/figures"},
                                   "trace": {"type": "string", "description": "the search starts in this trace"},
                                   "from_step": {"type": "integer", "description": "... after this many steps"},
                                   "invariants": {"type": "array", "items": {"type": "string"},
                                                  "description": "a holds entry checks only these"}}}},
            },
        },
        "mode": {
            "type": "object",
            "required": ["name", "kafka", "summary", "changes", "rules", "actions", "mode_file", "varies"],
            "properties": {
                "name": {"type": "string"},
                "parent": {"type": ["string", "null"],
                           "description": "the mode it is made from (the tree of release lines); null for the root"},
                "kafka": {"type": "string", "description": "the Kafka releases it stands for"},
                "summary": {"type": "string"},
                "changes": {"type": "array", "description": "the rules that differ from its parent",
                            "items": {"type": "object", "required": ["rule", "ref", "source"],
                                      "properties": {"rule": {"type": "string"},
                                                     "ref": {"type": "string", "description": "KIP or JIRA"},
                                                     "source": {"type": "string",
                                                                "description": "Kafka method@tag it copies"}},
                                      "additionalProperties": False}},
                "rules": {"type": "object", "description": "every rule field; functions by name",
                          "additionalProperties": {"type": ["boolean", "string", "null"]}},
                "actions": {"type": "object", "description": "replaced action functions, by action name",
                            "additionalProperties": {"type": "string"}},
                "mode_file": {**_STR_OR_NULL, "description": "the file a variant was loaded from"},
                "varies": {**_STR_OR_NULL, "description": "a variant: the nearest ladder mode"},
                "releases": {"type": "array", "description": "the exact releases pinned to it (spec/releases.py), "
                                                             "run by hwcheck reproduce --kafka",
                             "items": {"type": "object", "required": ["version", "metadata", "elr", "coordinate"],
                                       "properties": {"version": {"type": "string"},
                                                      "metadata": {"enum": ["zookeeper", "kraft"]},
                                                      "elr": {"enum": ["none", "off", "on"]},
                                                      "coordinate": {"type": "string"}},
                                       "additionalProperties": False}},
                "without_elr": {**_STR_OR_NULL, "description": "the mode its releases follow with ELR off "
                                "(--no-elr); null for a mode without ELR"},
                "zookeeper": {**_STR_OR_NULL, "description": "the mode its releases follow on a ZooKeeper cluster "
                              "(--zookeeper); null for a ZooKeeper mode or a 4.x one"},
                "differences": {"type": "array", "description": "a variant: rules and actions unlike that mode's",
                                "items": {"type": "object", "required": ["rule", "base", "variant"]}},
            },
        },
        "simulate": {
            "type": "object",
            "required": ["command", "settings", "engine", "seed", "seed_random", "runs", "time_limit", "depth",
                         "swarm", "invariants", "verdict", "figures", "coverage", "never_fired", "violations"],
            "properties": {
                "command": {"const": "simulate"},
                "settings": {"$ref": "#/$defs/settings"},
                "engine": {"enum": ["processes", "spark"]},
                "seed": _INT,
                "seed_random": {"type": "boolean", "description": "drawn at random (no --seed): --seed SEED repeats it"},
                "runs": {"type": ["integer", "null"], "description": "walks asked for (null: as many as --time allows)"},
                "time_limit": {"type": ["number", "null"]},
                "depth": _INT,
                "swarm": {"type": "boolean"},
                "invariants": {"type": "array", "items": {"type": "string"}, "description": "those checked"},
                "verdict": {"enum": ["no-violation", "violated", "interrupted"],
                            "description": "no-violation proves nothing: it says what the walks covered"},
                "figures": {
                    "type": "object",
                    "required": ["walks", "generated_states", "distinct_states", "depth", "elapsed_s",
                                 "walks_per_second", "steps_per_second", "peak_rss_mb"],
                    "properties": {"walks": _INT, "generated_states": _INT, "distinct_states": _INT, "depth": _INT,
                                   "elapsed_s": _NUM, "walks_per_second": _NUM, "steps_per_second": _NUM,
                                   "peak_rss_mb": _NUM},
                    "additionalProperties": False},
                "coverage": {"type": "object", "additionalProperties": _INT,
                             "description": "how often each action fired"},
                "never_fired": {"type": "array", "items": {"type": "string"}},
                "violations": {"type": "array", "items": {
                    "type": "object", "required": ["invariant", "walk", "found_after_s", "walk_steps", "steps",
                                                   "shrink_note", "trace"],
                    "properties": {"invariant": {"type": "string"}, "walk": _INT, "found_after_s": _NUM,
                                   "walk_steps": {**_INT, "description": "before shrinking"},
                                   "steps": {**_INT, "description": "after shrinking"},
                                   "shrink_note": {"type": "string"},
                                   "trace": {**_STR_OR_NULL, "description": "the file written; null when the "
                                             "write failed"},
                                   "story": _STORY},
                    "additionalProperties": False}},
            },
        },
        "prove": {
            "type": "object",
            "required": ["command", "settings", "invariants", "method", "k", "verdict", "verdict_line"],
            "properties": {
                "command": {"const": "prove"},
                "settings": {"$ref": "#/$defs/settings"},
                "invariants": {"type": "array", "items": {"type": "string"}, "description": "their conjunction"},
                "method": {"enum": ["k-induction", "discover", "lemmas"]},
                "k": _INT,
                "verdict": {"enum": ["proved", "violated", "not-inductive", "interrupted"]},
                "verdict_line": {"type": "string", "description": "the verdict as the text prints it"},
            },
        },
        "modes": {
            "type": "object",
            "required": ["command", "modes", "aliases", "newest"],
            "properties": {
                "command": {"const": "modes"},
                "modes": {"type": "array", "items": {"$ref": "#/$defs/mode"},
                          "description": "the ladder, oldest first, then any --mode-file variant"},
                "aliases": {"type": "object", "additionalProperties": {"type": "string"}},
                "newest": {"type": "string"},
            },
        },
    },
}


def version() -> str:
    try:
        return metadata.version("hwcheck")
    except metadata.PackageNotFoundError:
        return "unknown"


def settings(model_or_cfg) -> dict:
    """The ``settings`` object: the model family and the Config's knobs."""
    cfg = getattr(model_or_cfg, "cfg", model_or_cfg)
    family = getattr(model_or_cfg, "family", None) or ("kafka-tla" if "log_size" in cfg.as_dict() else "design")
    out = {"model": family, **cfg.as_dict()}
    path = variants.file_of(cfg)
    if path:
        out["mode_file"] = path
    return out


def _rule_json(value):
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return getattr(value, "__qualname__", None) or repr(value)


def mode_doc(m, variant: bool = False) -> dict:
    """One mode of ``hwcheck modes --json``."""
    out = {"name": m.name, "parent": m.parent or None, "kafka": m.kafka, "summary": m.summary,
           "changes": [{"rule": c.rule, "ref": c.ref, "source": c.source} for c in m.changes],
           "rules": {name: _rule_json(getattr(m, name)) for name in variants.RULES},
           "actions": {name: _rule_json(fn) for name, fn in m.actions},
           "mode_file": variants.file_of(m), "varies": None,
           "releases": [{"version": r.version, "metadata": r.metadata, "elr": r.elr, "coordinate": r.coordinate}
                        for r in releases_of(m.name)],
           "without_elr": getattr(without_elr(m), "name", None), "zookeeper": getattr(zookeeper(m), "name", None)}
    if variant:
        base = variants.closest(m)
        out["varies"] = base.name
        out["differences"] = [{"rule": name, "base": _rule_json(old), "variant": _rule_json(new)}
                              for name, old, new in variants.differences(m, base)]
    return out


def story(model, trace, names) -> dict:
    """``{"story": [...]}``: how the invariants ``names`` came to break in ``trace`` (``Model.story``);
    {} for a model that tells none (the Kafka TLA+ family)."""
    tell = getattr(model, "story", None)
    return {} if tell is None else {"story": tell(trace.states, trace.labels, list(names))}


def simulate_figures(result) -> dict:
    """The ``figures`` object of ``simulate --json``."""
    return {"walks": result.walks, "generated_states": result.generated_states,
            "distinct_states": result.distinct_states, "depth": result.depth, "elapsed_s": round(result.elapsed, 3),
            "walks_per_second": round(result.walks_per_second, 1), "steps_per_second": round(result.steps_per_second, 1),
            "peak_rss_mb": round(result.peak_rss_mb, 1)}


def figures(result) -> dict:
    return {"distinct_states": result.distinct_states, "generated_states": result.generated_states,
            "depth": result.depth, "elapsed_s": round(result.elapsed, 3),
            "states_per_second": round(result.states_per_second, 1), "peak_rss_mb": round(result.peak_rss_mb, 1),
            "collision_probability": result.collision_probability}


def _record() -> Optional[dict]:
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.meta.get(META_KEY)


def active() -> bool:
    return _record() is not None


APPENDED = {"violation": "violations", "entry": "entries"}


def note(**fields) -> None:
    """Add fields to the JSON document (nothing without --json); ``violations`` and
    ``entries`` given as one item are appended."""
    record = _record()
    if record is None:
        return
    for key, value in fields.items():
        if key in APPENDED:
            record.setdefault(APPENDED[key], []).append(value)
        else:
            record[key] = value


JSON_HELP = "print one JSON document on stdout (schema in docs/cli.md) instead of text"


def json_option(command: str, refuse=(), done="verdict", verdicts=None):
    """The decorator a command puts right over its function (so ``--json`` is its last option and
    the wrapper the outermost): adds ``--json`` and runs the command through :func:`json_callback`.
    ``verdicts`` (exit code -> verdict) lets a command's exit code give the verdict, with its
    ``verdict:`` line as the text printed it."""
    def decorate(fn):
        return click.option("--json", "as_json", is_flag=True, help=JSON_HELP)(
            json_callback(fn, command, refuse, done, verdicts))
    return decorate


def json_callback(fn, command: str, refuse=(), done="verdict", verdicts=None):
    """Wrap a command's function: with --json, its text on stdout is dropped and the noted
    document printed at the end. ``refuse`` names options that do not combine with --json;
    ``done`` is the field a finished command has noted; ``verdicts`` (exit code -> verdict) sets
    ``verdict`` from the exit code and ``verdict_line`` from the text's last ``verdict:`` line."""
    @functools.wraps(fn)
    def wrapper(as_json=False, **kwargs):
        if not as_json:
            return fn(**kwargs)
        for name in refuse:
            if kwargs.get(name):
                click.echo(f"hwcheck: error: --json does not apply to --{name.replace('_', '-')}", err=True)
                raise click.exceptions.Exit(2)
        ctx = click.get_current_context()
        record = ctx.meta[META_KEY] = {"hwcheck": version(), "command": command}
        code = 0
        text = io.StringIO()
        try:
            with contextlib.redirect_stdout(text):
                fn(**kwargs)
        except click.exceptions.Exit as e:
            code = e.exit_code
        finally:
            del ctx.meta[META_KEY]
        if verdicts and code in verdicts:
            said = [line for line in text.getvalue().splitlines() if line.startswith(("verdict:", "interrupted:"))]
            record.update(verdict=verdicts[code], verdict_line=said[-1] if said else "")
        if code not in (0, 1, 3, 130) or done not in record:
            if code == 2:
                raise click.exceptions.Exit(2)
            click.echo("hwcheck: error: --json is not available for lasso (liveness) traces", err=True)
            raise click.exceptions.Exit(2)
        record["exit_code"] = code
        click.echo(json.dumps(record, indent=2))
        raise click.exceptions.Exit(code)
    return wrapper
