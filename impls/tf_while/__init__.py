"""TensorFlow: ``tf.while_loop`` over time with a ``TensorArray``, compiled by XLA; its
gradient by TensorFlow's autodiff or, with output feedback through
``hand_written_functions``, written by hand (the benchmark's twin, ``bench.twins.tf_while``)."""

from impls.tf_while.backend import TFWhileBackend

__all__ = ["TFWhileBackend"]
