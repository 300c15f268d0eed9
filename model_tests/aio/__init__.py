"""Every order of the event loop: the asyncio driver (``impl.AsyncQueue``) run on a deterministic
loop (``loop.py``) whose ready callbacks, clock steps and cancellations an explorer
(``explore.py``) chooses, over small programs (``programs.py``), with the two teaching bugs as
mutants (``mutants.py``); ``python -m model_tests.aio`` prints the table or replays a schedule
(docs/schedule.md, "Every order of the event loop")."""
