"""The planted model in the facilitation study: its declared effects and how it writes and reads them."""

from __future__ import annotations

from typing import Any

from socsim.planted import Ask

EFFECTS: dict[str, float] = {}  # effect name -> its declared size


def answer(ask: Ask) -> Any:
    """This study's answer to `ask`, or None when the request is not this study's."""
    return None
