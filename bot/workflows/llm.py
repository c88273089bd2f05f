"""The model an AI workflow talks to, chosen by configuration: any OpenAI-compatible chat API, or
by default a scripted model that needs no network.

The environment says which:

- `SIGNOFF_LLM_API_KEY`: set, the workflow calls a chat-completions API through the `openai`
  client library (in this repository: `.venv/bin/pip install -e '.[llm]'`); unset, it uses its
  scripted model. A local
  server that wants no key takes any value.
- `SIGNOFF_LLM_BASE_URL`: the API's base URL, e.g. `http://127.0.0.1:11434/v1` (default:
  OpenAI's).
- `SIGNOFF_LLM_MODEL`: the model name; required with a key.

The choice is made when a process first builds the workflow's graph: a run resumed by a process
configured otherwise goes on with that process's model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from langchain_core.messages import AIMessage, BaseMessage, ToolCall, convert_to_openai_messages
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

__all__ = [
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "MODEL_SETTINGS",
    "ChatModel",
    "OpenAIChat",
    "ScriptedChat",
    "model_from_env",
    "model_in_words",
]

ENV_API_KEY = "SIGNOFF_LLM_API_KEY"
ENV_BASE_URL = "SIGNOFF_LLM_BASE_URL"
ENV_MODEL = "SIGNOFF_LLM_MODEL"
MODEL_SETTINGS = (ENV_API_KEY, ENV_BASE_URL, ENV_MODEL)
"""The variables that choose the model: a process that starts the bot passes them on."""


class ChatModel(Protocol):
    """A tool-calling chat model: the conversation and the tools in, one `AIMessage` out."""

    async def reply(self, messages: Sequence[BaseMessage], tools: Sequence[BaseTool]) -> AIMessage:
        """The model's next message; its `tool_calls` are the tools it asks to run."""
        ...


class ScriptedChat:
    """Plays a tool-calling LLM by a script: `script(messages)` is its reply. The script must
    depend only on the conversation so far, so that a replay, or another process, gets the
    same reply."""

    def __init__(self, script: Callable[[Sequence[BaseMessage]], AIMessage]) -> None:
        self.script = script

    async def reply(self, messages: Sequence[BaseMessage], tools: Sequence[BaseTool]) -> AIMessage:
        del tools
        return self.script(messages)


class OpenAIChat:
    """An OpenAI-compatible chat-completions API, through the `openai` client library."""

    def __init__(self, *, model: str, api_key: str, base_url: str | None = None) -> None:
        try:
            from openai import AsyncOpenAI
        except ImportError:
            raise RuntimeError(
                f"{ENV_API_KEY} is set, so the workflow calls a chat API, but the openai package "
                "is not installed: in signoff's repository, .venv/bin/pip install -e '.[llm]' (or "
                "unset it to use the scripted model)"
            ) from None
        self.model = model
        self._open = AsyncOpenAI
        self._api_key = api_key
        self.base_url = base_url or None
        """The API's base URL; None: OpenAI's."""

    async def reply(self, messages: Sequence[BaseMessage], tools: Sequence[BaseTool]) -> AIMessage:
        wire: Any = convert_to_openai_messages(list(messages))
        specs: Any = [convert_to_openai_tool(t) for t in tools]
        extra: dict[str, Any] = {"tools": specs} if specs else {}
        # A client per reply, closed after it: a graph outlives any one event loop it runs on,
        # and a client's connections belong to the loop that opened them.
        async with self._open(api_key=self._api_key, base_url=self.base_url) as client:
            done = await client.chat.completions.create(
                model=self.model, messages=wire, temperature=0, **extra
            )
        if not done.choices:
            raise RuntimeError(f"the chat API ({self.model}) answered with no choices")
        message = done.choices[0].message
        calls: list[ToolCall] = []
        for c in message.tool_calls or []:
            function = getattr(c, "function", None)
            if function is None:  # a custom (non-function) tool call: none of ours
                continue
            calls.append(ToolCall(name=function.name, args=_arguments(function.arguments), id=c.id))
        return AIMessage(content=message.content or "", tool_calls=calls)


def _arguments(text: str | None) -> dict[str, Any]:
    """A call's JSON arguments. Text that is not a JSON object is kept under `_unparsed`, which
    no schema declares: the call is refused, and the model told why, instead of run with
    nothing."""
    try:
        args = json.loads(text or "{}")
    except ValueError:
        return {"_unparsed": text}
    return args if isinstance(args, dict) else {"_unparsed": text}


def model_from_env(
    environ: Mapping[str, str], script: Callable[[Sequence[BaseMessage]], AIMessage]
) -> ChatModel:
    """The model the environment configures (see the module's documentation), else
    `ScriptedChat(script)`.

    Raises:
        RuntimeError: a base URL or model is set without a key, or a key without a model.
    """
    key = environ.get(ENV_API_KEY, "")
    base_url = environ.get(ENV_BASE_URL, "")
    model = environ.get(ENV_MODEL, "")
    if not key:
        if base_url or model:
            raise RuntimeError(
                f"{ENV_BASE_URL if base_url else ENV_MODEL} is set but {ENV_API_KEY} is not: set "
                "it too (any value for a local server that wants none), or unset both to use "
                "the scripted model"
            )
        return ScriptedChat(script)
    if not model:
        raise RuntimeError(f"{ENV_API_KEY} is set: set {ENV_MODEL} too (the model's name)")
    return OpenAIChat(model=model, api_key=key, base_url=base_url or None)


def model_in_words(environ: Mapping[str, str]) -> str:
    """Which model the environment configures, for a start-up line (never the key).

    Raises:
        RuntimeError: the settings are incomplete, or name a model whose client is not
            installed (`model_from_env`'s errors, which say what to set or install).
    """
    chosen = model_from_env(environ, lambda messages: AIMessage(content=""))
    if isinstance(chosen, OpenAIChat):
        return f"{chosen.model} at {chosen.base_url or 'OpenAI'}"
    return f"the scripted one (set {ENV_API_KEY} and {ENV_MODEL} for a real one)"
