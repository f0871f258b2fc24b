"""hwcheck.spec.lemmas: what is true of Kafka's replication in every reachable state, as candidate
lemmas for ``hwcheck prove --discover`` (checker/houdini.py keeps those z3 finds inductive).

A lemma is a named function ``(enc, s) -> term`` over the encoding's state (checker/symbolic.py's
SState: replicas, controller, messages in flight, stale Fetches, history), written once over the
encoding's term algebra ``enc.o``, so the same function is evaluated on concrete states and encoded
for z3. A template family is a module: its functions take parameters (a replica, a pair of
replicas, an offset, a guard) besides ``(enc, s)``, and its ``*_templates`` builder binds them
(``lemma``) for every replica, offset and epoch of the layout. ``candidates(enc)`` is every family
that applies to the mode, then the hand-written lemmas of spec/auxiliary.py.

These modules import the state layout's constants and term helpers (FETCH, LEADER, UNDEFINED,
``latest_cached_epoch``, ...) from hwcheck.spec.terms, and never z3 itself.

>>> from hwcheck.spec import Config, Model
>>> from hwcheck.checker.symbolic import CONCRETE, Encoding
>>> enc = Encoding(Model(Config(mode="kip380", records=1)), CONCRETE)
>>> lemmas = {lem.name: lem for lem in candidates(enc)}
>>> bound = lemmas["EpochBound[r0,leader]"]
>>> bound.family, bound.term.func.__name__, bound.term.keywords["r"]
('epoch-bound', 'epoch_bound', 0)
>>> print(bound.term.func.__doc__)
No entry of r's log is above r's leader epoch (under ``guard``: r's role).
>>> bound.term(enc, enc.of_state(enc.model.init_states()[0]))
True
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from hwcheck.spec.auxiliary import AUXILIARY, CANDIDATES

from .agreement import agreement_templates
from .broker_epochs import broker_epoch_templates
from .common import Lemma, lemma
from .epoch_answers import epoch_answer_templates
from .epoch_leader import epoch_leader_templates
from .epochs import epoch_templates
from .exposed_epoch import exposed_epoch_templates
from .fetch import fetch_templates
from .history import history_templates
from .implications import implication_templates
from .isr import isr_templates
from .records import record_templates
from .scalars import scalar_templates
from .stale_entry import stale_entry_templates

__all__ = ["FAMILIES", "Lemma", "candidates", "hand_written", "lemma"]

# template family -> what its lemmas say (one line each); docs/proofs.md lists them. The clause,
# lookahead and blocking families are built by the checker (checker/houdini.py, checker/cubes.py).
FAMILIES: Dict[str, str] = {
    "record-offset": "a record sits at one offset in every log and FetchResponse, and only once produced",
    "record-epoch": "two copies of a record (logs, FetchResponses) carry the same epoch, and one epoch "
                    "writes one record at an offset",
    "log-matching": "the same (record, epoch) at an offset in two logs (or a log and a FetchResponse) "
                    "implies the same prefix",
    "epoch-order": "epochs never decrease along a log or a FetchResponse",
    "epoch-bound": "no entry is above its holder's leader epoch (by role)",
    "cache-faithful": "the epoch cache indexes the log faithfully (starts within the log, each entry "
                      "covers its offsets, the latest cached epoch against the log and the leader epoch)",
    "fetch-slice": "a FetchResponse in flight is a slice of its sender's log unless the sender left "
                   "its office (guards: none, sender a leader, sender at the follower's epoch)",
    "prefix-agreement": "below a replica's HW its log agrees with a leader's (or an ISR member's) log",
    "isr": "the controller's ISR against a leader's view of it",
    "epoch-answer": "the question before a truncation (OffsetsForLeaderEpoch, or a Fetch's last fetched "
                    "epoch) names the asker's epoch and latest cached epoch; the answer (or diverging "
                    "epoch) is within it, really diverges, is the sender's endOffsetFor while the sender "
                    "leads (and no entry of the diverging epoch past its end stays in the sender's log), "
                    "and the follower's log agrees with the sender's below where it truncates",
    "clause": "clauses of up to three literals over boolean facts of the state (roles, the controller's "
              "view, messages in flight, how replicas' epochs, LEOs and HWs compare) true in every "
              "state the prefilter saw",
    "history": "acknowledged and exposed records are held by ISR members, KIP-966's eligible replicas, "
               "leaders at the controller's epoch, the newest leader, a leader alone in its ISR view, and "
               "lie below the exposed length; over the history variables: a leader holds every record "
               "exposed up to its epoch (by the epoch that exposed it; a leader alone in its ISR view "
               "is at the newest exposing epoch); one leader per epoch, requests go to and answers come "
               "from it, a recordless cached epoch was led by its holder, a replica that led every epoch since "
               "e holds every entry of e, and (two replicas) every entry of an epoch r led is held by r",
    "scalar-order": "orderings between offsets and epochs (HW, LEO, leader epochs, controller "
                    "epoch, produced, exposed length); a leader's HW is the lowest LEO of its ISR view",
    "implication": "implications between the boolean facts of one replica (alive, role, controller "
                   "leader / ISR / live, at the controller's epoch, fetching, a message in flight)",
    "lookahead": "delivering the message in flight keeps the property (and the acknowledged records of "
                 "an ISR member): a one-step look ahead at the receiver",
    "blocking": "clauses learned from counterexamples to induction: a few atoms (orders between two "
                "offsets or two epochs, a scalar's value) on which every reachable state disagrees "
                "with the counterexample's first state (checker/cubes.py)",
    "hand-written": "spec/auxiliary.py",
}


def hand_written_lemma(enc, s, name):
    """spec/auxiliary.py's lemma ``name``, by its encoding (symbolic.INVARIANT_ENCODINGS)."""
    return enc.invariant(name, s)


def hand_written() -> List[Lemma]:
    """spec/auxiliary.py's lemmas (AUXILIARY and CANDIDATES), as candidates (their encodings are in
    symbolic.INVARIANT_ENCODINGS)."""
    return [lemma(name, "hand-written", hand_written_lemma, name=name) for name, _ in AUXILIARY + CANDIDATES]


def candidates(enc, families: Optional[Sequence[str]] = None) -> List[Lemma]:
    """Every template instance for the layout of ``enc`` (optionally only some families), then the
    hand-written lemmas; names are unique. (The lookahead family depends on the property and the
    clause and blocking families on the reachable states: checker/houdini.py adds them.)"""
    n, L, C = enc.n, enc.L, enc.C
    cached = enc.assign_rule is not None           # an epoch cache is written
    on_fetch = enc.mode.truncate_on_fetch
    out = (record_templates(n, L) + epoch_templates(n, L, C, cached) + fetch_templates(n, L)
           + agreement_templates(n, L, cached, on_fetch)
           + (epoch_answer_templates(n, L, on_fetch) if cached else [])
           + isr_templates(n) + history_templates(n, L, cached)
           + (exposed_epoch_templates(n, L) + epoch_leader_templates(n, L, enc.cfg.max_epoch, cached)
              + stale_entry_templates(n, L, cached) if enc.tracks_history else [])
           + scalar_templates(n) + implication_templates(n)
           + (broker_epoch_templates(n) if enc.mode.broker_epochs else [])
           + hand_written())
    if families is not None:
        out = [lem for lem in out if lem.family in families]
    assert len({lem.name for lem in out}) == len(out)
    return out
