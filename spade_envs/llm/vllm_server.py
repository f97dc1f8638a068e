"""A ``vllm serve`` pool that generates for the trainer from machines of its own, and gets
the trained LoRA adapter after each update.

The trainer writes the adapter (peft's format) into an **exchange directory** that the
server reads at the same path (one disk, or a bucket mounted on both sides), then asks the
server to load it through vLLM's public endpoint ``POST /v1/load_lora_adapter`` under a
new name; from then on every request names that adapter as its model, and the adapter
before it is unloaded. The server must be started with ``--enable-lora`` (and a
``--max-lora-rank`` at least the trainer's) and ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``
in its environment::

    VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve /models/Qwen3-8B \\
        --enable-lora --max-lora-rank 32 --max-loras 2 --port 8000

A pool of several servers behind one address (a load balancer such as SkyServe's) cannot
be told to load an adapter on each of them: the load request reaches one. The others find
the adapter by name in the exchange directory when a request first names it, with vLLM's
filesystem resolver (``VLLM_LORA_RESOLVER_CACHE_DIR=<exchange_dir>`` in their environment);
the adapter's config names the base model as the server loaded it (its ``--model``), as
that resolver requires.

Only adapters travel: vLLM's server takes whole weights only through its development
endpoints (``VLLM_SERVER_DEV_MODE``), which this client does not use.
"""

from __future__ import annotations

import json
import secrets
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from .base import LLMConfigError
from .openai_backend import OpenAIChatModel, RequestFailed

__all__ = ["VLLMServerModel"]

_MAX_REPLY = 64 * 1024


class VLLMServerModel(OpenAIChatModel):
    """The OpenAI client of a ``vllm serve`` pool, asking for token ids (which the trainer
    learns from) and able to switch the pool to a new LoRA adapter.

    Args:
        base_url: The server's address (``http://host:8000``, with or without ``/v1``).
        exchange_dir: A directory both this process and the server read at this path;
            adapters are written under it.
        model: The base model's name on the server (None: the first it lists).
        **kwargs: :class:`~spade_envs.llm.OpenAIChatModel`'s other settings.

    Raises:
        LLMConfigError: ``exchange_dir`` is empty.
    """

    def __init__(
        self, base_url: str, exchange_dir: str | Path, model: str | None = None, **kwargs: Any
    ) -> None:
        if not str(exchange_dir or "").strip():
            raise LLMConfigError(
                "A vLLM server pool needs an exchange directory that it and the trainer both "
                "read at the same path (a shared disk or a mounted bucket)."
            )
        extra = {"return_token_ids": True, **kwargs.pop("extra_body", {})}
        super().__init__(base_url, model, extra_body=extra, **kwargs)
        self.exchange_dir = Path(exchange_dir)
        self._base_model: str | None = None
        #: The adapter every request names now (None: the base model).
        self.adapter: str | None = None
        #: How many adapters this client has switched to.
        self.adapters_loaded = 0
        self._session = secrets.token_hex(4)

    def base_model(self) -> str:
        """The base model as the server loaded it (``root`` in ``GET /v1/models``, its
        ``--model`` path; asked once): what an adapter's config must name for vLLM's
        filesystem resolver to load it.

        Raises:
            LLMConfigError: The server cannot be asked, or lists no model.
        """
        if self._base_model is None:
            try:
                listing = self._request("GET", "/models")
                card = listing["data"][0]
                self._base_model = str(card.get("root") or card["id"])
            except (RequestFailed, LookupError, TypeError, AttributeError) as exc:
                raise LLMConfigError(
                    f"Cannot learn the base model from {self.api_root}/models: {exc}."
                ) from None
        return self._base_model

    def next_adapter_name(self) -> str:
        """A name no adapter on the server has yet: this client's own random prefix (a
        resumed run, or another trainer, does not collide with adapters already loaded
        or cached under the exchange directory) and a counter."""
        return f"spade-{self._session}-{self.adapters_loaded + 1}"

    def adapter_dir(self, name: str) -> Path:
        """Where the adapter ``name`` is written (created, emptied)."""
        directory = self.exchange_dir / name
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.iterdir():
            stale.unlink()
        return directory

    def load_adapter(self, name: str, directory: str | Path) -> None:
        """Ask the server to load the adapter in ``directory`` as ``name``, then generate
        with it (:meth:`use_adapter`).

        Raises:
            LLMConfigError: The server refused (not started for runtime LoRA updates, an
                adapter rank above its ``--max-lora-rank``, a path it cannot read).
        """
        status, detail = self._post(
            "/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(directory)}
        )
        if status != 200:
            hint = (
                " Start it with --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True in its "
                "environment."
                if status in (404, 405)
                else ""
            )
            raise LLMConfigError(
                f"The vLLM server at {self._root} refused /v1/load_lora_adapter "
                f"(HTTP {status}): {detail[:500]}{hint}"
            )
        self.use_adapter(name)

    def use_adapter(self, name: str) -> None:
        """Generate with the adapter ``name``, which the server holds (loaded by this
        process or another rank) or resolves from the exchange directory; the one used
        before is unloaded."""
        previous = self.adapter
        with self._model_lock:
            self.adapter = self.model = name
            self.adapters_loaded += 1
        if previous is not None and previous != name:
            # Frees the server's slot; refused when another rank (or another server
            # behind the same address) got there first, which changes nothing.
            self._post("/v1/unload_lora_adapter", {"lora_name": previous})

    @property
    def _root(self) -> str:
        return self.api_root.removesuffix("/v1")

    def _post(self, path: str, body: dict[str, Any]) -> tuple[int, str]:
        """POST to the server's own endpoints; their answers are plain text. Returns the
        HTTP status and the answer.

        Raises:
            LLMConfigError: The server cannot be reached.
        """
        data = json.dumps(body).encode("utf-8")
        # The same bearer token as generation: a server started with --api-key wants it.
        request = urllib.request.Request(
            self._root + path, data=data, headers=self._headers(data), method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                return reply.status, reply.read(_MAX_REPLY).decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read(_MAX_REPLY).decode("utf-8", "replace")
        except (urllib.error.URLError, OSError) as exc:
            raise LLMConfigError(f"Cannot reach the vLLM server at {self._root}: {exc}") from None
