"""The registry as iteration ``k`` of a run saw it: what makes a resumed run decide the same.

A run killed during iteration ``k`` leaves behind what that iteration had already written:
environments the designer registered and play statistics of checkpoint ``<run>-iter<k>``.
Resumed from the checkpoint of iteration ``k - 1``, the run does iteration ``k`` again.
Registering identical code is idempotent (the registry returns the existing version), but
the designer's novelty check would now find each of those environments in memory and
reject it as a copy of itself, and the memory's high-hint-gain and too-easy/too-hard examples
would include statistics from the future.

:class:`RunView` wraps the registry and hides, during iteration ``k``, every version this
run registered at iteration ``k`` or later (the designer records
``extra["designer_run"] = "<run>-iter<j>"``) and every play statistic of checkpoint
``<run>-iter<j>`` with ``j >= k``, until this process registers that version again. Every
other call goes to the registry unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["RunView", "iteration_tag", "tag_iteration"]


def iteration_tag(run_id: str, iteration: int) -> str:
    """``<run>-iter<k>``: the designer run id of an iteration and the checkpoint name its
    play statistics are stored under."""
    return f"{run_id}-iter{iteration}"


def tag_iteration(tag: str, run_id: str) -> int | None:
    """The iteration of an :func:`iteration_tag` of ``run_id``; None for another run's tag."""
    prefix = iteration_tag(run_id, 0)[:-1]
    rest = tag.removeprefix(prefix) if isinstance(tag, str) and tag.startswith(prefix) else ""
    return int(rest) if rest.isdigit() else None


class RunView:
    """A registry that hides this run's own future (see the module docstring).

    Args:
        registry: The :class:`~spade_envs.registry.Registry`.
        run_id: The run's id (stable across resumes).
        iteration: The iteration being done (call :meth:`begin` for each).
    """

    def __init__(self, registry: Any, run_id: str, iteration: int = 1) -> None:
        self._registry = registry
        self.run_id = run_id
        self.iteration = iteration
        self._seen: set[int] = set()  # keys registered (again) during this iteration

    @property
    def run_id(self) -> str:
        """The run whose later iterations are hidden."""
        return self._run_id

    @run_id.setter
    def run_id(self, value: str) -> None:
        self._run_id = value
        self._pattern = re.compile(re.escape(value) + r"-iter(\d+)$")

    @property
    def registry(self) -> Any:
        """The wrapped registry."""
        return self._registry

    def begin(self, iteration: int) -> None:
        """Start iteration ``iteration``: hide what this run made there or later."""
        self.iteration = iteration
        self._seen = set()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not set up yet (e.g. while unpickling): no recursion
            raise AttributeError(name)
        return getattr(self._registry, name)

    # ----- what is hidden ------------------------------------------------------------------
    def _future(self, tag: Any) -> bool:
        match = self._pattern.match(tag) if isinstance(tag, str) else None
        return match is not None and int(match.group(1)) >= self.iteration

    def hidden(self, record: Any) -> bool:
        """Whether ``record`` was registered by this run at this iteration or later (and
        not registered again in this process since)."""
        return record.key not in self._seen and self._future(record.extra.get("designer_run"))

    # ----- registering: what this process registers is its own ----------------------------
    def register(self, *args: Any, **kwargs: Any) -> Any:
        record = self._registry.register(*args, **kwargs)
        self._seen.add(record.key)
        return record

    def register_many(self, *args: Any, **kwargs: Any) -> list[Any]:
        records = self._registry.register_many(*args, **kwargs)
        self._seen.update(r.key for r in records)
        return records

    # ----- reads that must not see the future ----------------------------------------------
    def by_keys(self, keys: Iterable[int]) -> dict[int, Any]:
        return {k: r for k, r in self._registry.by_keys(keys).items() if not self.hidden(r)}

    def list(self, *, limit: int = 100, offset: int = 0, **filters: Any) -> list[Any]:
        wanted = offset + limit
        page = max(wanted, 100)
        start, visible = 0, []
        while len(visible) < wanted:
            batch = self._registry.list(limit=page, offset=start, **filters)
            visible.extend(r for r in batch if not self.hidden(r))
            if len(batch) < page:
                break
            start += page
        return visible[offset:wanted]

    def played(self, *, limit: int = 10, **filters: Any) -> list[tuple[Any, Any]]:
        fetch = limit
        while True:
            rows = self._registry.played(limit=fetch, **filters)
            kept = [
                (record, stats)
                for record, stats in rows
                if not self.hidden(record) and not self._future(stats.checkpoint)
            ]
            if len(kept) >= limit or len(rows) < fetch:
                return kept[:limit]
            fetch *= 4
