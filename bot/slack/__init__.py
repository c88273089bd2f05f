"""The Slack side of signoff: Block Kit renderers (`blocks`), payload readers (`payloads`) and
every user-facing string (`messages`). The modules here are pure; the Bolt app and its handlers
build on them. Importing this package does not import slack_bolt or aiohttp.
"""
