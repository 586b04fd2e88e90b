"""One folder per backend, each with the same files: ``model.py`` holds the recurrence in its
framework, ``backend.py`` the ``frae.BaseBackend`` subclass, ``__init__.py`` exports it."""
