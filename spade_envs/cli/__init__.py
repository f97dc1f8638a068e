"""The ``spade-envs`` command: a thin layer over the library, one module per command group.

``envs`` (seeds and files), ``play``, ``registry`` (list, show, search, register, retire,
revalidate, stats), ``corpus`` (export, import), ``agent`` (rollout, regret), ``designer``
(generate), ``suites`` (evaluate), ``trainer`` (train, report), ``launch`` and ``web``
(serve). ``errors`` decides exit codes: 1 for runtime errors (``Error: ...`` on standard
error), 2 for usage errors with the subcommand's usage line. Heavy libraries load only
inside the commands that need them.
"""

from __future__ import annotations

import click

from .agent import AGENT_COMMANDS
from .corpus import CORPUS_COMMANDS
from .designer import DESIGNER_COMMANDS
from .envs import ENV_COMMANDS
from .errors import SpadeGroup
from .launch import LAUNCH_COMMANDS
from .play import PLAY_COMMANDS
from .registry import REGISTRY_COMMANDS
from .suites import SUITE_COMMANDS
from .trainer import TRAINER_COMMANDS
from .web import WEB_COMMANDS

__all__ = ["main"]


@click.group(cls=SpadeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="spade-envs")
def main() -> None:
    """spade-envs: synthesized text environments for language-model agents.

    Exit codes: 0 success, 1 an error while running (the message on standard error),
    2 a usage error (with the command's usage line).

    \b
    Examples:
      spade-envs list-seeds --skill logic
      spade-envs play NumberGuess --seed 3 --auto solution
      spade-envs list                                # the registered versions
      spade-envs play spade/NumberGuess-v1 --auto solution   # sandboxed
    """


for _group in (
    ENV_COMMANDS,
    PLAY_COMMANDS,
    REGISTRY_COMMANDS,
    CORPUS_COMMANDS,
    DESIGNER_COMMANDS,
    AGENT_COMMANDS,
    SUITE_COMMANDS,
    WEB_COMMANDS,
    LAUNCH_COMMANDS,
    TRAINER_COMMANDS,
):
    for _command in _group:
        main.add_command(_command)
