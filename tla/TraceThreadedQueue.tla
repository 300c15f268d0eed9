------------------------- MODULE TraceThreadedQueue -------------------------
(***************************************************************************)
(* Thread-level trace validation: is what the threads of a real impl.Queue *)
(* did -- who called what, who took the mutex, who waited, who was woken,  *)
(* how many waiters each notify reached, which transition each critical    *)
(* section made -- a behaviour of ThreadedQueue?                           *)
(*                                                                         *)
(* TraceQueue.tla checks the ORDER OF TRANSITIONS of a run against Queue;  *)
(* this module checks the SYNCHRONISATION that produced them against the   *)
(* threaded model, so that impl/threaded.py and ThreadedQueue.tla cannot   *)
(* drift apart silently.  tla/threaded_trace.py turns a sequence of        *)
(* ThreadEvent(thread, kind, detail) into the constant Trace and generates *)
(* a module that EXTENDS this one.  One record per step of the model:      *)
(*                                                                         *)
(*   [kind |-> "call", thread, op, ...]  the thread calls a method: one    *)
(*        Start action (the send's id and delay, the receipt a delete,     *)
(*        retry or change_visibility uses, ...: from the transition it     *)
(*        recorded; id = None when it recorded none);                      *)
(*   [kind |-> "drop", thread]  a consumer that still holds a delivery     *)
(*        calls receive again: Drop, then the call;                        *)
(*   [kind |-> "acquire", thread]  Acquire: it holds the mutex;            *)
(*   [kind |-> "cs", thread, op, wE, wF, wD, sleep, ...]  everything the   *)
(*        thread did while it held the mutex, as ONE critical section of   *)
(*        the model (XxxCS): it reached wE waiters of not_empty, wF of     *)
(*        not_full and wD of new_deadline with its notifies (wD = None:    *)
(*        any number will do -- before the sweeper thread has run, the     *)
(*        code starts it where the model notifies it), then returned       *)
(*        (sleep = "none") or waited on the                                *)
(*        condition sleep; and its result (the receipt a receive got, what *)
(*        a delete returned, the ids a sweep fired and the deadline it     *)
(*        sleeps until, ...);                                              *)
(*   [kind |-> "wake", thread, cond, how]  the wait ended: the model woke  *)
(*        the thread in an earlier notifier's critical section (it waits   *)
(*        for the lock), or its timed wait ran out (Timeout: only the      *)
(*        sweeper waits with a deadline);                                  *)
(*   [kind |-> "return", thread]  the method returned: the model's thread  *)
(*        is outside the queue;                                            *)
(*   [kind |-> "raise", thread]  no step: the model has no exceptions      *)
(*        (timeouts, shutdown, interrupts are not modelled).               *)
(*                                                                         *)
(* Every record has lo and hi: the clock readings the event may have seen  *)
(* (the clock driver moves the time without the mutex).  The clock ticks   *)
(* towards the next event's hi; an event matches only once it reached lo.  *)
(* Which waiters a notify reaches is the model's choice (EndCS chooses the *)
(* woken set): TLC tries each, and the later wake and acquire events       *)
(* decide.  Every step is a step of ThreadedQueue: TraceNext implies       *)
(* [Next]_vars.                                                            *)
(*                                                                         *)
(* READING TLC's VERDICT -- THE INVERSION (as in TraceQueue.tla).          *)
(* "Invariant TraceIncomplete is violated" = the events are ACCEPTED.      *)
(* Unlike TraceQueue's, the path is not unique (the woken sets, the ticks) *)
(* and a path that gets stuck proves nothing, so TLC runs without its      *)
(* deadlock check: finishing with no error = REJECTED, and the largest     *)
(* step of the states it reached (tla/threaded_trace.py dumps them) says   *)
(* how far the best path got.                                              *)
(***************************************************************************)
EXTENDS ThreadedQueue

CONSTANT Trace  \* the events, a sequence of records (see the header)

VARIABLE step   \* the number of events of Trace matched so far

traceVars == <<vars, step>>

TraceInit == Init /\ step = 0

(***************************************************************************)
(* A call: the Start action of the method, with the arguments the code     *)
(* recorded.  A consumer's call names the receipt it uses: it must be the  *)
(* one the model's consumer holds.                                         *)
(***************************************************************************)
CallMatch(e) ==
    LET t == e.thread
    IN CASE e.op = "send" ->
                IF e.id = None THEN \E i \in Ids, d \in Delays : StartSend(t, i, d)
                ELSE StartSend(t, e.id, e.delay)
         [] e.op = "send_batch" -> StartSendBatch(t, e.entries)
         [] e.op = "cancel" -> StartCancel(t, e.id)
         [] e.op = "purge" -> StartPurge(t)
         [] e.op \in {"receive", "receive_batch"} -> StartReceive(t) /\ op'[t] = e.op
         [] e.op = "delete" -> (e.receipt = None \/ held[t] = e.receipt) /\ StartDelete(t)
         [] e.op = "retry" -> (e.receipt = None \/ held[t] = e.receipt) /\ StartRetry(t)
         [] e.op = "change_visibility" ->
                /\ e.receipt = None \/ held[t] = e.receipt
                /\ StartChangeVisibility(t, e.timeout)
         [] e.op = "delete_batch" ->
                (e.receipts = None \/ heldBatch[t] = e.receipts) /\ StartDeleteBatch(t)
         [] e.op = "change_visibility_batch" ->
                /\ e.receipts = None \/ heldBatch[t] = e.receipts
                /\ StartChangeVisibilityBatch(t, e.timeout)
         [] OTHER -> FALSE

\* How many waiters of c the critical section woke (the thread itself held
\* the lock, so it is not one of them).
Woken(c) == Cardinality(waiting[c] \ waiting'[c])

Wakes(e) ==
    /\ Woken("not_empty") = e.wE
    /\ Woken("not_full") = e.wF
    /\ e.wD = None \/ Woken("new_deadline") = e.wD

\* The critical section returned from the method, or waited on e.sleep.
Ends(e) ==
    LET t == e.thread
    IN IF e.sleep = "none" THEN at'[t] = "none" ELSE t \in waiting'[e.sleep]

\* What the method's transition gave, as the code recorded it (only for a
\* critical section that returned; a sweep always records what it fired).
Pending(i) == i \in Range(qVisible) \cup Range(qInFlight) \cup Range(qDelayed)
Result(e) ==
    LET t == e.thread
    IN CASE e.op = "sweep" ->
                /\ ExpiryOrder = e.fired
                /\ target' = e.target
         [] e.sleep # "none" -> TRUE
         [] e.op = "receive" -> held'[t] = e.got
         [] e.op = "receive_batch" -> heldBatch'[t] = e.got
         [] e.op \in {"delete", "retry", "change_visibility"} -> Live(held[t]) = e.ok
         [] e.op = "delete_batch" -> Cardinality(qDone') - Cardinality(qDone) = e.done
         [] e.op = "cancel" -> Pending(arg[t]) = e.ok
         [] e.op = "purge" -> Active = e.count
         [] OTHER -> TRUE

Match(e) ==
    LET t == e.thread
    IN CASE e.kind = "call" -> CallMatch(e)
         [] e.kind = "drop" -> Drop(t)
         [] e.kind = "acquire" -> Acquire(t)
         [] e.kind = "cs" -> op[t] = e.op /\ CS(t) /\ Wakes(e) /\ Ends(e) /\ Result(e)
         [] e.kind = "wake" ->
                \/ at[t] = "lock" /\ UNCHANGED vars
                \/ e.how = "timeout" /\ t = Sweeper /\ Timeout
         [] e.kind = "return" -> at[t] = "none" /\ UNCHANGED vars
         [] OTHER -> FALSE  \* "raise": no exception is modelled

TraceNext ==
    /\ step < Len(Trace)
    /\ \/ Trace[step + 1].lo <= clock /\ Match(Trace[step + 1]) /\ step' = step + 1
       \/ clock < Trace[step + 1].hi /\ Tick /\ UNCHANGED step
    /\ [Next]_vars

TraceSpec == TraceInit /\ [][TraceNext]_traceVars

\* VIOLATED EXACTLY WHEN THE EVENTS ARE ACCEPTED (see the header).
TraceIncomplete == step < Len(Trace)
=============================================================================
