----------------------------- MODULE TraceQueue -----------------------------
(***************************************************************************)
(* Trace validation: is a trace recorded from impl.Queue a behaviour of    *)
(* Queue?                                                                  *)
(*                                                                         *)
(* impl.Queue.record_trace hands every transition to a sink inside its     *)
(* critical section, so the recorded order is the order in which the       *)
(* transitions took effect.  tla/trace.py turns such a recording into the  *)
(* constant Trace -- one record per call, with its arguments, its result   *)
(* and the (integer) time -- and generates a module that EXTENDS this one. *)
(*                                                                         *)
(* The check follows the trace with a history variable `step' (how many    *)
(* events are matched so far).  Each step of TraceNext either matches the  *)
(* next event with ONE step of Queue -- the action the event names, with   *)
(* the event's arguments, which must be enabled and must give the event's  *)
(* result -- or lets the clock tick towards the event's time.  A call that *)
(* changed nothing (a stale receipt, a sweep with nothing due) must be one *)
(* that Queue says changes nothing, and is matched by a stuttering step.   *)
(* Every step is a step of Queue: TraceNext implies [Next]_vars, which is  *)
(* a conjunct of it.  Given the events, the steps are deterministic, so    *)
(* the state graph is one path.                                            *)
(*                                                                         *)
(* READING TLC's VERDICT -- THE INVERSION.  TLC 2.15 has no way to say     *)
(* "succeed when this state is reached", so the invariant TraceIncomplete  *)
(* says the opposite: "the whole trace is never matched".                  *)
(*   - "Invariant TraceIncomplete is violated"  = the trace is ACCEPTED:   *)
(*     TLC reached the state where every event has been matched;           *)
(*   - "Deadlock reached"                       = the trace is REJECTED:   *)
(*     at some event no step of Queue matches; TLC's trace ends in the     *)
(*     last state that matched, and its `step' says how many events did.   *)
(* tla/trace.py reads TLC's output this way and reports accepted/rejected. *)
(***************************************************************************)
EXTENDS Queue

CONSTANT Trace  \* the recorded events, a sequence of records (see Match)

VARIABLE step   \* the number of events of Trace matched so far

traceVars == <<vars, step>>

TraceInit == Init /\ step = 0

(***************************************************************************)
(* Match(e): one step of Queue that is the event e, at time e.now.  The    *)
(* events, one per kind of transition the implementation records:          *)
(*   [op |-> "send", id, delay]           an accepted send (delay 0: none) *)
(*   [op |-> "send_batch", entries, ok]   entries <<<<id, delay>>, ...>>;  *)
(*                                        ok: accepted (all) or not (none) *)
(*   [op |-> "receive", id, attempt, vt]  a delivery (vt: None = never     *)
(*                                        expires)                         *)
(*   [op |-> "receive_batch", n, vt, got] got: the receipts delivered, in  *)
(*                                        order (<<>>: nothing visible)    *)
(*   [op |-> "delete", id, attempt, ok]   ok: what delete returned         *)
(*   [op |-> "delete_batch", receipts, oks]  oks: one result per receipt   *)
(*   [op |-> "retry", id, attempt, ok]                                     *)
(*   [op |-> "change_visibility", id, attempt, t, ok]                      *)
(*   [op |-> "change_visibility_batch", changes, oks]  changes:            *)
(*                                        <<<<receipt, t>>, ...>>          *)
(*   [op |-> "cancel", id, ok]                                             *)
(*   [op |-> "purge", count]              count: how many were purged      *)
(*   [op |-> "expire", fired]             one sweep that fired these       *)
(*                                        timers (delays and deadlines),   *)
(*                                        in this order                    *)
(* each with a field now.  The ops are the operations of the registry      *)
(* (spec/operations.py) that impl.Queue records, tla.trace.event_ops(), in *)
(* its order; tests/test_operations.py checks that Match names exactly     *)
(* those.                                                                  *)
(***************************************************************************)
Rcpt(e) == <<e.id, e.attempt>>

\* A call that returned False: Queue agrees it is no step, and nothing changes.
Refused(notLive) == notLive /\ UNCHANGED vars

\* What a batch's entries return, each on the state its predecessors left:
\* delete_batch's and change_visibility_batch's lists of results.
RECURSIVE DeleteResults(_, _)
DeleteResults(s, rs) ==
    IF rs = <<>> THEN <<>>
    ELSE <<LiveIn(s, Head(rs))>> \o DeleteResults(Deleted(s, Head(rs)), Tail(rs))

RECURSIVE ChangeResults(_, _)
ChangeResults(s, cs) ==
    IF cs = <<>> THEN <<>>
    ELSE <<LiveIn(s, Head(cs)[1])>>
            \o ChangeResults(Changed(s, Head(cs)[1], Head(cs)[2], now), Tail(cs))

\* Whether a send_batch of these entries is accepted (all or none).
Acceptable(b) ==
    /\ \A k \in DOMAIN b : b[k][1] \notin Accepted
    /\ \A j, k \in DOMAIN b : j # k => b[j][1] # b[k][1]
    /\ RoomFor(Len(b))

\* A batch whose every entry returned FALSE changed nothing.
AnyTrue(oks) == \E k \in DOMAIN oks : oks[k]

Match(e) ==
    /\ now = e.now
    /\ CASE e.op = "send" -> Send(e.id, e.delay)
         [] e.op = "send_batch" ->
                IF e.ok THEN SendBatch(e.entries) ELSE Refused(~Acceptable(e.entries))
         [] e.op = "receive" ->
                /\ visible # <<>>
                /\ Head(visible) = e.id
                /\ msgs[e.id].attempt + 1 = e.attempt
                /\ Receive(e.vt)
         [] e.op = "receive_batch" ->
                IF e.got = <<>> THEN Refused(visible = <<>>)
                ELSE /\ Deliveries(State, e.n) = e.got
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
                ELSE Refused(~(e.id \in Accepted /\ IsActive(e.id)))
         [] e.op = "purge" ->
                /\ Active = e.count
                /\ IF e.count > 0 THEN Purge ELSE UNCHANGED vars
         [] e.op = "expire" ->
                /\ ExpiryOrder = e.fired
                /\ IF e.fired = <<>> THEN UNCHANGED vars ELSE Expire

TraceNext ==
    /\ step < Len(Trace)
    /\ \/ Match(Trace[step + 1]) /\ step' = step + 1
       \/ now < Trace[step + 1].now /\ Tick /\ UNCHANGED step
    /\ [Next]_vars

TraceSpec == TraceInit /\ [][TraceNext]_traceVars

\* VIOLATED EXACTLY WHEN THE TRACE IS ACCEPTED (see the header).
TraceIncomplete == step < Len(Trace)
=============================================================================
