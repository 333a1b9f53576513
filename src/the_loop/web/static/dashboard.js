// the-loop dashboard: API calls with the CSRF token, and live regions fed by the event stream.
"use strict";
(() => {
  const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.content ?? "";

  async function call(method, url, body) {
    const headers = { "X-CSRF-Token": meta("csrf-token") };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const resp = await fetch(url, {
      method, headers, credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let data = null;
    try { data = await resp.json(); } catch (_) { /* not JSON */ }
    if (!resp.ok) throw new Error(data?.error?.message ?? `HTTP ${resp.status}`);
    // A verb that ran but did not do it (a failed start) answers 200 with an error: a refusal.
    const failed = data?.error ?? data?.start?.error;
    if (typeof failed === "string" && failed) throw new Error(failed);
    return data;
  }

  function summary(data) {
    if (!data || typeof data !== "object") return "done";
    if (data.detail) return data.detail;
    if (data.outcome) return `${data.name ?? ""} ${data.outcome}`.trim();
    if (data.answer !== undefined && data.promptId) return `answered ${data.answer}`;
    if (data.decision) return `${data.decision === "allow" ? "allowed" : "denied"} ${data.tool || ""}`.trim();
    if (data.definition) return `created ${data.definition.name}${data.start ? ": " + data.start.outcome : ""}`;
    if (data.stop) return `deleted ${data.name}`;
    if (data.status) return `${data.status}`;
    return "done";
  }

  function resultFor(el) {
    const scope = el.closest(".answer, .card, section, form") ?? document;
    return scope.querySelector("[data-result]")
      ?? scope.parentElement?.querySelector("[data-result]")
      ?? document.querySelector("[data-result]");
  }

  // The id of the nearest element around a control's result line. After a live re-render
  // the element of that id (the region, kept, or its card, rendered again) holds the line.
  const regionOf = (el) => resultFor(el)?.closest("[id]")?.id;

  function show(el, text, ok, key) {
    let out = resultFor(el);
    if (!out) return;
    // A live re-render during the request replaced the control's card: show the result in
    // the card that replaced it, found by the id taken before the request (from the detached
    // line, the walk up ends at the detached card, which has none).
    if (!out.isConnected && key) out = document.getElementById(key)?.querySelector("[data-result]") ?? out;
    out.textContent = text;
    out.className = `result ${ok ? "ok" : "error"}`;
    // on a phone the answer can sit below the fold under the button that asked (Start)
    out.scrollIntoView({ block: "nearest" });
    remember(out);
    // On Attention an answered card leaves the list at the next re-render: say who was
    // answered, and how, in the page's own region too.
    const page = document.querySelector("[data-answered]");
    const card = el.closest("[data-agent]");
    if (page && card) {
      const who = card.querySelector("h2 a")?.textContent?.trim() ?? card.dataset.agent;
      page.textContent = `${who}: ${text}`;
      page.className = `result ${ok ? "ok" : "error"}`;
    }
  }

  async function run(el, method, url, body) {
    if (el.dataset.confirm && !window.confirm(el.dataset.confirm)) return;
    el.disabled = true;
    const key = regionOf(el);
    try {
      const data = await call(method, url, body);
      show(el, summary(data), true, key);
      // a control that changes what the page is made of (a terminal that comes or goes)
      if (el.dataset.reload !== undefined) window.location.reload();
      else refresh();
      return data;
    } catch (err) {
      show(el, err.message, false, key);
      return undefined;
    } finally {
      el.disabled = false;
    }
  }

  document.addEventListener("click", (ev) => {
    const el = ev.target.closest("button[data-post], button[data-delete]");
    if (!el) return;
    ev.preventDefault();
    const body = el.dataset.body ? JSON.parse(el.dataset.body) : undefined;
    if (el.dataset.post) run(el, "POST", el.dataset.post, body);
    else run(el, "DELETE", el.dataset.delete);
  });

  function formBody(form) {
    const body = {};
    for (const field of form.elements) {
      if (!field.name || field.disabled) continue;
      if (field.type === "checkbox") body[field.name] = field.checked;
      else if (field.value.trim() !== "" || field.name === "text") body[field.name] = field.value;
    }
    if ("text" in body) body.actor = "dashboard";
    return body;
  }

  document.addEventListener("submit", async (ev) => {
    const form = ev.target;
    if (form.matches("[data-logout]")) {
      ev.preventDefault();
      await fetch("/logout", { method: "POST", credentials: "same-origin",
        headers: { "X-CSRF-Token": meta("csrf-token") } });
      window.location.assign("/login");
      return;
    }
    if (!form.matches("form[data-api]")) return;
    ev.preventDefault();
    const button = form.querySelector("button[type=submit]") ?? form;
    const data = await run(button, form.dataset.method ?? "POST", form.dataset.api, formBody(form));
    if (data !== undefined) {
      for (const f of form.querySelectorAll("input[type=text], input:not([type]), textarea")) f.value = "";
    }
  });

  // --- live regions ------------------------------------------------------------------------
  // "#live" names the event stream; it and every other [data-live-region] (an agent's page
  // keeps what waits on a person at its top) are re-rendered from one fetch of the page.
  const live = document.getElementById("live");
  const regions = live ? [live, ...document.querySelectorAll("[data-live-region]")] : [];
  const inRegion = (el) => regions.some((r) => r.contains(el));
  // Results shown in a live region survive its re-render, each with the prompt it answered
  // (the data-prompt around the controls, "" for none): a new prompt shown in its place is
  // not answered yet, and the old outcome would read as its answer.
  const results = new Map();
  const promptOf = (el) => el?.querySelector("[data-prompt]")?.dataset.prompt ?? "";

  function remember(out) {
    const key = out.closest("[id]")?.id;
    const prompt = out.closest("[data-prompt]")?.dataset.prompt ?? "";
    if (key && inRegion(out)) results.set(key, [out.textContent, out.className, prompt, false]);
  }

  let timer = null;
  let busy = false;
  function refresh() {
    if (!live) return;
    clearTimeout(timer);
    timer = setTimeout(swap, 150);
  }

  async function swap() {
    if (busy) { timer = setTimeout(swap, 300); return; }
    busy = true;
    try {
      const resp = await fetch(window.location.href, { credentials: "same-origin", headers: { "X-Live": "1" } });
      if (resp.redirected || !resp.ok) return;
      const doc = new DOMParser().parseFromString(await resp.text(), "text/html");
      if (!doc.getElementById("live")) return;
      // What someone is typing, and where, survives the re-render.
      const active = document.activeElement;
      const focusId = active && inRegion(active) ? active.id : "";
      const typed = new Map();
      for (const region of regions) {
        for (const f of region.querySelectorAll("input[id], textarea[id], select[id]")) {
          if (f.type !== "hidden" && f.value) typed.set(f.id, f.value);
        }
      }
      for (const region of regions) region.innerHTML = doc.getElementById(region.id)?.innerHTML ?? "";
      // The navigation's count of sessions waiting on a person comes with the same page.
      const count = doc.querySelector("[data-attention-count]");
      const shown = document.querySelector("[data-attention-count]");
      if (count && shown) shown.replaceWith(document.importNode(count, true));
      for (const [id, value] of typed) {
        const f = document.getElementById(id);
        if (f && !f.disabled) f.value = value;
      }
      for (const [key, [text, cls, prompt, held]] of results) {
        const holder = document.getElementById(key);
        const now = promptOf(holder);
        if (now && now !== prompt) { results.delete(key); continue; }
        // A message held behind a dialog: the page says so while it waits ([data-waiting]);
        // once that is gone the message was delivered, and "held" would be stale.
        const waits = holder?.querySelector("[data-waiting]") != null;
        if (held && !waits) { results.delete(key); continue; }
        if (waits) results.set(key, [text, cls, prompt, true]);
        const out = holder?.querySelector("[data-result]");
        if (out) { out.textContent = text; out.className = cls; }
      }
      if (focusId) document.getElementById(focusId)?.focus();
      document.dispatchEvent(new CustomEvent("the-loop:refreshed"));
    } finally {
      busy = false;
    }
  }

  // The event stream, read with fetch: EventSource would need a listener per event type.
  const state = document.querySelector("[data-live-state]");
  async function follow() {
    let last = "";
    for (;;) {
      try {
        const headers = last ? { "Last-Event-ID": last } : {};
        const resp = await fetch(`/api/v1/events/stream?${live.dataset.stream ?? ""}`,
          { credentials: "same-origin", headers });
        if (!resp.ok || !resp.body) throw new Error(`HTTP ${resp.status}`);
        if (state) state.textContent = "live";
        document.body.dataset.live = "on";
        const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let end;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const id = /^id: (.*)$/m.exec(block);
            if (id) last = id[1];
            if (/^data: /m.test(block)) refresh();
          }
        }
      } catch (_) { /* reconnect below */ }
      document.body.dataset.live = "off";
      if (state) state.textContent = "reconnecting…";
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
  if (live && live.dataset.stream !== undefined) follow();
})();
