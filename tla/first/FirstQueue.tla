----------------------------- MODULE FirstQueue -----------------------------
\* A queue whose messages are received, deleted, or expire (docs/first-spec.md).
EXTENDS Naturals                  \* numbers: 0, +, <=
CONSTANT Msgs                     \* the messages: {m1} in FirstQueue.cfg
VARIABLES status, processed       \* where each message is; how often its work was done

Init == /\ status = [m \in Msgs |-> "VISIBLE"]
        /\ processed = [m \in Msgs |-> 0]

Receive(m) == /\ status[m] = "VISIBLE"                        \* a consumer takes m
              /\ status' = [status EXCEPT ![m] = "IN_FLIGHT"]
              /\ processed' = [processed EXCEPT ![m] = @ + 1] \* and does its work

Delete(m) == /\ status[m] = "IN_FLIGHT"                       \* the consumer is done
             /\ status' = [status EXCEPT ![m] = "DONE"]
             /\ UNCHANGED processed

Expire(m) == /\ status[m] = "IN_FLIGHT"                       \* its timeout passed first
             /\ status' = [status EXCEPT ![m] = "VISIBLE"]
             /\ UNCHANGED processed

Next == \E m \in Msgs : Receive(m) \/ Delete(m) \/ Expire(m)
Spec == Init /\ [][Next]_<<status, processed>>

NoDuplicateDelivery == \A m \in Msgs : processed[m] <= 1     \* no work is done twice

\* The fix: an idempotent consumer does the work only the first time it receives m.
ReceiveOnce(m) == /\ status[m] = "VISIBLE"
                  /\ status' = [status EXCEPT ![m] = "IN_FLIGHT"]
                  /\ processed' = IF processed[m] = 0 THEN [processed EXCEPT ![m] = 1]
                                                      ELSE processed
FixedNext == \E m \in Msgs : ReceiveOnce(m) \/ Delete(m) \/ Expire(m)
FixedSpec == Init /\ [][FixedNext]_<<status, processed>>
=============================================================================
