// Samsa dashboard: plain JavaScript, no libraries. Every value from the
// API is put in the page as text (textContent), never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const POLL_MS = 2000;     // the overview (live charts) and the open tab
const CHART_POINTS = 150; // five minutes at one point per poll

async function api(path, opts) {
  const r = await fetch("api/" + path, Object.assign({ credentials: "same-origin", cache: "no-store" }, opts || {}));
  let body = null;
  try { body = await r.json(); } catch (e) { body = null; }
  if (!r.ok) throw new Error((body && body.error) || (r.status + " " + r.statusText));
  return body;
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function row(tbody, cells, onclick) {
  const tr = el("tr");
  for (const c of cells) {
    const td = typeof c === "object" && c !== null && c.num !== undefined ? el("td", c.num, "num") : el("td", c);
    tr.appendChild(td);
  }
  if (onclick) { tr.className = "click"; tr.addEventListener("click", onclick); }
  tbody.appendChild(tr);
  return tr;
}

function fill(tableId, rows) {
  const t = $(tableId), tb = t.tBodies[0];
  tb.replaceChildren();
  for (const r of rows) row(tb, r.cells, r.onclick);
  if (!rows.length) {
    const td = el("td", "none", "empty");
    td.colSpan = t.tHead.rows[0].cells.length;
    tb.appendChild(el("tr")).appendChild(td);
  }
}

const num = (v) => ({ num: v === undefined || v === null ? "-" : v });
const rate = (v) => num(v === undefined || v === null ? null : Number(v).toFixed(1));
const when = (ms) => (ms > 0 ? new Date(ms).toLocaleString() : "-");

function status(err) { $("status").textContent = err ? "error: " + err.message : ""; }

// ---- live charts: rates from the deltas of the overview's totals ----
const series = { in: [], out: [] };
let last = null;
let topicRates = {};

function drawChart(svgId, points) {
  const svg = $(svgId);
  const W = 600, H = 140;
  svg.replaceChildren();
  const peak = Math.max(1, ...points.map((p) => p.v));
  const ns = "http://www.w3.org/2000/svg";
  for (const f of [0, 0.5, 1]) {
    const y = H - f * (H - 12);
    const l = document.createElementNS(ns, "line");
    l.setAttribute("x1", 0); l.setAttribute("x2", W); l.setAttribute("y1", y); l.setAttribute("y2", y);
    svg.appendChild(l);
    const t = document.createElementNS(ns, "text");
    t.setAttribute("x", 2); t.setAttribute("y", y - 2);
    t.textContent = (peak * f).toFixed(peak * f < 10 ? 1 : 0);
    svg.appendChild(t);
  }
  if (points.length < 2) return;
  const pl = document.createElementNS(ns, "polyline");
  const dx = W / (CHART_POINTS - 1);
  const off = CHART_POINTS - points.length;
  pl.setAttribute("points", points.map((p, i) => ((off + i) * dx).toFixed(1) + "," + (H - (p.v / peak) * (H - 12)).toFixed(1)).join(" "));
  svg.appendChild(pl);
}

async function pollOverview() {
  try {
    const o = await api("overview");
    $("broker-title").textContent = o.brokerName + " (" + o.role + ", " + o.addr + ", " + o.cluster + ")";
    document.title = "Samsa " + o.brokerName;
    if (last && o.nowMs > last.nowMs) {
      const secs = (o.nowMs - last.nowMs) / 1000;
      const vin = Math.max(0, (o.putTotal - last.putTotal) / secs), vout = Math.max(0, (o.getTotal - last.getTotal) / secs);
      series.in.push({ t: o.nowMs, v: vin }); series.out.push({ t: o.nowMs, v: vout });
      for (const s of [series.in, series.out]) while (s.length > CHART_POINTS) s.shift();
      $("in-now").textContent = vin.toFixed(1); $("out-now").textContent = vout.toFixed(1);
      const prev = {};
      for (const t of last.topics) prev[t.topic] = t;
      topicRates = {};
      for (const t of o.topics) {
        const p = prev[t.topic] || { puts: t.puts, gets: t.gets };
        topicRates[t.topic] = { in: Math.max(0, (t.puts - p.puts) / secs), out: Math.max(0, (t.gets - p.gets) / secs) };
      }
    }
    last = o;
    drawChart("chart-in", series.in); drawChart("chart-out", series.out);
    status(null);
  } catch (e) { status(e); }
}

// ---- cluster ----
async function loadCluster() {
  const c = await api("cluster");
  $("cluster-source").textContent = "from " + c.source;
  fill("cluster-table", c.brokers.map((b) => ({
    cells: [b.cluster, b.broker + (b.self ? " (this)" : ""), num(b.id), b.role, b.brokerRole, b.addr, b.version || "-",
      rate(b.inPerSec), rate(b.outPerSec),
      b.diskRatio === undefined ? "-" : (b.diskRatio * 100).toFixed(0) + "%",
      b.replication ? (b.replication.inSync ? "in sync" : "NOT in sync") + ", " + b.replication.behindBytes + " B / " + b.replication.lagMs + " ms behind"
        : (b.error ? "error: " + b.error : "-")],
  })));
}

// ---- topics ----
let topicList = [];
async function loadTopics() {
  topicList = await api("topics");
  const dl = $("topic-names");
  dl.replaceChildren(...topicList.map((t) => { const o = el("option"); o.value = t.topic; return o; }));
  renderTopics();
}
function renderTopics() {
  const f = $("topic-filter").value.trim().toLowerCase();
  fill("topics-table", topicList.filter((t) => !f || t.topic.toLowerCase().includes(f)).map((t) => {
    const r = topicRates[t.topic] || {};
    return { cells: [t.topic, t.readQueues + " / " + t.writeQueues, perm(t.perm), num(t.messages), num(t.maxOffsetTotal), rate(r.in), rate(r.out)],
      onclick: () => { location.hash = "topics?topic=" + encodeURIComponent(t.topic); } };
  }));
}
function perm(p) { return (p & 4 ? "R" : "-") + (p & 2 ? "W" : "-") + (p & 1 ? "I" : ""); }
let openTopic = null;
async function showTopic(name) {
  openTopic = name;
  const d = await api("topic?topic=" + encodeURIComponent(name));
  $("topic-detail").hidden = false;
  $("topic-name").textContent = d.topic;
  fill("topic-queues", d.queues.map((q) => ({ cells: [num(q.queue), num(q.minOffset), num(q.maxOffset), when(q.lastStoreTimeMs)] })));
  const span = $("topic-groups");
  span.replaceChildren();
  if (!d.groups.length) span.textContent = "none";
  for (const g of d.groups) {
    const a = el("a", g); a.href = "#groups?group=" + encodeURIComponent(g);
    span.appendChild(a); span.appendChild(document.createTextNode(" "));
  }
}

// ---- groups ----
let groupList = [];
async function loadGroups() {
  groupList = await api("groups");
  renderGroups();
}
function renderGroups() {
  const f = $("group-filter").value.trim().toLowerCase();
  fill("groups-table", groupList.filter((g) => !f || g.group.toLowerCase().includes(f)).map((g) => ({
    cells: [g.group, num(g.members), g.topics.join(", ") || "-", num(g.lag), num(g.popInFlight), num(g.popRedelivered)], onclick: () => { location.hash = "groups?group=" + encodeURIComponent(g.group); } })));
}
let openGroup = null;
async function showGroup(name) {
  const d = await api("group?group=" + encodeURIComponent(name));
  $("group-detail").hidden = false;
  $("group-name").textContent = d.group;
  $("group-model").textContent = [d.consumeType, d.messageModel].filter(Boolean).join(", ");
  fill("group-members", d.members.map((m) => ({ cells: [m.clientId, m.addr, m.language, num(m.version)] })));
  const subs = $("group-subs");
  subs.replaceChildren(...Object.keys(d.subscriptions).sort().map((t) => el("li", t + ": " + d.subscriptions[t])));
  if (!subs.children.length) subs.appendChild(el("li", "none (no member online here)"));
  $("group-lag").textContent = d.lag;
  fill("group-queues", d.queues.map((q) => ({ cells: [q.topic, num(q.queue), num(q.minOffset), num(q.maxOffset),
    num(q.committed < 0 ? "none" : q.committed), num(q.lag), num(q.popInFlight), num(q.popRedelivered), when(q.lastConsumedMs)] })));
  const sel = $("reset-topic"), keep = sel.value;
  const topics = [...new Set(d.queues.map((q) => q.topic))];
  sel.replaceChildren(...topics.map((t) => { const o = el("option", t); o.value = t; return o; }));
  if (topics.includes(keep)) sel.value = keep;
}

function resetBody(dryRun) {
  const to = $("reset-to").value;
  const b = { group: openGroup, topic: $("reset-topic").value, to: to, dryRun: dryRun };
  if (to === "time") b.timestampMs = new Date($("reset-time").value).getTime() || 0;
  if (to === "offset") b.offset = Number($("reset-offset").value);
  return b;
}
async function postReset(body) {
  return api("group/reset", { method: "POST", headers: { "Content-Type": "application/json", "X-Samsa-UI": "1" }, body: JSON.stringify(body) });
}
let pending = null;
function resetToChanged() {
  const to = $("reset-to").value;
  $("reset-time-l").hidden = to !== "time";
  $("reset-offset-l").hidden = to !== "offset";
}

// ---- messages ----
function msgByChanged() {
  const by = $("msg-by").value;
  $("msg-id-l").hidden = by !== "id";
  $("msg-key-l").hidden = by !== "key";
  for (const id of ["msg-queue-l", "msg-offset-l", "msg-n-l"]) $(id).hidden = by !== "offset";
}
async function searchMessages() {
  const by = $("msg-by").value, p = new URLSearchParams();
  const topic = $("msg-topic").value.trim();
  if (topic) p.set("topic", topic);
  if (by === "id") p.set("id", $("msg-id").value.trim());
  if (by === "key") p.set("key", $("msg-key").value);
  if (by === "offset") { p.set("queue", $("msg-queue").value); p.set("offset", $("msg-offset").value); p.set("n", $("msg-n").value); }
  $("msg-error").textContent = "";
  const out = $("msg-results");
  out.replaceChildren();
  try {
    const ms = await api("messages?" + p.toString());
    for (const m of ms) {
      const d = el("div", null, "msg");
      d.appendChild(el("h4", m.topic + " queue " + m.queue + " offset " + m.queueOffset));
      const t = el("table"), tb = el("tbody");
      t.appendChild(tb);
      for (const [k, v] of [["Message id (offset)", m.msgId], ["Producer id (UNIQ_KEY)", m.uniqKey || "-"], ["Keys", m.keys || "-"],
        ["Tags", m.tags || "-"], ["Born", when(m.bornTimestampMs) + " at " + m.bornHost], ["Stored", when(m.storeTimestampMs) + " at " + m.storeHost],
        ["Commit-log offset", m.commitLogOffset], ["Reconsume times", m.reconsumeTimes], ["Body size", m.bodySize + " bytes" + (m.truncated ? " (shown in part)" : "")]]) {
        row(tb, [k, v]);
      }
      for (const k of Object.keys(m.properties).sort()) row(tb, ["property " + k, m.properties[k]]);
      d.appendChild(t);
      d.appendChild(el("pre", (m.bodyBase64 ? "(base64) " : "") + m.body));
      out.appendChild(d);
    }
  } catch (e) { $("msg-error").textContent = e.message; }
}

// ---- tabs and polling ----
const loaders = { cluster: loadCluster, topics: () => loadTopics().then(() => openTopic && showTopic(openTopic)),
  groups: () => loadGroups().then(() => openGroup && showGroup(openGroup)), messages: async () => {} };
let current = "cluster";
// show opens a tab from a location hash: "#tab" or "#tab?query", the
// query naming what to open: #topics?topic=T, #groups?group=G,
// #messages?topic=T&id=I (or &key=K, or &queue=Q&offset=O&n=N).
function show(hash) {
  const i = hash.indexOf("?");
  const name = i < 0 ? hash : hash.slice(0, i), query = i < 0 ? "" : hash.slice(i + 1);
  const tab = loaders[name] ? name : "cluster";
  const p = new URLSearchParams(query || "");
  current = tab;
  for (const t of Object.keys(loaders)) $("tab-" + t).hidden = t !== tab;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.tab === tab);
  if (tab === "topics" && p.get("topic")) openTopic = p.get("topic");
  if (tab === "groups" && p.get("group") && p.get("group") !== openGroup) {
    openGroup = p.get("group");
    pending = null;
    $("reset-preview").hidden = true;
    $("reset-result").textContent = "";
  }
  if (tab === "messages" && [...p.keys()].length) {
    $("msg-topic").value = p.get("topic") || "";
    const by = p.has("id") ? "id" : p.has("key") ? "key" : "offset";
    $("msg-by").value = by;
    $("msg-id").value = p.get("id") || "";
    $("msg-key").value = p.get("key") || "";
    for (const k of ["queue", "offset", "n"]) if (p.has(k)) $("msg-" + k).value = p.get(k);
    msgByChanged();
    searchMessages();
  }
  refresh();
}
let busy = false;
async function refresh() {
  if (busy) return;
  busy = true;
  try { await loaders[current](); status(null); } catch (e) { status(e); } finally { busy = false; }
}

window.addEventListener("hashchange", () => show(location.hash.slice(1)));
$("topic-filter").addEventListener("input", renderTopics);
$("group-filter").addEventListener("input", renderGroups);
$("reset-to").addEventListener("change", resetToChanged);
$("msg-by").addEventListener("change", msgByChanged);
$("msg-form").addEventListener("submit", (e) => { e.preventDefault(); searchMessages(); });
$("reset-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  $("reset-result").textContent = "";
  try {
    const body = resetBody(true);
    const a = await postReset(body);
    pending = Object.assign({}, body, { dryRun: false });
    fill("reset-table", a.queues.map((q) => ({ cells: [num(q.queue), num(q.from < 0 ? "none" : q.from), num(q.to)] })));
    $("reset-preview").hidden = false;
  } catch (err) { $("reset-result").textContent = "refused: " + err.message; }
});
$("reset-cancel").addEventListener("click", () => { pending = null; $("reset-preview").hidden = true; });
$("reset-confirm").addEventListener("click", async () => {
  if (!pending) return;
  if (!window.confirm("Move the offsets of group " + pending.group + " on topic " + pending.topic + "?")) return;
  try {
    const a = await postReset(pending);
    $("reset-result").textContent = "reset " + a.queues.length + " queue(s) of " + a.topic;
    $("reset-preview").hidden = true;
    pending = null;
    showGroup(openGroup);
  } catch (err) { $("reset-result").textContent = "refused: " + err.message; }
});

resetToChanged();
msgByChanged();
show(location.hash.slice(1) || "cluster");
pollOverview();
loadTopics().catch(status); // the topic list feeds the message search's topic field
setInterval(() => { pollOverview(); refresh(); }, POLL_MS);
