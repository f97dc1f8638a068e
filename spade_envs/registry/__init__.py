"""The SQL registry of environment versions (SQLite by default, PostgreSQL to share).

Environment versions are immutable and become Gymnasium IDs (``spade/<Name>-v<N>``,
see :mod:`spade_envs.runtime.gym_ids`); validation reports, play statistics, grounding documents and
embeddings are attached to them. Older databases are upgraded in place
(``migrations``). Seed names are reserved for the packaged seeds (``trust``); a registry
opened by a user-facing entry point (``Registry(url, seeds=True)``) gets the seeds once
(``seeding``). Imported code is validated on import by :mod:`spade_envs.runtime.imports`
(the registry stores; it never validates). Where a registry lives is decided by ``urls``
(paths or URLs; a missing directory is an error).
Importing this package loads SQLAlchemy lazily, inside the store's methods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from .ids import NAMESPACE, check_name, env_id, parse_env_id

if TYPE_CHECKING:
    from .light import LightRow, PlayRow
    from .migrations import SCHEMA_VERSION
    from .records import (
        Document,
        EnvRecord,
        PlayStats,
        QuarantineEvidence,
        Registered,
        ValidationRecord,
    )
    from .store import SORTS, STATUSES, Registry
    from .trust import (
        QuarantinedEnvWarning,
        ReservedNameError,
        RetiredEnvWarning,
        UnvalidatedEnvWarning,
        warn_quarantined,
    )
    from .urls import RegistryLocationError, default_url, resolve_url

# ``import spade_envs`` installs the gym.make hook, which only needs ``ids``; the store
# and its records load on first use, keeping the package import cheap.
_LAZY = {
    "SCHEMA_VERSION": "migrations",
    "Document": "records",
    "EnvRecord": "records",
    "PlayStats": "records",
    "QuarantineEvidence": "records",
    "Registered": "records",
    "ValidationRecord": "records",
    "SORTS": "store",
    "STATUSES": "store",
    "Registry": "store",
    "default_url": "urls",
    "resolve_url": "urls",
    "RegistryLocationError": "urls",
    "LightRow": "light",
    "PlayRow": "light",
    "ReservedNameError": "trust",
    "UnvalidatedEnvWarning": "trust",
    "RetiredEnvWarning": "trust",
    "QuarantinedEnvWarning": "trust",
    "warn_quarantined": "trust",
}


__getattr__ = lazy_exports(__name__, _LAZY, globals())


__all__ = [
    "NAMESPACE",
    "SCHEMA_VERSION",
    "SORTS",
    "STATUSES",
    "Document",
    "EnvRecord",
    "LightRow",
    "PlayRow",
    "PlayStats",
    "QuarantineEvidence",
    "QuarantinedEnvWarning",
    "ValidationRecord",
    "Registered",
    "Registry",
    "RegistryLocationError",
    "ReservedNameError",
    "RetiredEnvWarning",
    "UnvalidatedEnvWarning",
    "check_name",
    "default_url",
    "env_id",
    "parse_env_id",
    "resolve_url",
    "warn_quarantined",
]
