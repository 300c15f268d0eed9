-------------------------- MODULE TraceQueueSystem --------------------------
(***************************************************************************)
(* Trace validation of a system of queues: is a run recorded from impl     *)
(* queues linked by a dead-letter target (A -> B) a behaviour of           *)
(* QueueSystem?                                                            *)
(*                                                                         *)
(* Every queue of the system records its transitions with record_trace;    *)
(* tla/system_trace.py gives them all one sink that appends to one list,   *)
(* each step tagged with its queue, under the sink's own lock.  A queue    *)
(* calls its sink inside its critical section, and a step across two       *)
(* queues (a move, a redrive) holds both queues' locks while it does, so   *)
(* that list is in linearization order (system_trace.py says why).  It     *)
(* becomes the constant Trace: one record per call, its queue q (the       *)
(* queue's number in creation order, as QueueSystem numbers them), its     *)
(* arguments, its result and its (integer) time.                           *)
(*                                                                         *)
(* As TraceQueue.tla does for one queue, the check follows the trace with  *)
(* the history variable `step': each step of TraceNext matches the next    *)
(* event with ONE step of QueueSystem -- the action the event names, on    *)
(* the event's queue, with its arguments and its result -- or lets the     *)
(* clock tick towards the event's time, and is a step of QueueSystem's     *)
(* Next (a conjunct).  A dead-letter move is not an event of its own: the  *)
(* releasing event of the source (retry, change_visibility to 0, expire)   *)
(* is QueueSystem's Release, which moves the message into the target in    *)
(* the same step, so a later event of the target that finds the message   *)
(* there (a receive, a redrive) is matched only if the move was one step.  *)
(*                                                                         *)
(* READING TLC's VERDICT -- THE INVERSION (as in TraceQueue.tla).  The     *)
(* invariant TraceIncomplete says "the whole trace is never matched":      *)
(*   - "Invariant TraceIncomplete is violated" = the trace is ACCEPTED;    *)
(*   - "Deadlock reached" = REJECTED (step: how many events matched).      *)
(* With one destination per redrive the steps are deterministic and the   *)
(* state graph is one path.                                                *)
(***************************************************************************)
EXTENDS QueueSystem

CONSTANT Trace  \* the recorded events, a sequence of records (see Match)

VARIABLE step   \* the number of events of Trace matched so far

traceVars == <<vars, step>>

TraceInit == Init /\ step = 0

(***************************************************************************)
(* Match(e): one step of QueueSystem that is the event e, at time e.now,   *)
(* on queue e.q.  The events (impl.BaseQueue.record_trace's steps):        *)
(*   [op |-> "send", q, id, delay]            an accepted send             *)
(*   [op |-> "receive", q, id, attempt, vt]   a delivery; attempt: the     *)
(*                                            life count (kept by a move)  *)
(*   [op |-> "delete", q, id, attempt, ok]    ok: what the call returned   *)
(*   [op |-> "retry", q, id, attempt, ok]                                  *)
(*   [op |-> "change_visibility", q, id, attempt, t, ok]                   *)
(*   [op |-> "cancel", q, id, ok]                                          *)
(*   [op |-> "expire", q, fired]              one sweep of q: the timers   *)
(*                                            it fired, <<"msg", id>> (a   *)
(*                                            delay or a deadline: an      *)
(*                                            `expire' step) or <<"ret",   *)
(*                                            id>> (an `age_out' step), in *)
(*                                            the one timer order          *)
(*   [op |-> "redrive", q, id, new, to]       one move of a redrive of the *)
(*                                            dead-letter queue q: id is   *)
(*                                            MOVED, `new' its new id in   *)
(*                                            the destination `to' (None:  *)
(*                                            the message's source)        *)
(* each with a field now.  Batches and purge are no steps of QueueSystem   *)
(* (it leaves them to Queue.tla): tla/system_trace.py refuses them.        *)
(***************************************************************************)

\* The receipt <<i, a>> is live in q: i is in flight there at attempt a.
LiveIn(q, i, a) == InFlight(q, i) /\ data[q].msgs[i].attempt = a

\* A call that returned False: QueueSystem agrees it is no step.
Refused(notLive) == notLive /\ UNCHANGED vars

\* The timers of q's sweep that fire, in the one timer order: those of
\* ExpiryOrder(q) that an earlier firing of the same sweep did not stop
\* (QueueSystem's Fire skips those; the implementation neither fires nor
\* traces them).
RECURSIVE Firing(_, _, _)
Firing(s, q, es) ==
    IF es = <<>> THEN <<>>
    ELSE (IF Head(es) \in Range(s[q].timers) THEN <<Head(es)>> ELSE <<>>)
            \o Firing(Fire(s, q, Head(es)), q, Tail(es))

\* Where a redrive event moves its message.
RedriveTo(e) == IF e.to = None THEN data[e.q].msgs[e.id].source ELSE e.to

Match(e) ==
    /\ now = e.now
    /\ CASE e.op = "send" -> Send(e.q, e.id, e.delay)
         [] e.op = "receive" ->
                /\ data[e.q].visible # <<>>
                /\ Head(data[e.q].visible) = e.id
                /\ data[e.q].msgs[e.id].attempt + 1 = e.attempt
                /\ Receive(e.q, e.vt)
         [] e.op = "delete" ->
                IF e.ok THEN LiveIn(e.q, e.id, e.attempt) /\ Delete(e.q, e.id)
                ELSE Refused(~LiveIn(e.q, e.id, e.attempt))
         [] e.op = "retry" ->
                IF e.ok THEN LiveIn(e.q, e.id, e.attempt) /\ Retry(e.q, e.id)
                ELSE Refused(~LiveIn(e.q, e.id, e.attempt))
         [] e.op = "change_visibility" ->
                IF e.ok THEN LiveIn(e.q, e.id, e.attempt) /\ ChangeVisibility(e.q, e.id, e.t)
                ELSE Refused(~LiveIn(e.q, e.id, e.attempt))
         [] e.op = "cancel" ->
                IF e.ok THEN Cancel(e.q, e.id)
                ELSE Refused(~(In(e.q, e.id) /\ IsActive(e.q, e.id)))
         [] e.op = "expire" ->
                /\ ExpiryOrder(e.q) # <<>>
                /\ Firing(data, e.q, ExpiryOrder(e.q)) = e.fired
                /\ Expire(e.q)
         [] e.op = "redrive" ->
                /\ In(e.q, e.id)
                /\ RedriveTo(e) # None
                \* The new id is the next of the system counter: a redrive that
                \* kept the old id (or took one already accepted) is no step.
                /\ FreshIds # {} /\ NextFresh = e.new
                /\ Redrive(e.q, e.id, RedriveTo(e))

TraceNext ==
    /\ step < Len(Trace)
    /\ \/ Match(Trace[step + 1]) /\ step' = step + 1
       \/ now < Trace[step + 1].now /\ Tick /\ UNCHANGED step
    /\ [Next]_vars

TraceSpec == TraceInit /\ [][TraceNext]_traceVars

\* VIOLATED EXACTLY WHEN THE TRACE IS ACCEPTED (see the header).
TraceIncomplete == step < Len(Trace)
=============================================================================
