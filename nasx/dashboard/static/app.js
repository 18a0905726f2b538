// nasx dashboard: polls the read-only JSON API and redraws what changed. Every string from an
// experiment is inserted with textContent (never innerHTML), so labels, values and errors show
// as text. The trial table is a window onto the server's sorted rows (see loadRows).
"use strict";

const state = { experiments: [], current: null, data: null, sort: { key: "id", desc: false },
                filter: "", selected: null, versions: {}, chartVersions: {} };
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(c == null ? "" : String(c)));
  return node;
}

const fmt = (x) => (x == null ? "" : typeof x === "number" ? (Number.isInteger(x) ? String(x) : x.toPrecision(4)) : String(x));
const archText = (arch) => Object.entries(arch).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", ");
function ago(ts, now) {
  if (!ts) return "-";
  const s = Math.max(0, now - ts);
  return s < 60 ? `${s.toFixed(0)} s ago` : s < 3600 ? `${(s / 60).toFixed(0)} min ago` : `${(s / 3600).toFixed(1)} h ago`;
}

async function getJSON(url) {
  const r = await fetch(url, { cache: "no-store" });
  if (!r.ok) throw new Error(`${url}: ${r.status}`);
  return r.json();
}

function chartURL(i, name, params) {
  const q = new URLSearchParams({ ...params, v: state.chartVersions[i] || "" });
  return `/api/exp/${i}/chart/${name}.svg?${q}`;
}

function setImg(img, url) {
  if (img.getAttribute("src") === url) return;
  img.addEventListener("load", () => {
    img.setAttribute("data-loaded", url);
    performance.mark(`nasx:${img.id || "chart"}`);  // for benchmarks/dashboard_scale.py
  }, { once: true });
  img.src = url;
}

// ------------------------------------------------------------------ tabs and comparison
function renderTabs() {
  const nav = $("tabs");
  nav.replaceChildren();
  state.experiments.forEach((e) => {
    const label = e.error ? `${e.name} (unreadable)` : `${e.name} · ${e.n_trials}`;
    nav.append(el("button", { class: e.index === state.current ? "active" : "", title: e.path || e.error || "",
      onclick: () => select(e.index) }, label));
  });
  if (state.experiments.length > 1) {
    nav.append(el("button", { class: state.current === "all" ? "active" : "", onclick: () => select("all") }, "side by side"));
  }
}

function renderCompare() {
  const grid = $("compare-grid");
  grid.replaceChildren();
  for (const e of state.experiments) {
    if (e.error) { grid.append(el("div", { class: "card" }, el("h2", {}, e.name), el("pre", { class: "error" }, e.error))); continue; }
    const img = el("img", { alt: `metric by trial of ${e.name}` });
    grid.append(el("div", { class: "card" }, el("h2", {}, e.name), statusLine(e), img));
    setImg(img, chartURL(e.index, e.has_arch_weights ? "arch_weights" : "history", {}));
  }
}

function statusLine(e) {
  const chips = el("div", { class: "chips" });
  for (const [s, n] of Object.entries(e.counts || {})) if (n) chips.append(el("span", { class: s }, `${n} ${s}`));
  const best = e.best ? `best ${fmt(e.best.metric)} (trial ${e.best.id})` : "no result yet";
  return el("div", {}, chips, el("div", { class: "meta" },
    `${e.kind} · ${e.strategy || "-"} on ${e.space || "-"} · ${e.direction}s · ${best} · updated ${ago(e.updated, e.now)}`));
}

// ------------------------------------------------------------------ one experiment
function renderStatus(d) {
  const box = $("status");
  box.replaceChildren(el("h2", {}, d.name), el("div", { class: "meta" }, d.path), statusLine(d));
  if (d.running.length) box.append(el("div", { class: "meta" }, `running: ${d.running.map((i) => "#" + i).join(", ")}`));
}

function fillSelect(select, values, keep) {
  const current = select.value || keep;
  select.replaceChildren(...values.map((v) => el("option", { value: v }, v)));
  if (values.includes(current)) select.value = current;
}

function renderCharts(d) {
  const i = d.index;
  const oneShot = d.has_arch_weights;  // a supernet's arch weights, logged as it trained
  fillSelect($("history-metric"), d.metrics, "default");
  fillSelect($("pareto-x"), d.metrics.filter((m) => m !== "default"), "");
  $("chart-pareto").closest("figure").hidden = oneShot || d.metrics.length < 2;
  $("chart-curves").closest("figure").hidden = oneShot || !d.has_curves;
  if (oneShot) setImg($("chart-history"), chartURL(i, "arch_weights", {}));
  else setImg($("chart-history"), chartURL(i, "history", { metric: $("history-metric").value || "default" }));
  if (!oneShot && d.metrics.length > 1) setImg($("chart-pareto"), chartURL(i, "pareto", { x: $("pareto-x").value, xdir: $("pareto-xdir").value }));
  if (!oneShot && d.has_curves) setImg($("chart-curves"), chartURL(i, "curves", {}));
}

function columns(d) {
  const extra = d.metrics.filter((m) => m !== "default");
  return [
    { key: "id", label: "id", get: (t) => t.id },
    { key: "status", label: "status", get: (t) => t.status },
    { key: "metric", label: "metric", get: (t) => t.metric },
    ...extra.map((m) => ({ key: "m:" + m, label: m, get: (t) => (t.metrics || {})[m] })),
    // a scheduler's run: the largest budget each trial reached (epochs by default)
    ...(d.has_budget ? [{ key: "budget", label: "budget", get: (t) => t.budget }] : []),
    { key: "duration", label: "duration (s)", get: (t) => t.duration },
    { key: "arch", label: "arch", get: (t) => archText(t.arch) },
    { key: "error", label: "error", get: (t) => t.error },
  ];
}

// The table holds one page of rows around the view, fetched sorted and filtered from the server
// (/api/exp/N/rows), between two spacer rows as tall as the rows above and below it: scrolling
// through 20,000 trials keeps a hundred rows in the page, and a new trial costs one small fetch.
const ROW_HEIGHT = 24;  // px, fixed by style.css (tbody td height)
const PAGE_ROWS = 120;  // rows fetched at a time: a few screens
const table = { key: null, version: null, offset: 0, rows: [], total: 0, n: 0, asked: 0, pending: null };

function tableKey() {
  return `${state.current}|${state.sort.key}|${state.sort.desc ? 1 : 0}|${state.filter}`;
}

function visibleRange() {
  const box = $("trials-scroll");
  const head = $("trials").tHead.offsetHeight || ROW_HEIGHT;
  const first = Math.max(0, Math.floor((box.scrollTop - head) / ROW_HEIGHT));
  const count = Math.ceil(box.clientHeight / ROW_HEIGHT) + 1;
  return [first, first + count];
}

// Fetch the page around the view when the loaded one does not cover it (or is out of date).
async function loadRows(force) {
  const d = state.data;
  if (!d) return;
  const [first, last] = visibleRange();
  const key = tableKey();
  const loadedEnd = table.offset + table.rows.length;
  const covered = table.key === key && first >= table.offset &&
    (last <= loadedEnd || loadedEnd >= table.total);
  if (!force && covered && table.version === d.version) return;
  const offset = Math.max(0, first - Math.floor((PAGE_ROWS - (last - first)) / 2));
  const ask = ++table.asked;  // only the latest answer is drawn
  const q = new URLSearchParams({ sort: state.sort.key, desc: state.sort.desc ? "1" : "0",
    status: state.filter, offset: String(offset), limit: String(PAGE_ROWS) });
  const page = await getJSON(`/api/exp/${state.current}/rows?${q}`);
  if (ask !== table.asked || key !== tableKey()) return;
  Object.assign(table, { key, version: page.version, offset: page.offset, rows: page.rows,
    total: page.total, n: page.n_trials });
  renderTable(d);
}

function renderHead(d) {
  const head = el("tr");
  for (const c of columns(d)) {
    const cls = state.sort.key === c.key ? (state.sort.desc ? "sorted-desc" : "sorted-asc") : "";
    head.append(el("th", { class: cls, "data-key": c.key, onclick: () => sortBy(c.key) }, c.label));
  }
  $("trials").tHead.replaceChildren(head);
}

function spacer(rows, span) {
  const td = el("td", { colspan: span });
  td.style.height = `${rows * ROW_HEIGHT}px`;
  return el("tr", { class: "pad", "aria-hidden": "true" }, td);
}

function renderTable(d) {
  const cols = columns(d);
  const filter = $("status-filter");
  fillSelect(filter, ["", ...Object.keys(d.counts)], state.filter);
  filter.options[0].textContent = "all";
  renderHead(d);
  const body = el("tbody");
  body.append(spacer(table.offset, cols.length));
  for (const t of table.rows) {
    const tr = el("tr", { class: `${t.status}${t.id === state.selected ? " selected" : ""}`, "data-id": t.id,
      onclick: () => showTrial(t.id) });
    for (const c of cols) {
      const v = c.get(t);
      const cls = c.key === "arch" ? "arch" : c.key === "error" ? "error" : c.key === "status" ? "status-" + t.status : "";
      tr.append(el("td", { class: cls, title: c.key === "arch" || c.key === "error" ? fmt(v) : "" }, fmt(v)));
    }
    body.append(tr);
  }
  body.append(spacer(Math.max(0, table.total - table.offset - table.rows.length), cols.length));
  $("trials").tBodies[0].replaceWith(body);
  $("table-count").textContent = `${table.total} of ${table.n} trials`;
  $("table-count").className = "meta";
  document.body.setAttribute("data-table-version", table.version || "");
  document.body.setAttribute("data-trials", String(table.n));  // with the rows, in one task
  performance.mark("nasx:table");
}

function sortBy(key) {
  state.sort = { key, desc: state.sort.key === key ? !state.sort.desc : key !== "id" };
  $("trials-scroll").scrollTop = 0;
  renderHead(state.data);
  loadRows(true);
}

async function showTrial(id) {
  state.selected = id;
  const i = state.current;
  const t = await getJSON(`/api/exp/${i}/trial/${id}`);
  const box = $("detail");
  box.hidden = false;
  const arch = el("table", {}, el("tbody", {}, ...Object.entries(t.arch).map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {}, JSON.stringify(v))))));
  const metrics = el("table", {}, el("tbody", {}, ...Object.entries(t.metrics || {}).map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {}, fmt(v))))));
  const right = el("div", {});
  if (t.intermediates && t.intermediates.length) {
    const img = el("img", { alt: "intermediate metrics", id: "trial-curve" });
    right.append(el("h2", {}, "Curve"), img);
    setImg(img, chartURL(i, "trial_curve", { trial: id }));
  }
  if (t.cells && t.cells.length) {
    const img = el("img", { alt: "cells of this arch", id: "trial-cells" });
    right.append(el("h2", {}, "Cells"), img);
    setImg(img, chartURL(i, "cells", { trial: id }));
  }
  if (t.error) right.append(el("h2", {}, "Error"), el("pre", { class: "error", id: "trial-error" }, t.error));
  right.append(el("h2", {}, "Log"), el("pre", { id: "trial-log" }, t.log || "(empty)"));
  box.replaceChildren(
    el("button", { class: "close", title: "close", onclick: () => { box.hidden = true; state.selected = null; } }, "\u00d7"),
    el("h2", {}, `Trial ${t.id} · ${t.status}${t.metric != null ? " · " + fmt(t.metric) : ""}`),
    el("div", { class: "cols" }, el("div", {}, el("h2", {}, "Arch"), arch, el("h2", {}, "Metrics"), metrics), right));
  for (const tr of $("trials").tBodies[0].rows) tr.classList.toggle("selected", tr.dataset.id === String(id));
}

// ------------------------------------------------------------------ polling
function select(index) {
  state.current = index;
  state.selected = null;
  $("detail").hidden = true;
  const url = new URL(location);
  url.searchParams.set("exp", index);
  history.replaceState(null, "", url);
  $("trials-scroll").scrollTop = 0;
  refresh(true);
}

// Every second: the experiments' summaries (a few hundred bytes each, kept per version on the
// server); when the one shown changed, its status, charts (their own, slower version) and the
// rows in view are fetched again; nothing else.
async function refresh(force) {
  try {
    state.experiments = await getJSON("/api/experiments");
    $("live").className = "";
  } catch (e) {
    $("live").className = "stale";
    return;
  }
  let openTrial = null;
  if (state.current == null) {  // first load: ?exp=N (or all) and ?trial=ID pick what to show
    const params = new URL(location).searchParams;
    const asked = params.get("exp");
    state.current = asked === "all" ? "all" : asked != null && state.experiments[+asked] ? +asked : 0;
    if (/^[0-9]+$/.test(params.get("trial") || "")) openTrial = +params.get("trial");
  }
  renderTabs();
  const compare = state.current === "all";
  $("compare").hidden = !compare;
  $("experiment").hidden = compare;
  const changed = {};
  for (const e of state.experiments) {
    changed[e.index] = state.versions[e.index] !== e.version || state.chartVersions[e.index] !== e.chart_version;
    state.versions[e.index] = e.version;
    state.chartVersions[e.index] = e.chart_version;
  }
  if (compare) { if (force || Object.values(changed).some(Boolean)) renderCompare(); return; }
  const e = state.experiments[state.current];
  if (!e) return;
  if (e.error) { $("status").replaceChildren(el("h2", {}, e.name), el("pre", { class: "error" }, e.error)); return; }
  if (!force && !changed[state.current] && state.data) return;
  const dataChanged = force || !state.data || state.data.version !== e.version;
  state.data = e;
  document.title = `nasx · ${e.name}`;
  renderCharts(e);
  document.body.setAttribute("data-chart-version", e.chart_version);
  if (!dataChanged) return;  // only the charts moved on
  renderStatus(e);
  await loadRows(true);
  document.body.setAttribute("data-version", e.version);
  if (openTrial != null) await showTrial(openTrial);
  else if (state.selected != null && !$("detail").hidden) await showTrial(state.selected);  // live log
}

const POLL_MS = 1000;

// A poll every POLL_MS from the start of the last one (not from its end: a refresh that took
// half a second on a busy machine would otherwise stretch the period, and the lag, by as much).
async function poll() {
  const start = performance.now();
  try { await refresh(false); } finally {
    setTimeout(poll, Math.max(100, POLL_MS - (performance.now() - start)));
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("history-metric").addEventListener("change", () => renderCharts(state.data));
  $("pareto-x").addEventListener("change", () => renderCharts(state.data));
  $("pareto-xdir").addEventListener("change", () => renderCharts(state.data));
  $("status-filter").addEventListener("change", (ev) => {
    state.filter = ev.target.value;
    $("trials-scroll").scrollTop = 0;
    loadRows(true);
  });
  let scrolling = false;  // at most one look at the view per frame while scrolling
  $("trials-scroll").addEventListener("scroll", () => {
    if (scrolling) return;
    scrolling = true;
    requestAnimationFrame(() => { scrolling = false; loadRows(false); });
  }, { passive: true });
  refresh(true).finally(() => setTimeout(poll, POLL_MS));
});
