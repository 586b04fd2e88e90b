"""``bench.variant``: a variant that does not stream must say why."""

from __future__ import annotations

import pytest


def test_a_variant_without_the_stream_must_say_why() -> None:
    from bench.roles import Role
    from bench.variant import Variant

    with pytest.raises(ValueError, match="no_stream"):
        Variant("quiet", "reference", Role.BASELINE, "no reason", operations=("predict",))
    with pytest.raises(ValueError, match="no_stream"):
        Variant("both", "reference", Role.BASELINE, "streams", no_stream="it does not")
