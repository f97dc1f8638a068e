"""``spade-envs serve``: refuses unsafe settings, prints where it listens, serves."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request

from click.testing import CliRunner

from spade_envs.cli import main

from ..web import conftest as web_fixtures

web_registry = web_fixtures.web_registry  # the fixture: a filled, embedded registry

TOKEN = "cli-test-token-0123456789abcdef"


def test_refuses_other_hosts_without_a_token(tmp_path):
    runner = CliRunner()
    result = runner.invoke(
        main, ["serve", "--host", "0.0.0.0", "--registry", str(tmp_path / "r.db")]
    )
    assert result.exit_code == 2
    assert "Refusing to listen on 0.0.0.0 without a token" in result.output
    result = runner.invoke(main, ["serve", "--token", "short"])
    assert result.exit_code == 2 and "token must be 16 to 256 URL-safe characters" in result.output
    result = runner.invoke(main, ["serve", "--runs", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "does not exist" in result.output


def test_help_names_the_security_defaults():
    result = CliRunner().invoke(main, ["serve", "--help"])
    assert result.exit_code == 0
    assert (
        "127.0.0.1" in result.output
        and "--token" in result.output
        and "SPADE_WEB_TOKEN" in result.output
    )


def serve(args, env=None):
    command = [sys.executable, "-c", "from spade_envs.cli import main; main()", "serve", *args]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    for line in process.stdout:
        if "Serving the corpus browser at " in line:
            return process, line.split(" at ", 1)[1].strip()
    process.kill()
    raise AssertionError(f"no address printed; stderr: {process.stderr.read()}")


def test_serves_a_registry_file_on_a_free_port(web_registry, tmp_path):
    path = web_registry.engine.url.database
    process, url = serve(["--registry", path, "--port", "0", "--quiet"])
    try:
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url + "healthz", timeout=30) as response:
            assert response.read().decode().startswith(f"ok {web_registry.count()} versions")
    finally:
        process.terminate()
        assert process.wait(timeout=30) is not None


def test_a_token_from_the_environment_is_required_and_printed(web_registry):
    path = web_registry.engine.url.database
    env = {**os.environ, "SPADE_WEB_TOKEN": TOKEN}
    process, url = serve(["--registry", path, "--port", "0", "--quiet"], env=env)
    try:
        assert url.endswith(f"/?token={TOKEN}")
        base = url.split("?")[0]
        try:
            urllib.request.urlopen(base + "healthz", timeout=30)
        except urllib.error.HTTPError as exc:
            assert exc.code == 401
        else:
            raise AssertionError("served without the token")
        request = urllib.request.Request(
            base + "healthz", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
    finally:
        process.terminate()
        process.wait(timeout=30)
