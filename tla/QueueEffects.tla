---------------------------- MODULE QueueEffects ----------------------------
(***************************************************************************)
(* Exactly-once EFFECTS: the consumer's half of the bargain, proven where  *)
(* it holds and refuted where it does not.                                 *)
(*                                                                         *)
(* The queue delivers at least once (QueueConsumers.tla: ExactlyOnce.cfg   *)
(* shows the duplicate).  What a user wants exactly once is the EFFECT of  *)
(* a message: the row written, the parcel shipped.  Here consumers apply   *)
(* each delivery's effect to a durable effect store that also keeps        *)
(* idempotency keys (the ids whose effect is done), then delete.  A        *)
(* consumer may be slow (its delivery expires and the sweeper hands the    *)
(* message to another consumer) and may crash between any two of its       *)
(* steps (its delivery then expires too).  The store survives crashes.     *)
(*                                                                         *)
(* Two ways to keep the key, chosen by the constant AtomicRecord:          *)
(*   TRUE  -- check the key, apply the effect and record the key in ONE    *)
(*            step (one transaction, one lock): EffectOnce holds           *)
(*            (QueueEffects.cfg, must pass);                               *)
(*   FALSE -- check and apply in one step, record the key in a LATER step  *)
(*            (a careless consumer): between the two the key is missing,   *)
(*            and a redelivered copy applies the effect again: EffectOnce  *)
(*            is violated (QueueEffectsCareless.cfg, must fail).           *)
(*                                                                         *)
(* The Python twins: examples/effect_once.py (EffectStore.apply is Apply   *)
(* with AtomicRecord, CarelessStore.apply and .record are Apply and Record *)
(* without); model_tests/tests/test_understanding_effects.py replays TLC's *)
(* counterexample on impl.Queue.                                           *)
(***************************************************************************)
EXTENDS Queue

(***************************************************************************)
(*                             CONSTANTS                                   *)
(***************************************************************************)
CONSTANTS
    Consumers,     \* the consumer threads (model values c1, c2)
    NoReceipt,     \* a model value: the consumer holds no delivery
    AtomicRecord   \* TRUE: the key is recorded in the step that applies the effect

ASSUME AtomicRecord \in BOOLEAN

(***************************************************************************)
(*                             VARIABLES                                   *)
(***************************************************************************)
VARIABLES
    held,      \* held[c]: the receipt <<id, attempt>> consumer c works on, or NoReceipt
    phase,     \* phase[c]: where consumer c is in its work on held[c]:
               \*   "idle"     holds nothing;
               \*   "received" holds a delivery, has not touched the store yet;
               \*   "applied"  applied the effect, key not yet recorded (careless only);
               \*   "recorded" the effect is done and its key recorded (by c or by an
               \*              earlier delivery): ready to delete
    effects,   \* effects[i]: how many times message i's effect has been applied (the store)
    keys       \* the idempotency keys recorded in the store: ids whose effect is done

effectVars == <<held, phase, effects, keys>>
allVars == <<vars, effectVars>>

Phases == {"idle", "received", "applied", "recorded"}

\* The id of the message consumer c works on.
HeldId(c) == held[c][1]

(***************************************************************************)
(*                             ACTIONS                                     *)
(*                                                                         *)
(* Each is one call of the example's API (examples/effect_once.py) or of   *)
(* the queue's, and has the same name as in QueueConsumers.tla.            *)
(***************************************************************************)

\* q.send(i): a producer sends message i (the queue's Send, without a delay).
Produce(i) == Send(i, 0) /\ UNCHANGED effectVars

\* q.receive(vt): an idle consumer c receives the head of visible with timeout v and holds
\* the fresh receipt of that delivery.
Consume(c, v) ==
    /\ phase[c] = "idle"
    /\ visible # <<>>
    /\ held' = [held EXCEPT ![c] = <<Head(visible), msgs[Head(visible)].attempt + 1>>]
    /\ phase' = [phase EXCEPT ![c] = "received"]
    /\ Receive(v)
    /\ UNCHANGED <<effects, keys>>

(***************************************************************************)
(* store.apply(key, effect): consumer c looks up the message's key and,    *)
(* if it is missing, applies the effect -- all in this one step, which is  *)
(* what makes the check meaningful (a check in one step and the effect in  *)
(* another would race between them, examples/idempotent.py).  A key        *)
(* already there means an earlier delivery did the work: the duplicate is  *)
(* skipped.  With AtomicRecord the key is recorded in this same step; a    *)
(* careless consumer leaves it for Record.  The queue does not move: the   *)
(* store is not the queue, and the receipt may be stale by now.            *)
(***************************************************************************)
Apply(c) ==
    LET i == HeldId(c)
    IN /\ phase[c] = "received"
       /\ IF i \in keys
          THEN /\ phase' = [phase EXCEPT ![c] = "recorded"]
               /\ UNCHANGED <<effects, keys>>
          ELSE /\ effects' = [effects EXCEPT ![i] = @ + 1]
               /\ IF AtomicRecord
                  THEN /\ keys' = keys \cup {i}
                       /\ phase' = [phase EXCEPT ![c] = "recorded"]
                  ELSE /\ phase' = [phase EXCEPT ![c] = "applied"]
                       /\ UNCHANGED keys
       /\ UNCHANGED <<vars, held>>

\* store.record(key): the careless consumer's second step: the key, after the effect.
Record(c) ==
    /\ phase[c] = "applied"
    /\ keys' = keys \cup {HeldId(c)}
    /\ phase' = [phase EXCEPT ![c] = "recorded"]
    /\ UNCHANGED <<vars, held, effects>>

(***************************************************************************)
(* q.delete(receipt): consumer c is done and deletes its delivery.  If the *)
(* receipt is still live the message is DONE; if the sweeper released it   *)
(* meanwhile, delete returns FALSE and changes nothing.  Either way c is   *)
(* idle again.                                                             *)
(***************************************************************************)
Finish(c) ==
    /\ phase[c] = "recorded"
    /\ IF Live(held[c]) THEN Delete(held[c]) ELSE UNCHANGED vars
    /\ held' = [held EXCEPT ![c] = NoReceipt]
    /\ phase' = [phase EXCEPT ![c] = "idle"]
    /\ UNCHANGED <<effects, keys>>

(***************************************************************************)
(* Consumer c crashes between two of its steps and restarts empty-handed:  *)
(* what it held in memory is gone; the store (effects, keys) is durable.   *)
(* Its delivery stays in flight until the sweeper releases it.             *)
(***************************************************************************)
Crash(c) ==
    /\ phase[c] # "idle"
    /\ held' = [held EXCEPT ![c] = NoReceipt]
    /\ phase' = [phase EXCEPT ![c] = "idle"]
    /\ UNCHANGED <<vars, effects, keys>>

\* q.sweep(): the sweeper releases every expired delivery (the queue's Expire).
Sweep == Expire /\ UNCHANGED effectVars

\* clock.advance(1): time passes (the queue's Tick).
Clock == Tick /\ UNCHANGED effectVars

(***************************************************************************)
(*                          THE SPECIFICATION                              *)
(***************************************************************************)
EffectsInit ==
    /\ Init
    /\ held = [c \in Consumers |-> NoReceipt]
    /\ phase = [c \in Consumers |-> "idle"]
    /\ effects = [i \in Ids |-> 0]
    /\ keys = {}

EffectsNext ==
    \/ \E i \in Ids : Produce(i)
    \/ \E c \in Consumers, v \in VisibilityTimeouts : Consume(c, v)
    \/ \E c \in Consumers : Apply(c) \/ Record(c) \/ Finish(c) \/ Crash(c)
    \/ Sweep
    \/ Clock

EffectsSpec == EffectsInit /\ [][EffectsNext]_allVars

(***************************************************************************)
(*                        INVARIANTS AND PROPERTIES                        *)
(***************************************************************************)

\* The shapes of the consumer and store variables.
EffectsTypeOK ==
    /\ TypeOK
    /\ \A c \in Consumers :
         /\ phase[c] \in Phases
         /\ (phase[c] = "idle") = (held[c] = NoReceipt)
         /\ held[c] = NoReceipt \/ held[c] \in Ids \X (1..MaxAttempt)
    /\ effects \in [Ids -> Nat]
    /\ keys \subseteq Ids

\* A key is recorded only for an effect that was applied.
KeysFollowEffects == \A i \in keys : effects[i] >= 1

(***************************************************************************)
(* EffectOnce: each message's effect is applied at most once, and exactly  *)
(* once for every message the queue has deleted (a consumer deletes only   *)
(* after the effect is done, by itself or by an earlier delivery).  The    *)
(* queue alone cannot give this (ExactlyOnce.cfg); the queue's receipts    *)
(* plus a store that records the key in the effect's own step can.         *)
(***************************************************************************)
EffectOnce ==
    \A i \in Ids :
        /\ effects[i] <= 1
        /\ (i \in Accepted /\ msgs[i].status = "DONE") => effects[i] = 1

(***************************************************************************)
(* NoDuplicateSkipped -- EXPECTED TO FAIL (QueueEffectsWitness.cfg), a     *)
(* witness that EffectOnce is not true for want of trying: TLC must reach  *)
(* a state where two consumers hold deliveries of the same message and     *)
(* both are done with it ("recorded"), i.e. the message WAS delivered      *)
(* twice and one of the two copies found the key and skipped the effect.   *)
(***************************************************************************)
NoDuplicateSkipped ==
    ~\E c, d \in Consumers :
        /\ c # d
        /\ phase[c] = "recorded" /\ phase[d] = "recorded"
        /\ HeldId(c) = HeldId(d)

\* The queue's own invariants keep holding with these consumers.
QueueInvariants == Invariants

THEOREM EffectsSpec => [](EffectsTypeOK /\ QueueInvariants /\ KeysFollowEffects)

\* Checked by TLC with QueueEffects.cfg; QueueEffectsCareless.cfg (AtomicRecord = FALSE) finds
\* the behaviour that breaks it.
THEOREM AtomicRecord => (EffectsSpec => []EffectOnce)
=============================================================================
