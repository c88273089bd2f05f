"""The fake Slack and the bot as processes of their own, for end-to-end tests and benchmarks.

- `FakeSlackProcess`: `python -m bot.sandbox.slack_api --port 0` with the demo workspace (alice,
  bob, carol, dave; #approvals; the user group `@approvers` = alice and bob), ready once it
  printed its URL; `pause()` / `resume()` stop and continue it (SIGSTOP, SIGCONT).
- `BotProcess`: `signoff run` in HTTP mode on 127.0.0.1, its Web API pointed at the fake
  (`SIGNOFF_SLACK_API_URL`), ready once `/healthz` answers; `kill()` is SIGKILL, `stop()`
  SIGTERM.

Both are started with the interpreter running this code, on this code (`CODE_ROOT` first on
their `PYTHONPATH`), and share nothing with the caller but
URLs and files: the bot is started as the `signoff` command (`python -m bot.cli`), never
imported here, so this module stays independent of the bot it stands in for.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

from bot.sandbox.client import READY_PREFIX, SandboxClient

__all__ = [
    "API_TOKEN",
    "APP_TOKEN",
    "BOT_TOKEN",
    "CHANNEL",
    "SIGNING_SECRET",
    "BotProcess",
    "FakeSlackProcess",
    "free_port",
    "sqlite_url",
    "write_policy",
]

SIGNING_SECRET = "e2e-signing-secret"
"""The signing secret the bot and the fake share unless told otherwise."""
API_TOKEN = "e2e-api-token"
"""The bearer token of the bot's `POST /api/runs` unless told otherwise."""
BOT_TOKEN = "xoxb-e2e"
"""The bot's Web API token, which `FakeSlackProcess` issues (it takes no other)."""
APP_TOKEN = "xapp-1-e2e"
"""The app-level token of a bot in Socket Mode, which `FakeSlackProcess` issues."""
SOCKET_MODE = "socket-mode"
"""`FakeSlackProcess.app_url` while the fake sends over Socket Mode."""
CHANNEL = "C0APPROVALS"
"""#approvals of the demo workspace: where the bot posts cards unless a run names a channel."""

CODE_ROOT = Path(__file__).resolve().parents[2]
"""The directory holding the `bot` package this module is part of: first on the processes'
`PYTHONPATH`, so that they run this code (and not another copy the interpreter could find from
their working directory, such as an installed or linked checkout)."""


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_policy(directory: Path, text: str) -> Path:
    """`directory/policy.toml` holding `text`."""
    path = directory / "policy.toml"
    path.write_text(text)
    return path


def sqlite_url(directory: Path) -> str:
    """The URL of `directory/signoff.db`."""
    return f"sqlite:///{quote(str(directory / 'signoff.db'))}"


def _this_code(env: dict[str, str]) -> dict[str, str]:
    """`env` with `CODE_ROOT` first on its `PYTHONPATH`."""
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(CODE_ROOT) + (os.pathsep + path if path else "")
    return env


class FakeSlackProcess:
    """`python -m bot.sandbox.slack_api --port 0`, with its pid at hand (to pause it) and its
    output in `directory/fake-slack.log`.

    Raises:
        RuntimeError: the process exited, or printed no URL within `timeout` seconds (the
            message holds its output).
    """

    def __init__(
        self,
        directory: Path,
        timeout: float = 30.0,
        *,
        tokens: tuple[str, ...] = (),
        app_tokens: tuple[str, ...] = (),
        scopes: tuple[str, ...] | None = None,
        messages_tab: bool = True,
    ) -> None:
        """`tokens`, `app_tokens`: more tokens the workspace issued, beside `BOT_TOKEN` and
        `APP_TOKEN` (it takes no other). `scopes`: the bot token's (default: the manifest's). `messages_tab`: False as if the
        app's manifest hid its Messages tab."""
        self.log = directory / "fake-slack.log"
        issued = [f"--token={t}" for t in tokens] + [f"--app-token={t}" for t in app_tokens]
        if scopes is not None:
            issued.append(f"--scopes={','.join(scopes)}")
        if not messages_tab:
            issued.append("--no-messages-tab")
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable, "-u", "-m", "bot.sandbox.slack_api", "--port", "0",
                    "--token", BOT_TOKEN, "--app-token", APP_TOKEN, *issued,
                ],
                stdout=out, stderr=subprocess.STDOUT, env=_this_code({**os.environ}),
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while not (
            ready := re.search(
                f"^{re.escape(READY_PREFIX)}(.+)$", self.log.read_text(), re.MULTILINE
            )
        ):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"fake Slack did not start (exit status {self.proc.returncode}):\n{self.log.read_text()}"
                )
            time.sleep(0.02)
        self.url = ready.group(1).strip()
        """The Web API base URL, what `SIGNOFF_SLACK_API_URL` takes."""
        self.app_url: str | None = None
        """Where the fake sends the person's requests (see `connect`)."""

    async def connect(
        self, slack: SandboxClient, app_url: str, signing_secret: str = SIGNING_SECRET
    ) -> None:
        """Point the fake at the bot listening at `app_url` (once: it keeps the connection)."""
        if self.app_url != app_url:
            await slack.connect_app(app_url, signing_secret)
            self.app_url = app_url

    async def connect_socket(self, slack: SandboxClient) -> None:
        """Send what people do over Socket Mode, to the bot connected with an `xapp-` token
        (`BotProcess(app_token=...)`); `connect` switches back to HTTP."""
        if self.app_url != SOCKET_MODE:
            await slack.use_socket_mode()
            self.app_url = SOCKET_MODE

    def pause(self) -> None:
        """Stop the process (SIGSTOP): calls to it hang until `resume()`."""
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        self.resume()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class BotProcess:
    """`signoff run` in HTTP mode (or Socket Mode) on 127.0.0.1, its output in a log file beside the database.

    Args:
        directory: where the log goes (and the process's working directory).
        db_url: `SIGNOFF_DATABASE_URL`.
        slack_url: the fake's Web API base URL.
        policy: the policy file.
        app_token: an `xapp-` token: serve Socket Mode instead of HTTP (the fake must be
            told to send over the socket: `SandboxClient.use_socket_mode`).
        main: the module `python -m` runs: `bot.cli`, or a test's stand-in for it that
            changes something in the process first and then calls `bot.cli.main` (one that
            kills itself at a chosen point).
        env: more environment (e.g. `SIGNOFF_SWEEP_INTERVAL`).

    Raises:
        RuntimeError: the process exited, or `/healthz` did not answer within a minute (the
            message holds its output).
    """

    def __init__(
        self,
        directory: Path,
        db_url: str,
        slack_url: str,
        policy: Path,
        *,
        app_token: str | None = None,
        main: str = "bot.cli",
        **env: str,
    ) -> None:
        self.db_url = db_url
        self.read_url = db_url
        """Where the tests read the bot's database (set it when the bot's URL goes through a relay)."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.events_url = f"{self.url}/slack/events"
        self.log = directory / f"bot-{self.port}.log"
        self.env = {
            **os.environ,
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "SIGNOFF_SLACK_API_URL": slack_url,
            "SIGNOFF_DATABASE_URL": db_url,
            "SIGNOFF_POLICY": str(policy),
            "SIGNOFF_API_TOKEN": API_TOKEN,
            "SIGNOFF_DEFAULT_CHANNEL": CHANNEL,
            **env,
        }
        _this_code(self.env)
        # HTTP mode, whatever the developer's shell says; Socket Mode only when asked
        self.env.pop("SLACK_APP_TOKEN", None)
        if app_token is not None:
            self.env["SLACK_APP_TOKEN"] = app_token
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", main, "run", "--host", "127.0.0.1", "--port", str(self.port)],
                stdout=out, stderr=subprocess.STDOUT, env=self.env, cwd=directory,
            )  # fmt: skip
        self._wait_ready()

    def _wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"signoff run exited with {self.proc.returncode}:\n{self.output()}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as res:
                    if res.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(
            f"signoff run did not answer /healthz within {timeout:g}s:\n{self.output()}"
        )

    def output(self) -> str:
        """What the process printed so far (the tail)."""
        return self.log.read_text(errors="replace")[-6000:]

    def kill(self) -> None:
        """SIGKILL: no cleanup, as when the machine dies."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def stop(self) -> None:
        """SIGTERM and wait (SIGKILL after ten seconds)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
