------------------------------ MODULE QueueFifo ------------------------------
(***************************************************************************)
(* A FIFO queue (the SQS `.fifo' queue type): the abstract spec of the     *)
(* contract's section 2b, built on Queue.tla.                              *)
(*                                                                         *)
(* What it shares with Queue, and how: Queue is INSTANCEd as Q with the    *)
(* same constants and variables, so every operator of Queue is reused as   *)
(* it is -- the message records, receipts, timers and ExpiryOrder, each    *)
(* operation's effect (Sent, Delivered, Release, Deleted, Changed,         *)
(* Cancelled, FireAll and the batch folds), and the invariants.  A FIFO    *)
(* queue differs in three places only, each written here once:             *)
(*   1. order: `sent' lists the accepted ids in send order, and visible is *)
(*      always visible's ids in that order (Reorder).  A Queue operator    *)
(*      that appends to the tail of visible (Release, FireDelay) is        *)
(*      followed by Reorder, which puts the message back in its place in   *)
(*      its group (GroupOrder).  Removing from visible keeps the order, so *)
(*      Delete, Cancel and Purge are Queue's;                              *)
(*   2. receive: a receive scans visible in send order, skipping locked    *)
(*      groups (a group with an IN_FLIGHT message), and takes the first    *)
(*      (Deliverable); a batch takes that group's visible messages in send *)
(*      order, then the next group's (BatchOrder).  Each delivery is Q's   *)
(*      Delivered applied to the chosen message (Take);                    *)
(*   3. deduplication: a send whose dedup id (the constant DedupId) was    *)
(*      accepted less than DedupInterval ago is a duplicate: it changes    *)
(*      nothing, so it is no step.  `dedup' holds, per dedup id, the       *)
(*      latest acceptance [dd, id, at] (spec State.dedup).  Two ids with   *)
(*      one dedup id model a producer's retry of one send.                 *)
(* A delay is the queue's, not a send's: Delays is one value.  Names are   *)
(* Queue's (Send, Receive, ...), as in the spec and impl.FifoQueue.        *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS Ids, Capacity, MaxReceives, MaxAttempt, VisibilityTimeouts, ExtendTimeouts,
          MaxTime, Delays, MaxBatch, None,
          Groups,         \* the message groups: a partition of Ids, e.g. {{a, b}, {c}}
          DedupSets,      \* the ids sent with one dedup id, e.g. {{a, b}}: b is a's retry;
                          \* an id in none of them is sent without a dedup id
          DedupInterval   \* the dedup window, in clock units (measured from the acceptance)

ASSUME \A i \in Ids : Cardinality({G \in Groups : i \in G}) = 1
ASSUME \A i \in Ids : Cardinality({D \in DedupSets : i \in D}) <= 1
ASSUME DedupInterval \in Nat \ {0}
ASSUME Cardinality(Delays) = 1   \* the queue's delay; no per-send delay on FIFO queues

VARIABLES msgs, visible, inFlight, dead, delayed, timers, now,
          sent,    \* the accepted ids in send order (spec Msg.sent is the index - 1)
          dedup    \* the latest acceptance per dedup id: a set of [dd, id, at], one per dd

Q == INSTANCE Queue

\* The constant maps of the contract: id -> its group, id -> its dedup id (or
\* None).  A group, and a dedup id, is named by the set of its ids.
Group == [i \in Ids |-> CHOOSE G \in Groups : i \in G]
DedupId == [i \in Ids |-> IF \E D \in DedupSets : i \in D
                          THEN CHOOSE D \in DedupSets : i \in D ELSE None]

vars == <<msgs, visible, inFlight, dead, delayed, timers, now, sent, dedup>>
fifoVars == <<sent, dedup>>

Range(s) == Q!Range(s)
Accepted == Q!Accepted
State == Q!State
SetState(s) == Q!SetState(s)
Live(r) == Q!Live(r)
ReceiptOf(i) == Q!ReceiptOf(i)
QueueDelay == CHOOSE d \in Delays : TRUE

(***************************************************************************)
(*                        ORDER, LOCKS, DEDUPLICATION                      *)
(***************************************************************************)

\* j was sent before i (both accepted).
Before(j, i) == \E a, b \in DOMAIN sent : a < b /\ sent[a] = j /\ sent[b] = i

\* s with visible put back in send order: a released or delay-fired message
\* returns to its place in its group, never to the tail.
Reorder(s) == [s EXCEPT !.visible = SelectSeq(sent, LAMBDA x : x \in Range(s.visible))]

\* A group is locked while one of its messages is in flight.
LockedIn(s, g) == \E j \in Range(s.inFlight) : Group[j] = g

\* The visible messages a receive may take from s, in send order.
Deliverable(s) == SelectSeq(s.visible, LAMBDA x : ~LockedIn(s, Group[x]))

\* A sequence of deliverable ids regrouped: the first one's group (in send
\* order), then the next group's, ... : the order a batch takes them in.
RECURSIVE ByGroup(_)
ByGroup(d) ==
    IF d = <<>> THEN <<>>
    ELSE LET g == Group[Head(d)]
         IN SelectSeq(d, LAMBDA x : Group[x] = g) \o ByGroup(SelectSeq(d, LAMBDA x : Group[x] # g))

\* What a receive_batch(n) takes from s, in delivery order (a receive: n = 1).
BatchOrder(s, n) == LET b == ByGroup(Deliverable(s)) IN SubSeq(b, 1, Q!Min(n, Len(b)))

\* Deliver the visible message i: Queue's Delivered with i at the head.
Take(s, i, v, t) == Q!Delivered([s EXCEPT !.visible = <<i>> \o Q!Remove(@, i)], v, t)

RECURSIVE TakeAll(_, _, _, _)
TakeAll(s, b, v, t) == IF b = <<>> THEN s ELSE TakeAll(Take(s, Head(b), v, t), Tail(b), v, t)

\* A send of i now is a duplicate: its dedup id was accepted less than
\* DedupInterval ago (whatever became of that message).
IsDuplicate(i) ==
    /\ DedupId[i] # None
    /\ \E r \in dedup : r.dd = DedupId[i] /\ now < r.at + DedupInterval

\* The dedup records after accepting the ids of the sequence b now.
Recorded(b) ==
    LET ds == {DedupId[b[k]] : k \in DOMAIN b} \ {None}
    IN {r \in dedup : r.dd \notin ds}
         \cup {[dd |-> DedupId[b[k]], id |-> b[k], at |-> now] : k \in {k \in DOMAIN b : DedupId[b[k]] # None}}

(***************************************************************************)
(*                               ACTIONS                                   *)
(***************************************************************************)

\* Send(i): a producer sends the message i (its group is Group[i], its dedup
\* id DedupId[i]).  A duplicate changes nothing (no step), whatever i and
\* the room; otherwise as Queue's Send with the queue's delay, i last in
\* send order, its acceptance recorded under its dedup id.
Send(i) ==
    /\ ~IsDuplicate(i)
    /\ i \notin Accepted
    /\ Q!HasRoom
    /\ SetState(Q!Sent(State, i, QueueDelay, now))
    /\ sent' = Append(sent, i)
    /\ dedup' = Recorded(<<i>>)
    /\ UNCHANGED now

\* SendBatch(b): ids distinct, dedup ids distinct; the duplicates are reported
\* as such, the others (`fresh') are accepted together or not at all.
SendBatch(b) ==
    LET fresh == SelectSeq(b, LAMBDA i : ~IsDuplicate(i))
    IN /\ \A j, k \in DOMAIN b : j # k => b[j] # b[k]
       /\ \A j, k \in DOMAIN b : j # k => DedupId[b[j]] = None \/ DedupId[b[j]] # DedupId[b[k]]
       /\ fresh # <<>>
       /\ \A k \in DOMAIN fresh : fresh[k] \notin Accepted
       /\ Q!RoomFor(Len(fresh))
       /\ SetState(Q!SendAll(State, [k \in DOMAIN fresh |-> <<fresh[k], QueueDelay>>], now))
       /\ sent' = sent \o fresh
       /\ dedup' = Recorded(fresh)
       /\ UNCHANGED now

\* Receive(v): the first deliverable message in send order, as Queue's.
Receive(v) ==
    /\ Deliverable(State) # <<>>
    /\ msgs[Head(Deliverable(State))].attempt < MaxAttempt
    /\ SetState(Take(State, Head(Deliverable(State)), v, now))
    /\ UNCHANGED <<now, sent, dedup>>

\* ReceiveBatch(n, v): BatchOrder's messages in one step, one deadline.
ReceiveBatch(n, v) ==
    LET b == BatchOrder(State, n)
    IN /\ b # <<>>
       /\ \A k \in DOMAIN b : msgs[b[k]].attempt < MaxAttempt
       /\ SetState(TakeAll(State, b, v, now))
       /\ UNCHANGED <<now, sent, dedup>>

Delete(r) == Q!Delete(r) /\ UNCHANGED fifoVars
DeleteBatch(rs) == Q!DeleteBatch(rs) /\ UNCHANGED fifoVars

\* Retry, ChangeVisibility(_, 0) and Expire release to the group's place.
Retry(r) ==
    /\ Live(r)
    /\ SetState(Reorder(Q!Release(State, r[1])))
    /\ UNCHANGED <<now, sent, dedup>>

ChangeVisibility(r, t) ==
    /\ Live(r)
    /\ SetState(Reorder(Q!Changed(State, r, t, now)))
    /\ UNCHANGED <<now, sent, dedup>>

ChangeVisibilityBatch(cs) ==
    /\ \E k \in DOMAIN cs : Live(cs[k][1])
    /\ SetState(Reorder(Q!ChangeAll(State, cs, now)))
    /\ UNCHANGED <<now, sent, dedup>>

Cancel(i) == Q!Cancel(i) /\ UNCHANGED fifoVars
Purge == Q!Purge /\ UNCHANGED fifoVars

\* The sweeper: Queue's fold, then everything released or made visible goes
\* to its place (the fold never looks at visible's order, so reordering once
\* at the end is reordering after every timer).
Expire ==
    /\ Q!ExpiryOrder # <<>>
    /\ SetState(Reorder(Q!FireAll(State, Q!ExpiryOrder)))
    /\ UNCHANGED <<now, sent, dedup>>

Tick == Q!Tick /\ UNCHANGED fifoVars

(***************************************************************************)
(*                          THE SPECIFICATION                              *)
(***************************************************************************)
Init == Q!Init /\ sent = <<>> /\ dedup = {}

SendBatches == Q!IdBatches(Ids)

Next ==
    \/ \E i \in Ids : Send(i)
    \/ \E b \in SendBatches : SendBatch(b)
    \/ \E v \in VisibilityTimeouts : Receive(v)
    \/ \E n \in Q!BatchSizes, v \in VisibilityTimeouts : ReceiveBatch(n, v)
    \/ \E i \in Accepted : Delete(ReceiptOf(i))
    \/ \E b \in Q!IdBatches(Q!InFlightIds) : DeleteBatch(Q!Receipts(b))
    \/ \E i \in Accepted : Retry(ReceiptOf(i))
    \/ \E i \in Accepted, t \in ExtendTimeouts : ChangeVisibility(ReceiptOf(i), t)
    \/ \E c \in Q!ChangeBatches : ChangeVisibilityBatch(Q!Changes(c))
    \/ \E i \in Ids : Cancel(i)
    \/ Purge
    \/ Expire
    \/ Tick

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(*                        INVARIANTS AND STEP PROPERTIES                   *)
(*                                                                         *)
(* Queue's, as they are (FifoVisible excepted: a released message does     *)
(* not join the tail), plus GroupOrder and DedupWindow.                    *)
(***************************************************************************)
TypeOK ==
    /\ Q!TypeOK
    /\ sent \in Seq(Ids)
    /\ \A r \in dedup : r \in [dd : DedupSets, id : Ids, at : 0..MaxTime]

OneState == Q!OneState /\ Q!NoDuplicates(sent) /\ Range(sent) = Accepted
CapacityBound == Q!CapacityBound
OneLiveReceipt == Q!OneLiveReceipt
AttemptsCount == Q!AttemptsCount
IdsReserved == Q!IdsReserved
DelayHonoured == Q!DelayHonoured

\* GroupOrder, state half: visible is in send order (so each group's visible
\* messages are, and a released message is back in its place).
GroupOrder == visible = SelectSeq(sent, LAMBDA x : x \in Range(visible))

(***************************************************************************)
(* GroupOrder, step half: a step that delivers messages (`got', VISIBLE -> *)
(* IN_FLIGHT) takes none of a group locked before it; from each group it   *)
(* touches, that group's earliest non-terminal messages in send order; the *)
(* groups in the order of their earliest visible message, with no          *)
(* deliverable group skipped; and every group but the last one exhausted.  *)
(***************************************************************************)
FirstVisible(g) == CHOOSE i \in Range(visible) : Group[i] = g
                        /\ \A j \in Range(visible) : Group[j] = g => ~Before(j, i)
GroupOrderStep ==
    LET got == {i \in Accepted : msgs[i].status = "VISIBLE" /\ msgs'[i].status = "IN_FLIGHT"}
        G == {Group[i] : i \in got}
        open == {Group[i] : i \in Range(Deliverable(State))}
        last == CHOOSE g \in G : \A h \in G : ~Before(FirstVisible(g), FirstVisible(h))
    IN got # {} =>
        /\ \A g \in G : ~LockedIn(State, g)
        /\ \A i \in got, j \in Accepted :
               (Group[j] = Group[i] /\ Before(j, i) /\ msgs[j].status \notin Q!Terminal)
                   => j \in got
        /\ \A g \in G, h \in open : Before(FirstVisible(h), FirstVisible(g)) => h \in G
        /\ \A g \in G \ {last} : \A i \in Range(visible) : Group[i] = g => i \in got

\* DedupWindow, state half: one record per dedup id, naming an accepted
\* message of that dedup id, accepted at the recorded time or before now.
DedupWindow ==
    \A r, q \in dedup :
        /\ r.id \in Accepted /\ DedupId[r.id] = r.dd /\ r.at <= now
        /\ r.dd = q.dd => r = q

\* DedupWindow, step half: a message accepted with dedup id d had no earlier
\* acceptance of d within DedupInterval, and its acceptance is recorded now;
\* records change only by an acceptance.
DedupWindowStep ==
    LET new == DOMAIN msgs' \ Accepted
    IN /\ \A i \in new : DedupId[i] # None =>
              /\ ~\E r \in dedup : r.dd = DedupId[i] /\ now < r.at + DedupInterval
              /\ [dd |-> DedupId[i], id |-> i, at |-> now] \in dedup'
       /\ new = {} => dedup' = dedup

(***************************************************************************)
(* NoDuplicateFromRetry: a producer's retry (another id with the same      *)
(* dedup id) is never delivered besides the original: no two messages of   *)
(* one dedup id have both been delivered.  Holds while the retries come    *)
(* within DedupInterval (QueueFifoDedup.cfg); FAILS when a retry comes     *)
(* after it (QueueFifoRetryLate.cfg).                                      *)
(***************************************************************************)
NoDuplicateFromRetry ==
    \A i, j \in Accepted :
        (i # j /\ DedupId[i] # None /\ DedupId[i] = DedupId[j])
            => ~(msgs[i].attempt >= 1 /\ msgs[j].attempt >= 1)

OneStateSteps == [][Q!OneStateStep]_vars
AttemptsCountSteps == [][Q!AttemptsCountStep]_vars
IdsReservedSteps == [][Q!IdsReservedStep]_vars
DelayHonouredSteps == [][Q!DelayHonouredStep]_vars
GroupOrderSteps == [][GroupOrderStep]_vars

\* Queue's ExpireComplete, for this module's Expire: after a sweep nothing is due.
ExpireCompleteSteps == [][Expire => Q!ExpiryOrder' = <<>>]_vars
DedupWindowSteps == [][DedupWindowStep]_vars

Invariants ==
    /\ OneState /\ CapacityBound /\ OneLiveReceipt /\ AttemptsCount /\ IdsReserved
    /\ DelayHonoured /\ GroupOrder /\ DedupWindow

THEOREM Spec => []TypeOK /\ []Invariants
THEOREM Spec => OneStateSteps /\ AttemptsCountSteps /\ IdsReservedSteps /\ DelayHonouredSteps
                /\ GroupOrderSteps /\ DedupWindowSteps
=============================================================================
