"""How far a designer attempt got, and why it failed: two string-valued enums.

Shared by the designer (:mod:`.pipeline`, which sets them on each
:class:`~spade_envs.generator.Attempt`) and the trainer (which counts and rewards them):
code compares members, never string prefixes. The values are the plain words that
checkpoints, JSON and reports carry (``"truncated"``, ``"registered"``); a member equals
its value, and :meth:`AttemptStage.of` / :meth:`DesignerFailure.of` turn a value read back
from a file into its member.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["AttemptStage", "DesignerFailure"]


class _Word(str, Enum):
    """A ``str`` enum that prints as its value on every Python version (``format`` of a
    mixed-in enum changed in 3.11/3.12)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class AttemptStage(_Word):
    """The stages an attempt passes, in order; it stops at the first it fails."""

    REQUESTED = "requested"
    GENERATED = "generated"
    PARSED = "parsed"
    VALID = "valid"
    NOVEL = "novel"
    REGISTERED = "registered"

    @classmethod
    def of(cls, value: str | AttemptStage) -> AttemptStage:
        """The member named by ``value`` (a member, or its value read back from JSON)."""
        return cls(value)

    @property
    def rank(self) -> int:
        """Position in the pipeline (``REQUESTED`` is 0)."""
        return list(AttemptStage).index(self)


class DesignerFailure(_Word):
    """Why an attempt failed.

    The prompt could not be built, the model request failed, the reply had no usable code
    or was cut off at ``max_tokens``, a scaffold reply was no usable filling (not a JSON
    object of the declared holes and types) or broke a relation the parent declares between
    its holes (``broken_relation``), the validator rejected the code or could not
    run at all, the code was too close to a stored environment, the registry refused it.
    """

    PROMPT_ERROR = "prompt_error"
    MODEL_ERROR = "model_error"
    NO_CODE = "no_code"
    TRUNCATED = "truncated"
    BAD_FILLING = "bad_filling"
    BROKEN_RELATION = "broken_relation"
    INVALID = "invalid"
    VALIDATOR_ERROR = "validator_error"
    NOT_NOVEL = "not_novel"
    REGISTRY_ERROR = "registry_error"

    @classmethod
    def of(cls, value: str | DesignerFailure | None) -> DesignerFailure | None:
        """The member named by ``value``; None for None or ``""`` (nothing failed: how
        checkpoints written before this enum existed say it)."""
        if value is None or value == "":
            return None
        return cls(value)

    @property
    def infrastructure(self) -> bool:
        """Whether the failure says nothing about the code the model wrote (the prompt,
        the model server or the validator failed): when every attempt ends in one of
        these, nothing was designed at all (``spade-envs generate`` exits 1)."""
        return self in (
            DesignerFailure.PROMPT_ERROR,
            DesignerFailure.MODEL_ERROR,
            DesignerFailure.VALIDATOR_ERROR,
        )
