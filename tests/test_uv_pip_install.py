"""tools/uv_pip_install.py: uv is told the pip settings of the machine it installs on."""

from __future__ import annotations

import importlib.util
import os
import shlex
import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[1] / "tools" / "uv_pip_install.py"
_spec = importlib.util.spec_from_file_location("uv_pip_install", TOOL)
uv_pip_install = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(uv_pip_install)


def test_every_index_wheel_directory_and_constraint_reaches_uv():
    command = uv_pip_install.uv_command(
        "uv",
        {
            "index-url": "https://mirror.example/simple",
            "extra-index-url": "file:///opt/a/simple file:///opt/b/simple",
            "find-links": "/opt/wheels",
            "constraint": "/etc/pip/c.txt",
            "trusted-host": "mirror.example",
            "no-index": "false",
            "cert": "/etc/ssl/ca.pem",
            "timeout": "60",
            "disable-pip-version-check": "1",
        },
    )
    assert command[:3] == ["env", "SSL_CERT_FILE=/etc/ssl/ca.pem", "UV_HTTP_TIMEOUT=60"]
    line = shlex.join(command)
    for part in (
        "uv pip install --index-strategy unsafe-best-match",
        "--default-index https://mirror.example/simple",
        "--index file:///opt/a/simple --index file:///opt/b/simple",
        "--find-links /opt/wheels",
        "--constraint /etc/pip/c.txt",
        "--allow-insecure-host mirror.example",
    ):
        assert part in line
    assert "--no-index" not in command
    assert uv_pip_install.uv_command("uv", {"no-index": "yes"})[-1] == "--no-index"


def test_pips_own_variables_win_over_its_files(tmp_path):
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nfind-links = /from/the/file\nconstraint = /c.txt\n")
    env = {**os.environ, "PIP_CONFIG_FILE": str(config), "PIP_FIND_LINKS": "/from/the/variable"}
    line = subprocess.run(
        [sys.executable, str(TOOL), "/bin/uv"], env=env, capture_output=True, text=True, check=True
    ).stdout
    words = shlex.split(line)
    assert words[words.index("--find-links") + 1] == "/from/the/variable"
    assert words.count("--find-links") == 1
    assert words[words.index("--constraint") + 1] == "/c.txt"
