"""TensorFlow: ``tf.while_loop`` over time with a ``TensorArray``, compiled by XLA; its
gradient by TensorFlow's autodiff or, in ``TFWhileBPTTBackend`` with output feedback,
written by hand."""

from impls.tf_while.backend import TFWhileBackend, TFWhileBPTTBackend

__all__ = ["TFWhileBPTTBackend", "TFWhileBackend"]
