"""Print the command that installs packages with uv under this machine's pip settings.

The Makefile builds its virtual environments with uv (the same packages as pip installs,
several times faster: `.venv` in under a minute, not three). uv does not read pip's
configuration, so a machine whose pip is set to a mirror, a local wheel directory, extra
indexes or constraints would otherwise get other packages, or none, from uv. This asks pip
for its settings (`pip config list`: its files and its PIP_* variables) and says the same
to uv. pip's way of choosing among indexes (the best version from any of them) is kept.

Usage: python tools/uv_pip_install.py UV_BINARY  (prints one shell command line)
"""

from __future__ import annotations

import ast
import shlex
import subprocess
import sys

#: pip setting -> uv option taking one value per entry (pip separates entries by spaces).
_LISTS = {
    "extra-index-url": "--index",
    "find-links": "--find-links",
    "constraint": "--constraint",
    "trusted-host": "--allow-insecure-host",
}
_TRUE = {"1", "true", "yes", "on"}


def pip_settings(python: str = sys.executable) -> dict[str, str]:
    """pip's effective settings, later sources (user files, then PIP_* variables) winning
    over earlier ones as they do for pip."""
    listed = subprocess.run(
        [python, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    settings: dict[str, str] = {}
    environment: dict[str, str] = {}
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        section, _, name = key.rpartition(".")
        if not name or section not in ("global", "install", ":env:"):
            continue
        target = environment if section == ":env:" else settings
        target[name] = ast.literal_eval(value)
    return {**settings, **environment}


def uv_command(uv: str, settings: dict[str, str]) -> list[str]:
    """The uv invocation that installs as pip would with ``settings``."""
    env: list[str] = []
    command = [uv, "pip", "install", "--index-strategy", "unsafe-best-match"]
    for name, value in settings.items():
        if name in _LISTS:
            for entry in value.split():
                command += [_LISTS[name], entry]
        elif name == "index-url":
            command += ["--default-index", value]
        elif name == "no-index" and value.lower() in _TRUE:
            command.append("--no-index")
        elif name == "cert":
            env.append(f"SSL_CERT_FILE={value}")
        elif name in ("timeout", "default-timeout"):
            env.append(f"UV_HTTP_TIMEOUT={value}")
    return (["env", *env] if env else []) + command


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python tools/uv_pip_install.py UV_BINARY")
    print(shlex.join(uv_command(sys.argv[1], pip_settings())))


if __name__ == "__main__":
    main()
