------------------------ MODULE TraceQueueFifoMatched -----------------------
(***************************************************************************)
(* TraceQueueFifo's check without its cross-check conjunct [Next]_vars,    *)
(* and with NoSendBatches for SendBatches in the config, for long traces   *)
(* with batches: see TraceQueueMatched.tla for why the verdicts are the    *)
(* same when the constants are fitted to the trace.                        *)
(***************************************************************************)
EXTENDS TraceQueueFifo

\* What the config substitutes for QueueFifo's SendBatches (a constant
\* definition TLC would evaluate at startup); TraceNextMatched never reads it.
NoSendBatches == {}

TraceNextMatched ==
    /\ step < Len(Trace)
    /\ \/ Match(Trace[step + 1]) /\ step' = step + 1
       \/ now < Trace[step + 1].now /\ Tick /\ UNCHANGED step
=============================================================================
