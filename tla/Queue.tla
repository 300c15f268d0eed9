------------------------------- MODULE Queue -------------------------------
(***************************************************************************)
(* An in-memory queue with Amazon SQS semantics: the abstract spec.        *)
(*                                                                         *)
(* This module is the contract (docs/contract.md, section 2) written       *)
(* in TLA+. It is the twin of the Python spec: every action here has a     *)
(* function of the same name in spec/transitions.py (Send is send, Receive *)
(* is receive, ...), and spec/explore.py walks the same graph as TLC does  *)
(* with this module.  model_tests/tests/test_equivalence.py checks that    *)
(* claim.                                                                  *)
(*                                                                         *)
(* How to read it, top to bottom:                                          *)
(*   1. constants: the bounds that make the model finite;                  *)
(*   2. variables: the queue's state and a discrete clock;                 *)
(*   3. helpers: statuses, receipts, timers, and each operation's effect   *)
(*      as a pure operator (state in, state out) -- *release* among them,  *)
(*      the one rule that Retry, ChangeVisibility(r, 0) and Expire apply;  *)
(*      a batch is the fold of its entries' operator;                      *)
(*   4. actions: one per row of the contract's table, named after the API; *)
(*   5. the specification (Init, Next, Spec) and the fairness of a         *)
(*      consumer that deletes what it receives;                            *)
(*   6. invariants (state halves) and step properties (history halves),    *)
(*      under the contract's names;                                        *)
(*   7. liveness, and the theorems TLC checks for the bounded models.      *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

(***************************************************************************)
(*                             1. CONSTANTS                                *)
(*                                                                         *)
(* Each constant has a field of the same meaning in spec.explore.Bounds.   *)
(***************************************************************************)
CONSTANTS
    Ids,                \* the message ids producers may send (model values a, b, ...)
    Capacity,           \* bound on active (delayed + visible + in-flight) messages, or None
    MaxReceives,        \* a release after this many deliveries dead-letters, or None
    MaxAttempt,         \* MODEL bound: Receive is enabled only while the head has had
                        \* fewer deliveries than this (keeps the state space finite)
    VisibilityTimeouts, \* the timeouts a Receive may ask for; None = never expires
    ExtendTimeouts,     \* the timeouts ChangeVisibility may set (0 releases at once)
    MaxTime,            \* MODEL bound: the clock runs 0, 1, ..., MaxTime
    Delays,             \* the delays a Send (or a SendBatch entry) may ask for; 0 = none
    MaxBatch,           \* MODEL bound: the batches tried have 2..MaxBatch entries (a batch
                        \* of one is the single action under another name); 1: none
    None                \* a model value: "no capacity bound", "no dead-lettering",
                        \* "no deadline"; it is not a number

ASSUME None \notin Nat
ASSUME Capacity \in Nat \cup {None}
ASSUME MaxReceives \in (Nat \ {0}) \cup {None}
ASSUME MaxAttempt \in Nat \ {0}
ASSUME VisibilityTimeouts \subseteq Nat \cup {None}
ASSUME ExtendTimeouts \subseteq Nat
ASSUME MaxTime \in Nat
ASSUME Delays \subseteq Nat
ASSUME MaxBatch \in 1..10

(***************************************************************************)
(*                             2. VARIABLES                                *)
(*                                                                         *)
(* The state is redundant on purpose, exactly as in spec/state.py: each    *)
(* message carries its own status, and the five sequences say the same    *)
(* thing again, in order.  The invariants check that both views agree.     *)
(***************************************************************************)
VARIABLES
    msgs,      \* every accepted message: a function from accepted ids to records
               \* [status, attempt, deadline, visibleAt]; DOMAIN msgs = the ids ever
               \* accepted; visibleAt is set exactly while the message is DELAYED
    visible,   \* ids of VISIBLE messages, head first, in the order they (re-)entered
    inFlight,  \* ids of IN_FLIGHT messages in the order they were received
    dead,      \* ids of DEAD messages, in the order they died
    delayed,   \* ids of DELAYED messages, in the order they were sent
    timers,    \* ids of every DELAYED and IN_FLIGHT message, in the order their
               \* timers were started (by the delayed send, by the receive): the one
               \* order that breaks ties between equal due times.  A delivery without
               \* a deadline has its place too, the receive's, which a later
               \* ChangeVisibility keeps; so with no delays timers = inFlight
    now        \* the discrete clock: time is an input of the queue, never read by it

vars == <<msgs, visible, inFlight, dead, delayed, timers, now>>

(***************************************************************************)
(*                             3. HELPERS                                  *)
(***************************************************************************)

\* The six states of a message; the last three are terminal.
Statuses == {"DELAYED", "VISIBLE", "IN_FLIGHT", "DONE", "CANCELLED", "DEAD"}
Terminal == {"DONE", "CANCELLED", "DEAD"}

\* The ids this queue has ever accepted (reserved for the queue's lifetime).
Accepted == DOMAIN msgs

\* The set of elements of a sequence, and a sequence without one element.
Range(s) == {s[k] : k \in DOMAIN s}
Remove(s, i) == SelectSeq(s, LAMBDA x : x # i)
Min(a, b) == IF a <= b THEN a ELSE b

\* Active messages count against capacity: delayed, visible and in-flight ones.
IsActive(i) == msgs[i].status \in {"DELAYED", "VISIBLE", "IN_FLIGHT"}
Active == Cardinality({i \in Accepted : IsActive(i)})

\* Room for n more active messages.  (An IF, not a disjunction: inside an
\* action TLC explores both sides of \/, and Active < None is an error.)
RoomFor(n) == IF Capacity = None THEN TRUE ELSE Active + n <= Capacity
HasRoom == RoomFor(1)

\* A receipt names one delivery: <<id, attempt>>.  It is live in the queue
\* data s while its message is IN_FLIGHT with exactly that attempt; only a
\* live receipt acts.  Live(r): live now.
LiveIn(s, r) == /\ r[1] \in DOMAIN s.msgs
                /\ s.msgs[r[1]].status = "IN_FLIGHT"
                /\ s.msgs[r[1]].attempt = r[2]

\* The receipt of the current delivery of an accepted message.
ReceiptOf(i) == <<i, msgs[i].attempt>>

\* The dead-letter policy: releasing a message delivered n times kills it iff
\* n >= MaxReceives (never, if MaxReceives is None).
Dies(n) == MaxReceives # None /\ n >= MaxReceives

(***************************************************************************)
(* The queue's data -- everything but the clock, what spec.State holds --  *)
(* as one record, so that each operation's effect can be a function from a *)
(* state to a state: applied once by the single operations, folded over    *)
(* the entries by the batches and over the due timers by Expire.           *)
(* SetState(s) is the step whose new data is s.                            *)
(***************************************************************************)
State == [msgs |-> msgs, visible |-> visible, inFlight |-> inFlight, dead |-> dead,
          delayed |-> delayed, timers |-> timers]

SetState(s) ==
    /\ msgs' = s.msgs
    /\ visible' = s.visible
    /\ inFlight' = s.inFlight
    /\ dead' = s.dead
    /\ delayed' = s.delayed
    /\ timers' = s.timers

Live(r) == LiveIn(State, r)

(***************************************************************************)
(* Timers.  A DELAYED message's timer is due at its visibleAt, an          *)
(* IN_FLIGHT message's at its deadline, if it has one (spec Msg.due).      *)
(* Expire fires the due timers by due time, ties in `timers' order (the    *)
(* order the timers were started): a selection sort of the due ids taken   *)
(* in timers order, always picking the FIRST one of the earliest due time, *)
(* which is what makes the sort stable.                                    *)
(***************************************************************************)
DueAt(i) == IF msgs[i].status = "DELAYED" THEN msgs[i].visibleAt ELSE msgs[i].deadline

IsDue(i) == DueAt(i) # None /\ DueAt(i) <= now

RECURSIVE ByDueTime(_)
ByDueTime(s) ==
    IF s = <<>> THEN <<>>
    ELSE LET d(k) == DueAt(s[k])
             first == CHOOSE k \in 1..Len(s) :
                        \A j \in 1..Len(s) : d(k) < d(j) \/ (d(k) = d(j) /\ k <= j)
             rest == [j \in 1..(Len(s) - 1) |-> IF j < first THEN s[j] ELSE s[j + 1]]
         IN <<s[first]>> \o ByDueTime(rest)

ExpiryOrder == ByDueTime(SelectSeq(timers, IsDue))

(***************************************************************************)
(* Sent(s, i, d, t): s with the fresh id i sent at time t with delay d.    *)
(* Delay 0: the message joins the tail of visible.  Delay d > 0: it is     *)
(* DELAYED until t + d, and its timer starts (appended to timers).         *)
(* Attempt 0, no deadline.  Send applies it once, SendBatch folds it.      *)
(***************************************************************************)
Sent(s, i, d, t) ==
    LET m == [status |-> IF d = 0 THEN "VISIBLE" ELSE "DELAYED", attempt |-> 0,
              deadline |-> None, visibleAt |-> IF d = 0 THEN None ELSE t + d]
    IN [s EXCEPT !.msgs = [j \in DOMAIN s.msgs \cup {i} |-> IF j = i THEN m ELSE s.msgs[j]],
                 !.visible = IF d = 0 THEN Append(@, i) ELSE @,
                 !.delayed = IF d = 0 THEN @ ELSE Append(@, i),
                 !.timers = IF d = 0 THEN @ ELSE Append(@, i)]

(***************************************************************************)
(* Delivered(s, v, t): s with its visible head received at time t with     *)
(* visibility timeout v: IN_FLIGHT, attempt + 1, deadline t + v (None:     *)
(* never expires), and its place in timers is taken at the end.  Receive   *)
(* applies it once, ReceiveBatch folds it (ReceiveAll).                    *)
(***************************************************************************)
Delivered(s, v, t) ==
    LET i == Head(s.visible)
    IN [s EXCEPT !.msgs[i].status = "IN_FLIGHT",
                 !.msgs[i].attempt = @ + 1,
                 !.msgs[i].deadline = IF v = None THEN None ELSE t + v,
                 !.visible = Tail(@),
                 !.inFlight = Append(@, i),
                 !.timers = Append(@, i)]

\* The first k visible messages of s received one after another.
RECURSIVE ReceiveAll(_, _, _, _)
ReceiveAll(s, k, v, t) == IF k = 0 THEN s ELSE ReceiveAll(Delivered(s, v, t), k - 1, v, t)

\* The receipts a receive_batch(n) delivers from s: its first min(n, visible)
\* visible messages, each with the next attempt.
Deliveries(s, n) ==
    [k \in 1..Min(n, Len(s.visible)) |-> <<s.visible[k], s.msgs[s.visible[k]].attempt + 1>>]

(***************************************************************************)
(* Release(s, i): the state s with its in-flight message i taken back.  If *)
(* it has been delivered MaxReceives times it is dead-lettered (appended   *)
(* to dead, freeing capacity); otherwise it is appended to the TAIL of     *)
(* visible (keeping its capacity slot): it never jumps back to its old     *)
(* place.  The attempt counter is kept: the next delivery is attempt + 1.  *)
(* Its timer (if any) stops.  This is the only definition of the release:  *)
(* Retry and ChangeVisibility(r, 0) apply it, Expire folds it (FireAll).   *)
(***************************************************************************)
Release(s, i) ==
    LET dies == Dies(s.msgs[i].attempt)
    IN [s EXCEPT !.msgs[i].status = IF dies THEN "DEAD" ELSE "VISIBLE",
                 !.msgs[i].deadline = None,
                 !.inFlight = Remove(@, i),
                 !.timers = Remove(@, i),
                 !.visible = IF dies THEN @ ELSE Append(@, i),
                 !.dead = IF dies THEN Append(@, i) ELSE @]

(***************************************************************************)
(* FireDelay(s, i): the delay of the DELAYED message i fires: it joins the *)
(* tail of visible, attempt unchanged, visibleAt cleared, its timer        *)
(* stopped (spec fire_delay).                                              *)
(***************************************************************************)
FireDelay(s, i) ==
    [s EXCEPT !.msgs[i].status = "VISIBLE",
              !.msgs[i].visibleAt = None,
              !.delayed = Remove(@, i),
              !.timers = Remove(@, i),
              !.visible = Append(@, i)]

\* One timer firing: a delay makes its message visible, a deadline releases.
Fire(s, i) == IF s.msgs[i].status = "DELAYED" THEN FireDelay(s, i) ELSE Release(s, i)

(***************************************************************************)
(* FireAll(s, ids): fire each of ids in turn, the first one first: a left  *)
(* fold of Fire over the sequence ids, as spec.transitions.expire loops    *)
(* over fire_delay and release.                                            *)
(***************************************************************************)
RECURSIVE FireAll(_, _)
FireAll(s, ids) ==
    IF ids = <<>> THEN s ELSE FireAll(Fire(s, Head(ids)), Tail(ids))

\* Deleted(s, r): with r live in s its message is DONE (freeing capacity, its
\* timer stopped); otherwise s unchanged (delete returns FALSE).
Deleted(s, r) ==
    IF ~LiveIn(s, r) THEN s
    ELSE [s EXCEPT !.msgs[r[1]].status = "DONE",
                   !.msgs[r[1]].deadline = None,
                   !.inFlight = Remove(@, r[1]),
                   !.timers = Remove(@, r[1])]

(***************************************************************************)
(* Changed(s, r, x, t): change_visibility(r, x) at time t.  With r live:   *)
(* x = 0 releases; otherwise the deadline becomes t + x (from now, not     *)
(* added), and the timer keeps its place in timers (the receive's, also    *)
(* for a delivery that had no deadline).  With r not live: s unchanged     *)
(* (FALSE).                                                                *)
(***************************************************************************)
Changed(s, r, x, t) ==
    IF ~LiveIn(s, r) THEN s
    ELSE IF x = 0 THEN Release(s, r[1])
    ELSE [s EXCEPT !.msgs[r[1]].deadline = t + x]

\* Cancelled(s, i): the active message i is CANCELLED; the others keep their
\* order, its receipt dies and its timer stops.
Cancelled(s, i) ==
    [s EXCEPT !.msgs[i].status = "CANCELLED",
              !.msgs[i].deadline = None,
              !.msgs[i].visibleAt = None,
              !.visible = Remove(@, i),
              !.inFlight = Remove(@, i),
              !.delayed = Remove(@, i),
              !.timers = Remove(@, i)]

(***************************************************************************)
(* The batches' folds: each entry's operator applied one after another,    *)
(* the first entry first, with nothing in between -- which is what         *)
(* BatchAtomic says a batch is.  A send_batch entry is <<id, delay>>, a    *)
(* change_visibility_batch entry <<receipt, timeout>>.                     *)
(***************************************************************************)
RECURSIVE SendAll(_, _, _)
SendAll(s, b, t) == IF b = <<>> THEN s ELSE SendAll(Sent(s, Head(b)[1], Head(b)[2], t), Tail(b), t)

RECURSIVE DeleteAll(_, _)
DeleteAll(s, rs) == IF rs = <<>> THEN s ELSE DeleteAll(Deleted(s, Head(rs)), Tail(rs))

RECURSIVE ChangeAll(_, _, _)
ChangeAll(s, cs, t) ==
    IF cs = <<>> THEN s ELSE ChangeAll(Changed(s, Head(cs)[1], Head(cs)[2], t), Tail(cs), t)

RECURSIVE CancelAll(_, _)
CancelAll(s, ids) == IF ids = <<>> THEN s ELSE CancelAll(Cancelled(s, Head(ids)), Tail(ids))

(***************************************************************************)
(*                             4. ACTIONS                                  *)
(*                                                                         *)
(* One action per operation of the API.  A rejected call (a stale receipt, *)
(* a duplicate id, a full queue) changes nothing, so it is no step at all: *)
(* the action is simply not enabled.  A batch is ONE step: the fold of its *)
(* entries.  It is enabled when one of its entries does something (a      *)
(* batch whose every entry returns FALSE changes nothing).                 *)
(***************************************************************************)

(***************************************************************************)
(* Send(i, d): a producer sends a message with the fresh id i and delay d. *)
(* Accepted iff i was never accepted here (IdsReserved) and active <       *)
(* Capacity (CapacityBound); then Sent: visible at once (d = 0) or DELAYED *)
(* until now + d.                                                          *)
(***************************************************************************)
Send(i, d) ==
    /\ i \notin Accepted
    /\ HasRoom
    /\ SetState(Sent(State, i, d, now))
    /\ UNCHANGED now

(***************************************************************************)
(* SendBatch(b): b is a sequence of entries <<id, delay>>.  All or none:   *)
(* accepted iff the ids are distinct, none was ever accepted, and there is *)
(* room for all of them (active + Len(b) <= Capacity); then each entry as  *)
(* Send, in order, in one step.  Rejected: no step (nothing changes).      *)
(***************************************************************************)
SendBatch(b) ==
    /\ \A k \in DOMAIN b : b[k][1] \notin Accepted
    /\ \A j, k \in DOMAIN b : j # k => b[j][1] # b[k][1]
    /\ RoomFor(Len(b))
    /\ SetState(SendAll(State, b, now))
    /\ UNCHANGED now

(***************************************************************************)
(* Receive(v): a consumer receives with visibility timeout v.  In ONE      *)
(* atomic step the head of visible becomes IN_FLIGHT, its attempt goes up  *)
(* by one, its deadline is now + v (None: never expires), and the delivery *)
(* gets the fresh receipt <<id, attempt>>.  (The MaxAttempt conjunct is a  *)
(* bound of the model, not of the queue.)                                  *)
(***************************************************************************)
Receive(v) ==
    /\ visible # <<>>
    /\ msgs[Head(visible)].attempt < MaxAttempt
    /\ SetState(Delivered(State, v, now))
    /\ UNCHANGED now

(***************************************************************************)
(* ReceiveBatch(n, v): the first min(n, Len(visible)) visible messages, in *)
(* FIFO order, each received as Receive(v) -- the same deadline now + v -- *)
(* in ONE step.  Enabled when something is visible (an empty batch changes *)
(* nothing).  The model bound MaxAttempt applies to every message taken.   *)
(***************************************************************************)
ReceiveBatch(n, v) ==
    /\ visible # <<>>
    /\ \A k \in 1..Min(n, Len(visible)) : msgs[visible[k]].attempt < MaxAttempt
    /\ SetState(ReceiveAll(State, Min(n, Len(visible)), v, now))
    /\ UNCHANGED now

(***************************************************************************)
(* Delete(r): acknowledge the delivery named by receipt r.  Enabled only   *)
(* if r is live; the message becomes DONE, freeing capacity.               *)
(***************************************************************************)
Delete(r) ==
    /\ Live(r)
    /\ SetState(Deleted(State, r))
    /\ UNCHANGED now

(***************************************************************************)
(* DeleteBatch(rs): each receipt of the sequence rs as Delete, in order,   *)
(* in one step (a receipt repeated in the batch is FALSE the second time). *)
(* Enabled when one of them is live.                                       *)
(***************************************************************************)
DeleteBatch(rs) ==
    /\ \E k \in DOMAIN rs : Live(rs[k])
    /\ SetState(DeleteAll(State, rs))
    /\ UNCHANGED now

(***************************************************************************)
(* Retry(r): give the delivery named by the live receipt r back at once:   *)
(* release it (to the tail of visible, or to dead).                        *)
(***************************************************************************)
Retry(r) ==
    /\ Live(r)
    /\ SetState(Release(State, r[1]))
    /\ UNCHANGED now

(***************************************************************************)
(* ChangeVisibility(r, t): with a live receipt, set the deadline to        *)
(* now + t, counted from now and not added to the old deadline; t = 0      *)
(* releases the message at once, like Retry.                               *)
(***************************************************************************)
ChangeVisibility(r, t) ==
    /\ Live(r)
    /\ SetState(Changed(State, r, t, now))
    /\ UNCHANGED now

(***************************************************************************)
(* ChangeVisibilityBatch(cs): each entry <<receipt, t>> of cs as           *)
(* ChangeVisibility, in order, in one step.  Enabled when one receipt is   *)
(* live (its first entry then acts).                                       *)
(***************************************************************************)
ChangeVisibilityBatch(cs) ==
    /\ \E k \in DOMAIN cs : Live(cs[k][1])
    /\ SetState(ChangeAll(State, cs, now))
    /\ UNCHANGED now

(***************************************************************************)
(* Cancel(i): a delayed, visible or in-flight message becomes CANCELLED.   *)
(* The other visible messages keep their order, its receipt dies (it is no *)
(* longer in flight), its timer stops, and its capacity slot is freed.     *)
(***************************************************************************)
Cancel(i) ==
    /\ i \in Accepted
    /\ IsActive(i)
    /\ SetState(Cancelled(State, i))
    /\ UNCHANGED now

(***************************************************************************)
(* Purge: every active message -- delayed, visible, in flight -- is        *)
(* CANCELLED, in one step: every live receipt dies, every timer stops.     *)
(* Dead letters are untouched.  Enabled when something is active (a purge  *)
(* of nothing returns 0 and changes nothing).                              *)
(***************************************************************************)
Purge ==
    /\ Active > 0
    /\ SetState(CancelAll(State, delayed \o visible \o inFlight))
    /\ UNCHANGED now

(***************************************************************************)
(* Expire: the sweeper runs.  Every timer due at or before now fires, one  *)
(* after the other in ExpiryOrder (the fold FireAll): a delay makes its    *)
(* message visible, a deadline releases its message.  Enabled only when    *)
(* something is due: a sweep with nothing to do is no step.  Until Expire  *)
(* runs, a passed deadline changes nothing and the old receipt stays live, *)
(* and a passed delay leaves its message DELAYED (not deliverable).        *)
(***************************************************************************)
Expire ==
    /\ ExpiryOrder # <<>>
    /\ SetState(FireAll(State, ExpiryOrder))
    /\ UNCHANGED now

(***************************************************************************)
(* Tick: the clock moves on by one unit, up to the model bound MaxTime.    *)
(* Nothing else changes: timers pass silently until the sweeper runs.      *)
(***************************************************************************)
Tick ==
    /\ now < MaxTime
    /\ now' = now + 1
    /\ UNCHANGED <<msgs, visible, inFlight, dead, delayed, timers>>

(***************************************************************************)
(*                        5. THE SPECIFICATION                             *)
(***************************************************************************)

\* The empty queue at time 0.
Init ==
    /\ msgs = [i \in {} |-> None]
    /\ visible = <<>>
    /\ inFlight = <<>>
    /\ dead = <<>>
    /\ delayed = <<>>
    /\ timers = <<>>
    /\ now = 0

\* The sizes of the batches tried: 2..MaxBatch (a batch of one entry is the
\* single action's step under another name, so it adds no behaviour).
BatchSizes == 2..MaxBatch

\* The batches a client may send: entries <<id, delay>>, ids distinct (a
\* batch repeating an id is invalid: an error before any step).
SendBatches ==
    UNION {{b \in [1..n -> Ids \X Delays] : \A j, k \in 1..n : j # k => b[j][1] # b[k][1]}
           : n \in BatchSizes}

\* The sequences of distinct ids drawn from S, of the batch sizes.
IdBatches(S) ==
    UNION {{b \in [1..n -> S] : \A j, k \in 1..n : j # k => b[j] # b[k]} : n \in BatchSizes}

\* The in-flight ids, whose live receipts the receipt-taking batches use.
InFlightIds == Range(inFlight)

\* The change_visibility batches tried: entries <<id, timeout>>
\* with distinct in-flight ids (each entry then uses the id's live receipt).
ChangeBatches ==
    UNION {{c \in [1..n -> InFlightIds \X ExtendTimeouts] :
               \A j, k \in 1..n : j # k => c[j][1] # c[k][1]} : n \in BatchSizes}

\* A batch of ids as their live receipts, and a change batch as changes.
Receipts(b) == [k \in DOMAIN b |-> ReceiptOf(b[k])]
Changes(c) == [k \in DOMAIN c |-> <<ReceiptOf(c[k][1]), c[k][2]>>]

\* Any client may call any operation at any time; the receipt-taking
\* operations are tried with the live receipt of each in-flight message
\* (a stale receipt would change nothing, so it makes no step), the batches
\* with distinct ones in every order.
Next ==
    \/ \E i \in Ids, d \in Delays : Send(i, d)
    \/ \E b \in SendBatches : SendBatch(b)
    \/ \E v \in VisibilityTimeouts : Receive(v)
    \/ \E n \in BatchSizes, v \in VisibilityTimeouts : ReceiveBatch(n, v)
    \/ \E i \in Accepted : Delete(ReceiptOf(i))
    \/ \E b \in IdBatches(InFlightIds) : DeleteBatch(Receipts(b))
    \/ \E i \in Accepted : Retry(ReceiptOf(i))
    \/ \E i \in Accepted, t \in ExtendTimeouts : ChangeVisibility(ReceiptOf(i), t)
    \/ \E c \in ChangeBatches : ChangeVisibilityBatch(Changes(c))
    \/ \E i \in Ids : Cancel(i)
    \/ Purge
    \/ Expire
    \/ Tick

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* Fairness of a well-behaved consumer: whenever a message is visible,     *)
(* someone eventually receives it, and a delivery that stays deliverable   *)
(* is eventually deleted.  Nothing forces producers, the clock or the      *)
(* sweeper: a message may sit in flight until its consumer deletes it.     *)
(***************************************************************************)
DeleteAny(i) == i \in Accepted /\ Delete(ReceiptOf(i))

Fairness ==
    /\ WF_vars(\E v \in VisibilityTimeouts : Receive(v))
    /\ \A i \in Ids : WF_vars(DeleteAny(i))

LiveSpec == Spec /\ Fairness

(***************************************************************************)
(*                  6. INVARIANTS AND STEP PROPERTIES                      *)
(*                                                                         *)
(* The names are the contract's.  An invariant that speaks of history has  *)
(* two halves, as in spec/invariants.py: a state half (an INVARIANT) and   *)
(* a step half XxxStep, an action that every step must satisfy, checked as *)
(* the temporal property XxxSteps == [][XxxStep]_vars.                     *)
(***************************************************************************)

\* Every variable has the shape the comments above promise.
TypeOK ==
    /\ Accepted \subseteq Ids
    /\ \A i \in Accepted :
         msgs[i] \in [status : Statuses, attempt : Nat, deadline : Nat \cup {None},
                      visibleAt : Nat \cup {None}]
    /\ visible \in Seq(Ids)
    /\ inFlight \in Seq(Ids)
    /\ dead \in Seq(Ids)
    /\ delayed \in Seq(Ids)
    /\ timers \in Seq(Ids)
    /\ now \in 0..MaxTime

\* No id twice in a sequence.
NoDuplicates(s) == \A j, k \in DOMAIN s : j # k => s[j] # s[k]

\* The accepted ids with a given status.
WithStatus(st) == {i \in Accepted : msgs[i].status = st}


\* OneState: every accepted id is in exactly one state.  The sequences list
\* exactly the messages of their status, once each (so no id is in two of
\* them); only an in-flight message may have a deadline, only a delayed one a
\* visibleAt; timers lists exactly the delayed and in-flight messages, and
\* agrees with delayed (send order) and inFlight (receive order) on each kind.
OneState ==
    /\ NoDuplicates(visible) /\ Range(visible) = WithStatus("VISIBLE")
    /\ NoDuplicates(inFlight) /\ Range(inFlight) = WithStatus("IN_FLIGHT")
    /\ NoDuplicates(dead) /\ Range(dead) = WithStatus("DEAD")
    /\ NoDuplicates(delayed) /\ Range(delayed) = WithStatus("DELAYED")
    /\ NoDuplicates(timers) /\ Range(timers) = Range(delayed) \cup Range(inFlight)
    /\ SelectSeq(timers, LAMBDA x : x \in Range(delayed)) = delayed
    /\ SelectSeq(timers, LAMBDA x : x \in Range(inFlight)) = inFlight
    /\ \A i \in Accepted : msgs[i].status # "IN_FLIGHT" => msgs[i].deadline = None
    /\ \A i \in Accepted : msgs[i].status # "DELAYED" => msgs[i].visibleAt = None

\* OneState, history half: terminal states are terminal.
OneStateStep ==
    \A i \in Accepted : msgs[i].status \in Terminal => msgs'[i] = msgs[i]

\* CapacityBound: active messages (delayed ones too) never exceed the capacity.
CapacityBound == Capacity = None \/ Active <= Capacity

\* OneLiveReceipt: at most one live receipt per message, and it carries the
\* current attempt (a real delivery, so attempt >= 1).  Receipts are tried
\* for every attempt from 0 to one past the current one.
OneLiveReceipt ==
    \A i \in Accepted :
        LET live == {a \in 0..(msgs[i].attempt + 1) : Live(<<i, a>>)}
        IN IF msgs[i].status = "IN_FLIGHT"
           THEN live = {msgs[i].attempt} /\ msgs[i].attempt >= 1
           ELSE live = {}

\* AttemptsCount: attempts are within bounds for each state.  In flight or
\* dead: delivered at least once; never above MaxReceives; and a dead message
\* died on the release after exactly MaxReceives deliveries.
AttemptsCount ==
    \A i \in Accepted :
        /\ msgs[i].status \in {"IN_FLIGHT", "DEAD"} => msgs[i].attempt >= 1
        /\ MaxReceives # None => msgs[i].attempt <= MaxReceives
        /\ (MaxReceives # None /\ msgs[i].status = "DEAD") => msgs[i].attempt = MaxReceives

\* AttemptsCount, history half: deliveries carry attempts 1, 2, 3, ... with
\* no gap or repeat: a step changes an attempt only by delivering the message
\* (VISIBLE or new -> IN_FLIGHT), and then by exactly one.
AttemptsCountStep ==
    \A i \in DOMAIN msgs' :
        LET prev == IF i \in Accepted THEN msgs[i].attempt ELSE 0
            delivered == /\ msgs'[i].status = "IN_FLIGHT"
                         /\ (i \notin Accepted \/ msgs[i].status = "VISIBLE")
        IN msgs'[i].attempt = IF delivered THEN prev + 1 ELSE prev

\* FifoVisible: visible is a duplicate-free sequence of VISIBLE messages.
FifoVisible ==
    /\ NoDuplicates(visible)
    /\ \A k \in DOMAIN visible : visible[k] \in Accepted
                                /\ msgs[visible[k]].status = "VISIBLE"

\* FifoVisible, history half: messages leave visible from anywhere but
\* enter only at the tail.  So the survivors keep their order and come first,
\* and every newcomer was not visible before.
FifoVisibleStep ==
    LET kept == SelectSeq(visible, LAMBDA x : x \in Range(visible'))
    IN /\ Len(kept) <= Len(visible')
       /\ SubSeq(visible', 1, Len(kept)) = kept
       /\ \A k \in (Len(kept) + 1)..Len(visible') : visible'[k] \notin Range(visible)

\* IdsReserved: every id the queue holds in any list is an accepted id.  (One
\* record per id is structural here: msgs is a function of the id.)
IdsReserved ==
    /\ Accepted \subseteq Ids
    /\ Range(visible) \cup Range(inFlight) \cup Range(dead) \cup Range(delayed)
           \cup Range(timers) \subseteq Accepted

\* IdsReserved, history half: an accepted id is never forgotten.  A second
\* acceptance would reset the record, which OneStateStep and
\* AttemptsCountStep forbid, or list the id twice, which OneState forbids.
IdsReservedStep == Accepted \subseteq DOMAIN msgs'

\* DelayHonoured: every DELAYED message has its visibleAt, is in delayed
\* (send order) and has a running timer.
DelayHonoured ==
    \A i \in WithStatus("DELAYED") :
        /\ msgs[i].visibleAt # None
        /\ i \in Range(delayed)
        /\ i \in Range(timers)

(***************************************************************************)
(* DelayHonoured, history half: a message is never VISIBLE or delivered    *)
(* before its visibleAt.  It enters DELAYED only when it is sent, with     *)
(* visibleAt in the future; it leaves DELAYED only by its delay firing at  *)
(* now >= visibleAt (to VISIBLE, never straight to IN_FLIGHT), or by       *)
(* cancel or purge (CANCELLED); while DELAYED its visibleAt never moves.   *)
(***************************************************************************)
DelayHonouredStep ==
    \A i \in DOMAIN msgs' :
        LET was == IF i \in Accepted THEN msgs[i].status ELSE "NEW"
            is == msgs'[i].status
        IN /\ is = "DELAYED" => (was = "NEW" /\ msgs'[i].visibleAt > now)
                                 \/ (was = "DELAYED" /\ msgs'[i].visibleAt = msgs[i].visibleAt)
           /\ (was = "DELAYED" /\ is # "DELAYED") =>
                 \/ is = "VISIBLE" /\ now >= msgs[i].visibleAt
                 \/ is = "CANCELLED"

(***************************************************************************)
(* BatchAtomic, history half (an action property, no history variable): a  *)
(* batch is one step, whose effect is its entries applied one after        *)
(* another to the state it began in, with nothing in between.  Stated on   *)
(* what a step does, whichever action took it:                             *)
(*   - a step that delivers k messages is k receives, one after another,   *)
(*     all with one timeout and the same now (ReceiveAll);                 *)
(*   - a step that accepts k new ids is k sends, one after another, in     *)
(*     some order, each with a delay of Delays (SendAll) -- so a send      *)
(*     batch is accepted whole, never a part of it;                        *)
(*   - a step that deletes k messages is k deletes, one after another;     *)
(*   - a step that cancels two or more messages is a purge: it leaves      *)
(*     nothing active.                                                     *)
(* Every step of Queue satisfies it (a batch action IS that fold).  It     *)
(* fails where a batch takes several steps with other steps in between:    *)
(* QueueBatchSplit.tla checks the same fold, ReceiveAll, over a history    *)
(* variable and shows the counterexample (QueueBatchSplit.cfg).            *)
(***************************************************************************)
NewlyIn(st) ==
    {i \in DOMAIN msgs' : msgs'[i].status = st /\ (i \notin Accepted \/ msgs[i].status # st)}
BatchAtomicStep ==
    LET got == {i \in NewlyIn("IN_FLIGHT") : i \in Accepted}
        new == DOMAIN msgs' \ Accepted
        done == NewlyIn("DONE")
    IN /\ got # {} =>
            \E v \in VisibilityTimeouts : State' = ReceiveAll(State, Cardinality(got), v, now)
       /\ new # {} =>
            \E b \in [1..Cardinality(new) -> new \X Delays] : State' = SendAll(State, b, now)
       /\ done # {} =>
            \E b \in [1..Cardinality(done) -> done] :
                State' = DeleteAll(State, Receipts(b))
       /\ Cardinality(NewlyIn("CANCELLED")) >= 2 => \A i \in DOMAIN msgs' :
            msgs'[i].status \notin {"DELAYED", "VISIBLE", "IN_FLIGHT"}

\* All state halves together.
Invariants ==
    /\ OneState /\ CapacityBound /\ OneLiveReceipt
    /\ AttemptsCount /\ FifoVisible /\ IdsReserved /\ DelayHonoured

\* The step halves as temporal properties (TLC: "action properties").
OneStateSteps == [][OneStateStep]_vars
AttemptsCountSteps == [][AttemptsCountStep]_vars
FifoVisibleSteps == [][FifoVisibleStep]_vars
IdsReservedSteps == [][IdsReservedStep]_vars
DelayHonouredSteps == [][DelayHonouredStep]_vars
BatchAtomicSteps == [][BatchAtomicStep]_vars

(***************************************************************************)
(* ExpireComplete: a sweep fires EVERY timer due at its time, so after a   *)
(* step of the sweep action A nothing is due (the contract: "every due     *)
(* timer fires ... in one atomic step").  It is a property of the action,  *)
(* not of the data: an Expire that fired one timer per step would reach    *)
(* only legal states, every invariant above would hold, and TLC would      *)
(* accept it.  QueueExpireOne.cfg is that version, caught by this.         *)
(***************************************************************************)
ExpireCompleteStep(A) == A => ExpiryOrder' = <<>>
ExpireCompleteSteps == [][ExpireCompleteStep(Expire)]_vars

(***************************************************************************)
(*                     7. LIVENESS AND THEOREMS                            *)
(***************************************************************************)

\* Every sent message eventually ends DONE, CANCELLED or DEAD.  Holds under
\* LiveSpec when MaxReceives is set and <= MaxAttempt (so the model bound
\* MaxAttempt never stops a visible message from being received) and no
\* send is delayed (nothing forces the sweeper that fires a delay); see
\* QueueLiveness.cfg.
EveryMessageEnds ==
    \A i \in Ids : (i \in Accepted) ~> (i \in Accepted /\ msgs[i].status \in Terminal)

THEOREM Spec => []TypeOK
THEOREM Spec => []Invariants
THEOREM Spec => OneStateSteps /\ AttemptsCountSteps /\ FifoVisibleSteps /\ IdsReservedSteps
                /\ DelayHonouredSteps /\ BatchAtomicSteps
THEOREM (MaxReceives \in Nat /\ MaxReceives <= MaxAttempt /\ Delays = {0})
            => (LiveSpec => EveryMessageEnds)
=============================================================================
