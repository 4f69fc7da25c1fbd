// toolgate console: plain JavaScript, no external asset, no build step.
//
// Everything shown comes from /ui/api/*, with the bearer token (when the server asks for one)
// in the Authorization header. The token comes from the #token= fragment of the address (never
// sent to a server; removed from the address at once) or the login form, and stays in this
// tab's sessionStorage. The event stream is read with fetch (EventSource cannot send headers).
// Text from the server is only ever set as textContent: a tool name or an argument cannot
// become markup.
"use strict";

const RING = 500; // rows kept in the page, as in the server's ring
const TOKEN_KEY = "toolgate-console-token";
const calls = new Map(); // call_id -> row
let selected = null; // call_id of the detail shown
let pageAt = 0; // offset of the offloaded page shown
let streamAbort = null;

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

function takeTokenFromAddress() {
  const found = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (found) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(found[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
}

function headers() {
  const t = token();
  return t ? { Authorization: "Bearer " + t } : {};
}

function setStatus(text, kind) {
  const s = document.getElementById("status");
  s.textContent = text;
  s.className = "status " + (kind || "");
}

class Unauthorized extends Error {}

async function api(path) {
  const response = await fetch("/ui/api/" + path, { headers: headers(), cache: "no-store" });
  if (response.status === 401) {
    askForToken();
    throw new Unauthorized("the server asks for its bearer token");
  }
  const body = await response.json();
  if (!response.ok) {
    throw new Error(body.error || response.statusText);
  }
  return body;
}

function askForToken() {
  sessionStorage.removeItem(TOKEN_KEY);
  document.getElementById("login").hidden = false;
  setStatus("token needed", "down");
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

// --- calls --------------------------------------------------------------------------------

function outcomeOf(row) {
  if (row.state === "running") return "running";
  if (row.error_kind === "denied") return "denied";
  return row.state === "ok" ? "ok" : "error";
}

function decisionOf(row) {
  const d = row.decision;
  if (!d) return "";
  const parts = [];
  if (d.rules) parts.push("rules: " + d.rules);
  if (d.rule) parts.push(d.rule);
  if (d.before_hook) parts.push("before hook: " + d.before_hook);
  return parts.join(" · ");
}

function upsert(row) {
  const known = calls.get(row.call_id);
  if (known && known.revision >= row.revision) return;
  calls.set(row.call_id, row);
  while (calls.size > RING) {
    calls.delete(calls.keys().next().value);
  }
}

function rowMatches(row) {
  const want = (id) => document.getElementById(id).value.trim().toLowerCase();
  const has = (value, needle) => !needle || String(value || "").toLowerCase().includes(needle);
  const outcome = document.getElementById("f-outcome").value;
  const o = outcomeOf(row);
  return (
    (has(row.tool, want("f-tool")) || has(row.model_name, want("f-tool"))) &&
    has(row.principal, want("f-principal")) &&
    has(row.session, want("f-session")) &&
    (!outcome || o === outcome || (outcome === "error" && o === "denied"))
  );
}

function time(ms) {
  const d = new Date(ms);
  return d.toLocaleTimeString(undefined, { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

function num(value, digits) {
  return value === null || value === undefined ? "" : Number(value).toFixed(digits);
}

function renderCalls() {
  const body = document.querySelector("#calls tbody");
  clear(body);
  let shown = 0;
  const rows = Array.from(calls.values()).reverse(); // newest first
  for (const row of rows) {
    if (!rowMatches(row)) continue;
    shown += 1;
    const tr = el("tr");
    tr.dataset.callId = row.call_id;
    tr.dataset.outcome = outcomeOf(row);
    if (row.call_id === selected) tr.classList.add("selected");
    const tool = row.model_name && row.model_name !== row.tool ? row.tool + " (" + row.model_name + ")" : row.tool;
    const cells = [
      [time(row.started_at_ms), "c-time"],
      [tool, "c-tool"],
      [row.principal, "c-principal"],
      [row.session || "", "c-session"],
      [decisionOf(row), "c-decision"],
      [row.error_kind || outcomeOf(row), "c-outcome o-" + outcomeOf(row)],
      [num(row.run_ms, 1), "c-run num"],
      [num(row.queued_ms, 1), "c-queued num"],
      [row.result_chars === null ? "" : row.result_chars, "c-chars num"],
      [row.result_id || "", "c-offload"],
    ];
    for (const [text, cls] of cells) {
      const td = el("td", text, cls);
      td.title = String(text); // the whole value, where the column cuts it
      tr.appendChild(td);
    }
    tr.addEventListener("click", () => showDetail(row.call_id));
    body.appendChild(tr);
  }
  document.getElementById("counts").textContent = shown + " of " + calls.size + " calls";
}

async function showDetail(callId) {
  selected = callId;
  pageAt = 0;
  renderCalls();
  const detail = document.getElementById("detail");
  try {
    const d = await api("calls/" + encodeURIComponent(callId));
    const row = d.row;
    detail.hidden = false;
    document.getElementById("d-title").textContent = row.tool + " · " + row.call_id;
    const facts = document.getElementById("d-facts");
    clear(facts);
    const fact = (k, v) => {
      if (v === null || v === undefined || v === "") return;
      facts.appendChild(el("dt", k));
      facts.appendChild(el("dd", v));
    };
    fact("model-facing name", row.model_name);
    fact("kind", row.kind);
    fact("principal", row.principal);
    fact("session", row.session);
    fact("outcome", outcomeOf(row));
    fact("decision", decisionOf(row));
    fact("error kind", row.error_kind);
    fact("error", row.error);
    fact("run", row.run_ms === null ? null : num(row.run_ms, 2) + " ms");
    fact("queued", row.queued_ms === null ? null : num(row.queued_ms, 2) + " ms");
    fact("result", row.result_chars === null ? null : row.result_chars + " characters" + (row.truncated ? " (cut at the cap)" : ""));
    fact("secrets masked in the result", row.redactions || null);
    document.getElementById("d-args").textContent =
      JSON.stringify(d.arguments, null, 2) + (d.arguments_cut ? "\n…(cut: only the first 8 KiB are kept)" : "");
    document.getElementById("d-preview").textContent = d.preview + (d.preview_cut ? "\n…" : "");
    const pager = document.getElementById("d-pager");
    pager.hidden = !row.result_id;
    if (row.result_id) {
      document.getElementById("d-result-id").textContent = row.result_id;
      await showPage(0);
    }
  } catch (e) {
    if (!(e instanceof Unauthorized)) {
      detail.hidden = false;
      document.getElementById("d-title").textContent = String(e.message);
    }
  }
}

async function showPage(offset) {
  const row = calls.get(selected);
  if (!row || !row.result_id) return;
  const page = await api("results/" + encodeURIComponent(row.result_id) + "?offset=" + offset);
  pageAt = page.offset;
  document.getElementById("d-page").textContent = page.text;
  document.getElementById("d-page-at").textContent =
    "characters " + page.offset + "-" + page.end + " of " + page.total_chars;
  document.getElementById("d-next").disabled = page.next_offset === null;
  document.getElementById("d-next").dataset.next = page.next_offset === null ? "" : page.next_offset;
  document.getElementById("d-prev").disabled = page.offset === 0;
}

// --- the event stream ---------------------------------------------------------------------

async function stream() {
  if (streamAbort) streamAbort.abort();
  streamAbort = new AbortController();
  setStatus("connecting");
  let response;
  try {
    response = await fetch("/ui/api/events", { headers: headers(), signal: streamAbort.signal, cache: "no-store" });
  } catch (e) {
    setStatus("disconnected", "down");
    setTimeout(stream, 1000);
    return;
  }
  if (response.status === 401) {
    askForToken();
    return;
  }
  if (!response.ok) {
    setStatus("stream refused: " + response.status, "down");
    setTimeout(stream, 2000);
    return;
  }
  setStatus("live", "live");
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        handleEvent(block);
      }
    }
  } catch (e) {
    // The page went away or the connection broke: reconnect below.
  }
  setStatus("disconnected", "down");
  setTimeout(stream, 1000);
}

function handleEvent(block) {
  let name = "message";
  let data = "";
  for (const line of block.split("\n")) {
    if (line.startsWith("event: ")) name = line.slice(7);
    else if (line.startsWith("data: ")) data += line.slice(6);
  }
  if (!data) return; // a keep-alive comment
  const value = JSON.parse(data);
  if (name === "snapshot") {
    for (const row of value.calls) upsert(row);
  } else if (name === "call") {
    upsert(value);
  } else if (name === "dropped") {
    setStatus("live (" + value.dropped + " events dropped: too slow)", "live");
    api("calls").then((all) => { all.calls.forEach(upsert); renderCalls(); }).catch(() => {});
  }
  renderCalls();
}

// --- policy and explain -------------------------------------------------------------------

async function showPolicy() {
  const p = await api("policy");
  const facts = document.getElementById("p-facts");
  clear(facts);
  const fact = (k, v) => { facts.appendChild(el("dt", k)); facts.appendChild(el("dd", v)); };
  fact("file", p.file || "(built in code)");
  fact("generation", p.generation + (p.generation > 1 ? " (reloaded)" : ""));
  fact("name profile", p.name_profile);
  fact("dispatch.timeout", p.dispatch.timeout);
  fact("dispatch.max_result_chars", p.dispatch.max_result_chars);
  const on = Object.entries(p.sections).filter(([k, v]) => v === true).map(([k]) => k);
  fact("sections on", on.concat(p.sections.scripts.map((s) => "scripts." + s)).join(", ") || "none");
  fact("MCP servers", p.mcp_servers.join(", ") || "none");
  if (p.warnings.length) fact("warnings", p.warnings.join("\n"));
  const rules = document.querySelector("#p-rules tbody");
  clear(rules);
  for (const r of p.rules.deny.concat(p.rules.allow)) {
    const tr = el("tr");
    const judges = [].concat(r.tools.map((t) => "tool " + t), r.resources.map((t) => "resource " + t), r.prompts.map((t) => "prompt " + t));
    const conditions = [].concat(
      Object.entries(r.args).map(([k, v]) => "args." + k + " ~ " + v),
      Object.entries(r.paths).map(([k, v]) => "paths." + k + " ~ " + v),
      r.sessions.map((s) => "session ~ " + s),
    );
    [r.rule, r.at || "", judges.join(", ") || "every call", conditions.join(", "), r.reason || ""].forEach((t) => tr.appendChild(el("td", t)));
    rules.appendChild(tr);
  }
  const overrides = document.querySelector("#p-overrides tbody");
  clear(overrides);
  for (const o of p.overrides) {
    const tr = el("tr");
    tr.appendChild(el("td", o.key));
    tr.appendChild(el("td", o.at || ""));
    overrides.appendChild(tr);
  }
}

async function explain(tool) {
  const e = await api("explain?tool=" + encodeURIComponent(tool));
  document.getElementById("explain-head").textContent = e.known_tool
    ? e.tool_name + (e.model_name !== e.tool_name ? " (the model calls it " + e.model_name + ")" : "") + ", from " + e.source
    : tool + ": no such tool; calls to it take the unknown-tool path";
  const body = document.querySelector("#explain-result tbody");
  clear(body);
  const row = (setting, value, from) => {
    const tr = el("tr");
    tr.dataset.setting = setting;
    tr.appendChild(el("td", setting, "setting"));
    tr.appendChild(el("td", value, "value"));
    tr.appendChild(el("td", from, "from"));
    body.appendChild(tr);
  };
  row("timeout", e.timeout || "none", e.timeout_from);
  if (e.max_result_bytes !== null && e.max_result_bytes !== undefined) {
    row("max_result_bytes", e.max_result_bytes, e.max_result_bytes_from);
  } else {
    row("max_result_chars", e.max_result_chars, e.max_result_chars_from);
  }
  row("sequential_group", e.sequential_group || "none", e.sequential_group ? e.sequential_group_from : "-");
  row("rules", e.rules_from.join(", ") || "none", "");
  row("matched overrides", e.matched.join(", ") || "none", "");
  row("order", e.order, "");
}

// --- tools and search ---------------------------------------------------------------------

async function showTools() {
  const t = await api("tools");
  const ups = document.querySelector("#t-upstreams tbody");
  clear(ups);
  for (const u of t.upstreams) {
    const tr = el("tr");
    tr.dataset.server = u.name;
    tr.appendChild(el("td", u.name));
    tr.appendChild(el("td", u.state, "state state-" + u.state));
    tr.appendChild(el("td", u.tools, "num"));
    tr.appendChild(el("td", u.description));
    tr.appendChild(el("td", [u.detail].concat(u.problems).filter(Boolean).join("\n")));
    ups.appendChild(tr);
  }
  if (!t.upstreams.length) {
    const tr = el("tr");
    const td = el("td", "none in this policy", "muted");
    td.colSpan = 5;
    tr.appendChild(td);
    ups.appendChild(tr);
  }
  const tools = document.querySelector("#t-tools tbody");
  clear(tools);
  for (const x of t.tools) {
    const tr = el("tr");
    tr.dataset.tool = x.name;
    [x.name, x.model_name, x.source + (x.searchable ? " (found by search)" : ""), x.description].forEach((v) => tr.appendChild(el("td", v)));
    tools.appendChild(tr);
  }
}

async function search(q) {
  const list = document.getElementById("search-results");
  clear(list);
  try {
    const r = await api("search?q=" + encodeURIComponent(q));
    for (const hit of r.results) {
      const li = el("li");
      li.dataset.tool = hit.name;
      li.appendChild(el("strong", hit.name));
      li.appendChild(el("span", "  score " + Number(hit.score).toFixed(3), "muted"));
      if (hit.description) li.appendChild(el("div", hit.description));
      const why = hit.why.length
        ? hit.why.map((m) => (m.term === m.matched ? m.term : m.term + " → " + m.matched) + " in " + m.field + " (" + m.kind + ")").join("; ")
        : "close in meaning (no word in common)";
      li.appendChild(el("div", "why: " + why, "why"));
      list.appendChild(li);
    }
    if (!r.results.length) list.appendChild(el("li", "no tool matched", "muted"));
  } catch (e) {
    list.appendChild(el("li", String(e.message), "o-error"));
  }
}

// --- wiring -------------------------------------------------------------------------------

function showView(name) {
  for (const tab of document.querySelectorAll(".tab")) tab.classList.toggle("active", tab.dataset.view === name);
  for (const view of document.querySelectorAll(".view")) view.hidden = view.id !== "view-" + name;
  const load = { policy: showPolicy, tools: showTools }[name];
  if (load) load().catch((e) => { if (!(e instanceof Unauthorized)) setStatus(String(e.message), "down"); });
}

function start() {
  takeTokenFromAddress();
  for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => showView(tab.dataset.view));
  for (const id of ["f-tool", "f-principal", "f-session", "f-outcome"]) {
    document.getElementById(id).addEventListener("input", renderCalls);
  }
  document.getElementById("login").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value.trim());
    document.getElementById("token").value = "";
    document.getElementById("login").hidden = true;
    stream();
  });
  document.getElementById("explain-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    explain(document.getElementById("explain-tool").value.trim()).catch((e) => {
      document.getElementById("explain-head").textContent = String(e.message);
    });
  });
  document.getElementById("search-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    search(document.getElementById("search-q").value);
  });
  document.getElementById("d-next").addEventListener("click", (ev) => {
    const next = ev.target.dataset.next;
    if (next !== "") showPage(Number(next));
  });
  document.getElementById("d-prev").addEventListener("click", () => showPage(Math.max(0, pageAt - 20000)));
  stream();
}

document.addEventListener("DOMContentLoaded", start);
