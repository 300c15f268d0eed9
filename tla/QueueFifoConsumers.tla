------------------------- MODULE QueueFifoConsumers -------------------------
(***************************************************************************)
(* The FIFO queue with consumers that process what they receive: what      *)
(* "exactly-once processing" does NOT cover.  The consumers of             *)
(* QueueConsumers.tla (Consume holds a receipt, Finish does the work and   *)
(* deletes with it, `finished' records each finished delivery), on         *)
(* QueueFifo instead of Queue.  The group lock changes nothing here: once  *)
(* the sweeper releases a slow consumer's message its group is unlocked,   *)
(* another consumer receives it, and both do the work: ExactlyOnce is      *)
(* violated (QueueFifoSlowConsumer.cfg), as on a standard queue.           *)
(***************************************************************************)
EXTENDS QueueFifo

CONSTANTS
    Consumers,   \* the consumer threads (model values c1, c2)
    NoReceipt    \* a model value: the consumer holds no delivery

VARIABLES
    held,        \* held[c]: the receipt <<id, attempt>> consumer c works on, or NoReceipt
    finished     \* history: one record per finished delivery [consumer, receipt, deleted]

allVars == <<vars, held, finished>>

Produce(i) == Send(i) /\ UNCHANGED <<held, finished>>

\* An idle consumer c receives the first deliverable message and holds its receipt.
Consume(c, v) ==
    /\ held[c] = NoReceipt
    /\ Deliverable(State) # <<>>
    /\ LET i == Head(Deliverable(State))
       IN held' = [held EXCEPT ![c] = <<i, msgs[i].attempt + 1>>]
    /\ Receive(v)
    /\ UNCHANGED finished

\* c has done the work and deletes with its receipt (a no-op if it is stale).
Finish(c) ==
    /\ held[c] # NoReceipt
    /\ IF Live(held[c]) THEN Delete(held[c]) ELSE UNCHANGED vars
    /\ finished' = finished \cup
                     {[consumer |-> c, receipt |-> held[c], deleted |-> msgs' # msgs]}
    /\ held' = [held EXCEPT ![c] = NoReceipt]

Sweep == Expire /\ UNCHANGED <<held, finished>>
Clock == Tick /\ UNCHANGED <<held, finished>>

ConsumersInit ==
    /\ Init
    /\ held = [c \in Consumers |-> NoReceipt]
    /\ finished = {}

ConsumersNext ==
    \/ \E i \in Ids : Produce(i)
    \/ \E c \in Consumers, v \in VisibilityTimeouts : Consume(c, v)
    \/ \E c \in Consumers : Finish(c)
    \/ Sweep
    \/ Clock

ConsumersSpec == ConsumersInit /\ [][ConsumersNext]_allVars

\* ExactlyOnce -- EXPECTED TO FAIL: no message is processed twice.
Processed(i) == {f \in finished : f.receipt[1] = i}
ExactlyOnce == \A i \in Ids : Cardinality(Processed(i)) <= 1
=============================================================================
