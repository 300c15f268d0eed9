------------------------------- MODULE Queue -------------------------------
(***************************************************************************)
(* An in-memory queue with Amazon SQS semantics: the abstract spec.        *)
(*                                                                         *)
(* This module is the contract (../shared/contract.md, section 2) written  *)
(* in TLA+. It is the twin of the Python spec: every action here has a     *)
(* function of the same name in spec/transitions.py (Send is send, Receive *)
(* is receive, ...), and spec/explore.py walks the same graph as TLC does  *)
(* with this module.  model_tests/tests/test_equivalence.py checks that    *)
(* claim.                                                                  *)
(*                                                                         *)
(* How to read it, top to bottom:                                          *)
(*   1. constants: the bounds that make the model finite;                  *)
(*   2. variables: the queue's state and a discrete clock;                 *)
(*   3. helpers: statuses, receipts, and *release*, the one rule that      *)
(*      Retry, ChangeVisibility(r, 0) and Expire all apply;                *)
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
    Capacity,           \* bound on active (visible + in-flight) messages, or None
    MaxReceives,        \* a release after this many deliveries dead-letters, or None
    MaxAttempt,         \* MODEL bound: Receive is enabled only while the head has had
                        \* fewer deliveries than this (keeps the state space finite)
    VisibilityTimeouts, \* the timeouts a Receive may ask for; None = never expires
    ExtendTimeouts,     \* the timeouts ChangeVisibility may set (0 releases at once)
    MaxTime,            \* MODEL bound: the clock runs 0, 1, ..., MaxTime
    None                \* a model value: "no capacity bound", "no dead-lettering",
                        \* "no deadline"; it is not a number

ASSUME None \notin Nat
ASSUME Capacity \in Nat \cup {None}
ASSUME MaxReceives \in (Nat \ {0}) \cup {None}
ASSUME MaxAttempt \in Nat \ {0}
ASSUME VisibilityTimeouts \subseteq Nat \cup {None}
ASSUME ExtendTimeouts \subseteq Nat
ASSUME MaxTime \in Nat

(***************************************************************************)
(*                             2. VARIABLES                                *)
(*                                                                         *)
(* The state is redundant on purpose, exactly as in spec/state.py: each    *)
(* message carries its own status, and the three sequences say the same    *)
(* thing again, in order.  The invariants check that both views agree.     *)
(***************************************************************************)
VARIABLES
    msgs,      \* every accepted message: a function from accepted ids to records
               \* [status, attempt, deadline]; DOMAIN msgs = the ids ever accepted
    visible,   \* ids of VISIBLE messages, head first, in the order they (re-)entered
    inFlight,  \* ids of IN_FLIGHT messages in the order they were received; this
               \* order breaks ties between equal deadlines when Expire runs
    dead,      \* ids of DEAD messages, in the order they died
    now        \* the discrete clock: time is an input of the queue, never read by it

vars == <<msgs, visible, inFlight, dead, now>>

(***************************************************************************)
(*                             3. HELPERS                                  *)
(***************************************************************************)

\* The five states of a message; the last three are terminal.
Statuses == {"VISIBLE", "IN_FLIGHT", "DONE", "CANCELLED", "DEAD"}
Terminal == {"DONE", "CANCELLED", "DEAD"}

\* The ids this queue has ever accepted (reserved for the queue's lifetime).
Accepted == DOMAIN msgs

\* The set of elements of a sequence, and a sequence without one element.
Range(s) == {s[k] : k \in DOMAIN s}
Remove(s, i) == SelectSeq(s, LAMBDA x : x # i)

\* Active messages count against capacity: visible and in-flight ones.
IsActive(i) == msgs[i].status \in {"VISIBLE", "IN_FLIGHT"}
Active == Cardinality({i \in Accepted : IsActive(i)})

\* Room for one more active message.  (An IF, not a disjunction: inside an
\* action TLC explores both sides of \/, and Active < None is an error.)
HasRoom == IF Capacity = None THEN TRUE ELSE Active < Capacity

\* A receipt names one delivery: <<id, attempt>>.  It is live while its
\* message is IN_FLIGHT with exactly that attempt; only a live receipt acts.
Live(r) == /\ r[1] \in Accepted
           /\ msgs[r[1]].status = "IN_FLIGHT"
           /\ msgs[r[1]].attempt = r[2]

\* The receipt of the current delivery of an accepted message.
ReceiptOf(i) == <<i, msgs[i].attempt>>

\* The dead-letter policy: releasing a message delivered n times kills it iff
\* n >= MaxReceives (never, if MaxReceives is None).
Dies(n) == MaxReceives # None /\ n >= MaxReceives

\* An in-flight message whose deadline has passed (Expire would release it).
IsDue(i) == /\ msgs[i].status = "IN_FLIGHT"
            /\ msgs[i].deadline # None
            /\ msgs[i].deadline <= now

(***************************************************************************)
(* The order in which Expire releases the due messages: by deadline, ties  *)
(* broken by receive order.  Selection sort of the due ids taken in        *)
(* inFlight order, always picking the FIRST one of the earliest deadline,  *)
(* which is what makes the sort stable.                                    *)
(***************************************************************************)
RECURSIVE ByDeadline(_)
ByDeadline(s) ==
    IF s = <<>> THEN <<>>
    ELSE LET d(k) == msgs[s[k]].deadline
             first == CHOOSE k \in 1..Len(s) :
                        \A j \in 1..Len(s) : d(k) < d(j) \/ (d(k) = d(j) /\ k <= j)
             rest == [j \in 1..(Len(s) - 1) |-> IF j < first THEN s[j] ELSE s[j + 1]]
         IN <<s[first]>> \o ByDeadline(rest)

ExpiryOrder == ByDeadline(SelectSeq(inFlight, IsDue))

(***************************************************************************)
(* The queue's data -- everything but the clock, what spec.State holds --  *)
(* as one record, so that a release can be a function from a state to a    *)
(* state: applied once by Retry and ChangeVisibility, folded over the due  *)
(* messages by Expire.  SetState(s) is the step whose new data is s.       *)
(***************************************************************************)
State == [msgs |-> msgs, visible |-> visible, inFlight |-> inFlight, dead |-> dead]

SetState(s) ==
    /\ msgs' = s.msgs
    /\ visible' = s.visible
    /\ inFlight' = s.inFlight
    /\ dead' = s.dead

(***************************************************************************)
(* Release(s, i): the state s with its in-flight message i taken back.  If *)
(* it has been delivered MaxReceives times it is dead-lettered (appended   *)
(* to dead, freeing capacity); otherwise it is appended to the TAIL of     *)
(* visible (keeping its capacity slot): it never jumps back to its old     *)
(* place.  The attempt counter is kept: the next delivery is attempt + 1.  *)
(* This is the only definition of the release: Retry and                   *)
(* ChangeVisibility(r, 0) apply it once, Expire folds it (ReleaseAll).     *)
(***************************************************************************)
Release(s, i) ==
    LET dies == Dies(s.msgs[i].attempt)
    IN [s EXCEPT !.msgs[i].status = IF dies THEN "DEAD" ELSE "VISIBLE",
                 !.msgs[i].deadline = None,
                 !.inFlight = Remove(@, i),
                 !.visible = IF dies THEN @ ELSE Append(@, i),
                 !.dead = IF dies THEN Append(@, i) ELSE @]

(***************************************************************************)
(* ReleaseAll(s, ids): Release each of ids in turn, the first one first: a *)
(* left fold of Release over the sequence ids, as spec.transitions.expire  *)
(* loops over release.                                                     *)
(***************************************************************************)
RECURSIVE ReleaseAll(_, _)
ReleaseAll(s, ids) ==
    IF ids = <<>> THEN s ELSE ReleaseAll(Release(s, Head(ids)), Tail(ids))

(***************************************************************************)
(*                             4. ACTIONS                                  *)
(*                                                                         *)
(* One action per operation of the API.  A rejected call (a stale receipt, *)
(* a duplicate id, a full queue) changes nothing, so it is no step at all: *)
(* the action is simply not enabled.                                       *)
(***************************************************************************)

(***************************************************************************)
(* Send(i): a producer sends a message with the fresh id i.  Accepted iff  *)
(* i was never accepted here (IdsReserved) and active < Capacity           *)
(* (CapacityBound).  The message joins the tail of visible, attempt 0.     *)
(***************************************************************************)
Send(i) ==
    /\ i \notin Accepted
    /\ HasRoom
    /\ msgs' = [j \in Accepted \cup {i} |->
                  IF j = i THEN [status |-> "VISIBLE", attempt |-> 0, deadline |-> None]
                  ELSE msgs[j]]
    /\ visible' = Append(visible, i)
    /\ UNCHANGED <<inFlight, dead, now>>

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
    /\ LET i == Head(visible)
       IN /\ msgs' = [msgs EXCEPT
                        ![i].status = "IN_FLIGHT",
                        ![i].attempt = @ + 1,
                        ![i].deadline = IF v = None THEN None ELSE now + v]
          /\ visible' = Tail(visible)
          /\ inFlight' = Append(inFlight, i)
    /\ UNCHANGED <<dead, now>>

(***************************************************************************)
(* Delete(r): acknowledge the delivery named by receipt r.  Enabled only   *)
(* if r is live; the message becomes DONE, freeing capacity.               *)
(***************************************************************************)
Delete(r) ==
    /\ Live(r)
    /\ msgs' = [msgs EXCEPT ![r[1]].status = "DONE", ![r[1]].deadline = None]
    /\ inFlight' = Remove(inFlight, r[1])
    /\ UNCHANGED <<visible, dead, now>>

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
    /\ IF t = 0
       THEN SetState(Release(State, r[1]))
       ELSE /\ msgs' = [msgs EXCEPT ![r[1]].deadline = now + t]
            /\ UNCHANGED <<visible, inFlight, dead>>
    /\ UNCHANGED now

(***************************************************************************)
(* Cancel(i): a visible or in-flight message becomes CANCELLED.  The other *)
(* visible messages keep their order, its receipt dies (it is no longer    *)
(* in flight), and its capacity slot is freed.                             *)
(***************************************************************************)
Cancel(i) ==
    /\ i \in Accepted
    /\ IsActive(i)
    /\ msgs' = [msgs EXCEPT ![i].status = "CANCELLED", ![i].deadline = None]
    /\ visible' = Remove(visible, i)
    /\ inFlight' = Remove(inFlight, i)
    /\ UNCHANGED <<dead, now>>

(***************************************************************************)
(* Expire: the sweeper runs.  Every in-flight message whose deadline is    *)
(* <= now is released, one Release after the other, in ExpiryOrder (the    *)
(* fold ReleaseAll).  Enabled only when something is due: a sweep with     *)
(* nothing to do is no step.  Until Expire runs, a passed deadline changes *)
(* nothing and the old receipt stays live.                                 *)
(***************************************************************************)
Expire ==
    /\ ExpiryOrder # <<>>
    /\ SetState(ReleaseAll(State, ExpiryOrder))
    /\ UNCHANGED now

(***************************************************************************)
(* Tick: the clock moves on by one unit, up to the model bound MaxTime.    *)
(* Nothing else changes: deadlines pass silently until the sweeper runs.   *)
(***************************************************************************)
Tick ==
    /\ now < MaxTime
    /\ now' = now + 1
    /\ UNCHANGED <<msgs, visible, inFlight, dead>>

(***************************************************************************)
(*                        5. THE SPECIFICATION                             *)
(***************************************************************************)

\* The empty queue at time 0.
Init ==
    /\ msgs = [i \in {} |-> None]
    /\ visible = <<>>
    /\ inFlight = <<>>
    /\ dead = <<>>
    /\ now = 0

\* Any client may call any operation at any time; the receipt-taking
\* operations are tried with the live receipt of each in-flight message
\* (a stale receipt would change nothing, so it makes no step).
Next ==
    \/ \E i \in Ids : Send(i)
    \/ \E v \in VisibilityTimeouts : Receive(v)
    \/ \E i \in Accepted : Delete(ReceiptOf(i))
    \/ \E i \in Accepted : Retry(ReceiptOf(i))
    \/ \E i \in Accepted, t \in ExtendTimeouts : ChangeVisibility(ReceiptOf(i), t)
    \/ \E i \in Ids : Cancel(i)
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
         msgs[i] \in [status : Statuses, attempt : Nat, deadline : Nat \cup {None}]
    /\ visible \in Seq(Ids)
    /\ inFlight \in Seq(Ids)
    /\ dead \in Seq(Ids)
    /\ now \in 0..MaxTime

\* No id twice in a sequence.
NoDuplicates(s) == \A j, k \in DOMAIN s : j # k => s[j] # s[k]

\* The accepted ids with a given status.
WithStatus(st) == {i \in Accepted : msgs[i].status = st}

\* OneState: every accepted id is in exactly one state.  The sequences list
\* exactly the messages of their status, once each (so no id is in two of
\* them), and only an in-flight message may have a deadline.
OneState ==
    /\ NoDuplicates(visible) /\ Range(visible) = WithStatus("VISIBLE")
    /\ NoDuplicates(inFlight) /\ Range(inFlight) = WithStatus("IN_FLIGHT")
    /\ NoDuplicates(dead) /\ Range(dead) = WithStatus("DEAD")
    /\ \A i \in Accepted : msgs[i].status # "IN_FLIGHT" => msgs[i].deadline = None

\* OneState, history half: terminal states are terminal.
OneStateStep ==
    \A i \in Accepted : msgs[i].status \in Terminal => msgs'[i] = msgs[i]

\* CapacityBound: active messages never exceed the capacity.
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
    /\ Range(visible) \cup Range(inFlight) \cup Range(dead) \subseteq Accepted

\* IdsReserved, history half: an accepted id is never forgotten.  A second
\* acceptance would reset the record, which OneStateStep and
\* AttemptsCountStep forbid, or list the id twice, which OneState forbids.
IdsReservedStep == Accepted \subseteq DOMAIN msgs'

\* All state halves together.
Invariants ==
    /\ OneState /\ CapacityBound /\ OneLiveReceipt
    /\ AttemptsCount /\ FifoVisible /\ IdsReserved

\* The step halves as temporal properties (TLC: "action properties").
OneStateSteps == [][OneStateStep]_vars
AttemptsCountSteps == [][AttemptsCountStep]_vars
FifoVisibleSteps == [][FifoVisibleStep]_vars
IdsReservedSteps == [][IdsReservedStep]_vars

(***************************************************************************)
(*                     7. LIVENESS AND THEOREMS                            *)
(***************************************************************************)

\* Every sent message eventually ends DONE, CANCELLED or DEAD.  Holds under
\* LiveSpec when MaxReceives is set and <= MaxAttempt (so the model bound
\* MaxAttempt never stops a visible message from being received); see
\* QueueLiveness.cfg.
EveryMessageEnds ==
    \A i \in Ids : (i \in Accepted) ~> (i \in Accepted /\ msgs[i].status \in Terminal)

THEOREM Spec => []TypeOK
THEOREM Spec => []Invariants
THEOREM Spec => OneStateSteps /\ AttemptsCountSteps /\ FifoVisibleSteps /\ IdsReservedSteps
THEOREM (MaxReceives \in Nat /\ MaxReceives <= MaxAttempt) => (LiveSpec => EveryMessageEnds)
=============================================================================
