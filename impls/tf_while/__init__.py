"""TensorFlow: ``tf.while_loop`` over time with a ``TensorArray``, compiled by XLA; its
gradient by TensorFlow's autodiff."""

from impls.tf_while.backend import TFWhileBackend

__all__ = ["TFWhileBackend"]
