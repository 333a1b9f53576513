// The session page's tabs (Conversation | Terminal) and its conversation view: the turns of
// the agent's transcript from /api/v1/…/conversation (JSON), rendered as text only, refreshed
// while the tab is shown and the session is live, and whenever the page's live region is.
"use strict";
(() => {
  // --- tabs --------------------------------------------------------------------------------
  const tabs = [...document.querySelectorAll('[role="tab"][data-tab]')];

  function select(name, focus) {
    for (const tab of tabs) {
      const on = tab.dataset.tab === name;
      tab.setAttribute("aria-selected", on ? "true" : "false");
      tab.tabIndex = on ? 0 : -1;
      const panel = document.getElementById(tab.getAttribute("aria-controls"));
      if (panel) panel.hidden = !on;
      if (on && focus) tab.focus();
    }
    document.body.dataset.tab = name;
    document.dispatchEvent(new CustomEvent("the-loop:tab", { detail: name }));
  }

  for (const tab of tabs) {
    tab.addEventListener("click", (ev) => {
      ev.preventDefault();  // a link to the tab (see below): no jump, no history entry
      select(tab.dataset.tab, false);
      history.replaceState(null, "", tab.dataset.tab === "terminal" ? "#terminal" : "#conversation");
    });
    tab.addEventListener("keydown", (ev) => {
      if (ev.key === " ") {  // a tab is a link: Enter follows it, Space selects it too
        ev.preventDefault();
        tab.click();
        return;
      }
      if (ev.key !== "ArrowRight" && ev.key !== "ArrowLeft") return;
      const at = tabs.indexOf(tab) + (ev.key === "ArrowRight" ? 1 : -1);
      tabs[(at + tabs.length) % tabs.length].click();
      tabs[(at + tabs.length) % tabs.length].focus();
    });
  }
  // The tabs are links to #conversation and #terminal, so a tab tapped before this script ran
  // (it waits for xterm.js) is in the address: honour it now.
  if (tabs.length) select(window.location.hash === "#terminal" ? "terminal" : "conversation", false);

  // --- the conversation ----------------------------------------------------------------------
  const list = document.getElementById("conversation");
  if (!list) return;
  const state = document.querySelector("[data-conv-state]");
  const POLL_MS = 2000;
  let version = null;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // A tool's input or result scrolls past 16 rows: focusable, so keys scroll it too.
  function scrolled(cls, text) {
    const node = el("pre", cls, text);
    node.tabIndex = 0;
    return node;
  }

  function toolStep(tool) {
    const box = el("details", `tool${tool.isError ? " tool-error" : ""}${tool.result === null ? " tool-pending" : ""}`);
    const head = el("summary");
    head.append(el("span", "tool-name", tool.name));
    // its input on one line (a JSON input's first line alone is a lone "{")
    const flat = (tool.input || "").replace(/\s+/g, " ").trim();
    if (flat) head.append(" ", el("code", "tool-brief", flat.length > 120 ? flat.slice(0, 120) + " …" : flat));
    head.append(" ", el("span", "tool-status", tool.result === null ? "waiting" : tool.isError ? "error" : "done"));
    box.append(head);
    if (tool.input) { box.append(el("h4", "", "Input")); box.append(scrolled("tool-input", tool.input)); }
    box.append(el("h4", "", "Result"));
    box.append(scrolled("tool-result", tool.result === null ? "(no result yet)" : tool.result || "(empty)"));
    if (tool.result === null) box.open = true;
    return box;
  }

  function render(data) {
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    list.replaceChildren();
    if (data.truncated) list.append(el("li", "turn-note", "Older turns are left out."));
    for (const turn of data.turns) {
      const item = el("li", "turn");
      if (turn.prompt !== null) {
        const prompt = el("div", "prompt");
        prompt.append(el("span", "who", "Prompt"), el("div", "body", turn.prompt));
        item.append(prompt);
      }
      for (const step of turn.steps) {
        if (step.kind === "tool" && step.tool) item.append(toolStep(step.tool));
        else {
          const msg = el("div", "msg");
          msg.append(el("span", "who", "Agent"), el("div", "body", step.text));
          item.append(msg);
        }
      }
      list.append(item);
    }
    if (!data.turns.length) list.append(el("li", "turn-note empty", data.note || "No conversation yet."));
    list.dataset.turns = String(data.turns.length);
    if (atBottom || version === null) list.scrollTop = list.scrollHeight;
  }

  async function load() {
    try {
      const resp = await fetch(list.dataset.source, { credentials: "same-origin" });
      if (!resp.ok) throw new Error(`HTTP ${resp.status}`);
      const data = await resp.json();
      if (data.version !== version || version === null) { render(data); version = data.version; }
      if (state) state.textContent = "";
    } catch (err) {
      if (state) state.textContent = `The conversation could not be read: ${err.message}`;
    }
  }

  let timer = null;
  function schedule() {
    clearTimeout(timer);
    const shown = !document.getElementById("panel-conversation")?.hidden;
    if (list.dataset.live === "true" && shown && !document.hidden) timer = setTimeout(tick, POLL_MS);
  }
  async function tick() { await load(); schedule(); }

  document.addEventListener("the-loop:refreshed", () => { load(); });
  document.addEventListener("the-loop:tab", (ev) => { if (ev.detail === "conversation") tick(); });
  document.addEventListener("visibilitychange", schedule);
  tick();
})();
