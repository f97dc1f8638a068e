"""The packaged seeds in a registry: given once, recorded, never forced back.

A registry opened by a user-facing entry point (``Registry(url, seeds=True)``: the CLI,
``spade-envs serve``, ``gym.make``) registers the packaged seeds it was never given, as
``validated`` versions, and records their names in its schema row (``spade_schema.
seeds_json``). The record, not the presence of rows, decides: a seed its user retired
stays retired, one removed from the database is not registered again, and a seed added by
a later spade-envs release is registered on the next such open. Tests and tools that
count versions open registries with ``seeds=False`` (the default), and code that needs
every seed as a parent (the designer, the trainer) calls ``register_seeds()``, which
registers whatever seed has no version yet, recorded or not.

Checking the record costs one indexed read and no seed import: the seeds' names come
from their module names (:func:`~spade_envs.seeds.declared_seed_names`); the seed
classes are imported only when one is actually registered.
"""

from __future__ import annotations

import json
import logging
from typing import Any

__all__ = ["recorded_seeds", "register_seeds"]


log = logging.getLogger("spade_envs.registry")


def recorded_seeds(engine: Any) -> set[str]:
    """The names of the seeds this registry was given (its schema row's record)."""
    from sqlmodel import Session

    from .tables import SchemaRow

    with Session(engine) as session:
        row = session.get(SchemaRow, 1)
        text = row.seeds_json if row is not None else None
    names = _parsed(text)
    if names is None:
        # Not a record this code wrote: give no seed rather than break every open, and
        # say so (the registry still works; `spade-envs list` shows what it holds).
        log.warning(
            "The registry's record of given seeds is malformed (%.80r); no seed is added "
            "automatically. register_seeds() adds them explicitly.",
            text,
        )
        from ..seeds import declared_seed_names

        return set(declared_seed_names())
    return names


def _parsed(text: str | None) -> set[str] | None:
    """The names a stored record lists, or None when it is not a list of names (a record
    this code did not write)."""
    try:
        names = json.loads(text or "[]")
    except ValueError:
        return None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    return set(names)


def register_seeds(registry: Any, *, once: bool) -> int:
    """Register the packaged seeds that have no version in ``registry`` yet.

    Args:
        registry: An open :class:`~spade_envs.registry.Registry`.
        once: Only the seeds this registry was never given (see the module docstring);
            False registers every seed without a version, given before or not.

    Returns:
        How many seed versions were registered now (status ``validated``).
    """
    from sqlmodel import Session, col, select

    from ..seeds import declared_seed_names
    from .tables import EnvironmentRow

    recorded = recorded_seeds(registry.engine)
    wanted = [n for n in declared_seed_names() if not (once and n in recorded)]
    if not wanted:
        return 0
    with Session(registry.engine) as session:
        present = set(
            session.exec(
                select(EnvironmentRow.name).where(col(EnvironmentRow.name).in_(wanted)).distinct()
            ).all()
        )
    missing = [n for n in wanted if n not in present]
    if missing:
        from ..core.metadata import describe
        from ..seeds import seed_class, seed_source

        registry.register_many(
            [(seed_source(n), describe(seed_class(n))) for n in missing], status="validated"
        )
    _record(registry.engine, recorded | set(wanted))
    return len(missing)


def _record(engine: Any, names: set[str]) -> None:
    from sqlmodel import Session

    from .tables import SchemaRow

    with Session(engine) as session:
        row = session.get(SchemaRow, 1)
        if row is None:  # prepare_schema writes it; a database without it is not ours
            return
        # Another process may have recorded seeds meanwhile: keep its names too (a
        # malformed record is replaced by ours).
        row.seeds_json = json.dumps(sorted(names | (_parsed(row.seeds_json) or set())))
        session.add(row)
        session.commit()
