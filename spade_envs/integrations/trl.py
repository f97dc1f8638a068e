"""Registry environments in TRL's ``GRPOTrainer`` (trl 1.16, ``environment_factory``).

TRL plays multi-turn environments as tools: it calls ``reset(**row)`` with each dataset
row, appends what it returns to the row's prompt, lets the model call the environment's
public methods as tools, and scores the play with ``get_reward()``. Here:

- :class:`RegistryEnvironment` is that object for any registry version: ``reset`` opens
  the pinned version through the door (:mod:`spade_envs.runtime.door`: sandboxed, trust
  decided there) and resets it with the row's seed; the one tool, ``act(action)``, is a
  ``step``; ``get_reward`` is the episode's return, or None for a play that failed (TRL
  then gives the play no advantage), counted by kind in :class:`PlayCounts`.
- :func:`registry_dataset` builds the rows: one per (environment, seed), with the
  pinned ``env_id`` and its source ``sha256``, repeated by TRL ``num_generations`` times
  per group, so every play of a GRPO group starts from the same state.
- :func:`environment_factory` ties them together (with our hint as an option);
  :func:`play_counts_callback` puts the counts in TRL's logs.
- :func:`tool_calling_tokenizer` gives a ChatML model without a tool-calling template
  (SmolLM2) one TRL can parse.

``examples/trl_grpo.py`` trains SmolLM2 on two registry environments on the CPU.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

from ..error import SpadeError
from ..registry.pins import Query
from .plays import PlayCounts, RegistryEnvironment, pin_envs

__all__ = [
    "PlayCounts",
    "Query",
    "RegistryEnvironment",
    "check_trl",
    "environment_factory",
    "play_counts_callback",
    "registry_dataset",
    "tool_calling_tokenizer",
]

#: What the model is told about the tool (TRL shows it the ``act`` docstring too).
INSTRUCTIONS = (
    "Play this environment by calling the tool `act` once per move, with your move or "
    "answer as its `action` (for example \\boxed{{42}}). The episode ends when the tool "
    "says so.\n\nTask: {description}\n\n{observation}"
)


#: The TRL releases this module is tested with (major.minor).
TESTED_TRL = ("1.16",)
INSTALL = "pip install -e '.[trl]'  (trl 1.16, transformers >= 5.2, datasets)"


def _require(module: str) -> Any:
    """``module``, or a SpadeError naming the extra that brings it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise SpadeError(
            f"The TRL integration needs {module}, which is not installed: {INSTALL}."
        ) from None


def check_trl() -> str:
    """The installed TRL's version; SpadeError when TRL is missing, a warning when it is a
    release we do not test."""
    trl = _require("trl")
    version = str(getattr(trl, "__version__", "?"))
    if ".".join(version.split(".")[:2]) not in TESTED_TRL:
        warnings.warn(
            f"trl {version} is installed; spade-envs' TRL integration is tested with trl "
            f"{', '.join(TESTED_TRL)}.x ({INSTALL}).",
            stacklevel=3,
        )
    return version


def environment_factory(
    envs: Sequence[str] | Query,
    *,
    hint: bool = False,
    registry: Any = None,
    allow_unvalidated: bool = False,
) -> Any:
    """TRL's ``environment_factory`` for registry versions.

    Args:
        envs: ``spade/<Name>-v<N>`` IDs (bare names resolve to their newest validated
            version, and say so), or a :class:`~spade_envs.registry.pins.Query` (for
            example ``Query(skill="math", kind="text")``: the newest validated version of
            each matching name).
        hint: Give every play the environment's hint (the hinted condition of regret).
        registry: The registry (default: the shared one, ``SPADE_REGISTRY_URL``).
        allow_unvalidated: Also train on versions that are not validated (refused
            otherwise, with the reason).

    Returns:
        A no-argument callable making :class:`RegistryEnvironment` s; its ``counts``
        attribute is their :class:`PlayCounts` and ``pins`` the pinned versions.
    """
    if registry is None:
        from ..registry.shared import shared_registry

        registry = shared_registry()
    check_trl()
    pins = pin_envs(registry, envs, allow_unvalidated)
    counts = PlayCounts()

    def factory() -> RegistryEnvironment:
        return RegistryEnvironment(
            pins,
            hint=hint,
            counts=counts,
            registry=registry,
            allow_unvalidated=allow_unvalidated,
            intro=INSTRUCTIONS,
        )

    factory.counts = counts  # type: ignore[attr-defined]
    factory.pins = pins  # type: ignore[attr-defined]
    return factory


def registry_dataset(
    envs: Sequence[str] | Any,
    seeds: Iterable[int],
    *,
    system_prompt: str | None = None,
    registry: Any = None,
) -> Any:
    """A ``datasets.Dataset`` of one row per (environment, seed) for TRL.

    Args:
        envs: IDs, a :class:`~spade_envs.registry.pins.Query`, or the factory from
            :func:`environment_factory` (its pins).
        seeds: Reset seeds; each environment gets each seed.
        system_prompt: The system message of every prompt (default: the agent's own).
        registry: The registry (when ``envs`` are IDs).

    Returns:
        Columns ``prompt`` (conversational: the system message and an empty user turn
        that ``reset`` fills), ``env_id``, ``sha256`` and ``seed``.
    """
    datasets = _require("datasets")

    from ..agent.policy import system_prompt as agent_system_prompt

    pins = getattr(envs, "pins", None)
    if pins is None:
        if registry is None:
            from ..registry.shared import shared_registry

            registry = shared_registry()
        pins = pin_envs(registry, envs)
    system = system_prompt if system_prompt is not None else agent_system_prompt("text")
    rows: dict[str, list[Any]] = {"prompt": [], "env_id": [], "sha256": [], "seed": []}
    for seed in seeds:
        for pinned in pins.values():
            rows["prompt"].append(
                [{"role": "system", "content": system}, {"role": "user", "content": ""}]
            )
            rows["env_id"].append(pinned.env_id)
            rows["sha256"].append(pinned.sha256)
            rows["seed"].append(int(seed))
    return datasets.Dataset.from_dict(rows)


def tool_calling_tokenizer(tokenizer: Any) -> Any:
    """``tokenizer``, able to render and parse tool calls for TRL.

    A tokenizer whose template TRL already parses is returned as is. A ChatML one
    without tool calls (SmolLM2's: ``<|im_start|>role ... <|im_end|>``) gets TRL's
    bundled Qwen2.5 template, which is ChatML with ``<tool_call>`` blocks, and its
    response parser; the tokens are the same, so the model reads familiar framing.

    Raises:
        SpadeError: The template is neither (give the tokenizer a tool-calling
            template and a ``response_template`` yourself).
    """
    check_trl()
    from trl.chat_template_utils import (
        add_response_schema,
        qwen2_5_chat_template,
        supports_tool_calling,
    )

    if supports_tool_calling(tokenizer):
        try:
            return add_response_schema(tokenizer)
        except ValueError:
            if getattr(tokenizer, "response_template", None) or getattr(
                tokenizer, "response_schema", None
            ):
                return tokenizer
    template = str(getattr(tokenizer, "chat_template", "") or "")
    if "<|im_start|>" not in template:
        raise SpadeError(
            "This tokenizer's chat template has no tool calls TRL can parse and is not "
            "ChatML; set a tool-calling chat_template and a response_template on it."
        )
    tokenizer.chat_template = qwen2_5_chat_template
    return add_response_schema(tokenizer)


def play_counts_callback(factory: Any) -> Any:
    """A ``TrainerCallback`` that logs ``factory.counts`` (plays, wins, failures by
    kind) with TRL's own metrics, and stops training (SpadeError) once every play so
    far has failed: nothing is being learned from the environments.

    Args:
        factory: What :func:`environment_factory` returned.
    """
    TrainerCallback = _require("transformers").TrainerCallback

    counts: PlayCounts = factory.counts

    class _Callback(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any):
            metrics = counts.metrics()
            if logs is not None:
                logs.update(metrics)
            if state is not None and state.log_history:  # stored before callbacks run
                state.log_history[-1].update(metrics)
            failed = sum(counts.failed.values())
            if counts.plays and failed == counts.plays:
                raise SpadeError(
                    f"Every one of {counts.plays} plays failed "
                    f"({dict(counts.failed)}): nothing was learned from the environments."
                )

    return _Callback()
