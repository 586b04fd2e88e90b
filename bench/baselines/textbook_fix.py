"""The textbook fix: ``tf_while``'s loop in graph mode without XLA, kept to show what XLA buys.

The original question's model lost every gradient; the fix every answer gives is a
``tf.while_loop`` with the feedback as a loop variable inside a ``tf.function``. That trains,
but TensorFlow interprets a few dozen operations per time step.
"""

from __future__ import annotations

from impls.tf_while import TFWhileBackend


class TextbookFixBackend(TFWhileBackend):
    """``TFWhileBackend`` with ``tf.function(jit_compile=False)``: graph mode, step by step;
    it streams as ``tf_while`` does, the state an argument of the same graph."""

    name = "textbook_fix"
    jit_compile = False
    routes = ()  # no XLA: graph mode, step by step
