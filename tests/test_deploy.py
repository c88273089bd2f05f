"""The reference deployment (`Dockerfile`, `deploy/compose.yaml`, `docs/deploy.md`) says only
what `signoff` does.

No Docker engine runs here, so the image is never built. Instead each promise the files make is
held against the real thing: the Dockerfile's and the compose file's commands against the
`signoff` command's own parser; every environment variable they set against the ones
`Settings.from_env` reads; the wheel `pip install .` builds against the files the code needs;
and the compose file's order (migrate once, then two replicas on one PostgreSQL database) is
run as processes: `signoff db upgrade`, then two `signoff run`, each probed with the image's
own health check command.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli._parser import build_parser
from bot.config import Settings
from bot.sandbox.processes import BOT_TOKEN, CODE_ROOT, FakeSlackProcess, free_port
from tests.kit import pg

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
COMPOSE = ROOT / "deploy" / "compose.yaml"
DEPLOY_DOC = ROOT / "docs" / "deploy.md"


# ---- reading the files ------------------------------------------------------------------------


def dockerfile() -> dict[str, list[str]]:
    """Each instruction of the Dockerfile (continuation lines joined) by name, in order."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, rest = line.partition(" ")
            found.setdefault(name.upper(), []).append(rest.strip())
    return found


def exec_form(value: str) -> list[str]:
    """An instruction's exec form (`["a", "b"]`), which the entry point and command must use so
    that `signoff` is PID 1 and gets the container's SIGTERM."""
    words = json.loads(value)
    assert isinstance(words, list) and all(isinstance(w, str) for w in words), value
    return words


def image_command() -> list[str]:
    """What the container runs: ENTRYPOINT then CMD."""
    ins = dockerfile()
    return exec_form(ins["ENTRYPOINT"][-1]) + exec_form(ins["CMD"][-1])


def compose() -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(loaded, dict)
    return loaded


class _Recording(dict):  # type: ignore[type-arg]
    """An environment that notes every name read from it."""

    def __init__(self) -> None:
        super().__init__()
        self.read: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)


def settings_names() -> set[str]:
    """Every environment variable `Settings.from_env` reads."""
    env = _Recording()
    Settings.from_env(env)
    return env.read


def parses(argv: list[str]) -> Any:
    """`argv` (after the program's name) parsed by `signoff`'s own parser; fails the test with
    the parser's words when it refuses them."""
    try:
        return build_parser().parse_args(argv)
    except SystemExit:
        pytest.fail(f"`signoff {shlex.join(argv)}` is not a command signoff takes")


# ---- the image --------------------------------------------------------------------------------


def test_the_image_runs_signoff_as_a_user_without_privileges() -> None:
    ins = dockerfile()
    base = ins["FROM"][0]
    python = re.search(r'requires-python = ">=(\d+\.\d+)"', (ROOT / "pyproject.toml").read_text())
    assert python is not None
    assert base == f"python:{python.group(1)}-slim", (
        "the base image is the Python the package needs"
    )
    assert ins["USER"][-1] not in ("root", "0")
    assert image_command()[0] == "signoff"  # the console script the package installs


def test_the_image_command_is_signoff_run_listening_for_the_container_port() -> None:
    argv = image_command()[1:]
    args = parses(argv)
    assert args.command == "run"
    assert args.host == "0.0.0.0", "in a container, 127.0.0.1 is unreachable from outside it"
    exposed = [int(p.split("/")[0]) for p in dockerfile()["EXPOSE"]]
    assert exposed == [args.port]
    check = dockerfile()["HEALTHCHECK"][-1]
    assert f"http://127.0.0.1:{args.port}/healthz" in check


def test_the_image_copies_only_what_exists_and_sets_only_what_signoff_reads() -> None:
    ins = dockerfile()
    for copy in ins["COPY"]:
        *sources, _dest = copy.split()
        for source in sources:
            assert (ROOT / source).exists(), f"COPY {source}: no such file in the repository"
    names = {
        word.split("=", 1)[0]
        for env in ins["ENV"]
        for word in shlex.split(env)
        if word.startswith(("SIGNOFF_", "SLACK_"))
    }
    assert names <= settings_names(), names - settings_names()


def test_the_wheel_pip_installs_holds_every_file_the_code_reads(tmp_path: Path) -> None:
    """The image's `pip install .` builds a wheel from what the Dockerfile copies: every file
    of `bot/` and `graphs/` (migrations, the sandbox's page, the demo policy) must be in it, or
    the image fails where a checkout works."""
    source = tmp_path / "src"
    source.mkdir()
    for copy in dockerfile()["COPY"]:
        *names, _dest = copy.split()
        for name in names:  # as the image has them: tracked files only, no caches
            tracked = subprocess.run(
                ["git", "ls-files", name], cwd=ROOT, capture_output=True, text=True, check=True
            ).stdout.split()
            for file in tracked:
                (source / file).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / file, source / file)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "dist"), str(source)],
        check=False, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    assert "deprecated" not in built.stderr, (
        built.stderr
    )  # pyproject.toml as setuptools reads it now
    (wheel,) = (tmp_path / "dist").glob("signoff-*.whl")
    inside = set(zipfile.ZipFile(wheel).namelist())
    needed = subprocess.run(
        ["git", "ls-files", "bot", "graphs"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    missing = [f for f in needed if f not in inside]
    assert missing == []


# ---- the compose file -------------------------------------------------------------------------


def services() -> dict[str, dict[str, Any]]:
    found = compose()["services"]
    assert isinstance(found, dict)
    return found


def test_compose_migrates_once_then_starts_two_replicas_on_postgresql() -> None:
    svc = services()
    assert parses(svc["migrate"]["command"]).fn.__name__ == "cmd_db_upgrade"
    assert svc["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    bot = svc["bot"]
    assert parses(bot["command"]).command == "run"
    assert bot["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert bot["deploy"]["replicas"] >= 2
    url = bot["environment"]["SIGNOFF_DATABASE_URL"]
    assert url.startswith("postgresql://"), "replicas share one database: SQLite cannot be shared"
    run = parses(bot["command"])
    assert bot["ports"] == [str(run.port)]


def test_compose_sets_only_settings_signoff_reads_and_mounts_the_policy_it_names() -> None:
    names = settings_names()
    for name in ("migrate", "bot"):
        svc = services()[name]
        env = svc["environment"]
        assert set(env) <= names, set(env) - names
        mounts = [v.split(":")[1] for v in svc["volumes"]]
        assert env["SIGNOFF_POLICY"] in mounts


# ---- the guide --------------------------------------------------------------------------------


def guide_commands() -> list[list[str]]:
    """Every `signoff ...` command line in the guide's shell blocks."""
    text = DEPLOY_DOC.read_text()
    found = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.DOTALL):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            words = shlex.split(line, comments=True)
            while words and "=" in words[0]:  # `VAR=value signoff ...`
                words = words[1:]
            if words[:1] == ["signoff"]:
                found.append(words[1:])
    return found


def test_the_guide_s_commands_are_commands_signoff_takes() -> None:
    commands = guide_commands()
    assert {c[0] for c in commands} >= {"db", "run"}
    for argv in commands:
        parses(argv)


def test_the_guide_names_only_settings_signoff_reads() -> None:
    named = set(re.findall(r"\b((?:SIGNOFF|SLACK)_[A-Z_]+)\b", DEPLOY_DOC.read_text()))
    known = settings_names() | {"SIGNOFF_LLM_API_KEY", "SIGNOFF_LLM_BASE_URL", "SIGNOFF_LLM_MODEL"}
    assert named <= known, named - known


# ---- the order, run -----------------------------------------------------------------------------


def compose_env(fake_slack_url: str, db_url: str, policy: Path) -> dict[str, str]:
    """The bot service's environment with compose's defaults filled in, pointed at this
    machine's PostgreSQL and the fake Slack instead of the containers'."""
    env: dict[str, str] = {}
    for name, value in services()["bot"]["environment"].items():
        default = re.fullmatch(r"\$\{[A-Z_]+:-(.*)\}", str(value))
        env[name] = default.group(1) if default else str(value)
    env.update(
        SIGNOFF_DATABASE_URL=db_url,
        SIGNOFF_POLICY=str(policy),
        SLACK_BOT_TOKEN=BOT_TOKEN,
        SLACK_SIGNING_SECRET="deploy-test-secret",
        SIGNOFF_SLACK_API_URL=fake_slack_url,
    )
    return {k: v for k, v in env.items() if v}


def as_process(argv: list[str]) -> list[str]:
    """The image's `signoff ...` as this interpreter runs the command from this checkout."""
    assert argv[0] == "signoff"
    return [sys.executable, "-m", "bot.cli", *argv[1:]]


def on_port(argv: list[str], port: int) -> list[str]:
    """`argv` listening on `port` of 127.0.0.1 (tests bind nothing else) instead of the
    container's."""
    out = list(argv)
    out[out.index("--port") + 1] = str(port)
    out[out.index("--host") + 1] = "127.0.0.1"
    return out


def health_check(port: int) -> list[str]:
    """The image's HEALTHCHECK command, probing `port`."""
    check = dockerfile()["HEALTHCHECK"][-1]
    words = exec_form(check[check.index("CMD") + 3 :].strip())
    assert words[0] == "python"
    return [sys.executable, *(w.replace(":3000/", f":{port}/") for w in words[1:])]


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path]]:
    pg.require_server()
    schema, drop = pg.schema_with_drop("deploy")
    url = pg.url_on(schema)
    fake = FakeSlackProcess(tmp_path)
    policy = tmp_path / "signoff.toml"
    shutil.copy(CODE_ROOT / "bot" / "policies" / "demo.toml", policy)
    env = {**os.environ, **compose_env(fake.url, url, policy)}
    env.pop("SLACK_APP_TOKEN", None)
    env["PYTHONPATH"] = str(CODE_ROOT)
    try:
        yield env, tmp_path
    finally:
        fake.stop()
        drop()


def wait_healthy(
    port: int, proc: subprocess.Popen[bytes], log: Path
) -> subprocess.CompletedProcess[str]:
    deadline = time.monotonic() + 60
    while True:
        probe = subprocess.run(
            health_check(port), check=False, capture_output=True, text=True, timeout=30
        )
        if probe.returncode == 0 or time.monotonic() > deadline or proc.poll() is not None:
            if probe.returncode != 0:
                print(log.read_text(errors="replace")[-4000:])
            return probe
        time.sleep(0.2)


def test_the_compose_order_runs_migrate_then_two_healthy_replicas(
    deployment: tuple[dict[str, str], Path],
) -> None:
    env, where = deployment
    svc = services()
    migrate = subprocess.run(
        as_process(["signoff", *svc["migrate"]["command"]]),
        env=env, cwd=where, check=False, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert migrate.returncode == 0, migrate.stderr
    replicas: list[tuple[int, subprocess.Popen[bytes], Path]] = []
    try:
        for _ in range(svc["bot"]["deploy"]["replicas"]):
            port = free_port()
            log = where / f"replica-{port}.log"
            with open(log, "wb") as out:
                proc = subprocess.Popen(
                    on_port(as_process(["signoff", *svc["bot"]["command"]]), port),
                    env=env, cwd=where, stdout=out, stderr=subprocess.STDOUT,
                )  # fmt: skip
            replicas.append((port, proc, log))
        for port, proc, log in replicas:
            probe = wait_healthy(port, proc, log)
            assert probe.returncode == 0, probe.stderr
        # The health check fails once a replica is gone: what Docker restarts it on.
        port, proc, _ = replicas[0]
        proc.terminate()
        proc.wait(15)
        down = subprocess.run(
            health_check(port), check=False, capture_output=True, text=True, timeout=30
        )
        assert down.returncode != 0
    finally:
        for _, proc, _ in replicas:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()


def test_the_guide_lists_exactly_the_scopes_the_manifests_ask_for() -> None:
    table = re.findall(r"^\| `([a-z_.:]+)` \|", DEPLOY_DOC.read_text(), re.MULTILINE)
    scopes = [s for s in table if ":" in s or s == "commands"]
    for manifest in ("manifest.yml", "manifest-http.yml"):
        asked = yaml.safe_load((ROOT / manifest).read_text())["oauth_config"]["scopes"]["bot"]
        assert sorted(scopes) == sorted(asked), manifest
