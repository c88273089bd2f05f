"""`signoff demo`: the bot, unchanged, against a local Slack you use in the browser.

One process serves the sandbox on `127.0.0.1:PORT`: the fake Slack's Web API (`/api/`), its
control API (`/_sandbox/`) and the web page (`/`). The real bot runs beside it as a subprocess,
`signoff run` in HTTP mode on another free port, with `SIGNOFF_SLACK_API_URL` pointing at the
sandbox, a fresh SQLite file and the demo policy; the sandbox sends it requests signed with
the signing secret made up for this run. Ctrl-C (or SIGTERM) stops both.

`signoff demo --socket-mode` runs the bot in Socket Mode instead (an `xapp-` token): it opens
the sandbox's WebSocket (`apps.connections.open`), and what people do on the page reaches it as
Socket Mode envelopes, as with Slack's own, with no public URL.

`signoff demo --walkthrough` is the terminal walk-through instead (`bot.walkthrough`).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import secrets
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from .approvals.errors import PolicyError
from .approvals.policy import load_policy
from .sandbox.page import DemoPage, workflow_form
from .sandbox.people import APPROVALS_CHANNEL, DEMO_POLICY, demo_workspace
from .sandbox.slack_api import FakeSlack
from .walkthrough import walkthrough as walk
from .workflows import load_workflows
from .workflows.llm import MODEL_SETTINGS, model_in_words

__all__ = ["SANDBOX_DB", "DemoBusy", "DemoLock", "main", "run_sandbox"]

SANDBOX_DB = "signoff-sandbox.db"
"""The demo's database, in the current directory, emptied at each start (unless another demo
holds it: see `DemoLock`)."""
AGENT_SERVICE = "demo-agent"
"""The demo policy's service (`[services.demo-agent]`): its token is made up at each start and
printed, for the README's "From any agent" examples."""
STARTUP_TIMEOUT = 60.0
"""Seconds the bot has to answer `/healthz`."""


def main(
    *,
    port: int = 3000,
    host: str = "127.0.0.1",
    walkthrough: bool = False,
    db: Path | None = None,
    bot_port: int = 0,
    policy: Path | None = None,
    socket_mode: bool = False,
    bot_token: str | None = None,
) -> int:
    """`signoff demo`: the sandbox and the bot until Ctrl-C; or the terminal walk-through.
    `bot_token` runs the bot with that token instead of the one the sandbox issued: one it
    did not issue is refused (`invalid_auth`) as Slack refuses it, to rehearse a bad token."""
    if walkthrough:
        return walk()
    try:
        return asyncio.run(
            run_sandbox(
                port=port,
                host=host,
                db=db,
                bot_port=bot_port,
                policy=policy,
                socket_mode=socket_mode,
                bot_token=bot_token,
            )
        )
    except KeyboardInterrupt:
        return 130


class DemoBusy(RuntimeError):
    """Another `signoff demo` holds the database; the message names its pid."""


class DemoLock:
    """An exclusive lock on a demo database, held for the demo's life.

    It is an `flock` on `DB.lock` beside the file, which holds the pid of the process that
    has it. The lock goes with the process (a demo killed with SIGKILL frees it), so a lock
    file left behind says nothing: only a lock held does. The file itself is never removed
    (removing it would let two demos lock two different files of the same name).
    """

    def __init__(self, db: Path) -> None:
        self.path = Path(f"{db}.lock")
        """The lock file, beside the database."""
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or refuse at once.

        Raises:
            DemoBusy: another process holds it.
        """
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            db = self.path.name.removesuffix(".lock")
            raise DemoBusy(
                f"another signoff demo is using {db} (pid {holder}); stop it or use --db"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Let the lock go (closing the file does)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _bot_env(
    slack: FakeSlack,
    db: Path,
    channel: str,
    secret: str,
    api_token: str,
    policy: Path,
    agent: tuple[str, str] | None = None,
    *,
    socket_mode: bool = False,
    bot_token: str | None = None,
) -> dict[str, str]:
    """The bot's environment: the tokens the sandbox issued (or `bot_token`), its URL, ..."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLACK_", "SIGNOFF_")) or k in MODEL_SETTINGS
    }  # the demo's own Slack and database; the model the caller chose
    env.update(
        SLACK_BOT_TOKEN=bot_token or slack.bot_token,
        SLACK_SIGNING_SECRET=secret,
        SIGNOFF_SLACK_API_URL=slack.url,
        SIGNOFF_DATABASE_URL=f"sqlite:///{db}",
        SIGNOFF_POLICY=str(policy),
        SIGNOFF_DEFAULT_CHANNEL=channel,
        SIGNOFF_API_TOKEN=api_token,
        PYTHONUNBUFFERED="1",
    )
    if agent is not None:  # the variable the policy names, and the token made up for it
        env[agent[0]] = agent[1]
    if socket_mode:
        env["SLACK_APP_TOKEN"] = slack.app_token
    return env


def _agent_token_env(policy: Path) -> str | None:
    """The variable holding the demo service's token, when the policy has that service."""

    service = load_policy(policy).services.get(AGENT_SERVICE)
    return service.token_env if service else None


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
            async with asyncio.timeout(10):
                await proc.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()


def demo_workflows(policy_path: Path) -> list[dict[str, Any]]:
    """The workflows the sandbox page offers: those `policy_path` declares (`[workflows.NAME]`,
    a bundled one by its name alone, one of your own with its `path`), each with its starters.

    Raises:
        PolicyError: the policy file is missing or wrong.
        ValueError: a workflow's `path` does not import (the message names it).
    """

    declared = load_policy(policy_path).workflows
    workflows = load_workflows({name: wf.path for name, wf in declared.items()})
    # the declared ones only, in the workflows' order: a bundled one not declared is not imported
    offered = {name: workflows[name] for name in workflows if name in declared}
    return [
        workflow_form(
            name,
            wf.description,
            wf.inputs,
            declared[name].starters,
            {key: f.type for key, f in wf.schema.fields.items()},
        )
        for name, wf in offered.items()
    ]


async def run_sandbox(
    *,
    port: int = 3000,
    host: str = "127.0.0.1",
    db: Path | None = None,
    bot_port: int = 0,
    policy: Path | None = None,
    socket_mode: bool = False,
    bot_token: str | None = None,
) -> int:
    """Serve the sandbox and run the bot against it until SIGINT or SIGTERM.

    Nothing is deleted before the page's port is bound and the database's lock (`DemoLock`)
    taken: a second demo started by mistake refuses, and the first one goes on.

    Args:
        port: The page's port (0 picks a free one; the URL printed says which).
        host: Where the page and the bot listen; keep it local.
        db: The SQLite file (default `signoff-sandbox.db` here), emptied first.
        bot_port: The bot's port (0, the default, picks a free one).
        policy: The policy the bot runs with (default: the demo's, `bot/policies/demo.toml`);
            the page offers the workflows it declares beside the bundled ones.
        socket_mode: Run the bot in Socket Mode: the page's actions reach it over the
            sandbox's WebSocket, not signed HTTP.
        bot_token: The bot's token instead of the one the sandbox issued (`FakeSlack`
            issues its own and takes no other): a wrong one stops the bot at start, as
            Slack's `invalid_auth` does.

    Returns:
        The exit status: 0 when stopped by a signal, 1 when something could not start or the
        bot died.
    """

    db = Path(db or SANDBOX_DB).absolute()
    policy = (policy or DEMO_POLICY).absolute()
    try:
        workflows = demo_workflows(policy)
        workspace = demo_workspace(policy)
        model = model_in_words(os.environ)
    except (PolicyError, ValueError, OSError, RuntimeError) as e:
        print(f"signoff demo: {e}", file=sys.stderr)
        return 1

    slack = FakeSlack(workspace)
    page = DemoPage(slack, channel=APPROVALS_CHANNEL[0], policy_path=policy, workflows=workflows)
    page.add_routes(slack.app)
    # A page left open holds a long poll: stop waiting for it after a moment.
    runner = web.AppRunner(slack.app, access_log=None, handle_signals=False, shutdown_timeout=2.0)
    await runner.setup()
    lock = DemoLock(db)
    try:
        await web.TCPSite(runner, host, port).start()
        if bot_port:
            _check_free(host, bot_port)
        lock.acquire()
    except OSError as e:
        await runner.cleanup()
        print(
            f"signoff demo: cannot listen on {host}:{e.filename or port} ({e.strerror}); "
            f"try {'--bot-port' if e.filename else '--port'}",
            file=sys.stderr,
        )
        return 1
    except DemoBusy as e:
        await runner.cleanup()
        print(f"signoff demo: {e}", file=sys.stderr)
        return 1
    try:
        return await _serve(
            slack,
            page,
            runner,
            host=host,
            db=db,
            bot_port=bot_port,
            policy=policy,
            socket_mode=socket_mode,
            model=model,
            bot_token=bot_token,
        )
    finally:
        lock.release()


def _check_free(host: str, port: int) -> None:
    """Raise `OSError` (its `filename` the port) when `port` cannot be listened on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            raise OSError(e.errno, e.strerror, str(port)) from e


async def _serve(
    slack: FakeSlack,
    page: DemoPage,
    runner: web.AppRunner,
    *,
    host: str,
    db: Path,
    bot_port: int,
    policy: Path,
    socket_mode: bool = False,
    model: str = "",
    bot_token: str | None = None,
) -> int:
    """Empty the database (its lock is held), start the bot, and serve until a signal.
    `model`: which model the support agent talks to, in words (`model_in_words`)."""

    for suffix in ("", "-wal", "-shm", ".locks"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    bound = runner.addresses[0][1]
    url = f"http://{host}:{bound}/"
    slack.base_url = url
    slack.responses.base_url = url

    bot_port = bot_port or _free_port(host)
    bot_url = f"http://{host}:{bot_port}"
    secret, api_token = secrets.token_hex(16), secrets.token_urlsafe(24)
    token_env, agent_token = _agent_token_env(policy), secrets.token_urlsafe(24)
    agent = (token_env, agent_token) if token_env else None
    env = _bot_env(
        slack, db, APPROVALS_CHANNEL[0], secret, api_token, policy, agent,
        socket_mode=socket_mode, bot_token=bot_token,
    )  # fmt: skip
    if socket_mode:  # what people do goes over the socket the bot opens at start
        slack.use_socket_mode()
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
            f"signoff demo: starting the bot (signoff run on {bot_url}"
            f"{', Socket Mode' if socket_mode else ''}, database {db})",
            flush=True,
        )
        starting = asyncio.create_task(_wait_healthy(bot_url, proc))
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({starting, stopped}, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if not starting.done():
            starting.cancel()
            return 0
        starting.result()
        if socket_mode:
            await slack.sockets.wait_connected()
        else:
            slack.connect_app(f"{bot_url}/slack/events", secret)
        page.bot_url, page.api_token = bot_url, api_token
        print(
            f"\nsignoff demo is running: open {url}\n"
            + (
                "  the bot runs in Socket Mode (over the sandbox's WebSocket)\n"
                if socket_mode
                else ""
            )
            + f"  a local Slack with the demo people (policy {policy.name}); "
            f"pick who you are, start {_what_to_start(policy)}, approve it.\n"
            f"  the support agent's model: {model}\n"
            + (
                f"  From any agent (docs/api.md): export SIGNOFF_URL={bot_url} "
                f"SIGNOFF_TOKEN={agent_token}\n"
                if agent
                else ""
            )
            + "  Ctrl-C stops it.\n",
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
            async with asyncio.timeout(5):
                await relay
        slack.touch()  # answers the pages' long polls now
        await slack.stop()
        await runner.cleanup()
        print("signoff demo stopped", flush=True)
    return status


def _what_to_start(policy: Path) -> str:
    """What the start-up line suggests starting: the bundled policy's refund, or one of the
    workflows of the policy given with --policy (the page lists them)."""

    return "a refund" if policy == DEMO_POLICY.absolute() else "one of its workflows"
