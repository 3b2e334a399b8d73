"""One JSON text per value (keys sorted, no spaces, UTF-8 kept): what cache keys and params hashes are
computed from, so equal values always give equal keys."""

from __future__ import annotations

import json
from typing import Any

# One encoder, made once (json.dumps with arguments makes a new one per call: measurable per model call).
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    return _ENCODER.encode(value)
