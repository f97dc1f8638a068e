"""Training samples for GRPO: one :class:`Sample` per model reply, for either role.

A sample is a prompt (context tokens: the chat template, the environment's observations,
the designer's instructions; never in the loss), a completion (the tokens the model
generated; in the loss), a scalar reward and a group key. GRPO compares samples only
inside their group: advantages are normalised per ``(role, group)``
(:func:`spade_envs.trainer.grpo.group_advantages`).

- The **agent** gives one sample per model turn of a play. Its reward is the play's
  return (the same for every turn of the play: the return is what the turn contributed
  to), plus an optional bonus for a turn that followed the answer convention. Plays of one
  environment form a group; hinted and unhinted plays are separate groups because the
  hint changes the task.
- The **designer** gives one sample per attempt (the last reply of the attempt, which is
  the one its environment came from). Its reward comes from the caller (regret, blend or
  learnability of the environment). Attempts on one grounding document form a group, as
  the SPADE code groups designer samples; scaffolded attempts have no document, and the
  fillings of one parent form a group.

Every sample carries the **temperature** that sampled it: the behaviour policy of a reply
drawn at temperature ``T`` is ``softmax(logits / T)``, so the learner computes the
behaviour, current and reference log-probs of the sample under ``T``
(:class:`~spade_envs.trainer.learner.Learner`). Greedy replies (``T = 0``) are not samples
of a policy and are refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..error import SpadeError, suggest

if TYPE_CHECKING:
    from ..agent.episode import Episode
    from ..generator.pipeline import Attempt

__all__ = [
    "AGENT_GROUPS",
    "DESIGNER_GROUPS",
    "ROLES",
    "Sample",
    "SampleError",
    "agent_samples",
    "check_temperature",
    "designer_samples",
]

#: The two roles one model plays.
ROLES = ("agent", "designer")
#: How agent samples may be grouped: ``env`` (environment and hint flag), ``env_seed``
#: (also the reset seed: only plays of the very same instance compete), ``batch`` (all).
AGENT_GROUPS = ("env", "env_seed", "batch")
#: How designer samples may be grouped: ``document`` (the grounding document; scaffolded
#: attempts: the parent they fill) or ``batch``.
DESIGNER_GROUPS = ("document", "batch")


class SampleError(SpadeError, ValueError):
    """A sample (or what it is built from) is not usable for training."""


@dataclass
class Sample:
    """One model reply to learn from.

    Attributes:
        role: ``"agent"`` or ``"designer"``.
        prompt_ids: Context tokens (chat template, environment and instruction tokens):
            never in the loss. At least one: it predicts the first completion token.
        completion_ids: The tokens the model generated (in the loss). At least one.
        reward: The scalar reward of the reply.
        group: The GRPO group key; advantages are normalised per ``(role, group)``.
        old_logprobs: The log-probability of each completion token recorded at generation,
            as the backends report them: under the model's raw distribution, i.e. at
            temperature 1 (``log_softmax(logits)``). The learner uses them as the behaviour
            log-probs only when ``temperature == 1``; for any other temperature (and with
            ``None``) it computes the behaviour log-probs itself, under ``temperature``,
            before its first optimiser step.
        advantage: Set by :func:`~spade_envs.trainer.grpo.group_advantages`.
        temperature: The sampling temperature that produced the completion (finite, > 0).
            The behaviour policy is ``softmax(logits / temperature)``, and the learner
            computes every log-prob of this sample (behaviour, current policy, KL
            reference) under it. Greedy replies (temperature 0) are refused: they are not
            samples of a policy, so an importance ratio is undefined for them.
        loss_mask: For a whole multi-turn transcript learned at once (the cold start):
            1 for each completion token in the loss, 0 for the environment's tokens between
            the replies; None: every completion token.
    """

    role: str
    prompt_ids: list[int]
    completion_ids: list[int]
    reward: float
    group: str
    old_logprobs: list[float] | None = None
    advantage: float = 0.0
    temperature: float = 1.0
    loss_mask: list[int] | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise SampleError(
                f"Unknown sample role {self.role!r}.{suggest(self.role, ROLES)} Use one of {ROLES}."
            )
        if not self.prompt_ids:
            raise SampleError(
                "A sample needs at least one prompt token (it predicts the first completion "
                "token); build the prompt with the model's chat template."
            )
        if not self.completion_ids:
            raise SampleError("A sample needs at least one completion token; skip empty replies.")
        if self.old_logprobs is not None and len(self.old_logprobs) != len(self.completion_ids):
            raise SampleError(
                f"old_logprobs has {len(self.old_logprobs)} values for "
                f"{len(self.completion_ids)} completion tokens; pass one per token or None "
                "to let the learner compute them."
            )
        if self.loss_mask is not None and (
            len(self.loss_mask) != len(self.completion_ids)
            or any(m not in (0, 1) for m in self.loss_mask)
            or not any(self.loss_mask)
        ):
            raise SampleError(
                "loss_mask needs one 0 or 1 per completion token and at least one 1 "
                f"(got {len(self.loss_mask)} values for {len(self.completion_ids)} tokens)."
            )
        reward = float(self.reward)
        if reward != reward or reward in (float("inf"), float("-inf")):
            raise SampleError(f"A sample's reward must be finite, got {self.reward!r}.")
        self.reward = reward
        self.temperature = check_temperature(self.temperature)

    @property
    def length(self) -> int:
        """Prompt plus completion tokens."""
        return len(self.prompt_ids) + len(self.completion_ids)


def check_temperature(temperature: float) -> float:
    """The sampling temperature of a trainable sample, as a float.

    Args:
        temperature: The temperature that sampled the reply.

    Returns:
        ``float(temperature)``.

    Raises:
        SampleError: It is not a number, not finite, or not > 0 (0 is greedy decoding,
            which GRPO cannot train on).
    """
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise SampleError(f"A sample's temperature must be a number, got {temperature!r}.")
    value = float(temperature)
    if value == 0:
        raise SampleError(
            "A sample's temperature is 0 (greedy decoding): a greedy reply is not a sample "
            "of the policy, so its importance ratio is undefined and GRPO cannot train on "
            "it. Sample the replies you train on with a temperature > 0 (e.g. 1.0)."
        )
    if not math.isfinite(value) or value < 0:
        raise SampleError(
            f"A sample's temperature must be finite and > 0 (the temperature that sampled "
            f"the reply), got {temperature!r}."
        )
    return value


def _check_choice(value: str, choices: Sequence[str], what: str) -> None:
    if value not in choices:
        raise SampleError(
            f"Unknown {what} {value!r}.{suggest(value, choices)} Use one of {tuple(choices)}."
        )


def _behaviour_logprobs(logprobs: Sequence[float], tokens: Sequence[int]) -> list[float] | None:
    # A backend that did not record log-probs (or recorded them for a different number of
    # tokens) leaves them to the learner rather than training on misaligned values.
    if logprobs and len(logprobs) == len(tokens):
        return [float(x) for x in logprobs]
    return None


def agent_samples(
    episodes: Sequence[Episode],
    *,
    group_by: str = "env",
    format_bonus: float = 0.0,
    temperature: float = 1.0,
) -> list[Sample]:
    """One sample per model turn of each play.

    Args:
        episodes: Finished plays (:class:`~spade_envs.agent.Episode`), with the prompt
            token ids, token ids and log-probs of every turn.
        group_by: One of :data:`AGENT_GROUPS`.
        format_bonus: Added to the reward of each turn whose action was well-formed
            (:attr:`~spade_envs.agent.policy.Turn.well_formed`: the environment understood
            it, or, where it does not say, the reply is in the answer format): a small
            shaping term for a model that has yet to learn the answer convention.
        temperature: The sampling temperature of the rollouts that played ``episodes``
            (``RolloutConfig.temperature``); every sample carries it.

    Returns:
        The samples, in episode and turn order. Turns with no prompt or no generated
        tokens are skipped. A play's reward is the return of the turn's seat (games in
        self-play) or the episode's return; a play whose environment hung or crashed
        gets ``-episode.penalty``.

    Raises:
        SampleError: ``group_by`` is unknown, ``format_bonus`` is not finite, or
            ``temperature`` is not finite and > 0 (greedy plays cannot be trained on).
    """
    _check_choice(group_by, AGENT_GROUPS, "agent group_by")
    temperature = check_temperature(temperature)
    bonus = float(format_bonus)
    if bonus != bonus or abs(bonus) == float("inf"):
        raise SampleError(f"format_bonus must be finite, got {format_bonus!r}.")
    samples = []
    for episode in episodes:
        hint = "hint" if episode.hint else "nohint"
        if group_by == "env":
            group = f"{episode.env_id}|{hint}"
        elif group_by == "env_seed":
            group = f"{episode.env_id}|{hint}|seed={episode.env_seed}"
        else:
            group = "batch"
        for turn in episode.turns:
            if not turn.token_ids or not turn.prompt_token_ids:
                continue
            if episode.failed:
                reward = -float(episode.penalty)
            else:
                reward = float(episode.seat_returns.get(turn.seat, episode.episode_return))
            if turn.well_formed:
                reward += bonus
            samples.append(
                Sample(
                    role="agent",
                    prompt_ids=[int(t) for t in turn.prompt_token_ids],
                    completion_ids=[int(t) for t in turn.token_ids],
                    reward=reward,
                    group=group,
                    old_logprobs=_behaviour_logprobs(turn.logprobs, turn.token_ids),
                    temperature=temperature,
                )
            )
    return samples


def designer_samples(
    attempts: Sequence[Attempt],
    rewards: Sequence[float],
    encode: Callable[[list[dict]], list[int]],
    tokenize: Callable[[str], list[int]],
    *,
    group_by: str = "document",
    temperature: float = 1.0,
) -> list[Sample]:
    """One sample per designer attempt: its last reply, rewarded by ``rewards[i]``.

    Args:
        attempts: The designer's attempts (:class:`~spade_envs.generator.Attempt`).
        rewards: One reward per attempt (regret, blend, learnability, or a penalty for an
            attempt that produced no valid environment: the caller decides).
        encode: The chat template with the generation prompt (``chat_model.encode``), used
            when an attempt did not record its prompt token ids.
        tokenize: Text to token ids without special tokens, used when an attempt did not
            record its reply token ids (e.g. a backend that returns text only).
        group_by: One of :data:`DESIGNER_GROUPS`.
        temperature: The sampling temperature the designer generated ``attempts`` at
            (``DesignerConfig.temperature``); every sample carries it.

    Returns:
        The samples in attempt order; attempts with no reply (nothing generated) are
        skipped. Recorded log-probs are kept only when the recorded reply tokens are used.

    Raises:
        SampleError: ``rewards`` does not match ``attempts``, ``group_by`` is unknown, or
            ``temperature`` is not finite and > 0 (greedy replies cannot be trained on).
    """
    _check_choice(group_by, DESIGNER_GROUPS, "designer group_by")
    temperature = check_temperature(temperature)
    if len(rewards) != len(attempts):
        raise SampleError(
            f"Got {len(rewards)} designer rewards for {len(attempts)} attempts; pass one "
            "reward per attempt, in the same order."
        )
    samples = []
    for attempt, reward in zip(attempts, rewards):
        if attempt.reply_token_ids:
            completion = [int(t) for t in attempt.reply_token_ids]
            old = _behaviour_logprobs(attempt.reply_logprobs, completion)
        elif attempt.reply:
            completion, old = [int(t) for t in tokenize(attempt.reply)], None
        else:
            continue
        if attempt.prompt_token_ids:
            prompt = [int(t) for t in attempt.prompt_token_ids]
        elif attempt.messages:
            prompt = [int(t) for t in encode([dict(m) for m in attempt.messages])]
        else:
            continue
        if not completion or not prompt:
            continue
        if group_by == "batch":
            group = "batch"
        elif getattr(attempt, "mode", "") == "scaffold":  # no document: the parent's fillings
            group = f"parent:{attempt.parent_id}"
        else:
            group = f"doc:{attempt.document_id}"
        samples.append(
            Sample(
                role="designer",
                prompt_ids=prompt,
                completion_ids=completion,
                reward=float(reward),
                group=group,
                old_logprobs=old,
                temperature=temperature,
            )
        )
    return samples
