"""What both test rooms share: compiled programs cached on disk in this checkout.

``torch.compile`` keeps what Inductor compiled in a cache on disk; pointed at ``.cache/`` here
(unless ``TORCHINDUCTOR_CACHE_DIR`` is set), every process a run starts (pytest's workers, the
data-parallel workers, the nested runs) shares it, and a fresh clone starts from nothing, so a
run's time does not depend on what earlier runs left in the machine's temporary folder.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE = Path(__file__).resolve().parent / ".cache"
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(CACHE / "torchinductor"))
