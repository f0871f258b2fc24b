"""What if today's Kafka did not check broker epochs on ISR expansion?

KIP-903 (3.5, KRaft) makes a Fetch carry the follower's broker epoch; the leader sends it with an
ISR addition and the controller refuses one that is not the epoch the broker registered with
(INELIGIBLE_REPLICA). This variant is the newest mode without that check: a Fetch the follower
sent before it lost its disk reaches the leader after the follower restarted, and the leader,
handling it, adds the empty follower back to the ISR (KAFKA-14139): bfs finds the loss in 12 steps.

    hwcheck verify --mode-file docs/examples/without_kip903.py --min-isr 2 --disk-losses 1 \
        --crashes 1 --invariant NoCommittedDataLoss
    hwcheck replay hwcheck-kafka19522-without-kip903-NoCommittedDataLoss.itf.json \
        --mode-file docs/examples/without_kip903.py --mode kafka13141
"""

from hwcheck.spec.modes import LADDER, Change

NEWEST = LADDER[-1]

MODE = NEWEST.variant(
    name=f"{NEWEST.name}-without-kip903",
    kafka=f"{NEWEST.kafka} without KIP-903",
    summary=f"{NEWEST.name}, but the controller adds a replica to the ISR whatever its broker epoch",
    changes=(
        Change("the controller ignores the broker epoch of an ISR addition", "KIP-903 (undone)",
               "ReplicationControlManager.ineligibleReplicasForIsr @3.4.0"),
    ),
    broker_epochs=False,
)
