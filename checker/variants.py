"""A user's mode, loaded from a Python file (``--mode-file PATH``): the I/O the spec leaves out.

The file defines a module-level ``MODE``, a :class:`hwcheck.spec.modes.Mode` made with
``MODES[...].variant(...)`` (docs/variants.md). :func:`load` runs the file, checks ``MODE`` and
returns it as a :class:`FileMode`, the same Mode that also knows its file. Nothing is registered:
the Mode travels in the Config (``Config(mode=load(path))``), into the processes bfs forks with the
model, and to Spark's executors pickled (checker/spark.py ``ship_config``: the file's functions by
value). Everything that can go wrong is a :class:`VariantError` whose message is one line naming
the file.

>>> import pickle, tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "v.py"
>>> _ = path.write_text("from hwcheck.spec.modes import MODES\\n"
...                     "MODE = MODES['kip380'].variant('doc-what-if', expand_waits_for_epoch_start=False)\\n")
>>> mode = load(path)
>>> from hwcheck.spec import Config
>>> cfg = Config(mode=mode)
>>> cfg.mode, file_of(cfg) == str(path.resolve()), pickle.loads(pickle.dumps(cfg)) == cfg
('doc-what-if', True, True)
>>> from hwcheck.spec.modes import MODES
>>> differences(mode, MODES["kip380"]), "doc-what-if" in MODES
([('expand_waits_for_epoch_start', True, False)], False)
>>> _ = path.write_text("MODE = 5\\n")
>>> try:
...     load(path)
... except VariantError as e:
...     print(str(e).replace(str(path), "v.py"))
v.py: MODE is of type int, not a Mode (make it with MODES['kip380'].variant(name=..., ...); see docs/variants.md)
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
import sys
import traceback
import types
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

from hwcheck.spec.actions import ACTIONS
from hwcheck.spec.modes import ALIASES, LADDER, RULES, Mode
from hwcheck.spec.state import State

ACTION_NAMES = tuple(name for name, _, _ in ACTIONS)
BUILT_IN = frozenset(m.name for m in LADDER) | frozenset(ALIASES)
# a mode's name becomes part of file names (hwcheck-<mode>-<invariant>.itf.json)
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
HOW = "make it with MODES['kip380'].variant(name=..., ...); see docs/variants.md"


class VariantError(ValueError):
    """A mode file that cannot be used; the message is one line naming the file. Also raised
    while checking, when one of the file's action functions fails or returns something else
    than a State or None."""


@dataclass(frozen=True)
class FileMode(Mode):
    """A Mode loaded from a mode file: ``file`` the file (resolved), ``module`` the name of the
    module its code ran as (in ``sys.modules``)."""
    file: str = ""
    module: str = ""


def load(path) -> FileMode:
    """Run the file at ``path`` and check its ``MODE``; the Mode, its action functions guarded."""
    path = Path(path)
    module = _run(path)
    mode = module.__dict__.get("MODE")
    if mode is None:
        raise VariantError(f"{path}: defines no MODE ({HOW})")
    if not isinstance(mode, Mode):
        raise VariantError(f"{path}: MODE is of type {type(mode).__name__}, not a Mode ({HOW})")
    problem = check(mode)
    if problem:
        raise VariantError(f"{path}: {problem}")
    rules = {f.name: getattr(mode, f.name) for f in dataclasses.fields(Mode)}
    rules["actions"] = tuple((name, Guarded(name, fn, str(path))) for name, fn in mode.actions)
    return FileMode(**rules, file=str(path.resolve()), module=module.__name__)


def _run(path: Path) -> types.ModuleType:
    """The file executed as a module of its own (kept in sys.modules, as an import would)."""
    if path.is_dir():
        raise VariantError(f"cannot read mode file {path}: it is a directory")
    try:
        source = path.read_bytes()
    except OSError as e:
        raise VariantError(f"cannot read mode file {path}: {e.strerror}") from None
    try:
        code = compile(source, str(path), "exec")
    except SyntaxError as e:
        raise VariantError(f"{path}, line {e.lineno}: syntax error: {e.msg}") from None
    except ValueError as e:            # null bytes, an undecodable file
        raise VariantError(f"{path}: not a Python file: {e}") from None
    name = "hwcheck_variant_" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except (Exception, SystemExit) as e:
        del sys.modules[name]
        raise VariantError(f"{path}{_line_in(path, e)}: {_what(e)}") from None
    return module


class Guarded:
    """A user's action function whose failure is a one-line VariantError naming the file. A class,
    not a closure, so that a variant's Mode pickles (the function itself by reference, or by value
    where Spark's executors need it)."""

    def __init__(self, name: str, fn, path: str):
        self.name, self.fn, self.path = name, fn, path
        functools.update_wrapper(self, fn)

    def __call__(self, state, rules, *ids):
        try:
            nxt = self.fn(state, rules, *ids)
        except Exception as e:
            raise VariantError(f"{self.path}{_line_in(Path(self.path), e)}: action {_label(self.name, ids)} "
                               f"raised {_what(e)}") from None
        if nxt is not None and not isinstance(nxt, State):
            raise VariantError(f"{self.path}: action {_label(self.name, ids)} returned a {type(nxt).__name__}, "
                               "not the next State or None")
        return nxt

    def __eq__(self, other):
        return isinstance(other, Guarded) and (self.name, self.fn, self.path) == (other.name, other.fn, other.path)

    def __hash__(self):
        return hash((self.name, self.fn, self.path))

    def __repr__(self):
        return f"<action {self.name} of {self.path}: {self.fn!r}>"


def _label(name: str, ids) -> str:
    return f"{name}({','.join(f'r{r}' for r in ids)})"


def _line_in(path: Path, e: BaseException) -> str:
    """', line N' of the innermost frame in the user's file, if any."""
    line = None
    for frame in traceback.extract_tb(e.__traceback__):
        if frame.filename == str(path):
            line = frame.lineno
    return f", line {line}" if line else ""


def _what(e: BaseException) -> str:
    text = " ".join(str(e).split())
    if isinstance(e, TypeError) and text.startswith("unknown rule"):
        return f"{text}; the rules are {', '.join(RULES)}"
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def check(mode: Mode) -> Optional[str]:
    """What is wrong with a user's Mode, in a few words; None when it can be run."""
    if not isinstance(mode.name, str) or not NAME.match(mode.name):
        return (f"MODE's name {mode.name!r} must be a short name of letters, digits, '.', '_' and '-' "
                "(it becomes part of trace file names)")
    if mode.name in BUILT_IN:
        return (f"MODE is named {mode.name!r}, the name of a built-in mode; give the variant a name of its own "
                f"(built in: {', '.join(sorted(BUILT_IN))})")
    if not isinstance(mode.kafka, str) or not isinstance(mode.summary, str):
        return "MODE's kafka and summary must be text"
    for name in RULES:
        value, default = getattr(mode, name), getattr(LADDER[0], name)
        if isinstance(default, bool) and not isinstance(value, bool):
            return f"rule {name} must be True or False, got {value!r}"
    if mode.epochs and not (callable(mode.assign) and callable(mode.end_offset_for)):
        return "a mode with epochs=True needs assign and end_offset_for functions (spec/log.py has one per release)"
    if not isinstance(mode.actions, tuple):
        return "MODE's actions must be given as variant(actions={name: function})"
    for item in mode.actions:
        if not (isinstance(item, tuple) and len(item) == 2):
            return "MODE's actions must be given as variant(actions={name: function})"
        name, fn = item
        if name not in ACTION_NAMES:
            return f"MODE replaces unknown action {name!r}; the actions are {', '.join(ACTION_NAMES)}"
        if not callable(fn):
            return f"MODE replaces action {name} with {type(fn).__name__} {fn!r}, not a function"
    return None


def file_of(mode) -> Optional[str]:
    """The file a mode was loaded from (resolved), or None for a built-in mode. ``mode``: a Mode, or
    a Config (of either family: the kafka-tla modes are all built in)."""
    mode = getattr(mode, "mode_definition", mode)
    return getattr(mode, "file", None) or None


def module_of(mode) -> Optional[types.ModuleType]:
    """The module a mode file ran as (what Spark's executors need by value), or None. ``mode``:
    as for :func:`file_of`."""
    mode = getattr(mode, "mode_definition", mode)
    name = getattr(mode, "module", None)
    return sys.modules.get(name) if name else None


def differences(mode: Mode, base: Mode) -> List[Tuple[str, object, object]]:
    """``(rule or 'action NAME', base's value, mode's value)`` where the two modes differ."""
    out = [(name, getattr(base, name), getattr(mode, name)) for name in RULES
           if getattr(base, name) != getattr(mode, name)]
    # an action no mode replaces is spec/actions.py's own: name it rather than None
    built_in = {name: fn for name, fn, _ in ACTIONS}
    mine, theirs = dict(mode.actions), dict(base.actions)
    for name in sorted(set(mine) | set(theirs)):
        if mine.get(name) is not theirs.get(name):
            out.append((f"action {name}", theirs.get(name, built_in.get(name)), mine.get(name, built_in.get(name))))
    return out


def closest(mode: Mode) -> Mode:
    """The built-in mode a variant differs least from (the newest of equals): what it varies."""
    return min(reversed(LADDER), key=lambda m: len(differences(mode, m)))


def stamp(doc: dict, cfg) -> dict:
    """An ITF document (checker/trace.py's ``to_itf``) written under a variant (``cfg``, the run's
    Config) also records the file the variant came from, ``#meta.hwcheck.mode_file``, for replay
    to name."""
    path = file_of(cfg)
    if path:
        doc["#meta"]["hwcheck"]["mode_file"] = path
    return doc
