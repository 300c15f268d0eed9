"""Dead letters: a message that fails every time is set aside after ``max_receives`` deliveries.

A poison message (here: a body the consumer cannot parse) would otherwise come back for ever.
With ``max_receives=3`` the release after its third delivery dead-letters it instead; a release
is a ``retry`` (as here), a ``change_visibility(receipt, 0)`` or an expired visibility timeout,
all alike. The dead message leaves the queue, freeing its capacity, and ``dead_letters()`` lists
it with its last attempt. The good messages around it are processed as usual.
"""

from impl import Empty, FakeClock, Queue


def main() -> tuple[list[int], list[tuple[str, int]]]:
    processed: list[int] = []
    with Queue[str](max_receives=3, visibility_timeout=30.0, clock=FakeClock()) as q:
        for id, body in [("a", "1"), ("poison", "not a number"), ("b", "2")]:
            q.send(body, id=id)
        while True:
            try:
                m = q.receive(block=False)
            except Empty:
                break  # nothing visible any more: everything is done or dead
            try:
                processed.append(int(m.body))
            except ValueError:
                print(f"{m.id}: attempt {m.attempt} failed, given back")
                q.retry(m.receipt)  # visible again at once, at the tail (or dead, at the 3rd)
                continue
            q.delete(m.receipt)
        dead = [(m.id, m.attempt) for m in q.dead_letters()]
    print(f"processed: {processed}; dead letters: {dead}")
    return processed, dead


if __name__ == "__main__":
    main()
