"""What if ISR expansion only waited for the HW?

Kafka 2.1 (KAFKA-7128) made a leader wait, before it adds a follower back to the ISR, until the
follower has also reached the start offset of the leader's current epoch, not only the leader's
HW. This variant is the newest mode, kip380 (Kafka 2.2-2.6), without that wait: a follower that
has caught up to the HW, but not to what the new leader wrote in its own epoch, joins the ISR.

    hwcheck modes --mode-file docs/examples/expand_at_hw.py
    hwcheck verify --mode-file docs/examples/expand_at_hw.py --replicas 3 --records 1 --symmetry
    hwcheck replay hwcheck-expand-at-hw-NoCommittedDataLoss.itf.json \
        --mode-file docs/examples/expand_at_hw.py
"""

from hwcheck.spec.modes import MODES, Change

NEWEST = MODES["kip380"]

MODE = NEWEST.variant(
    name="expand-at-hw",
    kafka=f"{NEWEST.kafka} without KAFKA-7128",
    summary="kip380, but ISR expansion waits only for the follower to reach the leader's HW",
    changes=(
        Change("ISR expansion waits for the follower's LEO to reach the leader's HW only, not the start "
               "of the leader's epoch", "KAFKA-7128 (undone)", "Partition.maybeExpandIsr @2.0.0"),
    ),
    expand_waits_for_epoch_start=False,
)
