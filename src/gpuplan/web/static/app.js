/* gpuplan web page: the form, the ranked plans, the charts and the exports.
 *
 * Plain JavaScript, no libraries, no build step, nothing loaded from elsewhere (the page is
 * served with a strict CSP: script-src 'self', style-src 'self'). Every string from the API
 * reaches the page through textContent or an attribute, never parsed as HTML.
 */
"use strict";

(function () {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const CUSTOM_MODEL = "__custom__";
  const DEFAULT_MODEL = "llama-3.1-8b";

  const state = {
    models: [],
    gpus: [],
    providers: [],
    request: null,        // {kind: "train"|"serve", body: {...}}: the request behind `result`
    result: null,         // the PlanResult shown
    selectedRank: null,
    priceGpuChosen: false, // the user picked the price chart's GPU by hand
    offersCache: new Map(),
    priceToken: 0,
  };

  // ---- small helpers ---------------------------------------------------------------------

  function $(id) { return document.getElementById(id); }

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function svg(tag, attrs, children) {
    const node = document.createElementNS(SVG_NS, tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function setAttrs(node, attrs) {
    if (!attrs) return;
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = String(v);
      else if (k === "class") node.setAttribute("class", v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
  }

  function append(node, children) {
    if (children === null || children === undefined) return;
    if (!Array.isArray(children)) children = [children];
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  function isNum(x) { return typeof x === "number" && Number.isFinite(x); }

  // ---- numbers in and out ----------------------------------------------------------------

  const SUFFIX = { "": 1, k: 1e3, m: 1e6, b: 1e9, g: 1e9, t: 1e12, p: 1e15 };
  const QUANTITY = /^\s*([+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)\s*([kmbgtp]?)\s*$/i;

  /** '1e11', '100B', '15T', '2.5k' -> a positive finite number (like gpuplan.units.parse_quantity). */
  function parseQuantity(text, what) {
    const m = QUANTITY.exec(String(text));
    if (!m) throw new Error(`${what}: "${text}" is not a number (examples: 1e11, 100B, 15T, 2.5k)`);
    const value = parseFloat(m[1]) * SUFFIX[m[2].toLowerCase()];
    if (!Number.isFinite(value)) throw new Error(`${what} must be a finite number`);
    if (value <= 0) throw new Error(`${what} must be positive`);
    return value;
  }

  /** An optional positive number from an <input>: null when blank. */
  function optionalNumber(id, what) {
    const raw = $(id).value.trim();
    if (raw === "") return null;
    return parseQuantity(raw, what);
  }

  function optionalInt(id, what) {
    const v = optionalNumber(id, what);
    if (v === null) return null;
    if (!Number.isInteger(v)) throw new Error(`${what} must be a whole number`);
    return v;
  }

  function fmtQty(x) {
    if (!isNum(x)) return "–";
    const units = [[1e15, "P"], [1e12, "T"], [1e9, "B"], [1e6, "M"], [1e3, "k"]];
    for (const [v, s] of units) {
      if (Math.abs(x) >= v) return `${trim(x / v)}${s}`;
    }
    return trim(x);
  }

  function trim(x) {
    const a = Math.abs(x);
    const digits = a >= 100 ? 0 : a >= 10 ? 1 : 2;
    return Number(x.toFixed(digits)).toString();
  }

  function fmtUsd(x) {
    if (!isNum(x)) return "–";
    const a = Math.abs(x);
    if (a >= 1e9) return `$${trim(x / 1e9)}B`;
    if (a >= 1e7) return `$${trim(x / 1e6)}M`;
    if (a >= 100) return "$" + Math.round(x).toLocaleString("en-US");
    if (a >= 1) return "$" + x.toFixed(2);
    if (a === 0) return "$0";
    return "$" + x.toPrecision(2);
  }

  function fmtUsdShort(x) {
    if (!isNum(x)) return "";
    if (x === 0) return "$0";
    const a = Math.abs(x);
    if (a >= 1e9) return `$${trim(x / 1e9)}B`;
    if (a >= 1e6) return `$${trim(x / 1e6)}M`;
    if (a >= 1e3) return `$${trim(x / 1e3)}k`;
    if (a >= 1) return `$${trim(x)}`;
    return `$${x.toPrecision(2)}`;
  }

  function fmtHours(h) {
    if (!isNum(h)) return "–";
    if (h < 1) return `${Math.round(h * 60)} min`;
    if (h < 48) return `${h.toFixed(1)} h`;
    return `${(h / 24).toFixed(1)} d`;
  }

  function fmtMs(ms) {
    if (!isNum(ms)) return "–";
    return ms >= 100 ? `${Math.round(ms)} ms` : `${ms.toFixed(1)} ms`;
  }

  function fmtPricing(p) { return String(p || "").replace(/_/g, "-"); }

  function layoutText(l) {
    if (!l) return "–";
    const parts = [];
    for (const k of ["tp", "pp", "cp", "ep", "dp"]) {
      if (l[k] && (l[k] > 1 || k === "dp")) parts.push(`${k.toUpperCase()}${l[k]}`);
    }
    if (isNum(l.zero) && l.zero > 0) parts.push(`ZeRO-${l.zero}`);
    return parts.join(" ");
  }

  function nodesText(p) {
    const per = isNum(p.gpus_per_node) ? trim(p.gpus_per_node) : "?";
    return `${p.nodes}×${per}`;
  }

  function tpot(p) {
    const a = p.assumptions || {};
    return isNum(a.tpot_ms) ? a.tpot_ms : null;
  }

  // ---- API -------------------------------------------------------------------------------

  async function api(path, body) {
    const init = body === undefined ? { headers: { accept: "application/json" } } : {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
    };
    let res;
    try {
      res = await fetch(path, init);
    } catch (e) {
      throw new Error("cannot reach the gpuplan server: is `gpuplan web` still running?");
    }
    if (!res.ok) throw new Error(await errorText(res));
    return res;
  }

  async function getJson(path) { return (await api(path)).json(); }
  async function postJson(path, body) { return (await api(path, body)).json(); }

  async function errorText(res) {
    let detail = "";
    try {
      const data = await res.json();
      detail = typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail);
    } catch (e) {
      detail = res.statusText;
    }
    return `${res.status}: ${String(detail || "request failed").replace(/\s+/g, " ").trim()}`;
  }

  // ---- the form: lists ---------------------------------------------------------------------

  async function loadLists() {
    const jobs = [
      getJson("/api/health").then(fillHealth),
      getJson("/api/models").then(fillModels),
      getJson("/api/gpus").then(fillGpus),
      getJson("/api/providers").then(fillProviders),
    ];
    const outcomes = await Promise.allSettled(jobs);
    const failed = outcomes.filter((o) => o.status === "rejected");
    if (failed.length) showError(`could not load the lists: ${failed[0].reason.message}`);
  }

  function fillHealth(h) {
    const info = $("catalog-info");
    const where = h.catalog === "bundled" ? "bundled catalog" : "your store";
    info.textContent = `${Number(h.offers).toLocaleString("en-US")} offers · ${h.providers} providers · ${where}`;
    info.title = `${h.gpus} GPU types; status ${h.status}`;
  }

  function fillModels(models) {
    state.models = models;
    const select = $("model");
    const previous = select.value || DEFAULT_MODEL;
    clear(select);
    for (const m of models) {
      const label = m.display_name && m.display_name !== m.id ? `${m.id} (${m.display_name}, ${fmtQty(m.params)})`
        : `${m.id} (${fmtQty(m.params)})`;
      select.appendChild(el("option", { value: m.id, text: label }));
    }
    select.appendChild(el("option", { value: CUSTOM_MODEL, text: "custom (parameters)" }));
    select.value = models.some((m) => m.id === previous) ? previous : (models.length ? models[0].id : CUSTOM_MODEL);
    onModelChange();
  }

  function fillGpus(gpus) {
    state.gpus = gpus;
    const gpu = $("gpu");
    clear(gpu);
    gpu.appendChild(el("option", { value: "", text: "any GPU" }));
    const price = $("price-gpu");
    clear(price);
    for (const g of gpus) {
      const label = `${g.id} (${trim(g.memory_gb)} GB${g.vendor ? ", " + g.vendor : ""})`;
      gpu.appendChild(el("option", { value: g.id, text: label }));
      price.appendChild(el("option", { value: g.id, text: g.id }));
    }
    if (gpus.some((g) => g.id === "H100-SXM")) price.value = "H100-SXM";
  }

  function fillProviders(providers) {
    state.providers = providers;
    const box = $("exclude");
    clear(box);
    for (const p of providers) {
      const input = el("input", { type: "checkbox", value: p.id, name: "exclude" });
      input.addEventListener("change", updateExcludeCount);
      box.appendChild(el("label", { title: p.kind ? `${p.kind}` : null }, [input, ` ${p.name || p.id}`]));
    }
    updateExcludeCount();
  }

  function excluded() {
    return Array.from($("exclude").querySelectorAll("input[type=checkbox]:checked")).map((i) => i.value);
  }

  function updateExcludeCount() {
    const n = excluded().length;
    $("exclude-count").textContent = n ? `(${n} excluded)` : `(none of ${state.providers.length})`;
  }

  function workload() {
    return $("workload-serve").checked ? "serve" : "train";
  }

  function onWorkloadChange() {
    const serve = workload() === "serve";
    $("train-fields").hidden = serve;
    $("serve-fields").hidden = !serve;
    $("deadline-row").hidden = serve;
  }

  function onModelChange() {
    $("params-row").hidden = $("model").value !== CUSTOM_MODEL;
  }

  // ---- the form: the request body ----------------------------------------------------------

  function buildBody(kind) {
    const body = {};
    if ($("model").value === CUSTOM_MODEL) {
      const raw = $("params").value.trim();
      if (!raw) throw new Error("parameters: give a parameter count, e.g. 7B");
      body.params = parseQuantity(raw, "parameters");
    } else {
      body.model = $("model").value;
    }
    const constraints = {};
    const budget = optionalNumber("budget", "budget");
    if (budget !== null) constraints.budget_usd = budget;
    const gpu = $("gpu").value;
    if (gpu) constraints.gpus = [gpu];
    const ex = excluded();
    if (ex.length) constraints.exclude = ex;
    if ($("no-spot").checked) constraints.no_spot = true;

    if (kind === "train") {
      const tokens = $("tokens").value.trim();
      if (!tokens) throw new Error("tokens: how many training tokens? e.g. 1e11 or 100B");
      body.tokens = parseQuantity(tokens, "tokens");
      body.method = $("method").value;
      body.precision = $("train-precision").value;
      const seq = optionalInt("seq-len", "sequence length");
      if (seq !== null) body.seq_len = seq;
      const deadline = optionalNumber("deadline", "deadline");
      if (deadline !== null) constraints.deadline_hours = deadline;
    } else {
      const tpm = $("tokens-per-month").value.trim();
      if (tpm) body.tokens_per_month = parseQuantity(tpm, "tokens / month");
      else {
        const rps = $("rps").value.trim();
        if (!rps) throw new Error("give requests / s or tokens / month");
        body.requests_per_s = parseQuantity(rps, "requests / s");
      }
      const inLen = optionalInt("input-len", "input tokens");
      if (inLen !== null) body.input_len = inLen;
      const outLen = optionalInt("output-len", "output tokens");
      if (outLen !== null) body.output_len = outLen;
      body.precision = $("serve-precision").value;
      body.engine = $("engine").value;
      const months = optionalNumber("months", "horizon");
      if (months !== null) body.horizon_months = months;
    }
    body.constraints = constraints;
    const limit = optionalInt("limit", "plans to show");
    if (limit !== null) {
      if (limit > 200) throw new Error("plans to show: at most 200");
      body.limit = limit;
    }
    return body;
  }

  function showError(message) {
    const box = $("form-error");
    box.textContent = String(message).replace(/\s+/g, " ").trim();
    box.hidden = !message;
  }

  async function onSubmit(event) {
    event.preventDefault();
    showError("");
    const kind = workload();
    let body;
    try {
      body = buildBody(kind);
    } catch (e) {
      showError(e.message);
      return;
    }
    const button = $("submit");
    button.disabled = true;
    const label = button.textContent;
    button.textContent = "Planning…";
    document.body.classList.add("busy");
    try {
      const result = await postJson(`/api/plan/${kind}`, body);
      state.request = { kind, body };
      showResult(result);
    } catch (e) {
      showError(e.message);
    } finally {
      button.disabled = false;
      button.textContent = label;
      document.body.classList.remove("busy");
    }
  }

  // ---- the result ----------------------------------------------------------------------------

  function showResult(result) {
    state.result = result;
    state.priceGpuChosen = false;
    $("empty-state").hidden = true;
    $("result").hidden = false;

    const s = result.summary || {};
    const title = result.workload === "train"
      ? `Training ${result.model}: ${fmtQty(s.tokens)} tokens${s.method && s.method !== "full" ? ` (${s.method})` : ""}`
      : `Serving ${result.model}: ${trim(s.average_requests_per_s)} req/s average, ${trim(s.horizon_months)} month(s)`;
    $("result-title").textContent = title;
    const n = result.plans.length;
    const count = $("result-count");
    count.textContent = `${n} plan${n === 1 ? "" : "s"}`;
    count.dataset.count = String(n);
    if (isNum(s.candidates)) count.title = `${s.candidates} candidate offers, ${s.providers_ranked ?? "?"} providers ranked`;

    const why = $("why");
    clear(why);
    for (const line of result.why || []) why.appendChild(el("li", { text: line }));
    if (!n) {
      for (const [reason, k] of Object.entries(result.rejected || {})) {
        why.appendChild(el("li", { class: "muted", text: `not ranked: ${reason} (${k})` }));
      }
    }

    state.selectedRank = n ? result.plans[0].rank : null;
    renderTable();
    renderScatter();
    renderSelected();
  }

  function frontSet() { return new Set((state.result && state.result.pareto_ranks) || []); }

  function selectedPlan() {
    if (!state.result || state.selectedRank === null) return null;
    return state.result.plans.find((p) => p.rank === state.selectedRank) || null;
  }

  function select(rank) {
    if (!state.result || rank === state.selectedRank) return;
    state.selectedRank = rank;
    for (const tr of $("plan-table").tBodies[0].rows) {
      tr.classList.toggle("selected", Number(tr.dataset.rank) === rank);
      tr.setAttribute("aria-selected", String(Number(tr.dataset.rank) === rank));
    }
    markScatterSelection();
    renderSelected();
  }

  // ---- table ---------------------------------------------------------------------------------

  function columns(kind) {
    const common = [
      { h: "#", num: true, v: (p) => String(p.rank) },
      { h: "Provider", cls: "provider", v: (p, front) => [p.provider_name || p.provider,
        front.has(p.rank) ? el("span", { class: "badge front", text: "front" }) : null] },
      { h: "GPU", v: (p) => p.gpu },
      { h: "Nodes × GPUs", num: true, v: (p) => nodesText(p) },
      { h: "Pricing", v: (p) => fmtPricing(p.pricing) },
    ];
    const specific = kind === "train" ? [
      { h: "Layout", v: (p) => {
        const l = p.layout || {};
        return [layoutText({ ...l, zero: null }),
          isNum(l.zero) && l.zero > 0 ? el("span", { class: "sub muted", text: `ZeRO-${l.zero}` }) : null];
      } },
      { h: "Wall time", num: true, v: (p) => fmtHours(p.wall_hours) },
    ] : [
      { h: "Replicas", num: true, v: (p) => (p.replicas === null || p.replicas === undefined ? "–" : String(p.replicas)) },
      { h: "$/M out tok", num: true, v: (p) => fmtUsd(p.cost_per_million_output_tokens_usd) },
      { h: "TPOT", num: true, v: (p) => fmtMs(tpot(p)) },
      { h: "RTT", num: true, v: (p) => (isNum(p.network_rtt_ms) ? fmtMs(p.network_rtt_ms) : "–") },
    ];
    const tail = [
      { h: "Expected cost", num: true, v: (p) => fmtUsd(p.cost_usd) },
      { h: "p90 cost", num: true, v: (p) => fmtUsd(p.cost_p90_usd) },
      { h: "Risk", num: true, v: (p) => (isNum(p.risk) ? p.risk.toFixed(2) : "–") },
      { h: "Price date", cls: "date", v: (p) => {
        const asOf = (p.offer && p.offer.as_of) || "";
        return [asOf, el("span", { class: "sub muted" }, [p.confidence || "",
          p.stale ? el("span", { class: "badge stale", text: "stale", title: `${p.price_age_days} days old` }) : null])];
      } },
    ];
    return common.concat(specific, tail);
  }

  function renderTable() {
    const result = state.result;
    const table = $("plan-table");
    const cols = columns(result.workload);
    const thead = table.tHead;
    clear(thead);
    thead.appendChild(el("tr", null, cols.map((c) => el("th", { class: c.num ? "num" : null, scope: "col", text: c.h }))));
    const tbody = table.tBodies[0];
    clear(tbody);
    const front = frontSet();
    if (!result.plans.length) {
      tbody.appendChild(el("tr", { class: "empty" }, el("td", { colspan: cols.length, class: "muted",
        text: "No offer meets the constraints: relax the budget, deadline or GPU choice." })));
      return;
    }
    for (const p of result.plans) {
      const tr = el("tr", { class: "plan-row" + (p.rank === state.selectedRank ? " selected" : ""),
        "data-rank": p.rank, tabindex: 0, "aria-selected": String(p.rank === state.selectedRank) });
      for (const c of cols) {
        const td = el("td", { class: [c.num ? "num" : "", c.cls || ""].join(" ").trim() || null }, c.v(p, front));
        tr.appendChild(td);
      }
      const title = (p.risk_notes || []).concat(p.warnings || []).join("\n");
      if (title) tr.title = title;
      tr.addEventListener("click", () => select(p.rank));
      tr.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); select(p.rank); }
      });
      tbody.appendChild(tr);
    }
  }

  // ---- scales and ticks ------------------------------------------------------------------------

  function scale(values, lo, hi, forceLinear) {
    let min = Math.min(...values);
    let max = Math.max(...values);
    const log = !forceLinear && min > 0 && max / min > 20;
    if (log) {
      min /= 1.15; max *= 1.15;
      const a = Math.log10(min), b = Math.log10(max);
      return { log, min, max, ticks: logTicks(min, max), f: (v) => lo + (Math.log10(v) - a) / (b - a) * (hi - lo) };
    }
    if (min === max) {
      const pad = min === 0 ? 1 : Math.abs(min) * 0.1;
      min -= pad; max += pad;
    } else {
      const pad = (max - min) * 0.08;
      min = min - pad < 0 && min >= 0 ? 0 : min - pad;
      max += pad;
    }
    const ticks = linearTicks(min, max, 5);
    return { log, min, max, ticks, f: (v) => lo + (v - min) / (max - min) * (hi - lo) };
  }

  function linearTicks(min, max, count) {
    const span = max - min;
    const raw = span / count;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => span / s <= count + 1) || 10 * mag;
    const out = [];
    for (let t = Math.ceil(min / step) * step; t <= max + step * 1e-9; t += step) out.push(Number(t.toPrecision(12)));
    return out;
  }

  function logTicks(min, max) {
    const out = [];
    const lo = Math.floor(Math.log10(min)), hi = Math.ceil(Math.log10(max));
    const mults = hi - lo > 4 ? [1] : [1, 2, 5];
    for (let d = lo; d <= hi; d++) {
      for (const m of mults) {
        const t = m * Math.pow(10, d);
        if (t >= min && t <= max) out.push(Number(t.toPrecision(12)));
      }
    }
    if (out.length < 2) return [min, max].map((v) => Number(v.toPrecision(2)));
    return out;
  }

  function chartWidth(container, fallback) {
    const w = container.clientWidth;
    return Math.max(320, Math.round(w > 0 ? w : fallback));
  }

  function emptyChart(container, width, height, message) {
    const s = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": message });
    s.appendChild(svg("text", { x: width / 2, y: height / 2, "text-anchor": "middle", class: "empty-note", text: message }));
    container.appendChild(s);
  }

  // ---- scatter: cost vs time ------------------------------------------------------------------

  function renderScatter() {
    const box = $("scatter");
    clear(box);
    const result = state.result;
    const serve = result.workload === "serve";
    const xOf = serve ? tpot : (p) => p.wall_hours;
    const pts = result.plans.filter((p) => isNum(xOf(p)) && isNum(p.cost_usd) && p.cost_usd > 0 && xOf(p) > 0);
    const width = chartWidth(box, 720);
    const height = Math.round(Math.min(380, Math.max(260, width * 0.42)));
    if (!pts.length) {
      emptyChart(box, width, 70, result.plans.length ? "no plan has a time to plot" : "no plans to plot");
      return;
    }
    const m = { left: 64, right: 18, top: 14, bottom: 44 };
    const xs = scale(pts.map(xOf), m.left, width - m.right);
    const ys = scale(pts.map((p) => p.cost_usd), height - m.bottom, m.top);
    const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img",
      "aria-label": serve ? "expected cost versus time per output token, one dot per plan"
        : "expected cost versus wall time, one dot per plan" });

    const grid = svg("g", { class: "grid" });
    for (const t of xs.ticks) {
      const x = xs.f(t);
      grid.appendChild(svg("line", { class: "gridline", x1: x, x2: x, y1: m.top, y2: height - m.bottom }));
      grid.appendChild(svg("text", { x, y: height - m.bottom + 15, "text-anchor": "middle",
        text: serve ? fmtQty(t) : fmtQty(t) }));
    }
    for (const t of ys.ticks) {
      const y = ys.f(t);
      grid.appendChild(svg("line", { class: "gridline", x1: m.left, x2: width - m.right, y1: y, y2: y }));
      grid.appendChild(svg("text", { x: m.left - 6, y: y + 4, "text-anchor": "end", text: fmtUsdShort(t) }));
    }
    root.appendChild(grid);
    root.appendChild(svg("line", { class: "axis", x1: m.left, x2: width - m.right, y1: height - m.bottom, y2: height - m.bottom }));
    root.appendChild(svg("line", { class: "axis", x1: m.left, x2: m.left, y1: m.top, y2: height - m.bottom }));
    const xLabel = (serve ? "time per output token, ms" : "expected wall time, hours") + (xs.log ? " (log scale)" : "");
    root.appendChild(svg("text", { class: "title", x: m.left + (width - m.left - m.right) / 2, y: height - 8,
      "text-anchor": "middle", text: xLabel }));
    const yLabel = "expected cost, USD" + (ys.log ? " (log)" : "");
    root.appendChild(svg("text", { class: "title", x: 0, y: 0, "text-anchor": "middle",
      transform: `translate(14 ${m.top + (height - m.top - m.bottom) / 2}) rotate(-90)`, text: yLabel }));

    const front = frontSet();
    const frontPts = pts.filter((p) => front.has(p.rank)).sort((a, b) => xOf(a) - xOf(b) || a.cost_usd - b.cost_usd);
    if (frontPts.length > 1) {
      const d = frontPts.map((p, i) => `${i ? "L" : "M"}${xs.f(xOf(p)).toFixed(1)},${ys.f(p.cost_usd).toFixed(1)}`).join(" ");
      root.appendChild(svg("path", { class: "pareto", d }));
    }

    const layer = svg("g", { class: "points" });
    // Others first, the front on top of them.
    const ordered = pts.filter((p) => !front.has(p.rank)).concat(pts.filter((p) => front.has(p.rank)));
    for (const p of ordered) {
      const onFront = front.has(p.rank);
      const c = svg("circle", {
        class: "point " + (onFront ? "front" : "plan"),
        cx: xs.f(xOf(p)).toFixed(1), cy: ys.f(p.cost_usd).toFixed(1), r: onFront ? 6 : 4.5,
        "data-rank": p.rank, tabindex: 0, role: "button",
        "aria-label": `select plan ${p.rank}`,
      });
      const time = serve ? `TPOT ${fmtMs(xOf(p))}` : fmtHours(p.wall_hours);
      c.appendChild(svg("title", { text: `#${p.rank} ${p.provider_name || p.provider} ${p.gpu} ${nodesText(p)} `
        + `(${fmtPricing(p.pricing)}): ${fmtUsd(p.cost_usd)} expected, p90 ${fmtUsd(p.cost_p90_usd)}, ${time}`
        + (onFront ? " · Pareto front" : "") }));
      c.addEventListener("click", () => select(p.rank));
      c.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); select(p.rank); }
      });
      layer.appendChild(c);
    }
    root.appendChild(layer);
    box.appendChild(root);
    markScatterSelection();
  }

  function markScatterSelection() {
    const layer = $("scatter").querySelector("g.points");
    if (!layer) return;
    let chosen = null;
    for (const c of layer.querySelectorAll("circle.point")) {
      const on = Number(c.getAttribute("data-rank")) === state.selectedRank;
      c.classList.toggle("selected", on);
      c.setAttribute("r", on ? 7.5 : c.classList.contains("front") ? 6 : 4.5);
      if (on) chosen = c;
    }
    if (chosen) layer.appendChild(chosen); // draw it on top
  }

  // ---- selected plan ---------------------------------------------------------------------------

  function renderSelected() {
    const box = $("selected-plan");
    clear(box);
    const p = selectedPlan();
    const breakdown = $("breakdown");
    clear(breakdown);
    for (const b of document.querySelectorAll("button.export")) b.disabled = !p;
    if (!p) {
      box.appendChild(el("p", { class: "muted", text: "No plan selected." }));
      renderPriceChart();
      return;
    }
    const serve = p.workload === "serve";
    const facts = [
      ["Rank", `#${p.rank}${frontSet().has(p.rank) ? " (Pareto front)" : ""}`],
      ["Provider", `${p.provider_name || p.provider} (${p.provider_kind || "?"})`],
      ["Instance", `${p.instance_type}, ${p.region}`],
      ["GPUs", `${p.nodes} node(s) × ${trim(p.gpus_per_node)} ${p.gpu} = ${p.gpus} GPUs, ${p.precision}`],
      ["Pricing", `${fmtPricing(p.pricing)}, ${fmtUsd(p.offer && p.offer.price_per_gpu_hour_usd)}/GPU-hour`],
    ];
    if (serve) {
      facts.push(["Replicas", `${p.replicas ?? "–"} × ${p.gpus_per_replica ?? "–"} GPU(s)`]);
      facts.push(["Throughput", `${fmtQty(p.output_tokens_per_s)} output tok/s, ${fmtUsd(p.cost_per_million_output_tokens_usd)}/M`]);
      const a = p.assumptions || {};
      facts.push(["Latency", `TTFT ${fmtMs(a.ttft_ms)}, TPOT ${fmtMs(a.tpot_ms)}`
        + (isNum(p.network_rtt_ms) ? `, RTT ${fmtMs(p.network_rtt_ms)}` : "")]);
    } else {
      facts.push(["Layout", layoutText(p.layout)]);
      facts.push(["Wall time", `${fmtHours(p.wall_hours)} expected, p90 ${fmtHours(p.wall_p90_hours)}`]);
    }
    facts.push(["Cost", `${fmtUsd(p.cost_usd)} expected, p90 ${fmtUsd(p.cost_p90_usd)}`]);
    facts.push(["GPU-hours", Math.round(p.gpu_hours).toLocaleString("en-US")]);
    facts.push(["Risk", isNum(p.risk) ? p.risk.toFixed(2) : "–"]);
    const offer = p.offer || {};
    facts.push(["Price as of", `${offer.as_of || "?"} (${p.confidence}${p.stale ? ", stale" : ""})`]);
    const dl = el("dl");
    for (const [k, v] of facts) { dl.appendChild(el("dt", { text: k })); dl.appendChild(el("dd", { text: v })); }
    box.appendChild(dl);
    const notes = (p.risk_notes || []).concat(p.warnings || []);
    if (notes.length) {
      box.appendChild(el("ul", { class: "notes small muted" }, notes.map((n) => el("li", { text: n }))));
    }
    renderBreakdown(p);
    syncPriceGpu(p.gpu);
  }

  function renderBreakdown(p) {
    const box = $("breakdown");
    clear(box);
    const cost = p.cost || {};
    const parts = Object.entries(cost).filter(([k, v]) => k.endsWith("_usd") && isNum(v));
    const width = chartWidth(box, 440);
    if (!parts.length) { emptyChart(box, width, 60, "no cost breakdown"); return; }
    const total = parts.reduce((s, [, v]) => s + v, 0);
    const rowH = 24, top = 22, labelW = 70, valueW = 110;
    const height = top + parts.length * rowH + 6;
    const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": "cost breakdown" });
    root.appendChild(svg("text", { class: "title", x: 0, y: 13, text: `Cost breakdown: ${fmtUsd(total)} expected` }));
    const max = Math.max(...parts.map(([, v]) => v), 1e-9);
    const barMax = width - labelW - valueW;
    parts.forEach(([k, v], i) => {
      const y = top + i * rowH;
      const name = k.replace(/_usd$/, "").replace(/_/g, " ");
      const g = svg("g", { class: "part" });
      g.appendChild(svg("text", { x: labelW - 8, y: y + 15, "text-anchor": "end", text: name }));
      const w = Math.max(v > 0 ? 2 : 0, (v / max) * barMax);
      const bar = svg("rect", { class: `bar part swatch-${i % 4}`, x: labelW, y: y + 4, width: w.toFixed(1), height: rowH - 8, rx: 2 });
      bar.appendChild(svg("title", { text: `${name}: ${fmtUsd(v)} (${total > 0 ? ((100 * v) / total).toFixed(1) : 0}%)` }));
      g.appendChild(bar);
      const pct = total > 0 ? ` · ${((100 * v) / total).toFixed(v / total < 0.01 && v > 0 ? 1 : 0)}%` : "";
      g.appendChild(svg("text", { class: "value", x: labelW + w + 6, y: y + 15, text: `${fmtUsd(v)}${pct}` }));
      root.appendChild(g);
    });
    box.appendChild(root);
  }

  // ---- price chart -----------------------------------------------------------------------------

  function syncPriceGpu(gpu) {
    const select = $("price-gpu");
    if (!state.priceGpuChosen && gpu && Array.from(select.options).some((o) => o.value === gpu)) select.value = gpu;
    renderPriceChart();
  }

  async function offersFor(gpu) {
    if (state.offersCache.has(gpu)) return state.offersCache.get(gpu);
    const data = await getJson(`/api/offers?gpu=${encodeURIComponent(gpu)}&limit=1000`);
    state.offersCache.set(gpu, data);
    return data;
  }

  async function renderPriceChart() {
    const box = $("price-chart");
    const gpu = $("price-gpu").value;
    const token = ++state.priceToken;
    if (!gpu) { clear(box); return; }
    let data;
    try {
      data = await offersFor(gpu);
    } catch (e) {
      if (token !== state.priceToken) return;
      clear(box);
      emptyChart(box, chartWidth(box, 440), 60, `could not load offers: ${e.message}`);
      return;
    }
    if (token !== state.priceToken) return; // a newer request won
    clear(box);
    const best = new Map();
    for (const o of data.offers || []) {
      if (!isNum(o.price_per_gpu_hour_usd)) continue;
      const cur = best.get(o.provider);
      if (!cur || o.price_per_gpu_hour_usd < cur.price_per_gpu_hour_usd) best.set(o.provider, o);
    }
    const rows = Array.from(best.values()).sort((a, b) => a.price_per_gpu_hour_usd - b.price_per_gpu_hour_usd);
    const width = chartWidth(box, 440);
    if (!rows.length) { emptyChart(box, width, 60, `no ${gpu} offers in the catalog`); return; }
    const plan = selectedPlan();
    const longest = Math.max(...rows.map((o) => Math.min(26, String(o.provider_name || o.provider).length)));
    const rowH = 22, top = 22, valueW = 130;
    const labelW = Math.round(Math.min(width * 0.42, Math.max(70, longest * 6.6 + 14)));
    const height = top + rows.length * rowH + 6;
    const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img",
      "aria-label": `cheapest ${gpu} price per GPU-hour by provider` });
    root.appendChild(svg("text", { class: "title", x: 0, y: 13,
      text: `Cheapest ${gpu} $/GPU-hour by provider (${data.count} offers)` }));
    const max = rows[rows.length - 1].price_per_gpu_hour_usd;
    const barMax = width - labelW - valueW;
    rows.forEach((o, i) => {
      const y = top + i * rowH;
      const name = o.provider_name || o.provider;
      const mine = plan && plan.provider === o.provider && plan.gpu === o.gpu;
      const g = svg("g", { class: "provider" });
      g.appendChild(svg("text", { x: labelW - 8, y: y + 15, "text-anchor": "end", text: clip(name, 26) }));
      const w = Math.max(2, (o.price_per_gpu_hour_usd / max) * barMax);
      const cls = "bar price" + (i === 0 ? " cheapest" : "") + (mine ? " selected" : "");
      const bar = svg("rect", { class: cls, x: labelW, y: y + 4, width: w.toFixed(1), height: rowH - 7, rx: 2,
        "data-provider": o.provider });
      bar.appendChild(svg("title", { text: `${name}: ${fmtUsd(o.price_per_gpu_hour_usd)}/GPU-hour, `
        + `${o.instance_type}, ${fmtPricing(o.pricing)}, ${o.region}, as of ${o.as_of} (${o.confidence})` }));
      g.appendChild(bar);
      g.appendChild(svg("text", { class: "value", x: labelW + w + 6, y: y + 15,
        text: `$${o.price_per_gpu_hour_usd.toFixed(2)} ${fmtPricing(o.pricing)}` }));
      root.appendChild(g);
    });
    box.appendChild(root);
  }

  function clip(text, n) { text = String(text); return text.length > n ? text.slice(0, n - 1) + "…" : text; }

  // ---- export ----------------------------------------------------------------------------------

  async function onExport(event) {
    const button = event.currentTarget;
    const target = button.dataset.target;
    const p = selectedPlan();
    if (!state.request || !p) return;
    showError("");
    const body = { [state.request.kind]: state.request.body, rank: p.rank };
    button.disabled = true;
    try {
      const res = await api(`/api/export/${encodeURIComponent(target)}`, body);
      const blob = await res.blob();
      const name = filenameFrom(res.headers.get("content-disposition"))
        || `${state.result.model}-${state.result.workload}-rank${p.rank}.${target}.yaml`;
      const url = URL.createObjectURL(new Blob([blob], { type: "application/yaml" }));
      const a = el("a", { href: url, download: name });
      a.hidden = true;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (e) {
      showError(`export failed: ${e.message}`);
    } finally {
      button.disabled = false;
    }
  }

  function filenameFrom(header) {
    if (!header) return null;
    const m = /filename="([^"]+)"/.exec(header);
    if (!m) return null;
    const safe = m[1].replace(/[^A-Za-z0-9._-]/g, "-");
    return safe || null;
  }

  // ---- wiring ----------------------------------------------------------------------------------

  let resizeTimer = null;
  function onResize() {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      if (!state.result) return;
      renderScatter();
      const p = selectedPlan();
      if (p) renderBreakdown(p);
      renderPriceChart();
    }, 150);
  }

  function init() {
    $("plan-form").addEventListener("submit", onSubmit);
    for (const r of document.querySelectorAll("input[name=workload]")) r.addEventListener("change", onWorkloadChange);
    $("model").addEventListener("change", onModelChange);
    $("price-gpu").addEventListener("change", () => { state.priceGpuChosen = true; renderPriceChart(); });
    for (const b of document.querySelectorAll("button.export")) b.addEventListener("click", onExport);
    window.addEventListener("resize", onResize);
    onWorkloadChange();
    onModelChange();
    loadLists();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
