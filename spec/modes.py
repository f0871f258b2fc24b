"""Modes: each a Kafka release range, as the rules that release follows.

The actions in ``actions.py`` are shared by every mode; a mode answers the questions where Kafka's
releases differ, each answer copied from Kafka's source at a release tag (cited in ``changes``).
The modes below run from 0.10 (ZooKeeper) to 4.1+ (KRaft) as a tree of release lines: each mode is
its ``parent`` plus the changes it lists, so ``hwcheck modes`` can print what each release changed
and why. The tree branches where a fix reached two release lines apart: 3.9.1 (``kafka18991``) is
3.9.0 plus KAFKA-18991's fix, while 4.0.0 (``kip966``) still has the bug and 4.0.1 fixes it again on
its own line (``kafka18991-4.0``), the parent of 4.1+. ``LADDER`` lists every mode, parents first, in
release order; ``epoch`` (``ALIASES``) names the newest mode; spec/releases.py pins exact releases
to modes. Two functions derive a mode from a mode: ``without_elr`` (a 4.x cluster with the ELR
feature off) and ``zookeeper`` (a 3.x release on a ZooKeeper cluster); each is the ladder mode with
those rules where there is one (``same_rules``), else a variant (``DERIVED`` names those).

A mode is also a small public API: a variant is ``MODES[name].variant(name=..., ...)`` with other
rule values or other action functions (docs/variants.md; ``hwcheck verify --mode-file``).

>>> LADDER[0].name, LADDER[0].kafka, MODES["kip320"].kafka
('hw', '0.10.0-0.10.2', '2.1')
>>> MODES["kafka18991"].parent, MODES["kafka19522"].parent
('kafka15583', 'kafka18991-4.0')
>>> [m.name for m in lineage(MODES["kafka19522"])][-4:]
['kafka15583', 'kip966', 'kafka18991-4.0', 'kafka19522']
>>> ALIASES["epoch"] == LADDER[-1].name
True
>>> what_if = MODES["kip380"].variant(name="what-if", expand_waits_for_epoch_start=False)
>>> what_if.expand_waits_for_epoch_start, MODES["kip380"].expand_waits_for_epoch_start
(False, True)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Dict, Mapping, Optional, Tuple

from .log import (Cache, assign_0_11, assign_2_1, end_offset_for_0_11, end_offset_for_2_0,
                  end_offset_for_2_1)
from .state import UNDEFINED, Entry, Replica

# truncating: 0 fetching; 1 truncating with the fetch offset at the HW (the offset ReplicaManager.makeFollowers
# hands the fetcher); 2 truncating after an intermediate step (the fetch offset moved to that step's offset)
FETCHING, TRUNCATING, TRUNCATING_AGAIN = 0, 1, 2


def follower_truncation(rep: Replica, answer: Entry,
                        end_offset_for: Callable[[Cache, int, int], Entry]) -> Tuple[int, bool]:
    """Where a follower truncates on an OffsetsForLeaderEpoch answer, and whether it is done
    (``AbstractFetcherThread.getOffsetTruncationState`` 2.0.0-2.6.x; 0.11's
    ``ReplicaFetcherThread.maybeTruncate`` is its first two branches). ``end_offset_for`` is the
    follower's own cache lookup, of the same release.

    - no answer (UNDEFINED offset): 0.11 truncates to the HW; 2.x to the fetch offset, which is the
      HW the fetcher started from, or the offset of an intermediate step taken since (= the LEO);
    - an answer without epoch (a 0.11 leader): min(answer, LEO);
    - the follower does not track the answered epoch: min(answer, LEO);
    - the follower's largest epoch <= the answered one is another epoch: step back to its end,
      ask again;
    - otherwise min(own end of that epoch, the leader's end, LEO).
    """
    epoch, end = answer
    if end == UNDEFINED:
        return (rep.leo if rep.truncating == TRUNCATING_AGAIN else rep.hw), True
    if epoch == UNDEFINED:
        return min(end, rep.leo), True
    own_epoch, own_end = end_offset_for(rep.epoch_cache, rep.leo, epoch)
    if own_end == UNDEFINED:
        return min(end, rep.leo), True
    if own_epoch != epoch:
        return min(own_end, rep.leo), False
    return min(own_end, end, rep.leo), True


@dataclass(frozen=True)
class Change:
    """One rule a mode changes against its parent."""
    rule: str        # what the release does, in one line
    ref: str         # the KIP or JIRA that made the change
    source: str      # the Kafka method it copies, at a tag


@dataclass(frozen=True)
class Mode:
    """The rules of one Kafka release range. Every field but the first four and ``parent`` is a rule
    the actions read; ``actions`` replaces action functions by name (a user's variant)."""
    name: str
    kafka: str                       # the Kafka releases it stands for
    changes: Tuple[Change, ...]      # the rules that differ from its parent
    summary: str = ""
    parent: str = ""                 # the mode it was made from by ``variant`` ("" for the root)
    # OffsetsForLeaderEpoch and a leader-epoch cache (KIP-101) instead of truncating to the HW
    epochs: bool = False
    # LeaderEpochFileCache.assign / endOffsetFor of the release (epoch modes)
    assign: Optional[Callable[[Cache, int, int], Cache]] = None
    end_offset_for: Optional[Callable[[Cache, int, int], Entry]] = None
    # Partition.makeLeader assigns (epoch, LEO) to the cache on taking office (KAFKA-7415, 2.1)
    cache_on_become_leader: bool = False
    # requests carry the sender's current leader epoch, fenced when it differs (KIP-320, 2.1)
    fenced: bool = False
    # Partition.makeFollower restarts the fetcher when only the epoch changed (2.1); before, an
    # unchanged leader means nothing to do
    follow_on_new_epoch: bool = False
    # ISR expansion also waits for the start offset of the leader's epoch (KAFKA-7128, 2.1)
    expand_waits_for_epoch_start: bool = False
    # a follower at the leader's LEO is never out of sync (Partition.getOutOfSyncReplicas, 2.1); before,
    # one that has not caught up within replica.lag.time.max.ms is, at the leader's LEO too (stuck)
    out_of_sync_below_leo: bool = False
    # with unclean election off, a follower whose leader's LEO is below its own stops its broker
    # instead of truncating (ReplicaFetcherThread.handleOffsetOutOfRange, until 2.1)
    exit_on_out_of_range: bool = False
    # the controller handles every bounce as a failure before the broker serves again (KIP-380, 2.2)
    restart_after_detection: bool = False
    # Log.truncateTo trims the epoch cache even at or beyond the LEO (KAFKA-10706, 2.6.1/2.7.0)
    trim_cache_at_leo: bool = False
    # the fetch handler recomputes the HW only when the Fetch moved the follower's LEO (2.4); before, on
    # every Fetch
    hw_after_follower_leo_change: bool = False
    # a consumer may fetch from a follower, below its HW, when the cluster is configured to
    # (replica.selector.class; KIP-392, 2.4); the run's follower_reads knob turns it on
    follower_reads: bool = False
    # a Fetch carries the last fetched epoch and the leader answers a diverging epoch; followers no
    # longer ask OffsetsForLeaderEpoch (KAFKA-10554, 2.7)
    truncate_on_fetch: bool = False
    # the leader takes a diverging Fetch's offset as the follower's LEO (KAFKA-13141, 2.7.0-2.8.0)
    diverging_fetch_updates_follower: bool = False
    # the follower applies a diverging response's HW before it truncates (KAFKA-14704, 2.8.0-3.4.0)
    hw_before_truncation: bool = False
    # a fetcher handles the answer to a Fetch of an older leader epoch when its fetch state for that
    # leader has the Fetch's offset: with the same leader at a new epoch the answer stays in flight;
    # after another leader it waits for the old leader's fetcher thread (KAFKA-18991, until 3.9.1/4.0.1)
    accept_old_epoch_response: bool = False
    # a fenced broker leads no partition, so every fetcher thread towards it empties and is shut down,
    # with whatever answer waited there (KRaft; ZooKeeper keeps a leaderless partition on the thread)
    fence_stops_fetchers: bool = False
    # the controller adds only live (ZooKeeper: registered, not shutting down; KRaft: unfenced) brokers to
    # the ISR (KIP-841, 3.3)
    isr_only_live: bool = False
    # Fetch and AlterPartition carry broker epochs; the controller refuses a stale one (KIP-903, 3.5)
    broker_epochs: bool = False
    # the HW waits for a follower caught up outside the ISR only if the leader would add it to the ISR
    # (Partition.shouldWaitForReplicaToJoinIsr, 3.6)
    caught_up_needs_eligible: bool = False
    # the controller's removal of a failed broker from the ISR bumps the leader epoch (ZooKeeper's
    # OfflineReplica; KRaft before metadata.version 3.6-IV0)
    isr_removal_bumps_epoch: bool = True
    # the record that takes a leader away elects its successor, and a leader change bumps the leader
    # epoch even to no leader (KRaft: PartitionChangeBuilder.tryElection, PartitionRegistration.merge);
    # ZooKeeper's controller elects in a later write of the same event (a step of its own here)
    fence_elects: bool = False
    # Eligible Leader Replicas (KIP-966, 4.x): the ISR may empty, ELR members may lead, the last
    # known leader is elected when nothing else is left; clean-shutdown detection (KAFKA-15586)
    elr: bool = False
    # the HW moves only while the ISR has min.insync.replicas members (KIP-966 "strict min ISR")
    strict_min_isr: bool = False
    # the last known leader is elected even while fenced (KAFKA-19522, until 4.1.0)
    elect_fenced_last_leader: bool = False
    # a replaced disk is formatted with a new directory id; the broker's registration lists it, and the
    # controller's leader acceptor refuses the replica until AssignReplicasToDirs moves the partition
    # there (KRaft, metadata.version 3.7-IV2: ReplicationControlManager.LeaderAcceptor, hasOnlineDir)
    directory_assignment: bool = False
    # with ELR, the directory assignment's change is built without the ELR flag and empties the ELR
    # (ReplicationControlManager.handleAssignReplicasToDirs, 4.0.0-4.2.x)
    assignment_clears_elr: bool = False
    # with ELR, the last known leader is recorded by the change that leaves the partition without a
    # leader, when none is recorded yet (4.1.1); before, by the change that empties the ISR, over the one
    # recorded (PartitionChangeBuilder.maybeUpdateLastKnownLeader)
    last_known_leader_when_leaderless: bool = False
    # action functions replaced by name (same signature as in spec/actions.py): (name, function) pairs
    actions: Tuple[Tuple[str, Callable], ...] = ()

    def variant(self, name: str, kafka: Optional[str] = None, changes: Tuple[Change, ...] = (),
                actions: Optional[Mapping[str, Callable]] = None, summary: str = "", **rules) -> "Mode":
        """This mode with some rules (fields) or actions replaced: a child in the tree of release
        lines, or a user's what-if; its ``parent`` is this mode. Unknown rule names are an error."""
        unknown = sorted(set(rules) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise TypeError(f"unknown rule(s) {', '.join(unknown)}")
        merged = dict(self.actions)
        merged.update(actions or {})
        return dataclasses.replace(self, name=name, kafka=kafka if kafka is not None else self.kafka,
                                   changes=tuple(changes), summary=summary, parent=self.name,
                                   actions=tuple(sorted(merged.items())), **rules)


HW = Mode(
    "hw", "0.10.0-0.10.2", summary="HW truncation: a follower truncates to its HW when it follows a new leader",
    exit_on_out_of_range=True,
    changes=(
        Change("a follower truncates its log to its HW when it starts following a different leader; "
               "taking office and a restart truncate nothing",
               "(before KIP-101)", "ReplicaManager.makeFollowers, Partition.makeFollower @0.10.2.1"),
        Change("a broker that restarts before the controller notices keeps its place and gets no "
               "LeaderAndIsr: the controller compares broker ids only, so the bounce is handled neither "
               "as a failure nor as a startup; the broker applies only the requests it had not answered "
               "(the controller's send thread retries them) and later ones",
               "KAFKA-1120", "ReplicaStateMachine.BrokerChangeListener, ControllerChannelManager"
               ".RequestSendThread.doWork @0.10.2.1"),
        Change("with unclean election off, a follower whose leader's LEO is below its own exits "
               "(its shutdown hook's controlled shutdown) instead of truncating",
               "(before KIP-101)", "ReplicaFetcherThread.handleOffsetOutOfRange @0.10.2.1"),
        Change("the leader's HW also waits for a follower outside the ISR that caught up within "
               "replica.lag.time.max.ms (a Fetch at the leader's LEO, or at the LEO the leader had at its "
               "previous Fetch), until that window closes (every release since)",
               "(all releases)", "Partition.maybeIncrementLeaderHW, Replica.updateLogReadResult @0.10.2.1"),
    ))

KIP101 = HW.variant(
    "kip101", "0.11.0-1.1", summary="leader epochs: OffsetsForLeaderEpoch answers an offset",
    epochs=True, assign=assign_0_11, end_offset_for=end_offset_for_0_11,
    changes=(
        Change("a follower asks OffsetsForLeaderEpoch(latest cached epoch) and truncates to "
               "min(answer, LEO), to its HW when the answer is UNDEFINED",
               "KIP-101", "ReplicaFetcherThread.maybeTruncate @0.11.0.0"),
        Change("the leader answers the LEO for its latest epoch, else the start of the first higher "
               "epoch; UNDEFINED below its first epoch",
               "KIP-101", "LeaderEpochFileCache.endOffsetFor @0.11.0.0"),
        Change("an appended batch adds (epoch, offset) to the cache only above the latest epoch "
               "and at or past its start; nothing is removed",
               "KIP-101", "LeaderEpochFileCache.assign, Log.append @0.11.0.0"),
    ))

KIP279 = KIP101.variant(
    "kip279", "2.0.0", summary="the answer is (epoch, end offset); the follower may step back and ask again",
    end_offset_for=end_offset_for_2_0,
    changes=(
        Change("the leader answers (largest epoch <= requested, its end offset); UNDEFINED below "
               "its first epoch", "KIP-279", "LeaderEpochFileCache.endOffsetFor @2.0.0"),
        Change("the follower truncates to min(own end, leader's end) of that epoch, steps back and asks "
               "again when it lacks it, and falls back to its fetch offset (not its HW) on UNDEFINED",
               "KIP-279", "AbstractFetcherThread.getOffsetTruncationState @2.0.0"),
    ))

KIP320 = KIP279.variant(
    "kip320", "2.1", summary="fencing by leader epoch; a new leader caches its epoch on taking office",
    assign=assign_2_1, end_offset_for=end_offset_for_2_1, cache_on_become_leader=True, fenced=True,
    follow_on_new_epoch=True, expand_waits_for_epoch_start=True, exit_on_out_of_range=False,
    out_of_sync_below_leo=True,
    changes=(
        Change("Fetch and OffsetsForLeaderEpoch carry the sender's leader epoch; a leader at another "
               "epoch answers FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH",
               "KIP-320", "Partition.localReplicaWithEpochOrException @2.1.0"),
        Change("a new leader assigns (epoch, LEO) to its cache on taking office",
               "KAFKA-7415", "Partition.makeLeader @2.1.0"),
        Change("assign truncates conflicting entries (epoch >= new or start >= new) before appending",
               "KAFKA-7415", "LeaderEpochFileCache.assign @2.1.0"),
        Change("an epoch below the first cached one is answered (requested, first start)",
               "KAFKA-7415", "LeaderEpochFileCache.endOffsetFor @2.1.0"),
        Change("a follower whose leader is unchanged but whose epoch moved restarts its fetcher "
               "(and truncates)", "KIP-320", "Partition.makeFollower @2.1.0"),
        Change("ISR expansion also waits for the follower to reach the start of the leader's epoch",
               "KAFKA-7128", "Partition.maybeExpandIsr @2.1.0"),
        Change("a follower beyond its leader's LEO truncates to it even with unclean election off "
               "(no exit)", "KAFKA-7414", "AbstractFetcherThread.fetchOffsetAndTruncate @2.1.1"),
        Change("a follower at the leader's LEO is never out of sync; before, a stuck one (no Fetch within "
               "replica.lag.time.max.ms) left the ISR at the leader's LEO too (getOutOfSyncReplicas @2.0.1)",
               "(2.1.0)", "Partition.getOutOfSyncReplicas @2.1.0"),
    ))

KIP380 = KIP320.variant(
    "kip380", "2.2-2.6.0 (ZooKeeper)", summary="broker epochs: the controller sees every bounce",
    restart_after_detection=True, follower_reads=True, hw_after_follower_leo_change=True,
    changes=(
        Change("a restarted broker registers with a new broker epoch and the controller handles it "
               "as failed before it serves again", "KIP-380",
               "KafkaController.BrokerChange.process @2.2.0"),
        Change("from 2.4 a consumer may read from a follower, below the follower's HW, when "
               "replica.selector.class picks one (the follower_reads knob)", "KIP-392",
               "ReplicaManager.fetchMessages, Partition.readRecords @2.4.0"),
        Change("from 2.4 the fetch handler recomputes the HW only when the Fetch moved the follower's LEO "
               "(2.2-2.3 on every Fetch, Partition.maybeExpandIsr @2.3.1): a HW a caught-up follower held "
               "moves at the next produce or the next Fetch that moves a LEO", "(2.4.0)",
               "Partition.updateFollowerFetchState @2.4.1"),
    ))

KAFKA10706 = KIP380.variant(
    "kafka10706", "2.6.1-2.7.x (ZooKeeper)", summary="truncation at the LEO trims the epoch cache",
    trim_cache_at_leo=True,
    changes=(
        Change("truncating at or beyond the LEO still trims epoch-cache entries that start at the LEO",
               "KAFKA-10706", "Log.truncateTo @2.7.0"),
    ))

KAFKA10554 = KAFKA10706.variant(
    "kafka10554", "2.8.0 (ZooKeeper)", summary="truncation on fetch: the Fetch names its "
    "last epoch, the leader answers where the logs diverge",
    truncate_on_fetch=True, diverging_fetch_updates_follower=True, hw_before_truncation=True,
    accept_old_epoch_response=True,
    changes=(
        Change("a follower fetches from its LEO at once on a leader change; its Fetch carries the "
               "epoch of its last fetched batch (no OffsetsForLeaderEpoch)", "KAFKA-10554",
               "ReplicaManager.initialFetchOffset, ReplicaFetcherThread.buildFetch @2.8.0"),
        Change("the leader answers a Fetch whose epoch ends below the fetch offset, or that it lacks, "
               "with that epoch's (epoch, end offset) as divergingEpoch and no records", "KAFKA-10554",
               "Partition.readRecords @2.8.0"),
        Change("the follower truncates as on an OffsetsForLeaderEpoch answer, after applying the "
               "response's HW to its divergent log (the bug KAFKA-14704, fixed in 3.4.1/3.5.0)", "KAFKA-10554",
               "AbstractFetcherThread.processFetchRequest, truncateOnFetchResponse @2.8.0"),
        Change("the leader takes a diverging Fetch's offset as the follower's LEO, so HW and ISR can "
               "move on records the follower lacks (the bug KAFKA-13141, fixed in 2.7.2/2.8.1/3.0.0)",
               "KAFKA-10554", "ReplicaManager.updateFollowerFetchState @2.8.0"),
        Change("a follower's new fetch state starts at once at its LEO, so the answer to its Fetch of an "
               "older leader epoch still matches the fetch offset and is handled, records, HW and "
               "diverging epoch alike: with the same leader at once, after another leader when the old "
               "leader's fetcher thread gets it (the bug KAFKA-18991, fixed in 3.9.1/4.0.1/4.1.0)",
               "KAFKA-10554", "AbstractFetcherThread.partitionFetchState, processFetchRequest @2.8.0"),
    ))

KAFKA13141 = KAFKA10554.variant(
    "kafka13141", "2.8.1-3.4.0 (ZooKeeper)", summary="a diverging Fetch no longer moves the follower's LEO",
    diverging_fetch_updates_follower=False,
    changes=(
        Change("the leader leaves a diverging follower's fetch state (LEO) as it was", "KAFKA-13141",
               "ReplicaManager.updateFollowerFetchState @2.8.1"),
    ))

KAFKA14704 = KAFKA13141.variant(
    "kafka14704", "3.4.1-3.5.x (ZooKeeper)", summary="truncation before the HW; the controller refuses a "
    "broker that is not live in the ISR",
    hw_before_truncation=False, isr_only_live=True,
    changes=(
        Change("a diverging response only truncates; the next fetch brings the HW", "KAFKA-14704",
               "AbstractFetcherThread.processFetchRequest @3.4.1"),
        Change("the ZooKeeper controller refuses an AlterPartition whose new ISR names a broker that is not live "
               "(unregistered or shutting down: INELIGIBLE_REPLICA), and the leader adds only a broker alive in "
               "its metadata cache (from 3.3.0, which kafka13141 does not have)", "KIP-841",
               "KafkaController.tryProcessAlterPartition, Partition.isReplicaIsrEligible @3.3.0, @3.4.1"),
    ))

KIP903 = KAFKA14704.variant(
    "kip903", "3.6 (KRaft)", summary="KRaft: broker epochs in Fetch and AlterPartition; the fence elects",
    broker_epochs=True, isr_removal_bumps_epoch=False, fence_stops_fetchers=True, fence_elects=True,
    caught_up_needs_eligible=True,
    changes=(
        Change("a Fetch carries the follower's broker epoch, the leader sends it with an ISR addition, "
               "and the controller refuses one that is not the broker's registered epoch, as it refuses a "
               "fenced or shutting-down broker (KIP-841); ZooKeeper's leader sends -1 and its controller "
               "reads broker ids only", "KIP-903",
               "Partition.updateFollowerFetchState, ReplicationControlManager.ineligibleReplicasForIsr @3.5.0"),
        Change("removing a fenced broker from the ISR keeps the leader epoch (metadata.version 3.6-IV0; "
               "3.5 still bumps it)",
               "KAFKA-15021", "PartitionChangeBuilder.triggerLeaderEpochBumpIfNeeded @3.6.0"),
        Change("a fenced broker leads nothing, so each follower's fetcher thread towards it loses its "
               "last partition when the follower applies the fence and is shut down, and an answer of "
               "an old epoch waiting there (KAFKA-18991) is lost; ZooKeeper kept a leaderless "
               "partition on that thread (ReplicaManager.makeFollowers @2.8.0)", "KIP-631",
               "ReplicationControlManager.generateLeaderAndIsrUpdates, ReplicaManager.applyDelta, "
               "applyLocalFollowersDelta @3.9.0"),
        Change("the record that fences a leader (or takes a leader in controlled shutdown out of the "
               "ISR) elects its successor, any replica electAnyLeader accepts; with none it names no "
               "leader, and either change bumps the leader epoch (every leader change does, also to "
               "no leader)", "KIP-631",
               "ReplicationControlManager.handleBrokerFenced, PartitionChangeBuilder.tryElection, "
               "PartitionRegistration.merge @3.6.0"),
        Change("the HW waits for a caught-up follower outside the ISR only while it is ISR-eligible (live, "
               "and KRaft: unfenced, its broker epoch the registered one); also on ZooKeeper from 3.6",
               "(3.6.0)", "Partition.maybeIncrementLeaderHW (shouldWaitForReplicaToJoinIsr) @3.6.0"),
    ))

KAFKA15583 = KIP903.variant(
    "kafka15583", "3.7-3.9.0 (KRaft)", summary="strict min ISR: no HW progress below min.insync.replicas",
    strict_min_isr=True, directory_assignment=True,
    changes=(
        Change("the leader moves its HW only while the ISR has at least min.insync.replicas members",
               "KAFKA-15583", "Partition.maybeIncrementLeaderHW @3.7.0"),
        Change("a broker back on a replaced disk registers the disk's new directory id; every election "
               "refuses its replica, whose assigned directory the registration no longer lists, until its "
               "AssignReplicasToDirs moves the partition to the new directory (metadata.version 3.7-IV2)",
               "KIP-858", "ReplicationControlManager.LeaderAcceptor, handleAssignReplicasToDirs, "
               "ClusterControlManager.hasOnlineDir @3.7.0, @4.1.1"),
    ))

# KAFKA-18991's fix: the fetcher handles a response only when the leader epoch of its request is the
# fetch state's (the check processFetchRequest lacked); 3.9.1 and 4.0.1 each take it on their own line
FIX_18991 = Change("a follower handles a Fetch response only when the leader epoch of its request is "
                   "the one it fetches at now; the answer to a Fetch of the old epoch is dropped",
                   "KAFKA-18991", "AbstractFetcherThread.processFetchRequest @3.9.1, @4.0.1")

KAFKA18991 = KAFKA15583.variant(
    "kafka18991", "3.9.1 (KRaft)", summary="a response to a Fetch of an older leader epoch is dropped",
    accept_old_epoch_response=False, changes=(FIX_18991,))

KIP966 = KAFKA15583.variant(
    "kip966", "4.0.0 (KRaft, ELR enabled)", summary="Eligible Leader Replicas: "
    "the ISR may empty, ELR members and the last known leader may lead",
    elr=True, elect_fenced_last_leader=True, assignment_clears_elr=True,
    changes=(
        Change("the controller removes even the last ISR member; a member lost while the ISR is below "
               "min.insync.replicas joins the ELR, which an ISR at min.insync.replicas clears",
               "KIP-966", "PartitionChangeBuilder.maybePopulateTargetElr, build @4.0.0"),
        Change("a leader is a live ISR member, else (empty ISR) a live ELR member, which becomes the "
               "ISR, else (ISR and ELR empty) the last known leader as an unclean election, even with "
               "unclean election disabled, and even while it is fenced (the bug KAFKA-19522)",
               "KIP-966", "PartitionChangeBuilder.electAnyLeader, canElectLastKnownLeader @4.0.0, @4.0.1"),
        Change("a directory assignment empties the ELR: handleAssignReplicasToDirs builds its change "
               "without the ELR flag, so the change writes an empty ELR and keeps the last known leader",
               "KIP-966", "ReplicationControlManager.handleAssignReplicasToDirs, "
               "PartitionChangeBuilder.maybeUpdateRecordElr @4.0.0, @4.1.1"),
        Change("a broker that registers without a clean-shutdown record leaves the ISR and the ELR",
               "KAFKA-15586", "ClusterControlManager.registerBroker (previousBrokerEpoch), "
               "ReplicationControlManager.handleBrokerShutdown @4.0.0 (KAFKA-18635 restored it: with ELR, "
               "3.9.0 took every new incarnation as unclean, KAFKA-16952)"),
    ))

KAFKA18991_40 = KIP966.variant(
    "kafka18991-4.0", "4.0.1 (KRaft, ELR enabled)", summary="a response to a Fetch of an older leader "
    "epoch is dropped (KAFKA-18991's fix on the 4.0 line)",
    accept_old_epoch_response=False, changes=(FIX_18991,))

KAFKA19522 = KAFKA18991_40.variant(
    "kafka19522", "4.1.1-4.2 (KRaft)", summary="a fenced last known leader is not elected (ELR on by "
    "default in new clusters)", elect_fenced_last_leader=False, last_known_leader_when_leaderless=True,
    changes=(
        Change("the last known leader is elected only while it is unfenced", "KAFKA-19522",
               "PartitionChangeBuilder.canElectLastKnownLeader @4.1.0 (returns false when the last known "
               "leader is not acceptable; @4.0.1 only logs it)"),
        Change("the last known leader is recorded by the change that leaves the partition without a leader, "
               "if none is recorded yet (before: by the change that empties the ISR, over the one recorded); "
               "the two differ only where an ISR member may be refused as leader (a replaced disk's offline "
               "directory), so 4.1.0, which has the old rule and KAFKA-19522's fix, has no mode",
               "(4.1.1)", "PartitionChangeBuilder.maybeUpdateLastKnownLeader @4.1.1 (@4.1.0, @4.0.1: on an "
               "emptied ISR)"),
    ))

PR20716 = KAFKA19522.variant(
    "pr20716", "4.3+ (KRaft)", summary="a directory assignment keeps the ELR", assignment_clears_elr=False,
    changes=(
        Change("handleAssignReplicasToDirs builds its change with the ELR flag (PartitionChangeBuilder takes "
               "it in its constructor), so a replaced disk's assignment keeps the ELR as every other change does",
               "apache/kafka#20716", "ReplicationControlManager.handleAssignReplicasToDirs, "
               "PartitionChangeBuilder.<init> @4.3.0"),
    ))

# every mode, parents first, in release order (3.9.1 before 4.0.0); the newest last
LADDER: Tuple[Mode, ...] = (HW, KIP101, KIP279, KIP320, KIP380, KAFKA10706, KAFKA10554, KAFKA13141, KAFKA14704,
                             KIP903, KAFKA15583, KAFKA18991, KIP966, KAFKA18991_40, KAFKA19522, PR20716)
MODES: Dict[str, Mode] = {m.name: m for m in LADDER}


def lineage(mode: Mode) -> Tuple[Mode, ...]:
    """The built-in modes from the root to ``mode`` along parents (a variant's own line ends in the
    mode it was made from, then the variant)."""
    line = [mode]
    while line[-1].parent in MODES and MODES[line[-1].parent] is not line[-1]:
        line.append(MODES[line[-1].parent])
    return tuple(reversed(line))


# the fields of a Mode that describe it rather than rule on anything; the rest are its rules
DESCRIPTIVE = ("name", "kafka", "changes", "summary", "parent", "actions")
RULES = tuple(f.name for f in dataclasses.fields(Mode) if f.name not in DESCRIPTIVE)


def same_rules(a: Mode, b: Mode) -> bool:
    """Whether two modes rule alike: every rule and every replaced action the same.

    >>> same_rules(MODES["kafka18991"], MODES["kafka15583"])
    False
    """
    return all(getattr(a, name) == getattr(b, name) for name in RULES) and dict(a.actions) == dict(b.actions)


# the ELR feature and the rules that exist only with it, as a cluster without the feature has them
WITHOUT_ELR_RULES: Mapping[str, bool] = {"elr": False, "elect_fenced_last_leader": False,
                                         "assignment_clears_elr": False, "last_known_leader_when_leaderless": False}


def without_elr(mode: Mode) -> Optional[Mode]:
    """The mode a cluster of ``mode``'s releases follows with the ELR feature off
    (eligible.leader.replicas.version=0: 4.0's default, and a 4.1+ cluster upgraded from 3.x, whose
    bootstrap metadata version predates 4.1-IV0), or None where ``mode`` has no ELR.

    ELR off, the 4.x controller builds every PartitionChangeBuilder with
    ``setEligibleLeaderReplicasEnabled(false)``: the last ISR member stays, no ELR, no last known
    leader (``PartitionChangeBuilder.build``, ``maybeUpdateLastKnownLeader`` return early), and
    ``ReplicationControlManager.handleBrokerShutdown`` handles every shutdown as a fence, clean or
    not (@4.0.0, @4.1.1). Nothing else the model reads depends on the feature, so a 4.x mode with
    ELR off is its parent line's last mode without ELR, with the fixes taken since: the ladder mode
    whose rules those are.

    >>> without_elr(MODES["kip966"]).name, without_elr(MODES["kafka19522"]).name
    ('kafka15583', 'kafka18991')
    >>> without_elr(MODES["kafka15583"]) is None
    True
    """
    if not mode.elr:
        return None
    off = dataclasses.replace(mode, **WITHOUT_ELR_RULES)
    for m in reversed(LADDER):
        if same_rules(m, off):
            return m
    return mode.variant(f"{mode.name}-no-elr", summary="ELR off", **WITHOUT_ELR_RULES,
                        changes=(Change("the ELR feature is off: the rules of the releases before KIP-966",
                                        "KIP-966", "PartitionChangeBuilder.setEligibleLeaderReplicasEnabled "
                                        "@4.0.0"),))


# the rules a KRaft controller and a KRaft broker's metadata path set, as ZooKeeper's releases have them
# (the fetcher, Partition, the log and the epoch cache are one code on both: their rules carry over)
ZOOKEEPER_RULES: Mapping[str, bool] = {"broker_epochs": False, "isr_removal_bumps_epoch": True,
                                       "fence_stops_fetchers": False, "fence_elects": False,
                                       "directory_assignment": False}
ZOOKEEPER_CHANGES = (
    Change("no broker epochs: a ZooKeeper leader sends -1 for each ISR member and keeps no follower's epoch, "
           "its controller reads broker ids only (KIP-903 is KRaft's)", "ZooKeeper",
           "Partition.isReplicaIsrEligible, addBrokerEpochToIsr, KafkaController.tryProcessAlterPartition @3.9.1"),
    Change("the controller's removal of a failed broker from the ISR bumps the leader epoch", "ZooKeeper",
           "ReplicaStateMachine.doRemoveReplicasFromIsr (LeaderAndIsr.newLeaderAndIsr) @3.9.1"),
    Change("a failed leader's partition goes offline, and the election is a later write of the event; a "
           "follower keeps the leaderless partition on its fetcher thread", "ZooKeeper",
           "KafkaController.onReplicasBecomeOffline, ReplicaManager.makeFollowers @3.9.1"),
    Change("no directory ids: an election takes a live replica whatever disk it is back on (directory "
           "assignment is KRaft's)", "ZooKeeper",
           "PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection @3.9.1"),
)


def zookeeper(mode: Mode) -> Optional[Mode]:
    """The mode a ZooKeeper cluster of ``mode``'s releases follows (3.x ran either way until 4.0
    removed ZooKeeper), or None where ``mode`` is already ZooKeeper's or has ELR (4.x only).

    A 3.x broker runs one fetcher, one ``Partition`` and one log under either controller, so every
    rule of theirs carries over (KAFKA-14704's fix, KIP-841's check, KAFKA-15583's strict min ISR,
    KAFKA-18991's fix); only the KRaft-only rules (``ZOOKEEPER_RULES``) take ZooKeeper's values: the
    ladder mode whose rules those are, else ``mode`` made into its ZooKeeper variant.

    >>> zookeeper(MODES["kip903"]).name, zookeeper(MODES["kafka15583"]).name
    ('kip903-zk', 'kafka15583-zk')
    >>> zookeeper(MODES["kafka18991"]).kafka, zookeeper(MODES["kafka14704"]), zookeeper(MODES["kip966"])
    ('3.9.1 (ZooKeeper)', None, None)
    """
    if mode.elr or all(getattr(mode, rule) == value for rule, value in ZOOKEEPER_RULES.items()):
        return None
    zk = dataclasses.replace(mode, **ZOOKEEPER_RULES)
    for m in reversed(LADDER):
        if same_rules(m, zk):
            return m
    return mode.variant(f"{mode.name}-zk", kafka=mode.kafka.replace("(KRaft)", "(ZooKeeper)"),
                        summary=f"{mode.name}'s releases on a ZooKeeper cluster", changes=ZOOKEEPER_CHANGES,
                        **ZOOKEEPER_RULES)


# modes derived from the ladder that it does not hold (a ZooKeeper 3.7-3.9 cluster), by name: a trace
# of one names it, so it must resolve (spec.config.resolve_mode) as the ladder's do
DERIVED: Dict[str, Mode] = {d.name: d for d in (zookeeper(m) for m in LADDER) if d is not None and d.name not in MODES}


NEWEST = LADDER[-1].name
# `epoch` always names the newest mode
ALIASES: Dict[str, str] = {"epoch": NEWEST}

