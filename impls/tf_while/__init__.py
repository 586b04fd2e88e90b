"""TensorFlow: ``tf.while_loop`` over time with a ``TensorArray``, compiled by XLA."""

from impls.tf_while.backend import TFWhileBackend

__all__ = ["TFWhileBackend"]
