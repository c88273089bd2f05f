"""`signoff demo`: the bot, unchanged, against a local Slack you use in the browser.

One process serves the sandbox on `127.0.0.1:PORT`: the fake Slack's Web API (`/api/`), its
control API (`/_sandbox/`) and the web page (`/`). The real bot runs beside it as a subprocess,
`signoff run` in HTTP mode on another free port, with `SIGNOFF_SLACK_API_URL` pointing at the
sandbox, a fresh SQLite file and the demo policy; the sandbox sends it requests signed with
the signing secret made up for this run. Ctrl-C (or SIGTERM) stops both.

`signoff demo --walkthrough` is the terminal walk-through instead (`bot.walkthrough`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import socket
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

__all__ = ["SANDBOX_DB", "main", "run_sandbox"]

SANDBOX_DB = "signoff-sandbox.db"
"""The demo's database, in the current directory, emptied at each start."""
BOT_TOKEN = "xoxb-sandbox-demo"
"""The bot's token for the sandbox (which accepts any `xoxb-` token)."""
STARTUP_TIMEOUT = 60.0
"""Seconds the bot has to answer `/healthz`."""


def main(*, port: int = 3000, host: str = "127.0.0.1", walkthrough: bool = False) -> int:
    """`signoff demo`: the sandbox and the bot until Ctrl-C; or the terminal walk-through."""
    if walkthrough:
        from .walkthrough import walkthrough as walk

        return walk()
    try:
        return asyncio.run(run_sandbox(port=port, host=host))
    except KeyboardInterrupt:
        return 130


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _bot_env(slack_url: str, db: Path, channel: str, secret: str, api_token: str) -> dict[str, str]:
    from .sandbox.people import DEMO_POLICY

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SIGNOFF_"))}
    env.update(
        SLACK_BOT_TOKEN=BOT_TOKEN,
        SLACK_SIGNING_SECRET=secret,
        SIGNOFF_SLACK_API_URL=slack_url,
        SIGNOFF_DATABASE_URL=f"sqlite:///{db}",
        SIGNOFF_POLICY=str(DEMO_POLICY),
        SIGNOFF_DEFAULT_CHANNEL=channel,
        SIGNOFF_API_TOKEN=api_token,
        PYTHONUNBUFFERED="1",
    )
    return env


async def _relay(stream: asyncio.StreamReader, tail: list[str]) -> None:
    """Print the bot's output, prefixed, and keep its last lines for an error message."""
    while line := await stream.readline():
        text = line.decode(errors="replace").rstrip()
        tail.append(text)
        del tail[:-20]
        print(f"  bot | {text}", flush=True)


async def _wait_healthy(url: str, proc: asyncio.subprocess.Process) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
        while True:
            if proc.returncode is not None:
                raise RuntimeError(f"the bot exited with status {proc.returncode}")
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with session.get(url + "/healthz") as res:
                    if res.status == 200:
                        return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the bot did not answer {url}/healthz in {STARTUP_TIMEOUT:g}s")
            await asyncio.sleep(0.1)


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()


def demo_workflows(policy_path: Path) -> list[dict[str, Any]]:
    """The bundled workflows as the sandbox page offers them, with the starters `policy_path`
    gives each."""
    from .sandbox.page import workflow_form
    from .workflows import BUILTIN

    with open(policy_path, "rb") as f:
        declared = tomllib.load(f).get("workflows", {})
    return [
        workflow_form(
            name, wf.description, wf.inputs, (declared.get(name) or {}).get("starters", ())
        )
        for name, wf in BUILTIN.items()
    ]


async def run_sandbox(*, port: int = 3000, host: str = "127.0.0.1", db: Path | None = None) -> int:
    """Serve the sandbox and run the bot against it until SIGINT or SIGTERM.

    Args:
        port: The page's port (0 picks a free one; the URL printed says which).
        host: Where the page and the bot listen; keep it local.
        db: The SQLite file (default `signoff-sandbox.db` here), emptied first.

    Returns:
        The exit status: 0 when stopped by a signal, 1 when something could not start or the
        bot died.
    """
    from .sandbox.page import DemoPage
    from .sandbox.people import APPROVALS_CHANNEL, DEMO_POLICY, demo_workspace
    from .sandbox.slack_api import FakeSlack

    db = Path(db or SANDBOX_DB)
    for suffix in ("", "-wal", "-shm", ".locks"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)

    slack = FakeSlack(demo_workspace)
    page = DemoPage(
        slack,
        channel=APPROVALS_CHANNEL[0],
        policy_path=DEMO_POLICY,
        workflows=demo_workflows(DEMO_POLICY),
    )
    page.add_routes(slack.app)
    # A page left open holds a long poll: stop waiting for it after a moment.
    runner = web.AppRunner(slack.app, access_log=None, handle_signals=False, shutdown_timeout=2.0)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as e:
        await runner.cleanup()
        print(
            f"signoff demo: cannot listen on {host}:{port} ({e.strerror}); try --port",
            file=sys.stderr,
        )
        return 1
    bound = runner.addresses[0][1]
    url = f"http://{host}:{bound}/"
    slack.base_url = url
    slack.responses.base_url = url

    bot_port = _free_port(host)
    bot_url = f"http://{host}:{bot_port}"
    secret, api_token = secrets.token_hex(16), secrets.token_urlsafe(24)
    env = _bot_env(slack.url, db, APPROVALS_CHANNEL[0], secret, api_token)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "run", "--host", host, "--port", str(bot_port),
        env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert proc.stdout is not None
    tail: list[str] = []
    relay = asyncio.create_task(_relay(proc.stdout, tail))

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    status = 0
    try:
        print(
            f"signoff demo: starting the bot (signoff run on {bot_url}, database {db})", flush=True
        )
        starting = asyncio.create_task(_wait_healthy(bot_url, proc))
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({starting, stopped}, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if not starting.done():
            starting.cancel()
            return 0
        starting.result()
        slack.connect_app(f"{bot_url}/slack/events", secret)
        page.bot_url, page.api_token = bot_url, api_token
        print(
            f"\nsignoff demo is running: open {url}\n"
            f"  a local Slack with the demo people (policy {DEMO_POLICY.name}); "
            "pick who you are, start a refund, approve it.\n"
            "  Ctrl-C stops it.\n",
            flush=True,
        )
        exited = asyncio.create_task(proc.wait())
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({exited, stopped}, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if exited.done():
            raise RuntimeError(f"the bot exited with status {proc.returncode}")
        exited.cancel()
    except RuntimeError as e:
        await asyncio.sleep(0.2)  # let the relay print the bot's last words
        print(f"signoff demo: {e}", file=sys.stderr)
        status = 1
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await _stop(proc)
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(relay, 5)
        slack.touch()  # answers the pages' long polls now
        await slack.stop()
        await runner.cleanup()
        print("signoff demo stopped", flush=True)
    return status
