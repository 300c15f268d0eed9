-------------------------- MODULE QueueBatchSplit --------------------------
(***************************************************************************)
(* BROKEN ON PURPOSE -- a receive_batch built from single receives, with   *)
(* the lock dropped between them.                                          *)
(*                                                                         *)
(* A consumer that calls receive_batch(n, v) here does not take one step:  *)
(* it takes up to n steps, each one Queue's single Receive(v), and any     *)
(* other step of the queue may come in between -- another consumer's      *)
(* receive, the sweeper, the clock.  That is what an                       *)
(* implementation does whose receive_batch loops over receive() and        *)
(* releases the lock between the calls (the mutant "receive_batch drops    *)
(* the lock between messages" of model_tests/mutants.py).                  *)
(*                                                                         *)
(* BatchAtomic, checked here over the history of each batch call: what a  *)
(* finished batch delivered is what ONE receive_batch(n, v) would have     *)
(* delivered from the state its call began in -- the first min(n, visible) *)
(* visible messages, in FIFO order (Queue's Deliveries, the receipts of    *)
(* Queue's fold ReceiveAll).  The queue starts with every id sent and      *)
(* visible (no producer: a send between the entries would be caught too). *)
(* TLC's counterexample (QueueBatchSplit.cfg): c1's batch of 2 takes a,    *)
(* c2's batch takes b in between, and c1's batch returns <<a>> alone       *)
(* although a and b were both visible when it began.  Two consumers with   *)
(* one message each: no batch got what it asked for.  The fix is Queue's   *)
(* ReceiveBatch: the whole                                                 *)
(* batch in one step (one critical section, ThreadedQueue's               *)
(* ReceiveBatchCS).                                                        *)
(***************************************************************************)
EXTENDS Queue

CONSTANTS
    Consumers,   \* the consumer threads (model values c1, c2)
    BatchSize,   \* the n of every receive_batch (>= 2)
    NoBatch      \* a model value: the consumer has made no batch call yet

VARIABLE
    batch        \* history: batch[c] is c's last receive_batch call, or NoBatch:
                 \* [from |-> the queue's State when its first entry ran, v, got
                 \* (the receipts delivered so far), done (it has returned)]

allVars == <<vars, batch>>

\* The sweeper fires, the clock ticks: Queue's.
Sweep == Expire /\ UNCHANGED batch
Clock == Tick /\ UNCHANGED batch

\* The receipt the next Receive delivers: the head, with its next attempt.
NextReceipt == <<Head(visible), msgs[Head(visible)].attempt + 1>>

Idle(c) == IF batch[c] = NoBatch THEN TRUE ELSE batch[c].done   \* (an IF: see HasRoom)

(***************************************************************************)
(* Start(c, v): an idle consumer c calls receive_batch(BatchSize, v) and   *)
(* its first entry runs: a single Receive(v).  An atomic batch would have  *)
(* run here, in this one step, so `from' is the state it would have seen.  *)
(***************************************************************************)
Start(c, v) ==
    /\ Idle(c)
    /\ visible # <<>>
    /\ Receive(v)
    /\ batch' = [batch EXCEPT ![c] = [from |-> State, v |-> v,
                                      got |-> <<NextReceipt>>,
                                      done |-> BatchSize = 1]]

(***************************************************************************)
(* Entry(c): the next entry of c's batch -- a single Receive with the      *)
(* call's timeout, in a step of its own: the lock was dropped before it,   *)
(* and anything may have happened since the previous entry.                *)
(***************************************************************************)
Entry(c) ==
    /\ ~Idle(c)
    /\ visible # <<>>
    /\ Receive(batch[c].v)
    /\ LET got == Append(batch[c].got, NextReceipt)
       IN batch' = [batch EXCEPT ![c].got = got, ![c].done = (Len(got) = BatchSize)]

\* The batch returns early, with what it has, when nothing is visible.
Return(c) ==
    /\ ~Idle(c)
    /\ visible = <<>>
    /\ batch' = [batch EXCEPT ![c].done = TRUE]
    /\ UNCHANGED vars

\* The ids in some order, all sent (without delay) before the consumers start.
Preload == CHOOSE p \in [1..Cardinality(Ids) -> Ids] : Range(p) = Ids
Empty == [msgs |-> [i \in {} |-> None], visible |-> <<>>, inFlight |-> <<>>, dead |-> <<>>,
          delayed |-> <<>>, timers |-> <<>>]

SplitInit ==
    /\ LET s == SendAll(Empty, [k \in DOMAIN Preload |-> <<Preload[k], 0>>], 0)
       IN /\ msgs = s.msgs /\ visible = s.visible /\ inFlight = s.inFlight
          /\ dead = s.dead /\ delayed = s.delayed /\ timers = s.timers
    /\ now = 0
    /\ batch = [c \in Consumers |-> NoBatch]

SplitNext ==
    \/ \E c \in Consumers, v \in VisibilityTimeouts : Start(c, v)
    \/ \E c \in Consumers : Entry(c)
    \/ \E c \in Consumers : Return(c)
    \/ Sweep
    \/ Clock

SplitSpec == SplitInit /\ [][SplitNext]_allVars

(***************************************************************************)
(* BatchAtomic (EXPECTED TO FAIL here): every batch that has returned      *)
(* delivered exactly what one atomic receive_batch would have delivered    *)
(* from the state its call began in.                                       *)
(***************************************************************************)
BatchAtomic ==
    \A c \in Consumers :
        (batch[c] # NoBatch /\ batch[c].done)
            => batch[c].got = Deliveries(batch[c].from, BatchSize)
=============================================================================
