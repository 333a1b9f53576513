// The browser terminal: xterm.js on the session's WebSocket (binary frames are the pane's
// bytes; we send {"type":"input"} and {"type":"resize"} text frames). Read-only is enforced
// by the server; the page only stops offering input.
// Sizes (decision 0042): a writable terminal fills the space left in the window and the
// agent's window follows it, so the agent draws for exactly what is shown; a read-only one is
// the agent's window size (hello and "size" frames) scaled down to fit, whole lines and all
// rows. It starts when its tab is first shown.
"use strict";
// tmux redraws only the visible screen on attach: the pane's earlier lines are written into
// the scrollback first (pushed up by blank lines), so that they can be scrolled back to.
async function paneHistory(url, term) {
  if (!url) return "";
  try {
    const resp = await fetch(url, { credentials: "same-origin" });
    if (!resp.ok) return "";
    const text = (await resp.json()).text ?? "";
    const lines = text.replace(/\s+$/, "").split("\n");
    if (lines.length <= term.rows) return "";
    return lines.join("\r\n") + "\r\n".repeat(term.rows) + "\x1b[H";
  } catch (_) {
    return "";
  }
}

// The height left for the terminal below its top, less what follows it (keys, state line),
// margins included.
function roomFor(el) {
  let below = 12;
  for (let next = el.nextElementSibling; next; next = next.nextElementSibling) {
    const style = window.getComputedStyle(next);
    below += next.offsetHeight + parseFloat(style.marginTop) + parseFloat(style.marginBottom);
  }
  const top = el.getBoundingClientRect().top + window.scrollY;
  return Math.max(160, window.innerHeight - top - below);
}

// A read-only terminal shows COLS x ROWS cells: scale them to fit the room, never up.
function scaleToFit(el, term) {
  const screen = el.querySelector(".xterm-screen");
  const xterm = el.querySelector(".xterm");
  if (!screen || !xterm) return;
  xterm.style.transform = "";
  const width = screen.offsetWidth;
  const height = screen.offsetHeight;
  if (!width || !height) return;
  const room = el.clientWidth - 8;
  const scale = Math.min(1, room / width, roomFor(el) / height);
  xterm.style.transformOrigin = "0 0";
  xterm.style.transform = `scale(${scale})`;
  el.style.height = `${Math.ceil(height * scale) + 8}px`;
  el.style.minHeight = "0"; // the box is the scaled window's height, however small
  el.dataset.scale = scale.toFixed(3);
}

window.addEventListener("DOMContentLoaded", () => {
  const panel = document.getElementById("panel-terminal");
  let started = false;
  const begin = () => { if (!started) { started = true; startTerminal(); } };
  if (!panel || !panel.hidden) begin();
  document.addEventListener("the-loop:tab", (ev) => { if (ev.detail === "terminal") begin(); });
});

async function startTerminal() {
  const el = document.getElementById("terminal");
  if (!el || typeof Terminal === "undefined") return;
  const stateLine = document.querySelector("[data-term-state]");
  const say = (text) => { if (stateLine) stateLine.textContent = text; };
  let readOnly = el.dataset.readOnly === "true";

  const term = new Terminal({
    // Rows a tenth taller than the font: xterm.js clips each row to its cell, and Linux's
    // monospace font (DejaVu Sans Mono) draws "_" below a 14 px font's 16 px cell, so at one
    // device pixel per CSS pixel every underscore vanished (xterm.js issue 4067).
    scrollback: 5000, fontSize: 14, lineHeight: 1.1, cursorBlink: !readOnly, disableStdin: readOnly,
    screenReaderMode: false, allowProposedApi: false,
    // Bright enough colours that text on the default background, and black text on a
    // coloured one (an agent's highlighted row), stay readable (WCAG AA contrast).
    theme: {
      background: "#000000", foreground: "#e6e6e6", cursor: "#e6e6e6",
      black: "#000000", red: "#ff6b6b", green: "#73d216", yellow: "#fce94f", blue: "#8ab4f8",
      magenta: "#d7a6e6", cyan: "#34e2e2", white: "#d3d7cf",
      brightBlack: "#9aa0a6", brightRed: "#ff8f8f", brightGreen: "#8ae234", brightYellow: "#fff38a",
      brightBlue: "#aecbfa", brightMagenta: "#e8c2f2", brightCyan: "#8ff0f0", brightWhite: "#ffffff",
    },
  });
  const fit = new FitAddon.FitAddon();
  term.loadAddon(fit);
  if (!readOnly) el.style.height = `${roomFor(el)}px`;
  term.open(el);
  window.theLoopTerminal = term; // for the browser tests and the curious
  try { fit.fit(); } catch (_) { /* not laid out yet */ }
  let windowSize = null; // a read-only terminal's: the agent's window, as the server says
  const showWindow = (cols, rows) => {
    if (!Number.isInteger(cols) || !Number.isInteger(rows)) return;
    windowSize = [cols, rows];
    term.resize(cols, rows);
    scaleToFit(el, term);
  };
  // tmux switches to the alternate screen, which has no scrollback: stay on the normal one.
  const ALT_SCREEN = new Set([47, 1047, 1049]);
  const onlyAltScreen = (params) => params.length > 0 && params.every((p) => ALT_SCREEN.has(p));
  term.parser.registerCsiHandler({ prefix: "?", final: "h" }, onlyAltScreen);
  term.parser.registerCsiHandler({ prefix: "?", final: "l" }, onlyAltScreen);
  const history = await paneHistory(el.dataset.history, term);
  if (history) term.write(history);
  const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
  const size = `cols=${term.cols}&rows=${term.rows}`;
  const ws = new WebSocket(`${scheme}//${window.location.host}${el.dataset.ws}?${size}`);
  ws.binaryType = "arraybuffer";
  const send = (frame) => { if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame)); };
  const input = (data) => { if (!readOnly) send({ type: "input", data }); };

  ws.addEventListener("open", () => { say("connected"); el.dataset.connected = "true"; resize(); });
  ws.addEventListener("message", (ev) => {
    if (typeof ev.data === "string") {
      try {
        const msg = JSON.parse(ev.data);
        if (msg.type === "hello" && msg.readOnly) { readOnly = true; term.options.disableStdin = true; }
        if ((msg.type === "hello" && msg.readOnly) || (msg.type === "size" && readOnly)) showWindow(msg.cols, msg.rows);
        if (msg.type === "error") say(msg.message);
        if (msg.type === "ended") { // what follows is the agent's record: nothing to type into
          readOnly = true;
          term.options.disableStdin = true;
          term.options.cursorBlink = false;
          for (const bar of document.querySelectorAll(".keys")) bar.hidden = true;
          el.dataset.ended = "true";
          say(msg.message);
        }
      } catch (_) { /* not ours */ }
      return;
    }
    term.write(new Uint8Array(ev.data));
    el.dataset.bytes = String(Number(el.dataset.bytes ?? 0) + ev.data.byteLength);
  });
  ws.addEventListener("close", (ev) => {
    el.dataset.connected = "false";
    if (!stateLine?.textContent || stateLine.textContent === "connected") {
      say(`disconnected${ev.reason ? ": " + ev.reason : ""} — reload the page to reconnect`);
    }
  });
  term.onData(input);

  function resize() {
    if (readOnly) { if (windowSize) scaleToFit(el, term); return; }
    el.style.height = `${roomFor(el)}px`;
    try { fit.fit(); } catch (_) { return; }
    send({ type: "resize", cols: term.cols, rows: term.rows });
  }
  window.addEventListener("resize", () => { clearTimeout(resize.timer); resize.timer = setTimeout(resize, 100); });

  // The key toolbar: what a phone keyboard lacks.
  const KEYS = { esc: "\x1b", tab: "\t", "ctrl-c": "\x03", up: "\x1b[A", down: "\x1b[B",
    right: "\x1b[C", left: "\x1b[D", enter: "\r" };
  for (const button of document.querySelectorAll(".keys [data-key]")) {
    button.addEventListener("click", () => { input(KEYS[button.dataset.key]); term.focus(); });
  }

  // Touch scrolling of the scrollback: one finger drags the lines.
  let touchY = null;
  let carry = 0;
  el.addEventListener("touchstart", (ev) => {
    if (ev.touches.length === 1) { touchY = ev.touches[0].clientY; carry = 0; }
  }, { passive: true, capture: true });
  el.addEventListener("touchmove", (ev) => {
    if (touchY === null || ev.touches.length !== 1) return;
    const y = ev.touches[0].clientY;
    const lineHeight = el.querySelector(".xterm-rows")?.firstElementChild?.getBoundingClientRect().height || 17;
    carry += (touchY - y) / lineHeight;
    touchY = y;
    const lines = Math.trunc(carry);
    if (lines !== 0) { term.scrollLines(lines); carry -= lines; }
    ev.preventDefault();
    ev.stopPropagation();
  }, { passive: false, capture: true });
  el.addEventListener("touchend", () => { touchY = null; }, { capture: true });

  window.addEventListener("pagehide", () => ws.close());
}
