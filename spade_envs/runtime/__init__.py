"""The runtime: the one layer that turns an ID, a name or a record into a running
environment and decides whether to trust it (``door``), Gymnasium's ``spade/`` IDs
(``gym_ids``), and replay audits of what was played (``audit``).

It sits above ``registry/`` (storage), ``sandbox/`` (isolation) and ``validation/``
(verdicts); those never import it.
"""

from __future__ import annotations

from .door import make, open_id, open_record, open_source, register_seed, resolve

__all__ = ["make", "open_id", "open_record", "open_source", "register_seed", "resolve"]
