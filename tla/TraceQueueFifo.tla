--------------------------- MODULE TraceQueueFifo ---------------------------
(***************************************************************************)
(* Trace validation of FIFO queues: is a trace recorded from               *)
(* impl.FifoQueue a behaviour of QueueFifo?  TraceQueue.tla over           *)
(* QueueFifo: the same history variable `step', the same TraceNext, the    *)
(* same inverted invariant TraceIncomplete (VIOLATED = the trace is        *)
(* ACCEPTED, a deadlock = REJECTED; see TraceQueue.tla's header).          *)
(*                                                                         *)
(* The events are TraceQueue's, with these differences (tla/trace.py):     *)
(*   [op |-> "send", id, delay, dup, earlier]   dup: a duplicate (no       *)
(*        step; earlier: the id it returned), else an accepted send with   *)
(*        the queue's delay                                                *)
(*   [op |-> "send_batch", entries, dups, earliers]  entries <<<<id,       *)
(*        delay>>, ...>>; the entries that are not dups are accepted       *)
(*        together (a refused FIFO batch is not recorded)                  *)
(*   receive / receive_batch: the message(s) QueueFifo's Deliverable and   *)
(*        BatchOrder name (locked groups skipped, send order).             *)
(* A message's group and dedup id are the constants Groups and DedupSets   *)
(* that tla/trace.py fits to the trace.                                    *)
(***************************************************************************)
EXTENDS QueueFifo

CONSTANT Trace

VARIABLE step

traceVars == <<vars, step>>

TraceInit == Init /\ step = 0

Rcpt(e) == <<e.id, e.attempt>>

Refused(notLive) == notLive /\ UNCHANGED vars

RECURSIVE DeleteResults(_, _)
DeleteResults(s, rs) ==
    IF rs = <<>> THEN <<>>
    ELSE <<Q!LiveIn(s, Head(rs))>> \o DeleteResults(Q!Deleted(s, Head(rs)), Tail(rs))

RECURSIVE ChangeResults(_, _)
ChangeResults(s, cs) ==
    IF cs = <<>> THEN <<>>
    ELSE <<Q!LiveIn(s, Head(cs)[1])>>
            \o ChangeResults(Q!Changed(s, Head(cs)[1], Head(cs)[2], now), Tail(cs))

AnyTrue(oks) == \E k \in DOMAIN oks : oks[k]

\* A duplicate of i returning `earlier': the window's record of i's dedup id names it.
DuplicateOf(i, earlier) ==
    /\ IsDuplicate(i)
    /\ \E r \in dedup : r.dd = DedupId[i] /\ r.id = earlier

BatchIds(e) == [k \in DOMAIN e.entries |-> e.entries[k][1]]

Match(e) ==
    /\ now = e.now
    /\ CASE e.op = "send" ->
                IF e.dup THEN DuplicateOf(e.id, e.earlier) /\ UNCHANGED vars
                ELSE e.delay = QueueDelay /\ Send(e.id)
         [] e.op = "send_batch" ->
                /\ \A k \in DOMAIN e.entries :
                       IF e.dups[k] THEN DuplicateOf(e.entries[k][1], e.earliers[k])
                       ELSE ~IsDuplicate(e.entries[k][1]) /\ e.entries[k][2] = QueueDelay
                /\ IF AnyTrue([k \in DOMAIN e.dups |-> ~e.dups[k]])
                   THEN SendBatch(BatchIds(e)) ELSE UNCHANGED vars
         [] e.op = "receive" ->
                /\ Deliverable(State) # <<>>
                /\ Head(Deliverable(State)) = e.id
                /\ msgs[e.id].attempt + 1 = e.attempt
                /\ Receive(e.vt)
         [] e.op = "receive_batch" ->
                IF e.got = <<>> THEN Refused(Deliverable(State) = <<>>)
                ELSE /\ LET b == BatchOrder(State, e.n)
                        IN [k \in DOMAIN b |-> <<b[k], msgs[b[k]].attempt + 1>>] = e.got
                     /\ ReceiveBatch(e.n, e.vt)
         [] e.op = "delete" ->
                IF e.ok THEN Delete(Rcpt(e)) ELSE Refused(~Live(Rcpt(e)))
         [] e.op = "delete_batch" ->
                /\ DeleteResults(State, e.receipts) = e.oks
                /\ IF AnyTrue(e.oks) THEN DeleteBatch(e.receipts) ELSE UNCHANGED vars
         [] e.op = "retry" ->
                IF e.ok THEN Retry(Rcpt(e)) ELSE Refused(~Live(Rcpt(e)))
         [] e.op = "change_visibility" ->
                IF e.ok THEN ChangeVisibility(Rcpt(e), e.t) ELSE Refused(~Live(Rcpt(e)))
         [] e.op = "change_visibility_batch" ->
                /\ ChangeResults(State, e.changes) = e.oks
                /\ IF AnyTrue(e.oks) THEN ChangeVisibilityBatch(e.changes) ELSE UNCHANGED vars
         [] e.op = "cancel" ->
                IF e.ok THEN Cancel(e.id)
                ELSE Refused(~(e.id \in Accepted /\ Q!IsActive(e.id)))
         [] e.op = "purge" ->
                /\ Q!Active = e.count
                /\ IF e.count > 0 THEN Purge ELSE UNCHANGED vars
         [] e.op = "expire" ->
                /\ Q!ExpiryOrder = e.fired
                /\ IF e.fired = <<>> THEN UNCHANGED vars ELSE Expire

TraceNext ==
    /\ step < Len(Trace)
    /\ \/ Match(Trace[step + 1]) /\ step' = step + 1
       \/ now < Trace[step + 1].now /\ Tick /\ UNCHANGED step
    /\ [Next]_vars

TraceSpec == TraceInit /\ [][TraceNext]_traceVars

\* VIOLATED EXACTLY WHEN THE TRACE IS ACCEPTED (see TraceQueue.tla's header).
TraceIncomplete == step < Len(Trace)
=============================================================================
