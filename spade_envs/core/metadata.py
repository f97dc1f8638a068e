"""Metadata that travels with every environment class, and difficulty knobs.

An environment class declares ``skill``, ``description``, ``max_turns``,
``reward_range`` and ``knobs`` (difficulty settings with their defaults) as class
attributes. :func:`describe` reads them into an :class:`EnvMetadata` that the
registry, the designer prompt and the CLI all use.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..error import InvalidKnobError, suggest

__all__ = ["SKILLS", "KINDS", "ORIGINS", "EnvMetadata", "describe", "apply_knobs", "env_kind"]

#: The skill families the seed corpus covers; designers may add others.
SKILLS: tuple[str, ...] = ("math", "logic", "code", "planning", "science", "pattern")
#: Kinds of environment: single-agent text, single-agent with tools, multi-agent game.
KINDS: tuple[str, ...] = ("text", "tool", "game")
#: Where an environment came from.
ORIGINS: tuple[str, ...] = ("seed", "designer", "imported")


@dataclass(frozen=True)
class EnvMetadata:
    """What is known about an environment class without running it.

    Attributes:
        name: The class name; the registry ID is ``spade/<name>-v<N>``.
        kind: ``"text"``, ``"tool"`` or ``"game"``.
        skill: Skill family (see :data:`SKILLS`).
        description: One paragraph saying what the agent must do.
        max_turns: Most steps an episode can take (for games: moves by all players).
        reward_range: Lowest and highest episode return.
        knobs: Difficulty knobs and their default values.
        origin: ``"seed"``, ``"designer"`` or ``"imported"``.
        parents: Names of environments this one was derived from.
        tools: Tool names, for tool environments.
        players: Number of seats, for games.
        win_rule: When an episode counts as won (:data:`~spade_envs.core.wins.WIN_RULES`).
    """

    name: str
    kind: str
    skill: str
    description: str
    max_turns: int
    reward_range: tuple[float, float]
    knobs: dict[str, Any] = field(default_factory=dict)
    origin: str = "seed"
    parents: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    players: int = 1
    win_rule: str = "return"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        data = asdict(self)
        data["reward_range"] = list(self.reward_range)
        data["parents"] = list(self.parents)
        data["tools"] = list(self.tools)
        return data


def env_kind(cls: type) -> str:
    """``"game"``, ``"tool"`` or ``"text"`` for a protocol class (by its base classes)."""
    from .text_game import TextGame
    from .tool_env import ToolEnv

    if issubclass(cls, TextGame):
        return "game"
    if issubclass(cls, ToolEnv):
        return "tool"
    return "text"


def describe(cls: type, *, origin: str = "seed", parents: tuple[str, ...] = ()) -> EnvMetadata:
    """Read the metadata class attributes of an environment class."""
    kind = env_kind(cls)
    tools: tuple[str, ...] = ()
    if kind == "tool":
        tools = tuple(s["function"]["name"] for s in cls.function_schemas())
    low, high = getattr(cls, "reward_range", (0.0, 1.0))
    return EnvMetadata(
        name=cls.__name__,
        kind=kind,
        skill=str(getattr(cls, "skill", "")),
        description=" ".join(str(getattr(cls, "description", "")).split()),
        max_turns=int(getattr(cls, "max_turns", 1)),
        reward_range=(float(low), float(high)),
        knobs=dict(getattr(cls, "knobs", {})),
        origin=origin,
        parents=tuple(parents),
        tools=tools,
        players=int(getattr(cls, "num_players", 1)) if kind == "game" else 1,
        win_rule=str(getattr(cls, "win_rule", "return")),
    )


def apply_knobs(obj: object, overrides: dict[str, Any]) -> None:
    """Set each declared knob on ``obj``: the class default, or the override.

    Raises:
        InvalidKnobError: An override names no declared knob, or its type differs
            from the default's (an ``int`` knob also takes no ``bool``).
    """
    declared: dict[str, Any] = dict(getattr(type(obj), "knobs", {}))
    for key, value in overrides.items():
        if key not in declared:
            names = ", ".join(sorted(declared)) or "none"
            raise InvalidKnobError(
                f"{type(obj).__name__} has no difficulty knob {key!r}."
                f"{suggest(key, declared)} Its knobs are: {names}."
            )
        default = declared[key]
        ok = isinstance(value, type(default)) and not (
            isinstance(value, bool) and not isinstance(default, bool)
        )
        if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
            ok, value = True, float(value)
        if not ok:
            raise InvalidKnobError(
                f"Knob {key!r} of {type(obj).__name__} must be {type(default).__name__} "
                f"(default {default!r}), got {type(value).__name__} {value!r}."
            )
        declared[key] = value
    for key, value in declared.items():
        setattr(obj, key, value)
