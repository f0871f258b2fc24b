"""``hwcheck prove``: k-induction with z3, the proofs of docs/proofs.md. (``verify --engine z3``,
bounded model checking, is verify's: checker/check.py runs it, cli/verify.py renders it.)"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from typing import List

import click

from hwcheck.checker.bfs import bfs
from hwcheck.checker.bmc import NOT_INDUCTIVE, EncodingError, prove as k_induction
from hwcheck.checker.houdini import FAMILIES, check_lemmas, discover, drop_chain, only_clauses_blocked, proof_model
from hwcheck.checker.lemma_file import LemmaFileError, read_back, settings, to_json
from hwcheck.checker.result import HOLDS, INTERRUPTED, VIOLATED, Trace
from hwcheck.checker.symbolic import CONCRETE, Encoding, check_covered
from hwcheck.spec import ConfigError
from hwcheck.spec.auxiliary import AUXILIARY
from hwcheck.spec.state import LEADER, UNDEFINED, replica_name

from . import jsonout
from .options import EXIT_HOLDS, EXIT_INTERRUPTED, EXIT_VIOLATION, check_writable, fail, knob_options, make_config, switch
from .models import DESIGN_MODES
from .render import controller_cell, messages_cell, replica_cell, replica_names, settings_line, trace_table

EXIT_NOT_INDUCTIVE = 3


def _covered(model) -> None:
    """A run the encoding cannot express (a variant replacing actions, ...) ends in one line."""
    try:
        check_covered(model)
    except ConfigError as e:
        fail(str(e))


def state_lines(model, s) -> str:
    """A state in full (a counterexample to induction need not be reachable: show everything,
    a leader's view of the ISR too)."""
    lines = [f"    {replica_name(r)}: {replica_cell(model, rep, r)}"
             + (f" isr={replica_names(model, rep.isr) or '·'}" if rep.alive and rep.role == LEADER else "")
             for r, rep in enumerate(s.replicas)]
    live = replica_names(model, s.controller.live) or "·"
    lines.append(f"    controller: {controller_cell(model, s.controller)} live={live}")
    lines.append(f"    inflight: {messages_cell(model, s, 'inflight')}")
    lines.append(f"    stale: {messages_cell(model, s, 'stale')}")
    h = s.history
    acked = ",".join(f"{rec}@{off}" for rec, off in enumerate(h.acked) if off != UNDEFINED) or "·"
    # prove's history variables: the epoch of the leader that exposed each offset, the leader named
    # with each epoch, the entry below each stale Fetch's offset when it was sent
    dated = ""
    if h.epoch_leader:
        dated = f" exposed_epoch={list(h.exposed_epoch)}"
        dated += f" epoch_leader={[replica_name(r) if r != UNDEFINED else '-' for r in h.epoch_leader]}"
        entries = [f"{replica_name(f)}:{rec}@{ep}" for f, (rec, ep) in enumerate(h.stale_entry) if rec != UNDEFINED]
        dated += f" stale_entry={','.join(entries) or '·'}"
    lines.append(f"    history: produced={h.produced} acked={acked} exposed={list(h.exposed)}{dated} "
                 f"crashes={h.crashes} power_failures={h.power_failures}")
    return "\n".join(lines)


def _z3_config_errors(fn):
    """prove's callback: a ConfigError from the z3 encoding (a variant it cannot express) is the
    one-line error."""
    @functools.wraps(fn)
    def wrapper(**kwargs):
        try:
            return fn(**kwargs)
        except ConfigError as e:
            fail(f"z3 engine: {e}")
    return wrapper


@click.command()
@knob_options(modes=DESIGN_MODES)
@click.option("--invariant", "names", multiple=True, metavar="NAME", required=True,
              help="the invariant to prove (repeatable: their conjunction)")
@click.option("--k", "k", type=click.IntRange(min=1), default=1, show_default=True, help="induction depth")
@switch("--aux/--no-aux", default=True, shown="aux",
        help="strengthen with the auxiliary invariants of spec/auxiliary.py")
@click.option("--discover", is_flag=True,
              help="find strengthening lemmas (Houdini): template instances true in every state bfs "
                   "reaches, pruned by z3 to an inductive set (k=1; docs/proofs.md)")
@click.option("--reach-limit", type=click.IntRange(min=1), default=50_000, show_default=True,
              help="--discover: the reachable states the candidates are checked on (breadth first, "
                   "whole levels)")
@click.option("--learn", type=click.IntRange(min=0), default=0, show_default=True, metavar="N",
              help="--discover: block up to N counterexamples to induction by clauses no reachable "
                   "state breaks (checker/cubes.py) instead of dropping what they break; sound "
                   "whatever the reach limit, useful when the prefilter sees the whole space")
@click.option("--explain", is_flag=True,
              help="--discover, not proved: follow the broken invariant's drop back through the lemmas "
                   "whose drop let each counterexample in, to the roots no candidate excludes")
@click.option("--save-lemmas", type=click.Path(path_type=Path), metavar="FILE",
              help="--discover, proved: write the inductive lemmas to FILE (JSON), for --lemmas")
@click.option("--lemmas", "lemma_file", type=click.Path(path_type=Path, dir_okay=False), metavar="FILE",
              help="prove with the lemmas of FILE (written by --save-lemmas at the same settings): "
                   "one z3 query, no discovery")
@click.option("--force", is_flag=True, help="--save-lemmas: replace FILE if it exists")
@_z3_config_errors
@jsonout.json_option("prove", verdicts={EXIT_HOLDS: "proved", EXIT_VIOLATION: "violated",
                                        EXIT_NOT_INDUCTIVE: "not-inductive", EXIT_INTERRUPTED: "interrupted"})
def prove(names, k, aux, discover, reach_limit, learn, explain, save_lemmas, lemma_file, force, **knobs):
    """k-induction with z3: 'holds at every depth', or 'not k-inductive' with the counterexample
    to induction. Exit 0 proved, 1 violated from the initial state, 3 not k-inductive."""
    model = proof_model(make_config(**knobs))
    jsonout.note(settings=jsonout.settings(model), invariants=list(dict.fromkeys(names)), k=k,
                 method="lemmas" if lemma_file is not None else "discover" if discover else "k-induction")
    known = [name for name, _ in model.invariants]
    unknown = [name for name in names if name not in known]
    if unknown:
        fail(f"unknown invariant {unknown[0]!r}; choose from {', '.join(known)}")
    _covered(model)
    if lemma_file is not None:
        if discover or save_lemmas or learn or explain or k != 1:
            fail("--lemmas checks a saved proof (1-induction): drop --discover, --save-lemmas, --learn, "
                 "--explain and --k")
        _prove_with_lemmas(model, list(dict.fromkeys(names)), lemma_file)
    if discover:
        if k != 1:
            fail("--discover proves by 1-induction: leave --k at 1")
        if save_lemmas is not None:
            check_writable(save_lemmas, force)
        _prove_discovering(model, list(dict.fromkeys(names)), aux, reach_limit, explain, learn, save_lemmas)
    if explain or learn or save_lemmas:
        fail(f"{'--explain' if explain else '--learn' if learn else '--save-lemmas'} goes with --discover: "
             f"add --discover")
    click.echo(f"hwcheck prove: {settings_line(model.cfg)}")
    auxiliary = AUXILIARY if aux else ()
    click.echo(f"property: {' and '.join(list(names) + [n for n, _ in auxiliary] + ['EncodingBounds'])}; k={k}")
    started = time.monotonic()
    try:
        proof = k_induction(model, list(dict.fromkeys(names)), k, aux=auxiliary,
                            progress=lambda what, sec, ans: click.echo(f"  {what} case: {ans} ({sec:.2f} s)"))
    except EncodingError as e:
        fail(f"z3 engine: {e}")
    if proof.verdict == INTERRUPTED:
        if proof.interrupted_in == "inductive step":
            covered = f"the base case holds (no violation within {k - 1} steps); the inductive step was under way"
        else:
            j = int(proof.interrupted_in.rsplit(" ", 1)[1])
            covered = (f"the base case holds to depth {j - 1}; depth {j} of {k - 1} was under way" if j
                       else "the base case was under way at depth 0")
        click.echo(f"interrupted: {covered} after {time.monotonic() - started:.1f} s; no verdict (k={k})")
        raise click.exceptions.Exit(EXIT_INTERRUPTED)
    if proof.verdict == VIOLATED:
        trace = proof.trace
        click.echo(f"verdict: violated: {', '.join(proof.broken)} after {trace.steps} steps (base case)")
        click.echo(trace_table(model, trace, proof.broken))
        raise click.exceptions.Exit(EXIT_VIOLATION)
    if proof.verdict == NOT_INDUCTIVE:
        click.echo(f"verdict: not k-inductive (k={k}): {k} states satisfy the property, one step later "
                   f"{', '.join(proof.broken)} breaks; the states need not be reachable")
        for i, s in enumerate(proof.cti):
            how = "" if i == 0 else f" after {model.format_label(proof.cti_labels[i - 1])}"
            click.echo(f"  state {i}{how}:")
            click.echo(state_lines(model, s))
        raise click.exceptions.Exit(EXIT_NOT_INDUCTIVE)
    click.echo(f"verdict: holds at every depth (base and inductive step unsat; "
               f"{proof.base_seconds + proof.step_seconds:.1f} s)")
    raise click.exceptions.Exit(EXIT_HOLDS)


def _lemma_lines(lemmas, names: bool = True) -> List[str]:
    by_family: dict = {}
    for lem in lemmas:
        by_family.setdefault(lem.family, []).append(lem.name)
    lines = []
    for family, found in by_family.items():
        lines.append(f"  {family} ({len(found)}): {FAMILIES[family]}")
        if names:
            lines += [f"    {name}" for name in found]
    return lines


def _drop_chain_lines(model, d, shown_roots: int = 3) -> List[str]:
    """--explain: the drop chain of the first broken goal, as lines."""
    goal = d.cti.broken[0]
    chain, roots = drop_chain(model, d, goal)
    lines = [f"drop chain of {goal} ({len(chain)} conjuncts; each was dropped at a step from a state that "
             f"only conjuncts dropped in earlier rounds exclude):"]
    for name, drop in sorted(chain.items(), key=lambda kv: -kv[1].round):
        if drop.blockers and (name == goal or d.lemmas.get(name) is None or d.lemmas[name].family != "clause"):
            shown = ", ".join(drop.blockers[:3]) + (f" and {len(drop.blockers) - 3} more" if len(drop.blockers) > 3 else "")
            lines.append(f"  round {drop.round}: {name} at {model.format_label(drop.label)} <- {shown}")
    clauses = sum(1 for n in chain if n in d.lemmas and d.lemmas[n].family == "clause")
    if clauses:
        lines.append(f"  (and {clauses} clauses of the clause family)")
    lines.append(f"roots ({len(roots)}): dropped at a step from a state that no candidate dropped before excludes; "
                 f"a new lemma must exclude it (or the state is reachable beyond the states the prefilter saw); "
                 f"named lemmas first, then the steps that dropped clauses only")
    cenc = Encoding(model, CONCRETE)

    def steps_lines(names, last=lambda found: False) -> List[str]:
        """The steps that dropped ``names``, one line each by round (those ``last`` picks at the
        end), the first ``shown_roots`` with the state z3 dropped them from."""
        by_step: dict = {}
        for name in names:
            by_step.setdefault(chain[name].round, []).append(name)
        out = []
        for i, (r, found) in enumerate(sorted(by_step.items(), key=lambda step: (last(step[1]), step[0]))):
            shown = ", ".join(found[:4]) + (f" and {len(found) - 4} more" if len(found) > 4 else "")
            out.append(f"  round {r}: {shown} at {model.format_label(chain[found[0]].label)}")
            if i < shown_roots:
                out.append(state_lines(model, cenc.to_state(d.befores[r])))
        return out

    def clauses_only(found) -> bool:     # a step that dropped clauses alone is shown last
        return all(n in d.lemmas and d.lemmas[n].family == "clause" for n in found)
    lines += steps_lines(roots, clauses_only)
    guessed = only_clauses_blocked(chain, d.lemmas)
    if guessed:
        lines.append(f"named lemmas dropped where only clauses excluded the state ({len(guessed)}): a clause fits the states the "
                     f"prefilter saw, so a named lemma must exclude the state, or it is reachable (a larger "
                     f"--reach-limit tells which)")
        lines += steps_lines(guessed)
    return lines


def _cti_lines(model, cti) -> List[str]:
    """A counterexample to induction: the replay-style table, then both states in full."""
    lines = ["counterexample to induction:", trace_table(model, Trace([cti.before, cti.after], [cti.label]), cti.broken)]
    for i, s in enumerate((cti.before, cti.after)):
        lines.append(f"  state {i}{'' if i == 0 else ' after ' + model.format_label(cti.label)}:")
        lines.append(state_lines(model, s))
    return lines


def _prove_with_lemmas(model, names, path: Path) -> None:
    """``prove --lemmas FILE``: the saved lemmas, rebuilt and checked by one z3 query."""
    try:
        doc = json.loads(path.read_text())
        found_under = settings(doc, model.cfg)
        if found_under != model.cfg:
            theirs, ours = found_under.as_dict(), model.cfg.as_dict()
            differ = [knob for knob in theirs if theirs[knob] != ours[knob]]
            fail(f"{path} was found under {', '.join(f'{knob}={theirs[knob]}' for knob in differ)}; this run has "
                 f"{', '.join(f'{knob}={ours[knob]}' for knob in differ)}")
        goals, lemmas = read_back(model, doc)
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    except (ValueError, LemmaFileError) as e:             # json's errors are ValueErrors
        fail(f"{path}: {e}")
    missing = [name for name in names if name not in goals]
    if missing:
        fail(f"{path} proves {', '.join(goals)}; not {', '.join(missing)}")
    click.echo(f"hwcheck prove: {settings_line(model.cfg)}")
    click.echo(f"property: {' and '.join(goals + ['EncodingBounds'])}; 1-induction strengthened by the "
               f"{len(lemmas)} lemmas of {path}")
    click.echo("\n".join(_lemma_lines(lemmas, names=False)))
    started = time.monotonic()
    d = check_lemmas(model, goals, lemmas)
    elapsed = time.monotonic() - started
    if d.verdict == INTERRUPTED:
        click.echo(f"interrupted: during {d.interrupted_in} after {elapsed:.1f} s; no verdict (k=1)")
        raise click.exceptions.Exit(EXIT_INTERRUPTED)
    if d.verdict == VIOLATED:
        state, broken = d.violated_in
        click.echo(f"verdict: violated: {', '.join(broken)} is false in the initial state")
        click.echo(state_lines(model, state))
        raise click.exceptions.Exit(EXIT_VIOLATION)
    if d.verdict == HOLDS:
        click.echo(f"verdict: holds at every depth: the property and {len(lemmas)} lemmas hold in the initial "
                   f"state and are 1-inductive together ({elapsed:.1f} s)")
        raise click.exceptions.Exit(EXIT_HOLDS)
    if d.rejected:
        shown = ", ".join(list(d.rejected)[:4]) + (f" and {len(d.rejected) - 4} more" if len(d.rejected) > 4 else "")
        click.echo(f"verdict: not k-inductive (k=1): no proof: lemmas false in the initial state: {shown}")
    else:
        click.echo(f"verdict: not k-inductive (k=1): the lemmas of {path} are not inductive: "
                   f"{', '.join(d.cti.broken[:4])}{' and more' if len(d.cti.broken) > 4 else ''} break one step "
                   f"after a state that satisfies them all ({elapsed:.1f} s)")
        click.echo("\n".join(_cti_lines(model, d.cti)))
    raise click.exceptions.Exit(EXIT_NOT_INDUCTIVE)


def _prove_discovering(model, names, aux: bool, limit: int, explain: bool = False, learn: int = 0,
                       save_lemmas=None) -> None:
    """``prove --discover``: Houdini (checker/houdini.py), then the verdict, the lemmas used or the
    counterexample to induction with the template families that would exclude it."""
    click.echo(f"hwcheck prove: {settings_line(model.cfg)}")
    click.echo(f"property: {' and '.join(names + ['EncodingBounds'])}; 1-induction strengthened by "
               f"discovered lemmas ({len(FAMILIES) - 2} template families{' and spec/auxiliary.py' if aux else ''})")
    chosen = [f for f in FAMILIES if aux or f != "hand-written"]
    started = time.monotonic()

    def progress(line: str) -> None:        # every tenth z3 round, and the last
        if line.startswith("  round ") and "unsat" not in line and int(line.split()[1].rstrip(":")) % 10:
            return
        click.echo(line)
    d = discover(model, names, limit=limit, families=chosen, progress=progress, learn=learn)
    elapsed = time.monotonic() - started
    if d.verdict == INTERRUPTED:
        covered = (f", in z3 round {d.rounds} ({len(d.dropped)} lemmas dropped, {len(d.learned)} clauses learned "
                   f"before it)" if d.rounds else "")
        click.echo(f"interrupted: during {d.interrupted_in or 'the setup'} after {elapsed:.1f} s{covered}; "
                   f"no verdict (k=1)")
        raise click.exceptions.Exit(EXIT_INTERRUPTED)
    if d.verdict == VIOLATED:
        state, broken = d.violated_in
        click.echo(f"verdict: violated: {', '.join(broken)} breaks in a state bfs reached "
                   f"(among the first {d.reachable_states}); the shortest trace, by bfs:")
        result = bfs(model, only=broken)
        trace = result.violations[0]
        click.echo(trace_table(model, trace, [trace.invariant]))
        click.echo(f"figures: bfs {result.distinct_states:,} states, {trace.steps} steps ({elapsed:.1f} s in all)")
        raise click.exceptions.Exit(EXIT_VIOLATION)
    rejected = len(d.rejected)
    click.echo(f"lemmas: {d.generated} candidates, {rejected} false in a reachable state, {len(d.dropped)} "
               f"not inductive (z3, {d.rounds} rounds), {len(d.survivors)} inductive"
               + (f"; {len(d.learned)} clauses learned from counterexamples to induction" if learn else ""))
    if d.verdict == HOLDS:
        click.echo(f"verdict: holds at every depth: the property and {len(d.survivors)} lemmas hold in the "
                   f"initial state and are 1-inductive together ({elapsed:.1f} s: prefilter "
                   f"{d.seconds.get('prefilter', 0):.1f} s, z3 {d.seconds.get('z3', 0):.1f} s)")
        click.echo("lemmas used:")
        click.echo("\n".join(_lemma_lines(d.survivors)))
        if save_lemmas is not None:
            save_lemmas.write_text(json.dumps(to_json(model, d), indent=1) + "\n")
            click.echo(f"lemmas saved to {save_lemmas}: check them again with --lemmas {save_lemmas}")
        raise click.exceptions.Exit(EXIT_HOLDS)
    cti = d.cti
    click.echo(f"verdict: not k-inductive (k=1): {', '.join(cti.broken)} breaks one step after a state that "
               f"satisfies every conjunct assumed at the time; the states need not be reachable")
    click.echo("\n".join(_cti_lines(model, cti)))
    if cti.excluded_by:
        click.echo("template families with lemmas that exclude state 0 (true in every state bfs reached, "
                   "dropped by z3 as not inductive: strengthen them):")
        for family, found in cti.excluded_by.items():
            shown = ", ".join(found[:4]) + (f" and {len(found) - 4} more" if len(found) > 4 else "")
            click.echo(f"  {family}: {shown}")
    else:
        click.echo("no template family excludes state 0: a hand-written lemma (spec/auxiliary.py) is needed")
    if d.survivors:
        click.echo(f"inductive lemmas found ({len(d.survivors)}, by family):")
        click.echo("\n".join(_lemma_lines(d.survivors, names=False)))
    if explain:
        click.echo("\n".join(_drop_chain_lines(model, d)))
    if save_lemmas is not None:
        click.echo(f"no proof: nothing saved to {save_lemmas}")
    raise click.exceptions.Exit(EXIT_NOT_INDUCTIVE)
