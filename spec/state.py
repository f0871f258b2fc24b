"""The state of one partition: replicas, the controller, messages in flight, and history.

Everything is a tuple of ints so that a state is immutable, hashable and has a stable
encoding. Offsets start at 0; LEO is the offset of the *next* record, i.e. ``len(log)``
(seed 000: "LEO ... 下一条消息的位移值"); a replica's HW never exceeds its LEO.

A log entry is ``(record_id, epoch)``: the record and the leader epoch it was written in.
An epoch-cache entry is ``(epoch, start_offset)`` (seed 000: "(epoch, offset)").
ISRs are bitmasks over replica ids (bit r set = replica r is in the set).
"""

from __future__ import annotations

from typing import NamedTuple, Tuple, Union

# role (memory only: what the replica last learned from LeaderAndIsr)
NONE, LEADER, FOLLOWER = 0, 1, 2
ROLE_NAMES = ("none", "leader", "follower")

# PREFERRED: the first replica of the partition's assignment (the preferred leader); the model keeps the
# assignment's order fixed, so r0 leads first and the preferred-replica election only ever elects it
PREFERRED = 0

# kinds of the one message a follower may have in flight (Kafka's fetcher is synchronous); each kind
# is a NamedTuple below whose first field is its kind, so that two messages of different kinds are
# never equal as tuples
FETCH, FETCH_RESPONSE, EPOCH_REQUEST, EPOCH_RESPONSE = 1, 2, 3, 4
NO_MESSAGE = 0   # no message in flight: the "kind" of an empty slot in the z3 encoding (spec/terms.py)
MESSAGE_NAMES = {FETCH: "Fetch", FETCH_RESPONSE: "FetchResponse",
                 EPOCH_REQUEST: "OffsetsForLeaderEpoch", EPOCH_RESPONSE: "OffsetsForLeaderEpochResponse"}

UNDEFINED = -1  # UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET / an unknown remote LEO / no leader

Entry = Tuple[int, int]


class Fetch(NamedTuple):
    """A follower's Fetch to the leader it names (AbstractFetcherThread.buildFetch)."""
    kind: int                    # FETCH
    leader: int                  # the broker it is sent to
    current_leader_epoch: int    # the sender's leader epoch (KIP-320 fencing; the model's leader checks it)
    fetch_offset: int            # the sender's LEO
    # truncation on fetch (2.7+): the epoch of the sender's last entry (UNDEFINED with an empty log)
    last_fetched_epoch: int = UNDEFINED
    broker_epoch: int = 0        # KIP-903 modes: the sender's broker epoch (0 before)


class FetchResponse(NamedTuple):
    """The leader's answer to a Fetch (ReplicaManager.readFromLocalLog + Partition.fetchRecords)."""
    kind: int                    # FETCH_RESPONSE
    leader: int                  # the broker that sent it
    records: Tuple[Entry, ...]   # (record, epoch) from the fetch offset to leader_leo
    hw: int                      # the leader's HW as the response carries it (UNDEFINED once applied, KAFKA-14704)
    leader_leo: int              # the leader's LEO when it answered
    # truncation on fetch (2.7+): the diverging epoch and its end offset (UNDEFINED when the logs agree)
    diverging_epoch: int = UNDEFINED
    diverging_end_offset: int = UNDEFINED
    # while it waits in the old leader's fetcher thread (``State.stale``, KAFKA-18991 modes): the
    # fetch offset of the Fetch it answers, which the fetcher compares with its fetch state's
    fetch_offset: int = UNDEFINED


class EpochRequest(NamedTuple):
    """OffsetsForLeaderEpoch (KIP-101): where does ``requested_epoch`` end in the leader's log?"""
    kind: int                    # EPOCH_REQUEST
    leader: int
    current_leader_epoch: int    # the sender's leader epoch (KIP-320)
    requested_epoch: int         # the sender's latest cached epoch


class EpochResponse(NamedTuple):
    """The leader's answer (LeaderEpochFileCache.endOffsetFor): its largest epoch at most the one
    asked and where that epoch ends."""
    kind: int                    # EPOCH_RESPONSE
    leader: int
    epoch: int
    end_offset: int


Message = Union[Fetch, FetchResponse, EpochRequest, EpochResponse]


class Replica(NamedTuple):
    alive: int                 # 1 while the broker runs
    role: int                  # NONE / LEADER / FOLLOWER, from the last LeaderAndIsr applied
    leader_epoch: int          # the leader epoch of that LeaderAndIsr (UNDEFINED before any)
    leader: int                # the leader it names (whom a follower fetches from)
    isr: int                   # a leader's view of the ISR (bitmask); 0 on other roles
    log: Tuple[Entry, ...]     # (record_id, epoch) at each offset; LEO = len(log)
    hw: int                    # high watermark; also what a restart recovers (checkpoint)
    flushed: int               # prefix surviving a power failure (tracked only with power failures)
    epoch_cache: Tuple[Entry, ...]  # (epoch, start_offset), durable; epoch modes only
    truncating: int            # 1: must find its divergence point before fetching (epoch modes)
    remote_leo: Tuple[int, ...]     # on a leader: each follower's LEO as learned from fetches
    # on a leader, KIP-903 modes only: each follower's broker epoch, as its last fetch carried it
    remote_broker_epoch: Tuple[int, ...] = ()
    # KIP-966 modes only, on disk: 1 when the broker last stopped by a controlled shutdown (the
    # clean-shutdown marker its next registration reports: KAFKA-15586)
    clean_shutdown: int = 0
    # KRaft modes with KAFKA-18991 only, in memory: 1 once the controller fenced the leader this
    # follower fetches from (the fence empties every fetcher thread towards it, ``_leave_fetcher``)
    leader_fenced: int = 0
    # on a leader: each follower's lastFetchLeaderLogEndOffset, the leader's LEO when it handled the
    # follower's last Fetch, while that Fetch is recent (within replica.lag.time.max.ms); UNDEFINED
    # when it is not, or the leader reset it on taking a new leader epoch (Replica.resetReplicaState)
    remote_fetch_leo: Tuple[int, ...] = ()
    # on a leader, a bitmask: the followers outside its ISR view that caught up within
    # replica.lag.time.max.ms (Replica.lastCaughtUpTimeMs); the HW waits for them as for the ISR
    # (Partition.maybeIncrementLeaderHW). ISR members' bits are 0: the ISR counts them anyway
    remote_caught_up: int = 0
    # on a leader: the leader epoch at which its current leadership began (Partition.makeLeader,
    # isNewLeader). A produce request waits in its purgatory (DelayedProduce) until the HW passes it
    # for as long as the broker stays leader, through LeaderAndIsrs that name it again (at the next
    # epoch: actions._term_goes_on); becoming a follower answers it NOT_LEADER
    # (ReplicaManager.makeFollowers), and a stop loses it. UNDEFINED on other roles
    leading_since: int = UNDEFINED
    # KRaft from 3.7 (``Mode.directory_assignment``) only, on disk: 1 once a replaced disk was
    # formatted with a new directory id (``StorageTool format``: meta.properties' directory.id) that no
    # registration of the broker has reported yet; its next registration does (``restart``)
    new_directory: int = 0

    @property
    def leo(self) -> int:
        return len(self.log)


class Controller(NamedTuple):
    leader: int   # UNDEFINED when the partition has no leader (offline)
    epoch: int    # the latest leader epoch it handed out
    isr: int      # bitmask
    live: int     # bitmask: the brokers it believes are up (registered in ZooKeeper, unfenced in KRaft)
    # KIP-903 modes only: each broker's epoch, a count of its registrations (a restart registers anew)
    broker_epochs: Tuple[int, ...] = ()
    # KIP-966 modes only: Eligible Leader Replicas and the last known ELR (bitmasks)
    elr: int = 0
    last_known_elr: int = 0
    # KRaft from 3.7 (``Mode.directory_assignment``) only, a bitmask: the replicas whose directory the
    # partition assigns (``PartitionRegistration.directories``) is not one their broker's registration
    # lists, so ``ReplicationControlManager.LeaderAcceptor`` refuses them as leaders
    # (``ClusterControlManager.hasOnlineDir``) until an AssignReplicasToDirs moves them (``assign_dir``)
    offline_dirs: int = 0


class History(NamedTuple):
    """Observations for the invariants only; the protocol never reads them."""
    produced: int                # records handed to a leader so far (next record id)
    acked: Tuple[int, ...]       # per record id: the offset the producer was told, or UNDEFINED
    exposed: Tuple[int, ...]     # per offset: the record a consumer could have read there
    crashes: int                 # crashes used
    power_failures: int          # power failures used
    disk_losses: int = 0         # disk losses used
    # proofs only (Model(cfg, history_variables=True)): history variables (Abadi-Lamport) that let
    # a lemma date what the state alone cannot.
    # Per exposed offset, the leader epoch of the leader whose HW rise exposed it: "a leader holds
    # what was exposed up to its epoch".
    exposed_epoch: Tuple[int, ...] = ()
    # Per leader epoch 0..max_epoch, the replica the controller named leader when it handed the
    # epoch out (UNDEFINED: not handed out yet, or no leader then): "only epoch e's leader caches e
    # without one of its records" still says who after that leader left office.
    epoch_leader: Tuple[int, ...] = ()
    # Per follower, while it has a stale Fetch: the entry its log held just below the Fetch's offset
    # when it sent it (UNDEFINED, UNDEFINED when the Fetch asks from offset 0, or there is none):
    # what the Fetch's last fetched epoch and offset claimed of a log that may have changed since.
    stale_entry: Tuple[Entry, ...] = ()


class State(NamedTuple):
    replicas: Tuple[Replica, ...]
    controller: Controller
    inflight: Tuple[tuple, ...]  # per follower: () or its one outstanding request/response
    # per follower: () or one Fetch its sender has since abandoned; in the KAFKA-18991 modes also a
    # FetchResponse its fetcher left behind when it moved off that leader, which the fetcher thread
    # of that leader still waits for (``follower_handle_old_response``)
    stale: Tuple[tuple, ...]
    history: History


def members(mask: int, n: int) -> Tuple[int, ...]:
    """Replica ids in an ISR bitmask.

    >>> members(0b101, 3)
    (0, 2)
    """
    return tuple(r for r in range(n) if mask >> r & 1)


def in_office(s: State, r: int) -> bool:
    """r leads at the controller's current epoch: alive, its role leader, the controller's leader,
    at the epoch the controller handed out last."""
    rep = s.replicas[r]
    return (rep.alive and rep.role == LEADER and s.controller.leader == r
            and rep.leader_epoch == s.controller.epoch)


def leader_in_office(s: State) -> int:
    """The replica in office (``in_office``), or UNDEFINED when none is."""
    l = s.controller.leader
    return l if l != UNDEFINED and in_office(s, l) else UNDEFINED


def replica_name(r: int) -> str:
    return f"r{r}"


# build(cls, fields): a NamedTuple of ``cls`` from its fields in order, in one C call (what its
# ``_make`` does), without the interpreted ``__new__`` that ``typing.NamedTuple`` generates
build = tuple.__new__


def _replacer(cls):
    """A ``_replace`` for the NamedTuple ``cls``: the fields it is given put into a list of the
    tuple's fields by position, one build. ``collections.namedtuple``'s own runs in the interpreter
    (a ``_make`` from ``map`` and ``dict.pop`` over every field); the actions call ``_replace`` about
    twice a step, and this one, compiled with the module, returns the same tuple in 0.56-0.67x the
    time (tests/test_actions.py compares them). A name that is not a field is refused (TypeError)
    as the original refuses it (ValueError).

    >>> Controller(0, 1, 3, 3)._replace(epoch=2, isr=1)
    Controller(leader=0, epoch=2, isr=1, live=3, broker_epochs=(), elr=0, last_known_elr=0, offline_dirs=0)
    """
    position = {name: i for i, name in enumerate(cls._fields)}

    def _replace(self, /, **changes):
        values = list(self)
        for name, value in changes.items():
            i = position.get(name)
            if i is None:
                raise TypeError(f"{cls.__name__}._replace() got an unexpected keyword argument {name!r}")
            values[i] = value
        return build(cls, values)
    _replace.__qualname__ = f"{cls.__name__}._replace"
    _replace.__doc__ = f"A new {cls.__name__} with the given fields replaced."
    return _replace


def _reduce(self):
    """How pickle rebuilds a state's tuples: ``tuple.__new__(cls, fields)``, a C call, where a
    NamedTuple's own way calls ``__getnewargs__`` to save it and the generated ``__new__`` to load
    it, two interpreted frames per tuple; bfs pickles every new state into its frontier and loads it
    back to expand it (checker/bfs.py). The same tuple comes back.

    >>> import pickle
    >>> c = Controller(0, 1, 3, 3)
    >>> pickle.loads(pickle.dumps(c)) == c, type(pickle.loads(pickle.dumps(c))) is Controller
    (True, True)
    """
    return build, (type(self), tuple(self))


for _cls in (Fetch, FetchResponse, EpochRequest, EpochResponse, Replica, Controller, History, State):
    _cls._replace = _replacer(_cls)
    _cls.__reduce__ = _reduce
