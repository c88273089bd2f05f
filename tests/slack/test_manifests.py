"""Both app manifests are valid against Slack's official manifest schema (laid out beside the
project as `../shared/slack/`, as CI does), and request only the scopes the code uses."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

from bot.sandbox.models import Team
from bot.sandbox.scopes import accepted_somewhere
from bot.slack.scopes import BOT_SCOPES

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT.parent / "shared" / "slack"
SCHEMA = SCHEMAS / "manifest.schema.json"
PUBLISHED = "https://raw.githubusercontent.com/slackapi/manifest-schema/v0.5.0/schemas/"
"""Where the schema's `$ref`s point; the same files lie beside it, read from there (no network)."""


def registry() -> Registry[Any]:
    resources = [
        (PUBLISHED + f.name, Resource.from_contents(json.loads(f.read_text()), DRAFT7))
        for f in SCHEMAS.glob("manifest.schema.*.json")
    ]
    return Registry().with_resources(resources)


def manifest(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((ROOT / name).read_text())
    assert isinstance(loaded, dict)
    return loaded


@pytest.mark.parametrize("name", ["manifest.yml", "manifest-http.yml"])
def test_the_manifest_is_valid_against_slack_s_schema(name: str) -> None:
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(schema, registry=registry())
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(manifest(name))
    ]
    assert errors == []


def test_the_http_manifest_sends_every_request_to_the_slack_route() -> None:
    m = manifest("manifest-http.yml")
    assert m["settings"]["socket_mode_enabled"] is False
    (command,) = m["features"]["slash_commands"]
    urls = {
        command["url"],
        m["settings"]["interactivity"]["request_url"],
        m["settings"]["event_subscriptions"]["request_url"],
    }
    assert urls == {"https://YOUR-HOST/slack/events"}


def test_both_manifests_request_the_same_scopes_and_not_the_unused_ones() -> None:
    scopes = [
        manifest(n)["oauth_config"]["scopes"]["bot"] for n in ("manifest.yml", "manifest-http.yml")
    ]
    assert scopes[0] == scopes[1]
    assert "channels:read" not in scopes[0]  # nothing calls conversations.info


def test_the_bot_posts_only_where_it_can_read_and_the_stand_in_has_the_manifest_s_scopes() -> None:
    scopes = manifest("manifest.yml")["oauth_config"]["scopes"]["bot"]
    # a redelivery reads the channel for what an earlier attempt posted: Slack allows that only
    # where the bot is a member, so it is not given a scope to post anywhere else
    assert "chat:write.public" not in scopes
    assert set(Team().scopes) == set(scopes), "the stand-in's token has other scopes than the app"
    assert set(BOT_SCOPES) == set(scopes), "signoff doctor checks other scopes than requested"


def test_every_method_the_bot_calls_is_allowed_by_a_scope_it_requests() -> None:
    """Each Web API method named in the bot's code (slack_sdk's `chat_postMessage(` is
    `chat.postMessage`), against the scopes Slack accepts for it (the stand-in's table): a call
    added without its scope in the manifest fails here, not in a real workspace."""
    sources = "\n".join(
        p.read_text() for folder in ("slack", "http") for p in (ROOT / "bot" / folder).glob("*.py")
    )
    called = {
        name.replace("_", ".")
        for name in re.findall(r"\.((?:chat|conversations|usergroups|users|views|reactions|"
                               r"apps|auth|dnd|team)_[A-Za-z_]+)\(", sources)
    }  # fmt: skip
    assert {"chat.postMessage", "conversations.history", "views.open"} <= called
    for method in sorted(called):
        wanted = accepted_somewhere(method)
        assert not wanted or set(wanted) & set(BOT_SCOPES), (method, wanted)


@pytest.mark.parametrize("name", ["manifest.yml", "manifest-http.yml"])
def test_the_manifest_subscribes_to_every_event_the_app_listens_for(name: str) -> None:
    """Slack sends an event only to an app subscribed to it: a listener without the
    subscription never runs (`tokens_revoked`, `app_uninstalled` were not subscribed)."""
    sources = "\n".join(p.read_text() for p in (ROOT / "bot" / "slack").glob("*.py"))
    listened = set(re.findall(r'\.event\("(\w+)"\)', sources))
    assert {"app_home_opened", "tokens_revoked", "app_uninstalled"} <= listened
    subscribed = manifest(name)["settings"]["event_subscriptions"]["bot_events"]
    assert set(subscribed) == listened
