"""The self-play trainer's settings: one dataclass, presets as TOML files, ``--set`` overrides.

A preset is a TOML file with top-level keys (``mode``, ``iterations``, ``seed``, ...) and one
table per section (``[model]``, ``[designer]``, ``[agent]``, ``[reward]``, ``[memory]``,
``[grpo]``, ``[cold_start]``, ``[eval]``, ``[checkpoint]``). Keys a preset leaves out keep
the defaults documented below. Overrides use dotted keys with TOML values; a bare word is
a string and a comma list fills a tuple::

    config = load_config("cpu-tiny", ["iterations=3", "designer.documents=2",
                                      "grpo.learning_rate=2e-4", "eval.envs=NumberGuess,Nim"])
    save_config(config, run_dir / "config.toml")   # what every run keeps

Every section checks itself in ``__post_init__``; an unknown key or preset is reported with
the close matches. Dicts, files, presets and overrides are read and written by
:mod:`spade_envs.trainer.config_io` (``load_config``, ``save_config``, ...), which imports
this module and never the reverse. The ``[cold_start]``, ``[eval]`` and ``[checkpoint]``
sections live in :mod:`~.config_stages`, the checks every section runs in
:mod:`~.config_checks`; both are re-exported here.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from .config_checks import (
    ConfigError,
    _check,
    _choice,
    _non_negative,
    _positive,
    bare_env_name,
)
from .config_stages import CheckpointSettings, ColdStartSettings, EvalSettings
from .learner import GRPOConfig

__all__ = [
    "AgentSettings",
    "CheckpointSettings",
    "ColdStartSettings",
    "ConfigError",
    "DesignerSettings",
    "EvalSettings",
    "MODES",
    "MemorySettings",
    "ModelSettings",
    "REWARDS",
    "RewardSettings",
    "SelfPlayConfig",
    "config_to_dict",
]

#: ``selfplay``: the designer writes environments and the agent plays them (SPADE);
#: ``fixed-pool``: no designer, the agent trains on a frozen list of registry environments
#: (the baseline the SPADE paper compares against).
MODES = ("selfplay", "fixed-pool")
#: The designer's reward for a registered environment (see :mod:`spade_envs.agent.rewards`).
REWARDS = ("regret", "blend", "learnability")
_KINDS = ("text", "tool", "game")


@dataclass(frozen=True)
class ModelSettings:
    """The one model that plays both roles.

    Attributes:
        spec: What :func:`spade_envs.llm.load_model` loads: ``smollm2`` or a Hugging Face
            model directory (the trainer needs the weights, so no ``openai:`` spec).
        backend: ``transformers``: generation runs on the trained model itself, so the
            weights are always in sync; ``vllm``: generation runs in a vLLM engine whose
            weights are reloaded from the trainer after each update (GPUs);
            ``vllm-server``: generation runs in a ``vllm serve`` pool on machines of its
            own (``server_url``), which gets the LoRA adapter after each update
            (:mod:`spade_envs.llm.vllm_server`; LoRA only).
        device: ``auto`` (``cuda:<local rank>`` when CUDA is available, else ``cpu``),
            ``cpu``, ``cuda`` or ``cuda:N``.
        dtype: ``auto`` (float32 on CPU, bfloat16 on GPUs), ``float32``, ``bfloat16`` or
            ``float16``.
        batch_size: Conversations generated together by the transformers backend
            (requests in flight at once with ``vllm-server``).
        threads: torch CPU threads (0: torch's default).
        vllm_memory: vLLM's ``gpu_memory_utilization`` (the trainer shares the GPU); on
            the CPU, the share of RAM given to vLLM's KV cache.
        vllm_max_len: vLLM's ``max_model_len``.
        vllm_weights_dir: Where the weights pushed to vLLM after each update are written
            (the whole model each time; ``""``: the system's temporary directory).
        vllm_sleep: Put the engine to sleep during each update (vLLM's sleep mode, level
            2: its weights and KV cache leave the GPU), then wake it to load the new
            weights, so the learner gets the GPU memory the engine held. CUDA (and ROCm)
            only.
        vllm_lora: With LoRA (``grpo.lora_rank > 0``), the engine keeps the base weights
            it loaded and gets only the adapter after each update (vLLM's
            ``LoRARequest``), instead of the whole model with the adapter merged in: far
            less to gather, write and load per update, for some generation speed. Asleep
            (``vllm_sleep``), the engine then keeps its unchanged base weights in CPU
            memory (level 1) instead of dropping them.
    """

    spec: str = "smollm2"
    backend: str = "transformers"
    device: str = "auto"
    dtype: str = "auto"
    batch_size: int = 8
    threads: int = 0
    vllm_memory: float = 0.45
    vllm_max_len: int = 8192
    vllm_weights_dir: str = ""
    vllm_sleep: bool = False
    vllm_lora: bool = False
    server_url: str = ""
    exchange_dir: str = ""

    def __post_init__(self) -> None:
        _check(bool(self.spec.strip()), "model.spec must name a model, e.g. 'smollm2'.")
        _check(
            not self.vllm_lora or self.backend == "vllm",
            "model.vllm_lora hands LoRA adapters to a vLLM engine: it needs "
            "model.backend = 'vllm'.",
        )
        _check(
            not self.vllm_sleep or (self.backend == "vllm" and self.device != "cpu"),
            "model.vllm_sleep puts a vLLM engine on a GPU to sleep during updates: it needs "
            "model.backend = 'vllm' and a CUDA device (vLLM's sleep mode runs on CUDA and "
            "ROCm only).",
        )
        _check(
            not self.spec.startswith("openai:"),
            "model.spec cannot be an openai: server: the trainer needs the weights. Pass "
            "'smollm2' or a Hugging Face model directory.",
        )
        _choice("model", "backend", self.backend, ("transformers", "vllm", "vllm-server"))
        _check(
            self.backend != "vllm-server" or bool(self.exchange_dir),
            "model.backend = 'vllm-server' generates in a vllm serve pool: set "
            "model.exchange_dir (a directory the trainer and the pool both read at the same "
            "path) and the pool's address (model.server_url, or SPADE_GENERATION_URL).",
        )
        _choice("model", "dtype", self.dtype, ("auto", "float32", "bfloat16", "float16"))
        _check(
            self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:"),
            f"model.device must be auto, cpu, cuda or cuda:N, got {self.device!r}.",
        )
        _positive("model", batch_size=self.batch_size, vllm_max_len=self.vllm_max_len)
        _non_negative("model", threads=self.threads)
        _check(
            0 < self.vllm_memory < 1,
            f"model.vllm_memory must lie in (0, 1), got {self.vllm_memory!r}.",
        )


@dataclass(frozen=True)
class DesignerSettings:
    """How the designer writes environments each iteration (self-play mode only).

    Attributes:
        documents: Grounding documents per iteration; the attempts on one document form a
            GRPO group (as the SPADE code groups designer samples).
        envs_per_document: Environments attempted per document (the group size).
        corpus: Grounding documents (JSONL, Parquet, a text directory); ``""``: the sample
            corpus shipped with the package.
        max_document_words: Documents are cut after this many words (shorter prompts).
        skill: Target skill; ``""``: one skill per document, drawn with the iteration seed.
        mode: ``new``, ``edit`` (a variant of a high-hint-gain environment), ``scaffold``
            (new values for a parent's declared holes, as JSON: for small models) or
            ``auto`` (``scaffold`` below
            :data:`~spade_envs.generator.pipeline.SCAFFOLD_BELOW_PARAMETERS` parameters,
            else ``new``).
        difficulty: Words for the prompt: ``easy``, ``medium`` or ``hard``.
        references: Similar environments shown in a prompt (at least 1).
        repair_rounds: Extra turns for a rejected attempt. A repaired attempt is trained on
            its last reply, whose prompt differs from its group's: keep 0 for clean groups.
        budget: Validation budget: ``fast``, ``default`` or ``thorough``.
        novelty_threshold: Minimum distance to stored environments.
        filling_threshold: ``scaffold``: minimum filling distance to the parent's values
            and to every version of its family.
        max_tokens: Longest reply.
        temperature: Sampling temperature; the designer's samples are trained under it
            (> 0 in ``selfplay`` mode: greedy replies cannot be trained on).
        delay: Designer updates are delayed by this many agent updates: the attempts of
            iteration ``k`` are trained at iteration ``k + delay`` with rewards recomputed
            from that iteration's plays (their environments are replayed meanwhile), as the
            SPADE code does. 0 trains them at once.
        constrained: ``scaffold`` only: decode each reply under its parent's JSON Schema
            (llguidance in the transformers backend, structured outputs in vLLM and
            OpenAI-compatible servers), so every reply parses; the designer is trained on
            the constrained samples. ``false`` samples free text.
    """

    documents: int = 8
    envs_per_document: int = 4
    corpus: str = ""
    max_document_words: int = 600
    skill: str = ""
    mode: str = "auto"
    difficulty: str = "medium"
    references: int = 1
    repair_rounds: int = 0
    budget: str = "fast"
    novelty_threshold: float = 0.05
    filling_threshold: float = 0.05
    max_tokens: int = 1536
    temperature: float = 1.0
    delay: int = 0
    constrained: bool = True

    def __post_init__(self) -> None:
        from ..core.metadata import SKILLS

        _positive(
            "designer",
            documents=self.documents,
            envs_per_document=self.envs_per_document,
            references=self.references,
            max_tokens=self.max_tokens,
            max_document_words=self.max_document_words,
        )
        _non_negative(
            "designer",
            repair_rounds=self.repair_rounds,
            delay=self.delay,
            novelty_threshold=self.novelty_threshold,
            filling_threshold=self.filling_threshold,
            temperature=self.temperature,
        )
        if self.skill:
            _choice("designer", "skill", self.skill, SKILLS)
        _choice("designer", "mode", self.mode, ("new", "edit", "scaffold", "auto"))
        _choice("designer", "difficulty", self.difficulty, ("easy", "medium", "hard"))
        _choice("designer", "budget", self.budget, ("fast", "default", "thorough"))


@dataclass(frozen=True)
class AgentSettings:
    """How the agent plays (each environment ``plays`` times with the hint and as many
    times without, matched) and what it trains on.

    Attributes:
        plays: Plays per environment and hint mode (a GRPO group: at least 2 to learn).
        pool_envs: Registry environments sampled per iteration (with the iteration seed)
            besides the designer's new ones, so the agent always has something to play; in
            fixed-pool mode, how many of the frozen pool are played per iteration
            (0: all of them).
        pool_kinds: Kinds of environment the pool draws from (``text``, ``tool``, ``game``).
        fixed_pool: Fixed-pool mode: the frozen environments (names or gym IDs, or
            ``suite:rlve``, ``suite:rlve:3``, ``suite:reasoning-gym``, ``suite:rg-hard``,
            ``suite:textarena`` for every validated version an import registered); empty:
            every seed environment
            of ``pool_kinds`` except the evaluation ones.
        max_turns: Cap on turns per play (0: the environment's own limit).
        max_tokens: Longest reply per turn.
        temperature: Sampling temperature; the agent's samples are trained under it
            (> 0: greedy plays cannot be trained on).
        top_p: Nucleus sampling mass.
        concurrency: Plays live at once (the model's batch).
        isolation: ``sandbox`` (every environment in a sandbox worker) or ``none``
            (in the trainer's process, with its rights and no sandbox). ``none`` is refused
            in ``selfplay`` mode, whatever ``trust_code`` says: the designer's environments
            are written by the model being trained and never run outside the sandbox. In
            ``fixed-pool`` mode it needs ``trust_code = true``.
        trust_code: DANGEROUS, off by default. With ``isolation = "none"`` in
            ``fixed-pool`` mode: run the pool's environments, which need not be packaged
            seeds (registered or imported by anyone), in the trainer's process. Set it
            only when you wrote or reviewed every environment of the pool.
        step_timeout: Seconds per reset/step in the sandbox.
        train_hinted: Whether hinted plays are trained on too (their own GRPO groups). Off
            by default: the hint is privileged information the agent never has when it is
            used, so only unhinted plays teach it; the hinted ones serve regret.
        group_by: Agent GRPO groups: ``env``, ``env_seed`` or ``batch``.
        format_bonus: Reward added per well-formed action: one the environment reported it
            understood (``info["action_parsed"]``), else one in the answer format (shaping
            for small models).
        format_bonus_iterations: The bonus falls linearly from ``format_bonus`` at
            iteration 1 to 0 at this iteration and stays 0 (0: it never falls). Once the
            cold start has taught the format, a constant bonus pays for the format and
            not for winning.
        opponent: Games: ``best``, ``random`` or ``self``.
    """

    plays: int = 4
    pool_envs: int = 8
    pool_kinds: tuple[str, ...] = ("text", "tool", "game")
    fixed_pool: tuple[str, ...] = ()
    max_turns: int = 0
    max_tokens: int = 512
    temperature: float = 1.0
    top_p: float = 1.0
    concurrency: int = 64
    isolation: str = "sandbox"
    trust_code: bool = False
    step_timeout: float = 10.0
    train_hinted: bool = False
    group_by: str = "env"
    format_bonus: float = 0.0
    format_bonus_iterations: int = 0
    opponent: str = "best"

    def __post_init__(self) -> None:
        from .samples import AGENT_GROUPS

        _positive(
            "agent", plays=self.plays, max_tokens=self.max_tokens, concurrency=self.concurrency
        )
        _non_negative(
            "agent",
            pool_envs=self.pool_envs,
            max_turns=self.max_turns,
            temperature=self.temperature,
            step_timeout=self.step_timeout,
        )
        _check(0 < self.top_p <= 1, f"agent.top_p must lie in (0, 1], got {self.top_p!r}.")
        _check(self.step_timeout > 0, "agent.step_timeout must be positive seconds.")
        _check(bool(self.pool_kinds), "agent.pool_kinds needs at least one kind.")
        for kind in self.pool_kinds:
            _choice("agent", "pool_kinds", kind, _KINDS)
        _choice("agent", "isolation", self.isolation, ("sandbox", "none"))
        _check(
            self.isolation != "none" or self.trust_code,
            "agent.isolation = 'none' runs environment code in the trainer's process, with its "
            "rights and no sandbox, and registry or imported environments may be hostile. Use "
            "agent.isolation = 'sandbox', or (fixed-pool mode only, for environments you wrote "
            "or reviewed) also set agent.trust_code = true.",
        )
        _choice("agent", "group_by", self.group_by, AGENT_GROUPS)
        _choice("agent", "opponent", self.opponent, ("best", "random", "self"))
        _check(math.isfinite(self.format_bonus), "agent.format_bonus must be finite.")
        _non_negative("agent", format_bonus_iterations=self.format_bonus_iterations)

    def rollout_values(self) -> dict[str, Any]:
        """The :class:`~spade_envs.agent.RolloutConfig` fields these settings fix (the
        caller adds seeds and what it changes)."""
        return dict(
            isolation=self.isolation,
            trust_code=self.trust_code,
            step_timeout=self.step_timeout,
            max_concurrent=self.concurrency,
            max_turns=self.max_turns or None,
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=self.max_tokens,
            opponent=self.opponent,
        )

    def bonus_at(self, iteration: int) -> float:
        """The format bonus of ``iteration`` (see ``format_bonus_iterations``)."""
        if not self.format_bonus_iterations:
            return self.format_bonus
        left = 1.0 - (iteration - 1) / self.format_bonus_iterations
        return self.format_bonus * max(0.0, min(1.0, left))


@dataclass(frozen=True)
class RewardSettings:
    """The designer's reward.

    A registered environment gets ``kind`` of its plays (regret, blend or learnability, see
    :mod:`spade_envs.agent.rewards`); the plays' environment failures are penalised through
    ``timeout_penalty``. An attempt that produced no environment gets a reward graded by
    how far it got (requested < generated < truncated < parsed < valid), so a group of
    failed attempts still tells the designer which replies were closer:
    ``failed_requested`` (the model call or prompt failed), ``failed_generated`` (a reply
    without code), ``failed_truncated`` (code cut off at ``max_tokens``),
    ``failed_parsed`` (code that did not validate), ``failed_valid`` (valid but not novel,
    or registered and never played to the end).

    Attributes:
        kind: One of :data:`REWARDS`.
        timeout_penalty: Subtracted from regret times the share of plays whose environment
            hung or crashed.
        failed_requested: See above; the five must increase in this order.
        failed_generated: See above.
        failed_truncated: See above.
        failed_parsed: See above.
        failed_valid: See above.
    """

    kind: str = "regret"
    timeout_penalty: float = 0.5
    failed_requested: float = -1.0
    failed_generated: float = -0.75
    failed_truncated: float = -0.625
    failed_parsed: float = -0.5
    failed_valid: float = -0.25

    def __post_init__(self) -> None:
        _choice("reward", "kind", self.kind, REWARDS)
        _non_negative("reward", timeout_penalty=self.timeout_penalty)
        ladder = (
            self.failed_requested,
            self.failed_generated,
            self.failed_truncated,
            self.failed_parsed,
            self.failed_valid,
        )
        _check(all(math.isfinite(v) for v in ladder), "reward.failed_* must be finite.")
        _check(
            list(ladder) == sorted(ladder) and len(set(ladder)) == len(ladder),
            "reward.failed_requested < failed_generated < failed_truncated < failed_parsed < "
            "failed_valid must increase (a later stage is closer to a usable environment), "
            f"got {ladder}.",
        )


@dataclass(frozen=True)
class MemorySettings:
    """The designer's memory (see :class:`spade_envs.memory.MemoryConfig`).

    Attributes:
        embedder: ``auto`` (MiniLM when installed, else hashing), ``minilm`` or ``hashing``.
        index: ``auto``, ``exact`` or ``ivf``.
    """

    embedder: str = "auto"
    index: str = "auto"

    def __post_init__(self) -> None:
        _choice("memory", "embedder", self.embedder, ("auto", "minilm", "hashing"))
        _choice("memory", "index", self.index, ("auto", "exact", "ivf"))


_SECTIONS: dict[str, type] = {
    "model": ModelSettings,
    "designer": DesignerSettings,
    "agent": AgentSettings,
    "reward": RewardSettings,
    "memory": MemorySettings,
    "grpo": GRPOConfig,
    "cold_start": ColdStartSettings,
    "eval": EvalSettings,
    "checkpoint": CheckpointSettings,
}


@dataclass(frozen=True)
class SelfPlayConfig:
    """Everything one self-play (or fixed-pool) training run needs.

    Attributes:
        mode: One of :data:`MODES`.
        iterations: Iterations to run (resuming continues up to this number).
        seed: The run's seed; every random choice of an iteration derives from it and the
            iteration number, so a resumed run makes the same choices.
        registry_url: The registry (``""``: ``sqlite:///RUN_DIR/registry.db``);
            ``SPADE_REGISTRY_URL`` overrides it (PostgreSQL shared by several machines).
        model: :class:`ModelSettings`.
        designer: :class:`DesignerSettings`.
        agent: :class:`AgentSettings`.
        reward: :class:`RewardSettings`.
        memory: :class:`MemorySettings`.
        grpo: :class:`~spade_envs.trainer.learner.GRPOConfig` (learning rate, clipping,
            KL, LoRA or full fine-tuning, micro-batches).
        cold_start: :class:`ColdStartSettings` (supervised steps before self-play).
        eval: :class:`EvalSettings`.
        checkpoint: :class:`CheckpointSettings`.
    """

    mode: str = "selfplay"
    iterations: int = 100
    seed: int = 0
    registry_url: str = ""
    model: ModelSettings = field(default_factory=ModelSettings)
    designer: DesignerSettings = field(default_factory=DesignerSettings)
    agent: AgentSettings = field(default_factory=AgentSettings)
    reward: RewardSettings = field(default_factory=RewardSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    cold_start: ColdStartSettings = field(default_factory=ColdStartSettings)
    eval: EvalSettings = field(default_factory=EvalSettings)
    checkpoint: CheckpointSettings = field(default_factory=CheckpointSettings)

    def __post_init__(self) -> None:
        _choice("", "mode", self.mode, MODES)
        _positive("", iterations=self.iterations)
        for name, cls in _SECTIONS.items():
            _check(
                isinstance(getattr(self, name), cls),
                f"{name} must be a {cls.__name__}, got {type(getattr(self, name)).__name__}.",
            )
        _check(
            self.mode != "selfplay" or self.agent.isolation != "none",
            "agent.isolation = 'none' is refused in selfplay mode, even with agent.trust_code: "
            "the designer's environments are written by the model being trained and run only "
            "in the sandbox. Use agent.isolation = 'sandbox' (the default).",
        )
        # The agent's plays and the designer's replies are trained on: greedy decoding
        # (temperature 0) has no behaviour distribution, so no importance ratio.
        trained = {"agent.temperature": self.agent.temperature}
        if self.mode == "selfplay":
            trained["designer.temperature"] = self.designer.temperature
        for key, value in trained.items():
            _check(
                value > 0,
                f"{key} = 0 is greedy decoding, and the replies it samples are trained on: a "
                "greedy reply is not a sample of the policy, so GRPO's importance ratio is "
                f"undefined. Set {key} > 0 (e.g. 1.0); eval.temperature may stay 0.",
            )
        _check(
            self.model.backend != "vllm-server" or self.grpo.lora_rank > 0,
            "model.backend = 'vllm-server' sends the pool the trained LoRA adapter, but "
            "grpo.lora_rank is 0: set grpo.lora_rank (e.g. 32); a pool cannot take whole "
            "weights.",
        )
        _check(
            not self.model.vllm_lora or self.grpo.lora_rank > 0,
            "model.vllm_lora hands the trained LoRA adapter to vLLM, but grpo.lora_rank is 0 "
            "(every weight is trained): set grpo.lora_rank (e.g. 32), or model.vllm_lora = "
            "false.",
        )
        held_out = self.eval.held_out_names
        for key, envs in (
            ("agent.fixed_pool", self.agent.fixed_pool),
            ("cold_start.envs", self.cold_start.envs),
        ):
            overlap = sorted(held_out & {bare_env_name(e) for e in envs})
            _check(
                not overlap,
                f"{key} contains evaluation environments {overlap} (or their rungs): "
                "held-out environments must not be trained on. Remove them from one of "
                "the lists.",
            )


def config_to_dict(config: SelfPlayConfig) -> dict[str, Any]:
    """Nested plain dicts (tuples as lists): what :func:`config_to_toml` writes."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name in _SECTIONS:
            out[f.name] = {
                g.name: list(v) if isinstance(v := getattr(value, g.name), tuple) else v
                for g in dataclasses.fields(value)
            }
        else:
            out[f.name] = value
    return out
