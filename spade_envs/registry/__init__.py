"""The SQL registry of environment versions (SQLite by default, PostgreSQL to share).

Environment versions are immutable and become Gymnasium IDs (``spade/<Name>-v<N>``,
see ``gym_ids``); validation reports, play statistics, grounding documents and
embeddings are attached to them. Older databases are upgraded in place
(``migrations``). Importing this package loads SQLAlchemy lazily, inside the store's
methods.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .ids import NAMESPACE, check_name, env_id, parse_env_id

if TYPE_CHECKING:
    from .migrations import SCHEMA_VERSION
    from .records import Document, EnvRecord, PlayStats, ValidationRecord
    from .store import SORTS, STATUSES, Registry, default_url

# ``import spade_envs`` installs the gym.make hook, which only needs ``ids``; the store
# and its records load on first use, keeping the package import cheap.
_LAZY = {
    "SCHEMA_VERSION": "migrations",
    "Document": "records",
    "EnvRecord": "records",
    "PlayStats": "records",
    "ValidationRecord": "records",
    "SORTS": "store",
    "STATUSES": "store",
    "Registry": "store",
    "default_url": "store",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "NAMESPACE",
    "SCHEMA_VERSION",
    "SORTS",
    "STATUSES",
    "Document",
    "EnvRecord",
    "PlayStats",
    "ValidationRecord",
    "Registry",
    "check_name",
    "default_url",
    "env_id",
    "parse_env_id",
]
