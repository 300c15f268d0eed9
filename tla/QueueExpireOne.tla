--------------------------- MODULE QueueExpireOne ---------------------------
(***************************************************************************)
(* BROKEN ON PURPOSE -- a sweeper that fires one due timer per step.       *)
(*                                                                         *)
(* ExpireOne fires only the first timer of ExpiryOrder; the next one waits *)
(* for another step of the sweep.  Every state it reaches is a state the   *)
(* real queue can reach too (the remaining due timer is just "not swept    *)
(* yet", as after a Tick), so every invariant of Queue holds and, without  *)
(* ExpireComplete, TLC accepts this model: only the equivalence of TLC's   *)
(* graph with the Python spec's (tests) would notice.  ExpireComplete, a   *)
(* property of the sweep action, catches it: after a sweep step a timer is *)
(* still due (QueueExpireOne.cfg, with two deliveries due at once).  The   *)
(* fix is Queue's Expire: FireAll over the whole ExpiryOrder, one step.    *)
(***************************************************************************)
EXTENDS Queue

\* The broken sweep: the first due timer only.
ExpireOne ==
    /\ ExpiryOrder # <<>>
    /\ SetState(FireAll(State, <<Head(ExpiryOrder)>>))
    /\ UNCHANGED now

\* Queue's Next with ExpireOne in Expire's place.
OneNext ==
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
    \/ ExpireOne
    \/ Tick

OneSpec == Init /\ [][OneNext]_vars

\* The same property as Queue's ExpireCompleteSteps, for this sweep action.
ExpireOneCompleteSteps == [][ExpireCompleteStep(ExpireOne)]_vars

THEOREM OneSpec => []Invariants          \* holds: the states are all legal
THEOREM ~(OneSpec => ExpireOneCompleteSteps)   \* TLC's counterexample
=============================================================================
