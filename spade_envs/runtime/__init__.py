"""The runtime: the one layer that turns an ID, a name or a record into a running
environment and decides whether to trust it (``door``), Gymnasium's ``spade/`` IDs
(``gym_ids``), replay audits of what was played (``audit``), and the validation of what an
import brings in (``imports``).

It sits above ``registry/`` (storage), ``sandbox/`` (isolation) and ``validation/``
(verdicts); those never import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from .door import make, open_id, open_record, open_source, register_seed, resolve

if TYPE_CHECKING:
    from .imports import import_corpus, validate_stored

__all__ = [
    "import_corpus",
    "make",
    "open_id",
    "open_record",
    "open_source",
    "register_seed",
    "resolve",
    "validate_stored",
]

__getattr__ = lazy_exports(
    __name__, {"import_corpus": "imports", "validate_stored": "imports"}, globals()
)
