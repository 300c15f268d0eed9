--------------------------- MODULE QueueFifoGraph ---------------------------
(***************************************************************************)
(* QueueFifo with every step labelled by the action AND its parameters:    *)
(* QueueGraph.tla for FIFO queues, for the equivalence test on FIFO bounds *)
(* (model_tests/tests/test_equivalence.py).  One history variable,         *)
(* lastAction, carries the label of the step that led to the state; it     *)
(* never influences a step.  A FIFO send's label is QueueFifo's Send(i):   *)
(* <<"Send", a>> (no delay of its own; group and dedup id are functions of *)
(* the id, the constants Groups and DedupSets), a send batch's the ids.    *)
(***************************************************************************)
EXTENDS Naturals, Sequences

CONSTANTS Ids, Capacity, MaxReceives, MaxAttempt, VisibilityTimeouts,
          ExtendTimeouts, MaxTime, Delays, MaxBatch, None, Groups, DedupSets, DedupInterval

VARIABLES msgs, visible, inFlight, dead, delayed, timers, now, sent, dedup,
          lastAction   \* <<name, parameters...>> of the step that led here

F == INSTANCE QueueFifo

Send(i) == F!Send(i) /\ lastAction' = <<"Send", i>>
SendBatch(b) == F!SendBatch(b) /\ lastAction' = <<"SendBatch", b>>
Receive(v) == F!Receive(v) /\ lastAction' = <<"Receive", v>>
ReceiveBatch(n, v) == F!ReceiveBatch(n, v) /\ lastAction' = <<"ReceiveBatch", n, v>>
Delete(i) == F!Delete(F!ReceiptOf(i)) /\ lastAction' = <<"Delete", i>>
DeleteBatch(b) == F!DeleteBatch(F!Q!Receipts(b)) /\ lastAction' = <<"DeleteBatch", b>>
Retry(i) == F!Retry(F!ReceiptOf(i)) /\ lastAction' = <<"Retry", i>>
ChangeVisibility(i, t) ==
    F!ChangeVisibility(F!ReceiptOf(i), t) /\ lastAction' = <<"ChangeVisibility", i, t>>
ChangeVisibilityBatch(c) ==
    F!ChangeVisibilityBatch(F!Q!Changes(c)) /\ lastAction' = <<"ChangeVisibilityBatch", c>>
Cancel(i) == F!Cancel(i) /\ lastAction' = <<"Cancel", i>>
Purge == F!Purge /\ lastAction' = <<"Purge">>
Expire == F!Expire /\ lastAction' = <<"Expire">>
Tick == F!Tick /\ lastAction' = <<"Tick">>

Init == F!Init /\ lastAction = <<"Init">>

\* The same disjuncts as QueueFifo's Next, in the same order.
Next ==
    \/ \E i \in Ids : Send(i)
    \/ \E b \in F!SendBatches : SendBatch(b)
    \/ \E v \in VisibilityTimeouts : Receive(v)
    \/ \E n \in F!Q!BatchSizes, v \in VisibilityTimeouts : ReceiveBatch(n, v)
    \/ \E i \in DOMAIN msgs : Delete(i)
    \/ \E b \in F!Q!IdBatches(F!Q!InFlightIds) : DeleteBatch(b)
    \/ \E i \in DOMAIN msgs : Retry(i)
    \/ \E i \in DOMAIN msgs, t \in ExtendTimeouts : ChangeVisibility(i, t)
    \/ \E c \in F!Q!ChangeBatches : ChangeVisibilityBatch(c)
    \/ \E i \in Ids : Cancel(i)
    \/ Purge
    \/ Expire
    \/ Tick

Spec == Init /\ [][Next]_<<msgs, visible, inFlight, dead, delayed, timers, now, sent, dedup,
                           lastAction>>
=============================================================================
