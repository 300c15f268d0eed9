---------------------------- MODULE QueueDurable ----------------------------
(***************************************************************************)
(* The durable endpoint: the queue of Queue.tla kept in a store that       *)
(* survives a crash, and what a crash may and may not lose.                *)
(*                                                                         *)
(* The endpoint (sqs_endpoint --data FILE) runs the queue in memory and    *)
(* writes each step to its store (SQLite).  The process may crash between  *)
(* any two of its steps: the memory (the queue's state, the receipts it    *)
(* handed out) is gone, the store is not.  Recover reads the store back    *)
(* (docs/contract.md section 9, the restart rules):                        *)
(*   - every message whose send was answered is still there, in the state  *)
(*     the store recorded; every delete that was answered stays deleted    *)
(*     (NothingLost, DeletesStay);                                         *)
(*   - a message in flight at the crash stays in flight until its          *)
(*     deadline, then comes back as any expired delivery does, its attempt *)
(*     kept (that receive counted); the receipt of that delivery is dead   *)
(*     (Current): the process that handed it out is gone;                  *)
(*   - the clock is the world's: it runs on while the endpoint is down,    *)
(*     and nothing fires until it is up again.                             *)
(* Seen from the queue, a crash and a recovery change nothing: each is a   *)
(* stuttering step of Queue.tla, so the durable queue refines the queue    *)
(* (Refines, checked by TLC as the property Spec of Queue).                *)
(*                                                                         *)
(* Which order, chosen by the constant WriteFirst:                         *)
(*   TRUE  -- a step and its write are one step: the answer leaves only    *)
(*            once the store has it (sqs_endpoint/journal.py commits each  *)
(*            operation before its answer): NothingLost holds              *)
(*            (QueueDurable.cfg, must pass);                               *)
(*   FALSE -- answer first, write after: the tempting bug.  A send is      *)
(*            answered, the process crashes before the write, and the      *)
(*            recovered queue has never heard of the message the client    *)
(*            was told was sent: NothingLost is violated                   *)
(*            (QueueDurableAnswerFirst.cfg, must fail).                    *)
(*                                                                         *)
(* The Python twins: sqs_endpoint/journal.py (the store), Service.recover  *)
(* (Recover); tests/test_endpoint_durable*.py crash the endpoint for real. *)
(***************************************************************************)
EXTENDS Queue

CONSTANTS
    WriteFirst   \* TRUE: a step is written before it is answered; FALSE: after

ASSUME WriteFirst \in BOOLEAN

VARIABLES
    store,     \* the store: the queue's data (a State record) as last written
    behind,    \* TRUE while memory holds a step the store has not (answer first only)
    up,        \* TRUE while the endpoint's process runs
    epoch,     \* how many times the endpoint has recovered
    given,     \* given[i]: the epoch whose process handed out i's latest receipt
    told,      \* the ids whose send was answered: the client was told they were sent
    deleted    \* the ids whose delete was answered

durableVars == <<store, behind, up, epoch, given, told, deleted>>
allVars == <<vars, durableVars>>

\* The empty store, as Init leaves the queue.
EmptyState == [msgs |-> [i \in {} |-> None], visible |-> <<>>, inFlight |-> <<>>,
               dead |-> <<>>, delayed |-> <<>>, timers |-> <<>>]

\* A receipt acts only in the process that handed it out.
Current(i) == i \in DOMAIN given /\ given[i] = epoch

(***************************************************************************)
(* A step of the queue while the endpoint runs: the queue's action A, and  *)
(* then the write.  WriteFirst: the store takes the new state in the same  *)
(* step, before the answer.  Otherwise the answer leaves now and the store *)
(* is written by a later Write step (one step at most is behind).          *)
(***************************************************************************)
Step(A) ==
    /\ up
    /\ ~behind
    /\ A
    /\ IF WriteFirst
         THEN store' = [msgs |-> msgs', visible |-> visible', inFlight |-> inFlight',
                        dead |-> dead', delayed |-> delayed', timers |-> timers']
                /\ behind' = FALSE
         ELSE UNCHANGED store /\ behind' = TRUE

\* The write the answer-first endpoint makes after its answer.
Write ==
    /\ up
    /\ behind
    /\ store' = State
    /\ behind' = FALSE
    /\ UNCHANGED <<vars, up, epoch, given, told, deleted>>

(***************************************************************************)
(* The client's operations, as Queue's actions (sends of a delay of 0,     *)
(* receives and deletes with a current receipt), and what their answers    *)
(* told the client; the sweeper's Expire; the clock's Tick.                *)
(***************************************************************************)
DSend(i) ==
    /\ Step(Send(i, 0))
    /\ told' = told \cup {i}
    /\ UNCHANGED <<up, epoch, given, deleted>>

DReceive(v) ==
    /\ visible # <<>>
    /\ Step(Receive(v))
    /\ given' = [j \in DOMAIN given \cup {Head(visible)} |->
                    IF j = Head(visible) THEN epoch ELSE given[j]]
    /\ UNCHANGED <<up, epoch, told, deleted>>

DDelete(i) ==
    /\ i \in Accepted
    /\ Current(i)
    /\ Step(Delete(ReceiptOf(i)))
    /\ deleted' = deleted \cup {i}
    /\ UNCHANGED <<up, epoch, given, told>>

DExpire ==
    /\ Step(Expire)
    /\ UNCHANGED <<up, epoch, given, told, deleted>>

\* The clock runs on, up or down.
DTick ==
    /\ Tick
    /\ UNCHANGED durableVars

(***************************************************************************)
(* Crash: the process dies between two steps; the memory is lost with it   *)
(* (the queue's variables keep their values here only so that Queue's      *)
(* view of the crash is a stutter: nothing reads them until Recover).      *)
(* Recover: a new process reads the store into memory; the receipts of     *)
(* every earlier process are dead.                                         *)
(***************************************************************************)
Crash ==
    /\ up
    /\ up' = FALSE
    /\ UNCHANGED <<vars, store, behind, epoch, given, told, deleted>>

Recover ==
    /\ ~up
    /\ up' = TRUE
    /\ SetState(store)
    /\ behind' = FALSE
    /\ epoch' = epoch + 1
    /\ UNCHANGED <<now, store, given, told, deleted>>

(***************************************************************************)
(* The specification.  MaxEpoch bounds the recoveries (a model bound: a    *)
(* crash after every step would only repeat states).                       *)
(***************************************************************************)
MaxEpoch == 2

DurableInit ==
    /\ Init
    /\ store = EmptyState
    /\ behind = FALSE
    /\ up = TRUE
    /\ epoch = 0
    /\ given = [i \in {} |-> 0]
    /\ told = {}
    /\ deleted = {}

DurableNext ==
    \/ \E i \in Ids : DSend(i)
    \/ \E v \in VisibilityTimeouts : DReceive(v)
    \/ \E i \in Ids : DDelete(i)
    \/ DExpire
    \/ DTick
    \/ Write
    \/ Crash
    \/ epoch < MaxEpoch /\ Recover

DurableSpec == DurableInit /\ [][DurableNext]_allVars

(***************************************************************************)
(*                           INVARIANTS                                    *)
(***************************************************************************)

\* A message whose send was answered is in the queue whenever the endpoint
\* runs: no crash takes it back.
NothingLost == up => told \subseteq Accepted

\* A delete that was answered stays done: the message is never delivered again.
DeletesStay == up => \A i \in deleted : msgs[i].status = "DONE"

\* The queue's invariants hold in the recovered queue as in any other.
DurableInvariants == up => Invariants

\* What a crash and a recovery look like to the queue: stuttering steps.
Refines == Spec

=============================================================================
