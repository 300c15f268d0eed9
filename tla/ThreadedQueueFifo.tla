------------------------- MODULE ThreadedQueueFifo -------------------------
(***************************************************************************)
(* The threaded FIFO queue (impl/fifo.py, impl.FifoQueue: the threaded     *)
(* driver of the FIFO queue machine, impl/fifo_machine.py), one level      *)
(* below QueueFifo: the group lock and the wake-ups.                       *)
(*                                                                         *)
(* The machinery is ThreadedQueue's, cut down to what the group lock       *)
(* touches: one lock, the wait sets not_empty, not_full and new_deadline,  *)
(* producers that send (each message in its group, Group), consumers that *)
(* receive, delete, retry or drop what they hold, and the sweeper.  What   *)
(* is new is the receivers' predicate: a receive waits on not_empty until  *)
(* some message is DELIVERABLE -- visible, in a group with no message in   *)
(* flight (FifoMachine.deliverable; the machine's receive answers          *)
(* NOTHING until then) -- so a visible message is no longer enough, and    *)
(* every transition that unlocks a group with a visible message must       *)
(* wake a receiver (FifoMachine.left_flight, FifoMachine.wake_group): a    *)
(* delete of the group's in-flight message, a release, a death.  A         *)
(* release re-queues the message to its place in send order                *)
(* (FifoMachine.requeue).  Delays, batches, cancel, purge and              *)
(* deduplication are left out: they are QueueFifo's, and add no new wait   *)
(* here.                                                                   *)
(*                                                                         *)
(* The constant Bug injects the FIFO lost wakeup:                          *)
(*   "none"              impl/fifo.py as it is;                            *)
(*   "delete_no_notify"  a delete unlocks the group without notifying      *)
(*                       not_empty (ThreadedQueueFifoWakeup.cfg): a        *)
(*                       receiver that waits for the group's next message  *)
(*                       sleeps beside it.                                 *)
(* THEOREM Spec => QueueFifoSpec: every behaviour is one of QueueFifo's.   *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
    Producers,      \* producer threads: they send, each id at most once
    Consumers,      \* consumer threads: receive, then delete, retry or drop
    Sweeper,        \* the sweeper thread
    Ids,            \* the message ids
    Groups,         \* the message groups: a partition of Ids (as in QueueFifo)
    Capacity,       \* bound on visible + in-flight, or None
    MaxReceives,    \* dead-letter on the release after this many deliveries
    VT,             \* the visibility timeout of every receive (>= 1)
    MaxTime,        \* MODEL bound: the clock runs 0..MaxTime
    Bug,            \* "none" or "delete_no_notify"
    None

ASSUME Bug \in {"none", "delete_no_notify"}
ASSUME MaxReceives \in Nat \ {0} /\ VT \in Nat \ {0}

Threads == Producers \cup Consumers \cup {Sweeper}
Conds == {"not_empty", "not_full", "new_deadline"}

VARIABLES
    accepted, qSent, qVisible, qInFlight, qDead, qDone, attempt, deadline, target, clock,
    lock, waiting, op, at, arg, held

queueVars == <<accepted, qSent, qVisible, qInFlight, qDead, qDone, attempt, deadline>>
threadVars == <<lock, waiting, op, at, arg, held>>
vars == <<queueVars, target, clock, threadVars>>

(***************************************************************************)
(*                                HELPERS                                  *)
(***************************************************************************)
Range(s) == {s[k] : k \in DOMAIN s}
Remove(s, x) == SelectSeq(s, LAMBDA y : y # x)
Min(a, b) == IF a <= b THEN a ELSE b
Group == [i \in Ids |-> CHOOSE G \in Groups : i \in G]

Active == Len(qVisible) + Len(qInFlight)
HasRoom == IF Capacity = None THEN TRUE ELSE Active < Capacity
Live(r) == r # None /\ r[1] \in Range(qInFlight) /\ attempt[r[1]] = r[2]

State == [accepted |-> accepted, qSent |-> qSent, qVisible |-> qVisible,
          qInFlight |-> qInFlight, qDead |-> qDead, qDone |-> qDone,
          attempt |-> attempt, deadline |-> deadline]
SetState(s) ==
    /\ accepted' = s.accepted /\ qSent' = s.qSent /\ qVisible' = s.qVisible
    /\ qInFlight' = s.qInFlight /\ qDead' = s.qDead /\ qDone' = s.qDone
    /\ attempt' = s.attempt /\ deadline' = s.deadline

\* The group lock and the receive scan (FifoMachine.locked, first).
LockedIn(s, g) == \E j \in Range(s.qInFlight) : Group[j] = g
Deliverable(s) == SelectSeq(s.qVisible, LAMBDA x : ~LockedIn(s, Group[x]))
\* The unlocked groups with a visible message: each needs a receiver.
OpenGroups(s) == {Group[i] : i \in Range(Deliverable(s))}

\* Release (Machine.release + FifoMachine.requeue): dead-letter, or back to the
\* visible messages at its place in send order.
Release(s, i) ==
    IF attempt[i] >= MaxReceives
    THEN [s EXCEPT !.qInFlight = Remove(@, i), !.deadline = [@ EXCEPT ![i] = None],
                   !.qDead = Append(@, i)]
    ELSE [s EXCEPT !.qInFlight = Remove(@, i), !.deadline = [@ EXCEPT ![i] = None],
                   !.qVisible = SelectSeq(s.qSent, LAMBDA x : x \in Range(s.qVisible) \cup {i})]

RECURSIVE ReleaseAll(_, _)
ReleaseAll(s, ids) == IF ids = <<>> THEN s ELSE ReleaseAll(Release(s, Head(ids)), Tail(ids))

\* FifoMachine.wake_group after a message of group g left flight in the step
\* to s: one receiver, if g is now unlocked with a visible message.
WakeGroup(s, g) == IF g \in OpenGroups(s) THEN 1 ELSE 0

\* How many receivers each transition notifies: one per re-queued message
\* (Machine.release), one per group a death or a delete unlocked
\* (FifoMachine.left_flight).
Requeued(s) == Len(s.qVisible) - Len(qVisible)
Died(s) == Len(s.qDead) - Len(qDead)
DeathWakes(s) == Cardinality({g \in OpenGroups(s) :
                                 \E k \in (Len(qDead) + 1)..Len(s.qDead) : Group[s.qDead[k]] = g})

\* The due deliveries in deadline order, ties by receive order (no delays:
\* the timers are the in-flight messages, in receive order).
RECURSIVE FromDue(_)
FromDue(d) == IF d > clock THEN <<>>
              ELSE SelectSeq(qInFlight, LAMBDA i : deadline[i] = d) \o FromDue(d + 1)
NextDue(s) == LET ds == {s.deadline[i] : i \in Range(s.qInFlight)}
              IN IF ds = {} THEN None ELSE CHOOSE d \in ds : \A e \in ds : d <= e
ArmNotifies(dl) == IF target = None \/ dl < target THEN 1 ELSE 0

\* ThreadedQueue's EndCS: notify nE, nF, nD waiters (any of them), release
\* the lock, then return (selfAt = "none") or wait on sleepOn, in one step.
EndCS(self, nE, nF, nD, selfAt, sleepOn) ==
    /\ \E wE \in SUBSET waiting["not_empty"], wF \in SUBSET waiting["not_full"],
          wD \in SUBSET waiting["new_deadline"] :
          /\ Cardinality(wE) = Min(nE, Cardinality(waiting["not_empty"]))
          /\ Cardinality(wF) = Min(nF, Cardinality(waiting["not_full"]))
          /\ Cardinality(wD) = Min(nD, Cardinality(waiting["new_deadline"]))
          /\ LET woken == wE \cup wF \cup wD
                 left == [not_empty |-> waiting["not_empty"] \ wE,
                          not_full |-> waiting["not_full"] \ wF,
                          new_deadline |-> waiting["new_deadline"] \ wD]
             IN /\ waiting' = [c \in Conds |-> left[c] \cup (IF c = sleepOn THEN {self} ELSE {})]
                /\ at' = [t \in Threads |-> IF t = self THEN selfAt
                                            ELSE IF t \in woken THEN "lock" ELSE at[t]]
    /\ lock' = None

Return(self, nE, nF, nD) ==
    /\ EndCS(self, nE, nF, nD, "none", "none")
    /\ op' = [op EXCEPT ![self] = "none"]
    /\ arg' = [arg EXCEPT ![self] = None]

Wait(self, c) == EndCS(self, 0, 0, 0, "wait", c) /\ UNCHANGED <<op, arg>>

(***************************************************************************)
(*                    THE THREADS' STEPS OUTSIDE THE LOCK                  *)
(***************************************************************************)
StartSend(p, i) ==
    /\ at[p] = "none"
    /\ i \notin accepted /\ \A q \in Producers : arg[q] # i
    /\ op' = [op EXCEPT ![p] = "send"] /\ at' = [at EXCEPT ![p] = "lock"]
    /\ arg' = [arg EXCEPT ![p] = i]
    /\ UNCHANGED <<queueVars, target, clock, lock, waiting, held>>

StartReceive(c) ==
    /\ at[c] = "none" /\ held[c] = None
    /\ op' = [op EXCEPT ![c] = "receive"] /\ at' = [at EXCEPT ![c] = "lock"]
    /\ UNCHANGED <<queueVars, target, clock, lock, waiting, arg, held>>

StartWithReceipt(c, method) ==
    /\ at[c] = "none" /\ held[c] # None
    /\ op' = [op EXCEPT ![c] = method] /\ at' = [at EXCEPT ![c] = "lock"]
    /\ UNCHANGED <<queueVars, target, clock, lock, waiting, arg, held>>

\* The consumer gives up its delivery without telling the queue.
Drop(c) ==
    /\ at[c] = "none" /\ held[c] # None
    /\ held' = [held EXCEPT ![c] = None]
    /\ UNCHANGED <<queueVars, target, clock, lock, waiting, op, at, arg>>

Tick ==
    /\ clock < MaxTime
    /\ clock' = clock + 1
    /\ UNCHANGED <<queueVars, target, threadVars>>

Acquire(t) ==
    /\ at[t] = "lock" /\ lock = None
    /\ lock' = t /\ at' = [at EXCEPT ![t] = "cs"]
    /\ UNCHANGED <<queueVars, target, clock, waiting, op, arg, held>>

Timeout ==
    /\ Sweeper \in waiting["new_deadline"] /\ target # None /\ target <= clock
    /\ waiting' = [waiting EXCEPT !["new_deadline"] = @ \ {Sweeper}]
    /\ at' = [at EXCEPT ![Sweeper] = "lock"]
    /\ UNCHANGED <<queueVars, target, clock, lock, op, arg, held>>

(***************************************************************************)
(*                        THE CRITICAL SECTIONS                            *)
(***************************************************************************)

\* send: wait for room; then the message joins the visible tail (it is the
\* last sent) and one receiver is notified.
SendCS(p) ==
    /\ at[p] = "cs" /\ op[p] = "send"
    /\ IF HasRoom
       THEN LET i == arg[p]
            IN /\ SetState([State EXCEPT !.accepted = @ \cup {i}, !.qSent = Append(@, i),
                                         !.qVisible = Append(@, i)])
               /\ Return(p, 1, 0, 0)
       ELSE Wait(p, "not_full") /\ UNCHANGED queueVars
    /\ UNCHANGED <<target, clock, held>>

\* receive: wait until some message is deliverable; then the first one in
\* send order of an unlocked group goes in flight, locking its group.
ReceiveCS(c) ==
    /\ at[c] = "cs" /\ op[c] = "receive"
    /\ IF Deliverable(State) # <<>>
       THEN LET i == Head(Deliverable(State))
                dl == clock + VT
            IN /\ SetState([State EXCEPT !.qVisible = Remove(@, i),
                                         !.qInFlight = Append(@, i),
                                         !.attempt = [@ EXCEPT ![i] = @ + 1],
                                         !.deadline = [@ EXCEPT ![i] = dl]])
               /\ held' = [held EXCEPT ![c] = <<i, attempt[i] + 1>>]
               /\ Return(c, 0, 0, ArmNotifies(dl))
       ELSE Wait(c, "not_empty") /\ UNCHANGED <<queueVars, held>>
    /\ UNCHANGED <<target, clock>>

\* delete: with a live receipt the message is DONE, a sender is notified,
\* and -- FifoMachine.left_flight -- a receiver, if the delete unlocked a
\* group with a visible message.  Bug "delete_no_notify" forgets that.
DeleteCS(c) ==
    /\ at[c] = "cs" /\ op[c] = "delete"
    /\ LET r == held[c]
       IN IF Live(r)
          THEN LET s == [State EXCEPT !.qInFlight = Remove(@, r[1]),
                                      !.deadline = [@ EXCEPT ![r[1]] = None],
                                      !.qDone = @ \cup {r[1]}]
               IN /\ SetState(s)
                  /\ Return(c, IF Bug = "delete_no_notify" THEN 0 ELSE WakeGroup(s, Group[r[1]]),
                            1, 0)
          ELSE Return(c, 0, 0, 0) /\ UNCHANGED queueVars
    /\ held' = [held EXCEPT ![c] = None]
    /\ UNCHANGED <<target, clock>>

\* retry: with a live receipt, release (re-queued: one receiver notified;
\* dead: a sender, and a receiver if the death unlocked an open group).
RetryCS(c) ==
    /\ at[c] = "cs" /\ op[c] = "retry"
    /\ LET r == held[c]
       IN IF Live(r)
          THEN LET s == Release(State, r[1])
               IN SetState(s) /\ Return(c, Requeued(s) + DeathWakes(s), Died(s), 0)
          ELSE Return(c, 0, 0, 0) /\ UNCHANGED queueVars
    /\ held' = [held EXCEPT ![c] = None]
    /\ UNCHANGED <<target, clock>>

\* The sweeper: release every due delivery, notify as release does, then
\* sleep until the earliest remaining deadline.
SweepCS ==
    /\ at[Sweeper] = "cs"
    /\ LET s == ReleaseAll(State, FromDue(0))
       IN /\ SetState(s)
          /\ target' = NextDue(s)
          /\ EndCS(Sweeper, Requeued(s) + DeathWakes(s), Died(s), 0, "wait", "new_deadline")
    /\ UNCHANGED <<clock, op, arg, held>>

(***************************************************************************)
(*                          THE SPECIFICATION                              *)
(***************************************************************************)
Init ==
    /\ accepted = {} /\ qSent = <<>> /\ qVisible = <<>> /\ qInFlight = <<>>
    /\ qDead = <<>> /\ qDone = {}
    /\ attempt = [i \in Ids |-> 0] /\ deadline = [i \in Ids |-> None]
    /\ target = None /\ clock = 0 /\ lock = None
    /\ waiting = [c \in Conds |-> IF c = "new_deadline" THEN {Sweeper} ELSE {}]
    /\ op = [t \in Threads |-> IF t = Sweeper THEN "sweep" ELSE "none"]
    /\ at = [t \in Threads |-> IF t = Sweeper THEN "wait" ELSE "none"]
    /\ arg = [t \in Threads |-> None]
    /\ held = [c \in Consumers |-> None]

Next ==
    \/ \E p \in Producers, i \in Ids : StartSend(p, i)
    \/ \E c \in Consumers : StartReceive(c)
    \/ \E c \in Consumers : StartWithReceipt(c, "delete")
    \/ \E c \in Consumers : StartWithReceipt(c, "retry")
    \/ \E c \in Consumers : Drop(c)
    \/ \E t \in Threads : Acquire(t)
    \/ \E p \in Producers : SendCS(p)
    \/ \E c \in Consumers : ReceiveCS(c)
    \/ \E c \in Consumers : DeleteCS(c)
    \/ \E c \in Consumers : RetryCS(c)
    \/ SweepCS
    \/ Timeout
    \/ Tick

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(*              THE REFINEMENT MAPPING: ThreadedQueueFifo -> QueueFifo      *)
(* As ThreadedQueue's: a message's status is the container holding it;     *)
(* `sent' is qSent; no dedup ids, no delays, no batches.                   *)
(***************************************************************************)
StatusOf(i) ==
    CASE i \in Range(qVisible)  -> "VISIBLE"
      [] i \in Range(qInFlight) -> "IN_FLIGHT"
      [] i \in qDone            -> "DONE"
      [] OTHER                  -> "DEAD"

AbsMsgs == [i \in accepted |-> [status |-> StatusOf(i), attempt |-> attempt[i],
                                deadline |-> deadline[i], visibleAt |-> None]]

QF == INSTANCE QueueFifo
        WITH msgs <- AbsMsgs, visible <- qVisible, inFlight <- qInFlight, dead <- qDead,
             delayed <- <<>>, timers <- qInFlight, now <- clock, sent <- qSent, dedup <- {},
             MaxAttempt <- MaxReceives, VisibilityTimeouts <- {VT}, ExtendTimeouts <- {},
             Delays <- {0}, MaxBatch <- 1, DedupSets <- {}, DedupInterval <- 1

QueueFifoSpec == QF!Spec
QueueInvariants == QF!Invariants
QueueSteps == QF!GroupOrderSteps /\ QF!OneStateSteps /\ QF!AttemptsCountSteps

(***************************************************************************)
(*                       INVARIANTS OF THE THREADS                         *)
(***************************************************************************)
MutualExclusion == \A t \in Threads : at[t] = "cs" <=> lock = t

WaitSets ==
    /\ \A t \in Threads : at[t] = "wait" <=> \E c \in Conds : t \in waiting[c]
    /\ waiting["not_empty"] \subseteq {c \in Consumers : op[c] = "receive"}
    /\ waiting["not_full"] \subseteq {p \in Producers : op[p] = "send"}
    /\ waiting["new_deadline"] \subseteq {Sweeper}

OnTheirWay(methods) == {t \in Threads : op[t] \in methods /\ at[t] \in {"lock", "cs"}}

(***************************************************************************)
(* ReceiversAwake, FIFO: while a receiver sleeps, every unlocked group     *)
(* with a visible message has a receiver on its way (one receive takes one *)
(* message and locks its group again, so one receiver per open group).     *)
(* The FIFO lost wakeup breaks it in the step that unlocks the group.      *)
(***************************************************************************)
ReceiversAwake ==
    waiting["not_empty"] # {}
        => Cardinality(OpenGroups(State)) <= Cardinality(OnTheirWay({"receive"}))

SendersAwake ==
    (waiting["not_full"] # {} /\ Capacity # None)
        => Capacity - Active <= Cardinality(OnTheirWay({"send"}))

SweeperAwake ==
    Sweeper \in waiting["new_deadline"]
        => LET next == NextDue(State) IN next # None => (target # None /\ target <= next)

NoLostWakeup == ReceiversAwake /\ SendersAwake /\ SweeperAwake

\* As ThreadedQueue's, with "deliverable" for "visible".
Stuck(t) ==
    \/ at[t] = "wait" /\ ~(t = Sweeper /\ target # None /\ target <= clock)
    \/ t \in Producers /\ at[t] = "none" /\ Ids \subseteq accepted
CouldWork(t) ==
    \/ t \in Consumers /\ Deliverable(State) # <<>>
    \/ t \in Producers /\ HasRoom
    \/ t = Sweeper /\ FromDue(0) # <<>>
DeadlockFree ==
    (\A t \in Threads : Stuck(t)) => \A t \in Threads : at[t] = "wait" => ~CouldWork(t)

THEOREM Spec => QueueFifoSpec
THEOREM (Spec /\ Bug = "none") => [](MutualExclusion /\ WaitSets /\ NoLostWakeup /\ DeadlockFree)
=============================================================================
