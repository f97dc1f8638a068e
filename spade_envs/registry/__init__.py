"""The SQL registry of environment versions (SQLite by default, PostgreSQL to share).

Work in progress (issue 5): the store, IDs and schema are here; ``gym.make``
integration, embeddings, migrations beyond version 1 and the corpus CLI follow.
Importing this package loads SQLAlchemy lazily, inside the store's methods.
"""

from __future__ import annotations

from .ids import NAMESPACE, check_name, env_id, parse_env_id
from .store import SCHEMA_VERSION, STATUSES, EnvRecord, Registry, default_url

__all__ = [
    "NAMESPACE",
    "SCHEMA_VERSION",
    "STATUSES",
    "EnvRecord",
    "Registry",
    "check_name",
    "default_url",
    "env_id",
    "parse_env_id",
]
