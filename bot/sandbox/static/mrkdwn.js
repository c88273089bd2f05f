// Slack's mrkdwn and plain_text as HTML, for the sandbox page. No dependencies.
//
// mrkdwn(text, ctx) handles what Slack renders in messages:
//   <@U123> and <@U123|name>      a mention, shown with the person's name (yours highlighted)
//   <#C123> <!here> <!subteam^S1> channel, special and group mentions
//   <!date^TS^FORMAT|fallback>    its fallback text (the time, in your zone, as a tooltip)
//   <url> <url|label>             links
//   *bold* _italic_ ~strike~ `code` ```block```, "> " quotes, :shortcode: emoji
//   &amp; &lt; &gt;               the three entities Slack encodes
// A token's fallback text is shown as plain text, never formatted: that is how signoff writes
// a literal `*` or `_` from user data (`<!date^00000000^{_}|*>`).
//
// ctx: { users: {id: {name, real_name}}, groups: {id: handle}, channels: {id: name}, me: id }

(function (global) {
  "use strict";

  const EMOJI = {
    white_check_mark: "✅", heavy_check_mark: "✔️", x: "❌", warning: "⚠️", no_entry: "⛔",
    no_entry_sign: "🚫", hourglass: "⌛", hourglass_flowing_sand: "⏳", tada: "🎉", eyes: "👀",
    lock: "🔒", bell: "🔔", rotating_light: "🚨", red_circle: "🔴", large_orange_circle: "🟠",
    large_yellow_circle: "🟡", large_green_circle: "🟢", large_blue_circle: "🔵", white_circle: "⚪",
    thumbsup: "👍", "+1": "👍", thumbsdown: "👎", "-1": "👎", wave: "👋", memo: "📝",
    information_source: "ℹ️", moneybag: "💰", zap: "⚡", shrug: "🤷", robot_face: "🤖",
    hammer_and_wrench: "🛠️", wastebasket: "🗑️", arrow_right: "➡️", clock3: "🕒", stopwatch: "⏱️",
    raised_hand: "✋", pencil2: "✏️", bust_in_silhouette: "👤", busts_in_silhouette: "👥",
  };

  function escapeHtml(s) {
    return String(s)
      .replace(/&/g, "&amp;")
      .replace(/</g, "&lt;")
      .replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;");
  }

  function decodeEntities(s) {
    return String(s).replace(/&(amp|lt|gt);/g, (_, e) => ({ amp: "&", lt: "<", gt: ">" })[e]);
  }

  function emojify(html) {
    return html.replace(/:([a-z0-9_+\-]+):/g, (all, name) => EMOJI[name] || all);
  }

  function personName(ctx, id) {
    const u = (ctx.users || {})[id];
    return u ? u.real_name || u.name : id;
  }

  function safeUrl(url) {
    return /^(https?:|mailto:)/i.test(url) ? url : null;
  }

  function localTime(ts) {
    const d = new Date(Number(ts) * 1000);
    if (isNaN(d.getTime()) || Number(ts) <= 0) return "";
    return d.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
  }

  // One <...> token as HTML.
  function token(body, ctx) {
    const bar = body.indexOf("|");
    const head = bar === -1 ? body : body.slice(0, bar);
    const label = bar === -1 ? null : decodeEntities(body.slice(bar + 1));
    if (head.startsWith("@")) {
      const id = head.slice(1);
      const mine = id === ctx.me ? " me" : "";
      const name = label || personName(ctx, id);
      return `<span class="mention${mine}" data-user="${escapeHtml(id)}">@${escapeHtml(name)}</span>`;
    }
    if (head.startsWith("#")) {
      const id = head.slice(1);
      const name = label || (ctx.channels || {})[id] || id;
      return `<span class="mention channel">#${escapeHtml(name)}</span>`;
    }
    if (head.startsWith("!")) {
      const parts = head.slice(1).split("^");
      const kind = parts[0];
      if (kind === "date") {
        const when = localTime(parts[1]);
        const title = when ? ` title="${escapeHtml(when)}"` : "";
        return `<span class="date"${title}>${escapeHtml(label == null ? when : label)}</span>`;
      }
      if (kind === "subteam") {
        const handle = label ? label.replace(/^@/, "") : (ctx.groups || {})[parts[1]] || parts[1];
        return `<span class="mention group">@${escapeHtml(handle)}</span>`;
      }
      if (kind === "here" || kind === "channel" || kind === "everyone") {
        return `<span class="mention special">@${escapeHtml(kind)}</span>`;
      }
      return escapeHtml(label == null ? "" : label);
    }
    const url = safeUrl(decodeEntities(head));
    if (url) {
      const text = label == null ? url : label;
      return `<a href="${escapeHtml(url)}" target="_blank" rel="noopener noreferrer">${escapeHtml(text)}</a>`;
    }
    return escapeHtml("<" + decodeEntities(body) + ">");
  }

  const HOLD = /\uE000(\d+)\uE001/g;
  const HELD = /\uE000\d+\uE001/;

  function mrkdwn(text, ctx) {
    ctx = ctx || {};
    const slots = [];
    const hold = (html) => "\uE000" + (slots.push(html) - 1) + "\uE001";
    let s = String(text == null ? "" : text).replace(/[\uE000\uE001]/g, "\uFFFD");
    s = s.replace(/<([^<>\n]*)>/g, (_, body) => hold(token(body, ctx)));
    s = escapeHtml(decodeEntities(s));
    s = s.replace(/```\n?([\s\S]*?)```/g, (_, code) => hold(`<pre class="code-block">${code}</pre>`));
    s = s.replace(/`([^`\n]+)`/g, (_, code) => hold(`<code>${code}</code>`));
    s = s.replace(/(^|[^\w*])\*(?=\S)([^*\n]*?[^\s*])\*(?![\w*])/g, "$1<b>$2</b>");
    s = s.replace(/(^|[^\w_])_(?=\S)([^_\n]*?\S)_(?![\w_])/g, "$1<i>$2</i>");
    s = s.replace(/(^|[^\w~])~(?=\S)([^~\n]*?\S)~(?![\w~])/g, "$1<s>$2</s>");
    s = emojify(s);
    // "> " at the start of a line quotes it (signoff puts a soft hyphen before a literal one).
    const out = [];
    let quote = [];
    for (const line of s.split("\n")) {
      const m = /^&gt;\s?(.*)$/.exec(line);
      if (m) {
        quote.push(m[1]);
        continue;
      }
      if (quote.length) out.push(`<blockquote>${quote.join("<br>")}</blockquote>`), (quote = []);
      out.push(line + "\n");
    }
    if (quote.length) out.push(`<blockquote>${quote.join("<br>")}</blockquote>`);
    s = out.join("").replace(/\n$/, "").replace(/\n/g, "<br>");
    for (let i = 0; i < 3 && HELD.test(s); i++) {
      s = s.replace(HOLD, (_, n) => slots[Number(n)]);
    }
    return s;
  }

  // A plain_text object's text as HTML (emoji shortcodes only when it says emoji: true).
  function plain(obj) {
    if (!obj) return "";
    const text = typeof obj === "string" ? obj : obj.text || "";
    const html = escapeHtml(text).replace(/\n/g, "<br>");
    return obj.emoji === false ? html : emojify(html);
  }

  // Any text object: plain_text or mrkdwn.
  function textObject(obj, ctx) {
    if (!obj) return "";
    if (obj.type === "mrkdwn") return mrkdwn(obj.text, ctx);
    return plain(obj);
  }

  global.SlackText = { mrkdwn, plain, textObject, escapeHtml, localTime, EMOJI };
})(window);
