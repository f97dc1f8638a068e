"""Difficulty ladders: easier rungs of seed environments, through the knobs they already have.

A 135M model wins nothing on today's seed instances (NumberGuess over 1..100 in 8 turns),
so a curve of its win rate is flat at 0 whatever training does. A **rung** is a seed with
easier values in its declared holes (its difficulty knobs and turn limit), written by the
scaffold's own :meth:`~spade_envs.generator.scaffold.Scaffold.fill`; rung 0 is the easiest,
the seed itself is the top of its ladder. A rung is named ``<Seed>@<level>`` in
configurations (``eval.envs = ["NumberGuess@0", "NumberGuess"]``) and stored in the
registry as a version of its own (``spade/NumberGuessX1a2b3c-v1``, origin ``seed``, the
seed as its parent, ``extra["ladder"]`` naming seed, level and filling), so every play,
audit and statistic works on it as on any version.

Every rung keeps its reference solution inside its turn limit (``tests/generator/
test_ladders.py`` plays them), so a rung's reference ceiling is 1.0 unless a cap cuts it.
A rung is our code (the seed's, with literal values we chose), so it is registered as
validated the way a seed is; rungs are easy on purpose and are not held to the designer's
hole relations, which exist to keep *designed* children hard.

```python
from spade_envs.generator.ladders import register_rung, rung_labels

env_id = register_rung(registry, "NumberGuess@0")   # 1..8 in 4 turns
```
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..error import SpadeError, suggest

__all__ = [
    "LADDERS",
    "LadderError",
    "Rung",
    "is_rung_label",
    "parse_rung",
    "register_rung",
    "resolve_labels",
    "rung_labels",
    "rung_source",
]

#: Rungs per seed, easiest first: each is a filling of the seed's declared holes (the
#: whole value of each hole it names; the others keep the seed's values).
LADDERS: dict[str, tuple[dict[str, Any], ...]] = {
    # 1..8 in 4 turns (binary search needs 3), then 1..32 in 6 (needs 5).
    "NumberGuess": (
        {"max_turns": 4, "knobs": {"upper": 8}},
        {"max_turns": 6, "knobs": {"upper": 32}},
    ),
    # 3 coins need one weighing; 9 need two.
    "CounterfeitCoin": (
        {"max_turns": 4, "knobs": {"coins": 3}},
        {"max_turns": 5, "knobs": {"coins": 9}},
    ),
    # More terms shown before the first answer.
    "SequenceRule": ({"knobs": {"shown": 9, "reveals": 2}},),
    # Single congruences only.
    "ModularEquation": ({"knobs": {"system_chance_percent": 0}},),
    # Loops of at most 3 iterations.
    "CodeTrace": ({"knobs": {"max_loop": 3}},),
    # A 2-digit code over digits 1..3.
    "Mastermind": ({"max_turns": 8, "knobs": {"length": 2, "digits": 3}},),
    # A 3x3 board made by 2 presses.
    "LightsOut": ({"max_turns": 4, "knobs": {"size": 3, "presses": 2}},),
}


class LadderError(SpadeError, ValueError):
    """A rung label names no seed with a ladder, or a level it does not have."""


@dataclass(frozen=True)
class Rung:
    """One rung of a seed's ladder.

    Attributes:
        seed: The seed environment's name.
        level: 0 is the easiest; the seed itself is above the last level.
        filling: The values of the holes the rung changes.
    """

    seed: str
    level: int
    filling: dict[str, Any]

    @property
    def label(self) -> str:
        """``<seed>@<level>``, the rung's name in configurations and tables."""
        return f"{self.seed}@{self.level}"


def is_rung_label(text: str) -> bool:
    """Whether ``text`` is written as a rung label (``Name@level``), valid or not."""
    return "@" in str(text) and not str(text).startswith("spade/")


def parse_rung(label: str) -> Rung:
    """The rung a label names.

    Raises:
        LadderError: The seed has no ladder, or no such level (with what exists).
    """
    seed, _, level_text = str(label).partition("@")
    if seed not in LADDERS:
        raise LadderError(
            f"{label!r}: {seed!r} has no difficulty ladder.{suggest(seed, LADDERS)} "
            f"Seeds with ladders: {', '.join(sorted(LADDERS))}."
        )
    rungs = LADDERS[seed]
    if not level_text.isdigit() or int(level_text) >= len(rungs):
        raise LadderError(
            f"{label!r}: {seed}'s ladder has levels 0 to {len(rungs) - 1} (0 is the easiest; "
            f"the seed itself, {seed!r}, is the top)."
        )
    level = int(level_text)
    return Rung(seed=seed, level=level, filling=dict(rungs[level]))


def rung_labels(seeds: Any = None) -> list[str]:
    """Every rung label, of ``seeds`` only when given (in ladder order)."""
    names = LADDERS if seeds is None else [s for s in seeds if s in LADDERS]
    return [f"{name}@{level}" for name in names for level in range(len(LADDERS[name]))]


def rung_source(label: str) -> tuple[str, str]:
    """The rung's module source and its class name (the seed's source, holes filled)."""
    from ..seeds import seed_source
    from .scaffold import Scaffold

    rung = parse_rung(label)
    scaffold = Scaffold(seed_source(rung.seed), parent_id=rung.seed)
    unknown = sorted(set(rung.filling) - set(scaffold.by_name))
    if unknown:  # a seed changed under its ladder: a programming error, said plainly
        raise LadderError(f"{label}: {rung.seed} has no hole(s) {unknown}; update LADDERS.")
    return scaffold.fill(rung.filling)


def register_rung(registry: Any, label: str) -> str:
    """Register (or find) the rung ``label`` in ``registry`` and return its ID.

    The seed is registered too (it is the rung's parent).
    """
    from ..core.metadata import describe
    from ..runtime import register_seed
    from ..seeds import seed_class

    rung = parse_rung(label)
    source, name = rung_source(label)
    parent = register_seed(registry, rung.seed)
    seed_meta = describe(seed_class(rung.seed))
    knobs = rung.filling.get("knobs", seed_meta.knobs)
    meta = dataclasses.replace(
        seed_meta,
        name=name,
        max_turns=int(rung.filling.get("max_turns", seed_meta.max_turns)),
        knobs=dict(knobs),
        origin="seed",
        parents=(parent,),
    )
    extra = {"ladder": {"seed": rung.seed, "level": rung.level, "filling": rung.filling}}
    return registry.register(source, meta, status="validated", extra=extra).id


def resolve_labels(registry: Any, envs: Any) -> list[str]:
    """``envs`` with each rung label replaced by its registry ID (others unchanged)."""
    return [register_rung(registry, e) if is_rung_label(e) else str(e) for e in envs]
