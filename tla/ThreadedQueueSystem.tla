------------------------- MODULE ThreadedQueueSystem -------------------------
(***************************************************************************)
(* The threaded level of QueueSystem.tla: one lock per queue, and the      *)
(* threads that take two of them (docs/contract.md, section 7.8).          *)
(*                                                                         *)
(* QueueSystem.tla says WHAT a move is: one step across two queues.  This  *)
(* module says HOW impl/ makes it one step, and why that cannot deadlock:  *)
(*   - one lock per queue, `owner[q]': the thread holding q's lock, or     *)
(*     None;                                                               *)
(*   - a step across two queues holds BOTH locks, taken one at a time in   *)
(*     CREATION ORDER, the lower queue number first (a dead-letter queue   *)
(*     is created before its sources, so its lock comes first);            *)
(*   - the threads: a producer sending to the source; consumers that       *)
(*     receive from the source and then delete, retry (a release: it may   *)
(*     dead-letter, so it takes the target's lock, then the source's) or   *)
(*     drop what they hold; a SWEEPER PER QUEUE, whose round fires its     *)
(*     queue's due timers (a deadline firing may dead-letter into the      *)
(*     target: the round holds the target's lock, then its own); and a     *)
(*     REDRIVE thread, each of whose rounds moves the dead-letter queue's  *)
(*     visible head to the destination (it holds the DLQ's lock and the    *)
(*     destination's).                                                     *)
(* A thread calls an operation (Start: it now wants the operation's locks, *)
(* in order), takes them one at a time (Acquire), and then runs the        *)
(* operation's critical section (CS), which does the QueueSystem step (or  *)
(* nothing, if the operation finds nothing to do) and releases every lock  *)
(* it holds.  A thread that holds one lock and waits for a second is the   *)
(* case that matters: with LockOrder = "opposite" the sweeper and a retry  *)
(* take their own lock first and then the target's, while the redrive      *)
(* takes the DLQ's first and then the source's -- and TLC finds the        *)
(* deadlock (ThreadedQueueSystemOppositeOrder.cfg).                        *)
(*                                                                         *)
(* Every thread is a loop that can always call again (a sweep or redrive   *)
(* round with nothing to do, a receive that finds nothing), so a state     *)
(* with no successor is one where every thread waits for a lock another    *)
(* holds: TLC's own deadlock check is ON here, and it is that check that   *)
(* says "deadlock free" (ThreadedQueueSystem.cfg) or finds the deadlock.   *)
(*                                                                         *)
(* The queues' data are QueueSystem's variables, and each critical section *)
(* applies QueueSystem's operators (Sys!Release, Sys!FireAll, ...): the    *)
(* refinement THEOREM Spec => Sys!Spec checks that the locking makes every *)
(* step across two queues one QueueSystem step and every other thread      *)
(* step a stutter.                                                         *)
(*                                                                         *)
(* Left out, because ThreadedQueue.tla covers them for one queue and they  *)
(* do not change which locks are held: the condition variables and their   *)
(* wakeups (a blocking send or receive here gives up instead of waiting;   *)
(* a sweeper polls in rounds instead of sleeping until its next due time;  *)
(* the design's sweeper waits under its own lock only, so its wait takes   *)
(* no second lock); the system's id registry (contract 7.2: a leaf lock    *)
(* taken last and held only for its check-and-add: it adds no cycle).      *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
    \* QueueSystem's constants (see there), with the same meaning:
    DeadLetter, Capacity, MaxReceives, Retention, SendTo, Ids, RedriveIds, MaxAttempt,
    VisibilityTimeouts, ExtendTimeouts, Delays, MaxTime, Move, None,
    \* This module's own:
    NConsumers,     \* how many consumer threads
    Source,         \* the queue the producer sends to and the consumers receive from
    RedriveFrom,    \* the dead-letter queue the redrive thread moves from
    RedriveTo,      \* the queue it moves to
    LockOrder       \* "creation" (the design) or "opposite" (the teaching model)

ASSUME LockOrder \in {"creation", "opposite"}
ASSUME Move = "atomic"
ASSUME NConsumers \in Nat
ASSUME RedriveFrom # RedriveTo

VARIABLES
    data, transit, now,  \* QueueSystem's variables (transit stays {}: the moves are atomic)
    owner,      \* owner[q]: the thread holding queue q's lock, or None
    op,         \* op[t]: the operation thread t is in, [name, q, id], or Idle
    want,       \* want[t]: the locks t still has to take, in the order it takes them
    held        \* held[c]: the receipt <<id, attempt>> consumer c holds, or None

vars == <<data, transit, now, owner, op, want, held>>

Sys == INSTANCE QueueSystem

Queues == Sys!Queues
Range(s) == {s[k] : k \in DOMAIN s}

(***************************************************************************)
(* The threads, each a pair <<role, number>> (one type, so TLC can compare *)
(* them): the producer, the consumers, a sweeper per queue, the redrive.   *)
(***************************************************************************)
Producer == <<"producer", 1>>
Consumers == {<<"consumer", k>> : k \in 1..NConsumers}
SweeperOf(q) == <<"sweeper", q>>
Redriver == <<"redrive", RedriveFrom>>
Threads == {Producer, Redriver} \cup Consumers \cup {SweeperOf(q) : q \in Queues}

(***************************************************************************)
(* The locks an operation on queue q takes, in the order it takes them.    *)
(* A release (retry, a sweep round) may move into q's target: it takes     *)
(* the target's lock and q's.  A redrive round takes RedriveFrom's and     *)
(* RedriveTo's.  Creation order: the lower number first.  "opposite": a    *)
(* release takes its own lock first, the target's second (the redrive      *)
(* keeps DLQ-then-destination: in this pair the two orders cross).         *)
(***************************************************************************)
Up(S) == LET m == CHOOSE x \in S : \A y \in S : x <= y
         IN IF S = {m} THEN <<m>> ELSE <<m, CHOOSE x \in S \ {m} : TRUE>>
Down(S) == LET u == Up(S) IN IF Len(u) = 1 THEN u ELSE <<u[2], u[1]>>

ReleaseLocks(q) ==
    LET S == IF DeadLetter[q] = None THEN {q} ELSE {DeadLetter[q], q}
    IN IF LockOrder = "creation" THEN Up(S) ELSE Down(S)

LocksOf(o) ==
    CASE o.name \in {"send", "receive", "delete"} -> <<o.q>>
      [] o.name \in {"retry", "sweep"}            -> ReleaseLocks(o.q)
      [] o.name = "redrive"                       -> Up({RedriveFrom, RedriveTo})

Holds(t) == {q \in Queues : owner[q] = t}

\* An operation [name, q, id] (id: what a send sends, else None); Idle: none.
Idle == [name |-> "none", q |-> 0, id |-> None]
Op(name, q) == [name |-> name, q |-> q, id |-> None]

(***************************************************************************)
(*                  CALLS, LOCKS AND THE CLOCK (no data step)              *)
(***************************************************************************)

\* Thread t, outside any operation, calls o: it now wants o's locks.
Call(t, o) ==
    /\ op[t] = Idle
    /\ op' = [op EXCEPT ![t] = o]
    /\ want' = [want EXCEPT ![t] = LocksOf(o)]
    /\ UNCHANGED <<data, transit, now, owner, held>>

\* The producer sends the next id it has not sent (one producer, so no one
\* else is sending it).
StartSend(i) ==
    /\ i \in Ids \ Sys!SysAccepted
    /\ Call(Producer, [name |-> "send", q |-> Source, id |-> i])

StartReceive(c) == held[c] = None /\ Call(c, Op("receive", Source))
StartDelete(c) == held[c] # None /\ Call(c, Op("delete", Source))
StartRetry(c) == held[c] # None /\ Call(c, Op("retry", Source))
\* (The first conjunct of each is always true: it makes TLC's traces name the
\* step StartSweep or StartRedrive rather than Call.)
StartSweep(q) == q \in Queues /\ Call(SweeperOf(q), Op("sweep", q))
StartRedrive == RedriveFrom \in Queues /\ Call(Redriver, Op("redrive", RedriveFrom))

\* The consumer gives up what it holds without telling the queue (its
\* processing failed): the message stays in flight until its deadline.
Drop(c) ==
    /\ op[c] = Idle /\ held[c] # None
    /\ held' = [held EXCEPT ![c] = None]
    /\ UNCHANGED <<data, transit, now, owner, op, want>>

\* Thread t takes the next lock it wants, when nobody holds it.
Acquire(t) ==
    /\ want[t] # <<>>
    /\ owner[Head(want[t])] = None
    /\ owner' = [owner EXCEPT ![Head(want[t])] = t]
    /\ want' = [want EXCEPT ![t] = Tail(@)]
    /\ UNCHANGED <<data, transit, now, op, held>>

Tick ==
    /\ now < MaxTime
    /\ now' = now + 1
    /\ UNCHANGED <<data, transit, owner, op, want, held>>

(***************************************************************************)
(*                  THE CRITICAL SECTIONS                                  *)
(*                                                                         *)
(* With every lock of its operation held, thread t does the operation's    *)
(* QueueSystem step on the data (or nothing, if the operation finds        *)
(* nothing to do: the call returns empty-handed), releases its locks and   *)
(* returns.                                                                *)
(***************************************************************************)
Live(r) == r # None /\ Sys!InFlight(Source, r[1]) /\ data[Source].msgs[r[1]].attempt = r[2]

\* What operation o does to the data (o's locks held).
Effect(o) ==
    CASE o.name = "send" ->
           IF Sys!HasRoom(o.q) THEN Sys!Sent(data, o.q, o.id, 0, now) ELSE data
      [] o.name = "receive" ->
           IF data[o.q].visible # <<>>
                /\ data[o.q].msgs[Head(data[o.q].visible)].attempt < MaxAttempt
           THEN Sys!Delivered(data, o.q, CHOOSE v \in VisibilityTimeouts : TRUE, now)
           ELSE data
      [] o.name = "sweep" -> Sys!FireAll(data, o.q, Sys!ExpiryOrder(o.q))
      [] o.name = "redrive" ->
           LET d == data[RedriveFrom]
           IN IF d.visible # <<>> /\ Sys!HasRoom(RedriveTo) /\ Sys!FreshIds # {}
              THEN Sys!Redriven(data, RedriveFrom, Head(d.visible), RedriveTo,
                                Sys!NextFresh, now)
              ELSE data
      [] OTHER -> data    \* delete, retry: below, they need the receipt

\* The receipt-taking operations of consumer c.
ReceiptEffect(c) ==
    LET r == held[c]
    IN IF ~Live(r) THEN data
       ELSE IF op[c].name = "delete" THEN Sys!Deleted(data, Source, r[1])
       ELSE Sys!Release(data, Source, r[1])

CS(t) ==
    /\ op[t] # Idle
    /\ want[t] = <<>>
    /\ LET o == op[t]
           new == IF o.name \in {"delete", "retry"} THEN ReceiptEffect(t) ELSE Effect(o)
       IN /\ data' = new
          /\ held' = IF t \notin Consumers THEN held
                     ELSE IF o.name = "receive" /\ new # data
                     THEN LET i == Head(data[o.q].visible)
                          IN [held EXCEPT ![t] = <<i, data[o.q].msgs[i].attempt + 1>>]
                     ELSE IF o.name \in {"delete", "retry"} THEN [held EXCEPT ![t] = None]
                     ELSE held
    /\ owner' = [q \in Queues |-> IF owner[q] = t THEN None ELSE owner[q]]
    /\ op' = [op EXCEPT ![t] = Idle]
    /\ UNCHANGED <<transit, now, want>>

(***************************************************************************)
(*                        THE SPECIFICATION                                *)
(***************************************************************************)
Init ==
    /\ Sys!Init
    /\ owner = [q \in Queues |-> None]
    /\ op = [t \in Threads |-> Idle]
    /\ want = [t \in Threads |-> <<>>]
    /\ held = [c \in Consumers |-> None]

Next ==
    \/ \E i \in Ids : StartSend(i)
    \/ \E c \in Consumers : StartReceive(c) \/ StartDelete(c) \/ StartRetry(c) \/ Drop(c)
    \/ \E q \in Queues : StartSweep(q)
    \/ StartRedrive
    \/ \E t \in Threads : Acquire(t)
    \/ \E t \in Threads : CS(t)
    \/ Tick

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(*                        INVARIANTS AND THEOREMS                          *)
(***************************************************************************)
TypeOK ==
    /\ Sys!TypeOK
    /\ owner \in [Queues -> Threads \cup {None}]
    /\ want \in [Threads -> Seq(Queues)]
    /\ held \in [Consumers -> (Sys!AllIds \X Nat) \cup {None}]

\* A critical section runs with every lock of its operation held, and only
\* then; a lock has one owner (owner is a function) and only a thread in an
\* operation owns one.
LocksHeld ==
    \A t \in Threads :
        /\ op[t] = Idle => Holds(t) = {} /\ want[t] = <<>>
        /\ op[t] # Idle => Holds(t) \cup Range(want[t]) = Range(LocksOf(op[t]))
                             /\ Holds(t) \cap Range(want[t]) = {}

\* The locks are taken in creation order: a thread that holds a lock waits
\* only for locks of higher number.  (This is WHY there is no deadlock: a
\* cycle of waits would need someone waiting for a lower lock than one it
\* holds.)  The opposite order breaks it.
InCreationOrder ==
    \A t \in Threads : \A q \in Holds(t) : \A p \in Range(want[t]) : q < p

\* The system's invariants, of the threaded model's data.
SystemInvariants ==
    /\ Sys!TypeOK /\ Sys!LocalOneStates /\ Sys!QueueInvariants
    /\ Sys!SystemOneState /\ Sys!NothingLost
    /\ Sys!RetentionKeepsEnqueueTime /\ Sys!RedriveIsNewMessage

(***************************************************************************)
(* LockedWrites: a queue's data change only in a step of the thread that   *)
(* holds that queue's lock, the step that ends its critical section (it    *)
(* releases the lock there).  So a move, which changes two queues, holds   *)
(* both locks: an operation that took only its own lock and moved into the *)
(* target would break this, although the step itself is one atomic         *)
(* QueueSystem step.                                                       *)
(***************************************************************************)
LockedWritesStep ==
    \A q \in Queues : data'[q] # data[q] => owner[q] # None /\ owner'[q] = None
LockedWrites == [][LockedWritesStep]_vars

SysSpec == Sys!Spec

THEOREM Spec => [](TypeOK /\ LocksHeld /\ SystemInvariants)
THEOREM (LockOrder = "creation") => (Spec => []InCreationOrder)
THEOREM Spec => SysSpec /\ LockedWrites
\* And, checked by TLC's deadlock check rather than stated: with
\* LockOrder = "creation" every reachable state has a successor.

(***************************************************************************)
(* The per-queue constants of the configs (a .cfg cannot write a sequence) *)
(* are QueueSystem's Pair: queue 1 the DLQ, queue 2 its source.            *)
(***************************************************************************)
PairDeadLetter == Sys!PairDeadLetter
PairCapacity == Sys!PairCapacity
PairMaxReceives == Sys!PairMaxReceives
PairRetention == Sys!PairRetention
=============================================================================
