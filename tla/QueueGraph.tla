----------------------------- MODULE QueueGraph -----------------------------
(***************************************************************************)
(* Queue with every step labelled by the action AND its parameters.        *)
(*                                                                         *)
(* Only for the equivalence test (model_tests/tests/test_equivalence.py):  *)
(* TLC's `-dump dot' labels an edge with the action's name alone ("Send"), *)
(* while spec/explore.py labels it "Send(a,0)".  This module adds one      *)
(* history variable, lastAction, that carries the label of the step that   *)
(* led to the state; the test maps each TLC state to an explorer node by   *)
(* dropping lastAction, and each TLC edge s -> t to the explorer edge      *)
(* (s, label of t.lastAction, t).  lastAction never influences a step, so  *)
(* the queue's behaviour is exactly Queue's: this module only renames.     *)
(*                                                                         *)
(* The actions below are the TLA+ actions of the operation registry        *)
(* (spec/operations.py), in its order; tests/test_operations.py checks     *)
(* that this module labels and steps exactly those.  A batch's label       *)
(* carries its entries as one sequence, <<"SendBatch", <<<<a, 0>>, <<b, 1>> *)
(* >> >>, which tla/graph.py writes as the explorer does.                  *)
(***************************************************************************)
EXTENDS Naturals, Sequences

CONSTANTS Ids, Capacity, MaxReceives, MaxAttempt, VisibilityTimeouts,
          ExtendTimeouts, MaxTime, Delays, MaxBatch, None

VARIABLES msgs, visible, inFlight, dead, delayed, timers, now,
          lastAction   \* <<name, parameters...>> of the step that led here

Q == INSTANCE Queue

\* Each action is Queue's action plus the label it leaves behind.
Send(i, d) == Q!Send(i, d) /\ lastAction' = <<"Send", i, d>>
SendBatch(b) == Q!SendBatch(b) /\ lastAction' = <<"SendBatch", b>>
Receive(v) == Q!Receive(v) /\ lastAction' = <<"Receive", v>>
ReceiveBatch(n, v) == Q!ReceiveBatch(n, v) /\ lastAction' = <<"ReceiveBatch", n, v>>
Delete(i) == Q!Delete(Q!ReceiptOf(i)) /\ lastAction' = <<"Delete", i>>
DeleteBatch(b) == Q!DeleteBatch(Q!Receipts(b)) /\ lastAction' = <<"DeleteBatch", b>>
Retry(i) == Q!Retry(Q!ReceiptOf(i)) /\ lastAction' = <<"Retry", i>>
ChangeVisibility(i, t) ==
    Q!ChangeVisibility(Q!ReceiptOf(i), t) /\ lastAction' = <<"ChangeVisibility", i, t>>
ChangeVisibilityBatch(c) ==
    Q!ChangeVisibilityBatch(Q!Changes(c)) /\ lastAction' = <<"ChangeVisibilityBatch", c>>
Cancel(i) == Q!Cancel(i) /\ lastAction' = <<"Cancel", i>>
Purge == Q!Purge /\ lastAction' = <<"Purge">>
Expire == Q!Expire /\ lastAction' = <<"Expire">>
Tick == Q!Tick /\ lastAction' = <<"Tick">>

Init == Q!Init /\ lastAction = <<"Init">>

\* The same disjuncts as Queue's Next, in the same order.
Next ==
    \/ \E i \in Ids, d \in Delays : Send(i, d)
    \/ \E b \in Q!SendBatches : SendBatch(b)
    \/ \E v \in VisibilityTimeouts : Receive(v)
    \/ \E n \in Q!BatchSizes, v \in VisibilityTimeouts : ReceiveBatch(n, v)
    \/ \E i \in DOMAIN msgs : Delete(i)
    \/ \E b \in Q!IdBatches(Q!InFlightIds) : DeleteBatch(b)
    \/ \E i \in DOMAIN msgs : Retry(i)
    \/ \E i \in DOMAIN msgs, t \in ExtendTimeouts : ChangeVisibility(i, t)
    \/ \E c \in Q!ChangeBatches : ChangeVisibilityBatch(c)
    \/ \E i \in Ids : Cancel(i)
    \/ Purge
    \/ Expire
    \/ Tick

Spec == Init /\ [][Next]_<<msgs, visible, inFlight, dead, delayed, timers, now, lastAction>>
=============================================================================
