"""Parents of scaffolded attempts: which to fill, what their children did, what is new.

A scaffolded attempt fills one parent's holes (:mod:`.scaffold`). The parent is drawn
among validated registry versions that declare holes (seeds, their ladders' rungs and
registered children), preferring those the memory finds in the learnable band (high hint
gain, win rate in ``HIGH_HINT_GAIN_WIN_RATES``), then those whose measured win rate lies
nearest that band (:func:`band_distance`); the prompt
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

__all__ = ["Child", "Parent", "ScaffoldParents", "aim", "band_distance"]

#: Registry rows read per page when scanning for parents, children and families.
PAGE = 500


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
                except Exception:  # any unreadable marker: not a parent (never a crash)
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
                for record, stats in self.memory.high_hint_gain(skill=wanted, k=10)
                if self.scaffold_of(record) is not None
            ]
            if band:
                record, stats = self.rng.choice(band)
                return Parent(record, self._scaffolds[record.id], stats)
        with_holes = [r for r in self._all(status="validated") if self.scaffold_of(r) is not None]
        of_skill = [r for r in with_holes if r.skill == skill]
        pool = of_skill or with_holes
        if not pool:
            raise NoHolesError(
                "No validated environment in the registry declares holes, so there is nothing "
                "to scaffold. Register the seeds (spade-envs train does; or gym.make a seed) "
                "or mark holes in a parent (see spade_envs/generator/scaffold.py)."
            )
        # Nearest the learnable band by the agent's measured win rate (a rung the agent
        # wins half the time beats a seed it never wins); unplayed ones sit in between.
        scored = [(band_distance(stats := self._latest(r)), r.id, r, stats) for r in pool]
        best = min(score for score, *_ in scored)
        _, _, record, stats = self.rng.choice([s for s in scored if s[0] == best])
        return Parent(record, self._scaffolds[record.id], stats)

    def _all(self, **filters: Any) -> list[Any]:
        """Every record matching ``filters``, page by page (the registry's own filter, so a
        trainer's run view still hides its future)."""
        out, offset = [], 0
        while True:
            page = self.registry.list(
                limit=PAGE, offset=offset, sort="name", include_retired=True, **filters
            )
            out.extend(page)
            if len(page) < PAGE:
                return out
            offset += PAGE

    def children(self, parent_id: str, limit: int = 4) -> list[Child]:
        """Up to ``limit`` registered (not rejected) children of ``parent_id``, newest first,
        with their fillings and latest statistics (what the prompt shows)."""
        out = []
        for record in self.registry.list(origin="designer", limit=PAGE, include_retired=True):
            scaffold = (record.extra or {}).get("scaffold") or {}
            if scaffold.get("parent") == parent_id and record.status != "rejected":
                values = dict(scaffold.get("values") or {})
                out.append(Child(record.id, values, self._latest(record)))
                if len(out) >= limit:
                    break
        return out

    def family(self, parent: Parent) -> list[Child]:
        """Every non-rejected version sharing the parent's base name (its root, the root's
        children, theirs ...), with its complete filling."""
        root = base_name(parent.record.name)
        out = []
        for record in self._all():
            if record.status == "rejected" or base_name(record.name) != root:
                continue
            values = ((record.extra or {}).get("scaffold") or {}).get("values")
            if values is None:  # a root: its own values (its scaffold is read once, cached)
                scaffold = self.scaffold_of(record)
                if scaffold is None:
                    continue
                values = scaffold.defaults()
            out.append(Child(record.id, dict(values)))
        return out

    def novelty(self, parent: Parent, values: dict[str, Any]) -> tuple[float, str]:
        """The distance from ``values`` (a complete filling) to the nearest of the parent's
        own values and every family member's with the same holes, and that member's ID.

        The whole family counts (a grandchild that puts back its grandparent's values is
        that grandparent). The ``description`` hole is left out: reworded instructions over
        the same rules and values are the same environment.
        """

        def behaviour(filling: dict[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in filling.items() if k != "description"}

        mine = behaviour(values)
        nearest = (filling_distance(mine, behaviour(parent.scaffold.defaults())), parent.record.id)
        for member in self.family(parent):
            if set(member.values) == set(values):
                distance = filling_distance(mine, behaviour(member.values))
                nearest = min(nearest, (distance, member.env_id))
        return nearest


def band_distance(stats: Any) -> float:
    """How far the agent's latest win rate lies from the learnable band (0 inside it);
    0.25 when never played (unknown: after the ones in the band, before the far ones)."""
    from ..memory.service import HIGH_HINT_GAIN_WIN_RATES

    if stats is None:
        return 0.25
    low, high = HIGH_HINT_GAIN_WIN_RATES
    return max(low - stats.win_rate, stats.win_rate - high, 0.0)


def aim(stats: Any) -> str:
    """Which way a filling should move a parent, from the parent's latest statistics and
    the memory's learnable band (:data:`~spade_envs.memory.service.HIGH_HINT_GAIN_WIN_RATES`)."""
    from ..memory.service import HIGH_HINT_GAIN_WIN_RATES

    low, high = HIGH_HINT_GAIN_WIN_RATES
    if stats is None:
        return "a variant of similar difficulty (it has not been played yet)"
    if stats.win_rate > high:
        return f"it HARDER: the agent wins {stats.win_rate:.0%} of the time without help"
    if stats.win_rate < low:
        return f"it EASIER: the agent wins only {stats.win_rate:.0%} of the time without help"
    return f"a different variant of similar difficulty (win rate {stats.win_rate:.0%})"
