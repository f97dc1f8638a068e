"""Parents of scaffolded attempts: which to fill, what their children did, what is new.

A scaffolded attempt fills one parent's holes (:mod:`.scaffold`). The parent is drawn
among validated registry versions that declare holes, preferring those the memory finds
in the learnable band (high regret, win rate in ``HIGH_REGRET_WIN_RATES``); the prompt
shows the fillings of the parent's registered children with how the agent did on them, so
the designer can aim; and a filling is new only when it differs enough from the parent's
own values and from every registered sibling (:func:`.scaffold.filling_distance`) — the
code embedding would call every child a copy of its parent.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from .scaffold import NoHolesError, Scaffold, base_name, filling_distance

__all__ = ["Child", "Parent", "ScaffoldParents", "aim"]

#: How many registry versions are scanned for parents with holes.
MAX_CANDIDATES = 500


@dataclass(frozen=True)
class Parent:
    """A parent drawn for one attempt."""

    record: Any  # EnvRecord
    scaffold: Scaffold
    stats: Any = None  # its latest PlayStats, or None when never played


@dataclass(frozen=True)
class Child:
    """A registered child of a parent: its complete filling and latest statistics."""

    env_id: str
    values: dict[str, Any]
    stats: Any = None


class ScaffoldParents:
    """Chooses parents for scaffolded attempts over one registry.

    Args:
        registry: A :class:`spade_envs.registry.Registry`.
        memory: A :class:`spade_envs.memory.Memory` over it (for the learnable band).
        rng: The designer's random generator (parent choice is seeded).
        parent: A registry ID: fill only this parent. It must declare holes.
        held_out: Environment names never drawn as parents, with their scaffolded
            children (``NameX1a2b3c``): a trainer's evaluation environments.

    Raises:
        NoHolesError: ``parent`` declares no holes (raised at construction: a clear
            refusal before any model call).
        SpadeError: ``parent`` is not in the registry.
    """

    def __init__(
        self,
        registry: Any,
        memory: Any,
        rng: random.Random,
        parent: str | None = None,
        *,
        held_out: tuple[str, ...] = (),
    ):
        self.registry = registry
        self.memory = memory
        self.rng = rng
        self.held_out = frozenset(held_out)
        self._scaffolds: dict[str, Scaffold | None] = {}
        self.fixed: Any = None
        if parent is not None:
            record = registry.get(parent)
            self.fixed = record
            self._scaffolds[record.id] = Scaffold(record.source, record.id)

    def scaffold_of(self, record: Any) -> Scaffold | None:
        """``record``'s scaffold, or None when it declares no holes or is held out (cached)."""
        if record.id not in self._scaffolds:
            scaffold = None
            if "# hole" in record.source and base_name(record.name) not in self.held_out:
                try:
                    scaffold = Scaffold(record.source, record.id)
                except NoHolesError:
                    scaffold = None
            self._scaffolds[record.id] = scaffold
        return self._scaffolds[record.id]

    def _latest(self, record: Any) -> Any:
        stats = self.registry.play_stats(record.id)
        return stats[0] if stats else None

    def choose(self, skill: str | None) -> Parent:
        """A parent for one attempt: the fixed one, else one in the learnable band with
        holes (of ``skill`` when there is one), else any validated version with holes.

        Raises:
            NoHolesError: No validated version in the registry declares holes.
        """
        if self.fixed is not None:
            return Parent(self.fixed, self._scaffolds[self.fixed.id], self._latest(self.fixed))
        for wanted in (skill, None):
            band = [
                (record, stats)
                for record, stats in self.memory.high_regret(skill=wanted, k=10)
                if self.scaffold_of(record) is not None
            ]
            if band:
                record, stats = self.rng.choice(band)
                return Parent(record, self._scaffolds[record.id], stats)
        candidates = self.registry.list(status="validated", limit=MAX_CANDIDATES, sort="name")
        with_holes = [r for r in candidates if self.scaffold_of(r) is not None]
        of_skill = [r for r in with_holes if r.skill == skill]
        pool = of_skill or with_holes
        if not pool:
            raise NoHolesError(
                "No validated environment in the registry declares holes, so there is nothing "
                "to scaffold. Register the seeds (spade-envs train does; or gym.make a seed) "
                "or mark holes in a parent (see spade_envs/generator/scaffold.py)."
            )
        record = self.rng.choice(pool)
        return Parent(record, self._scaffolds[record.id], self._latest(record))

    def children(self, parent_id: str) -> list[Child]:
        """The registered (not rejected) children of ``parent_id`` with their fillings."""
        out = []
        for record in self.registry.list(origin="designer", limit=MAX_CANDIDATES):
            scaffold = (record.extra or {}).get("scaffold") or {}
            if scaffold.get("parent") == parent_id and record.status != "rejected":
                out.append(
                    Child(record.id, dict(scaffold.get("values") or {}), self._latest(record))
                )
        return out

    def novelty(self, parent: Parent, values: dict[str, Any]) -> tuple[float, str]:
        """The distance from ``values`` (a complete filling) to the nearest of the parent's
        own values and its registered children's, and that neighbour's ID.

        The ``description`` hole is left out: reworded instructions over the same rules
        and values are the same environment.
        """

        def behaviour(filling: dict[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in filling.items() if k != "description"}

        mine = behaviour(values)
        nearest = (filling_distance(mine, behaviour(parent.scaffold.defaults())), parent.record.id)
        for child in self.children(parent.record.id):
            if set(child.values) == set(values):
                distance = filling_distance(mine, behaviour(child.values))
                nearest = min(nearest, (distance, child.env_id))
        return nearest


def aim(stats: Any) -> str:
    """Which way a filling should move a parent, from the parent's latest statistics."""
    if stats is None:
        return "a variant of similar difficulty (it has not been played yet)"
    if stats.win_rate > 0.8:
        return f"it HARDER: the agent wins {stats.win_rate:.0%} of the time without help"
    if stats.win_rate < 0.2:
        return f"it EASIER: the agent wins only {stats.win_rate:.0%} of the time without help"
    return f"a different variant of similar difficulty (win rate {stats.win_rate:.0%})"
