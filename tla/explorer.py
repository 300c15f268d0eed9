"""TLC's counterexamples on the explorer page: a saved trace as a ``spec.html.Counterexample``.

The page (:mod:`spec.html`) draws the spec's state graph and steps through counterexamples; it
does not read TLC's output. This module does, with the repository's one trace reader
(:func:`tla.counterexample.parse_trace`): each state's variables as TLC printed them, and, for a
state of a queue model, the :data:`spec.html.QueueView` it stands for, by which
:func:`spec.html.link` puts the trace on a graph. The dependency runs one way, as everywhere in
``tla``: this module imports ``spec``, never the reverse.

Its users: ``python -m spec explore --html out.html --trace FILE`` and the diagram tool
(``tools/diagrams.py``), which writes ``docs/explorer.html`` with ``docs/diagrams/*.trace``.
"""

from __future__ import annotations

from typing import Final

from spec.html import CexStep, Counterexample, QueueView
from tla.counterexample import TraceStep, messages, parse_trace, verdict
from tla.values import Value

#: The variables a state of a queue model has (``delayed`` and ``timers`` too, if it has delays).
QUEUE_VARIABLES: Final = frozenset({"msgs", "visible", "inFlight", "dead", "now"})


def _attempt(v: object) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise ValueError(f"a message's attempt is not an integer: {v!r}")
    return v


def _opt(x: object) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _ids(state: dict[str, Value], name: str) -> tuple[str, ...]:
    seq = state.get(name, ())
    assert isinstance(seq, tuple), f"{name} is not a sequence: {seq!r}"
    return tuple(str(x) for x in seq)


def queue_view(step: TraceStep) -> QueueView | None:
    """The :data:`spec.html.QueueView` of a TLC state, ``None`` if it is not a queue model's
    state (it lacks one of :data:`QUEUE_VARIABLES`: a threaded model's, say)."""
    v = step.state
    if not set(v) >= QUEUE_VARIABLES:
        return None
    now = v["now"]
    assert isinstance(now, int)
    msgs = tuple(
        sorted(
            (
                i,
                str(r["status"]),
                _attempt(r["attempt"]),
                _opt(r["deadline"]),
                _opt(r.get("visibleAt")),
            )
            for i, r in messages(v).items()
        )
    )
    return (
        now,
        msgs,
        _ids(v, "visible"),
        _ids(v, "inFlight"),
        _ids(v, "dead"),
        _ids(v, "delayed"),
        _ids(v, "timers"),
    )


def load_trace(
    text: str, key: str, title: str = "", model: str = "", about: str = "", graph: str | None = None
) -> Counterexample:
    """A :class:`spec.html.Counterexample` from a trace as TLC printed it
    (``tla.tlc.Result.trace()``, saved as ``docs/diagrams/*.trace``). A state with the queue's
    variables gets its :data:`spec.html.QueueView` (:func:`queue_view`), so that
    :func:`spec.html.link` can put it on a graph.

    ``ValueError`` if ``text`` is not a TLC trace.
    """
    parsed = parse_trace(text)
    return Counterexample(
        key=key,
        title=title or key,
        model=model,
        violation=verdict(text),
        steps=tuple(CexStep(st.number, st.action, st.printed, queue_view(st)) for st in parsed),
        about=about,
        graph=graph,
        fifo=any("sent" in st.state for st in parsed),
    )
