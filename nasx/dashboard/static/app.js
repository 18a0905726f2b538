// nasx dashboard: polls the read-only JSON API and redraws. Every string from an experiment is
// inserted with textContent (never innerHTML), so labels, values and errors show as text.
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
  img.addEventListener("load", () => img.setAttribute("data-loaded", url), { once: true });
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
    setImg(img, chartURL(e.index, e.kind === "one-shot" ? "arch_weights" : "history", {}));
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
  const oneShot = d.kind === "one-shot";
  fillSelect($("history-metric"), d.metrics, "default");
  fillSelect($("pareto-x"), d.metrics.filter((m) => m !== "default"), "");
  $("chart-pareto").closest("figure").hidden = oneShot || d.metrics.length < 2;
  $("chart-curves").closest("figure").hidden = oneShot || !d.has_curves;
  if (oneShot) setImg($("chart-history"), chartURL(i, "arch_weights", {}));
  else setImg($("chart-history"), chartURL(i, "history", { metric: $("history-metric").value || "default" }));
  if (!oneShot && d.metrics.length > 1) setImg($("chart-pareto"), chartURL(i, "pareto", { x: $("pareto-x").value }));
  if (!oneShot && d.has_curves) setImg($("chart-curves"), chartURL(i, "curves", {}));
}

function columns(d) {
  const extra = d.metrics.filter((m) => m !== "default");
  return [
    { key: "id", label: "id", get: (t) => t.id },
    { key: "status", label: "status", get: (t) => t.status },
    { key: "metric", label: "metric", get: (t) => t.metric },
    ...extra.map((m) => ({ key: "m:" + m, label: m, get: (t) => (t.metrics || {})[m] })),
    { key: "duration", label: "duration (s)", get: (t) => t.duration },
    { key: "arch", label: "arch", get: (t) => archText(t.arch) },
    { key: "error", label: "error", get: (t) => t.error },
  ];
}

function renderTable(d) {
  const cols = columns(d);
  const filter = $("status-filter");
  fillSelect(filter, ["", ...Object.keys(d.counts)], state.filter);
  filter.options[0].textContent = "all";
  const head = el("tr");
  for (const c of cols) {
    const cls = state.sort.key === c.key ? (state.sort.desc ? "sorted-desc" : "sorted-asc") : "";
    head.append(el("th", { class: cls, "data-key": c.key, onclick: () => sortBy(c.key) }, c.label));
  }
  $("trials").tHead.replaceChildren(head);
  const col = cols.find((c) => c.key === state.sort.key) || cols[0];
  const rows = d.trials.filter((t) => !state.filter || t.status === state.filter);
  rows.sort((a, b) => {
    const x = col.get(a), y = col.get(b);
    if (x == null && y == null) return a.id - b.id;
    if (x == null) return 1;
    if (y == null) return -1;
    const r = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
    return (state.sort.desc ? -r : r) || a.id - b.id;
  });
  const body = el("tbody");
  for (const t of rows) {
    const tr = el("tr", { class: `${t.status}${t.id === state.selected ? " selected" : ""}`, "data-id": t.id,
      onclick: () => showTrial(t.id) });
    for (const c of cols) {
      const v = c.get(t);
      const cls = c.key === "arch" ? "arch" : c.key === "error" ? "error" : c.key === "status" ? "status-" + t.status : "";
      tr.append(el("td", { class: cls, title: c.key === "arch" || c.key === "error" ? fmt(v) : "" }, fmt(v)));
    }
    body.append(tr);
  }
  $("trials").tBodies[0].replaceWith(body);
  $("table-count").textContent = `${rows.length} of ${d.trials.length} trials`;
  $("table-count").className = "meta";
}

function sortBy(key) {
  state.sort = { key, desc: state.sort.key === key ? !state.sort.desc : key !== "id" };
  renderTable(state.data);
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
  renderTable(state.data);
}

// ------------------------------------------------------------------ polling
function select(index) {
  state.current = index;
  state.selected = null;
  $("detail").hidden = true;
  const url = new URL(location);
  url.searchParams.set("exp", index);
  history.replaceState(null, "", url);
  refresh(true);
}

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
  if (compare) { renderCompare(); return; }
  const e = state.experiments[state.current];
  if (!e) return;
  if (e.error) { $("status").replaceChildren(el("h2", {}, e.name), el("pre", { class: "error" }, e.error)); return; }
  if (!force && !changed[state.current] && state.data) return;
  state.data = await getJSON(`/api/exp/${state.current}`);
  state.versions[state.current] = state.data.version;
  state.chartVersions[state.current] = state.data.chart_version;
  document.title = `nasx · ${state.data.name}`;
  renderStatus(state.data);
  renderCharts(state.data);
  renderTable(state.data);
  document.body.setAttribute("data-version", state.data.version);
  document.body.setAttribute("data-chart-version", state.data.chart_version);
  document.body.setAttribute("data-trials", String(state.data.n_trials));
  if (openTrial != null) await showTrial(openTrial);
  else if (state.selected != null && !$("detail").hidden) await showTrial(state.selected);  // live log
}

document.addEventListener("DOMContentLoaded", () => {
  $("history-metric").addEventListener("change", () => renderCharts(state.data));
  $("pareto-x").addEventListener("change", () => renderCharts(state.data));
  $("status-filter").addEventListener("change", (ev) => { state.filter = ev.target.value; renderTable(state.data); });
  refresh(true);
  setInterval(() => refresh(false), 2000);
});
