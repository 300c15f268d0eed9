--------------------------- MODULE ThreadedQueue ---------------------------
(***************************************************************************)
(* The threaded queue of impl/threaded.py (the threaded driver of the      *)
(* queue machine, impl/machine.py), one level below Queue: the threads     *)
(* and the synchronization, exactly as the implementation uses them.       *)
(*                                                                         *)
(* Queue.tla says WHAT the queue does: each operation is one atomic step.  *)
(* This module says HOW impl.Queue makes those steps atomic, and why no    *)
(* thread sleeps while it could work:                                      *)
(*   - one lock, `mutex': a variable holding its owner thread or None;     *)
(*   - three condition variables sharing it, each a WAIT SET:              *)
(*       not_empty     receivers wait here for a visible message;          *)
(*       not_full      senders wait here for room;                         *)
(*       new_deadline  the sweeper waits here for an earlier deadline;     *)
(*     wait(c) releases the lock and joins c's wait set in one step;       *)
(*     notify(c) wakes one waiter, notify_all(c) all of them; a woken      *)
(*     thread has to take the lock again and then re-checks its predicate  *)
(*     (the `while' loop around every wait in impl/threaded.py,            *)
(*     BaseQueue._until: a step answers Blocked while its predicate is     *)
(*     false);                                                             *)
(*   - producer, consumer and sweeper threads, each a small program that   *)
(*     calls the queue's methods.  A method is: take the lock (Acquire),   *)
(*     then one critical section (XxxCS) that either does the operation    *)
(*     and returns, or finds its predicate false and waits.                *)
(*   - the sweeper thread (impl.sweeper.sweep_forever): expire what is     *)
(*     due, then wait on new_deadline until the earliest deadline (a       *)
(*     timed wait on the discrete clock) or until a notify says there is   *)
(*     an earlier one.                                                     *)
(*                                                                         *)
(* The queue's data are kept the way impl.Queue keeps them (a container    *)
(* per state, the attempt and deadline fields of each record), not the way *)
(* Queue.tla does.  The refinement mapping at the end computes Queue's     *)
(* variables from them, and TLC checks that every behaviour of this module *)
(* is a behaviour of Queue (THEOREM Spec => QueueSpec).                    *)
(*                                                                         *)
(* The constant Bug injects the wakeup bugs of the lesson (all expected to *)
(* fail, in the configs named *Wakeup*; docs/levels.md walks the trace):   *)
(*   "none"               impl/threaded.py as it is;                       *)
(*   "sweep_no_notify"    the sweeper re-queues an expired message without *)
(*                        notifying not_empty: a receiver sleeps through   *)
(*                        the redelivery (ThreadedQueueWakeup.cfg);        *)
(*   "sweep_notify_once"  the sweeper notifies not_empty once per sweep,   *)
(*                        not once per message it re-queued: notify where  *)
(*                        notify(n)/notify_all is needed                   *)
(*                        (ThreadedQueueWakeupNotifyOnce.cfg);             *)
(*   "sweep_notify_if_empty"  the sweeper's release notifies not_empty     *)
(*                        only when VISIBLE was empty before it ("nobody   *)
(*                        waits while something is visible"): a receiver   *)
(*                        woken by a send has not yet taken the lock when  *)
(*                        the sweep re-queues a second message, and the    *)
(*                        other receiver sleeps beside it.  It needs two   *)
(*                        messages active and two consumers: every         *)
(*                        Bug = "none" model of capacity 1 or one id       *)
(*                        passes with it (ThreadedQueueTwoConsumers.cfg    *)
(*                        does not; ThreadedQueueWakeupNotifyIfEmpty.cfg). *)
(*                                                                         *)
(* What is left out, and why it does not matter here: shutdown/close (they *)
(* notify_all and end every loop); the expiry heap's stale entries (the    *)
(* sweeper uses the earliest live deadline, which is what Machine.next_due *)
(* computes); timeouts of blocked send/receive; generated ids.             *)
(*                                                                         *)
(* What this model ASSUMES (docs/failure-model.md says how impl.Queue      *)
(* makes it true, and which tests show it): no exception inside a critical *)
(* section.  Each XxxCS below is one atomic step that always completes.    *)
(* In the code a step can fail part-way only before it changes anything:   *)
(* every transition reads the clock, calls the trace sink and starts the   *)
(* sweeper thread first, and then commits with code that does not raise,   *)
(* so a failed step is a stutter (no change), which refinement allows.  A  *)
(* thread interrupted while it waits passes its notify on (the same as a   *)
(* notify to the next waiter).  A sweep that fails is such a stutter, and  *)
(* the same sweeper thread tries it again after a backoff on the queue's   *)
(* clock (impl/sweeper.py), so SweepCS stays enabled and is taken once the *)
(* cause is gone: the liveness properties here hold for runs whose failed  *)
(* sweeps eventually succeed.  A sweeper whose clock wait fails dies and is *)
(* restarted by the next arm, sweep() or health(); runs with such a death  *)
(* are outside the liveness claims.  No fork or garbage collection here.  *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

(***************************************************************************)
(*                             CONSTANTS                                   *)
(***************************************************************************)
CONSTANTS
    Producers,      \* producer threads (model values): they send and cancel
    Consumers,      \* consumer threads (model values): they receive, then delete,
                    \* retry, change_visibility, or drop what they hold
    Sweeper,        \* the sweeper thread (a model value)
    Ids,            \* the message ids the producers send, each at most once
    Capacity,       \* as in Queue: bound on visible + in-flight, or None
    MaxReceives,    \* as in Queue, but a number here: it bounds the attempts
    VT,             \* the visibility timeout of every receive (a number >= 1)
    ExtendTimeouts, \* the timeouts change_visibility may set (0 releases at once)
    WithCancel,     \* TRUE: producers may also cancel (more states)
    WithPurge,      \* TRUE: producers may also purge
    Delays,         \* the delays a producer's send may ask for (0: none)
    Batch,          \* >= 2: producers may also send_batch Batch entries, and consumers
                    \* use receive_batch(Batch), delete_batch and
                    \* change_visibility_batch instead of the single calls; 1: no batches
    MaxTime,        \* MODEL bound: the clock runs 0, 1, ..., MaxTime
    Bug,            \* "none", or the injected wakeup bug (see the header)
    None            \* a model value: no owner, no deadline, no receipt, ...

ASSUME None \notin Nat
ASSUME Capacity \in Nat \cup {None}
ASSUME MaxReceives \in Nat \ {0}
ASSUME VT \in Nat \ {0}
ASSUME ExtendTimeouts \subseteq Nat
ASSUME WithCancel \in BOOLEAN
ASSUME WithPurge \in BOOLEAN
ASSUME Delays \subseteq Nat
ASSUME Batch \in 1..10
ASSUME MaxTime \in Nat
ASSUME Bug \in {"none", "sweep_no_notify", "sweep_notify_once", "sweep_notify_if_empty"}
ASSUME Sweeper \notin Producers \cup Consumers /\ Producers \cap Consumers = {}

Threads == Producers \cup Consumers \cup {Sweeper}

\* The three condition variables of impl.Queue, by their attribute names.
Conds == {"not_empty", "not_full", "new_deadline"}

(***************************************************************************)
(*                             VARIABLES                                   *)
(***************************************************************************)
VARIABLES
    \* The queue's fields, guarded by the lock (the attribute of impl.Queue's
    \* queue machine, impl.machine.Machine, in brackets):
    accepted,    \* every id ever accepted (accepted)
    qVisible,    \* ids of VISIBLE messages, head first (visible, an ordered dict)
    qInFlight,   \* ids of IN_FLIGHT messages, in receive order (in_flight)
    qDead,       \* ids of DEAD messages, in order of death (dead)
    qDone,       \* ids of DONE messages (done)
    qCancelled,  \* ids of CANCELLED messages (cancelled)
    qDelayed,    \* ids of DELAYED messages, in send order (delayed)
    qTimers,     \* ids of DELAYED and IN_FLIGHT messages in the order of their
                 \* timers' seq: the heap timers' tie order (a delayed send and
                 \* every delivery take the next seq; change_visibility keeps it)
    attempt,     \* attempt[i]: deliveries of i so far (the record's attempt)
    deadline,    \* deadline[i]: the record's deadline, a time or None
    visibleAt,   \* visibleAt[i]: when a DELAYED message's delay fires, or None
    target,      \* the deadline the sweeper last went to sleep for, or None
                 \* (SweeperLink.target)
    clock,       \* the clock's time
    \* The threads and the synchronization:
    lock,        \* the thread that holds mutex, or None
    waiting,     \* waiting[c]: the wait set of condition c
    op,          \* op[t]: the queue method thread t is in, or "none"
    at,          \* at[t]: where t is in op[t]: "lock" (waits for the mutex),
                 \* "cs" (holds it), "wait" (in a wait set), "none" (not in one)
    arg,         \* arg[t]: what a producer sends (<<id, delay>>; a send_batch: a
                 \* sequence of them) or cancels (an id), the timeout a consumer
                 \* passes to change_visibility(_batch); None otherwise
    held,        \* held[c]: the receipt <<id, attempt>> consumer c holds, or None
    heldBatch    \* heldBatch[c]: the receipts of c's last receive_batch, or <<>>

queueVars == <<accepted, qVisible, qInFlight, qDead, qDone, qCancelled, qDelayed, qTimers,
               attempt, deadline, visibleAt>>
threadVars == <<lock, waiting, op, at, arg, held, heldBatch>>
vars == <<queueVars, target, clock, threadVars>>

(***************************************************************************)
(*                             HELPERS                                     *)
(***************************************************************************)
Range(s) == {s[k] : k \in DOMAIN s}
Remove(s, x) == SelectSeq(s, LAMBDA y : y # x)
Min(a, b) == IF a <= b THEN a ELSE b
Earliest(S) == CHOOSE d \in S : \A e \in S : d <= e

Active == Len(qVisible) + Len(qInFlight) + Len(qDelayed)
RoomFor(n) == IF Capacity = None THEN TRUE ELSE Active + n <= Capacity  \* Machine.accepts
HasRoom == RoomFor(1)                                    \* Machine.has_room

\* Machine.live: the receipt names the delivery in flight.
Live(r) == r # None /\ r[1] \in Range(qInFlight) /\ attempt[r[1]] = r[2]

\* The dead-letter policy of Machine.release (Machine.dies): releasing a
\* message delivered n times kills it iff n >= MaxReceives.
Dies(n) == n >= MaxReceives

\* When a message's timer is due: its delay's visibleAt, or its deadline.
DueOf(i) == IF visibleAt[i] # None THEN visibleAt[i] ELSE deadline[i]

\* The messages whose timer has come (what the sweeper fires).
Due == {i \in Range(qTimers) : DueOf(i) # None /\ DueOf(i) <= clock}

\* The earliest due time of the timers of the queue data s, or None
\* (Machine.next_due).
NextDue(s) ==
    LET armed == {IF s.visibleAt[i] # None THEN s.visibleAt[i] ELSE s.deadline[i] :
                  i \in Range(s.qTimers)} \ {None}
    IN IF armed = {} THEN None ELSE Earliest(armed)

(***************************************************************************)
(* The order of Machine.fire_due: the heap (Machine.due) pops (due, seq)   *)
(* pairs, earliest first, delays and deadlines alike.  qTimers is in seq   *)
(* order, so taking its due ids time by time, each bucket in qTimers       *)
(* order, is the same order.                                               *)
(***************************************************************************)
RECURSIVE FromDue(_)
FromDue(d) ==
    IF d > clock THEN <<>>
    ELSE SelectSeq(qTimers, LAMBDA i : DueOf(i) = d) \o FromDue(d + 1)
ExpiryOrder == FromDue(0)

(***************************************************************************)
(* The driver (BaseQueue._apply, from a step's Outcome.due) notifies the   *)
(* sweeper when a new deadline is earlier than the one it sleeps for (or   *)
(* it sleeps for none).                                                    *)
(***************************************************************************)
ArmNotifies(dl) == IF target = None \/ dl < target THEN 1 ELSE 0

\* How many receivers a sweep that re-queued k messages notifies.  With
\* "sweep_notify_if_empty" only a release into an empty VISIBLE notifies:
\* the sweep's releases only append, so that is the first one, and only if
\* nothing was visible before the sweep.  (The model counts a delay firing
\* as such a release too; the config of that bug has no delays.)
SweepNotifies(k) ==
    CASE Bug = "sweep_no_notify"       -> 0
      [] Bug = "sweep_notify_once"     -> Min(k, 1)
      [] Bug = "sweep_notify_if_empty" -> IF qVisible = <<>> THEN Min(k, 1) ELSE 0
      [] OTHER                         -> k

(***************************************************************************)
(* Conditions.notify: while a send_batch waits on not_full, a notify of    *)
(* not_full wakes every sender (one notify could reach the batch, which    *)
(* cannot use one slot, while a single send that could sleeps on).  (The   *)
(* implementation counts a batch sender from its wait until it holds the   *)
(* lock again; the model counts it while it is in the wait set, which      *)
(* wakes no more threads than the implementation does.)                    *)
(***************************************************************************)
BatchSenderWaits == \E p \in waiting["not_full"] : op[p] = "send_batch"
FullNotifies(n) == IF n > 0 /\ BatchSenderWaits THEN Cardinality(waiting["not_full"]) ELSE n

(***************************************************************************)
(* The end of a critical section.  Before leaving it, thread self has      *)
(* notified nE waiters of not_empty, nF of not_full and nD of              *)
(* new_deadline (all of them, if fewer wait): they leave their wait sets   *)
(* and queue for the lock (at = "lock").  Which waiters wake is not        *)
(* specified -- CPython happens to wake the longest waiting, the docs      *)
(* promise nothing -- so every choice is a possible step.  Then self       *)
(* releases the lock and either returns from its method (selfAt = "none")  *)
(* or, if sleepOn is a condition, waits on it (selfAt = "wait"): in ONE    *)
(* step, as Condition.wait releases the lock and joins the wait set        *)
(* atomically.  That atomicity is what makes a notify between "predicate   *)
(* false" and "asleep" impossible.                                         *)
(***************************************************************************)
EndCS(self, nE, nF, nD, selfAt, sleepOn) ==
    /\ \E wE \in SUBSET waiting["not_empty"],
          wF \in SUBSET waiting["not_full"],
          wD \in SUBSET waiting["new_deadline"] :
          /\ Cardinality(wE) = Min(nE, Cardinality(waiting["not_empty"]))
          /\ Cardinality(wF) = Min(FullNotifies(nF), Cardinality(waiting["not_full"]))
          /\ Cardinality(wD) = Min(nD, Cardinality(waiting["new_deadline"]))
          /\ LET woken == wE \cup wF \cup wD
                 left == [not_empty |-> waiting["not_empty"] \ wE,
                          not_full |-> waiting["not_full"] \ wF,
                          new_deadline |-> waiting["new_deadline"] \ wD]
             IN /\ waiting' = [c \in Conds |-> left[c] \cup (IF c = sleepOn THEN {self} ELSE {})]
                /\ at' = [t \in Threads |-> IF t = self THEN selfAt
                                            ELSE IF t \in woken THEN "lock"
                                            ELSE at[t]]
    /\ lock' = None

\* Return from the method, having notified nE, nF, nD waiters.
Return(self, nE, nF, nD) ==
    /\ EndCS(self, nE, nF, nD, "none", "none")
    /\ op' = [op EXCEPT ![self] = "none"]
    /\ arg' = [arg EXCEPT ![self] = None]

\* The predicate is false: wait on condition c (the method goes on later).
Wait(self, c) ==
    /\ EndCS(self, 0, 0, 0, "wait", c)
    /\ UNCHANGED <<op, arg>>

(***************************************************************************)
(* The queue's fields -- impl.Queue's containers and record fields -- as   *)
(* one record, like Queue's State, so that a release can be a function     *)
(* from a state to a state: applied once by RetryCS and                    *)
(* ChangeVisibilityCS, folded over the due messages by SweepCS.            *)
(* SetState(s) is the step whose new fields are s.                         *)
(***************************************************************************)
State == [accepted |-> accepted, qVisible |-> qVisible, qInFlight |-> qInFlight,
          qDead |-> qDead, qDone |-> qDone, qCancelled |-> qCancelled,
          qDelayed |-> qDelayed, qTimers |-> qTimers,
          attempt |-> attempt, deadline |-> deadline, visibleAt |-> visibleAt]

SetState(s) ==
    /\ accepted' = s.accepted
    /\ qVisible' = s.qVisible
    /\ qInFlight' = s.qInFlight
    /\ qDead' = s.qDead
    /\ qDone' = s.qDone
    /\ qCancelled' = s.qCancelled
    /\ qDelayed' = s.qDelayed
    /\ qTimers' = s.qTimers
    /\ attempt' = s.attempt
    /\ deadline' = s.deadline
    /\ visibleAt' = s.visibleAt

(***************************************************************************)
(* Release(s, i): Machine.release(rec, now), the data half: the state s    *)
(* in-flight message i dead-lettered, or appended to the visible tail.     *)
(* The only definition of the release in this module: RetryCS and          *)
(* ChangeVisibilityCS apply it once, SweepCS folds it (FireAll).  The      *)
(* notify half is counted from the result by Requeued and Died, and done   *)
(* by the caller as it leaves its critical section: not_empty once per     *)
(* message re-queued (or made visible by its delay), not_full once per     *)
(* death (a slot is free).                                                 *)
(***************************************************************************)
Release(s, i) ==
    LET dies == Dies(s.attempt[i])
    IN [s EXCEPT !.qInFlight = Remove(@, i),
                 !.qTimers = Remove(@, i),
                 !.deadline = [@ EXCEPT ![i] = None],
                 !.qVisible = IF dies THEN @ ELSE Append(@, i),
                 !.qDead = IF dies THEN Append(@, i) ELSE @]

\* A delay firing (Machine.fire_delay): the message joins the visible tail.
FireDelay(s, i) ==
    [s EXCEPT !.qDelayed = Remove(@, i),
              !.qTimers = Remove(@, i),
              !.visibleAt = [@ EXCEPT ![i] = None],
              !.qVisible = Append(@, i)]

\* Fire each of ids in turn, the first one first: a left fold of FireDelay
\* and Release, as Machine.fire_round fires each timer Machine.due popped.
RECURSIVE FireAll(_, _)
FireAll(s, ids) ==
    IF ids = <<>> THEN s
    ELSE LET i == Head(ids)
         IN FireAll(IF s.visibleAt[i] # None THEN FireDelay(s, i) ELSE Release(s, i), Tail(ids))

\* The data halves of the other transitions, for the batches' folds.
\* Sent: a send of <<id, delay>> (Machine.add_delayed for a delay; the timer
\* takes the next seq).  Deliver: the head goes in flight, deadline dl.
Sent(s, e) ==
    LET i == e[1]  d == e[2]
    IN [s EXCEPT !.accepted = @ \cup {i},
                 !.qVisible = IF d = 0 THEN Append(@, i) ELSE @,
                 !.qDelayed = IF d = 0 THEN @ ELSE Append(@, i),
                 !.qTimers = IF d = 0 THEN @ ELSE Append(@, i),
                 !.visibleAt = [@ EXCEPT ![i] = IF d = 0 THEN None ELSE clock + d]]
Deliver(s, dl) ==
    LET i == Head(s.qVisible)
    IN [s EXCEPT !.qVisible = Tail(@),
                 !.qInFlight = Append(@, i),
                 !.qTimers = Append(@, i),
                 !.attempt = [@ EXCEPT ![i] = @ + 1],
                 !.deadline = [@ EXCEPT ![i] = dl]]
LiveIn(s, r) == r[1] \in Range(s.qInFlight) /\ s.attempt[r[1]] = r[2]
Deleted(s, r) ==
    IF ~LiveIn(s, r) THEN s
    ELSE [s EXCEPT !.qInFlight = Remove(@, r[1]),
                   !.qTimers = Remove(@, r[1]),
                   !.deadline = [@ EXCEPT ![r[1]] = None],
                   !.qDone = @ \cup {r[1]}]
Changed(s, r, t) ==
    IF ~LiveIn(s, r) THEN s
    ELSE IF t = 0 THEN Release(s, r[1])
    ELSE [s EXCEPT !.deadline = [@ EXCEPT ![r[1]] = clock + t]]

RECURSIVE SendAll(_, _), ReceiveAll(_, _, _), DeleteAll(_, _), ChangeAll(_, _, _)
SendAll(s, b) == IF b = <<>> THEN s ELSE SendAll(Sent(s, Head(b)), Tail(b))
ReceiveAll(s, k, dl) == IF k = 0 THEN s ELSE ReceiveAll(Deliver(s, dl), k - 1, dl)
DeleteAll(s, rs) == IF rs = <<>> THEN s ELSE DeleteAll(Deleted(s, Head(rs)), Tail(rs))
ChangeAll(s, rs, t) == IF rs = <<>> THEN s ELSE ChangeAll(Changed(s, Head(rs), t), Tail(rs), t)

\* The earliest delay of a send batch's entries, or None: what it arms.
FirstDelay(b) ==
    LET ds == {b[k][2] : k \in DOMAIN b} \ {0}
    IN IF ds = {} THEN None ELSE clock + Earliest(ds)

\* How many messages a step from the current state to s made visible
\* (re-queued, or a delay fired), how many it dead-lettered, how many it
\* made DONE (for a release, a fold of releases and delays, a delete
\* batch): the notifies of not_empty and not_full that Machine.release,
\* Machine.fire_delay and Machine.finish report in their step's Outcome.
Requeued(s) == Len(s.qVisible) - Len(qVisible)
Died(s) == Len(s.qDead) - Len(qDead)
Finished(s) == Cardinality(s.qDone) - Cardinality(qDone)

(***************************************************************************)
(*            THE THREADS' STEPS OUTSIDE THE QUEUE (no lock)               *)
(***************************************************************************)

\* The ids producer q is sending.
Sending(q) == CASE op[q] = "send" -> {arg[q][1]}
                [] op[q] = "send_batch" -> {arg[q][k][1] : k \in DOMAIN arg[q]}
                [] OTHER -> {}

\* A producer calls send(id=i, delay=d) with an id no producer has sent or is
\* sending.
StartSend(p, i, d) ==
    /\ at[p] = "none"
    /\ i \notin accepted
    /\ \A q \in Producers : i \notin Sending(q)
    /\ op' = [op EXCEPT ![p] = "send"]
    /\ at' = [at EXCEPT ![p] = "lock"]
    /\ arg' = [arg EXCEPT ![p] = <<i, d>>]
    /\ UNCHANGED <<queueVars, target, clock, lock, waiting, held, heldBatch>>

(***************************************************************************)
(* A producer calls send_batch(b): Batch entries <<id, delay>> with ids    *)
(* distinct, never accepted and not being sent.  (A batch larger than the  *)
(* capacity is a ValueError before any waiting: no call.)                  *)
(***************************************************************************)
StartSendBatch(p, b) ==
    /\ at[p] = "none"
    /\ \A k \in DOMAIN b : b[k][1] \notin accepted /\ \A q \in Producers : b[k][1] \notin Sending(q)
    /\ \A j, k \in DOMAIN b : j # k => b[j][1] # b[k][1]
    /\ IF Capacity = None THEN TRUE ELSE Len(b) <= Capacity
    /\ op' = [op EXCEPT ![p] = "send_batch"]
    /\ at' = [at EXCEPT ![p] = "lock"]
    /\ arg' = [arg EXCEPT ![p] = b]
    /\ UNCHANGED <<queueVars, target, clock, lock, waiting, held, heldBatch>>

\* A producer calls purge().
StartPurge(p) ==
    /\ WithPurge
    /\ at[p] = "none"
    /\ op' = [op EXCEPT ![p] = "purge"]
    /\ at' = [at EXCEPT ![p] = "lock"]
    /\ UNCHANGED <<queueVars, target, clock, lock, waiting, arg, held, heldBatch>>

\* A producer calls cancel(i) for a message that is still pending.  (Cancelling
\* a finished one changes nothing; that no-op is still reached when the message
\* finishes between the call and the critical section.)
StartCancel(p, i) ==
    /\ WithCancel
    /\ at[p] = "none"
    /\ i \in Range(qVisible) \cup Range(qInFlight) \cup Range(qDelayed)
    /\ op' = [op EXCEPT ![p] = "cancel"]
    /\ at' = [at EXCEPT ![p] = "lock"]
    /\ arg' = [arg EXCEPT ![p] = i]
    /\ UNCHANGED <<queueVars, target, clock, lock, waiting, held, heldBatch>>

\* An idle consumer calls receive() (block=True, no timeout), or
\* receive_batch(Batch) when batches are on.
StartReceive(c) ==
    /\ at[c] = "none"
    /\ held[c] = None /\ heldBatch[c] = <<>>
    /\ op' = [op EXCEPT ![c] = IF Batch = 1 THEN "receive" ELSE "receive_batch"]
    /\ at' = [at EXCEPT ![c] = "lock"]
    /\ UNCHANGED <<queueVars, target, clock, lock, waiting, arg, held, heldBatch>>

\* A consumer that holds a receipt calls delete, retry or change_visibility with it.
StartWithReceipt(c, method, t) ==
    /\ at[c] = "none"
    /\ held[c] # None
    /\ op' = [op EXCEPT ![c] = method]
    /\ at' = [at EXCEPT ![c] = "lock"]
    /\ arg' = [arg EXCEPT ![c] = t]
    /\ UNCHANGED <<queueVars, target, clock, lock, waiting, held, heldBatch>>

StartDelete(c) == StartWithReceipt(c, "delete", None)
StartRetry(c) == StartWithReceipt(c, "retry", None)
StartChangeVisibility(c, t) == StartWithReceipt(c, "change_visibility", t)

\* A consumer that holds a batch's receipts calls delete_batch or
\* change_visibility_batch (every entry with the timeout t) with them.
StartWithBatch(c, method, t) ==
    /\ at[c] = "none"
    /\ heldBatch[c] # <<>>
    /\ op' = [op EXCEPT ![c] = method]
    /\ at' = [at EXCEPT ![c] = "lock"]
    /\ arg' = [arg EXCEPT ![c] = t]
    /\ UNCHANGED <<queueVars, target, clock, lock, waiting, held, heldBatch>>

StartDeleteBatch(c) == StartWithBatch(c, "delete_batch", None)
StartChangeVisibilityBatch(c, t) == StartWithBatch(c, "change_visibility_batch", t)

(***************************************************************************)
(* Drop(c): the consumer gives up its delivery without telling the queue   *)
(* (its processing failed and it went back to receive()).  The delivery    *)
(* stays in flight until the sweeper re-queues it: the redelivery that the *)
(* lost-wakeup bug sleeps through.                                         *)
(***************************************************************************)
Drop(c) ==
    /\ at[c] = "none"
    /\ held[c] # None \/ heldBatch[c] # <<>>
    /\ held' = [held EXCEPT ![c] = None]
    /\ heldBatch' = [heldBatch EXCEPT ![c] = <<>>]
    /\ UNCHANGED <<queueVars, target, clock, lock, waiting, op, at, arg>>

(***************************************************************************)
(* The clock moves on by one unit (up to MaxTime).  Nothing else changes:  *)
(* the real clock wakes no one; a timed wait runs out (Timeout below).     *)
(***************************************************************************)
Tick ==
    /\ clock < MaxTime
    /\ clock' = clock + 1
    /\ UNCHANGED <<queueVars, target, threadVars>>

(***************************************************************************)
(*                         THE LOCK AND THE WAITS                          *)
(***************************************************************************)

\* Thread t takes the lock, when nobody holds it (`with self.mutex:', or the
\* re-acquire inside Condition.wait after a wakeup).
Acquire(t) ==
    /\ at[t] = "lock"
    /\ lock = None
    /\ lock' = t
    /\ at' = [at EXCEPT ![t] = "cs"]
    /\ UNCHANGED <<queueVars, target, clock, waiting, op, arg, held, heldBatch>>

\* The sweeper's timed wait runs out: its deadline has come.
Timeout ==
    /\ Sweeper \in waiting["new_deadline"]
    /\ target # None
    /\ target <= clock
    /\ waiting' = [waiting EXCEPT !["new_deadline"] = @ \ {Sweeper}]
    /\ at' = [at EXCEPT ![Sweeper] = "lock"]
    /\ UNCHANGED <<queueVars, target, clock, lock, op, arg, held, heldBatch>>

(***************************************************************************)
(*          THE CRITICAL SECTIONS: one per method of impl.Queue            *)
(*                                                                         *)
(* Each runs with the lock held (at[t] = "cs" implies lock = t) and ends   *)
(* it: it either returns, with the notifies of impl/threaded.py, or waits. *)
(***************************************************************************)

(***************************************************************************)
(* send: while there is no room, wait on not_full; then, without a delay,  *)
(* append the message to the visible tail and notify not_empty once (one   *)
(* message, one receiver); with a delay, the message is DELAYED until      *)
(* clock + delay and its timer is armed (notifying the sweeper if it is    *)
(* earlier than the one it sleeps for).                                    *)
(***************************************************************************)
SendCS(p) ==
    /\ at[p] = "cs" /\ op[p] = "send"
    /\ IF HasRoom
       THEN LET d == arg[p][2]
            IN /\ SetState(Sent(State, arg[p]))
               /\ IF d = 0 THEN Return(p, 1, 0, 0) ELSE Return(p, 0, 0, ArmNotifies(clock + d))
       ELSE /\ Wait(p, "not_full")
            /\ UNCHANGED queueVars
    /\ UNCHANGED <<target, clock, held, heldBatch>>

(***************************************************************************)
(* send_batch: while there is no room for ALL its entries, wait on         *)
(* not_full (and, while it waits, every notify of not_full wakes every     *)
(* sender: FullNotifies); then every entry as send, in order, in this one  *)
(* critical section: not_empty notified once per visible entry, the        *)
(* earliest delay armed.                                                   *)
(***************************************************************************)
SendBatchCS(p) ==
    /\ at[p] = "cs" /\ op[p] = "send_batch"
    /\ IF RoomFor(Len(arg[p]))
       THEN LET s == SendAll(State, arg[p])
                first == FirstDelay(arg[p])
            IN /\ SetState(s)
               /\ Return(p, Requeued(s), 0, IF first = None THEN 0 ELSE ArmNotifies(first))
       ELSE /\ Wait(p, "not_full")
            /\ UNCHANGED queueVars
    /\ UNCHANGED <<target, clock, held, heldBatch>>

(***************************************************************************)
(* purge: every active message is CANCELLED in one critical section, and   *)
(* not_full is notified once per freed slot (Queue.purge).  The sweeper is *)
(* not told: it wakes at its target and finds nothing due.                 *)
(***************************************************************************)
PurgeCS(p) ==
    /\ at[p] = "cs" /\ op[p] = "purge"
    /\ qVisible' = <<>>
    /\ qInFlight' = <<>>
    /\ qDelayed' = <<>>
    /\ qTimers' = <<>>
    /\ qCancelled' = qCancelled \cup Range(qVisible) \cup Range(qInFlight) \cup Range(qDelayed)
    /\ deadline' = [i \in Ids |-> None]
    /\ visibleAt' = [i \in Ids |-> None]
    /\ Return(p, 0, Active, 0)
    /\ UNCHANGED <<accepted, qDead, qDone, attempt, target, clock, held, heldBatch>>

(***************************************************************************)
(* receive: while nothing is visible, wait on not_empty; then the head     *)
(* goes in flight with attempt + 1 and deadline clock + VT, the consumer   *)
(* holds the fresh receipt, and the deadline is armed: the sweeper is      *)
(* notified if it is earlier than the one it sleeps for.  Receiving frees  *)
(* no room, so no sender is notified.                                      *)
(***************************************************************************)
ReceiveCS(c) ==
    /\ at[c] = "cs" /\ op[c] = "receive"
    /\ IF qVisible # <<>>
       THEN LET i == Head(qVisible)
                dl == clock + VT
            IN /\ SetState(Deliver(State, dl))
               /\ held' = [held EXCEPT ![c] = <<i, attempt[i] + 1>>]
               /\ Return(c, 0, 0, ArmNotifies(dl))
       ELSE /\ Wait(c, "not_empty")
            /\ UNCHANGED <<queueVars, held>>
    /\ UNCHANGED <<target, clock, heldBatch>>

(***************************************************************************)
(* receive_batch(Batch): while nothing is visible, wait on not_empty; then *)
(* the first min(Batch, visible) messages go in flight, in FIFO order,     *)
(* all with deadline clock + VT, in this one critical section; the         *)
(* consumer holds their receipts, and the deadline is armed once.          *)
(***************************************************************************)
ReceiveBatchCS(c) ==
    /\ at[c] = "cs" /\ op[c] = "receive_batch"
    /\ IF qVisible # <<>>
       THEN LET k == Min(Batch, Len(qVisible))
                dl == clock + VT
            IN /\ SetState(ReceiveAll(State, k, dl))
               /\ heldBatch' = [heldBatch EXCEPT ![c] =
                                   [j \in 1..k |-> <<qVisible[j], attempt[qVisible[j]] + 1>>]]
               /\ Return(c, 0, 0, ArmNotifies(dl))
       ELSE /\ Wait(c, "not_empty")
            /\ UNCHANGED <<queueVars, heldBatch>>
    /\ UNCHANGED <<target, clock, held>>

(***************************************************************************)
(* delete: with a live receipt the message is DONE and one sender is       *)
(* notified (a slot is free); with a stale one, nothing (returns False).   *)
(* Either way the consumer no longer holds the receipt.                    *)
(***************************************************************************)
DeleteCS(c) ==
    /\ at[c] = "cs" /\ op[c] = "delete"
    /\ LET r == held[c]
       IN IF Live(r)
          THEN SetState(Deleted(State, r)) /\ Return(c, 0, 1, 0)
          ELSE /\ Return(c, 0, 0, 0)
               /\ UNCHANGED queueVars
    /\ held' = [held EXCEPT ![c] = None]
    /\ UNCHANGED <<target, clock, heldBatch>>

(***************************************************************************)
(* delete_batch: each held receipt as delete, in order, in one critical    *)
(* section; not_full notified once per message made DONE (each freed       *)
(* slot).  The consumer no longer holds the batch.                         *)
(***************************************************************************)
DeleteBatchCS(c) ==
    /\ at[c] = "cs" /\ op[c] = "delete_batch"
    /\ LET s == DeleteAll(State, heldBatch[c])
       IN SetState(s) /\ Return(c, 0, Finished(s), 0)
    /\ heldBatch' = [heldBatch EXCEPT ![c] = <<>>]
    /\ UNCHANGED <<target, clock, held>>

\* retry: with a live receipt, release the message (notifying as release does).
RetryCS(c) ==
    /\ at[c] = "cs" /\ op[c] = "retry"
    /\ LET r == held[c]
       IN IF Live(r)
          THEN LET s == Release(State, r[1])
               IN SetState(s) /\ Return(c, Requeued(s), Died(s), 0)
          ELSE /\ Return(c, 0, 0, 0)
               /\ UNCHANGED queueVars
    /\ held' = [held EXCEPT ![c] = None]
    /\ UNCHANGED <<target, clock, heldBatch>>

(***************************************************************************)
(* change_visibility(t): with a live receipt, t = 0 releases; otherwise    *)
(* the deadline becomes clock + t and is armed (notifying the sweeper if   *)
(* it is earlier than the one it sleeps for).  The consumer keeps its      *)
(* receipt, live or not.                                                   *)
(***************************************************************************)
ChangeVisibilityCS(c) ==
    /\ at[c] = "cs" /\ op[c] = "change_visibility"
    /\ LET r == held[c]
           t == arg[c]
       IN IF ~Live(r)
          THEN Return(c, 0, 0, 0) /\ UNCHANGED queueVars
          ELSE IF t = 0
          THEN LET s == Release(State, r[1])
               IN SetState(s) /\ Return(c, Requeued(s), Died(s), 0)
          ELSE /\ SetState(Changed(State, r, t))
               /\ Return(c, 0, 0, ArmNotifies(clock + t))
    /\ UNCHANGED <<target, clock, held, heldBatch>>

(***************************************************************************)
(* change_visibility_batch(t): each held receipt as change_visibility(t),  *)
(* in order, in one critical section: releases notify as release does, a  *)
(* new deadline is armed.  The consumer keeps the receipts.                *)
(***************************************************************************)
ChangeVisibilityBatchCS(c) ==
    /\ at[c] = "cs" /\ op[c] = "change_visibility_batch"
    /\ LET t == arg[c]
           s == ChangeAll(State, heldBatch[c], t)
           moved == \E k \in DOMAIN heldBatch[c] : Live(heldBatch[c][k])
       IN /\ SetState(s)
          /\ Return(c, Requeued(s), Died(s),
                    IF t > 0 /\ moved THEN ArmNotifies(clock + t) ELSE 0)
    /\ UNCHANGED <<target, clock, held, heldBatch>>

\* cancel: a delayed, visible or in-flight message is CANCELLED and one
\* sender is notified.
CancelCS(p) ==
    /\ at[p] = "cs" /\ op[p] = "cancel"
    /\ LET i == arg[p]
       IN IF i \in Range(qVisible) \cup Range(qInFlight) \cup Range(qDelayed)
          THEN /\ qVisible' = Remove(qVisible, i)
               /\ qInFlight' = Remove(qInFlight, i)
               /\ qDelayed' = Remove(qDelayed, i)
               /\ qTimers' = Remove(qTimers, i)
               /\ deadline' = [deadline EXCEPT ![i] = None]
               /\ visibleAt' = [visibleAt EXCEPT ![i] = None]
               /\ qCancelled' = qCancelled \cup {i}
               /\ Return(p, 0, 1, 0)
               /\ UNCHANGED <<accepted, qDead, qDone, attempt>>
          ELSE /\ Return(p, 0, 0, 0)
               /\ UNCHANGED queueVars
    /\ UNCHANGED <<target, clock, held, heldBatch>>

(***************************************************************************)
(* The sweeper's loop body (BaseQueue._sweeper_round): fire every due      *)
(* timer in ExpiryOrder, one after the other (the fold FireAll, as         *)
(* Machine.fire_due does): a delay makes its message visible, a deadline   *)
(* releases -- each message made visible notifies not_empty (a delay       *)
(* firing too), each dead one notifies not_full, as Machine.release and    *)
(* Machine.fire_delay report in the step's Outcome -- then note the        *)
(* earliest remaining timer as the target and wait on new_deadline until   *)
(* then.  (Bug changes how many receivers are notified.)                   *)
(***************************************************************************)
SweepCS ==
    /\ at[Sweeper] = "cs"
    /\ LET s == FireAll(State, ExpiryOrder)
       IN /\ SetState(s)
          /\ target' = NextDue(s)
          /\ EndCS(Sweeper, SweepNotifies(Requeued(s)), Died(s), 0, "wait", "new_deadline")
    /\ UNCHANGED <<clock, op, arg, held, heldBatch>>

(***************************************************************************)
(*                        THE SPECIFICATION                                *)
(***************************************************************************)

\* An empty queue at time 0; every thread outside the queue but the sweeper,
\* which is asleep on new_deadline with no deadline to wait for.  (impl.Queue
\* starts the sweeper at the first armed deadline instead; a thread asleep
\* until that notify behaves the same.)
Init ==
    /\ accepted = {}
    /\ qVisible = <<>>
    /\ qInFlight = <<>>
    /\ qDead = <<>>
    /\ qDone = {}
    /\ qCancelled = {}
    /\ qDelayed = <<>>
    /\ qTimers = <<>>
    /\ attempt = [i \in Ids |-> 0]
    /\ deadline = [i \in Ids |-> None]
    /\ visibleAt = [i \in Ids |-> None]
    /\ target = None
    /\ clock = 0
    /\ lock = None
    /\ waiting = [c \in Conds |-> IF c = "new_deadline" THEN {Sweeper} ELSE {}]
    /\ op = [t \in Threads |-> IF t = Sweeper THEN "sweep" ELSE "none"]
    /\ at = [t \in Threads |-> IF t = Sweeper THEN "wait" ELSE "none"]
    /\ arg = [t \in Threads |-> None]
    /\ held = [c \in Consumers |-> None]
    /\ heldBatch = [c \in Consumers |-> <<>>]

\* The send batches a producer may call: Batch entries <<id, delay>>, ids
\* distinct (none when Batch = 1).
SendBatches ==
    IF Batch = 1 THEN {}
    ELSE {b \in [1..Batch -> Ids \X Delays] : \A j, k \in 1..Batch : j # k => b[j][1] # b[k][1]}

\* The critical section of each thread (whichever method it is in).
CS(t) ==
    \/ t \in Producers /\ (SendCS(t) \/ SendBatchCS(t) \/ CancelCS(t) \/ PurgeCS(t))
    \/ t \in Consumers /\ (ReceiveCS(t) \/ ReceiveBatchCS(t) \/ DeleteCS(t) \/ DeleteBatchCS(t)
                         \/ RetryCS(t) \/ ChangeVisibilityCS(t) \/ ChangeVisibilityBatchCS(t))
    \/ t = Sweeper /\ SweepCS

\* One disjunct per action, so that TLC's traces name each step.
Next ==
    \/ \E p \in Producers, i \in Ids, d \in Delays : StartSend(p, i, d)
    \/ \E p \in Producers, b \in SendBatches : StartSendBatch(p, b)
    \/ \E p \in Producers, i \in Ids : StartCancel(p, i)
    \/ \E p \in Producers : StartPurge(p)
    \/ \E c \in Consumers : StartReceive(c)
    \/ \E c \in Consumers : StartDelete(c)
    \/ \E c \in Consumers : StartDeleteBatch(c)
    \/ \E c \in Consumers : StartRetry(c)
    \/ \E c \in Consumers, t \in ExtendTimeouts : StartChangeVisibility(c, t)
    \/ \E c \in Consumers, t \in ExtendTimeouts : StartChangeVisibilityBatch(c, t)
    \/ \E c \in Consumers : Drop(c)
    \/ \E t \in Threads : Acquire(t)
    \/ \E p \in Producers : SendCS(p)
    \/ \E p \in Producers : SendBatchCS(p)
    \/ \E p \in Producers : CancelCS(p)
    \/ \E p \in Producers : PurgeCS(p)
    \/ \E c \in Consumers : ReceiveCS(c)
    \/ \E c \in Consumers : ReceiveBatchCS(c)
    \/ \E c \in Consumers : DeleteCS(c)
    \/ \E c \in Consumers : DeleteBatchCS(c)
    \/ \E c \in Consumers : RetryCS(c)
    \/ \E c \in Consumers : ChangeVisibilityCS(c)
    \/ \E c \in Consumers : ChangeVisibilityBatchCS(c)
    \/ SweepCS
    \/ Timeout
    \/ Tick

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* Fairness: the lock is fair (a thread that keeps asking gets it: strong  *)
(* fairness, because the lock is free only now and then), a thread that    *)
(* holds the lock finishes its critical section, and a timed wait whose    *)
(* deadline has come runs out.  Nothing forces a thread to CALL the queue, *)
(* nor the clock to move.                                                  *)
(***************************************************************************)
Fairness ==
    /\ \A t \in Threads : SF_vars(Acquire(t)) /\ WF_vars(CS(t))
    /\ WF_vars(Timeout)

FairSpec == Spec /\ Fairness

(***************************************************************************)
(*                THE REFINEMENT MAPPING: ThreadedQueue -> Queue           *)
(*                                                                         *)
(* Queue's variables as expressions of this module's: the status of a      *)
(* message is the container that holds its id, exactly as in impl.Queue;   *)
(* Queue's clock is the clock.  Every step of a thread that is not a       *)
(* critical section (taking the lock, a wakeup, a call that has not yet    *)
(* entered the queue) and every critical section that changes nothing (a   *)
(* wait, a stale delete, a sweep with nothing due) maps to a stuttering    *)
(* step of Queue; every other critical section is exactly one of Queue's   *)
(* actions.  The model bound MaxAttempt of Queue is MaxReceives: a message *)
(* with MaxReceives deliveries is never visible again, it dies instead.    *)
(***************************************************************************)
StatusOf(i) ==
    CASE i \in Range(qDelayed)  -> "DELAYED"
      [] i \in Range(qVisible)  -> "VISIBLE"
      [] i \in Range(qInFlight) -> "IN_FLIGHT"
      [] i \in qDone            -> "DONE"
      [] i \in qCancelled       -> "CANCELLED"
      [] OTHER                  -> "DEAD"

AbsMsgs == [i \in accepted |-> [status |-> StatusOf(i),
                                attempt |-> attempt[i],
                                deadline |-> deadline[i],
                                visibleAt |-> visibleAt[i]]]

Queue == INSTANCE Queue
           WITH msgs <- AbsMsgs, visible <- qVisible, inFlight <- qInFlight,
                dead <- qDead, delayed <- qDelayed, timers <- qTimers, now <- clock,
                MaxAttempt <- MaxReceives, VisibilityTimeouts <- {VT}, MaxBatch <- Batch

QueueSpec == Queue!Spec

\* Queue's invariants and step properties, of the mapped state.
QueueTypeOK == Queue!TypeOK
QueueInvariants == Queue!Invariants
QueueSteps ==
    Queue!OneStateSteps /\ Queue!AttemptsCountSteps /\ Queue!FifoVisibleSteps
    /\ Queue!IdsReservedSteps /\ Queue!DelayHonouredSteps /\ Queue!BatchAtomicSteps

(***************************************************************************)
(*                     INVARIANTS OF THE THREADS                           *)
(***************************************************************************)
TypeOK ==
    /\ accepted \subseteq Ids
    /\ {qVisible, qInFlight, qDead} \subseteq Seq(Ids)
    /\ qDone \cup qCancelled \subseteq accepted
    /\ {qDelayed, qTimers} \subseteq Seq(Ids)
    /\ attempt \in [Ids -> 0..MaxReceives]
    /\ deadline \in [Ids -> Nat \cup {None}]
    /\ visibleAt \in [Ids -> Nat \cup {None}]
    /\ target \in Nat \cup {None}
    /\ clock \in 0..MaxTime
    /\ lock \in Threads \cup {None}
    /\ waiting \in [Conds -> SUBSET Threads]
    /\ op \in [Threads -> {"none", "send", "send_batch", "cancel", "purge", "receive",
                           "receive_batch", "delete", "delete_batch", "retry",
                           "change_visibility", "change_visibility_batch", "sweep"}]
    /\ at \in [Threads -> {"none", "lock", "cs", "wait"}]
    /\ held \in [Consumers -> (Ids \X (1..MaxReceives)) \cup {None}]
    /\ heldBatch \in [Consumers -> Seq(Ids \X (1..MaxReceives))]

\* Mutual exclusion: a thread is in a critical section iff it holds the lock.
MutualExclusion == \A t \in Threads : at[t] = "cs" <=> lock = t

\* A thread is asleep iff it is in exactly one wait set, the one its method
\* waits on.  The sweeper is always in its loop: asleep, or on its way.
WaitSets ==
    /\ \A t \in Threads : at[t] = "wait" <=> \E c \in Conds : t \in waiting[c]
    /\ waiting["not_empty"] \subseteq {c \in Consumers : op[c] \in {"receive", "receive_batch"}}
    /\ waiting["not_full"] \subseteq {p \in Producers : op[p] \in {"send", "send_batch"}}
    /\ waiting["new_deadline"] \subseteq {Sweeper}
    /\ at[Sweeper] # "none"

(***************************************************************************)
(* NoLostWakeup: nobody sleeps while there is work for them and no one is  *)
(* coming to do it.  The threads "on their way" into a method are those    *)
(* that wait for the lock or hold it: each of them will re-check the       *)
(* predicate before it could sleep.  While a receiver sleeps, every        *)
(* visible message must have a receiver on its way to it; while a sender   *)
(* sleeps, every free slot must have a sender on its way; while the        *)
(* sweeper sleeps, it sleeps at most until the earliest deadline.  The     *)
(* correct notifies keep these counts; a missing notify breaks them at     *)
(* once, in the step that forgets the sleeper.                             *)
(***************************************************************************)
OnTheirWay(methods) == {t \in Threads : op[t] \in methods /\ at[t] \in {"lock", "cs"}}

\* A receive_batch on its way takes up to Batch of the visible messages.
ReceiversAwake ==
    waiting["not_empty"] # {}
        => Len(qVisible) <= Cardinality(OnTheirWay({"receive"}))
                              + Batch * Cardinality(OnTheirWay({"receive_batch"}))

\* While a send sleeps, every free slot has a sender on its way; while a
\* send_batch sleeps although its entries fit, some sender is on its way.
SendersAwake ==
    LET onTheirWay == OnTheirWay({"send", "send_batch"})
    IN /\ (\E p \in waiting["not_full"] : op[p] = "send") /\ Capacity # None
            => Capacity - Active <= Cardinality(onTheirWay)
       /\ \A p \in waiting["not_full"] :
            (op[p] = "send_batch" /\ RoomFor(Len(arg[p]))) => onTheirWay # {}

SweeperAwake ==
    Sweeper \in waiting["new_deadline"]
        => LET next == NextDue(State)
           IN next # None => (target # None /\ target <= next)

NoLostWakeup == ReceiversAwake /\ SendersAwake /\ SweeperAwake

(***************************************************************************)
(* DeadlockFree: the threads are never all stuck while one of them could   *)
(* work.  Stuck: asleep with no timed wait about to run out, or a producer *)
(* with nothing left to send.  (A consumer outside the queue is not stuck: *)
(* its loop calls receive() again.)  Could work: its predicate holds -- a  *)
(* visible message for a receiver, room for a sender, a due message for    *)
(* the sweeper.  TLC's own deadlock check is off (`deadlock: allowed'),    *)
(* because a model whose ids and clock have run out ends in a state with   *)
(* nothing to do; this invariant is the deadlock freedom that matters.     *)
(***************************************************************************)
TimedOut == target # None /\ target <= clock
Stuck(t) ==
    \/ at[t] = "wait" /\ ~(t = Sweeper /\ TimedOut)
    \/ t \in Producers /\ at[t] = "none" /\ Ids \subseteq accepted
CouldWork(t) ==
    \/ t \in Consumers /\ qVisible # <<>>
    \/ t \in Producers /\ IF op[t] = "send_batch" THEN RoomFor(Len(arg[t])) ELSE HasRoom
    \/ t = Sweeper /\ Due # {}

DeadlockFree ==
    (\A t \in Threads : Stuck(t)) => \A t \in Threads : at[t] = "wait" => ~CouldWork(t)

(***************************************************************************)
(*                           LIVENESS                                      *)
(*                                                                         *)
(* Under Fairness.  "A waiting receiver whose predicate becomes true       *)
(* eventually proceeds" is too strong for a queue with several receivers:  *)
(* another receiver may take the message first, and then the sleeper       *)
(* rightly sleeps on.  What must hold is that the work gets done:          *)
(***************************************************************************)

\* A message that is visible while a receiver waits is eventually received
\* (or cancelled): it does not sit beside a sleeping receiver.
VisibleWorkIsTaken ==
    \A i \in Ids :
        (i \in Range(qVisible) /\ waiting["not_empty"] # {}) ~> i \notin Range(qVisible)

\* Room that is free while a sender waits is eventually used (or no sender
\* waits any more).
FreeRoomIsUsed ==
    (waiting["not_full"] # {} /\ HasRoom) ~> (~HasRoom \/ waiting["not_full"] = {})

\* A delivery whose deadline has passed is eventually released (or deleted).
DueIsReleased ==
    \A i \in Ids, a \in 1..MaxReceives :
        (Live(<<i, a>>) /\ i \in Due) ~> ~Live(<<i, a>>)

(***************************************************************************)
(*                             THEOREMS                                    *)
(***************************************************************************)
THEOREM Spec => QueueSpec
THEOREM Spec => [](TypeOK /\ MutualExclusion /\ WaitSets /\ QueueInvariants)
THEOREM (Spec /\ Bug = "none") => [](NoLostWakeup /\ DeadlockFree)
THEOREM (FairSpec /\ Bug = "none") => VisibleWorkIsTaken /\ FreeRoomIsUsed /\ DueIsReleased
=============================================================================
