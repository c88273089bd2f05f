"""The README's Python example runs as written, and its commands name real CLI commands."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)


def test_the_runtime_example_runs_and_prints_what_the_comments_say(tmp_path: Path) -> None:
    example = next(b for b in python_blocks() if "from graphs import" in b)
    script = tmp_path / "readme_example.py"
    script.write_text(example, encoding="utf-8")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    expected = re.findall(r"# (\{.*\}|\[.*\])$", example, re.MULTILINE)
    assert run.stdout.splitlines() == expected


def test_every_signoff_command_in_the_readme_exists() -> None:
    text = README.read_text(encoding="utf-8")
    commands = set(re.findall(r"^\s*(?:\$ )?signoff ([a-z]+)", text, re.MULTILINE))
    assert commands, "the README shows no signoff command"
    help_text = subprocess.run(
        [sys.executable, "-m", "bot.cli", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for command in commands:
        assert re.search(rf"\b{command}\b", help_text), (
            f"README shows `signoff {command}`, which --help lacks"
        )
