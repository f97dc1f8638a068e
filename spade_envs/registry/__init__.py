"""The SQL registry of environment versions (SQLite by default, PostgreSQL to share).

Environment versions are immutable and become Gymnasium IDs (``spade/<Name>-v<N>``,
see ``gym_ids``); validation reports, play statistics, grounding documents and
embeddings are attached to them. Older databases are upgraded in place
(``migrations``). Importing this package loads SQLAlchemy lazily, inside the store's
methods.
"""

from __future__ import annotations

from .ids import NAMESPACE, check_name, env_id, parse_env_id
from .migrations import SCHEMA_VERSION
from .records import Document, EnvRecord, PlayStats, ValidationRecord
from .store import SORTS, STATUSES, Registry, default_url

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
