"""The self-play trainer: GRPO for both roles (filled in by the loop's author)."""

from __future__ import annotations
