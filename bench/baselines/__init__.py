"""Baselines that exist only to be timed, each behind the contract so the harness times it
as it times every backend, each under one name:

- ``numba_floor``: the native floor, forward and back-propagation through time as plain
  loops compiled by Numba (``layout`` places one step's values);
- ``c_forward``: the same forward in plain C, the check that the floor is one;
- ``textbook_fix``: ``tf_while``'s loop in graph mode without XLA;
- ``keras_defaults``: ``keras_rnn`` through ``model.predict`` / ``model.fit`` with Keras'
  defaults;
- ``torch_eager``: PyTorch's eager loop, as a PyTorch user writes it first.
"""
