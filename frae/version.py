"""The installed distribution's version, which ``frae --version`` and ``frae bench
--version`` print; it imports no framework."""

from __future__ import annotations


def version() -> str:
    """The installed distribution's version."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("frae")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"
