--------------------------- MODULE QueueConsumers ---------------------------
(***************************************************************************)
(* The queue with consumers that process what they receive: the model of   *)
(* why delivery is at-least-once and never exactly-once.                   *)
(*                                                                         *)
(* A consumer receives a message (holding its receipt), and later finishes *)
(* it: it does the work and asks the queue to delete the delivery with its *)
(* receipt.  A slow consumer may finish after its deadline has passed and  *)
(* the sweeper has given the message to another consumer.  Two things are  *)
(* then true at once, and TLC shows both:                                  *)
(*   - the stale delete is a no-op: it cannot harm the redelivered copy    *)
(*     (StaleReceiptNeverActs holds, QueueConsumers.cfg);                  *)
(*   - the message has been processed twice (ExactlyOnce is violated,      *)
(*     ExactlyOnce.cfg).  Only an idempotent consumer makes that harmless. *)
(***************************************************************************)
EXTENDS Queue

(***************************************************************************)
(*                             CONSTANTS                                   *)
(***************************************************************************)
CONSTANTS
    Consumers,   \* the consumer threads (model values c1, c2)
    NoReceipt    \* a model value: the consumer holds no delivery

(***************************************************************************)
(*                             VARIABLES                                   *)
(***************************************************************************)
VARIABLES
    held,        \* held[c]: the receipt <<id, attempt>> consumer c works on, or NoReceipt
    finished     \* history: one record per finished delivery
                 \* [consumer, receipt, deleted]; deleted = what delete returned

allVars == <<vars, held, finished>>
queueVars == <<msgs, visible, inFlight, dead, delayed, timers>>

(***************************************************************************)
(*                             ACTIONS                                     *)
(***************************************************************************)

\* A producer sends a message (the queue's Send, without a delay).
Produce(i) == Send(i, 0) /\ UNCHANGED <<held, finished>>

\* An idle consumer c receives the head of visible with timeout v and holds
\* the fresh receipt of that delivery.
Consume(c, v) ==
    /\ held[c] = NoReceipt
    /\ visible # <<>>
    /\ held' = [held EXCEPT ![c] = <<Head(visible), msgs[Head(visible)].attempt + 1>>]
    /\ Receive(v)
    /\ UNCHANGED finished

(***************************************************************************)
(* Finish(c): consumer c has done the work for the delivery it holds and   *)
(* deletes it with its receipt.  If the receipt is still live the message  *)
(* is DONE; if not (the sweeper released it meanwhile) delete returns      *)
(* FALSE and changes nothing.  Either way the work was done: Finished(c)   *)
(* puts it in the history `finished', with what delete returned (whether   *)
(* it changed the queue), and c is idle again.                             *)
(***************************************************************************)
Finished(c) ==
    /\ finished' = finished \cup
                     {[consumer |-> c, receipt |-> held[c], deleted |-> msgs' # msgs]}
    /\ held' = [held EXCEPT ![c] = NoReceipt]

Finish(c) ==
    /\ held[c] # NoReceipt
    /\ IF Live(held[c]) THEN Delete(held[c]) ELSE UNCHANGED vars
    /\ Finished(c)

\* The sweeper and the clock, as in Queue.
Sweep == Expire /\ UNCHANGED <<held, finished>>
Clock == Tick /\ UNCHANGED <<held, finished>>

(***************************************************************************)
(*                          THE SPECIFICATION                              *)
(***************************************************************************)
ConsumersInit ==
    /\ Init
    /\ held = [c \in Consumers |-> NoReceipt]
    /\ finished = {}

\* The consumers' steps other than Finish, shared with QueueDeleteById.
OtherSteps ==
    \/ \E i \in Ids : Produce(i)
    \/ \E c \in Consumers, v \in VisibilityTimeouts : Consume(c, v)
    \/ Sweep
    \/ Clock

ConsumersNext == OtherSteps \/ \E c \in Consumers : Finish(c)

ConsumersSpec == ConsumersInit /\ [][ConsumersNext]_allVars

(***************************************************************************)
(*                        INVARIANTS AND PROPERTIES                        *)
(***************************************************************************)

\* The shapes of the consumer variables.
ConsumersTypeOK ==
    /\ TypeOK
    /\ \A c \in Consumers : held[c] = NoReceipt \/ held[c] \in Ids \X (1..MaxAttempt)
    /\ \A f \in finished : f.consumer \in Consumers /\ f.deleted \in BOOLEAN

\* The work done for message i: one entry per finished delivery of i.
Processed(i) == {f \in finished : f.receipt[1] = i}

(***************************************************************************)
(* ExactlyOnce -- EXPECTED TO FAIL: no message is processed twice.  The    *)
(* queue promises at-least-once delivery only; TLC's counterexample is the *)
(* slow-consumer race of the contract (section 2).                         *)
(***************************************************************************)
ExactlyOnce == \A i \in Ids : Cardinality(Processed(i)) <= 1

(***************************************************************************)
(* StaleReceiptNeverActs: when a consumer finishes with a receipt that is  *)
(* no longer live, the queue does not change.  The receipt is the arbiter  *)
(* between a late delete and the redelivered copy.                         *)
(***************************************************************************)
StaleFinish(c) == held[c] # NoReceipt /\ held'[c] = NoReceipt /\ ~Live(held[c])

StaleReceiptNeverActs ==
    [][\A c \in Consumers : StaleFinish(c) => UNCHANGED queueVars]_allVars

THEOREM ConsumersSpec => []Invariants /\ StaleReceiptNeverActs
=============================================================================
