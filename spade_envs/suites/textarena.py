"""TextArena (PyPI ``textarena``, MIT) games as suite environments.

Every registered TextArena game ID (``TicTacToe-v0``, ``Sudoku-v0-hard``; the ``-raw`` and
``-train`` variants differ only in TextArena's own wrappers and are left out) becomes one
environment: a one-player game is a :class:`TextArenaTask` (a ``TextEnv``), a two-player
game a :class:`TextArenaGame` (a ``TextGame``: played in self-play, and from one seat
against a fixed opponent where a reference player exists). The
registry stores a small generated subclass naming the game's module, class and keyword
arguments; TextArena's code runs wherever the environment runs (a sandbox worker).

- **Episodes.** ``reset(seed=s)`` builds a fresh TextArena game and resets it with a seed
  drawn from our ``rng``. TextArena draws from the process-global ``random`` (and a few
  games from ``numpy.random``): each game keeps states of its own, swapped in around every
  call into TextArena and out afterwards, so interleaved games and whatever else runs in
  the process neither disturb each other nor are disturbed.
- **Observations** are TextArena's messages to that player since its last move, written
  as TextArena's LLM wrapper writes them (``[GAME] ...``, ``[Player 1] ...``); a player's
  own move is not echoed back. Actions go to TextArena as they are, bracketed first when
  the game's default wrappers bracket them (``ActionFormattingWrapper``).
- **Invalid moves** are TextArena's business: it tells the player and lets it retry within
  the game's error allowance, then ends the game with a loss for that player.
- **Rewards.** Two players: TextArena's +1/0/-1 become 1 (win), 0.5 (draw), 0 (loss).
  One player: TextArena's reward clipped to [0, 1]; a win is TextArena's 1 (solved).
- **Proof.** ``solution()`` (one player) and ``best_move()``/``legal_moves()`` (two) exist
  for games whose state a short solver of :mod:`.textarena_solvers` can read; the other
  games raise ``NotImplementedError`` with the reason, and the importer stores them
  ``unvalidated`` (still played in self-play).

The worker never runs ``textarena/__init__``, which imports nltk and scipy (about 2 s) for
its word games: a stand-in package carrying TextArena's core and state classes takes its
place while the game's own module is imported.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import io
import os
import random
import re
import sys
from collections.abc import Iterator
from typing import Any, ClassVar

from ..core.text_env import ACTION_PARSED, TextEnv
from ..core.text_game import TextGame
from ..error import EnvContractError
from .base import import_leaf, suite_class
from .textarena_solvers import PLAYERS, SOLVERS

__all__ = [
    "PACKAGE_MODULE",
    "TextArenaGame",
    "TextArenaTask",
    "TextArenaUnavailable",
    "package_version",
    "resolve",
    "task_names",
]

#: The package's import name.
PACKAGE_MODULE = "textarena"
_GAMES_PACKAGE = "textarena.envs."
#: The most moves one episode may take (the validator's ``max_turns_limit``).
TURN_CAP = 200
#: Longest echo of an opponent's move in an observation (TextArena echoes whole replies).
ECHO_CHARS = 1_000
#: What the stand-in package carries: the names TextArena's game modules take from it.
_CORE_NAMES = (
    "Env Wrapper ObservationWrapper RenderWrapper ActionWrapper Agent AgentWrapper State "
    "Message Observations Rewards Info GAME_ID ObservationType"
).split()
_STATE_NAMES = (
    "SinglePlayerState TwoPlayerState FFAMultiPlayerState TeamMultiPlayerState "
    "MinimalMultiPlayerState"
).split()


class TextArenaUnavailable(Exception):
    """A TextArena game that cannot become an environment here (the message says why)."""


# ----- loading a game module in a worker ------------------------------------------------------
def _load_module(module: str) -> Any:
    """Import one TextArena game module, without ``textarena/__init__`` when that is not
    loaded yet (it imports every game, nltk and scipy); the real package is used as is."""
    if not module.startswith(_GAMES_PACKAGE):
        raise ValueError(f"module must be inside {_GAMES_PACKAGE}, got {module!r}")
    if module in sys.modules or PACKAGE_MODULE in sys.modules:
        return import_leaf(module)
    spec = importlib.util.find_spec(PACKAGE_MODULE)
    if spec is None:
        raise ModuleNotFoundError(f"No module named {PACKAGE_MODULE!r}")
    stand_in = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE_MODULE] = stand_in
    try:
        # state.py subclasses ``ta.State``, so the core names must be there first.
        for part, names in (("core", _CORE_NAMES), ("state", _STATE_NAMES)):
            loaded = importlib.import_module(f"{PACKAGE_MODULE}.{part}")
            for name in names:
                setattr(stand_in, name, getattr(loaded, name))
        return import_leaf(module)
    finally:
        # The game module keeps its reference to the stand-in; a later ``import textarena``
        # elsewhere gets the real package.
        if sys.modules.get(PACKAGE_MODULE) is stand_in:
            del sys.modules[PACKAGE_MODULE]


def _game_class(module: str, env_class: str) -> type:
    return suite_class(_load_module(module), env_class, PACKAGE_MODULE)


# ----- one game in play --------------------------------------------------------------------------
class _Match:
    """One TextArena game in play: the game, its own random states, and what each player
    has been told since its last move."""

    def __init__(self, cls: type, config: dict[str, Any], players: int, seed: int):
        import numpy as np

        self.players = players
        self._random = random.Random(seed).getstate()
        self._numpy = np.random.RandomState(seed % 2**32).get_state()
        self.unread: dict[int, list[tuple[int, str, Any]]] = {p: [] for p in range(players)}
        self.done = False
        self.rewards: dict[int, float] = {}
        self.reason = ""
        with self._own_randomness():
            self.env = cls(**config)
            self.env.reset(num_players=players, seed=seed)
        self._collect()

    @contextlib.contextmanager
    def _own_randomness(self) -> Iterator[None]:
        import numpy as np

        saved = random.getstate(), np.random.get_state()
        random.setstate(self._random)
        np.random.set_state(self._numpy)
        try:
            yield
        finally:
            self._random, self._numpy = random.getstate(), np.random.get_state()
            random.setstate(saved[0])
            np.random.set_state(saved[1])

    @property
    def current(self) -> int:
        return int(self.env.state.current_player_id)

    def play(self, action: str, bracket: bool) -> bool:
        """Submit the current player's move (TextArena handles an invalid one).

        Returns:
            Whether TextArena took the move: ``False`` when it called the move invalid
            (``State.set_invalid_move``: the error count went up, or the game ended on it).
        """
        mover = self.current
        self.unread[mover] = []
        if bracket and "[" not in action and "]" not in action:
            action = f"[{action}]"  # what TextArena's ActionFormattingWrapper does
        state = self.env.state
        errors = getattr(state, "error_count", 0)
        game_info: Any = None
        with self._own_randomness():
            done, _ = self.env.step(action)
            if done:
                rewards, game_info = self.env.close()
        # A valid move resets the count to 0; a tolerated invalid one raises it; the one
        # past the allowance ends the game with the mover's ``invalid_move`` set.
        taken = getattr(state, "error_count", 0) <= errors
        ended_on_it = (getattr(state, "game_info", None) or {}).get(mover, {})
        if isinstance(ended_on_it, dict) and ended_on_it.get("invalid_move"):
            taken = False
        if done:
            self.done = True
            self.rewards = {int(p): float(r) for p, r in (rewards or {}).items()}
            reasons = {str(i.get("reason", "")) for i in (game_info or {}).values()}
            self.reason = "; ".join(sorted(r for r in reasons if r))
        self._collect()
        return taken

    def _collect(self) -> None:
        """Move what TextArena queued for each player into :attr:`unread` now, so a
        player reads everything since its last move (the effect of that move included)."""
        current = None if self.done else self.current
        for player in range(self.players):
            if player != current:
                queue = self.env.state.observations
                self.unread[player].extend(queue.get(player, []))
                queue[player] = []
        if current is not None:  # as TextArena hands it out (a game may add to it)
            player, messages = self.env.get_observation()
            self.unread[int(player)].extend(messages)

    def text(self, player: int) -> str:
        """What ``player`` has been told since its last move."""
        roles = getattr(self.env.state, "role_mapping", {}) or {}
        lines = []
        for sender, message, kind in self.unread[player]:
            text = str(message).strip()
            if getattr(kind, "name", "") == "PLAYER_ACTION":
                # Its own move is not echoed: the player knows what it wrote (one-player
                # games echo it from the GAME). An opponent's is, cut short: a long reply
                # must not push the game's own messages out of the observation.
                if sender == player or self.players == 1:
                    continue
                if len(text) > ECHO_CHARS:
                    text = text[:ECHO_CHARS] + " [...]"
            name = "GAME" if sender == -1 else roles.get(sender, f"Player {sender}")
            lines.append(f"[{name}] {text}")
        if self.done:
            lines.append(f"Game over. {self.reason}".strip())
        return "\n".join(lines)


class _TextArenaMixin:
    """What both adapters share: the stored attributes and the match they run."""

    suite: ClassVar[str] = "textarena"
    licence: ClassVar[str] = "MIT"
    suite_version: ClassVar[str] = ""
    task: ClassVar[str] = ""
    level: ClassVar[str] = "0"
    #: The game's module (under ``textarena.envs.``) and its ``ta.Env`` class.
    module: ClassVar[str] = ""
    env_class: ClassVar[str] = ""
    #: The keyword arguments TextArena registers the game ID with.
    config: ClassVar[dict[str, Any]] = {}
    #: How spade-envs plays it: ``max_turns`` (the turn cap, retries included) and
    #: ``bracket`` (actions are bracketed as the game's default wrappers do).
    parameters: ClassVar[dict[str, Any]] = {}
    players: ClassVar[int] = 1
    match: _Match | None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The importer writes the turn cap into ``parameters``; metadata reads max_turns
        # from the class (a malformed value is left for the validator's load check).
        parameters = cls.__dict__.get("parameters")
        cap = parameters.get("max_turns") if isinstance(parameters, dict) else None
        if isinstance(cap, int) and not isinstance(cap, bool):
            cls.max_turns = cap

    @property
    def bracket(self) -> bool:
        """Whether actions are bracketed before TextArena reads them."""
        parameters = self.parameters if isinstance(self.parameters, dict) else {}
        return bool(parameters.get("bracket", True))

    @property
    def game(self) -> str:
        """TextArena's name of the game (its folder under ``textarena.envs``)."""
        return self.module.split(".")[2] if self.module.count(".") >= 3 else self.module

    def _start(self, seed: int) -> _Match:
        cls = _game_class(self.module, self.env_class)
        self.match = _Match(cls, dict(self.config), self.players, seed)
        return self.match

    def _live(self) -> _Match:
        if self.match is None:
            raise EnvContractError(f"{type(self).__name__}: call reset() first.")
        return self.match

    def _unproven(self, what: str) -> NotImplementedError:
        return NotImplementedError(
            f"textarena game {self.task!r}: TextArena offers no {what} and spade-envs has no "
            "solver for this game, so it cannot prove the game winnable"
        )


class TextArenaTask(_TextArenaMixin, TextEnv):
    """A one-player TextArena game (Sudoku, TowerOfHanoi, Minesweeper ...) as a ``TextEnv``.

    The first observation is TextArena's prompt and board; each step submits the action
    and returns TextArena's answer. The episode ends when TextArena ends the game (solved,
    its turn limit, or too many invalid moves) or at the turn cap. Subclasses set the
    class attributes (the importer writes them); TextArena offers no hint.
    """

    max_turns: ClassVar[int] = TURN_CAP
    max_observation_length: ClassVar[int] = 16_384

    def __init__(self, render_mode: str | None = None, **knobs: Any):
        super().__init__(render_mode=render_mode, **knobs)
        self.match = None

    def _reset(self) -> str:
        return self._start(self.rng.getrandbits(31)).text(0)

    def _step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        match = self._live()
        parsed = {ACTION_PARSED: match.play(action, self.bracket)}
        if not match.done:
            return match.text(0), 0.0, False, parsed
        raw = match.rewards.get(0, 0.0)
        reward = 1.0 if raw >= 1.0 else min(max(raw, 0.0), 1.0)
        return match.text(0), reward, True, {"textarena_reward": raw, **parsed}

    def solution(self) -> list[str]:
        """Winning actions from the state after reset, read from the game by a solver."""
        solver = SOLVERS.get(self.game)
        if solver is None:
            raise self._unproven("stored solution")
        return solver(self._live().env)


class TextArenaGame(_TextArenaMixin, TextGame):
    """A two-player TextArena game (TicTacToe, Nim, KuhnPoker ...) as a ``TextGame``.

    ``player_0`` is TextArena's Player 0. Who moves next is whoever TextArena says (the
    same player again after an invalid move it may retry). Final rewards: 1 win, 0.5 draw,
    0 loss. ``best_move``/``legal_moves`` exist for games with a solver here (Nim).
    """

    players: ClassVar[int] = 2
    num_players: ClassVar[int] = 2
    max_turns: ClassVar[int] = TURN_CAP

    def __init__(self, render_mode: str | None = None, **knobs: Any):
        super().__init__(render_mode=render_mode, **knobs)
        self.match = None
        self._taken = True

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        super().reset(seed=seed, options=options)
        self.agent_selection = self._agent(self._live().current)  # some games start with 1

    def _reset(self) -> None:
        self._start(self.rng.getrandbits(31))

    @staticmethod
    def _agent(player: int) -> str:
        return f"player_{player}"

    def _player(self, agent: str) -> int:
        return self.possible_agents.index(agent)

    def _observe(self, agent: str) -> str:
        match = self._live()
        text = match.text(self._player(agent))
        if not text and not match.done and match.current != self._player(agent):
            return f"Waiting for Player {match.current} to move."
        return text

    def _move(self, agent: str, action: str) -> dict[str, float] | None:
        match = self._live()
        self._taken = match.play(action, self.bracket)
        if not match.done:
            return None
        return {
            self._agent(p): (min(max(match.rewards.get(p, 0.0), -1.0), 1.0) + 1.0) / 2.0
            for p in range(self.num_players)
        }

    def _next_agent(self, agent: str) -> str:
        return self._agent(self._live().current)

    def _move_parsed(self, agent: str) -> bool:
        return self._taken

    def legal_moves(self, agent: str) -> list[str]:
        moves = PLAYERS.get(self.game)
        if moves is None:
            raise self._unproven("list of legal moves")
        return moves[1](self._live().env)

    def best_move(self, agent: str) -> str:
        moves = PLAYERS.get(self.game)
        if moves is None:
            raise self._unproven("reference player")
        return moves[0](self._live().env)


# ----- planning (the importing process: the real package is imported there) -----------------
#: Our skill family of TextArena games (by folder); two-player board games and one-player
#: puzzles of moving things default to planning.
TEXTARENA_SKILLS = {
    **dict.fromkeys(
        "Sudoku Mastermind LogicPuzzle Minesweeper Slitherlink LightsOut Battleship Cryptarithm "
        "Set Stratego".split(),
        "logic",
    ),
    **dict.fromkeys(
        "GuessTheNumber Countdown Nim Blackjack Bandit PigDice ColonelBlotto KuhnPoker "
        "IndianPoker Poker LiarsDice Secretary GameOfPureStrategy IteratedTwoThirdsAverage "
        "IteratedMatchingPennies IteratedRockPaperScissors IteratedPrisonersDilemma "
        "IteratedUltimatumGame HighSociety SimpleBlindAuction Golf Briscola GermanWhist "
        "UltimateTexasHoldem".split(),
        "math",
    ),
    **dict.fromkeys("ThreeCardMonte MemoryGame".split(), "pattern"),
}
#: What in a game's code needs the network or downloaded data at import or play time.
_NEEDS_NETWORK = (
    (
        re.compile(r"word_lists|EnglishDictionary"),
        "its word lists (textarena.envs.utils.word_lists.EnglishDictionary) call "
        "nltk.download('words') when used",
    ),
    (
        re.compile(r"nltk\.download"),
        "its code calls nltk.download (NLTK corpora or taggers) when imported or played",
    ),
    (re.compile(r"\bnltk\b"), "it reads NLTK data, which must be downloaded first"),
    (
        re.compile(r"OpenRouter|openai|ta\.agents|\bjury\b", re.IGNORECASE),
        "it asks an LLM over the network (an OpenRouter gamemaster or jury, with an API key)",
    ),
    (
        re.compile(r"\brequests\b|urllib|urlopen|load_dataset|hf_hub|huggingface"),
        "it fetches data over the network",
    ),
)
#: Files of a game's folder that the game does not run (tests, offline scripts).
_NOT_RUN = {"tests.py", "offline_play.py"}


def _registry() -> dict[str, Any]:
    import textarena  # noqa: F401  (registers every game ID)
    from textarena.envs.registration import ENV_REGISTRY

    return ENV_REGISTRY


def task_names() -> list[str]:
    """Every TextArena game ID (their ``-raw`` and ``-train`` wrapper variants left out)."""
    return sorted(i for i in _registry() if not i.endswith(("-raw", "-train")))


def _game_folder(module: str) -> str:
    return os.path.join(os.path.dirname(_registry_file()), *module.split(".")[2:-1])


def _registry_file() -> str:
    import textarena.envs

    return str(textarena.envs.__file__)


def _needs_network(folder: str) -> str:
    """Why the game in ``folder`` would download or reach the network ("" when it would not),
    read from its code: such a game is never imported here (its import may download)."""
    found: list[str] = []
    for root, _, files in os.walk(folder):
        for name in sorted(files):
            if not name.endswith(".py") or name in _NOT_RUN:
                continue
            with open(os.path.join(root, name), encoding="utf-8") as handle:
                text = handle.read()
            for pattern, reason in _NEEDS_NETWORK:
                if pattern.search(text) and reason not in found:
                    found.append(reason)
    if not found:
        return ""
    return f"{found[0]}; nothing may download or reach the network at run time"


def _players(cls: type, config: dict[str, Any]) -> int:
    """1 or 2, from the state class the game's code builds; a game of many players that
    also takes two is tried with two."""
    text = inspect.getsource(sys.modules[cls.__module__])
    if "TwoPlayerState" in text:
        return 2
    if "SinglePlayerState" in text and "MultiPlayerState" not in text:
        return 1
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            _Match(cls, dict(config), 2, 0)
    except Exception as exc:
        raise TextArenaUnavailable(
            f"it does not start as a two-player game ({type(exc).__name__}: "
            f"{str(exc)[:160]}); only one- and two-player games are imported"
        ) from exc
    return 2


def _turn_cap(cls: type, config: dict[str, Any]) -> int:
    """The episode's turn cap: TextArena's own turn limit (from the ID's arguments or the
    class's default) with room for one retried invalid move per turn, at most
    :data:`TURN_CAP`; TURN_CAP where the game sets none."""
    limit = config.get("max_turns")
    if limit is None:
        parameter = inspect.signature(cls.__init__).parameters.get("max_turns")
        limit = None if parameter is None else parameter.default
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        return min(TURN_CAP, 2 * limit + 2)
    return TURN_CAP


def resolve(task: str, level: str) -> dict[str, Any]:
    """What the importer writes for game ID ``task`` (level ``"0"``: as registered).

    Raises:
        TextArenaUnavailable: The game needs a download or the network, fails to import
            here, or needs other than one or two players (the message says which).
    """
    if level != "0":
        raise TextArenaUnavailable(
            "TextArena games have no levels: their difficulty variants are game IDs of their "
            "own (e.g. Sudoku-v0-hard); import level 0"
        )
    spec = _registry()[task]
    entry = spec.entry_point
    if not isinstance(entry, str) or ":" not in entry:
        raise TextArenaUnavailable(f"its entry point {entry!r} is not a module path")
    module, env_class = entry.split(":", 1)
    folder = _game_folder(module)
    if not os.path.isdir(folder):
        raise TextArenaUnavailable(
            f"its module {module} is missing from textarena {package_version()}"
        )
    reason = _needs_network(folder)
    if reason:
        raise TextArenaUnavailable(reason)
    config = dict(spec.kwargs)
    try:
        cls = _game_class(module, env_class)
    except Exception as exc:  # e.g. 3.12-only f-strings, or a missing dependency
        version = ".".join(map(str, sys.version_info[:2]))
        raise TextArenaUnavailable(
            f"its module fails to import on Python {version}: {type(exc).__name__}: "
            f"{str(exc)[:200]}"
        ) from exc
    players = _players(cls, config)
    wrappers = spec.default_wrappers or []
    game = module.split(".")[2]
    skill = TEXTARENA_SKILLS.get(game, "planning")
    arguments = ", ".join(f"{k}={v!r}" for k, v in config.items())
    who = "one player" if players == 1 else "two players"
    description = (
        f"TextArena game {task} ({game}{', ' + arguments if arguments else ''}) for {who}. "
        "The game's own first message states the rules and the move format: moves are "
        "written in square brackets, e.g. [4]. An invalid move is reported and may be "
        "retried; repeating it loses the game, as TextArena rules."
    )
    return {
        "base": "TextArenaTask" if players == 1 else "TextArenaGame",
        "module": module,
        "env_class": env_class,
        "config": config,
        "parameters": {
            "max_turns": _turn_cap(cls, config),
            "bracket": any(w.__name__ == "ActionFormattingWrapper" for w in wrappers),
        },
        "players": players,
        "skill": skill,
        "game": game,
        "description": description,
    }


def package_version() -> str:
    from importlib.metadata import version

    return version("textarena")
