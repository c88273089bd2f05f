"""The README's and the docs' examples run as written, and their commands name real CLI
commands. The docs are read as one text with the README (`DOCS`): an example moved from one page
to another is still found, and still run."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[1] / "README.md"
PAGES = sorted((README.parent / "docs").glob("*.md"))


def docs() -> str:
    """The README and every page of `docs/`, one after the other."""
    return "\n".join(p.read_text(encoding="utf-8") for p in [README, *PAGES])


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", docs(), re.DOTALL)


def test_the_runtime_example_runs_and_prints_what_the_comments_say(tmp_path: Path) -> None:
    example = next(b for b in python_blocks() if "from graphs import" in b)
    script = tmp_path / "readme_example.py"
    script.write_text(example, encoding="utf-8")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    expected = re.findall(r"# (\{.*\}|\[.*\])$", example, re.MULTILINE)
    assert run.stdout.splitlines() == expected


def test_the_docs_home_installs_and_runs_the_demo_as_the_readme_does() -> None:
    install = re.compile(r"^python3 -m venv .*signoff demo$", re.MULTILINE)
    (readme,) = install.findall(README.read_text(encoding="utf-8"))
    (home,) = install.findall((README.parent / "docs" / "index.md").read_text(encoding="utf-8"))
    assert home == readme


def test_every_signoff_command_in_the_readme_exists() -> None:
    text = docs()
    commands = set(re.findall(r"^\s*(?:\$ )?signoff ([a-z]+)", text, re.MULTILINE))
    assert commands, "the README shows no signoff command"
    help_text = subprocess.run(
        [sys.executable, "-m", "bot.cli", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for command in commands:
        assert re.search(rf"\b{command}\b", help_text), (
            f"README shows `signoff {command}`, which --help lacks"
        )


def block(language: str, first_line: str) -> str:
    """The README's `language` block whose first line is `first_line`."""
    blocks = re.findall(rf"```{language}\n(.*?)```", docs(), re.DOTALL)
    return next(b for b in blocks if b.startswith(first_line + "\n"))


def test_your_own_workflow_runs_as_the_readme_says(tmp_path: Path) -> None:
    (tmp_path / "expense.py").write_text(block("python", "# expense.py"), encoding="utf-8")
    (tmp_path / "expense.toml").write_text(block("toml", "# expense.toml"), encoding="utf-8")
    commands = block(
        "sh", "export SIGNOFF_POLICY=expense.toml SIGNOFF_DATABASE_URL=sqlite:///expense.db"
    )
    exported, start, approve, demo = commands.splitlines()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SIGNOFF_"))}
    env.update(dict(item.split("=", 1) for item in exported.split()[1:]))
    # The `signoff` script itself, as the README's reader runs it (it is not `python -m`,
    # which would put the current directory on the path by itself).
    signoff = str(Path(sys.executable).with_name("signoff"))

    def run(line: str) -> subprocess.CompletedProcess[str]:
        argv = shlex.split(line.split("  #")[0])
        assert argv[0] == "signoff", line
        return subprocess.run(
            [signoff, *argv[1:]], cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=90, check=False,
        )  # fmt: skip

    started = run(start)
    assert started.returncode == 0, started.stderr
    (approval_id,) = re.findall(r"approval (apr_\S+):", started.stdout)
    approved = run(approve.replace("APPROVAL_ID", approval_id))
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.splitlines()[-1].endswith(": completed: paid 40.00 for train ticket")
    # The demo's page would offer it, with its starters.
    assert demo.startswith("signoff demo --policy expense.toml")
    script = (
        "import json, pathlib; from bot.demo import demo_workflows; "
        "print(json.dumps(demo_workflows(pathlib.Path('expense.toml'))))"
    )
    offered = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert [(w["name"], w["starters"]) for w in json.loads(offered.stdout)] == [
        ("expense", ["@support"])
    ]
    # Typed into the demo's form, the amount is sent as the number its action's schema wants.
    (form,) = json.loads(offered.stdout)
    assert [(i["name"], i["type"]) for i in form["inputs"]] == [
        ("item", "text"),
        ("amount", "number"),
    ]


def test_the_agent_inbox_example_runs_the_edited_refund_as_the_docs_say(tmp_path: Path) -> None:
    """The Agent Inbox node of docs/agents.md, unchanged: started, its request is an approval;
    approved with an edit, the node gets an `edit` HumanResponse and refunds the edited
    amount, as the command's comment says."""
    for name, language in (("inbox_refund.py", "python"), ("inbox_refund.toml", "toml")):
        (tmp_path / name).write_text(block(language, f"# {name}" + (
            ": a node written for Agent Inbox, its request a card in Slack"
            if language == "python" else "")), encoding="utf-8")  # fmt: skip
    commands = block(
        "sh", "export SIGNOFF_POLICY=inbox_refund.toml SIGNOFF_DATABASE_URL=sqlite:///inbox.db"
    )
    exported, start, approve = commands.splitlines()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SIGNOFF_"))}
    env.update(dict(item.split("=", 1) for item in exported.split()[1:]))
    signoff = str(Path(sys.executable).with_name("signoff"))

    def run(line: str) -> subprocess.CompletedProcess[str]:
        argv = shlex.split(line.split("  #")[0])
        return subprocess.run(
            [signoff, *argv[1:]], cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=90, check=False,
        )  # fmt: skip

    started = run(start)
    assert started.returncode == 0, started.stderr
    (approval_id,) = re.findall(r"approval (apr_\S+):", started.stdout)
    approved = run(approve.replace("APPROVAL_ID", approval_id))
    assert approved.returncode == 0, approved.stderr
    said = approve.split("#", 1)[1].strip()
    assert said == "refunded 40.00 on o-1"
    assert approved.stdout.splitlines()[-1].endswith(f": completed: {said}")


def test_the_terminal_commands_run_as_written_and_approve_a_refund(tmp_path: Path) -> None:
    """Every line of the README's terminal block, in order, in a directory holding what a fresh
    clone does (its `bot/policies/demo.toml`), with the ids each command printed pasted in and
    its optional arguments given (`...` left out); a refund ends approved and run."""
    text = docs()
    blocks = re.findall(
        r"```sh\n(cp bot/policies/demo\.toml signoff\.toml .*?)```", text, re.DOTALL
    )
    assert len(blocks) == 1, "the README's terminal block starts by copying the demo's policy"
    lines = blocks[0].splitlines()
    policies = tmp_path / "bot" / "policies"
    policies.mkdir(parents=True)
    (policies / "demo.toml").write_text(
        (README.parent / "bot" / "policies" / "demo.toml").read_text()
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SIGNOFF_"))}
    signoff = str(Path(sys.executable).with_name("signoff"))
    ids: dict[str, str] = {}
    # A run that is not failed, with nothing Slack refused: these say why not, and change nothing.
    refused = {"retry": "only a run that is failed", "cancel": "only a run that is failed",
               "redeliver": "nothing of"}  # fmt: skip

    def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90, check=False
        )

    def started() -> None:
        out = run([signoff, *shlex.split(start)[1:]])
        assert out.returncode == 0, out.stderr
        (ids["THREAD_ID"],) = re.findall(r"on thread (\S+)", out.stdout)
        (ids["APPROVAL_ID"],) = re.findall(r"approval (apr_\S+):", out.stdout)

    start = next(line for line in lines if line.startswith("signoff start refund"))
    ran = []
    for line in lines:
        command = line.split("  #")[0].strip()
        command = re.sub(
            r"\[([^\]]*)\]", lambda m: "" if "..." in m.group(1) else m.group(1), command
        )
        for name, value in ids.items():
            command = command.replace(name, value)
        argv = shlex.split(command)
        if argv[0] == "cp":
            assert run(argv).returncode == 0
            continue
        assert argv[0] == "signoff", line
        verb = argv[1]
        if verb == "start":
            started()
            continue
        if verb == "reject":  # "instead of approving": a second refund to reject
            started()
            argv = [a.replace(argv[2], ids["APPROVAL_ID"]) for a in argv]
        out = run([signoff, *argv[1:]])
        ran.append(verb)
        assert "Traceback" not in out.stderr, (line, out.stderr)
        if verb in refused:
            assert out.returncode == 1 and refused[verb] in out.stderr, (line, out.stderr)
            continue
        assert out.returncode == 0, (line, out.stdout, out.stderr)
        if verb == "approve":
            assert out.stdout.splitlines()[-1].endswith(": completed: refunded 40.00 to c9")
        if verb == "show":
            assert json.loads(out.stdout)["thread_id"].startswith("refund-")
        if verb == "reject":
            assert "rejected by U_ALICE" in out.stdout, out.stdout
    assert (tmp_path / "FILE").read_text().count("\n") > 4  # `audit export --out FILE`
    assert (tmp_path / "expense.py").exists() and (tmp_path / "test_expense.py").exists()
    assert {"db", "pending", "show", "approve", "reject", "worker", "audit", "purge"} <= set(ran)


def test_the_agent_example_pauses_before_the_gated_call(tmp_path: Path) -> None:
    example = block("python", "# agent.py: your own agent, its tool calls gated by the policy")
    script = tmp_path / "agent.py"
    script.write_text(example, encoding="utf-8")
    root = str(README.parent)
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True, env=env
    )
    expected = re.findall(r"^# (send_refund .*)$", example, re.MULTILINE)
    assert expected and run.stdout.splitlines() == expected


def test_the_api_example_starts_a_refund_under_the_policy_the_readme_says_to_copy(
    tmp_path: Path,
) -> None:
    """The `curl` of `POST /api/runs`, as written, against a real `signoff run` whose policy is
    `bot/policies/demo.toml` copied to `signoff.toml`; only the port is the test's own."""
    from bot.sandbox.processes import API_TOKEN, BotProcess, FakeSlackProcess, sqlite_url

    curl = block(
        "sh", 'curl -H "Authorization: Bearer $SIGNOFF_API_TOKEN" -d \'{"workflow": "refund",'
    )
    policy = tmp_path / "signoff.toml"
    policy.write_text((README.parent / "bot" / "policies" / "demo.toml").read_text())
    slack = FakeSlackProcess(tmp_path)
    try:
        bot = BotProcess(tmp_path, sqlite_url(tmp_path), slack.url, policy)
        try:
            assert "http://localhost:3000/api/runs" in curl
            line = curl.replace("http://localhost:3000", bot.url).replace(
                "curl ", "curl -sS -w '\\n%{http_code}' ", 1
            )
            env = {**os.environ, "SIGNOFF_API_TOKEN": API_TOKEN}
            done = subprocess.run(
                ["bash", "-c", line], capture_output=True, text=True, env=env, timeout=60,
                check=False,
            )  # fmt: skip
        finally:
            bot.stop()
    finally:
        slack.stop()
    # What the reader sees on the bot's terminal: it says once that it runs, and Bolt's
    # warning that the token is unused (it is the client's own) is not among it.
    printed = bot.log.read_text()
    assert printed.count("signoff running (HTTP on 127.0.0.1:") == 1, printed
    assert "will be unused" not in printed, printed
    assert done.returncode == 0, done.stderr
    body, status = done.stdout.rsplit("\n", 1)
    assert status == "201", body
    answer = json.loads(body)
    assert answer["ok"] is True and answer["status"] == "paused", answer
    assert answer["thread_id"].startswith("refund-") and len(answer["approvals"]) == 1


def test_the_http_example_works_against_signoff_demo(tmp_path: Path) -> None:
    """ "From any agent", HTTP: the curl lines, pasted after the demo's export line, ask for a
    refund; Alice approves it on the demo's Slack; the waiting curl prints the decision."""
    import asyncio

    from bot.sandbox.client import SandboxClient
    from bot.slack.payloads import APPROVE

    example = block("sh", "# ask for an approval (202); the card appears in #approvals")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SIGNOFF_"))}
    demo = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "demo", "--port", "0", "--db", "demo.db"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    script: subprocess.Popen[str] | None = None
    try:
        assert demo.stdout is not None
        page, exported, said = "", "", []
        for line in demo.stdout:
            said.append(line)
            if m := re.search(r"open (http://\S+/)", line):
                page = m.group(1)
            if m := re.search(r"(export SIGNOFF_URL=\S+ SIGNOFF_TOKEN=\S+)", line):
                exported = m.group(1)
                break
        assert page and exported, "".join(said)
        script = subprocess.Popen(
            ["bash", "-euc", f"{exported}\n{example}"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

        async def approve_as_alice() -> None:
            def card(state: dict[str, object]) -> dict[str, object] | None:
                for channel in state["channels"]:  # type: ignore[attr-defined]
                    for m in channel["messages"]:
                        if "cust_9" in json.dumps(m.get("blocks")) and m.get("thread_ts") in (
                            None,
                            m["ts"],
                        ):
                            return dict(m)
                return None

            async with SandboxClient(page) as slack:
                found = card(await slack.wait_for(card, timeout=60))
                assert found is not None
                clicked = await slack.click(
                    "U_ALICE", str(found["channel"]), str(found["ts"]), APPROVE
                )
                assert clicked["status"] == 200, clicked

        asyncio.run(approve_as_alice())
        out, err = script.communicate(timeout=90)
        assert script.returncode == 0, err
        approval = json.loads(out.strip().splitlines()[-1])
        assert (approval["status"], approval["approved"]) == ("approved", True)
        assert approval["service"] == "demo-agent"
        # The policy's title is the header; the service's own words are its note.
        assert approval["title"] == "Send a refund"
        assert approval["note"] == "Refund 42.50 to cust_9"
        assert approval["decision"]["by"] == ["U_ALICE"]
    finally:
        if script is not None and script.poll() is None:
            script.kill()
            script.communicate()
        demo.terminate()
        demo.wait(30)
        if demo.stdout is not None:
            demo.stdout.close()


def test_the_webhook_check_accepts_signoffs_signature_and_nothing_else(tmp_path: Path) -> None:
    import importlib.util
    import time

    from bot.approvals.external import sign_webhook

    path = tmp_path / "verify_signoff_webhook.py"
    path.write_text(
        block("python", "# verify_signoff_webhook.py: is this webhook from signoff, and recent?"),
        encoding="utf-8",
    )
    spec = importlib.util.spec_from_file_location("verify_signoff_webhook", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    verify = module.verify
    assert callable(verify)
    body = b'{"delivery_id":"dlv_1","event":"approval.settled","approval":{}}'
    now = int(time.time())
    header = sign_webhook("whsec", now, body)
    assert verify("whsec", header, body)
    assert not verify("other", header, body)
    assert not verify("whsec", header, body + b" ")
    assert not verify("whsec", sign_webhook("whsec", now - 3600, body), body)
    assert not verify("whsec", "t=,v1=", body)


def test_the_mcp_and_client_examples_work_against_signoff_demo(tmp_path: Path) -> None:
    """ "From any agent", MCP and Python client: each script, run after the demo's export line,
    asks for a refund; Alice approves its card on the demo's Slack; the script prints the
    decision it waited for."""
    import asyncio

    from bot.sandbox.client import SandboxClient
    from bot.slack.payloads import APPROVE

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SIGNOFF_"))}
    demo = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "demo", "--port", "0", "--db", "demo.db"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert demo.stdout is not None
        page, said = "", []
        for line in demo.stdout:
            said.append(line)
            if m := re.search(r"open (http://\S+/)", line):
                page = m.group(1)
            if m := re.search(r"export SIGNOFF_URL=(\S+) SIGNOFF_TOKEN=(\S+)", line):
                env.update(SIGNOFF_URL=m.group(1), SIGNOFF_TOKEN=m.group(2))
                break
        assert page and "SIGNOFF_TOKEN" in env, "".join(said)
        env["PYTHONPATH"] = str(README.parent)

        async def approve_as_alice(customer: str) -> None:
            def card(state: dict[str, Any]) -> dict[str, Any] | None:
                for channel in state["channels"]:
                    for m in channel["messages"]:
                        blocks = json.dumps(m.get("blocks"))
                        if customer in blocks and m.get("thread_ts") in (None, m["ts"]):
                            return dict(m)
                return None

            async with SandboxClient(page) as slack:
                found = card(await slack.wait_for(card, timeout=60))
                assert found is not None
                clicked = await slack.click("U_ALICE", found["channel"], found["ts"], APPROVE)
                assert clicked["status"] == 200, clicked

        for first_line, customer in (
            ("# ask_over_mcp.py: ask signoff for an approval over MCP and wait for the decision",
             "cust_12"),
            ("# ask_with_the_client.py: ask signoff for an approval and wait for the decision",
             "cust_14"),
        ):  # fmt: skip
            script = tmp_path / first_line.split()[1].rstrip(":")
            script.write_text(block("python", first_line), encoding="utf-8")
            run = subprocess.Popen(
                [sys.executable, str(script)], cwd=tmp_path, env=env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            try:
                asyncio.run(approve_as_alice(customer))
                out, err = run.communicate(timeout=120)
            finally:
                if run.poll() is None:
                    run.kill()
                    run.communicate()
            assert run.returncode == 0, err
            last = out.strip().splitlines()[-1]
            if customer == "cust_12":
                answer = json.loads(last)
                assert (answer["status"], answer["approved"]) == ("approved", True)
                assert (answer["service"], answer["decision"]["by"]) == ("demo-agent", ["U_ALICE"])
            else:
                args = {"amount": 14.0, "customer_id": "cust_14", "order_id": "o-1014"}
                assert last == f"approved by U_ALICE {args}"
    finally:
        demo.terminate()
        demo.wait(30)
        if demo.stdout is not None:
            demo.stdout.close()
