----------------------------- MODULE QueueGraph -----------------------------
(***************************************************************************)
(* Queue with every step labelled by the action AND its parameters.        *)
(*                                                                         *)
(* Only for the equivalence test (model_tests/tests/test_equivalence.py):  *)
(* TLC's `-dump dot' labels an edge with the action's name alone ("Send"), *)
(* while spec/explore.py labels it "Send(a)".  This module adds one        *)
(* history variable, lastAction, that carries the label of the step that   *)
(* led to the state; the test maps each TLC state to an explorer node by   *)
(* dropping lastAction, and each TLC edge s -> t to the explorer edge      *)
(* (s, label of t.lastAction, t).  lastAction never influences a step, so  *)
(* the queue's behaviour is exactly Queue's: this module only renames.     *)
(*                                                                         *)
(* The actions below are the TLA+ actions of the operation registry        *)
(* (spec/operations.py), in its order; tests/test_operations.py checks     *)
(* that this module labels and steps exactly those.                        *)
(***************************************************************************)
EXTENDS Naturals, Sequences

CONSTANTS Ids, Capacity, MaxReceives, MaxAttempt, VisibilityTimeouts,
          ExtendTimeouts, MaxTime, None

VARIABLES msgs, visible, inFlight, dead, now,
          lastAction   \* <<name, parameters...>> of the step that led here

Q == INSTANCE Queue

\* Each action is Queue's action plus the label it leaves behind.
Send(i) == Q!Send(i) /\ lastAction' = <<"Send", i>>
Receive(v) == Q!Receive(v) /\ lastAction' = <<"Receive", v>>
Delete(i) == Q!Delete(Q!ReceiptOf(i)) /\ lastAction' = <<"Delete", i>>
Retry(i) == Q!Retry(Q!ReceiptOf(i)) /\ lastAction' = <<"Retry", i>>
ChangeVisibility(i, t) ==
    Q!ChangeVisibility(Q!ReceiptOf(i), t) /\ lastAction' = <<"ChangeVisibility", i, t>>
Cancel(i) == Q!Cancel(i) /\ lastAction' = <<"Cancel", i>>
Expire == Q!Expire /\ lastAction' = <<"Expire">>
Tick == Q!Tick /\ lastAction' = <<"Tick">>

Init == Q!Init /\ lastAction = <<"Init">>

\* The same disjuncts as Queue's Next, in the same order.
Next ==
    \/ \E i \in Ids : Send(i)
    \/ \E v \in VisibilityTimeouts : Receive(v)
    \/ \E i \in DOMAIN msgs : Delete(i)
    \/ \E i \in DOMAIN msgs : Retry(i)
    \/ \E i \in DOMAIN msgs, t \in ExtendTimeouts : ChangeVisibility(i, t)
    \/ \E i \in Ids : Cancel(i)
    \/ Expire
    \/ Tick

Spec == Init /\ [][Next]_<<msgs, visible, inFlight, dead, now, lastAction>>
=============================================================================
