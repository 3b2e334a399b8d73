"""One JSON text per value (keys sorted, no spaces, UTF-8 kept): what cache keys and params hashes are
computed from, so equal values always give equal keys."""

from __future__ import annotations

import json
from typing import Any


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
