// The sandbox page: a small Slack over the fake Slack's workspace.
//
// It reads the workspace with the long-poll GET /_sandbox/state?after=VERSION and acts as the
// person picked in "You are" through /_sandbox/act/* (click, submit, close, command, message,
// home). Runs start through /_demo/runs, which forwards to the bot's POST /api/runs.

(function () {
  "use strict";

  const T = window.SlackText;
  const B = window.Blocks;
  const $ = (sel) => document.querySelector(sel);
  const el = B.el;

  const S = {
    config: null,
    state: null,
    version: -1,
    me: null,
    view: { kind: "channel", id: null },
    thread: null, // {channel, ts}
    busy: new Set(), // "channel/ts/action_id" of clicks on their way
    local: [], // notices only this page shows, shaped like ephemeral messages
    dismissed: new Set(),
    seen: {}, // channel id -> top-level messages seen
    modalKey: null,
    homeAsked: null,
    submitting: false,
  };

  // ---- helpers ------------------------------------------------------------------------------

  const STOPPED = "the demo has stopped: start `signoff demo` again and reload this page";

  async function call(path, body) {
    let res;
    try {
      res = await fetch(path, {
        method: body === undefined ? "GET" : "POST",
        headers: body === undefined ? {} : { "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      // fetch() fails only when nothing answers ("Failed to fetch"): the demo is gone.
      const err = new Error(STOPPED);
      err.stopped = true;
      throw err;
    }
    let data = null;
    try {
      data = await res.json();
    } catch (e) {
      data = null;
    }
    if (!res.ok) {
      const err = new Error((data && data.error) || `${res.status} ${res.statusText}`);
      err.status = res.status;
      err.data = data;
      throw err;
    }
    return data;
  }

  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  function sentence(text) {
    // A toast reads as a sentence: a capital first, a full stop last.
    const t = String(text).trim();
    const capital = t.charAt(0).toUpperCase() + t.slice(1);
    return /[.!?…]$/.test(capital) ? capital : capital + ".";
  }

  // Plain text, its `backquoted` parts shown as code (a command to type), as in a Slack message.
  function withCode(text) {
    return T.escapeHtml(text).replace(/`([^`]+)`/g, "<code>$1</code>");
  }

  function toast(text, kind) {
    const t = el("div", `toast ${kind || ""}`, T.escapeHtml(text));
    $("#toasts").append(t);
    setTimeout(() => t.classList.add("fade"), 4000);
    setTimeout(() => t.remove(), 4600);
  }

  function users() {
    const out = {};
    for (const u of (S.state && S.state.users) || []) out[u.id] = u;
    return out;
  }

  function ctx(extra) {
    const st = S.state || {};
    const groups = {};
    for (const g of st.usergroups || []) groups[g.id] = g.handle;
    const channels = {};
    for (const c of st.channels || []) channels[c.id] = c.is_im ? "direct message" : c.name;
    return Object.assign({ users: users(), groups, channels, me: S.me }, extra || {});
  }

  function channelById(id) {
    return ((S.state && S.state.channels) || []).find((c) => c.id === id) || null;
  }

  function publicChannels() {
    return ((S.state && S.state.channels) || []).filter((c) => !c.is_im);
  }

  function myDm() {
    return ((S.state && S.state.channels) || []).find((c) => c.is_im && c.user === S.me) || null;
  }

  function isTop(m) {
    // a reply sent to the channel too (`reply_broadcast`) shows in both, as in Slack
    return !m.thread_ts || m.thread_ts === m.ts || m.subtype === "thread_broadcast";
  }

  function myEphemerals() {
    const server = ((S.state && S.state.ephemerals) || {})[S.me] || [];
    const local = S.local.filter((e) => e.user === S.me);
    return server.concat(local).filter((e) => !S.dismissed.has(e.user + "/" + e.ts));
  }

  function byTs(a, b) {
    return parseFloat(a.ts) - parseFloat(b.ts);
  }

  function clock(ts) {
    const d = new Date(parseFloat(ts) * 1000);
    return d.toLocaleTimeString([], { hour: "numeric", minute: "2-digit" });
  }

  function hue(id) {
    let h = 0;
    for (const c of String(id)) h = (h * 31 + c.charCodeAt(0)) % 360;
    return h;
  }

  function avatar(user, isBot) {
    const a = el("div", "avatar" + (isBot ? " bot" : ""));
    if (isBot) {
      a.textContent = "✓";
    } else {
      a.textContent = ((user && (user.real_name || user.name)) || "?").charAt(0).toUpperCase();
      a.style.background = `hsl(${hue(user ? user.id : "?")}, 55%, 45%)`;
    }
    return a;
  }

  function nowTs() {
    return (Date.now() / 1000).toFixed(6);
  }

  function notice(channel, text, threadTs) {
    S.local.push({ ts: nowTs(), channel, user: S.me, text, blocks: [], thread_ts: threadTs || null, source: "sandbox" });
    render();
  }

  // ---- messages -----------------------------------------------------------------------------

  const HOVER_TOP = -10; // px: the hover bar over a message's top edge (app.css .msg-hover)
  const HOVER_INSET = 4; // px: its least distance below the top of the scrolled pane

  function messageNode(m, opts) {
    const ephemeral = !!opts.ephemeral;
    const all = users();
    const author = all[m.user];
    const isBot = !!m.bot_id || (author && author.is_bot) || ephemeral;
    const node = el("div", "msg" + (ephemeral ? " ephemeral" : ""));
    node.dataset.ts = m.ts;
    node.dataset.channel = m.channel;
    node.append(avatar(author, isBot));
    const body = el("div", "msg-body");
    const meta = el("div", "msg-meta");
    const name = ephemeral ? "signoff" : author ? author.real_name || author.name : m.user;
    meta.append(el("span", "author", T.escapeHtml(name)));
    if (isBot) meta.append(el("span", "app-badge", "APP"));
    meta.append(el("span", "time", T.escapeHtml(clock(m.ts))));
    if (m.edited) meta.append(el("span", "edited", "(edited)"));
    body.append(meta);
    if (m.subtype === "thread_broadcast" && !opts.inThread) {
      const link = el("button", "link-btn", "replied to a thread");
      link.type = "button";
      link.addEventListener("click", () => openThread(m.channel, m.thread_ts));
      const row = el("div", "broadcast-of");
      row.append(link);
      body.append(row);
    }
    if (ephemeral) {
      const only = el("div", "only-you", "👁 Only visible to you ");
      const dismiss = el("button", "link-btn", "Dismiss");
      dismiss.type = "button";
      dismiss.addEventListener("click", () => {
        S.dismissed.add(m.user + "/" + m.ts);
        render();
      });
      only.append(dismiss);
      body.append(only);
    }
    const content = el("div", "msg-content");
    if (m.blocks && m.blocks.length) {
      const actionable = !ephemeral && !opts.readonly;
      content.append(
        B.render(
          m.blocks,
          ctx({
            surface: "message",
            onAction: actionable ? (element, block, btn) => onButton(m, element, btn) : null,
            busy: (element) => S.busy.has(`${m.channel}/${m.ts}/${element.action_id}`),
          })
        )
      );
    } else {
      content.append(el("div", "msg-text", T.mrkdwn(m.text, ctx())));
    }
    body.append(content);
    const replies = m.replies || [];
    if (!opts.inThread && replies.length) {
      const link = el("button", "replies-link", `${replies.length} ${replies.length === 1 ? "reply" : "replies"}`);
      link.type = "button";
      link.addEventListener("click", () => openThread(m.channel, m.ts));
      const last = el("span", "replies-last", `Last reply ${clock(replies[replies.length - 1])}`);
      const row = el("div", "replies");
      row.append(link, last);
      body.append(row);
    }
    node.append(body);
    if (!ephemeral && !opts.inThread && !m.local) {
      const hover = el("div", "msg-hover");
      const reply = el("button", "icon-btn", "💬");
      reply.type = "button";
      reply.title = "Reply in thread";
      reply.addEventListener("click", () => openThread(m.channel, m.ts));
      hover.append(reply);
      node.append(hover);
      // Slack floats the bar over the message's top edge. Where that edge is at or under the
      // channel header (the first message, a message scrolled past), the pane would clip it:
      // it drops to just inside the pane's top instead.
      node.addEventListener("mouseenter", () => {
        const pane = node.closest(".messages");
        if (!pane) return;
        const below = node.getBoundingClientRect().top - pane.getBoundingClientRect().top;
        hover.style.top = `${Math.max(HOVER_TOP, HOVER_INSET - below)}px`;
      });
    }
    return node;
  }

  function renderList(container, items, opts) {
    const nearBottom = container.scrollHeight - container.scrollTop - container.clientHeight < 80;
    const keep = container.scrollTop;
    container.replaceChildren();
    if (!items.length && opts.empty) container.append(opts.empty);
    for (const it of items) container.append(messageNode(it.m, Object.assign({}, opts, { ephemeral: it.ephemeral })));
    container.scrollTop = nearBottom || opts.forceBottom ? container.scrollHeight : keep;
  }

  function channelItems(channelId) {
    const ch = channelById(channelId);
    const top = ch ? ch.messages.filter(isTop).map((m) => ({ m, ephemeral: false })) : [];
    const eph = myEphemerals()
      .filter((e) => e.channel === channelId && !e.thread_ts)
      .map((m) => ({ m, ephemeral: true }));
    return top.concat(eph).sort((a, b) => byTs(a.m, b.m));
  }

  // ---- acting -------------------------------------------------------------------------------

  async function onButton(m, element, btn) {
    if (element.confirm) {
      const ok = await confirmDialog(element.confirm);
      if (!ok) return;
    }
    const key = `${m.channel}/${m.ts}/${element.action_id}`;
    S.busy.add(key);
    btn.disabled = true;
    btn.classList.add("busy");
    try {
      const res = await call("/_sandbox/act/click", {
        user: S.me, channel: m.channel, ts: m.ts, action_id: element.action_id,
      });
      if (res.status !== 200) notice(m.channel, `⚠️ signoff answered this click with HTTP ${res.status}.`);
    } catch (e) {
      toast(sentence(`The click did not go through: ${e.message}`), "error");
    } finally {
      S.busy.delete(key);
      render();
    }
  }

  function confirmDialog(spec) {
    return new Promise((resolve) => {
      const layer = $("#dialog-layer");
      const overlay = el("div", "overlay");
      const box = el("div", "dialog confirm");
      box.setAttribute("role", "alertdialog");
      box.append(el("h2", "dialog-title", T.plain(spec.title || { text: "Are you sure?" })));
      box.append(el("div", "dialog-text", T.textObject(spec.text, ctx())));
      const foot = el("div", "dialog-foot");
      const no = el("button", "btn btn-default", T.plain(spec.deny || { text: "Cancel" }));
      const style = spec.style === "danger" ? "danger" : "primary";
      const yes = el("button", `btn btn-${style}`, T.plain(spec.confirm || { text: "Yes" }));
      no.type = yes.type = "button";
      const done = (v) => {
        overlay.remove();
        document.removeEventListener("keydown", onKey);
        resolve(v);
      };
      const onKey = (ev) => ev.key === "Escape" && done(false);
      no.addEventListener("click", () => done(false));
      yes.addEventListener("click", () => done(true));
      document.addEventListener("keydown", onKey);
      foot.append(no, yes);
      box.append(foot);
      overlay.append(box);
      layer.append(overlay);
      yes.focus();
    });
  }

  async function sendComposer(text, channel, threadTs) {
    text = text.trim();
    if (!text) return;
    const slash = /^\/(\S+)\s*([\s\S]*)$/.exec(text);
    if (slash && !threadTs) {
      const command = "/" + slash[1];
      if (command !== "/agent") {
        notice(channel, `\`${command}\` is not a valid command. In this sandbox only \`/agent\` is installed.`);
        return;
      }
      try {
        const res = await call("/_sandbox/act/command", { user: S.me, channel, text: slash[2], command });
        if (res.status !== 200) notice(channel, `⚠️ \`/agent\` failed: signoff answered HTTP ${res.status}.`);
      } catch (e) {
        notice(channel, `⚠️ \`/agent\` failed: ${e.message}`);
      }
      return;
    }
    try {
      await call("/_sandbox/act/message", { user: S.me, channel, text, thread_ts: threadTs || null });
    } catch (e) {
      toast(sentence(`Your message was not sent: ${e.message}`), "error");
    }
  }

  function composerChannel() {
    if (S.view.kind === "channel") return S.view.id;
    const dm = myDm();
    return dm ? dm.id : S.me; // a user id opens the bot's DM with them
  }

  // ---- threads ------------------------------------------------------------------------------

  function openThread(channel, ts) {
    S.thread = { channel, ts };
    render();
    $("#thread-input").focus();
  }

  function renderThread() {
    const panel = $("#thread");
    const t = S.thread;
    const ch = t && channelById(t.channel);
    const parent = ch && ch.messages.find((m) => m.ts === t.ts);
    if (!parent) {
      panel.hidden = true;
      return;
    }
    panel.hidden = false;
    $("#thread-where").textContent = ch.is_im ? "signoff" : "#" + ch.name;
    const replies = ch.messages.filter((m) => m.thread_ts === parent.ts && m.ts !== parent.ts);
    const eph = myEphemerals().filter((e) => e.channel === ch.id && e.thread_ts === parent.ts);
    const rest = replies
      .map((m) => ({ m, ephemeral: false }))
      .concat(eph.map((m) => ({ m, ephemeral: true })))
      .sort((a, b) => byTs(a.m, b.m));
    const items = [{ m: parent, ephemeral: false }].concat(rest);
    const list = $("#thread-messages");
    renderList(list, items, { inThread: true });
    const first = list.firstChild;
    if (first && replies.length) {
      const sep = el("div", "thread-count", `${replies.length} ${replies.length === 1 ? "reply" : "replies"}`);
      first.after(sep);
    }
  }

  // ---- modals (Slack views) -----------------------------------------------------------------

  function topView() {
    const stack = ((S.state && S.state.views) || {})[S.me] || [];
    return stack.length ? stack[stack.length - 1] : null;
  }

  function renderModal() {
    const layer = $("#modal-layer");
    const view = topView();
    forgetDrafts();
    if (!view) {
      layer.replaceChildren();
      S.modalKey = null;
      return;
    }
    const key = `${S.me}/${view.id}/${view.hash}`;
    if (key === S.modalKey) {
      showErrors(layer, view.errors || {});
      return;
    }
    S.modalKey = key;
    const overlay = el("div", "overlay");
    const box = el("form", "modal");
    box.setAttribute("role", "dialog");
    box.setAttribute("aria-modal", "true");
    box.dataset.viewId = view.id;
    box.noValidate = true;
    const head = el("header", "modal-head");
    head.append(el("h2", "modal-title", T.plain(view.title)));
    const x = el("button", "icon-btn", "✕");
    x.type = "button";
    x.setAttribute("aria-label", "Close");
    x.addEventListener("click", () => closeModal(view));
    head.append(x);
    box.append(head);
    const body = el("div", "modal-body");
    body.append(B.render(view.blocks || [], ctx({ surface: "modal", errors: view.errors || {} })));
    box.append(body);
    const foot = el("footer", "modal-foot");
    const close = el("button", "btn btn-default", T.plain(view.close || { text: "Cancel" }));
    close.type = "button";
    close.addEventListener("click", () => closeModal(view));
    foot.append(close);
    if (view.submit) {
      const submit = el("button", "btn btn-primary", T.plain(view.submit));
      submit.type = "submit";
      foot.append(submit);
    }
    box.append(foot);
    box.addEventListener("submit", (ev) => {
      ev.preventDefault();
      if (view.submit) submitModal(view, box);
    });
    overlay.append(box);
    layer.replaceChildren(overlay);
    restoreDraft(view, box);
    box.addEventListener("input", () => saveDraft(view, box));
    const first = box.querySelector(".input-control");
    if (first) first.focus();
  }

  // What was typed into a modal, kept for the page's tab (sessionStorage) by view id: a reload
  // shows the open modal again with it, where Slack would have closed the modal and lost it.
  const DRAFT = "signoff-sandbox-draft:";

  function saveDraft(view, form) {
    try {
      sessionStorage.setItem(DRAFT + view.id, JSON.stringify(B.inputValues(form)));
    } catch (e) {
      // storage full or refused: a reload then shows the modal as it was opened
    }
  }

  function restoreDraft(view, form) {
    let typed = null;
    try {
      typed = JSON.parse(sessionStorage.getItem(DRAFT + view.id) || "null");
    } catch (e) {
      typed = null;
    }
    if (!typed || typeof typed !== "object") return;
    for (const node of form.querySelectorAll(".input-control")) {
      const value = typed[node.dataset.blockId];
      if (typeof value === "string") node.value = value;
    }
  }

  function forgetDrafts() {
    // Drafts of views that are no longer open anywhere in the workspace (submitted, closed).
    const open = new Set();
    for (const stack of Object.values((S.state && S.state.views) || {})) {
      for (const v of stack) open.add(DRAFT + v.id);
    }
    for (const key of Object.keys(sessionStorage)) {
      if (key.startsWith(DRAFT) && !open.has(key)) sessionStorage.removeItem(key);
    }
  }

  function showErrors(root, errors) {
    for (const wrap of root.querySelectorAll(".input-block")) {
      const msg = errors[wrap.dataset.blockId];
      const err = wrap.querySelector(".input-error");
      wrap.classList.toggle("has-error", !!msg);
      err.hidden = !msg;
      err.textContent = msg ? "⚠ " + msg : "";
    }
  }

  async function submitModal(view, form) {
    if (S.submitting) return;
    S.submitting = true;
    const button = form.querySelector(".modal-foot .btn-primary");
    if (button) button.classList.add("busy");
    try {
      const res = await call("/_sandbox/act/submit", { user: S.me, inputs: B.inputValues(form), view_id: view.id });
      if (res.errors && Object.keys(res.errors).length) showErrors(form, res.errors);
      else if (res.response && res.response.status !== 200) toast(`The form was not accepted: signoff answered with HTTP ${res.response.status}.`, "error");
    } catch (e) {
      toast(sentence(`The form was not submitted: ${e.message}`), "error");
    } finally {
      S.submitting = false;
      if (button) button.classList.remove("busy");
    }
  }

  async function closeModal(view) {
    try {
      await call("/_sandbox/act/close", { user: S.me, view_id: view.id });
    } catch (e) {
      toast(sentence(`The modal did not close: ${e.message}`), "error");
    }
  }

  function onEscape(ev) {
    // Escape closes what is on top, wherever the focus is: a confirmation answers itself
    // (confirmDialog), then the start form, then the person's Slack modal.
    if (ev.key !== "Escape" || document.querySelector(".dialog.confirm")) return;
    const startForm = document.querySelector("#dialog-layer .overlay");
    const view = topView();
    if (startForm) startForm.remove();
    else if (view) closeModal(view);
    else return;
    ev.preventDefault();
  }

  // ---- start a workflow ---------------------------------------------------------------------

  function freshId(key) {
    const n = Math.floor(1000 + Math.random() * 9000);
    return { order_id: `o-${n}`, invoice_id: `INV-${n}`, row_id: String(n) }[key];
  }

  function openStartDialog() {
    const layer = $("#dialog-layer");
    const overlay = el("div", "overlay");
    const form = el("form", "dialog start");
    form.id = "start-form";
    form.setAttribute("role", "dialog");
    form.setAttribute("aria-label", "Start a workflow");
    form.noValidate = true;
    const me = users()[S.me];
    form.append(el("h2", "dialog-title", "Start a workflow"));
    form.append(
      el("div", "dialog-text", `As <b>${T.escapeHtml(me ? me.real_name || me.name : S.me)}</b>, through the bot's <code>POST /api/runs</code>. The run pauses where it needs a person; its card appears in the channel.`)
    );
    const wfLabel = el("label", "input-label", "Workflow");
    const wf = el("select", "input-control");
    wf.name = "workflow";
    wf.id = "start-workflow";
    wfLabel.htmlFor = wf.id;
    for (const w of S.config.workflows) wf.append(new Option(w.name, w.name));
    const about = el("div", "input-hint");
    const fields = el("div", "start-fields");
    const chLabel = el("label", "input-label", "Post the card in");
    const ch = el("select", "input-control");
    ch.name = "channel";
    ch.id = "start-channel";
    chLabel.htmlFor = ch.id;
    for (const c of publicChannels()) ch.append(new Option("#" + c.name, c.id));
    ch.value = S.view.kind === "channel" ? S.view.id : S.config.channel;
    const error = el("div", "dialog-error");
    error.hidden = true;

    const fill = () => {
      const w = S.config.workflows.find((x) => x.name === wf.value);
      about.innerHTML = `${T.escapeHtml(w.description)}<br>Who may start it: ${T.escapeHtml(w.starters.join(", ") || "nobody")}`;
      fields.replaceChildren();
      for (const input of w.inputs) {
        const wrap = el("div", "block input-block");
        const label = el("label", "input-label", T.escapeHtml(input.name));
        const box = el("input", "input-control");
        box.name = input.name;
        box.id = `start-${input.name}`;
        box.dataset.type = input.type;
        label.htmlFor = box.id;
        box.value = freshId(input.name) || String(input.example);
        if (input.type === "number") box.inputMode = "decimal";
        wrap.append(label, box);
        fields.append(wrap);
      }
      error.hidden = true;
    };
    wf.addEventListener("change", fill);
    form.append(wfLabel, wf, about, fields, chLabel, ch, error);
    const foot = el("div", "dialog-foot");
    const cancel = el("button", "btn btn-default", "Cancel");
    cancel.type = "button";
    const go = el("button", "btn btn-primary", "Start");
    go.type = "submit";
    foot.append(cancel, go);
    form.append(foot);
    const close = () => overlay.remove();
    cancel.addEventListener("click", close);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const input = {};
      for (const box of fields.querySelectorAll("input")) {
        const v = box.value.trim();
        input[box.name] = box.dataset.type === "number" && v !== "" && !isNaN(Number(v)) ? Number(v) : v;
      }
      go.disabled = true;
      go.classList.add("busy");
      try {
        const res = await call("/_demo/runs", { user: S.me, workflow: wf.value, input, channel: ch.value });
        close();
        toast(`You started ${wf.value}: run ${res.thread_id} is ${res.status}.`);
        S.view = { kind: "channel", id: ch.value };
        render();
      } catch (e) {
        error.hidden = false;
        error.innerHTML = "⚠ " + withCode(e.message);
        go.disabled = false;
        go.classList.remove("busy");
      }
    });
    fill();
    overlay.append(form);
    layer.replaceChildren(overlay);
    wf.focus();
  }

  // ---- the frame ----------------------------------------------------------------------------

  function renderSidebar() {
    const list = $("#channel-list");
    list.replaceChildren();
    for (const c of publicChannels()) {
      const count = c.messages.filter(isTop).length;
      const current = S.view.kind === "channel" && S.view.id === c.id;
      if (current || S.seen[c.id] === undefined) S.seen[c.id] = count;
      const unread = count - S.seen[c.id];
      const item = el("button", "nav-item" + (current ? " current" : "") + (unread > 0 ? " unread" : ""));
      item.type = "button";
      item.dataset.channel = c.id;
      item.innerHTML = `<span class="hash">#</span> ${T.escapeHtml(c.name)}` + (unread > 0 ? ` <span class="badge">${unread}</span>` : "");
      item.addEventListener("click", () => {
        S.view = { kind: "channel", id: c.id };
        render(true);
        $("#composer-input").focus();
      });
      list.append(item);
    }
    const apps = $("#app-list");
    apps.replaceChildren();
    const current = S.view.kind === "app";
    const item = el("button", "nav-item" + (current ? " current" : ""), `<span class="app-dot">✓</span> signoff`);
    item.type = "button";
    item.dataset.app = "signoff";
    item.addEventListener("click", () => {
      S.view = { kind: "app", tab: "home" };
      S.homeAsked = null;
      render(true);
    });
    apps.append(item);
    const person = (S.config.people || []).find((p) => p.id === S.me);
    $("#who-role").textContent = person ? person.role : "";
    const me = users()[S.me] || {};
    const now = Date.now() / 1000;
    $("#dnd-toggle").classList.toggle("on", !!me.dnd_end && me.dnd_end > now);
    $("#vacation-toggle").classList.toggle("on", me.status_emoji === ":palm_tree:");
  }

  async function onHomeButton(element, block, btn) {
    // A button on Home (a grant's Revoke): Slack sends it with the view, no channel.
    btn.disabled = true;
    try {
      const res = await call("/_sandbox/act/home_click", {
        user: S.me, action_id: element.action_id, value: element.value,
      });
      if (res.status !== 200) toast(sentence(`signoff answered this click with HTTP ${res.status}`), "error");
    } catch (e) {
      toast(sentence(`The click did not go through: ${e.message}`), "error");
    } finally {
      btn.disabled = false;
    }
  }

  function renderHome() {
    const box = $("#messages");
    if (S.homeAsked !== S.me) {
      S.homeAsked = S.me;
      call("/_sandbox/act/home", { user: S.me }).catch((e) => toast(sentence(`Home did not open: ${e.message}`), "error"));
    }
    const view = ((S.state && S.state.home) || {})[S.me];
    const home = el("div", "home");
    if (view) home.append(B.render(view.blocks || [], ctx({ surface: "home", onAction: onHomeButton })));
    else home.append(el("div", "empty", "Opening Home…"));
    box.replaceChildren(home);
  }

  function render(jump) {
    if (!S.state || !S.config) return;
    renderSidebar();
    const tabs = $("#app-tabs");
    const input = $("#composer-input");
    const composer = $("#composer");
    if (S.view.kind === "channel") {
      const ch = channelById(S.view.id) || publicChannels()[0];
      S.view.id = ch.id;
      tabs.hidden = true;
      composer.hidden = false;
      $("#main-title").innerHTML = `<span class="hash">#</span> ${T.escapeHtml(ch.name)}`;
      $("#main-sub").textContent = ch.id === S.config.channel ? "signoff's approval cards land here" : "";
      input.placeholder = `Message #${ch.name}`;
      const empty = el("div", "empty", "Nothing here yet. <b>+ Start a workflow</b> on the left, or type <code>/agent help</code> below.");
      renderList($("#messages"), channelItems(ch.id), { empty, forceBottom: jump });
    } else {
      tabs.hidden = false;
      $("#main-title").innerHTML = `<span class="app-dot">✓</span> signoff`;
      $("#main-sub").textContent = "the approval bot";
      for (const b of tabs.querySelectorAll(".tab")) b.classList.toggle("current", b.dataset.tab === S.view.tab);
      if (S.view.tab === "home") {
        composer.hidden = true;
        renderHome();
      } else {
        composer.hidden = false;
        input.placeholder = "Message signoff";
        const dm = myDm();
        const empty = el("div", "empty", "Type <code>/agent status</code> to see what waits on you.");
        renderList($("#messages"), dm ? channelItems(dm.id) : [], { empty, forceBottom: jump });
      }
    }
    renderThread();
    renderModal();
  }

  // ---- composer suggestions -----------------------------------------------------------------

  const SUGGESTIONS = [
    ["/agent status", "what waits on you, and on others"],
    ["/agent status THREAD_ID", "one run: where it waits, its history"],
    ['/agent run refund customer_id=cust_9 order_id=o-77 amount=42.50 reason="damaged item"', "start a run"],
    ["/agent help", "what /agent can do"],
  ];

  function updateSuggestions() {
    const input = $("#composer-input");
    const box = $("#suggest");
    const v = input.value;
    if (!v.startsWith("/") || v.includes("\n") || v.length > 12) {
      box.hidden = true;
      return;
    }
    const hits = SUGGESTIONS.filter(([cmd]) => cmd.startsWith(v));
    box.replaceChildren();
    for (const [cmd, what] of hits) {
      const item = el("button", "suggest-item", `<code>${T.escapeHtml(cmd)}</code> <span>${T.escapeHtml(what)}</span>`);
      item.type = "button";
      item.addEventListener("click", () => {
        input.value = cmd.replace(/THREAD_ID$/, "");
        box.hidden = true;
        input.focus();
      });
      box.append(item);
    }
    box.hidden = !hits.length;
  }

  function wireComposer(form, input, target) {
    const send = async () => {
      const text = input.value;
      input.value = "";
      $("#suggest").hidden = true;
      const [channel, threadTs] = target();
      await sendComposer(text, channel, threadTs);
    };
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        send();
      }
    });
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      send();
    });
  }

  // ---- start --------------------------------------------------------------------------------

  function setConnected(ok, stopped) {
    const c = $("#conn");
    c.textContent = ok ? "● live" : stopped ? "● the demo has stopped" : "● reconnecting…";
    c.classList.toggle("down", !ok);
  }

  async function poll() {
    for (;;) {
      try {
        const st = await call(`/_sandbox/state?after=${S.version}&timeout=20`);
        setConnected(true);
        if (st.version !== S.version) {
          S.state = st;
          S.version = st.version;
          render();
        }
      } catch (e) {
        setConnected(false, e.stopped);
        await sleep(1000);
      }
    }
  }

  async function start() {
    S.config = await call("/_demo/config");
    const who = $("#who");
    for (const p of S.config.people) who.append(new Option(`${p.real_name} (${p.name})`, p.id));
    const asked = new URLSearchParams(location.search).get("as");
    const saved = localStorage.getItem("signoff-sandbox-me");
    const ids = S.config.people.map((p) => p.id);
    S.me = [asked, saved, "U_CAROL", ids[0]].find((x) => x && ids.includes(x));
    who.value = S.me;
    who.addEventListener("change", () => {
      S.me = who.value;
      localStorage.setItem("signoff-sandbox-me", S.me);
      S.modalKey = null;
      S.homeAsked = null;
      render();
    });
    $("#policy-name").textContent = S.config.policy;
    S.view = { kind: "channel", id: S.config.channel };
    $("#start-open").addEventListener("click", openStartDialog);
    // Slack's do-not-disturb (an hour) and a vacation status, as the person sets them in Slack:
    // the stand-in tells the bot (dnd_updated_user, user_change, user_status_changed).
    $("#dnd-toggle").addEventListener("click", () => {
      const me = users()[S.me] || {};
      const on = !!me.dnd_end && me.dnd_end > Date.now() / 1000;
      call("/_sandbox/act/dnd", { user: S.me, until: on ? null : Math.floor(Date.now() / 1000) + 3600 })
        .catch((e) => toast(sentence(`Do not disturb was not changed: ${e.message}`), "error"));
    });
    $("#vacation-toggle").addEventListener("click", () => {
      const on = (users()[S.me] || {}).status_emoji === ":palm_tree:";
      const body = on ? { user: S.me } : { user: S.me, emoji: ":palm_tree:", text: "On vacation" };
      call("/_sandbox/act/status", body)
        .catch((e) => toast(sentence(`The status was not changed: ${e.message}`), "error"));
    });
    document.addEventListener("keydown", onEscape);
    $("#thread-close").addEventListener("click", () => {
      S.thread = null;
      render();
    });
    for (const b of document.querySelectorAll("#app-tabs .tab")) {
      b.addEventListener("click", () => {
        S.view = { kind: "app", tab: b.dataset.tab };
        S.homeAsked = null;
        render(true);
      });
    }
    const input = $("#composer-input");
    input.addEventListener("input", updateSuggestions);
    wireComposer($("#composer"), input, () => [composerChannel(), null]);
    wireComposer($("#thread-composer"), $("#thread-input"), () => [S.thread.channel, S.thread.ts]);
    S.state = await call("/_sandbox/state");
    S.version = S.state.version;
    render(true);
    document.body.dataset.ready = "true";
    poll();
  }

  start().catch((e) => {
    document.body.innerHTML = `<p class="fatal">The sandbox did not load: ${T.escapeHtml(e.message)}</p>`;
  });
})();
