--------------------------- MODULE QueueDeleteById ---------------------------
(***************************************************************************)
(* BROKEN ON PURPOSE -- the seed's pitfall 3: delete by identity.          *)
(*                                                                         *)
(* Here a consumer's delete looks only at the message id in its receipt:   *)
(* if that message is in flight, it is deleted, whichever delivery is in   *)
(* flight.  The stale delete of a slow consumer then deletes the copy that *)
(* was redelivered to another consumer, which is still working on it.      *)
(* TLC finds the violation of StaleReceiptNeverActs (QueueDeleteById.cfg). *)
(* The fix is Queue's Delete: act only if the receipt is live, i.e. the    *)
(* message is in flight with exactly the receipt's attempt.                *)
(***************************************************************************)
EXTENDS QueueConsumers

\* The bug: "in flight" is checked, the attempt is not.
InFlightById(r) == r[1] \in Accepted /\ msgs[r[1]].status = "IN_FLIGHT"

\* Finish, with the delete by identity: it acts on the current delivery.
FinishById(c) ==
    /\ held[c] # NoReceipt
    /\ IF InFlightById(held[c]) THEN Delete(ReceiptOf(held[c][1])) ELSE UNCHANGED vars
    /\ Finished(c)

NextById == OtherSteps \/ \E c \in Consumers : FinishById(c)

SpecById == ConsumersInit /\ [][NextById]_allVars
=============================================================================
