-------------------------- MODULE TraceQueueMatched -------------------------
(***************************************************************************)
(* TraceQueue's check made fast for long traces with batches, as the SQS   *)
(* endpoint records them (tla/recorded.py), with the same verdicts.        *)
(*                                                                         *)
(* Two costs of TraceQueue grow as (|Ids| * |Delays|)^MaxBatch, minutes    *)
(* for a trace with batches of 10 over a few ids: TLC evaluates Queue's    *)
(* constant definition SendBatches (every batch a client may send) at      *)
(* startup, and TraceNext's last conjunct [Next]_vars tries Next's batch   *)
(* disjuncts, which enumerate it, at every step that is not a send.        *)
(* TraceNextMatched drops that conjunct, and the config tla/recorded.py    *)
(* writes substitutes NoSendBatches for SendBatches, which nothing left    *)
(* reads.  The conjunct is a cross-check only: with the constants fitted   *)
(* to the trace (tla/trace.py's render_config: every id, delay, timeout    *)
(* and batch size of the trace is in its set), each branch of Match is the *)
(* action its event names with the event's arguments (Send, SendBatch,     *)
(* Receive, ReceiveBatch, Delete, DeleteBatch, Retry, ChangeVisibility,    *)
(* ChangeVisibilityBatch, Cancel, Purge, Expire) or a stuttering step; a   *)
(* batch of one and a batch with stale receipts make the change of the     *)
(* single action and of the batch of the live receipts, which are Next's.  *)
(* So the steps are TraceNext's (model_tests/tests/                        *)
(* test_trace_validation_recorded.py compares the verdicts of both).       *)
(***************************************************************************)
EXTENDS TraceQueue

\* What the config substitutes for Queue's SendBatches, which TLC would
\* otherwise evaluate at startup (a constant definition): TraceNextMatched
\* never reads it.
NoSendBatches == {}

TraceNextMatched ==
    /\ step < Len(Trace)
    /\ \/ Match(Trace[step + 1]) /\ step' = step + 1
       \/ now < Trace[step + 1].now /\ Tick /\ UNCHANGED step
=============================================================================
