"""One folder per backend, each with the same files in the same roles:

- ``model.py``: the recurrence in its framework, the cell and the time loop, entered through
  ``unroll(config, weights, sequences, *, codes_given=False, state=None) -> (x̂, z, s_T)``,
  batch-major, from the feedback ``state`` (zeros for ``None``) to the feedback after the
  last step;
- ``train.py``: training, the loss, its gradients, the contract's SGD and Adam, the step;
- ``backend.py``: the adapter to ``frae.BaseBackend`` and its compile cache;
- ``__init__.py``: exports the backend class, which ``frae.registry`` names.

Each imports its own framework and ``frae``, nothing else.
"""
