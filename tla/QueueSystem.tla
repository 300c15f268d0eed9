---------------------------- MODULE QueueSystem ----------------------------
(***************************************************************************)
(* A system of queues linked by dead-letter targets: the abstract spec of  *)
(* docs/contract.md, section 7 (the rules 7.1-7.7; "rule N" below is 7.N). *)
(*                                                                         *)
(* Each queue is a Queue.tla queue with two more terminal states,          *)
(* "AGED_OUT" (its retention ran out) and "MOVED" (redriven out of it).    *)
(* What is new is that some steps change TWO queues at once:               *)
(*   - Move (inside Release): a release that dead-letters a message of a   *)
(*     queue with a target makes it DEAD here and, in the same step, a     *)
(*     VISIBLE message with the same id at the target's visible tail;      *)
(*   - Redrive: a VISIBLE message of a dead-letter queue becomes MOVED     *)
(*     there and, in the same step, a new message (fresh id, attempt 0,    *)
(*     enqueued now) at the destination's visible tail.                    *)
(* SystemOneState and NothingLost say that every accepted message is, over *)
(* all queues, held in exactly one place, and that every entry a message   *)
(* left behind points to where it is.  With Move = "two_step" the move is  *)
(* the two steps of a careless implementation (remove here; later, add     *)
(* there): NothingLost fails between them (QueueSystemTwoStep.cfg).        *)
(*                                                                         *)
(* Queues are numbered 1..N in CREATION ORDER (the number is the queue's   *)
(* token in impl/): a queue's dead-letter target is created before it, so  *)
(* it has a lower number, and links never form a cycle.  Every per-queue   *)
(* parameter is a sequence indexed by the queue's number.                  *)
(*                                                                         *)
(* Per queue, this module REFINES Queue.tla through a projection (Proj     *)
(* below): each queue's projected state satisfies Queue's invariants, and  *)
(* each step is, in each queue's projection, a step of Queue.tla's Next,   *)
(* a stutter, or one of the two folds Queue.tla has no single action for   *)
(* (a sweep that also ages messages out; a sweep of the source that moves  *)
(* several messages into this queue at once).  The mapping:                *)
(*   - "AGED_OUT" and "MOVED" are "CANCELLED" in the projection: an active *)
(*     message leaves, its receipt dies, its timers stop, its slot is      *)
(*     freed -- exactly Queue's Cancel;                                    *)
(*   - a message moved in (dead-lettered into this queue, or redriven into *)
(*     it) is a Send(i, 0) of this queue: it appears VISIBLE at the tail;  *)
(*     its projected attempt counts the deliveries IN THIS QUEUE (the      *)
(*     record keeps `base', the attempt it arrived with), so it is 0 on    *)
(*     arrival as Queue's Send says.  The system's dead-letter rule counts *)
(*     the life count (attempt kept, rule 3), so the two agree in a        *)
(*     queue without a dead-letter policy of its own (the end of a chain,  *)
(*     every config here); in the middle of a chain A -> B -> C a moved-in *)
(*     message dies in B sooner than Queue.tla's rule on B's own count     *)
(*     would say: that is the design's choice, not a Queue.tla behaviour;  *)
(*   - the retention timers are not Queue's timers: the projection drops   *)
(*     them from `timers' (Queue's timers are the delay and visibility     *)
(*     timers, in start order, which the projection keeps).                *)
(*                                                                         *)
(* Left out, because Queue.tla already covers them for one queue and they  *)
(* add nothing across queues: batches (folds of the single operations),    *)
(* purge, FIFO queues (QueueFifo.tla; a FIFO target resets the enqueue     *)
(* time where a standard one keeps it, rule 4 -- this module is the        *)
(* standard kind), and the redrive task's scope and rate (the task is an   *)
(* impl schedule of Redrive steps: here any VISIBLE message of a           *)
(* dead-letter queue may be redriven at any time, which includes every     *)
(* order the task takes).                                                  *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

(***************************************************************************)
(*                             1. CONSTANTS                                *)
(***************************************************************************)
CONSTANTS
    DeadLetter,         \* DeadLetter[q]: the dead-letter target of queue q, or None
    Capacity,           \* Capacity[q]: bound on q's active messages, or None
    MaxReceives,        \* MaxReceives[q]: q's dead-letter policy, or None
    Retention,          \* Retention[q]: q's retention period, or None (keep for ever)
    SendTo,             \* the queues producers send to (a subset of 1..N)
    Ids,                \* the ids producers may send (model values a, b, ...)
    RedriveIds,         \* the fresh ids redrive gives (model values r1, ...)
    MaxAttempt,         \* MODEL bound on deliveries, as in Queue
    VisibilityTimeouts, \* as in Queue
    ExtendTimeouts,     \* as in Queue
    Delays,             \* as in Queue
    MaxTime,            \* MODEL bound: the clock runs 0..MaxTime
    Move,               \* "atomic" (the design) or "two_step" (the teaching model)
    None                \* a model value: no target, no bound, no deadline, ...

N == Len(DeadLetter)
Queues == 1..N
Range(s) == {s[k] : k \in DOMAIN s}

ASSUME None \notin Nat
ASSUME N >= 2
ASSUME Len(Capacity) = N /\ Len(MaxReceives) = N /\ Len(Retention) = N
ASSUME \A q \in Queues :
    /\ Capacity[q] \in Nat \cup {None}
    /\ MaxReceives[q] \in (Nat \ {0}) \cup {None}
    /\ Retention[q] \in (Nat \ {0}) \cup {None}
    \* Rule 1: a target is created before its source, needs max_receives on
    \* the source, and is unbounded (a move is the commit of a release,
    \* which cannot wait for room).
    /\ DeadLetter[q] # None =>
         /\ DeadLetter[q] \in 1..(q - 1)
         /\ MaxReceives[q] # None
         /\ Capacity[DeadLetter[q]] = None
ASSUME SendTo \subseteq Queues
ASSUME Ids \cap RedriveIds = {} /\ None \notin Ids \cup RedriveIds
ASSUME MaxAttempt \in Nat \ {0}
ASSUME Move \in {"atomic", "two_step"}

(***************************************************************************)
(*                             2. VARIABLES                                *)
(***************************************************************************)
VARIABLES
    data,     \* data[q]: queue q's state, a record of Queue.tla's shape:
              \*   msgs      the ids q ever accepted -> [status, attempt, base,
              \*             deadline, visibleAt, enqueuedAt, source, movedTo]
              \*   visible, inFlight, dead, delayed   as in Queue
              \*   timers    q's timers in start order: <<"msg", i>> (i's delay or
              \*             visibility timer, Queue's timers) and <<"ret", i>>
              \*             (i's retention timer): the one timer order
    transit,  \* the moves under way, <<target, source, id>>: always {} unless
              \* Move = "two_step" (the message is between the two steps)
    now       \* the discrete clock

vars == <<data, transit, now>>

(***************************************************************************)
(*                             3. HELPERS                                  *)
(***************************************************************************)
Remove(s, i) == SelectSeq(s, LAMBDA x : x # i)

Statuses == {"DELAYED", "VISIBLE", "IN_FLIGHT", "DONE", "CANCELLED", "DEAD",
             "AGED_OUT", "MOVED"}
ActiveStatuses == {"DELAYED", "VISIBLE", "IN_FLIGHT"}

\* Every id the system may ever hold, and the ids it has accepted (rule 2:
\* one id space; a dead-lettered message keeps its id in the target).
AllIds == Ids \cup RedriveIds
In(q, i) == i \in DOMAIN data[q].msgs
SysAccepted == UNION {DOMAIN data[q].msgs : q \in Queues}

\* The dead-letter queues: the targets of some queue.
DLQs == {DeadLetter[q] : q \in {p \in Queues : DeadLetter[p] # None}}

IsActive(q, i) == data[q].msgs[i].status \in ActiveStatuses
Active(q) == Cardinality({i \in DOMAIN data[q].msgs : IsActive(q, i)})
HasRoom(q) == IF Capacity[q] = None THEN TRUE ELSE Active(q) < Capacity[q]

\* Rule 3: a release dead-letters after MaxReceives[q] deliveries, counting
\* the message's whole life (the attempt is kept by a move).
Dies(q, n) == MaxReceives[q] # None /\ n >= MaxReceives[q]

\* A fresh record: sent (or redriven in) at time t, attempt 0.
NewRec(st, va, t) ==
    [status |-> st, attempt |-> 0, base |-> 0, deadline |-> None, visibleAt |-> va,
     enqueuedAt |-> t, source |-> None, movedTo |-> None]

AddMsg(m, i, r) == [j \in DOMAIN m \cup {i} |-> IF j = i THEN r ELSE m[j]]

\* The retention timer a message gets when it enters q (none without retention).
RetTimer(q, i) == IF Retention[q] = None THEN <<>> ELSE <<<<"ret", i>>>>

\* A message's timers removed: all of them (it ends), or its "msg" timer.
DropTimers(ts, i) == SelectSeq(ts, LAMBDA e : e[2] # i)
DropMsgTimer(ts, i) == SelectSeq(ts, LAMBDA e : e # <<"msg", i>>)

(***************************************************************************)
(* Each operation's effect on the system's data s (a function from queues  *)
(* to queue records) as a pure operator, as in Queue.tla: applied once by  *)
(* the single operations, folded over the due timers by Expire.            *)
(***************************************************************************)

\* Sent(s, q, i, d, t): q accepts the fresh id i at time t with delay d.
\* Its delay timer (if any) starts first, then its retention timer (rule 4).
Sent(s, q, i, d, t) ==
    [s EXCEPT ![q].msgs = AddMsg(@, i, NewRec(IF d = 0 THEN "VISIBLE" ELSE "DELAYED",
                                              IF d = 0 THEN None ELSE t + d, t)),
              ![q].visible = IF d = 0 THEN Append(@, i) ELSE @,
              ![q].delayed = IF d = 0 THEN @ ELSE Append(@, i),
              ![q].timers = (IF d = 0 THEN @ ELSE Append(@, <<"msg", i>>)) \o RetTimer(q, i)]

\* Delivered(s, q, v, t): q's visible head goes in flight, as Queue's.
Delivered(s, q, v, t) ==
    LET i == Head(s[q].visible)
    IN [s EXCEPT ![q].msgs[i].status = "IN_FLIGHT",
                 ![q].msgs[i].attempt = @ + 1,
                 ![q].msgs[i].deadline = IF v = None THEN None ELSE t + v,
                 ![q].visible = Tail(@),
                 ![q].inFlight = Append(@, i),
                 ![q].timers = Append(@, <<"msg", i>>)]

(***************************************************************************)
(* MovedIn(s, b, a, i): the message i, DEAD in a, joins b's visible tail   *)
(* (rule 3): same id, attempt kept (so `base', the attempt it arrives      *)
(* with, is that attempt), enqueue time kept (a standard queue: AWS keeps  *)
(* the original enqueue timestamp), and where it came from; its retention  *)
(* timer in b starts now, due at the ORIGINAL enqueue time plus b's        *)
(* retention, so it may already be due (it ages out at b's next sweep).    *)
(***************************************************************************)
MovedIn(s, b, a, i) ==
    LET r == s[a].msgs[i]
    IN [s EXCEPT ![b].msgs = AddMsg(@, i, [r EXCEPT !.status = "VISIBLE", !.base = r.attempt,
                                                 !.deadline = None, !.visibleAt = None,
                                                 !.source = a, !.movedTo = None]),
                 ![b].visible = Append(@, i),
                 ![b].timers = @ \o RetTimer(b, i)]

(***************************************************************************)
(* Release(s, q, i): the one rule of a release (Retry, ChangeVisibility(i, *)
(* 0), a deadline firing), as Queue's, with the move: a message that dies  *)
(* in a queue with a target is DEAD here ("died here": still in q's dead   *)
(* list) and, IN THE SAME STEP, moved in to the target.  With              *)
(* Move = "two_step" only the first half happens here; the caller records  *)
(* the move in `transit' and MoveIn does the rest later.                   *)
(***************************************************************************)
Release(s, q, i) ==
    LET dies == Dies(q, s[q].msgs[i].attempt)
        here == [s EXCEPT ![q].msgs[i].status = IF dies THEN "DEAD" ELSE "VISIBLE",
                          ![q].msgs[i].deadline = None,
                          ![q].inFlight = Remove(@, i),
                          ![q].timers = IF dies THEN DropTimers(@, i) ELSE DropMsgTimer(@, i),
                          ![q].visible = IF dies THEN @ ELSE Append(@, i),
                          ![q].dead = IF dies THEN Append(@, i) ELSE @]
    IN IF dies /\ DeadLetter[q] # None /\ Move = "atomic"
       THEN MovedIn(here, DeadLetter[q], q, i)
       ELSE here

\* A delay fires: the message joins the visible tail (its retention timer runs on).
FireDelay(s, q, i) ==
    [s EXCEPT ![q].msgs[i].status = "VISIBLE",
              ![q].msgs[i].visibleAt = None,
              ![q].delayed = Remove(@, i),
              ![q].timers = DropMsgTimer(@, i),
              ![q].visible = Append(@, i)]

\* Ended(s, q, i, st): the active message i of q ends in the terminal state
\* st: out of every list, its receipt dead, every timer of it stopped.
Ended(s, q, i, st) ==
    [s EXCEPT ![q].msgs[i].status = st,
              ![q].msgs[i].deadline = None,
              ![q].msgs[i].visibleAt = None,
              ![q].visible = Remove(@, i),
              ![q].inFlight = Remove(@, i),
              ![q].delayed = Remove(@, i),
              ![q].timers = DropTimers(@, i)]

\* Rule 4: the retention timer fires: an active message is AGED_OUT.  (A
\* terminal message has no retention timer left: Ended and the dying
\* Release stop it, so a stale retention timer is never seen here.)
AgeOut(s, q, i) == Ended(s, q, i, "AGED_OUT")

\* Deleted(s, q, i): the in-flight message i is DONE.
Deleted(s, q, i) == Ended(s, q, i, "DONE")

\* Changed(s, q, i, x, t): change_visibility to x: 0 releases, else a new deadline.
Changed(s, q, i, x, t) ==
    IF x = 0 THEN Release(s, q, i) ELSE [s EXCEPT ![q].msgs[i].deadline = t + x]

(***************************************************************************)
(* Redriven(s, q, i, d, n, t): rule 5, one move of a redrive: the VISIBLE  *)
(* message i of the dead-letter queue q is MOVED there, pointing to        *)
(* <<d, n>>, and in the same step d accepts it as a new message: the fresh *)
(* id n, attempt 0, enqueued at t (its retention restarts), at the tail.   *)
(***************************************************************************)
Redriven(s, q, i, d, n, t) ==
    LET gone == [Ended(s, q, i, "MOVED") EXCEPT ![q].msgs[i].movedTo = <<d, n>>]
    IN Sent(gone, d, n, 0, t)

(***************************************************************************)
(* Timers.  A "msg" timer is due as in Queue (a DELAYED message's          *)
(* visibleAt, an IN_FLIGHT one's deadline); a "ret" timer at the message's *)
(* enqueue time plus the queue's retention.  Expire fires q's due timers   *)
(* of both kinds in the one order (due time, then start order), as         *)
(* Queue's ByDueTime does.                                                 *)
(***************************************************************************)
DueOf(q, e) ==
    LET r == data[q].msgs[e[2]]
    IN IF e[1] = "ret" THEN r.enqueuedAt + Retention[q]
       ELSE IF r.status = "DELAYED" THEN r.visibleAt ELSE r.deadline

IsDue(q, e) == DueOf(q, e) # None /\ DueOf(q, e) <= now

RECURSIVE ByDueTime(_, _)
ByDueTime(q, s) ==
    IF s = <<>> THEN <<>>
    ELSE LET d(k) == DueOf(q, s[k])
             first == CHOOSE k \in 1..Len(s) :
                        \A j \in 1..Len(s) : d(k) < d(j) \/ (d(k) = d(j) /\ k <= j)
             rest == [j \in 1..(Len(s) - 1) |-> IF j < first THEN s[j] ELSE s[j + 1]]
         IN <<s[first]>> \o ByDueTime(q, rest)

ExpiryOrder(q) == ByDueTime(q, SelectSeq(data[q].timers, LAMBDA e : IsDue(q, e)))

\* One timer firing.  A timer an earlier firing of the same sweep stopped
\* (the deadline of a message that aged out first) is skipped.
Fire(s, q, e) ==
    LET i == e[2]
    IN IF e \notin Range(s[q].timers) THEN s
       ELSE IF e[1] = "ret" THEN AgeOut(s, q, i)
       ELSE IF s[q].msgs[i].status = "DELAYED" THEN FireDelay(s, q, i)
       ELSE Release(s, q, i)

RECURSIVE FireAll(_, _, _)
FireAll(s, q, es) == IF es = <<>> THEN s ELSE FireAll(Fire(s, q, Head(es)), q, Tail(es))

(***************************************************************************)
(* The moves a step started but did not finish (Move = "two_step"): the    *)
(* messages that became DEAD in a queue with a target.  With "atomic" the  *)
(* move is done inside Release and nothing is left in transit.             *)
(***************************************************************************)
Started(q, s) ==
    IF Move = "atomic" \/ DeadLetter[q] = None THEN {}
    ELSE {<<DeadLetter[q], q, i>> : i \in Range(s[q].dead) \ Range(data[q].dead)}

\* The step of queue q's operation whose new data is s.
Step(q, s) ==
    /\ data' = s
    /\ transit' = transit \cup Started(q, s)
    /\ UNCHANGED now

(***************************************************************************)
(*                             4. ACTIONS                                  *)
(*                                                                         *)
(* As in Queue.tla: a receipt is named by its in-flight id (its live       *)
(* receipt), a call that would change nothing is no step.                  *)
(***************************************************************************)
Send(q, i, d) ==
    /\ q \in SendTo
    /\ i \notin SysAccepted        \* rule 2: the id is reserved system-wide
    /\ HasRoom(q)
    /\ Step(q, Sent(data, q, i, d, now))

Receive(q, v) ==
    /\ data[q].visible # <<>>
    /\ data[q].msgs[Head(data[q].visible)].attempt < MaxAttempt
    /\ Step(q, Delivered(data, q, v, now))

InFlight(q, i) == In(q, i) /\ data[q].msgs[i].status = "IN_FLIGHT"

Delete(q, i) == InFlight(q, i) /\ Step(q, Deleted(data, q, i))

Retry(q, i) == InFlight(q, i) /\ Step(q, Release(data, q, i))

ChangeVisibility(q, i, x) == InFlight(q, i) /\ Step(q, Changed(data, q, i, x, now))

Cancel(q, i) == In(q, i) /\ IsActive(q, i) /\ Step(q, Ended(data, q, i, "CANCELLED"))

\* Expire(q): q's sweeper fires every due timer of q, delays, deadlines and
\* retention alike, in one step; a release may move into q's target.
Expire(q) ==
    /\ ExpiryOrder(q) # <<>>
    /\ Step(q, FireAll(data, q, ExpiryOrder(q)))

(***************************************************************************)
(* Redrive(q, i, d): one move of a redrive of the dead-letter queue q: to  *)
(* the message's source, or to a named destination (any other queue).      *)
(* The destination must have room (a full one: the move does not happen,   *)
(* the message stays VISIBLE in q -- so it is no step).  The new id is the *)
(* next of the system counter.                                             *)
(***************************************************************************)
\* The system counter: CHOOSE picks the same unused id in the same state,
\* and a picked id is accepted for ever, so the ids come in one fixed order.
FreshIds == RedriveIds \ SysAccepted
NextFresh == CHOOSE n \in FreshIds : TRUE

Redrive(q, i, d) ==
    /\ q \in DLQs
    /\ In(q, i) /\ data[q].msgs[i].status = "VISIBLE"
    /\ d \in Queues \ {q}
    /\ HasRoom(d)
    /\ FreshIds # {}
    /\ Step(q, Redriven(data, q, i, d, NextFresh, now))

\* MoveIn(e): the second step of a two-step move (never enabled with
\* Move = "atomic": transit stays empty).
MoveIn(e) ==
    /\ e \in transit
    /\ data' = MovedIn(data, e[1], e[2], e[3])
    /\ transit' = transit \ {e}
    /\ UNCHANGED now

Tick ==
    /\ now < MaxTime
    /\ now' = now + 1
    /\ UNCHANGED <<data, transit>>

(***************************************************************************)
(*                        5. THE SPECIFICATION                             *)
(***************************************************************************)
EmptyQueue == [msgs |-> [i \in {} |-> None], visible |-> <<>>, inFlight |-> <<>>,
               dead |-> <<>>, delayed |-> <<>>, timers |-> <<>>]

Init ==
    /\ data = [q \in Queues |-> EmptyQueue]
    /\ transit = {}
    /\ now = 0

Next ==
    \/ \E q \in Queues, i \in Ids, d \in Delays : Send(q, i, d)
    \/ \E q \in Queues, v \in VisibilityTimeouts : Receive(q, v)
    \/ \E q \in Queues, i \in AllIds : Delete(q, i)
    \/ \E q \in Queues, i \in AllIds : Retry(q, i)
    \/ \E q \in Queues, i \in AllIds, x \in ExtendTimeouts : ChangeVisibility(q, i, x)
    \/ \E q \in Queues, i \in AllIds : Cancel(q, i)
    \/ \E q \in Queues : Expire(q)
    \/ \E q \in Queues, i \in AllIds, d \in Queues : Redrive(q, i, d)
    \/ \E e \in transit : MoveIn(e)
    \/ Tick

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(*                  6. INVARIANTS OF THE SYSTEM                            *)
(***************************************************************************)
TypeOK ==
    /\ DOMAIN data = Queues
    /\ \A q \in Queues :
         /\ DOMAIN data[q].msgs \subseteq AllIds
         /\ \A i \in DOMAIN data[q].msgs :
              data[q].msgs[i] \in [status : Statuses, attempt : Nat, base : Nat,
                                   deadline : Nat \cup {None}, visibleAt : Nat \cup {None},
                                   enqueuedAt : Nat, source : Queues \cup {None},
                                   movedTo : (Queues \X AllIds) \cup {None}]
         /\ {data[q].visible, data[q].inFlight, data[q].dead, data[q].delayed} \subseteq Seq(AllIds)
         /\ data[q].timers \in Seq({"msg", "ret"} \X AllIds)
    /\ transit \subseteq Queues \X Queues \X AllIds
    /\ now \in 0..MaxTime

NoDuplicates(s) == \A j, k \in DOMAIN s : j # k => s[j] # s[k]
WithStatus(q, st) == {i \in DOMAIN data[q].msgs : data[q].msgs[i].status = st}

\* LocalOneState(q): Queue's OneState of queue q with the two new states:
\* the lists agree with the statuses, and q's timers are exactly one "msg"
\* timer per delayed or in-flight message and one "ret" timer per active
\* message of a queue with retention.
LocalOneState(q) ==
    LET d == data[q]
    IN /\ NoDuplicates(d.visible) /\ Range(d.visible) = WithStatus(q, "VISIBLE")
       /\ NoDuplicates(d.inFlight) /\ Range(d.inFlight) = WithStatus(q, "IN_FLIGHT")
       /\ NoDuplicates(d.dead) /\ Range(d.dead) = WithStatus(q, "DEAD")
       /\ NoDuplicates(d.delayed) /\ Range(d.delayed) = WithStatus(q, "DELAYED")
       /\ NoDuplicates(d.timers)
       /\ {e[2] : e \in {x \in Range(d.timers) : x[1] = "msg"}}
            = Range(d.delayed) \cup Range(d.inFlight)
       /\ {e[2] : e \in {x \in Range(d.timers) : x[1] = "ret"}}
            = IF Retention[q] = None THEN {}
              ELSE {i \in DOMAIN d.msgs : d.msgs[i].status \in ActiveStatuses}

LocalOneStates == \A q \in Queues : LocalOneState(q)

(***************************************************************************)
(* Rule 6.  A message's entry in a queue is HOLDING (the message is here)  *)
(* or DEPARTED (it went on, and the entry says where): DEAD in a queue     *)
(* with a target points to the same id in the target; MOVED points to the  *)
(* new id in the redrive's destination.                                    *)
(***************************************************************************)
Departed(q, i) ==
    \/ data[q].msgs[i].status = "MOVED"
    \/ data[q].msgs[i].status = "DEAD" /\ DeadLetter[q] # None
Holding(q, i) == ~Departed(q, i)

Pointer(q, i) ==
    IF data[q].msgs[i].status = "MOVED" THEN data[q].msgs[i].movedTo
    ELSE <<DeadLetter[q], i>>

(***************************************************************************)
(* SystemOneState: every accepted id ENDS in exactly one queue, in one     *)
(* state (per queue a record has one status, LocalOneState): held there,   *)
(* or MOVED there -- a redrive gives the message a new id, so the old id   *)
(* ends at its MOVED entry and the message lives on under the new one      *)
(* (NothingLost follows it).  A DEAD entry of a queue with a target is no  *)
(* end: the same id goes on in the target.  And every departed entry       *)
(* points to a queue where the id it names is present.                     *)
(***************************************************************************)
EndsIn(q, i) == In(q, i) /\ (Holding(q, i) \/ data[q].msgs[i].status = "MOVED")

SystemOneState ==
    /\ \A i \in SysAccepted : Cardinality({q \in Queues : EndsIn(q, i)}) = 1
    /\ \A q \in Queues : \A i \in DOMAIN data[q].msgs :
         Departed(q, i) => In(Pointer(q, i)[1], Pointer(q, i)[2])

(***************************************************************************)
(* NothingLost: following the pointers from any entry leads to a holding   *)
(* entry (a message that left a queue is somewhere), and every id accepted *)
(* is in some queue.  The chain ends: each pointer leads to an entry made  *)
(* later than the one it leaves, and the ids are finite.  A two-step move  *)
(* breaks it between its steps: DEAD here points to a target that does not *)
(* have the message.                                                       *)
(***************************************************************************)
RECURSIVE Leads(_, _, _)
Leads(q, i, fuel) ==
    /\ In(q, i)
    /\ \/ Holding(q, i)
       \/ fuel > 0 /\ Leads(Pointer(q, i)[1], Pointer(q, i)[2], fuel - 1)

NothingLost ==
    /\ \A q \in Queues : \A i \in DOMAIN data[q].msgs :
         Leads(q, i, N * Cardinality(AllIds))
    /\ \A i \in SysAccepted : \E q \in Queues : In(q, i)

(***************************************************************************)
(* What a move keeps and what a redrive resets (rules 3 to 5), as state    *)
(* invariants, so that the mutants of issue 25 fail by name:               *)
(*   RetentionKeepsEnqueueTime: a dead-lettered message keeps its original *)
(*     enqueue time in the target (a standard queue, AWS), so its          *)
(*     retention there counts from when it was first sent, not from the    *)
(*     move;                                                               *)
(*   RedriveIsNewMessage: a redriven message is a new one in its           *)
(*     destination: another id, no source, arrived with attempt 0, and     *)
(*     enqueued no earlier than the message it replaces (its retention     *)
(*     restarts).                                                          *)
(***************************************************************************)
RetentionKeepsEnqueueTime ==
    \A q \in Queues : \A i \in DOMAIN data[q].msgs :
        LET src == data[q].msgs[i].source
        IN src # None => data[q].msgs[i].enqueuedAt = data[src].msgs[i].enqueuedAt

RedriveIsNewMessage ==
    \A q \in Queues : \A i \in WithStatus(q, "MOVED") :
        LET d == data[q].msgs[i].movedTo[1]
            n == data[q].msgs[i].movedTo[2]
        IN /\ n # i
           /\ data[d].msgs[n].source = None
           /\ data[d].msgs[n].base = 0
           /\ data[d].msgs[n].enqueuedAt >= data[q].msgs[i].enqueuedAt

\* The history half: a terminal entry never changes (DONE, CANCELLED,
\* AGED_OUT, DEAD, MOVED), and an accepted id is never forgotten by its queue.
TerminalStatuses == Statuses \ ActiveStatuses
SystemOneStateStep ==
    \A q \in Queues : \A i \in DOMAIN data[q].msgs :
        /\ i \in DOMAIN data'[q].msgs
        /\ data[q].msgs[i].status \in TerminalStatuses => data'[q].msgs[i] = data[q].msgs[i]

\* ExpireComplete, per queue: after q's sweep nothing of q is due.
ExpireCompleteStep == \A q \in Queues : Expire(q) => ExpiryOrder(q)' = <<>>

(***************************************************************************)
(*            7. THE REFINEMENT, PER QUEUE: QueueSystem -> Queue           *)
(*                                                                         *)
(* The projection of queue q onto Queue.tla's variables (the mapping of    *)
(* the header), and Q(q), the Queue.tla of that projection.                *)
(***************************************************************************)
QStatus(st) == IF st \in {"AGED_OUT", "MOVED"} THEN "CANCELLED" ELSE st

ProjMsgs(q) ==
    [i \in DOMAIN data[q].msgs |->
        LET r == data[q].msgs[i]
        IN [status |-> QStatus(r.status), attempt |-> r.attempt - r.base,
            deadline |-> r.deadline, visibleAt |-> r.visibleAt]]

ProjTimers(q) ==
    LET ts == SelectSeq(data[q].timers, LAMBDA e : e[1] = "msg")
    IN [k \in DOMAIN ts |-> ts[k][2]]

Q(q) == INSTANCE Queue
          WITH msgs <- ProjMsgs(q), visible <- data[q].visible, inFlight <- data[q].inFlight,
               dead <- data[q].dead, delayed <- data[q].delayed, timers <- ProjTimers(q),
               now <- now, Ids <- AllIds, Capacity <- Capacity[q],
               MaxReceives <- MaxReceives[q], MaxAttempt <- MaxAttempt,
               VisibilityTimeouts <- VisibilityTimeouts, ExtendTimeouts <- ExtendTimeouts,
               MaxTime <- MaxTime, Delays <- Delays \cup {0}, MaxBatch <- 1, None <- None

\* Every queue's projection satisfies every state half of Queue's invariants.
QueueInvariants == \A q \in Queues : Q(q)!TypeOK /\ Q(q)!Invariants

(***************************************************************************)
(* The two folds Queue.tla has no single action for.                       *)
(*   SweepFold(q): q's sweep, projected: Queue's Fire for each due delay   *)
(*     or deadline, and Queue's Cancel for each retention timer, in the    *)
(*     one timer order (a timer an earlier firing stopped is skipped).     *)
(*     Without retention this is exactly Queue's Expire.                   *)
(*   ArrivalFold(q): the messages moved into q by one step (a sweep of its *)
(*     source may dead-letter several), projected: Queue's SendAll of      *)
(*     them, delay 0, in the order they arrived: a send_batch.             *)
(***************************************************************************)
QFire(q, s, e) ==
    LET i == e[2]
    IN IF e[1] = "ret"
       THEN IF s.msgs[i].status \in ActiveStatuses THEN Q(q)!Cancelled(s, i) ELSE s
       ELSE IF s.msgs[i].status \in {"DELAYED", "IN_FLIGHT"} THEN Q(q)!Fire(s, i) ELSE s

\* (A recursive function, not a RECURSIVE operator: SANY does not accept the
\* instance's operators in a recursive operator's arguments.)
QFireAll(q, s0, es) ==
    LET f[k \in 0..Len(es)] == IF k = 0 THEN s0 ELSE QFire(q, f[k - 1], es[k])
    IN f[Len(es)]

SweepFold(q) == (Q(q)!State)' = QFireAll(q, Q(q)!State, ExpiryOrder(q)) /\ now' = now

Arrivals(q) ==
    LET new == SelectSeq(data'[q].visible, LAMBDA i : ~In(q, i))
    IN [k \in DOMAIN new |-> <<new[k], 0>>]

ArrivalFold(q) == (Q(q)!State)' = Q(q)!SendAll(Q(q)!State, Arrivals(q), now) /\ now' = now

\* Each step is, in every queue's projection, a stutter, a step of
\* Queue.tla's Next, or one of the two folds; and it keeps the history
\* halves of Queue's invariants.
ProjStep(q) ==
    /\ \/ UNCHANGED Q(q)!vars
       \/ Q(q)!Next
       \/ SweepFold(q)
       \/ ArrivalFold(q)
    /\ Q(q)!OneStateStep /\ Q(q)!AttemptsCountStep /\ Q(q)!FifoVisibleStep
    /\ Q(q)!IdsReservedStep /\ Q(q)!DelayHonouredStep

RefinesQueueStep == \A q \in Queues : ProjStep(q)

SystemOneStateSteps == [][SystemOneStateStep]_vars
ExpireCompleteSteps == [][ExpireCompleteStep]_vars
RefinesQueue == [][RefinesQueueStep]_vars

(***************************************************************************)
(*                 8. THE SYSTEMS THE CONFIGS CHECK                        *)
(*                                                                         *)
(* A .cfg file cannot write a sequence, so the per-queue constants of a    *)
(* config are these operators (`DeadLetter <- PairDeadLetter').            *)
(*   Pair: queue 1 is the dead-letter queue (unbounded, retention 1, no    *)
(*   policy of its own); queue 2 is its source (capacity 2, dead-letters   *)
(*   after one delivery, no retention).                                    *)
(***************************************************************************)
PairDeadLetter == <<None, 1>>
PairCapacity == <<None, 2>>
PairMaxReceives == <<None, 1>>
PairRetention == <<1, None>>

THEOREM Spec => [](TypeOK /\ LocalOneStates /\ QueueInvariants)
THEOREM (Move = "atomic") => (Spec => [](SystemOneState /\ NothingLost))
THEOREM Spec => SystemOneStateSteps /\ ExpireCompleteSteps /\ RefinesQueue
THEOREM (Move = "two_step") => ~(Spec => []NothingLost)
(***************************************************************************)
(*                 9. WITNESSES: the checks are not vacuous                *)
(*                                                                         *)
(* Each of these is FALSE in some reachable state of QueueSystem.cfg's     *)
(* bounds (tests/test_tla_system.py checks that TLC finds the state): a    *)
(* message moved into a DLQ, aged out there by its ORIGINAL enqueue time,  *)
(* aged out while in flight (its retention timer fired before its          *)
(* deadline), redriven, and redriven back then dead-lettered again.        *)
(***************************************************************************)
Never(st) == \A q \in Queues : \A i \in DOMAIN data[q].msgs : data[q].msgs[i].status # st
NoMoveIn == \A q \in Queues : \A i \in DOMAIN data[q].msgs : data[q].msgs[i].source = None
NoAgedOutAfterMove ==
    \A q \in Queues : \A i \in DOMAIN data[q].msgs :
        ~(data[q].msgs[i].status = "AGED_OUT" /\ data[q].msgs[i].source # None)
NoAgedOutInFlight ==
    \A q \in Queues : \A i \in DOMAIN data[q].msgs :
        ~(data[q].msgs[i].status = "AGED_OUT" /\ data[q].msgs[i].attempt > data[q].msgs[i].base)
NoRedrive == Never("MOVED")
NoSecondDeath ==
    \A q \in Queues : \A i \in RedriveIds : In(q, i) => data[q].msgs[i].status # "DEAD"

=============================================================================
