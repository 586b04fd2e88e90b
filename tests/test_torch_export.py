"""torch_scan's export refusals, pinned: each is retried here against the installed PyTorch,
so an upgrade that lifts one fails this test and shows that the format can be made."""

from __future__ import annotations

from pathlib import Path

import pytest

import frae

torch_export = pytest.importorskip("impls.torch_scan.export", exc_type=ImportError)


@pytest.mark.slow
def test_aot_inductor_still_cannot_compile_the_scan_over_a_symbolic_t(tmp_path: Path) -> None:
    from torch._inductor.exc import InductorError

    config = frae.FRAEConfig()
    with pytest.raises(InductorError, match="KeyError"):
        torch_export.aoti_package(config, frae.initial_weights(config, 0), tmp_path / "m.pt2")


def test_pt2_is_refused_with_the_upstream_error(tmp_path: Path) -> None:
    model = frae.create("torch_scan")
    with pytest.raises(ValueError, match="AOTInductor cannot compile the scan"):
        frae.export(model, tmp_path / "artifact", format="pt2")
    assert list(tmp_path.iterdir()) == []
