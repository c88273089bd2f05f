"""The Slack side of signoff.

Pure modules: `mrkdwn` (user data made safe, text fitted), `limits` (Slack's limits),
`messages` (every user-facing string), `payloads` (reading what Slack sends), and the
renderers `cards`, `modals`, `replies` and `status`. On them: the listeners (`actions`, `views`,
`commands`, `home`, bound by `handlers`), the Bolt app (`app`) and the event sink (`notify`).
Importing this package does not import slack_bolt or aiohttp.
"""
