"""Family history, over the history variable ``epoch_leader`` (who the controller named with each
epoch): one leader per epoch, requests go to it and answers come from it, who may cache an epoch
without its records (said after that leader left office, which the state alone cannot: the
recordless cache entry is all that is left of it), a replica that led every epoch since e holds
every entry of e, and failovers are bounded by the bounces the run used."""

from __future__ import annotations

from functools import partial
from typing import List

from hwcheck.spec.terms import (EPOCH_REQUEST, EPOCH_RESPONSE, FETCH, FETCH_RESPONSE, FOLLOWER, LEADER, NONE,
                                PREFERRED, UNDEFINED, latest_cached_epoch)

from .common import Lemma, holds_at, implies, leads, lemma, recordless, source, source_names, sources
from .history import held_by


def leader_of(o, s, e):
    """The replica the controller named leader with epoch ``e``."""
    return o.select(list(s.hist.epoch_leader), e)


# ---------------------------------------------------------------- one leader per epoch

def leads_its_epoch(enc, s, r):
    """A leader leads an epoch the controller named it for."""
    o, rep = enc.o, s.reps[r]
    return implies(o, rep.role == LEADER, leader_of(o, s, rep.leader_epoch) == r)


def follows_its_epochs_leader(enc, s, r):
    """A follower follows the leader the controller named with its epoch."""
    o, rep = enc.o, s.reps[r]
    return implies(o, rep.role == FOLLOWER, leader_of(o, s, rep.leader_epoch) == rep.leader)


def requests_go_to_their_epochs_leader(enc, s, r):
    """A Fetch or an OffsetsForLeaderEpoch request (in flight or stale) goes to the leader of the epoch it names."""
    o, m, st = enc.o, s.msgs[r], s.stale[r]
    return o.And(implies(o, o.Or(m.kind == FETCH, m.kind == EPOCH_REQUEST),
                         leader_of(o, s, m.current_leader_epoch) == m.leader),
                 implies(o, st.kind == FETCH, leader_of(o, s, st.current_leader_epoch) == st.leader))


def answers_come_from_its_epochs_leader(enc, s, r):
    """A FetchResponse or OffsetsForLeaderEpoch answer comes from the leader of the follower's epoch."""
    o, m, rep = enc.o, s.msgs[r], s.reps[r]
    return implies(o, o.Or(m.kind == FETCH_RESPONSE, m.kind == EPOCH_RESPONSE),
                   leader_of(o, s, rep.leader_epoch) == m.leader)


def entry_held_by_its_epochs_leader(enc, s, r, i, L):
    """Log Matching keyed by the epoch's leader: an entry of an epoch r led, wherever it is, is one r still holds.

    It is the one r wrote at that offset, and r still holds it (a leader never truncates, and a
    follower truncates only where it diverges from its leader's log). With two replicas nobody else
    is left to hold what r lost; with three the prefilter rejects it."""
    o, rep = enc.o, s.reps[r]
    _, present, slots = source(enc, s, i)
    return o.And(*[implies(o, o.And(present(j), leader_of(o, s, slots[j][1]) == r),
                           o.And(j < rep.leo, rep.log[j][0] == slots[j][0], rep.log[j][1] == slots[j][1]))
                   for j in range(L)])


def recordless_only_an_epoch_it_led(enc, s, r):
    """An epoch cached with none of its records is one its holder led.

    Only become_leader caches an epoch at the LEO."""
    o, rep = enc.o, s.reps[r]
    return o.And(*[implies(o, recordless(o, rep, k), leader_of(o, s, rep.epoch_cache[k][0]) == r)
                   for k in range(len(rep.epoch_cache))])


def cached_start_is_where_its_entries_start(enc, s, r, L):
    """No entry of an epoch r led and caches sits below the start r caches for it.

    The leader of an epoch cached it at its LEO when it took office and writes the epoch's entries
    from there: while it caches the epoch, no entry of that epoch (in any log or FetchResponse)
    sits below that start."""
    o, rep = enc.o, s.reps[r]
    out = []
    for k in range(len(rep.epoch_cache)):
        e, start = rep.epoch_cache[k]
        mine = o.And(k < rep.clen, leader_of(o, s, e) == r)
        for _, present, slots in sources(enc, s):
            out += [implies(o, o.And(mine, present(j), slots[j][1] == e), j >= start) for j in range(L)]
    return o.And(*out)


def stale_fetch_names_its_entrys_epoch(enc, s, r):
    """A stale Fetch's last fetched epoch is its entry's epoch, or one its sender led without records.

    The last fetched epoch was its sender's latest cached epoch then."""
    o, st, ep = enc.o, s.stale[r], s.hist.stale_entry[r][1]          # the stale entry's epoch
    return implies(o, o.And(st.kind == FETCH, st.last_fetched_epoch != UNDEFINED),
                   o.Or(o.And(st.fetch_offset > 0, ep == st.last_fetched_epoch),
                        leader_of(o, s, st.last_fetched_epoch) == r))


# ---------------------------------------------------------------- a replica that led every epoch since

def not_yet_in_office(o, s):
    """The controller names a leader that has not taken office (neither its leader epoch nor its
    cache has the controller's epoch): nobody has answered at that epoch yet."""
    return o.And(s.ctl.leader != UNDEFINED, *[
        implies(o, s.ctl.leader == x, o.And(rx.leader_epoch < s.ctl.epoch, latest_cached_epoch(o, rx) < s.ctl.epoch))
        for x, rx in enumerate(s.reps)])


def past_controllers(o, s, k):
    """Epoch k is past the controller's."""
    return k > s.ctl.epoch


def past_the_one_before_controllers(o, s, k):
    """Epoch k is past the controller's, or is the controller's while its leader is not in office."""
    return o.Or(k > s.ctl.epoch, o.And(k == s.ctl.epoch, not_yet_in_office(o, s)))


LASTS = (("to the controller's", past_controllers),
         ("to the one before the controller's, whose leader is not in office", past_the_one_before_controllers))


def led_since(o, s, r, e, last, E):
    """r led every epoch from e on, up to the last (``last`` says which epochs are past it)."""
    return o.And(o.Not(last(o, s, e)), *[o.Or(last(o, s, k), s.hist.epoch_leader[k] == r) for k in range(e, E + 1)])


def holds_exposed(o, s, rep, j):
    """rep holds the record consumers saw at offset j."""
    return holds_at(o, rep, j, s.hist.exposed[j])


def below_hw(o, s, rep, j):
    """Offset j is below rep's HW."""
    return j < rep.hw


def exposed_held_by_the_leaders_since(enc, s, r, last, fact, L, E):
    """A replica that led every epoch since the one that exposed an offset holds it (or has it below its HW)."""
    o, h, rep = enc.o, s.hist, s.reps[r]
    return o.And(*[implies(o, o.And(j < h.xlen, o.Or(*[o.And(h.exposed_epoch[j] == e, led_since(o, s, r, e, last, E))
                                                       for e in range(E + 1)])),
                           fact(o, s, rep, j)) for j in range(L)])


def entries_held_by_the_leader_since(enc, s, r, e, last, L, E):
    """A replica that led every epoch from e on holds every entry of epoch e, wherever one is.

    It never followed since (it would need another leader's answer), and a leader never truncates."""
    o, rep = enc.o, s.reps[r]
    since = led_since(o, s, r, e, last, E)
    held = []
    for _, present, slots in sources(enc, s):
        held += [implies(o, o.And(present(j), slots[j][1] == e),
                         o.And(j < rep.leo, rep.log[j][0] == slots[j][0], rep.log[j][1] == e))
                 for j in range(L)]
    return implies(o, since, o.And(*held))


# ---------------------------------------------------------------- the leader of an exposing epoch

def exposer_took_office(enc, s, L):
    """The leader of the epoch that exposed an offset took office at that epoch.

    Its leader epoch, or the latest epoch its cache holds (which a crash keeps), is at least that
    epoch."""
    o, h = enc.o, s.hist
    return o.And(*[implies(o, j < h.xlen, o.Or(*[
        o.And(leader_of(o, s, h.exposed_epoch[j]) == x,
              o.Or(rx.leader_epoch >= h.exposed_epoch[j], latest_cached_epoch(o, rx) >= h.exposed_epoch[j]))
        for x, rx in enumerate(s.reps)])) for j in range(L)])


def exposer_not_behind(enc, s, L):
    """The leader of an exposing epoch, while it has a role, is at that epoch or later.

    The same said without the cache (a restart trims an epoch cached without records): a restart
    clears its role; become_leader and become_follower then take the controller's epoch."""
    o, h = enc.o, s.hist
    return o.And(*[implies(o, o.And(j < h.xlen, leader_of(o, s, h.exposed_epoch[j]) == x, rx.alive, rx.role != NONE),
                           rx.leader_epoch >= h.exposed_epoch[j])
                   for j in range(L) for x, rx in enumerate(s.reps)])


# ---------------------------------------------------------------- failovers and bounces

def failovers(o, s, E, pending=()):
    """How many epochs handed out were led by other than the preferred replica (plus ``pending``).
    An epoch that names no leader (KRaft's fence with nobody to elect) is led by nobody."""
    return o.Sum([o.And(e <= s.ctl.epoch, s.hist.epoch_leader[e] != PREFERRED, s.hist.epoch_leader[e] != UNDEFINED)
                  for e in range(1, E + 1)] + list(pending))


def failovers_within_bounces(enc, s, E):
    """Every epoch led by other than the preferred replica follows a bounce the run counted.

    Only the preferred replica is elected without a failure first (elect_preferred): a crash, a
    session expiry, a controlled shutdown, a power failure; one election per bounce."""
    o, h = enc.o, s.hist
    return failovers(o, s, E) <= h.crashes + h.power_failures


def pending_election(o, s):
    """A bounce whose election is still to come: the partition is offline, or the leader the
    controller names is down or not registered."""
    c = s.ctl
    return o.Or(c.leader == UNDEFINED, *[o.And(c.leader == r, o.Not(o.And(rep.alive, c.live[r])))
                                     for r, rep in enumerate(s.reps)])


def failovers_and_pending_within_bounces(enc, s, E):
    """The failovers and the bounce whose election is still to come are within the bounces used."""
    o, h = enc.o, s.hist
    return failovers(o, s, E, [pending_election(o, s)]) <= h.crashes + h.power_failures


def failovers_pending_and_down_within_bounces(enc, s, E):
    """The failovers, a pending election and each other broker down but still registered are within the bounces used.

    A broker down while the controller still has it registered (its session has not expired): that
    bounce is counted already and no election has spent it yet, though the controller may still
    hand the broker an epoch (a controlled shutdown elects any registered ISR member). Past the
    defaults: records=1 crashes=2 max_epoch=5 proves with it and not without (docs/proofs.md)."""
    o, c = enc.o, s.ctl
    down = [o.And(o.Not(rep.alive), c.live[r], c.leader != r) for r, rep in enumerate(s.reps)]
    return failovers(o, s, E, [pending_election(o, s)] + down) <= s.hist.crashes + s.hist.power_failures


# ---------------------------------------------------------------- the controller hands each epoch out once

def first_leader(enc, s):
    """The controller hands each epoch out once: epoch 0's leader is the preferred replica."""
    return s.hist.epoch_leader[0] == PREFERRED


def controllers_leader(enc, s):
    """The leader the controller names is the one it named with its epoch."""
    o, c = enc.o, s.ctl
    return implies(o, c.leader != UNDEFINED, leader_of(o, s, c.epoch) == c.leader)


def none_ahead(enc, s):
    """No epoch past the controller's has a leader."""
    o = enc.o
    return o.And(*[implies(o, e > s.ctl.epoch, x == UNDEFINED) for e, x in enumerate(s.hist.epoch_leader)])


def handed_out_after(o, s, k, e):
    """Epoch e was handed out after epoch k (the controller is at e or later)."""
    return o.And(k < e, e <= s.ctl.epoch)


def exposed_by_later_leaders(enc, s, L, E):
    """A leader the controller named after the epoch that exposed an offset holds what consumers saw there.

    It was elected from replicas that hold it (the ISR, KIP-966's ELR or last known leader), and a
    replica that holds an exposed entry keeps it (a follower truncates only where it diverges from
    its leader, which holds it too)."""
    o, h = enc.o, s.hist
    out = []
    for j in range(L):
        for e in range(1, E + 1):
            named = o.And(j < h.xlen, handed_out_after(o, s, h.exposed_epoch[j], e))
            out += [implies(o, o.And(named, h.epoch_leader[e] == x), holds_at(o, rx, j, h.exposed[j]))
                    for x, rx in enumerate(s.reps)]
    return o.And(*out)


def newer_named_in_stale_view(enc, s, l, x, E):
    """A stale leader's ISR view holds every replica the controller named leader of a newer epoch.

    NewerLeaderInStaleView, said of every newer epoch, not only the controller's: it was elected
    from an ISR the stale leader could shrink only at its own epoch, through its view."""
    o, rl = enc.o, s.reps[l]
    newer = o.Or(*[o.And(handed_out_after(o, s, rl.leader_epoch, e), s.hist.epoch_leader[e] == x) for e in range(1, E + 1)])
    return implies(o, o.And(leads(o, rl), newer), rl.isr[x])


def unsucceeded(o, s, r, E):
    """r leads, and every epoch the controller handed out after r's was handed to r or to nobody
    (KRaft's fence with nobody to elect): nobody else has led since, whatever the others' caches
    forgot (a restart trims an epoch cached without records), so nobody else exposed anything."""
    rep = s.reps[r]
    return o.And(leads(o, rep), *[implies(o, handed_out_after(o, s, rep.leader_epoch, e),
                                          o.Or(s.hist.epoch_leader[e] == r, s.hist.epoch_leader[e] == UNDEFINED))
                                  for e in range(1, E + 1)])


def last_known_leader_led(enc, s, n):
    """KIP-966: the last known leader is the leader the controller named with its epoch.

    The ISR became empty when that leader left it; no election since, which clears it."""
    o, c = enc.o, s.ctl
    if not c.last_known_elr:
        return True
    return o.And(*[implies(o, c.last_known_elr[x], leader_of(o, s, c.epoch) == x) for x in range(n)])


def last_known_leader_led_the_epoch_before(enc, s, n):
    """KIP-966 with KRaft's fence (``fence_elects``): the last known leader led the epoch before the
    controller's, which names no leader.

    The change that emptied the ISR left the partition leaderless at a new epoch; no election since,
    which clears it."""
    o, c = enc.o, s.ctl
    if not c.last_known_elr:
        return True
    return o.And(*[implies(o, c.last_known_elr[x], o.And(c.epoch >= 1, leader_of(o, s, c.epoch) == UNDEFINED,
                                                         leader_of(o, s, c.epoch - 1) == x)) for x in range(n)])


def every_epoch_led(enc, s):
    """Every epoch the controller handed out names a leader."""
    o = enc.o
    return o.And(*[implies(o, e <= s.ctl.epoch, x != UNDEFINED) for e, x in enumerate(s.hist.epoch_leader)])


def epoch_leader_templates(n: int, L: int, E: int, cached: bool) -> List[Lemma]:
    """Over ``epoch_leader``, for ``n`` replicas, ``L`` offsets and epochs up to ``E``."""
    out = []
    for r in range(n):
        out.append(lemma(f"EpochLeader[r{r} leads its epoch]", "history", leads_its_epoch, r=r))
        out.append(lemma(f"EpochLeader[r{r} follows its epoch's leader]", "history", follows_its_epochs_leader, r=r))
        out.append(lemma(f"EpochLeader[r{r}'s requests go to their epoch's leader]", "history",
                         requests_go_to_their_epochs_leader, r=r))
        out.append(lemma(f"EpochLeader[r{r}'s answers come from its epoch's leader]", "history",
                         answers_come_from_its_epochs_leader, r=r))
        for i, name in enumerate(source_names(n)):
            out.append(lemma(f"EpochLeader[an entry of an epoch r{r} led, in {name}, is held by r{r}]", "history",
                             entry_held_by_its_epochs_leader, r=r, i=i, L=L))
        if cached:
            out.append(lemma(f"EpochLeader[r{r} caches recordless only an epoch it led]", "history",
                             recordless_only_an_epoch_it_led, r=r))
            out.append(lemma(f"EpochLeader[r{r}'s cached start of an epoch it led is where that epoch's entries start]",
                             "history", cached_start_is_where_its_entries_start, r=r, L=L))
            out.append(lemma(f"EpochLeader[r{r}'s stale Fetch names its entry's epoch or one it led]", "history",
                             stale_fetch_names_its_entrys_epoch, r=r))
    for r in range(n):
        for g, last in LASTS:
            for what, fact in (("holds them", holds_exposed), ("has them below its HW", below_hw)):
                out.append(lemma(f"EpochLeader[r{r} led every epoch from the one that exposed an offset {g}: {what}]",
                                 "history", exposed_held_by_the_leaders_since, r=r, last=last, fact=fact, L=L, E=E))
        for e in range(E + 1):
            for g, last in LASTS:
                out.append(lemma(f"EpochLeader[r{r} led every epoch from {e} {g}: holds its entries]", "history",
                                 entries_held_by_the_leader_since, r=r, e=e, last=last, L=L, E=E))
    out.append(lemma("EpochLeader[the leader of an exposing epoch took office]", "history", exposer_took_office, L=L))
    out.append(lemma("EpochLeader[the leader of an exposing epoch, while it has a role, is at that epoch or later]",
                     "history", exposer_not_behind, L=L))
    out.append(lemma("EpochLeader[epochs led by other than the preferred replica within the bounces used]",
                     "history", failovers_within_bounces, E=E))
    out.append(lemma("EpochLeader[failovers and a pending election within the bounces used]", "history",
                     failovers_and_pending_within_bounces, E=E))
    out.append(lemma("EpochLeader[failovers, a pending election and brokers down but registered within the bounces used]",
                     "history", failovers_pending_and_down_within_bounces, E=E))
    out.append(lemma("EpochLeader[epoch 0: the preferred replica]", "history", first_leader))
    out.append(lemma("EpochLeader[the controller's leader]", "history", controllers_leader))
    out.append(lemma("EpochLeader[none past the controller's epoch]", "history", none_ahead))
    out.append(lemma("EpochLeader[a leader named after an exposing epoch holds what it exposed]", "history",
                     exposed_by_later_leaders, L=L, E=E))
    for l in range(n):
        for x in range(n):
            if x == l:
                continue
            out.append(lemma(f"EpochLeader[a leader named with a newer epoch, r{x}, is in stale leader r{l}'s ISR view]",
                             "history", newer_named_in_stale_view, l=l, x=x, E=E))
    for r in range(n):
        out += held_by(r, "leader no other replica was named after", partial(unsucceeded, E=E), L)
    out.append(lemma("EpochLeader[the last known leader led the controller's epoch]", "history", last_known_leader_led,
                     n=n))
    out.append(lemma("EpochLeader[the last known leader led the epoch before the controller's leaderless one]",
                     "history", last_known_leader_led_the_epoch_before, n=n))
    out.append(lemma("EpochLeader[every epoch handed out names a leader]", "history", every_epoch_led))
    return out
