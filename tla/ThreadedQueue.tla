--------------------------- MODULE ThreadedQueue ---------------------------
(***************************************************************************)
(* The threaded queue of impl/queue.py, one level below Queue: the threads *)
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
(*     (the `while' loop around every wait in impl/queue.py);              *)
(*   - producer, consumer and sweeper threads, each a small program that   *)
(*     calls the queue's methods.  A method is: take the lock (Acquire),   *)
(*     then one critical section (XxxCS) that either does the operation    *)
(*     and returns, or finds its predicate false and waits.                *)
(*   - the sweeper thread (impl.queue._sweep_forever): expire what is due, *)
(*     then wait on new_deadline until the earliest deadline (a timed wait *)
(*     on the discrete clock) or until a notify says there is an earlier   *)
(*     one.                                                                *)
(*                                                                         *)
(* The queue's data are kept the way impl.Queue keeps them (a container    *)
(* per state, the attempt and deadline fields of each record), not the way *)
(* Queue.tla does.  The refinement mapping at the end computes Queue's     *)
(* variables from them, and TLC checks that every behaviour of this module *)
(* is a behaviour of Queue (THEOREM Spec => QueueSpec).                    *)
(*                                                                         *)
(* The constant Bug injects the wakeup bugs of the lesson (all expected to *)
(* fail, in the configs named *Wakeup*; docs/levels.md walks the trace):   *)
(*   "none"               impl/queue.py as it is;                          *)
(*   "sweep_no_notify"    the sweeper re-queues an expired message without *)
(*                        notifying not_empty: a receiver sleeps through   *)
(*                        the redelivery (ThreadedQueueWakeup.cfg);        *)
(*   "sweep_notify_once"  the sweeper notifies not_empty once per sweep,   *)
(*                        not once per message it re-queued: notify where  *)
(*                        notify(n)/notify_all is needed                   *)
(*                        (ThreadedQueueWakeupNotifyOnce.cfg).             *)
(*                                                                         *)
(* What is left out, and why it does not matter here: shutdown/close (they *)
(* notify_all and end every loop); the expiry heap's stale entries (the    *)
(* sweeper uses the earliest live deadline, which is what _next_deadline   *)
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
(* notify to the next waiter), and a sweeper that dies is restarted by the *)
(* next arm; the liveness properties here hold for runs without such       *)
(* failures.  Nor does the model have fork or garbage collection.          *)
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
    MaxTime,        \* MODEL bound: the clock runs 0, 1, ..., MaxTime
    Bug,            \* "none", or the injected wakeup bug (see the header)
    None            \* a model value: no owner, no deadline, no receipt, ...

ASSUME None \notin Nat
ASSUME Capacity \in Nat \cup {None}
ASSUME MaxReceives \in Nat \ {0}
ASSUME VT \in Nat \ {0}
ASSUME ExtendTimeouts \subseteq Nat
ASSUME WithCancel \in BOOLEAN
ASSUME MaxTime \in Nat
ASSUME Bug \in {"none", "sweep_no_notify", "sweep_notify_once"}
ASSUME Sweeper \notin Producers \cup Consumers /\ Producers \cap Consumers = {}

Threads == Producers \cup Consumers \cup {Sweeper}

\* The three condition variables of impl.Queue, by their attribute names.
Conds == {"not_empty", "not_full", "new_deadline"}

(***************************************************************************)
(*                             VARIABLES                                   *)
(***************************************************************************)
VARIABLES
    \* The queue's fields, guarded by the lock (impl.Queue's attribute in brackets):
    accepted,    \* every id ever accepted (_accepted)
    qVisible,    \* ids of VISIBLE messages, head first (_visible, an ordered dict)
    qInFlight,   \* ids of IN_FLIGHT messages, in receive order (_in_flight)
    qDead,       \* ids of DEAD messages, in order of death (_dead)
    qDone,       \* ids of DONE messages (_done)
    qCancelled,  \* ids of CANCELLED messages (_cancelled)
    attempt,     \* attempt[i]: deliveries of i so far (the record's attempt)
    deadline,    \* deadline[i]: the record's deadline, a time or None
    target,      \* the deadline the sweeper last went to sleep for, or None
                 \* (_sweeper_target)
    clock,       \* the clock's time
    \* The threads and the synchronization:
    lock,        \* the thread that holds mutex, or None
    waiting,     \* waiting[c]: the wait set of condition c
    op,          \* op[t]: the queue method thread t is in, or "none"
    at,          \* at[t]: where t is in op[t]: "lock" (waits for the mutex),
                 \* "cs" (holds it), "wait" (in a wait set), "none" (not in one)
    arg,         \* arg[t]: the id a producer sends or cancels, the timeout a
                 \* consumer passes to change_visibility; None otherwise
    held         \* held[c]: the receipt <<id, attempt>> consumer c holds, or None

queueVars == <<accepted, qVisible, qInFlight, qDead, qDone, qCancelled, attempt, deadline>>
threadVars == <<lock, waiting, op, at, arg, held>>
vars == <<queueVars, target, clock, threadVars>>

(***************************************************************************)
(*                             HELPERS                                     *)
(***************************************************************************)
Range(s) == {s[k] : k \in DOMAIN s}
Remove(s, x) == SelectSeq(s, LAMBDA y : y # x)
Min(a, b) == IF a <= b THEN a ELSE b
Earliest(S) == CHOOSE d \in S : \A e \in S : d <= e

Active == Len(qVisible) + Len(qInFlight)
HasRoom == Capacity = None \/ Active < Capacity      \* Queue._has_room

\* Queue._live: the receipt names the delivery in flight.
Live(r) == r # None /\ r[1] \in Range(qInFlight) /\ attempt[r[1]] = r[2]

\* The dead-letter policy of Queue._release: releasing a message delivered n
\* times kills it iff n >= MaxReceives.
Dies(n) == n >= MaxReceives

\* The in-flight messages whose deadline has come (what the sweeper releases).
Due == {i \in Range(qInFlight) : deadline[i] # None /\ deadline[i] <= clock}

\* The earliest deadline of the in-flight messages, or None (_next_deadline).
NextDeadline(inFlightIds) ==
    LET armed == {deadline[i] : i \in {j \in inFlightIds : deadline[j] # None}}
    IN IF armed = {} THEN None ELSE Earliest(armed)

(***************************************************************************)
(* The order of Queue._expire: the heap pops (deadline, receive sequence)  *)
(* pairs, earliest first.  qInFlight is in receive order, so taking its    *)
(* due ids deadline by deadline, each bucket in qInFlight order, is the    *)
(* same order.                                                             *)
(***************************************************************************)
RECURSIVE FromDeadline(_)
FromDeadline(d) ==
    IF d > clock THEN <<>>
    ELSE SelectSeq(qInFlight, LAMBDA i : deadline[i] = d) \o FromDeadline(d + 1)
ExpiryOrder == FromDeadline(0)

(***************************************************************************)
(* Queue._arm notifies the sweeper when a new deadline is earlier than the *)
(* one it sleeps for (or it sleeps for none).                              *)
(***************************************************************************)
ArmNotifies(dl) == IF target = None \/ dl < target THEN 1 ELSE 0

\* How many receivers a sweep that re-queued k messages notifies.
SweepNotifies(k) ==
    CASE Bug = "sweep_no_notify"   -> 0
      [] Bug = "sweep_notify_once" -> Min(k, 1)
      [] OTHER                     -> k

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
          /\ Cardinality(wF) = Min(nF, Cardinality(waiting["not_full"]))
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
          attempt |-> attempt, deadline |-> deadline]

SetState(s) ==
    /\ accepted' = s.accepted
    /\ qVisible' = s.qVisible
    /\ qInFlight' = s.qInFlight
    /\ qDead' = s.qDead
    /\ qDone' = s.qDone
    /\ qCancelled' = s.qCancelled
    /\ attempt' = s.attempt
    /\ deadline' = s.deadline

(***************************************************************************)
(* Release(s, i): Queue._release(i), the data half: the state s with its   *)
(* in-flight message i dead-lettered, or appended to the visible tail.     *)
(* The only definition of the release in this module: RetryCS and          *)
(* ChangeVisibilityCS apply it once, SweepCS folds it (ReleaseAll).  The   *)
(* notify half is counted from the result by Requeued and Died, and done   *)
(* by the caller as it leaves its critical section: not_empty once per     *)
(* message re-queued, not_full once per death (a slot is free).            *)
(***************************************************************************)
Release(s, i) ==
    LET dies == Dies(s.attempt[i])
    IN [s EXCEPT !.qInFlight = Remove(@, i),
                 !.deadline = [@ EXCEPT ![i] = None],
                 !.qVisible = IF dies THEN @ ELSE Append(@, i),
                 !.qDead = IF dies THEN Append(@, i) ELSE @]

\* Release each of ids in turn, the first one first: a left fold of Release,
\* as Queue._expire calls _release for each entry it pops.
RECURSIVE ReleaseAll(_, _)
ReleaseAll(s, ids) ==
    IF ids = <<>> THEN s ELSE ReleaseAll(Release(s, Head(ids)), Tail(ids))

\* How many messages a step from the current state to s re-queued, and how
\* many it dead-lettered (for a release or a fold of releases): the notifies
\* of not_empty and not_full that Queue._release makes.
Requeued(s) == Len(s.qVisible) - Len(qVisible)
Died(s) == Len(s.qDead) - Len(qDead)

(***************************************************************************)
(*            THE THREADS' STEPS OUTSIDE THE QUEUE (no lock)               *)
(***************************************************************************)

\* A producer calls send(id=i) with an id no producer has sent or is sending.
StartSend(p, i) ==
    /\ at[p] = "none"
    /\ i \notin accepted
    /\ \A q \in Producers : arg[q] # i
    /\ op' = [op EXCEPT ![p] = "send"]
    /\ at' = [at EXCEPT ![p] = "lock"]
    /\ arg' = [arg EXCEPT ![p] = i]
    /\ UNCHANGED <<queueVars, target, clock, lock, waiting, held>>

\* A producer calls cancel(i) for a message that is still pending.  (Cancelling
\* a finished one changes nothing; that no-op is still reached when the message
\* finishes between the call and the critical section.)
StartCancel(p, i) ==
    /\ WithCancel
    /\ at[p] = "none"
    /\ i \in Range(qVisible) \cup Range(qInFlight)
    /\ op' = [op EXCEPT ![p] = "cancel"]
    /\ at' = [at EXCEPT ![p] = "lock"]
    /\ arg' = [arg EXCEPT ![p] = i]
    /\ UNCHANGED <<queueVars, target, clock, lock, waiting, held>>

\* An idle consumer calls receive() (block=True, no timeout).
StartReceive(c) ==
    /\ at[c] = "none"
    /\ held[c] = None
    /\ op' = [op EXCEPT ![c] = "receive"]
    /\ at' = [at EXCEPT ![c] = "lock"]
    /\ UNCHANGED <<queueVars, target, clock, lock, waiting, arg, held>>

\* A consumer that holds a receipt calls delete, retry or change_visibility with it.
StartWithReceipt(c, method, t) ==
    /\ at[c] = "none"
    /\ held[c] # None
    /\ op' = [op EXCEPT ![c] = method]
    /\ at' = [at EXCEPT ![c] = "lock"]
    /\ arg' = [arg EXCEPT ![c] = t]
    /\ UNCHANGED <<queueVars, target, clock, lock, waiting, held>>

StartDelete(c) == StartWithReceipt(c, "delete", None)
StartRetry(c) == StartWithReceipt(c, "retry", None)
StartChangeVisibility(c, t) == StartWithReceipt(c, "change_visibility", t)

(***************************************************************************)
(* Drop(c): the consumer gives up its delivery without telling the queue   *)
(* (its processing failed and it went back to receive()).  The delivery    *)
(* stays in flight until the sweeper re-queues it: the redelivery that the *)
(* lost-wakeup bug sleeps through.                                         *)
(***************************************************************************)
Drop(c) ==
    /\ at[c] = "none"
    /\ held[c] # None
    /\ held' = [held EXCEPT ![c] = None]
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
    /\ UNCHANGED <<queueVars, target, clock, waiting, op, arg, held>>

\* The sweeper's timed wait runs out: its deadline has come.
Timeout ==
    /\ Sweeper \in waiting["new_deadline"]
    /\ target # None
    /\ target <= clock
    /\ waiting' = [waiting EXCEPT !["new_deadline"] = @ \ {Sweeper}]
    /\ at' = [at EXCEPT ![Sweeper] = "lock"]
    /\ UNCHANGED <<queueVars, target, clock, lock, op, arg, held>>

(***************************************************************************)
(*          THE CRITICAL SECTIONS: one per method of impl.Queue            *)
(*                                                                         *)
(* Each runs with the lock held (at[t] = "cs" implies lock = t) and ends   *)
(* it: it either returns, with the notifies of impl/queue.py, or waits.    *)
(***************************************************************************)

(***************************************************************************)
(* send: while there is no room, wait on not_full; then append the message *)
(* to the visible tail and notify not_empty once (one message, one         *)
(* receiver).                                                              *)
(***************************************************************************)
SendCS(p) ==
    /\ at[p] = "cs" /\ op[p] = "send"
    /\ IF HasRoom
       THEN /\ accepted' = accepted \cup {arg[p]}
            /\ qVisible' = Append(qVisible, arg[p])
            /\ Return(p, 1, 0, 0)
            /\ UNCHANGED <<qInFlight, qDead, qDone, qCancelled, attempt, deadline>>
       ELSE /\ Wait(p, "not_full")
            /\ UNCHANGED queueVars
    /\ UNCHANGED <<target, clock, held>>

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
            IN /\ qVisible' = Tail(qVisible)
               /\ qInFlight' = Append(qInFlight, i)
               /\ attempt' = [attempt EXCEPT ![i] = @ + 1]
               /\ deadline' = [deadline EXCEPT ![i] = dl]
               /\ held' = [held EXCEPT ![c] = <<i, attempt[i] + 1>>]
               /\ Return(c, 0, 0, ArmNotifies(dl))
               /\ UNCHANGED <<accepted, qDead, qDone, qCancelled>>
       ELSE /\ Wait(c, "not_empty")
            /\ UNCHANGED <<queueVars, held>>
    /\ UNCHANGED <<target, clock>>

(***************************************************************************)
(* delete: with a live receipt the message is DONE and one sender is       *)
(* notified (a slot is free); with a stale one, nothing (returns False).   *)
(* Either way the consumer no longer holds the receipt.                    *)
(***************************************************************************)
DeleteCS(c) ==
    /\ at[c] = "cs" /\ op[c] = "delete"
    /\ LET r == held[c]
       IN IF Live(r)
          THEN /\ qInFlight' = Remove(qInFlight, r[1])
               /\ deadline' = [deadline EXCEPT ![r[1]] = None]
               /\ qDone' = qDone \cup {r[1]}
               /\ Return(c, 0, 1, 0)
               /\ UNCHANGED <<accepted, qVisible, qDead, qCancelled, attempt>>
          ELSE /\ Return(c, 0, 0, 0)
               /\ UNCHANGED queueVars
    /\ held' = [held EXCEPT ![c] = None]
    /\ UNCHANGED <<target, clock>>

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
    /\ UNCHANGED <<target, clock>>

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
          ELSE /\ deadline' = [deadline EXCEPT ![r[1]] = clock + t]
               /\ Return(c, 0, 0, ArmNotifies(clock + t))
               /\ UNCHANGED <<accepted, qVisible, qInFlight, qDead, qDone, qCancelled, attempt>>
    /\ UNCHANGED <<target, clock, held>>

\* cancel: a visible or in-flight message is CANCELLED and one sender is notified.
CancelCS(p) ==
    /\ at[p] = "cs" /\ op[p] = "cancel"
    /\ LET i == arg[p]
       IN IF i \in Range(qVisible) \cup Range(qInFlight)
          THEN /\ qVisible' = Remove(qVisible, i)
               /\ qInFlight' = Remove(qInFlight, i)
               /\ deadline' = [deadline EXCEPT ![i] = None]
               /\ qCancelled' = qCancelled \cup {i}
               /\ Return(p, 0, 1, 0)
               /\ UNCHANGED <<accepted, qDead, qDone, attempt>>
          ELSE /\ Return(p, 0, 0, 0)
               /\ UNCHANGED queueVars
    /\ UNCHANGED <<target, clock, held>>

(***************************************************************************)
(* The sweeper's loop body (Queue._sweep_round): release every due message *)
(* in ExpiryOrder, one Release after the other (the fold ReleaseAll, as    *)
(* Queue._expire) -- each re-queued one notifies not_empty, each dead one  *)
(* notifies not_full, as Queue._release does -- then note the earliest     *)
(* remaining deadline as the target and wait on new_deadline until then.   *)
(* (Bug changes how many receivers are notified.)                          *)
(***************************************************************************)
SweepCS ==
    /\ at[Sweeper] = "cs"
    /\ LET s == ReleaseAll(State, ExpiryOrder)
       IN /\ SetState(s)
          /\ target' = NextDeadline(Range(s.qInFlight))
          /\ EndCS(Sweeper, SweepNotifies(Requeued(s)), Died(s), 0, "wait", "new_deadline")
    /\ UNCHANGED <<clock, op, arg, held>>

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
    /\ attempt = [i \in Ids |-> 0]
    /\ deadline = [i \in Ids |-> None]
    /\ target = None
    /\ clock = 0
    /\ lock = None
    /\ waiting = [c \in Conds |-> IF c = "new_deadline" THEN {Sweeper} ELSE {}]
    /\ op = [t \in Threads |-> IF t = Sweeper THEN "sweep" ELSE "none"]
    /\ at = [t \in Threads |-> IF t = Sweeper THEN "wait" ELSE "none"]
    /\ arg = [t \in Threads |-> None]
    /\ held = [c \in Consumers |-> None]

\* The critical section of each thread (whichever method it is in).
CS(t) ==
    \/ t \in Producers /\ (SendCS(t) \/ CancelCS(t))
    \/ t \in Consumers /\ (ReceiveCS(t) \/ DeleteCS(t) \/ RetryCS(t) \/ ChangeVisibilityCS(t))
    \/ t = Sweeper /\ SweepCS

\* One disjunct per action, so that TLC's traces name each step.
Next ==
    \/ \E p \in Producers, i \in Ids : StartSend(p, i)
    \/ \E p \in Producers, i \in Ids : StartCancel(p, i)
    \/ \E c \in Consumers : StartReceive(c)
    \/ \E c \in Consumers : StartDelete(c)
    \/ \E c \in Consumers : StartRetry(c)
    \/ \E c \in Consumers, t \in ExtendTimeouts : StartChangeVisibility(c, t)
    \/ \E c \in Consumers : Drop(c)
    \/ \E t \in Threads : Acquire(t)
    \/ \E p \in Producers : SendCS(p)
    \/ \E p \in Producers : CancelCS(p)
    \/ \E c \in Consumers : ReceiveCS(c)
    \/ \E c \in Consumers : DeleteCS(c)
    \/ \E c \in Consumers : RetryCS(c)
    \/ \E c \in Consumers : ChangeVisibilityCS(c)
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
    CASE i \in Range(qVisible)  -> "VISIBLE"
      [] i \in Range(qInFlight) -> "IN_FLIGHT"
      [] i \in qDone            -> "DONE"
      [] i \in qCancelled       -> "CANCELLED"
      [] OTHER                  -> "DEAD"

AbsMsgs == [i \in accepted |-> [status |-> StatusOf(i),
                                attempt |-> attempt[i],
                                deadline |-> deadline[i],
                                visibleAt |-> None]]

Queue == INSTANCE Queue
           WITH msgs <- AbsMsgs, visible <- qVisible, inFlight <- qInFlight,
                dead <- qDead, delayed <- <<>>, timers <- qInFlight, now <- clock,
                MaxAttempt <- MaxReceives, VisibilityTimeouts <- {VT},
                Delays <- {0}, MaxBatch <- 1

QueueSpec == Queue!Spec

\* Queue's invariants and step properties, of the mapped state.
QueueTypeOK == Queue!TypeOK
QueueInvariants == Queue!Invariants
QueueSteps ==
    Queue!OneStateSteps /\ Queue!AttemptsCountSteps /\ Queue!FifoVisibleSteps
    /\ Queue!IdsReservedSteps

(***************************************************************************)
(*                     INVARIANTS OF THE THREADS                           *)
(***************************************************************************)
TypeOK ==
    /\ accepted \subseteq Ids
    /\ {qVisible, qInFlight, qDead} \subseteq Seq(Ids)
    /\ qDone \cup qCancelled \subseteq accepted
    /\ attempt \in [Ids -> 0..MaxReceives]
    /\ deadline \in [Ids -> Nat \cup {None}]
    /\ target \in Nat \cup {None}
    /\ clock \in 0..MaxTime
    /\ lock \in Threads \cup {None}
    /\ waiting \in [Conds -> SUBSET Threads]
    /\ op \in [Threads -> {"none", "send", "cancel", "receive", "delete", "retry",
                           "change_visibility", "sweep"}]
    /\ at \in [Threads -> {"none", "lock", "cs", "wait"}]
    /\ held \in [Consumers -> (Ids \X (1..MaxReceives)) \cup {None}]

\* Mutual exclusion: a thread is in a critical section iff it holds the lock.
MutualExclusion == \A t \in Threads : at[t] = "cs" <=> lock = t

\* A thread is asleep iff it is in exactly one wait set, the one its method
\* waits on.  The sweeper is always in its loop: asleep, or on its way.
WaitSets ==
    /\ \A t \in Threads : at[t] = "wait" <=> \E c \in Conds : t \in waiting[c]
    /\ waiting["not_empty"] \subseteq {c \in Consumers : op[c] = "receive"}
    /\ waiting["not_full"] \subseteq {p \in Producers : op[p] = "send"}
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
OnTheirWay(method) == {t \in Threads : op[t] = method /\ at[t] \in {"lock", "cs"}}

ReceiversAwake ==
    waiting["not_empty"] # {} => Len(qVisible) <= Cardinality(OnTheirWay("receive"))

SendersAwake ==
    (waiting["not_full"] # {} /\ Capacity # None)
        => Capacity - Active <= Cardinality(OnTheirWay("send"))

SweeperAwake ==
    Sweeper \in waiting["new_deadline"]
        => LET next == NextDeadline(Range(qInFlight))
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
    \/ t \in Producers /\ HasRoom
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
