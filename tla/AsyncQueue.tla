----------------------------- MODULE AsyncQueue -----------------------------
(***************************************************************************)
(* The asyncio driver of impl/aio.py, one level below Queue: tasks, one    *)
(* event loop, waiter futures and cancellation, as impl.AsyncQueue uses    *)
(* them.  The sibling of ThreadedQueue.tla: the same queue, the same       *)
(* refinement of Queue, another way of waiting.                            *)
(*                                                                         *)
(* Queue.tla says WHAT the queue does: each operation is one atomic step.  *)
(* This module says HOW impl.AsyncQueue makes its steps atomic without a   *)
(* lock, and why no task sleeps while it could work, even when tasks are   *)
(* cancelled at any await:                                                 *)
(*   - one event loop runs one callback at a time, to its next await or to *)
(*     its end: so ONE STEP of this module is one task running from where  *)
(*     it was to its next await (or to the end of its call).  Nothing else *)
(*     runs in between, which is all the atomicity the machine needs;      *)
(*   - the steps Send and Receive (and Delete, Retry) are the steps of     *)
(*     the queue machine the driver takes (impl/machine.py; a step that    *)
(*     cannot go ahead answers Blocked and changes nothing), as in Queue;  *)
(*   - a call that finds nothing to do (no visible message, no room)       *)
(*     creates a future (loop.create_future), appends it to the deque of   *)
(*     its condition, not_empty or not_full, and awaits it: Wait;          *)
(*   - a step that makes a condition true wakes ONE waiter: it pops        *)
(*     futures from the condition's deque until one is not done and calls  *)
(*     its set_result(None) (asyncio.Queue's _wakeup_next, the driver's    *)
(*     Futures.notify, Waiters.resolve_first).  A future's done callbacks  *)
(*     are scheduled with loop.call_soon, so the woken task becomes READY: *)
(*     it runs in a later step (Resume), re-checks, and receives -- or     *)
(*     waits again;                                                        *)
(*   - Task.cancel() (also what asyncio.timeout and wait_for call) can hit *)
(*     a task at any await of the queue (Cancel): a pending future is      *)
(*     cancelled; a future already resolved cannot be, so the task is      *)
(*     marked to raise when it runs (Task._must_cancel).  Either way its   *)
(*     await raises CancelledError in its next step.  A task whose future  *)
(*     had been resolved was woken for a reason that still holds: it       *)
(*     passes the wakeup on to the next waiter (PassOn, asyncio.Queue's    *)
(*     `if not getter.cancelled(): _wakeup_next'); one whose future was    *)
(*     cancelled just takes its future out of the deque (Withdraw).        *)
(*                                                                         *)
(* The point of the design is where the delivery happens: in the woken     *)
(* task's own step, after its await returned, with no await between the    *)
(* machine's step and the return.  A cancellation at any await therefore   *)
(* delivers nothing.  The constant Bug injects the two ways to get this    *)
(* wrong (both expected to fail; docs/tla.md walks through the traces):    *)
(*   "none"        impl/aio.py's design;                                   *)
(*   "handoff"     the waker delivers on the waiter's behalf: Wake takes   *)
(*                 the visible head in flight and resolves the future with *)
(*                 its receipt; a waiter cancelled before it runs drops it *)
(*                 and the message sits in flight, held by no task         *)
(*                 (HeldDeliveries; AsyncQueueHandoff.cfg);                *)
(*   "no_pass_on"  a woken task that is cancelled only withdraws: the      *)
(*                 wakeup it was given is lost and another receiver sleeps *)
(*                 beside a visible message (NoSleepingWaiter;             *)
(*                 AsyncQueueNoPassOn.cfg).                                *)
(*                                                                         *)
(* What is left out, and why: time (visibility timeouts, delays and the    *)
(* loop timer that sweeps them: the timer's callback is one more step      *)
(* that makes messages visible and wakes like Retry does; ThreadedQueue.tla *)
(* checks the timer order); the timeout= argument of a blocking call (its  *)
(* timer resolves the future with a "timed out" mark and the task          *)
(* re-checks, a Resume that may raise Empty); batches; q.cancel(id), purge *)
(* and shutdown (plain methods, or a notify of every waiter).  Receivers   *)
(* hold what they receive until they delete or retry it: a receiver that   *)
(* dropped a delivery would leave it in flight by its own choice.  The     *)
(* loop may run any ready task next (asyncio runs them in call_soon        *)
(* order): every order is checked, as model_tests/aio explores them.       *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

(***************************************************************************)
(*                             CONSTANTS                                   *)
(***************************************************************************)
CONSTANTS
    Receivers,    \* receiver tasks (model values): receive, then delete or retry
    Senders,      \* sender tasks (model values): send the ids, each at most once
    Ids,          \* the message ids the senders send
    Capacity,     \* as in Queue: bound on visible + in-flight messages, or None
    MaxReceives,  \* as in Queue, a number here: it bounds the attempts
    Bug,          \* "none", or the injected bug (see the header)
    None          \* a model value: no future, no receipt, no argument, ...

ASSUME None \notin Nat
ASSUME Capacity \in (Nat \ {0}) \cup {None}
ASSUME MaxReceives \in Nat \ {0}
ASSUME Bug \in {"none", "handoff", "no_pass_on"}
ASSUME Receivers \cap Senders = {}

Tasks == Receivers \cup Senders

\* The two conditions of the driver (Futures), each a deque of waiter futures
\* (Waiters).
Conds == {"not_empty", "not_full"}

\* The condition a task's blocking call waits on.
Cond(t) == IF t \in Receivers THEN "not_empty" ELSE "not_full"

\* The states of a waiter future (asyncio.Future): pending, resolved by
\* set_result, or cancelled by Future.cancel; None: the task awaits none.
FutureStates == {None, "pending", "resolved", "cancelled"}

(***************************************************************************)
(*                             VARIABLES                                   *)
(***************************************************************************)
VARIABLES
    \* The queue machine's data (Machine's containers, as in ThreadedQueue):
    accepted,    \* every id ever accepted
    qVisible,    \* ids of VISIBLE messages, head first
    qInFlight,   \* ids of IN_FLIGHT messages, in receive order
    qDead,       \* ids of DEAD messages, in order of death
    qDone,       \* ids of DONE (deleted) messages
    attempt,     \* attempt[i]: deliveries of i so far
    \* The tasks, their futures and the loop:
    op,          \* op[t]: the blocking call task t is in, "receive" or "send", or "none"
    arg,         \* arg[t]: the id sender t is sending (while op[t] = "send"), or None
    fut,         \* fut[t]: the state of the future t awaits (FutureStates)
    mustCancel,  \* mustCancel[t]: Task.cancel() hit t after its future was resolved:
                 \* its await raises CancelledError when it runs (Task._must_cancel)
    result,      \* result[r]: the receipt a waker put in r's future (Bug = "handoff"
                 \* only; None otherwise: the driver resolves with None)
    waiters,     \* waiters[c]: condition c's deque of futures, head first, each named
                 \* by the task that awaits it (a task awaits one future at a time)
    held         \* held[r]: the receipt <<id, attempt>> receiver r holds, or None

queueVars == <<accepted, qVisible, qInFlight, qDead, qDone, attempt>>
taskVars == <<op, arg, fut, mustCancel, result, waiters, held>>
vars == <<queueVars, taskVars>>

(***************************************************************************)
(*                             HELPERS                                     *)
(***************************************************************************)
Range(s) == {s[k] : k \in DOMAIN s}
Remove(s, x) == SelectSeq(s, LAMBDA y : y # x)
MinOf(S) == CHOOSE k \in S : \A j \in S : k <= j

\* The dead-letter policy of Machine.release: releasing a message delivered n
\* times kills it iff n >= MaxReceives.
Dies(n) == n >= MaxReceives

(***************************************************************************)
(* The whole state as one record, so that every step can be written as a  *)
(* function from a state to a state: the machine's step, then the wakeup   *)
(* it owes (Wake), composed in ONE step -- as in the driver, which applies *)
(* the step's outcome (Futures.notify) in the same callback as the step.   *)
(* Set(s) is the step whose new state is s.                                *)
(***************************************************************************)
S == [accepted |-> accepted, visible |-> qVisible, inFlight |-> qInFlight, dead |-> qDead,
      done |-> qDone, attempt |-> attempt, op |-> op, arg |-> arg, fut |-> fut,
      mustCancel |-> mustCancel, result |-> result, waiters |-> waiters, held |-> held]

Set(s) ==
    /\ accepted' = s.accepted
    /\ qVisible' = s.visible
    /\ qInFlight' = s.inFlight
    /\ qDead' = s.dead
    /\ qDone' = s.done
    /\ attempt' = s.attempt
    /\ op' = s.op
    /\ arg' = s.arg
    /\ fut' = s.fut
    /\ mustCancel' = s.mustCancel
    /\ result' = s.result
    /\ waiters' = s.waiters
    /\ held' = s.held

\* A receive finds a message: the visible head (the model bound of Queue,
\* attempt < MaxReceives, always holds of a visible message: one with
\* MaxReceives deliveries dies on its release instead).
Deliverable(s) == s.visible # <<>>

\* Machine.has_room: room for one more active message.
RoomIn(s) == IF Capacity = None THEN TRUE ELSE Len(s.visible) + Len(s.inFlight) < Capacity

\* The ids no sender has sent or is sending.
Unsent == Ids \ (accepted \cup {arg[t] : t \in Senders})

(***************************************************************************)
(* The data halves of the machine's steps (impl.machine.Machine, the       *)
(* steps the driver takes): each a function from a state to a state.       *)
(***************************************************************************)

\* Machine.send: the fresh id i joins the visible tail.
Accept(s, i) == [s EXCEPT !.accepted = @ \cup {i}, !.visible = Append(@, i)]

\* Machine.receive: the visible head goes in flight with the next attempt;
\* Receipt(s) is the receipt of that delivery.
Receipt(s) == <<Head(s.visible), s.attempt[Head(s.visible)] + 1>>
Deliver(s) ==
    LET i == Head(s.visible)
    IN [s EXCEPT !.visible = Tail(@), !.inFlight = Append(@, i), !.attempt[i] = @ + 1]

\* Machine.delete of the live receipt r: DONE, its slot freed.
Deleted(s, r) == [s EXCEPT !.inFlight = Remove(@, r[1]), !.done = @ \cup {r[1]}]

\* Machine.release of the live receipt r: dead-lettered after MaxReceives
\* deliveries (a slot freed), else back at the visible tail.
Released(s, r) ==
    LET i == r[1]
        dies == Dies(s.attempt[i])
    IN [s EXCEPT !.inFlight = Remove(@, i),
                 !.visible = IF dies THEN @ ELSE Append(@, i),
                 !.dead = IF dies THEN Append(@, i) ELSE @]

(***************************************************************************)
(* Suspend(s, t): the task t finds nothing to do and waits: a new future   *)
(* (loop.create_future), appended to its condition's deque, awaited.  The  *)
(* task yields to the loop; it is not ready until the future is done.      *)
(* The driver's wait (AsyncQueue._wait, a future in a Waiters deque).      *)
(***************************************************************************)
Suspend(s, t) == [s EXCEPT !.fut[t] = "pending", !.waiters[Cond(t)] = Append(@, t)]

(***************************************************************************)
(* Wake(s, c): the driver's Futures.notify(c) (Waiters.resolve_first):     *)
(* asyncio.Queue's _wakeup_next.  Pop futures from the head of c's deque   *)
(* until one is not done (a cancelled one, whose task has not yet run its  *)
(* handler, is skipped and dropped), and call its Future.set_result(None): *)
(* its task's wakeup is scheduled with loop.call_soon, so it is READY from *)
(* now on.                                                                 *)
(* No waiter pending: the deque ends empty and nobody is woken.            *)
(* It is not a step of its own: it is the end of the step whose machine    *)
(* transition made c true (Send, Delete, Retry) or of a PassOn.            *)
(*                                                                         *)
(* Bug = "handoff": the waker also delivers on the waiter's behalf, in the *)
(* same step: the visible head goes in flight and the future's result is   *)
(* its receipt (set_result(message)).                                      *)
(***************************************************************************)
Wake(s, c) ==
    LET w == s.waiters[c]
        pending == {k \in DOMAIN w : s.fut[w[k]] = "pending"}
    IN IF pending = {} THEN [s EXCEPT !.waiters[c] = <<>>]
       ELSE LET k == MinOf(pending)
                t == w[k]
                woken == [s EXCEPT !.waiters[c] = SubSeq(w, k + 1, Len(w)),
                                   !.fut[t] = "resolved"]
            IN IF Bug = "handoff" /\ c = "not_empty" /\ Deliverable(woken)
               THEN [Deliver(woken) EXCEPT !.result[t] = Receipt(woken)]
               ELSE woken

\* The loop's ready callbacks: the tasks whose future is done (resolved or
\* cancelled) and which have not run since; Future's done callbacks are
\* scheduled with loop.call_soon, which is what makes them ready.
Ready == {t \in Tasks : fut[t] \in {"resolved", "cancelled"}}

(***************************************************************************)
(* Unwind(s, t): the except-clause around the await: the future is taken   *)
(* out of its deque if it is still there (deque.remove; a notify may have  *)
(* popped it), the call raises CancelledError and the task leaves it.  A   *)
(* send never happened (its id stays unsent); a handoff's receipt in the   *)
(* future is dropped with it.                                              *)
(***************************************************************************)
Unwind(s, t) ==
    [s EXCEPT !.waiters[Cond(t)] = Remove(@, t), !.fut[t] = None, !.mustCancel[t] = FALSE,
              !.op[t] = "none", !.arg[t] = None,
              !.result = IF t \in Receivers THEN [@ EXCEPT ![t] = None] ELSE @]

(***************************************************************************)
(*                             ACTIONS                                     *)
(*                                                                         *)
(* Each action is one loop step: one task runs from where it was to its    *)
(* next await or to the end of its call.                                   *)
(***************************************************************************)

(***************************************************************************)
(* Send(t, i): sender t calls send(i) and there is room: the machine's     *)
(* send, then the wakeup it owes: Wake(not_empty).  No await:              *)
(* the call returns in this step.                                          *)
(***************************************************************************)
Send(t, i) ==
    /\ t \in Senders /\ op[t] = "none" /\ i \in Unsent
    /\ RoomIn(S)
    /\ Set(Wake(Accept(S, i), "not_empty"))

(***************************************************************************)
(* Receive(t): receiver t calls receive() and a message is visible: the    *)
(* machine's receive delivers it in t's own step, and receive()            *)
(* returns it: t holds the receipt.  No await between the two.             *)
(***************************************************************************)
Receive(t) ==
    /\ t \in Receivers /\ op[t] = "none" /\ held[t] = None
    /\ Deliverable(S)
    /\ Set([Deliver(S) EXCEPT !.held[t] = Receipt(S)])

(***************************************************************************)
(* Wait(t, x): t calls receive() (x = None) or send(x) and the machine's   *)
(* step answers Blocked (NOTHING or NO_ROOM): it awaits a new future on    *)
(* its condition (Suspend).                                                *)
(***************************************************************************)
Wait(t, x) ==
    /\ op[t] = "none"
    /\ \/ t \in Receivers /\ held[t] = None /\ x = None /\ ~Deliverable(S)
       \/ t \in Senders /\ x \in Unsent /\ ~RoomIn(S)
    /\ Set(Suspend([S EXCEPT !.op[t] = IF t \in Receivers THEN "receive" ELSE "send",
                             !.arg[t] = x], t))

(***************************************************************************)
(* Resume(t): t was woken (its future resolved, no cancellation) and the   *)
(* loop runs it: the await returns and the call's loop re-checks, in this  *)
(* one step.  A receiver receives if a message is visible (Bug =           *)
(* "handoff": it takes the receipt from the future's result), a sender     *)
(* sends if there is room (and wakes a receiver); otherwise the task waits *)
(* again, on a new future at the deque's tail (another task took what it   *)
(* was woken for, as asyncio.Queue's `while self.empty()' loop allows).    *)
(***************************************************************************)
Resume(t) ==
    /\ fut[t] = "resolved" /\ ~mustCancel[t]
    /\ LET s == [S EXCEPT !.fut[t] = None]
       IN CASE t \in Receivers /\ result[t] # None ->
                 Set([s EXCEPT !.held[t] = result[t], !.result[t] = None, !.op[t] = "none"])
            [] t \in Receivers /\ Deliverable(s) ->
                 Set([Deliver(s) EXCEPT !.held[t] = Receipt(s), !.op[t] = "none"])
            [] t \in Senders /\ RoomIn(s) ->
                 Set(Wake(Accept([s EXCEPT !.op[t] = "none", !.arg[t] = None], arg[t]),
                          "not_empty"))
            [] OTHER ->
                 Set(Suspend(s, t))

(***************************************************************************)
(* Cancel(t): Task.cancel() of t while it awaits in a blocking call (any   *)
(* other code may call it: a task group failing, asyncio.timeout,          *)
(* wait_for).  If the future is pending, Future.cancel(): the future is    *)
(* cancelled and t's wakeup is scheduled (loop.call_soon), so t is ready.  *)
(* If the future is already resolved (t is ready, woken but not yet run),  *)
(* it cannot be cancelled: Task._must_cancel is set instead.  Either way t *)
(* raises CancelledError at its await when it runs.  (Not Queue's          *)
(* Cancel(i), which cancels a message: q.cancel(id) is a plain method.)    *)
(***************************************************************************)
Cancel(t) ==
    /\ op[t] # "none"
    /\ \/ fut[t] = "pending" /\ fut' = [fut EXCEPT ![t] = "cancelled"] /\ UNCHANGED mustCancel
       \/ fut[t] = "resolved" /\ ~mustCancel[t]
          /\ mustCancel' = [mustCancel EXCEPT ![t] = TRUE] /\ UNCHANGED fut
    /\ UNCHANGED <<queueVars, op, arg, result, waiters, held>>

(***************************************************************************)
(* Withdraw(t): t runs after a Cancel of its pending future: CancelledError *)
(* at the await; it was never woken, so it owes nobody anything: it takes  *)
(* its future out of the deque and the call raises (Unwind).               *)
(* Bug = "no_pass_on": a task that WAS woken does the same (the driver's   *)
(* Futures.pass_on does nothing), and the wakeup it was given is lost.     *)
(***************************************************************************)
Withdraw(t) ==
    /\ \/ fut[t] = "cancelled"
       \/ Bug = "no_pass_on" /\ fut[t] = "resolved" /\ mustCancel[t]
    /\ Set(Unwind(S, t))

(***************************************************************************)
(* PassOn(t): t runs after a Cancel that came when its future was already  *)
(* resolved: CancelledError at the await, but it was woken because its     *)
(* condition became true, and it will not use that: it passes the wakeup   *)
(* on -- Futures.notify(cond) again, Wake -- and the call raises           *)
(* (asyncio.Queue: `if not getter.cancelled():                             *)
(* self._wakeup_next(self._getters)'; the driver's Futures.pass_on(cond)). *)
(* The wakeup goes to the next pending waiter, who re-checks as any woken  *)
(* task does.                                                              *)
(***************************************************************************)
PassOn(t) ==
    /\ Bug # "no_pass_on"
    /\ fut[t] = "resolved" /\ mustCancel[t]
    /\ Set(Wake(Unwind(S, t), Cond(t)))

(***************************************************************************)
(* Delete(t), Retry(t): receiver t acts on the receipt it holds (plain     *)
(* methods, no await).  A delete frees a slot and wakes a sender; a retry  *)
(* re-queues the message and wakes a receiver, or, dead-lettering it,      *)
(* frees a slot and wakes a sender.                                        *)
(***************************************************************************)
Delete(t) ==
    /\ t \in Receivers /\ held[t] # None
    /\ Set(Wake([Deleted(S, held[t]) EXCEPT !.held[t] = None], "not_full"))

Retry(t) ==
    /\ t \in Receivers /\ held[t] # None
    /\ LET c == IF Dies(attempt[held[t][1]]) THEN "not_full" ELSE "not_empty"
       IN Set(Wake([Released(S, held[t]) EXCEPT !.held[t] = None], c))

(***************************************************************************)
(*                        THE SPECIFICATION                                *)
(***************************************************************************)
Init ==
    /\ accepted = {}
    /\ qVisible = <<>>
    /\ qInFlight = <<>>
    /\ qDead = <<>>
    /\ qDone = {}
    /\ attempt = [i \in Ids |-> 0]
    /\ op = [t \in Tasks |-> "none"]
    /\ arg = [t \in Tasks |-> None]
    /\ fut = [t \in Tasks |-> None]
    /\ mustCancel = [t \in Tasks |-> FALSE]
    /\ result = [r \in Receivers |-> None]
    /\ waiters = [c \in Conds |-> <<>>]
    /\ held = [r \in Receivers |-> None]

\* One disjunct per action, so that TLC's traces name each step.
Next ==
    \/ \E t \in Senders, i \in Ids : Send(t, i)
    \/ \E t \in Receivers : Receive(t)
    \/ \E t \in Receivers : Wait(t, None)
    \/ \E t \in Senders, i \in Ids : Wait(t, i)
    \/ \E t \in Tasks : Resume(t)
    \/ \E t \in Tasks : Cancel(t)
    \/ \E t \in Tasks : Withdraw(t)
    \/ \E t \in Tasks : PassOn(t)
    \/ \E t \in Receivers : Delete(t)
    \/ \E t \in Receivers : Retry(t)

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(*                THE REFINEMENT MAPPING: AsyncQueue -> Queue              *)
(*                                                                         *)
(* As ThreadedQueue's: a message's status is the container that holds its *)
(* id; no time passes (now = 0, no deadlines, no delays: a receive's       *)
(* timeout is None, so timers are the in-flight messages in receive        *)
(* order).  Every step that is no machine step (Wait, a Resume that waits  *)
(* again or takes a handed-off receipt, Cancel, Withdraw, PassOn) maps to  *)
(* a stuttering step of Queue; every other step is exactly one of Queue's  *)
(* actions: Send, Receive (also a Resume that receives), Delete, Retry.    *)
(***************************************************************************)
StatusOf(i) ==
    CASE i \in Range(qVisible)  -> "VISIBLE"
      [] i \in Range(qInFlight) -> "IN_FLIGHT"
      [] i \in qDone            -> "DONE"
      [] OTHER                  -> "DEAD"

AbsMsgs == [i \in accepted |-> [status |-> StatusOf(i), attempt |-> attempt[i],
                                deadline |-> None, visibleAt |-> None]]

Queue == INSTANCE Queue
           WITH msgs <- AbsMsgs, visible <- qVisible, inFlight <- qInFlight, dead <- qDead,
                delayed <- <<>>, timers <- qInFlight, now <- 0, MaxAttempt <- MaxReceives,
                VisibilityTimeouts <- {None}, ExtendTimeouts <- {}, MaxTime <- 0,
                Delays <- {0}, MaxBatch <- 1

QueueSpec == Queue!Spec

\* The contract's invariants, by their names, of the mapped state.
OneState == Queue!OneState
CapacityBound == Queue!CapacityBound
OneLiveReceipt == Queue!OneLiveReceipt
AttemptsCount == Queue!AttemptsCount
FifoVisible == Queue!FifoVisible
IdsReserved == Queue!IdsReserved
QueueInvariants == Queue!TypeOK /\ Queue!Invariants
QueueSteps ==
    Queue!OneStateSteps /\ Queue!AttemptsCountSteps /\ Queue!FifoVisibleSteps
    /\ Queue!IdsReservedSteps /\ Queue!BatchAtomicSteps

(***************************************************************************)
(*                     INVARIANTS OF THE TASKS                             *)
(***************************************************************************)
Receipts == Ids \X (1..MaxReceives)

\* No element twice in a sequence.
NoDuplicates(s) == \A j, k \in DOMAIN s : j # k => s[j] # s[k]

TypeOK ==
    /\ accepted \subseteq Ids
    /\ {qVisible, qInFlight, qDead} \subseteq Seq(Ids)
    /\ qDone \subseteq accepted
    /\ attempt \in [Ids -> 0..MaxReceives]
    /\ op \in [Tasks -> {"none", "receive", "send"}]
    /\ arg \in [Tasks -> Ids \cup {None}]
    /\ fut \in [Tasks -> FutureStates]
    /\ mustCancel \in [Tasks -> BOOLEAN]
    /\ result \in [Receivers -> Receipts \cup {None}]
    /\ waiters \in [Conds -> Seq(Tasks)]
    /\ held \in [Receivers -> Receipts \cup {None}]

(***************************************************************************)
(* WaiterFutures: the loop's bookkeeping is what the comments say.  A task *)
(* awaits a future exactly while it is in a blocking call; a pending       *)
(* future is in its condition's deque, once; the deques hold only pending  *)
(* futures and cancelled ones whose task has not run yet (a resolved one   *)
(* was popped by the notify that resolved it); _must_cancel is set only on *)
(* a woken task; only a handoff puts a receipt in a future; a task holding *)
(* a receipt is in no call.                                                *)
(***************************************************************************)
WaiterFutures ==
    /\ \A t \in Tasks : (op[t] = "none") <=> (fut[t] = None)
    /\ \A t \in Tasks : (op[t] = "send") <=> (arg[t] # None)
    /\ \A t \in Tasks : op[t] # "none" => op[t] = IF t \in Receivers THEN "receive" ELSE "send"
    /\ \A t \in Tasks : fut[t] = "pending" =>
           Cardinality({k \in DOMAIN waiters[Cond(t)] : waiters[Cond(t)][k] = t}) = 1
    /\ \A c \in Conds : \A k \in DOMAIN waiters[c] :
           /\ Cond(waiters[c][k]) = c
           /\ fut[waiters[c][k]] \in {"pending", "cancelled"}
    /\ \A c \in Conds : NoDuplicates(waiters[c])
    /\ \A t \in Tasks : mustCancel[t] => fut[t] = "resolved"
    /\ \A r \in Receivers : result[r] # None => Bug = "handoff" /\ fut[r] = "resolved"
    /\ \A r \in Receivers : held[r] # None => op[r] = "none"

(***************************************************************************)
(* NothingLost (the contract's rule for every extension): every accepted   *)
(* message is in exactly one container, once -- no cancellation or        *)
(* interleaving loses one or doubles one -- and a send that is still       *)
(* waiting (or was cancelled) has not been accepted: a send is accepted    *)
(* once, in its own step, or not at all.                                   *)
(***************************************************************************)
NothingLost ==
    /\ NoDuplicates(qVisible) /\ NoDuplicates(qInFlight) /\ NoDuplicates(qDead)
    /\ Range(qVisible) \cup Range(qInFlight) \cup Range(qDead) \cup qDone = accepted
    /\ \A i \in accepted :
           Cardinality({X \in {Range(qVisible), Range(qInFlight), Range(qDead), qDone} : i \in X})
               = 1
    /\ \A t \in Senders : arg[t] # None => arg[t] \notin accepted

(***************************************************************************)
(* HeldDeliveries: every in-flight message's current delivery was returned *)
(* to a task: its receipt is held by a receiver -- or, with a handoff, is  *)
(* the result of the future a woken receiver has not yet run to take.  No  *)
(* in-flight message that nobody holds (it would sit there until its       *)
(* visibility timeout, a redelivery nobody asked for).                     *)
(***************************************************************************)
HeldDeliveries ==
    \A i \in Range(qInFlight) :
        \E r \in Receivers : <<i, attempt[i]>> \in {held[r], result[r]}

(***************************************************************************)
(* NoSleepingWaiter: when the loop is idle (no task ready to run), no      *)
(* receiver waits while a message is visible, and no sender waits while   *)
(* the queue has room.  While a task is ready the invariant says nothing:  *)
(* that task is the one coming to use what was made true.                  *)
(***************************************************************************)
NoSleepingWaiter ==
    Ready = {} =>
        /\ \A t \in Receivers : fut[t] = "pending" => ~Deliverable(S)
        /\ \A t \in Senders : fut[t] = "pending" => ~RoomIn(S)

(***************************************************************************)
(*                             THEOREMS                                    *)
(***************************************************************************)
\* A handoff is no refinement either: its Send step also delivers, two of
\* Queue's steps in one (tests/test_tla_async.py shows TLC finding it).
THEOREM (Bug # "handoff") => (Spec => QueueSpec)
THEOREM (Bug = "handoff") => ~(Spec => QueueSpec)
THEOREM Spec => [](TypeOK /\ WaiterFutures /\ QueueInvariants /\ NothingLost)
THEOREM (Spec /\ Bug # "handoff") => []HeldDeliveries
THEOREM (Spec /\ Bug = "none") => []NoSleepingWaiter
THEOREM (Bug = "handoff") => ~(Spec => []HeldDeliveries)
THEOREM (Bug = "no_pass_on") => ~(Spec => []NoSleepingWaiter)
=============================================================================
