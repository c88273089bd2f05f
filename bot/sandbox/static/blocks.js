// Block Kit as DOM, for the sandbox page: the blocks of messages, modals and the Home tab.
//
// Blocks.render(blocks, ctx) returns a DocumentFragment. ctx adds to SlackText's context:
//   surface:   "message" | "modal" | "home"
//   onAction:  function (element, block, buttonNode) called when a button is pressed
//   busy:      function (element) -> true while that button's click is on its way
//   errors:    {block_id: message} shown under modal inputs
// Unknown block and element types are shown as a small note, never dropped silently.

(function (global) {
  "use strict";

  const T = global.SlackText;

  function el(tag, cls, html) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (html != null) node.innerHTML = html;
    return node;
  }

  function unsupported(what) {
    return el("div", "unsupported", T.escapeHtml(`[${what} is not shown in the sandbox]`));
  }

  function button(element, block, ctx) {
    const style = element.style === "primary" || element.style === "danger" ? element.style : "default";
    if (element.url) {
      const a = el("a", `btn btn-${style}`, T.plain(element.text));
      a.href = /^https?:/i.test(element.url) ? element.url : "#";
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      return a;
    }
    const b = el("button", `btn btn-${style}`, T.plain(element.text));
    b.type = "button";
    b.dataset.actionId = element.action_id || "";
    if (ctx.busy && ctx.busy(element)) {
      b.disabled = true;
      b.classList.add("busy");
    }
    if (ctx.onAction) {
      b.addEventListener("click", () => ctx.onAction(element, block, b));
    } else {
      b.disabled = true;
      b.title = "Buttons work on channel messages in the sandbox";
    }
    return b;
  }

  function element(element, block, ctx) {
    switch (element.type) {
      case "button":
        return button(element, block, ctx);
      case "image":
        return el("span", "image-alt", T.escapeHtml(element.alt_text || "image"));
      case "mrkdwn":
      case "plain_text":
        return el("span", "ctx-text", T.textObject(element, ctx));
      default:
        return unsupported(element.type || "an element");
    }
  }

  function inputElement(block, ctx) {
    const spec = block.element || {};
    const blockId = block.block_id || "";
    let node;
    if (spec.type === "plain_text_input" || spec.type === "number_input" || spec.type === "email_text_input" || spec.type === "url_text_input") {
      node = document.createElement(spec.multiline ? "textarea" : "input");
      if (!spec.multiline) node.type = spec.type === "number_input" ? "text" : "text";
      if (spec.multiline) node.rows = 3;
      node.value = spec.initial_value || "";
      if (spec.placeholder) node.placeholder = spec.placeholder.text || "";
      if (spec.max_length) node.maxLength = spec.max_length;
    } else if (spec.type === "static_select" || spec.type === "radio_buttons") {
      node = document.createElement("select");
      node.append(new Option(spec.placeholder ? spec.placeholder.text : "Choose…", ""));
      for (const o of spec.options || []) {
        const opt = new Option(o.text ? o.text.text : o.value, o.value);
        if (spec.initial_option && spec.initial_option.value === o.value) opt.selected = true;
        node.append(opt);
      }
    } else {
      return unsupported(spec.type || "an input");
    }
    node.className = "input-control";
    node.dataset.blockId = blockId;
    node.name = blockId;
    return node;
  }

  function inputBlock(block, ctx) {
    const wrap = el("div", "block input-block");
    wrap.dataset.blockId = block.block_id || "";
    const id = `in-${(block.block_id || "").replace(/[^\w-]/g, "_")}`;
    const label = el("label", "input-label", T.plain(block.label));
    label.htmlFor = id;
    if (block.optional) label.append(el("span", "optional", " (optional)"));
    wrap.append(label);
    const control = inputElement(block, ctx);
    control.id = id;
    wrap.append(control);
    if (block.hint) wrap.append(el("div", "input-hint", T.plain(block.hint)));
    const error = (ctx.errors || {})[block.block_id];
    const err = el("div", "input-error", error ? "⚠ " + T.escapeHtml(error) : "");
    err.hidden = !error;
    wrap.append(err);
    if (error) wrap.classList.add("has-error");
    return wrap;
  }

  function block(b, ctx) {
    switch (b.type) {
      case "header":
        return el("div", "block header", T.plain(b.text));
      case "section": {
        const node = el("div", "block section");
        const main = el("div", "section-main");
        if (b.text) main.append(el("div", "section-text", T.textObject(b.text, ctx)));
        if (b.fields && b.fields.length) {
          const grid = el("div", "fields");
          for (const f of b.fields) grid.append(el("div", "field", T.textObject(f, ctx)));
          main.append(grid);
        }
        node.append(main);
        if (b.accessory) {
          const acc = el("div", "accessory");
          acc.append(element(b.accessory, b, ctx));
          node.append(acc);
        }
        return node;
      }
      case "context": {
        const node = el("div", "block context");
        for (const e of b.elements || []) node.append(element(e, b, ctx));
        return node;
      }
      case "divider":
        return el("hr", "block divider");
      case "actions": {
        const node = el("div", "block actions");
        for (const e of b.elements || []) node.append(element(e, b, ctx));
        return node;
      }
      case "input":
        return inputBlock(b, ctx);
      case "image":
        return el("div", "block image-alt", T.escapeHtml(b.alt_text || "image"));
      case "rich_text": {
        const words = [];
        const walk = (x) => {
          if (!x) return;
          if (typeof x.text === "string") words.push(x.text);
          for (const c of x.elements || []) walk(c);
        };
        walk(b);
        return el("div", "block section", T.escapeHtml(words.join("")).replace(/\n/g, "<br>"));
      }
      default:
        return unsupported(`a ${b.type || "?"} block`);
    }
  }

  function render(blocks, ctx) {
    const frag = document.createDocumentFragment();
    for (const b of blocks || []) frag.append(block(b, ctx || {}));
    return frag;
  }

  // {block_id: value} of a rendered modal's inputs, as the sandbox's act/submit takes them.
  function inputValues(root) {
    const values = {};
    for (const node of root.querySelectorAll(".input-control")) values[node.dataset.blockId] = node.value;
    return values;
  }

  global.Blocks = { render, inputValues, el };
})(window);
