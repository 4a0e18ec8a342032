/* gpuplan web page: the form, the recommendation, the ranked plans, the charts, the what-if and the exports.
 *
 * Plain JavaScript, no libraries, no build step, nothing loaded from elsewhere (the page is
 * served with a strict CSP: script-src 'self', style-src 'self'). Every string from the API
 * reaches the page through textContent or an attribute, never parsed as HTML.
 *
 * Presentation only: every number shown comes from the plan the API returned. The one piece of
 * arithmetic done here is the clearly labelled what-if, which rescales each plan's own cost
 * breakdown (see whatIfPlan); it estimates nothing and the planner is not involved.
 *
 * The request lives in the URL (?workload=train&model=...&tokens=1e12...): a link to the page
 * with those parameters fills the form and plans again, so it reproduces the plan for anyone.
 */
"use strict";

(function () {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const CUSTOM_MODEL = "__custom__";
  const DEFAULT_MODEL = "llama-3.1-8b";
  const MAX_PLANS = 200;
  const SLOW_TPOT_MS = 100; // slower than ~10 tokens/s per stream: below reading speed

  const state = {
    models: [],
    gpus: [],
    providers: [],
    request: null,        // {kind: "train"|"serve", body: {...}, query: "..."}: the request behind `result`
    result: null,         // the PlanResult shown
    selectedRank: null,
    priceGpuChosen: false, // the user picked the price chart's GPU by hand
    offersCache: new Map(),
    priceToken: 0,
    sort: { key: "rank", dir: 1 },
    expanded: new Set(),  // ranks whose "+N more places" list is open
    whatif: { price: 1, eff: 1, fail: 1, scope: "all" },
    pending: null,        // selection, sort and what-if from a link, applied to the next result
    listsReady: null,
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

  class FieldError extends Error {
    constructor(id, message) { super(message); this.field = id; }
  }

  // ---- numbers in and out ----------------------------------------------------------------

  const SUFFIX = { "": 1, k: 1e3, m: 1e6, b: 1e9, g: 1e9, t: 1e12, p: 1e15 };
  const QUANTITY = /^\s*([+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)\s*([kmbgtp]?)\s*$/i;
  const DURATION = /^\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*(m|min|h|hours?|d|days?|w|weeks?)?\s*$/i;
  const HOURS_PER = { "": 1, m: 1 / 60, min: 1 / 60, h: 1, hour: 1, hours: 1, d: 24, day: 24, days: 24, w: 168, week: 168, weeks: 168 };

  /** '1e11', '100B', '15T', '2.5k' -> a finite number >= 0 (like gpuplan.units.parse_quantity). */
  function parseQuantity(text, what, allowZero) {
    const m = QUANTITY.exec(String(text));
    if (!m) throw new Error(`${what}: "${text}" is not a number (examples: 1e11, 100B, 15T, 2.5k)`);
    const value = parseFloat(m[1]) * SUFFIX[m[2].toLowerCase()];
    if (!Number.isFinite(value)) throw new Error(`${what} must be a finite number`);
    if (value < 0 || (value === 0 && !allowZero)) throw new Error(`${what} must be positive`);
    return value;
  }

  /** '36', '36h', '14d', '2w', '90m' -> hours (like the CLI's --deadline). */
  function parseDuration(text, what) {
    const m = DURATION.exec(String(text));
    if (!m) throw new Error(`${what}: "${text}" is not a duration (examples: 36h, 14d, 2w; a plain number is hours)`);
    const hours = parseFloat(m[1]) * HOURS_PER[(m[2] || "").toLowerCase()];
    if (!(hours > 0) || !Number.isFinite(hours)) throw new Error(`${what} must be positive`);
    return hours;
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

  /** Two durations in the same unit: "17.5-45.8 d". */
  function fmtHoursRange(a, b) {
    if (!isNum(a) || !isNum(b)) return "–";
    if (b < 48) return `${a.toFixed(1)}–${b.toFixed(1)} h`;
    return `${(a / 24).toFixed(1)}–${(b / 24).toFixed(1)} days`;
  }

  function fmtDuration(h) {
    if (!isNum(h)) return "–";
    if (h < 48) return fmtHours(h);
    return `${(h / 24).toFixed(1)} days`;
  }

  function fmtMs(ms) {
    if (!isNum(ms)) return "–";
    return ms >= 100 ? `${Math.round(ms)} ms` : `${ms.toFixed(1)} ms`;
  }

  function fmtPricing(p) { return String(p || "").replace(/_/g, "-"); }

  /** Planner prose uses CLI words; the page shows "on-demand" rather than "on_demand". */
  function prose(text) { return String(text).replace(/\bon_demand\b/g, "on-demand"); }

  function layoutText(l) {
    if (!l) return "–";
    const parts = [];
    for (const k of ["tp", "pp", "cp", "ep", "dp"]) {
      if (l[k] && (l[k] > 1 || k === "dp")) parts.push(`${k.toUpperCase()}${l[k]}`);
      if (k === "pp" && isNum(l.vp) && l.vp > 1) parts.push(`VP${l.vp}`);
      if (k === "ep" && isNum(l.etp) && l.tp > 1 && l.etp < l.tp) parts.push(`ETP${l.etp}`);
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

  function ttft(p) {
    const a = p.assumptions || {};
    return isNum(a.ttft_ms) ? a.ttft_ms : null;
  }

  function providerName(p) { return p.provider_name || p.provider; }

  function shortName(p) { return `#${p.rank} ${providerName(p)} ${p.gpu}`; }

  function rankCostOf(p) { return isNum(p.rank_cost_usd) ? p.rank_cost_usd : p.cost_usd; }

  function plural(n, word) { return `${n} ${word}${n === 1 ? "" : "s"}`; }

  // ---- API -------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, detail, errors) { super(detail); this.status = status; this.errors = errors || []; }
  }

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
    if (!res.ok) throw await apiError(res);
    return res;
  }

  async function getJson(path) { return (await api(path)).json(); }
  async function postJson(path, body) { return (await api(path, body)).json(); }

  async function apiError(res) {
    let detail = "", errors = [];
    try {
      const data = await res.json();
      detail = typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail);
      errors = Array.isArray(data.errors) ? data.errors : [];
    } catch (e) {
      detail = res.statusText;
    }
    detail = String(detail || "the request failed").replace(/\s+/g, " ").trim();
    // Long numbers in validation messages read better as 10P than 10000000000000000.
    detail = detail.replace(/\b\d{7,}(?:\.\d+)?\b/g, (m) => fmtQty(Number(m)));
    return new ApiError(res.status, detail, errors);
  }

  // ---- the form: its fields -------------------------------------------------------------------

  // One entry per control that is part of a plan request. `key`: its name in the page's link
  // (the API's field name where the value is the same); `api`: where its value goes in the
  // request body; `w`: the workload that shows it (both when absent); `type`: how it is read;
  // `cli`: the `gpuplan plan` option. `def` is filled in at start-up from the page's defaults.
  const FIELDS = [
    { id: "params", key: "params", api: "params", type: "qty", cli: "--params", what: "parameters", custom: true },
    { id: "active-params", key: "active_params", api: "active_params", type: "qty", cli: "--active-params", what: "active parameters", custom: true },
    { id: "tokens", key: "tokens", api: "tokens", w: "train", type: "qty", cli: "--tokens", what: "tokens", always: true },
    { id: "epochs", key: "epochs", api: "epochs", w: "train", type: "num", cli: "--epochs", what: "epochs" },
    { id: "dataset-tokens", key: "dataset_tokens", api: "dataset_tokens", w: "train", type: "qty", cli: "--dataset-tokens", what: "dataset tokens" },
    { id: "method", key: "method", api: "method", w: "train", type: "select", cli: "--method" },
    { id: "lora-rank", key: "lora_rank", api: "lora_rank", w: "train", type: "int", cli: "--lora-rank", what: "LoRA rank" },
    { id: "train-precision", key: "precision", api: "precision", w: "train", type: "select", cli: "--precision" },
    { id: "seq-len", key: "seq_len", api: "seq_len", w: "train", type: "int", cli: "--seq-len", what: "sequence length" },
    { id: "global-batch", key: "global_batch", api: "global_batch", w: "train", type: "int", cli: "--global-batch", what: "global batch" },
    { id: "goodput", key: "goodput", api: "goodput", w: "train", type: "num", cli: "--goodput", what: "goodput" },
    { id: "dataset-gb", key: "dataset_gb", api: "dataset_gb", w: "train", type: "num0", cli: "--dataset-gb", what: "dataset GB" },
    { id: "rps", key: "requests_per_s", api: "requests_per_s", w: "serve", type: "qty", cli: "--requests-per-s", what: "requests / s", always: true },
    { id: "tokens-per-month", key: "tokens_per_month", api: "tokens_per_month", w: "serve", type: "qty", cli: "--tokens-per-month", what: "tokens / month", always: true },
    { id: "input-len", key: "input_len", api: "input_len", w: "serve", type: "int", cli: "--input-len", what: "input tokens" },
    { id: "output-len", key: "output_len", api: "output_len", w: "serve", type: "int", cli: "--output-len", what: "output tokens" },
    { id: "peak-factor", key: "peak_factor", api: "peak_factor", w: "serve", type: "num", cli: "--peak-factor", what: "peak / average" },
    { id: "months", key: "horizon_months", api: "horizon_months", w: "serve", type: "num", cli: "--months", what: "horizon" },
    { id: "users", key: "users", api: "users", w: "serve", type: "list", cli: "--users" },
    { id: "max-ttft", key: "max_ttft_ms", api: "max_ttft_ms", w: "serve", type: "num", cli: "--max-ttft-ms", what: "max TTFT" },
    { id: "max-tpot", key: "max_tpot_ms", api: "max_tpot_ms", w: "serve", type: "num", cli: "--max-tpot-ms", what: "max TPOT" },
    { id: "offline", key: "offline", api: "offline", w: "serve", type: "check", cli: "--offline" },
    { id: "redundancy", key: "redundancy", api: "redundancy", w: "serve", type: "check", cliOff: "--no-redundancy" },
    { id: "serve-precision", key: "precision", api: "precision", w: "serve", type: "select", cli: "--precision" },
    { id: "kv-precision", key: "kv_precision", api: "kv_precision", w: "serve", type: "select", cli: "--kv-precision" },
    { id: "engine", key: "engine", api: "engine", w: "serve", type: "select", cli: "--engine" },
    { id: "budget", key: "budget_usd", api: "constraints.budget_usd", type: "num", cli: "--budget", what: "budget" },
    { id: "deadline", key: "deadline", api: "constraints.deadline_hours", w: "train", type: "duration", cli: "--deadline", what: "deadline" },
    { id: "max-wall", key: "max_wall", api: "constraints.max_wall_hours", w: "train", type: "duration", cli: "--max-wall", what: "max wall time" },
    { id: "max-gpus", key: "max_gpus", api: "constraints.max_gpus", type: "int", cli: "--max-gpus", what: "max GPUs" },
    { id: "gpu", key: "gpus", api: "constraints.gpus", type: "list", cli: "--gpu" },
    { id: "no-spot", key: "no_spot", api: "constraints.no_spot", type: "check", cli: "--no-spot" },
    { id: "providers", key: "providers", api: "constraints.providers", type: "list", cli: "--providers" },
    { id: "kinds", key: "kinds", api: "constraints.kinds", type: "checklist", cli: "--kinds" },
    { id: "regions", key: "regions", api: "constraints.regions", type: "list", cli: "--regions" },
    { id: "min-confidence", key: "min_confidence", api: "constraints.min_confidence", type: "select", cli: "--min-confidence" },
    { id: "max-price-age", key: "max_price_age_days", api: "constraints.max_price_age_days", type: "int0", cli: "--max-price-age", what: "max price age" },
    { id: "allow-decentralized", key: "allow_decentralized", api: "constraints.allow_decentralized", w: "train", type: "check", cli: "--allow-decentralized" },
    { id: "allow-unclustered", key: "allow_unclustered", api: "constraints.allow_unclustered", w: "train", type: "check", cli: "--allow-unclustered" },
    { id: "exclude", key: "exclude", api: "constraints.exclude", type: "checklist", cli: "--exclude" },
    { id: "all-rows", key: "all_rows", api: "all_rows", type: "check", cli: "--all-rows" },
    { id: "limit", key: "limit", api: "limit", type: "int", cli: "--limit", what: "plans to show", always: true },
  ];
  const FIELD_BY_API = new Map(FIELDS.map((f) => [f.api, f]));

  function applies(f, kind) { return !f.w || f.w === kind; }
  function isCustom() { return $("model").value === CUSTOM_MODEL; }

  function checklistInputs(f) { return Array.from($(f.id).querySelectorAll("input[type=checkbox]")); }

  /** The control's text as the user sees it ("1" / "0" for a checkbox, "a,b" for a checklist). */
  function rawValue(f) {
    if (f.type === "check") return $(f.id).checked ? "1" : "0";
    if (f.type === "checklist") return checklistInputs(f).filter((i) => i.checked).map((i) => i.value).join(",");
    return String($(f.id).value).trim();
  }

  function setRaw(f, value) {
    const v = String(value);
    if (f.type === "check") { $(f.id).checked = /^(1|true|yes|on)$/i.test(v); return; }
    if (f.type === "checklist") {
      const want = new Set(v.split(",").map((s) => s.trim()).filter(Boolean));
      for (const i of checklistInputs(f)) i.checked = want.has(i.value);
      return;
    }
    const node = $(f.id);
    if (node.tagName === "SELECT" && !Array.from(node.options).some((o) => o.value === v)) {
      throw new FieldError(f.id, `the link has ${f.key}=${v}, which is not one of the choices`);
    }
    node.value = v;
  }

  /** The value for the request body, or null when blank. Throws FieldError on bad input. */
  function parseField(f) {
    const raw = rawValue(f);
    if (f.type === "check") return raw === "1";
    if (raw === "") return null;
    const what = f.what || f.key;
    try {
      switch (f.type) {
        case "qty": case "num": return parseQuantity(raw, what, false);
        case "num0": return parseQuantity(raw, what, true);
        case "int": case "int0": {
          const v = parseQuantity(raw, what, f.type === "int0");
          if (!Number.isInteger(v)) throw new Error(`${what} must be a whole number`);
          return v;
        }
        case "duration": return parseDuration(raw, what);
        case "list": case "checklist": {
          const items = raw.split(",").map((s) => s.trim()).filter(Boolean);
          return items.length ? items : null;
        }
        default: return raw;
      }
    } catch (e) {
      throw new FieldError(f.id, e.message);
    }
  }

  function put(target, path, value) {
    const parts = path.split(".");
    let node = target;
    for (const p of parts.slice(0, -1)) node = node[p] = node[p] || {};
    node[parts[parts.length - 1]] = value;
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
    const list = $("gpu-list");
    clear(list);
    const price = $("price-gpu");
    clear(price);
    for (const g of gpus) {
      const label = `${g.id} (${trim(g.memory_gb)} GB${g.vendor ? ", " + g.vendor : ""})`;
      list.appendChild(el("option", { value: g.id, label }));
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
      input.addEventListener("change", updateCounts);
      box.appendChild(el("label", { title: p.kind ? `${p.kind}` : null }, [input, ` ${p.name || p.id}`]));
    }
    updateCounts();
  }

  function updateCounts() {
    const n = checklistInputs(FIELD_BY_API.get("constraints.exclude")).filter((i) => i.checked).length;
    $("exclude-count").textContent = n ? `(${n} excluded)` : `(none of ${state.providers.length})`;
    const kind = workload();
    const set = ["providers", "kinds", "regions", "min-confidence", "max-price-age", "allow-decentralized",
      "allow-unclustered", "exclude"].map((id) => FIELDS.find((f) => f.id === id))
      .filter((f) => applies(f, kind) && rawValue(f) !== f.def).length;
    $("more-count").textContent = set ? `(${set} set)` : "";
  }

  function workload() {
    return $("workload-serve").checked ? "serve" : "train";
  }

  function onWorkloadChange() {
    const serve = workload() === "serve";
    $("train-fields").hidden = serve;
    $("serve-fields").hidden = !serve;
    $("deadline-row").hidden = serve;
    $("plan-form").classList.toggle("serve-mode", serve);
    updateCounts();
  }

  function onModelChange() {
    $("params-row").hidden = !isCustom();
  }

  function onMethodChange() {
    $("lora-row").hidden = $("method").value === "full";
  }

  // ---- the form: the request body, the link and the CLI command ------------------------------

  function buildBody(kind) {
    const body = {};
    if (isCustom()) {
      if (!$("params").value.trim()) throw new FieldError("params", "parameters: give a parameter count, e.g. 7B");
    } else {
      body.model = $("model").value;
    }
    for (const f of FIELDS) {
      if (!applies(f, kind) || (f.custom && !isCustom())) continue;
      if (f.type === "check" && rawValue(f) === f.def) continue; // only what differs from the default
      const v = parseField(f);
      if (v === null) continue;
      put(body, f.api, v);
    }
    if (kind === "train") {
      if (body.tokens === undefined && !(body.epochs && body.dataset_tokens)) {
        throw new FieldError("tokens", "tokens: how many training tokens? e.g. 1e11 or 100B (or epochs and dataset tokens)");
      }
    } else if (body.tokens_per_month !== undefined) {
      delete body.requests_per_s;
    } else if (body.requests_per_s === undefined) {
      throw new FieldError("rps", "traffic: give requests / s or tokens / month");
    }
    if (body.limit !== undefined && body.limit > MAX_PLANS) throw new FieldError("limit", `plans to show: at most ${MAX_PLANS}`);
    body.constraints = body.constraints || {};
    return body;
  }

  /** The form as link parameters: the workload, the model, and every field that differs from its default. */
  function formQuery(kind) {
    const q = new URLSearchParams();
    q.set("workload", kind);
    q.set("model", isCustom() ? CUSTOM_MODEL : $("model").value);
    const tpm = rawValue(FIELD_BY_API.get("tokens_per_month")) !== "";
    for (const f of FIELDS) {
      if (!applies(f, kind) || (f.custom && !isCustom())) continue;
      if (f.id === "rps" && tpm) continue;
      const raw = rawValue(f);
      if (raw === f.def && !(f.always && raw !== "")) continue;
      q.set(f.key, raw);
    }
    return q;
  }

  /** Fill the form from link parameters (those `formQuery` writes; also deadline_hours / max_wall_hours). */
  function applyQuery(q) {
    const kind = q.get("workload") === "serve" ? "serve" : "train";
    $(kind === "serve" ? "workload-serve" : "workload-train").checked = true;
    onWorkloadChange();
    const model = q.get("model");
    if (model && model !== CUSTOM_MODEL) {
      if (!Array.from($("model").options).some((o) => o.value === model)) {
        throw new FieldError("model", `the link names model "${model}", which is not a preset here`);
      }
      $("model").value = model;
    } else if (model === CUSTOM_MODEL || q.has("params")) {
      $("model").value = CUSTOM_MODEL;
    }
    onModelChange();
    if (q.has("tokens_per_month") && !q.has("requests_per_s")) $("rps").value = "";
    for (const f of FIELDS) {
      if (!applies(f, kind)) continue;
      if (q.has(f.key)) setRaw(f, q.get(f.key));
    }
    if (kind === "train") {
      if (!q.has("deadline") && q.has("deadline_hours")) $("deadline").value = `${q.get("deadline_hours")}h`;
      if (!q.has("max_wall") && q.has("max_wall_hours")) $("max-wall").value = `${q.get("max_wall_hours")}h`;
    }
    onMethodChange();
    updateCounts();
    const pending = {};
    if (q.has("sel")) pending.selected = Number(q.get("sel"));
    if (q.has("sort")) {
      const [key, dir] = q.get("sort").split(":");
      pending.sort = { key, dir: dir === "desc" ? -1 : 1 };
    }
    if (q.has("whatif")) {
      const [price, eff, fail, ...scope] = q.get("whatif").split(",");
      pending.whatif = { price: Number(price), eff: Number(eff), fail: Number(fail), scope: scope.join(",") || "all" };
    }
    state.pending = pending;
  }

  /** The page's link for the plan shown: the request plus the selection, sort and what-if. */
  function shareQuery() {
    if (!state.request) return "";
    const q = new URLSearchParams(state.request.query);
    if (state.selectedRank !== null && state.result && state.result.plans.length && state.selectedRank !== state.result.plans[0].rank) {
      q.set("sel", String(state.selectedRank));
    }
    if (state.sort.key !== "rank" || state.sort.dir !== 1) q.set("sort", `${state.sort.key}:${state.sort.dir < 0 ? "desc" : "asc"}`);
    if (whatIfActive()) {
      const w = state.whatif;
      q.set("whatif", `${w.price},${w.eff},${w.fail},${w.scope}`);
    }
    return q.toString();
  }

  function updateUrl() {
    const query = shareQuery();
    if (!query) return;
    const url = `${location.pathname}?${query}`;
    try { history.replaceState(null, "", url); } catch (e) { /* a file:// or sandboxed page keeps its URL */ }
    $("share-link").value = location.href;
  }

  function shellQuote(s) {
    return /^[A-Za-z0-9_.,:/=+@%-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`;
  }

  /** `gpuplan plan train|serve ...` for the form as it stands (the CLI and the API share every default). */
  function cliCommand(kind) {
    const parts = ["gpuplan", "plan", kind];
    if (!isCustom()) parts.push("--model", $("model").value);
    const tpm = rawValue(FIELD_BY_API.get("tokens_per_month")) !== "";
    for (const f of FIELDS) {
      if (!applies(f, kind) || (f.custom && !isCustom())) continue;
      if (f.id === "rps" && tpm) continue;
      const raw = rawValue(f);
      if (f.type === "check") {
        if (raw === f.def) continue;
        if (f.cliOff && raw === "0") parts.push(f.cliOff);
        else if (f.cli && raw === "1") parts.push(f.cli);
        continue;
      }
      if (raw === "" || (raw === f.def && !f.always)) continue;
      let value = raw;
      if (f.type === "num" && f.cli !== "--epochs") {
        try { value = String(parseQuantity(raw, f.key, false)); } catch (e) { /* shown as typed */ }
      }
      parts.push(f.cli, shellQuote(value));
    }
    return parts.join(" ");
  }

  // ---- errors ----------------------------------------------------------------------------------

  function showError(message, fieldId) {
    const box = $("form-error");
    box.textContent = String(message || "").replace(/\s+/g, " ").trim();
    box.hidden = !message;
    for (const node of document.querySelectorAll("[aria-invalid=true]")) node.removeAttribute("aria-invalid");
    if (fieldId && $(fieldId)) {
      const node = $(fieldId);
      if (node.tagName === "INPUT" || node.tagName === "SELECT") {
        node.setAttribute("aria-invalid", "true");
        node.setAttribute("aria-errormessage", "form-error");
        const more = node.closest("details");
        if (more) more.open = true;
        node.focus();
      }
    }
  }

  /** The form field an API validation error points at (loc: ["constraints", "budget_usd"], ...). */
  function fieldOfError(err) {
    const first = err.errors && err.errors[0];
    if (!first || !Array.isArray(first.loc)) return null;
    const f = FIELD_BY_API.get(first.loc.join("."));
    if (f) return f.id;
    if (first.loc[0] === "model" || first.loc[0] === "params") return first.loc[0] === "model" ? "model" : "params";
    return null;
  }

  function friendly(err) {
    let text = err.message;
    const id = err instanceof ApiError ? fieldOfError(err) : null;
    const label = id && document.querySelector(`label[for="${id}"]`);
    if (label && err.errors[0] && err.errors[0].msg) {
      // "constraints.max_gpus: Input should be ..." -> "Max GPUs: input should be ..."
      const msg = String(err.errors[0].msg).replace(/\b\d{7,}(?:\.\d+)?\b/g, (m) => fmtQty(Number(m)));
      text = `${label.textContent.trim()}: ${msg.charAt(0).toLowerCase()}${msg.slice(1)}`;
    }
    // The planner speaks CLI; on the page the options are fields.
    text = text.replace(/--budget\b/g, "the budget").replace(/--deadline\b/g, "the deadline")
      .replace(/--max-gpus\b/g, "max GPUs").replace(/--max-wall\b/g, "max wall time")
      .replace(/--allow-unclustered\b/g, "'join VMs not sold as a cluster'")
      .replace(/--allow-decentralized\b/g, "'multi-node on decentralized GPUs'")
      .replace(/--offline\b/g, "'offline'");
    return text;
  }

  // ---- planning ------------------------------------------------------------------------------------

  async function onSubmit(event) {
    if (event) event.preventDefault();
    showError("");
    const kind = workload();
    let body, query;
    try {
      body = buildBody(kind);
      query = formQuery(kind).toString();
    } catch (e) {
      showError(e.message, e.field);
      return;
    }
    const button = $("submit");
    button.disabled = true;
    const label = button.textContent;
    button.textContent = "Planning…";
    document.body.classList.add("busy");
    const started = performance.now();
    try {
      const result = await postJson(`/api/plan/${kind}`, body);
      state.request = { kind, body, query, cli: cliCommand(kind) };
      $("results").classList.remove("stale");
      showResult(result, (performance.now() - started) / 1000);
      revealResults();
    } catch (e) {
      showError(friendly(e), e instanceof ApiError ? fieldOfError(e) : null);
      if (state.result) {
        $("results").classList.add("stale");
        $("status").textContent = "The plans below are from the previous request.";
      }
    } finally {
      button.disabled = false;
      button.textContent = label;
      document.body.classList.remove("busy");
    }
  }

  /** Bring the recommendation into view (below the form on narrow screens) and move focus to it. */
  function revealResults() {
    const head = $("recommended-title");
    const box = $("recommended").getBoundingClientRect();
    const visible = box.top >= 0 && box.top < window.innerHeight * 0.4;
    if (!visible) $("results").scrollIntoView({ block: "start" });
    head.focus({ preventScroll: true });
  }

  // ---- the result ----------------------------------------------------------------------------

  function showResult(result, seconds) {
    state.result = result;
    state.priceGpuChosen = false;
    state.expanded = new Set();
    const pending = state.pending || {};
    state.pending = null;
    state.sort = pending.sort && columnKeys(result.workload).has(pending.sort.key) ? pending.sort : { key: "rank", dir: 1 };
    $("empty-state").hidden = true;
    $("result").hidden = false;

    const s = result.summary || {};
    const title = result.workload === "train"
      ? `Training ${result.model}: ${fmtQty(s.tokens)} tokens${s.method && s.method !== "full" ? ` (${s.method})` : ""}`
      : `Serving ${result.model}: ${trim(s.average_requests_per_s)} req/s average (${trim(s.peak_requests_per_s)} peak), `
        + `${trim(s.horizon_months)} month(s)${Array.isArray(s.users) && s.users.length ? `, users in ${s.users.join(", ")}` : ""}`;
    $("result-title").textContent = title;
    const n = result.plans.length;
    const count = $("result-count");
    count.textContent = plural(n, "plan");
    count.dataset.count = String(n);
    if (isNum(s.candidates)) count.title = `${s.candidates} candidate offers, ${s.providers_ranked ?? "?"} providers ranked`;
    $("status").textContent = `Planned in ${isNum(seconds) ? seconds.toFixed(1) : "?"} s: ${plural(n, "plan")}. `
      + (n ? `Recommended: ${headlineText(result.plans[0])}.` : "No plan meets the constraints.");
    $("scatter-title").textContent = result.workload === "serve" ? "Cost vs latency" : "Cost vs time";
    $("alternatives-card").hidden = !n;
    $("whatif").hidden = !n;

    const ranks = new Set(result.plans.map((p) => p.rank));
    state.selectedRank = n ? (ranks.has(pending.selected) ? pending.selected : result.plans[0].rank) : null;
    fillScopes();
    // A what-if carries over to the next plan only while what it applies to is still shown.
    const wanted = pending.whatif || state.whatif;
    const scopes = Array.from($("wi-scope").options).map((o) => o.value);
    setWhatIf(scopes.includes(wanted.scope) ? wanted : { price: 1, eff: 1, fail: 1, scope: "all" }, false);
    renderRecommended();
    renderAlternatives();
    renderWhatIf();
    renderTable();
    renderScatter();
    renderSelected();
    renderAssumptions();
    $("cli-command").value = state.request ? state.request.cli : "";
    $("download-status").textContent = "";
    for (const b of document.querySelectorAll(".downloads button")) b.disabled = false;
    updateUrl();
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
      if (!tr.classList.contains("plan-row")) continue;
      const on = Number(tr.dataset.rank) === rank;
      tr.classList.toggle("selected", on);
      if (on) tr.setAttribute("aria-current", "true"); else tr.removeAttribute("aria-current");
    }
    markScatterSelection();
    $("launch").hidden = true;
    renderSelected();
    updateUrl();
  }

  // ---- the recommendation ------------------------------------------------------------------------

  function headlineText(p) {
    const where = `${providerName(p)} (${placesText(p.region) || "?"})`;
    const more = p.also_at && p.also_at.length ? ` or ${p.also_at.length} more place${p.also_at.length === 1 ? "" : "s"}` : "";
    if (p.workload === "serve") {
      const reps = isNum(p.replicas) ? `: ${p.replicas} replica${p.replicas === 1 ? "" : "s"} × ${p.gpus_per_replica ?? "?"} GPU${p.gpus_per_replica === 1 ? "" : "s"}` : "";
      return `Book ${p.gpus}× ${p.gpu} on ${where}${more}, ${fmtPricing(p.pricing)}${reps}`;
    }
    return `Book ${p.gpus}× ${p.gpu} on ${where}${more}, ${fmtPricing(p.pricing)}: ${p.nodes} node${p.nodes === 1 ? "" : "s"} × ${trim(p.gpus_per_node)} GPUs`;
  }

  function costBand(p) {
    return isNum(p.cost_p10_usd) ? `p10–p90 ${fmtUsd(p.cost_p10_usd)} – ${fmtUsd(p.cost_p90_usd)}` : `p90 ${fmtUsd(p.cost_p90_usd)}`;
  }

  /** [label, value, band] lines for a plan: what it costs, how long it takes or how fast it answers, its price. */
  function planFacts(p, result) {
    const s = (result && result.summary) || {};
    const facts = [];
    const horizon = p.workload === "serve" && isNum(s.horizon_months) ? ` for ${trim(s.horizon_months)} month(s)` : "";
    facts.push(["Expected cost", `${fmtUsd(p.cost_usd)}${horizon}`, costBand(p)]);
    if (p.workload === "train") {
      facts.push(["Time", fmtDuration(p.wall_hours),
        isNum(p.wall_p10_hours) ? `p10–p90 ${fmtHoursRange(p.wall_p10_hours, p.wall_p90_hours)}` : `p90 ${fmtDuration(p.wall_p90_hours)}`]);
      facts.push(["Layout", `${layoutText(p.layout)}, ${Math.round(p.gpu_hours).toLocaleString("en-US")} GPU-hours`, ""]);
    } else {
      const targets = isNum(s.max_tpot_ms) ? `targets TTFT ≤ ${trim(s.max_ttft_ms)} ms, TPOT ≤ ${trim(s.max_tpot_ms)} ms` : "no latency target (offline)";
      facts.push(["Latency", `TTFT ${fmtMs(ttft(p))}, TPOT ${fmtMs(tpot(p))}${isNum(p.network_rtt_ms) ? `, RTT ${fmtMs(p.network_rtt_ms)}` : ""}`, targets]);
      facts.push(["Per M output tokens", fmtUsd(p.cost_per_million_output_tokens_usd), `${fmtQty(p.output_tokens_per_s)} output tok/s`]);
    }
    const offer = p.offer || {};
    facts.push(["Price", `${fmtUsd(offer.price_per_gpu_hour_usd)}/GPU-hour, ${fmtPricing(p.pricing)}`,
      `as of ${offer.as_of || "?"}: ${p.price_age_days} days old, ${p.confidence}${p.stale ? ", stale" : ""}`]);
    const u = p.uncertainty || {};
    facts.push(["Risk", isNum(p.risk) ? p.risk.toFixed(2) : "–", u.dominant ? `widest uncertainty: ${u.dominant}` : ""]);
    return facts;
  }

  /** What a manager must hear before booking the plan: slow answers, old prices, its own notes. */
  function planWarnings(p) {
    const out = [];
    if (p.workload === "serve" && isNum(tpot(p)) && tpot(p) > SLOW_TPOT_MS) {
      out.push(`TPOT ${fmtMs(tpot(p))} is slower than reading speed (about ${Math.round(1000 / tpot(p))} tokens/s per user): set a max TPOT for interactive use`);
    }
    const users = ((state.result && state.result.summary) || {}).users || [];
    if (p.workload === "serve" && users.length > 1 && isNum(p.network_rtt_ms)) {
      out.push(`users are in ${users.join(", ")} but every replica runs in ${placesText(p.region)} (RTT ${fmtMs(p.network_rtt_ms)} as planned): consider one replica set per region`);
    }
    if (p.stale) out.push(`the price is ${p.price_age_days} days old: check it before booking`);
    if (p.confidence === "unverified") out.push("the price is unverified");
    for (const n of (p.warnings || []).concat(p.risk_notes || [])) {
      if (/price is \d+ days old/.test(n) && p.stale) continue;
      out.push(prose(n));
    }
    return out;
  }

  /** The planner's reasons, less the tie and flip sentences that have places of their own. */
  function whyLines(result) {
    const flips = ((result.summary || {}).flips_first || []).map(String);
    return (result.why || []).filter((line) => !flips.includes(line) && !/tie with #1 within the bands/.test(line)).map(prose);
  }

  function tiesOf(result) { return result.plans.filter((p) => p.ties_first && p.rank !== result.plans[0].rank); }

  function renderRecommended() {
    const result = state.result;
    const head = $("headline"), bands = $("bands"), warn = $("rec-warnings"), why = $("why"), ties = $("ties"), flips = $("flips");
    for (const n of [bands, warn, why, ties, flips]) clear(n);
    const p = result.plans[0];
    if (!p) {
      head.textContent = "No plan meets the constraints";
      const closest = result.closest || [];
      if (closest.length) {
        const c = closest[0];
        bands.appendChild(el("dt", { text: "Nearest" }));
        bands.appendChild(el("dd", { text: `${providerName(c)} ${c.gpus}× ${c.gpu}: ${fmtUsd(c.cost_usd)}, ${c.workload === "train" ? fmtDuration(c.wall_hours) : `TPOT ${fmtMs(tpot(c))}`}` }));
      }
      for (const line of result.why || []) why.appendChild(el("li", { text: friendly({ message: prose(line) }) }));
      for (const [reason, k] of Object.entries(result.rejected || {})) {
        why.appendChild(el("li", { class: "muted", text: `not ranked: ${friendly({ message: reason })} (${k})` }));
      }
      return;
    }
    head.textContent = headlineText(p);
    for (const [k, v, band] of planFacts(p, result)) {
      bands.appendChild(el("dt", { text: k }));
      bands.appendChild(el("dd", null, [v, band ? el("span", { class: "band", text: ` (${band})` }) : null]));
    }
    const warnings = planWarnings(p);
    if (warnings.length) {
      warn.appendChild(el("strong", { text: "Check before booking" }));
      warn.appendChild(el("ul", null, warnings.slice(0, 5).map((w) => el("li", { text: w }))));
    }
    for (const line of whyLines(result)) why.appendChild(el("li", { text: line }));
    const flipLines = ((result.summary || {}).flips_first || []).map(String);
    const tied = tiesOf(result);
    if (tied.length) {
      ties.appendChild(el("strong", { text: `Ties with #1 (cost bands overlap): ` }));
      tied.slice(0, 6).forEach((t, i) => {
        if (i) ties.appendChild(document.createTextNode(", "));
        const b = el("button", { type: "button", class: "link", text: `${shortName(t)} ${fmtUsdShort(t.cost_usd)}` });
        b.addEventListener("click", () => select(t.rank));
        ties.appendChild(b);
      });
      if (tied.length > 6) ties.appendChild(document.createTextNode(` and ${tied.length - 6} more`));
      ties.appendChild(el("span", { class: "muted", text: ": any of them is as good a bet within the estimate's uncertainty." }));
    } else if (result.plans.length > 1) {
      ties.appendChild(el("span", { text: "No other plan's cost band overlaps #1's: it is clearly the cheapest." }));
    }
    if (flipLines.length) {
      flips.appendChild(el("strong", { text: "What would change the recommendation" }));
      flips.appendChild(el("ul", null, flipLines.map((f) => el("li", { text: prose(f) }))));
    }
  }

  function renderAlternatives() {
    const box = $("alternatives");
    clear(box);
    const plans = state.result.plans;
    if (plans.length < 2) {
      box.appendChild(el("li", { class: "muted", text: plans.length ? "No other plan meets the constraints." : "–" }));
      return;
    }
    const first = plans[0];
    for (const p of plans.slice(1, 5)) {
      const b = el("button", { type: "button", class: "link", text: `#${p.rank} ${providerName(p)} ${p.gpus}× ${p.gpu}` });
      b.addEventListener("click", () => select(p.rank));
      const delta = p.cost_usd - first.cost_usd;
      const time = p.workload === "train" ? fmtDuration(p.wall_hours) : `TPOT ${fmtMs(tpot(p))}`;
      box.appendChild(el("li", { "data-rank": p.rank }, [b,
        ` ${fmtPricing(p.pricing)}, ${placesText(p.region) || "?"}${p.also_at && p.also_at.length ? ` (+${p.also_at.length} more)` : ""}: `
        + `${fmtUsd(p.cost_usd)} (${delta >= 0 ? "+" : "−"}${fmtUsd(Math.abs(delta))}), ${time}`
        + (p.ties_first ? " · ties with #1" : "")]));
    }
  }

  function renderAssumptions() {
    const dl = $("assumptions");
    clear(dl);
    const result = state.result;
    const s = result.summary || {};
    const rows = [];
    if (s.ranked_by) rows.push(["ranked by", s.ranked_by]);
    if (s.latency_target) rows.push(["latency target", s.latency_target]);
    if (s.precision_basis) rows.push(["precision", `${s.precision} (${s.precision_basis})`]);
    if (s.global_batch_basis) rows.push(["global batch", `${s.global_batch} sequences: ${s.global_batch_basis}`]);
    for (const [k, v] of Object.entries(result.assumptions || {})) rows.push([k.replace(/_/g, " "), flat(v)]);
    const pl = result.placement || {};
    if (pl.reasons && pl.reasons.length) rows.push(["placement", `${pl.coupling || ""}: ${pl.reasons.join("; ")}`]);
    for (const [k, v] of rows) {
      dl.appendChild(el("dt", { text: k }));
      dl.appendChild(el("dd", { text: prose(v) }));
    }
  }

  function flat(v) {
    if (v === null || v === undefined) return "–";
    if (Array.isArray(v)) return v.map(flat).join(", ");
    if (typeof v === "object") return Object.entries(v).map(([k, x]) => `${k.replace(/_/g, " ")}: ${flat(x)}`).join("; ");
    if (typeof v === "boolean") return v ? "yes" : "no";
    return String(v);
  }

  // ---- what-if --------------------------------------------------------------------------------------

  function whatIfActive() {
    const w = state.whatif;
    return w.price !== 1 || w.eff !== 1 || w.fail !== 1;
  }

  function inScope(p) {
    const scope = state.whatif.scope;
    if (scope === "all") return true;
    if (scope === "first") return state.result && p.rank === state.result.plans[0].rank;
    if (scope === "spot") return /spot|interruptible|community/.test(p.pricing || "");
    const [kind, id] = [scope.slice(0, scope.indexOf(":")), scope.slice(scope.indexOf(":") + 1)];
    if (kind === "provider") return p.provider === id;
    if (kind === "gpu") return p.gpu === id;
    return false;
  }

  /** A plan's cost and wall time under the what-if.
   *
   * Presentation arithmetic over the plan's own returned numbers, not an estimate (the page
   * imports no estimator): compute dollars scale with the price multiplier and inversely with
   * the efficiency multiplier; for training, the wall-time overhead the planner added for
   * failures and preemptions (assumptions.wall_over_steady - 1) scales with the rate multiplier.
   * Storage, egress and other costs are kept; serving capacity is treated as continuous (replica
   * counts are not re-rounded) and its spare replicas are not recomputed. The plan's ranking cost
   * (its band's 75th percentile) is scaled by the same ratio as its expected cost. */
  function whatIfPlan(p) {
    const w = state.whatif;
    const base = { cost: p.cost_usd, rankCost: rankCostOf(p), wall: p.wall_hours, changed: false };
    if (!whatIfActive() || !inScope(p) || !isNum(p.cost_usd)) return base;
    const c = p.cost || {};
    const compute = isNum(c.compute_usd) ? c.compute_usd : p.cost_usd;
    const rest = p.cost_usd - compute;
    let time = 1 / w.eff;
    if (p.workload === "train") {
      const a = p.assumptions || {};
      const wos = isNum(a.wall_over_steady) && a.wall_over_steady >= 1 ? a.wall_over_steady : 1;
      time *= (1 + (wos - 1) * w.fail) / wos;
    }
    const cost = compute * w.price * time + rest;
    const ratio = p.cost_usd > 0 ? cost / p.cost_usd : 1;
    return { cost, rankCost: rankCostOf(p) * ratio, wall: p.workload === "train" ? p.wall_hours * time : p.wall_hours, changed: true };
  }

  /** rank -> {position under the what-if, numbers}. */
  function whatIfRanking() {
    const rows = state.result.plans.map((p) => ({ p, w: whatIfPlan(p) }));
    rows.sort((a, b) => a.w.rankCost - b.w.rankCost || a.p.rank - b.p.rank);
    const out = new Map();
    rows.forEach((r, i) => out.set(r.p.rank, { position: i + 1, ...r.w }));
    return out;
  }

  function fillScopes() {
    const select = $("wi-scope");
    const previous = state.whatif.scope;
    clear(select);
    const plans = state.result.plans;
    const opts = [["all", "every plan"], ["first", "#1 only"]];
    if (plans.some((p) => /spot|interruptible|community/.test(p.pricing || ""))) opts.push(["spot", "spot / interruptible plans"]);
    const providers = new Map(), gpus = new Set();
    for (const p of plans) { providers.set(p.provider, providerName(p)); gpus.add(p.gpu); }
    for (const [id, name] of providers) opts.push([`provider:${id}`, `provider ${name}`]);
    for (const g of gpus) opts.push([`gpu:${g}`, `GPU ${g}`]);
    for (const [v, t] of opts) select.appendChild(el("option", { value: v, text: t }));
    select.value = opts.some(([v]) => v === previous) ? previous : "all";
  }

  function setWhatIf(w, render) {
    const clamp = (x, lo, hi) => (isNum(x) ? Math.min(hi, Math.max(lo, x)) : 1);
    state.whatif = { price: clamp(w.price, 0.1, 10), eff: clamp(w.eff, 0.1, 10), fail: isNum(w.fail) ? Math.min(100, Math.max(0, w.fail)) : 1, scope: w.scope || "all" };
    $("wi-price").value = String(state.whatif.price);
    $("wi-eff").value = String(state.whatif.eff);
    $("wi-fail").value = String(state.whatif.fail);
    if (Array.from($("wi-scope").options).some((o) => o.value === state.whatif.scope)) $("wi-scope").value = state.whatif.scope;
    else state.whatif.scope = $("wi-scope").value = "all";
    if (render) { renderWhatIf(); renderTable(); updateUrl(); }
  }

  function onWhatIfInput() {
    const num = (id) => { const v = parseFloat($(id).value); return isNum(v) ? v : 1; };
    setWhatIf({ price: num("wi-price"), eff: num("wi-eff"), fail: num("wi-fail"), scope: $("wi-scope").value }, false);
    renderWhatIf();
    renderTable();
    updateUrl();
  }

  function whatIfLabel() {
    const w = state.whatif;
    const parts = [];
    if (w.price !== 1) parts.push(`price ×${w.price}`);
    if (w.eff !== 1) parts.push(`efficiency ×${w.eff}`);
    if (w.fail !== 1) parts.push(`failure/preemption rate ×${w.fail}`);
    const scope = $("wi-scope").selectedOptions[0];
    return `${parts.join(", ")} on ${scope ? scope.textContent : "every plan"}`;
  }

  function renderWhatIf() {
    const active = whatIfActive();
    $("whatif-badge").hidden = !active;
    const out = $("whatif-result");
    const note = $("whatif-table-note");
    clear(out);
    note.hidden = !active;
    if (!active || !state.result || !state.result.plans.length) { note.textContent = ""; return; }
    const ranking = whatIfRanking();
    const plans = state.result.plans;
    const first = plans.find((p) => ranking.get(p.rank).position === 1);
    const top = ranking.get(first.rank);
    const was = plans[0];
    const wasNow = ranking.get(was.rank);
    out.appendChild(el("strong", { text: "What-if: " }));
    if (first.rank !== was.rank) {
      out.appendChild(document.createTextNode(`${shortName(first)} would rank first at ${fmtUsd(top.cost)} expected; `
        + `today's #1 ${providerName(was)} ${was.gpu} would cost ${fmtUsd(wasNow.cost)} and rank ${wasNow.position}.`));
    } else {
      const second = plans.find((p) => ranking.get(p.rank).position === 2);
      out.appendChild(document.createTextNode(`#1 ${providerName(was)} ${was.gpu} stays first at ${fmtUsd(wasNow.cost)} expected`
        + (second ? `; next is ${shortName(second)} at ${fmtUsd(ranking.get(second.rank).cost)}.` : ".")));
    }
    if (state.result.workload === "serve" && state.whatif.fail !== 1) {
      out.appendChild(el("span", { class: "muted", text: " The failure rate changes training plans only; serving plans keep their spare replicas." }));
    }
    note.textContent = `What-if (${whatIfLabel()}): the table is re-ranked in your browser from each plan's cost breakdown. `
      + "It is not a new plan: press Plan after changing the request for exact numbers.";
  }

  // ---- table ---------------------------------------------------------------------------------

  function columns(kind) {
    const whatif = whatIfActive();
    const ranking = whatif ? whatIfRanking() : null;
    const common = [
      { key: "rank", h: "#", num: true, sort: (p) => (ranking ? ranking.get(p.rank).position : p.rank), v: (p) => String(p.rank) },
      { key: "provider", h: "Provider", cls: "provider", sort: (p) => providerName(p).toLowerCase(), v: (p, front) => [providerName(p),
        front.has(p.rank) ? el("span", { class: "sr-only", text: ", " }) : null,
        front.has(p.rank) ? el("span", { class: "badge front", text: "front" }) : null,
        el("span", { class: "sub muted", title: p.instance_type, text: p.instance_type })] },
      { key: "gpu", h: "GPUs", sort: (p) => `${p.gpu} ${String(p.gpus).padStart(7, "0")}`, v: (p) => [p.gpu,
        el("span", { class: "sub muted", text: kind === "train" ? `${nodesText(p)} = ${p.gpus}`
          : `${p.gpus} = ${p.replicas ?? "–"}×${p.gpus_per_replica ?? "–"}` })] },
      { key: "pricing", h: "Pricing", sort: (p) => p.pricing, v: (p) => fmtPricing(p.pricing) },
      { key: "region", h: "Region", cls: "region", sort: (p) => (p.region || "").toLowerCase(), v: (p) => regionCell(p) },
    ];
    const specific = kind === "train" ? [
      { key: "layout", h: "Layout", sort: (p) => layoutText(p.layout), v: (p) => {
        const l = p.layout || {};
        return [layoutText({ ...l, zero: null }),
          isNum(l.zero) && l.zero > 0 ? el("span", { class: "sub muted", text: `ZeRO-${l.zero}` }) : null];
      } },
      { key: "wall", h: "Wall time", num: true, sort: (p) => p.wall_hours, v: (p) => [fmtHours(p.wall_hours),
        el("span", { class: "sub muted", text: `p90 ${fmtHours(p.wall_p90_hours)}` })] },
    ] : [
      { key: "rtt", h: "RTT", num: true, sort: (p) => (isNum(p.network_rtt_ms) ? p.network_rtt_ms : Infinity), v: (p) => (isNum(p.network_rtt_ms) ? fmtMs(p.network_rtt_ms) : "–") },
      { key: "tpot", h: "TPOT", num: true, sort: (p) => tpot(p) ?? Infinity, v: (p) => fmtMs(tpot(p)) },
      { key: "permtok", h: "$/M out tok", num: true, sort: (p) => p.cost_per_million_output_tokens_usd, v: (p) => fmtUsd(p.cost_per_million_output_tokens_usd) },
    ];
    const tail = [
      { key: "cost", h: "Expected cost", num: true, sort: (p) => p.cost_usd, v: (p) => fmtUsd(p.cost_usd) },
      { key: "band", h: "Cost band p10–p90", num: true, sort: (p) => p.cost_p90_usd, v: (p) => [
        `${fmtUsdShort(isNum(p.cost_p10_usd) ? p.cost_p10_usd : p.cost_usd)}–${fmtUsdShort(p.cost_p90_usd)}`,
        p.ties_first ? el("span", { class: "tie", title: "overlaps #1's band", text: "=" }) : null] },
    ];
    const what = whatif ? [
      { key: "whatif", h: "What-if rank", num: true, cls: "whatif", sort: (p) => ranking.get(p.rank).position, v: (p) => String(ranking.get(p.rank).position) },
      { key: "whatifcost", h: "What-if cost", num: true, cls: "whatif", sort: (p) => ranking.get(p.rank).cost, v: (p) => {
        const w = ranking.get(p.rank);
        return [fmtUsd(w.cost), kind === "train" && w.changed ? el("span", { class: "sub", text: fmtHours(w.wall) }) : null];
      } },
    ] : [];
    const end = [
      { key: "risk", h: "Risk", num: true, sort: (p) => p.risk, v: (p) => (isNum(p.risk) ? p.risk.toFixed(2) : "–") },
      { key: "age", h: "Price date", cls: "date", sort: (p) => p.price_age_days, v: (p) => {
        const asOf = (p.offer && p.offer.as_of) || "";
        return [asOf, el("span", { class: "sub muted" }, [p.confidence || "",
          p.stale ? el("span", { class: "badge stale", title: `${p.price_age_days} days old`, text: "stale" }) : null])];
      } },
    ];
    return common.concat(specific, tail, what, end);
  }

  function columnKeys(kind) {
    return new Set(["rank", "provider", "gpu", "pricing", "region", "cost", "band", "risk", "age", "whatif", "whatifcost"]
      .concat(kind === "train" ? ["layout", "wall"] : ["rtt", "tpot", "permtok"]));
  }

  // An offer's region lists places '/'-separated; a marketplace's places are comma lists themselves
  // ("CA, NA/Denmark, DK, EU"), spaced apart so they do not read as one place (as gpuplan.display.places_text does).
  function placesText(region) {
    const places = String(region || "").split("/").map((r) => r.trim()).filter(Boolean);
    return places.join(places.some((r) => r.includes(",")) ? " / " : "/");
  }

  function regionCell(p) {
    const out = [placesText(p.region) || "–"];
    const more = (p.also_at || []).length;
    if (more) {
      const open = state.expanded.has(p.rank);
      const b = el("button", { type: "button", class: "link places-toggle", "aria-expanded": String(open),
        "data-rank": p.rank, text: `+${more} more place${more === 1 ? "" : "s"}` });
      b.addEventListener("click", (e) => {
        e.stopPropagation();
        if (state.expanded.has(p.rank)) state.expanded.delete(p.rank); else state.expanded.add(p.rank);
        renderTable();
        const again = $("plan-table").querySelector(`button.places-toggle[data-rank="${p.rank}"]`);
        if (again) again.focus();
      });
      b.addEventListener("keydown", (e) => e.stopPropagation());
      out.push(el("span", { class: "sub" }, b));
    }
    return out;
  }

  function sortedPlans(cols) {
    const plans = state.result.plans.slice();
    const { key, dir } = state.sort;
    const col = cols.find((c) => c.key === key) || cols[0];
    plans.sort((a, b) => {
      const x = col.sort(a), y = col.sort(b);
      const c = typeof x === "string" || typeof y === "string" ? String(x).localeCompare(String(y)) : (x - y);
      return (c || a.rank - b.rank) * (c ? dir : 1);
    });
    return plans;
  }

  function onSort(key) {
    if (state.sort.key === key) state.sort = { key, dir: -state.sort.dir };
    else state.sort = { key, dir: 1 };
    renderTable();
    const again = $("plan-table").querySelector(`th button.sort[data-key="${key}"]`);
    if (again) again.focus();
    updateUrl();
  }

  function renderTable() {
    const result = state.result;
    if (!result) return;
    const table = $("plan-table");
    const cols = columns(result.workload);
    if (!cols.some((c) => c.key === state.sort.key)) state.sort = { key: "rank", dir: 1 };
    const thead = table.tHead;
    clear(thead);
    thead.appendChild(el("tr", null, cols.map((c) => {
      const sorted = state.sort.key === c.key;
      const button = el("button", { type: "button", class: "sort", "data-key": c.key }, [c.h,
        el("span", { class: "arrow", "aria-hidden": "true", text: sorted ? (state.sort.dir > 0 ? "▲" : "▼") : "↕" })]);
      button.addEventListener("click", () => onSort(c.key));
      return el("th", { class: [c.num ? "num" : "", c.cls || ""].join(" ").trim() || null, scope: "col",
        "aria-sort": sorted ? (state.sort.dir > 0 ? "ascending" : "descending") : null, "data-key": c.key }, button);
    })));
    const tbody = table.tBodies[0];
    clear(tbody);
    const front = frontSet();
    if (!result.plans.length) {
      tbody.appendChild(el("tr", { class: "empty" }, el("td", { colspan: cols.length, class: "muted",
        text: "No offer meets the constraints: relax the budget, deadline or GPU choice." })));
      return;
    }
    for (const p of sortedPlans(cols)) {
      const selected = p.rank === state.selectedRank;
      const tr = el("tr", { class: "plan-row" + (selected ? " selected" : ""), "data-rank": p.rank, tabindex: 0,
        "aria-current": selected ? "true" : null });
      for (const c of cols) {
        tr.appendChild(el("td", { class: [c.num ? "num" : "", c.cls || ""].join(" ").trim() || null }, c.v(p, front)));
      }
      const title = (p.risk_notes || []).concat(p.warnings || []).join("\n");
      if (title) tr.title = title;
      tr.addEventListener("click", () => select(p.rank));
      tr.addEventListener("keydown", (e) => {
        if (e.target === tr && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); select(p.rank); }
      });
      tbody.appendChild(tr);
      if (state.expanded.has(p.rank) && (p.also_at || []).length) {
        tbody.appendChild(el("tr", { class: "places", "data-places-of": p.rank }, el("td", { colspan: cols.length,
          text: `#${p.rank} is also at: ${p.also_at.join(", ")} (the same choice within 3% of this price).` })));
      }
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
    return Math.max(280, Math.round(w > 0 ? w : fallback));
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
    // Training: days on the axis, as in the table.
    const xOf = serve ? tpot : (p) => (isNum(p.wall_hours) ? p.wall_hours / 24 : null);
    const pts = result.plans.filter((p) => isNum(xOf(p)) && isNum(p.cost_usd) && p.cost_usd > 0 && xOf(p) > 0);
    const width = chartWidth(box, 720);
    const height = Math.round(Math.min(380, Math.max(240, width * 0.42)));
    if (!pts.length) {
      emptyChart(box, width, 70, result.plans.length ? "no plan has a time to plot" : "no plans to plot");
      return;
    }
    const m = { left: 64, right: 18, top: 14, bottom: 44 };
    const xs = scale(pts.map(xOf), m.left, width - m.right);
    const ys = scale(pts.map((p) => p.cost_usd), height - m.bottom, m.top);
    const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "group",
      "aria-label": serve ? "expected cost versus time per output token, one dot per plan"
        : "expected cost versus wall time, one dot per plan" });

    const grid = svg("g", { class: "grid", "aria-hidden": "true" });
    for (const t of xs.ticks) {
      const x = xs.f(t);
      grid.appendChild(svg("line", { class: "gridline", x1: x, x2: x, y1: m.top, y2: height - m.bottom }));
      grid.appendChild(svg("text", { x, y: height - m.bottom + 15, "text-anchor": "middle", text: fmtQty(t) }));
    }
    for (const t of ys.ticks) {
      const y = ys.f(t);
      grid.appendChild(svg("line", { class: "gridline", x1: m.left, x2: width - m.right, y1: y, y2: y }));
      grid.appendChild(svg("text", { x: m.left - 6, y: y + 4, "text-anchor": "end", text: fmtUsdShort(t) }));
    }
    root.appendChild(grid);
    root.appendChild(svg("line", { class: "axis", x1: m.left, x2: width - m.right, y1: height - m.bottom, y2: height - m.bottom }));
    root.appendChild(svg("line", { class: "axis", x1: m.left, x2: m.left, y1: m.top, y2: height - m.bottom }));
    const xLabel = (serve ? "time per output token, ms" : "expected wall time, days") + (xs.log ? " (log scale)" : "");
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
    const ordered = pts.filter((p) => !front.has(p.rank)).concat(pts.filter((p) => front.has(p.rank)));
    for (const p of ordered) {
      const onFront = front.has(p.rank);
      const time = serve ? `TPOT ${fmtMs(tpot(p))}` : fmtHours(p.wall_hours);
      const label = `#${p.rank} ${providerName(p)} ${p.gpu} ${nodesText(p)} (${fmtPricing(p.pricing)}): `
        + `${fmtUsd(p.cost_usd)} expected, p90 ${fmtUsd(p.cost_p90_usd)}, ${time}` + (onFront ? ", Pareto front" : "");
      const c = svg("circle", {
        class: "point " + (onFront ? "front" : "plan"),
        cx: xs.f(xOf(p)).toFixed(1), cy: ys.f(p.cost_usd).toFixed(1), r: onFront ? 6 : 4.5,
        "data-rank": p.rank, tabindex: 0, role: "button", "aria-label": `select plan ${label}`,
      });
      c.appendChild(svg("title", { text: label }));
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
      ["Rank", `#${p.rank}${frontSet().has(p.rank) ? " (Pareto front)" : ""}${p.ties_first ? ", ties with #1" : ""}`],
      ["Provider", `${providerName(p)} (${p.provider_kind || "?"})`],
      ["Instance", `${p.instance_type}, ${placesText(p.region)}${(p.also_at || []).length ? ` (also ${p.also_at.length} more places)` : ""}`],
      ["GPUs", `${p.nodes} node(s) × ${trim(p.gpus_per_node)} ${p.gpu} = ${p.gpus} GPUs, ${p.precision}`],
      ["Pricing", `${fmtPricing(p.pricing)}, ${fmtUsd(p.offer && p.offer.price_per_gpu_hour_usd)}/GPU-hour`],
    ];
    if (serve) {
      facts.push(["Replicas", `${p.replicas ?? "–"} × ${p.gpus_per_replica ?? "–"} GPU(s)`]);
      facts.push(["Throughput", `${fmtQty(p.output_tokens_per_s)} output tok/s, ${fmtUsd(p.cost_per_million_output_tokens_usd)}/M`]);
      facts.push(["Latency", `TTFT ${fmtMs(ttft(p))}, TPOT ${fmtMs(tpot(p))}`
        + (isNum(p.network_rtt_ms) ? `, RTT ${fmtMs(p.network_rtt_ms)}` : "")]);
    } else {
      facts.push(["Layout", layoutText(p.layout)]);
      facts.push(["Wall time", `${fmtHours(p.wall_hours)} expected, p90 ${fmtHours(p.wall_p90_hours)}`]);
      if (isNum(p.expected_interruptions) && p.expected_interruptions > 0) {
        facts.push(["Interruptions", `about ${Math.round(p.expected_interruptions)} expected`
          + (isNum(p.checkpoint_interval_min) ? `, checkpoint every ${Math.round(p.checkpoint_interval_min)} min` : "")]);
      }
    }
    facts.push(["Cost", `${fmtUsd(p.cost_usd)} expected (${costBand(p)})`]);
    facts.push(["GPU-hours", Math.round(p.gpu_hours).toLocaleString("en-US")]);
    facts.push(["Risk", isNum(p.risk) ? p.risk.toFixed(2) : "–"]);
    const offer = p.offer || {};
    facts.push(["Price as of", `${offer.as_of || "?"} (${p.price_age_days} days, ${p.confidence}${p.stale ? ", stale" : ""})`]);
    const dl = el("dl");
    for (const [k, v] of facts) { dl.appendChild(el("dt", { text: k })); dl.appendChild(el("dd", { text: v })); }
    box.appendChild(dl);
    const notes = (p.risk_notes || []).concat(p.warnings || []);
    if (notes.length) {
      box.appendChild(el("ul", { class: "notes small muted" }, notes.map((n) => el("li", { text: prose(n) }))));
    }
    renderBreakdown(p);
    syncPriceGpu(p.gpu);
  }

  function renderBreakdown(p) {
    const box = $("breakdown");
    clear(box);
    const cost = p.cost || {};
    const egressUnknown = (p.warnings || []).some((w) => /egress price unknown/.test(w));
    const parts = Object.entries(cost).filter(([k, v]) => k.endsWith("_usd") && isNum(v));
    const width = chartWidth(box, 440);
    if (!parts.length) { emptyChart(box, width, 60, "no cost breakdown"); return; }
    const total = parts.reduce((s, [, v]) => s + v, 0);
    const rowH = 24, top = 22, labelW = 70, valueW = 120;
    const height = top + parts.length * rowH + 6;
    const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": "cost breakdown" });
    root.appendChild(svg("text", { class: "title", x: 0, y: 13, text: `Cost breakdown: ${fmtUsd(total)} expected` }));
    const max = Math.max(...parts.map(([, v]) => v), 1e-9);
    const barMax = width - labelW - valueW;
    parts.forEach(([k, v], i) => {
      const y = top + i * rowH;
      const name = k.replace(/_usd$/, "").replace(/_/g, " ");
      const unknown = name === "egress" && v === 0 && egressUnknown;
      const g = svg("g", { class: "part" });
      g.appendChild(svg("text", { x: labelW - 8, y: y + 15, "text-anchor": "end", text: name }));
      const w = Math.max(v > 0 ? 2 : 0, (v / max) * barMax);
      const bar = svg("rect", { class: `bar part swatch-${i % 4}`, x: labelW, y: y + 4, width: w.toFixed(1), height: rowH - 8, rx: 2 });
      bar.appendChild(svg("title", { text: unknown ? "egress: price unknown, not included" : `${name}: ${fmtUsd(v)} (${total > 0 ? ((100 * v) / total).toFixed(1) : 0}%)` }));
      g.appendChild(bar);
      const pct = total > 0 ? ` · ${((100 * v) / total).toFixed(v / total < 0.01 && v > 0 ? 1 : 0)}%` : "";
      g.appendChild(svg("text", { class: "value", x: labelW + w + 6, y: y + 15, text: unknown ? "unknown (not included)" : `${fmtUsd(v)}${pct}` }));
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
    const rowH = 22, top = 22, valueW = 170;
    const labelW = Math.round(Math.min(width * 0.36, Math.max(70, longest * 6.6 + 14)));
    const height = top + rows.length * rowH + 6;
    const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img",
      "aria-label": `cheapest ${gpu} price per GPU-hour by provider` });
    root.appendChild(svg("text", { class: "title", x: 0, y: 13,
      text: `Cheapest ${gpu} $/GPU-hour by provider (${data.count} offers)` }));
    const max = rows[rows.length - 1].price_per_gpu_hour_usd;
    const barMax = Math.max(20, width - labelW - valueW);
    rows.forEach((o, i) => {
      const y = top + i * rowH;
      const name = o.provider_name || o.provider;
      const mine = plan && plan.provider === o.provider && plan.gpu === o.gpu;
      const own = mine && plan.offer && isNum(plan.offer.price_per_gpu_hour_usd) ? plan.offer.price_per_gpu_hour_usd : null;
      const g = svg("g", { class: "provider" });
      g.appendChild(svg("text", { x: labelW - 8, y: y + 15, "text-anchor": "end", text: clip(name, 26) }));
      const w = Math.max(2, (o.price_per_gpu_hour_usd / max) * barMax);
      const cls = "bar price" + (i === 0 ? " cheapest" : "") + (mine ? " selected" : "");
      const bar = svg("rect", { class: cls, x: labelW, y: y + 4, width: w.toFixed(1), height: rowH - 7, rx: 2,
        "data-provider": o.provider });
      bar.appendChild(svg("title", { text: `${name}: ${fmtUsd(o.price_per_gpu_hour_usd)}/GPU-hour, `
        + `${o.instance_type}, ${fmtPricing(o.pricing)}, ${o.region}, as of ${o.as_of} (${o.confidence})` }));
      g.appendChild(bar);
      const differs = own !== null && Math.abs(own - o.price_per_gpu_hour_usd) > 0.005;
      g.appendChild(svg("text", { class: "value", x: labelW + w + 6, y: y + 15,
        text: `$${o.price_per_gpu_hour_usd.toFixed(2)} ${fmtPricing(o.pricing)}` + (differs ? ` · selected $${own.toFixed(2)}` : "") }));
      root.appendChild(g);
    });
    box.appendChild(root);
  }

  function clip(text, n) { text = String(text); return text.length > n ? text.slice(0, n - 1) + "…" : text; }

  // ---- downloads -------------------------------------------------------------------------------

  function saveFile(text, name, type) {
    const url = URL.createObjectURL(new Blob([text], { type }));
    const a = el("a", { href: url, download: name });
    a.hidden = true;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }

  function safeName(text) { return String(text).replace(/[^A-Za-z0-9._-]+/g, "-"); }

  function baseName() { return safeName(`${state.result.model}-${state.result.workload}`); }

  function sizeText(text) {
    const n = new Blob([text]).size;
    return n >= 1024 ? `${(n / 1024).toFixed(1)} KB` : `${n} bytes`;
  }

  function downloaded(name, text, extra) {
    const box = $("download-status");
    clear(box);
    box.appendChild(document.createTextNode(`Saved ${name} (${sizeText(text)}).`));
    if (extra) append(box, [" ", extra]);
  }

  function csvCell(v) {
    let s = v === null || v === undefined ? "" : String(v);
    if (/^[=+\-@\t\r]/.test(s) && !/^-?\d/.test(s)) s = "'" + s; // no formulas when opened in a spreadsheet
    return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  }

  function planCsv() {
    const result = state.result;
    const ranking = whatIfActive() ? whatIfRanking() : null;
    const head = ["rank", "provider", "provider_name", "gpu", "instance_type", "region", "also_at", "pricing", "nodes",
      "gpus_per_node", "gpus", "wall_hours", "wall_p10_hours", "wall_p90_hours", "cost_usd", "cost_p10_usd", "cost_p90_usd",
      "rank_cost_usd", "ties_first", "pareto_front", "compute_usd", "storage_usd", "egress_usd", "other_usd", "risk",
      "price_per_gpu_hour_usd", "price_as_of", "price_age_days", "confidence", "stale"];
    if (result.workload === "serve") head.push("replicas", "gpus_per_replica", "ttft_ms", "tpot_ms", "network_rtt_ms", "cost_per_million_output_tokens_usd");
    if (ranking) head.push("whatif_rank", "whatif_cost_usd");
    const front = frontSet();
    const lines = [head.join(",")];
    for (const p of result.plans) {
      const c = p.cost || {}, o = p.offer || {};
      const row = [p.rank, p.provider, providerName(p), p.gpu, p.instance_type, p.region, (p.also_at || []).join(";"), p.pricing,
        p.nodes, p.gpus_per_node, p.gpus, p.wall_hours, p.wall_p10_hours, p.wall_p90_hours, p.cost_usd, p.cost_p10_usd,
        p.cost_p90_usd, p.rank_cost_usd, p.ties_first, front.has(p.rank), c.compute_usd, c.storage_usd, c.egress_usd,
        c.other_usd, p.risk, o.price_per_gpu_hour_usd, o.as_of, p.price_age_days, p.confidence, p.stale];
      if (result.workload === "serve") row.push(p.replicas, p.gpus_per_replica, ttft(p), tpot(p), p.network_rtt_ms, p.cost_per_million_output_tokens_usd);
      if (ranking) { const w = ranking.get(p.rank); row.push(w.position, w.cost); }
      lines.push(row.map(csvCell).join(","));
    }
    return lines.join("\r\n") + "\r\n";
  }

  function onDownloadCsv() {
    const text = planCsv();
    const name = `${baseName()}-plans.csv`;
    saveFile(text, name, "text/csv");
    downloaded(name, text, whatIfActive() ? "It includes the what-if rank and cost columns." : null);
  }

  function onDownloadJson() {
    const text = JSON.stringify(state.result, null, 1) + "\n";
    const name = `${baseName()}-plan.json`;
    saveFile(text, name, "application/json");
    downloaded(name, text, el("span", null, ["Make a report from it with ",
      el("code", { text: `gpuplan report --from ${name} --out report.html` }), "."]));
  }

  function onDownloadReport() {
    const text = reportHtml();
    const name = `${baseName()}-report.html`;
    saveFile(text, name, "text/html");
    downloaded(name, text, "Open it in a browser; it prints on A4 or Letter.");
  }

  function esc(s) {
    return String(s === null || s === undefined ? "" : s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  }

  /** A self-contained HTML report of the plan shown (no scripts, nothing fetched): the
   * recommendation and its band first, then the alternatives, assumptions, risks and price ages.
   * Built as text for a download, never parsed into this page. */
  function reportHtml() {
    const result = state.result;
    const plans = result.plans;
    const p = plans[0];
    const serve = result.workload === "serve";
    const kv = (rows) => `<dl>${rows.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`).join("")}</dl>`;
    const out = [];
    out.push("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">",
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
      `<title>${esc($("result-title").textContent)}</title><style>`,
      "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1f2933;margin:0;background:#fff}",
      "main{max-width:1100px;margin:0 auto;padding:24px}h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}",
      ".meta{color:#52606d;font-size:12px}.rec{border-left:4px solid #0b6bcb;padding:8px 14px;background:#f5f9fe}",
      ".headline{font-size:18px;font-weight:650;margin:4px 0 8px}dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0}",
      "dt{color:#52606d}dd{margin:0}.warn{background:#fff4e5;color:#8a4b00;padding:6px 10px;border-radius:6px}",
      "table{border-collapse:collapse;width:100%;font-size:12px}th,td{border-bottom:1px solid #e4e7eb;padding:4px 6px;text-align:left;vertical-align:top}",
      "th{background:#f0f4f8}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}",
      "@page{margin:12mm}@media print{body{font-size:10pt}main{padding:0;max-width:none}table{font-size:8pt}",
      "th,td{padding:2px 3px;word-break:break-word}tr,section{break-inside:avoid}}",
      "</style></head><body><main>");
    out.push(`<h1>${esc($("result-title").textContent)}</h1>`,
      `<p class="meta">gpuplan plan made ${esc(new Date().toISOString().slice(0, 16).replace("T", " "))} UTC · ${plans.length} plans ranked by the 75th percentile of each cost band · `
      + `reproduce: ${esc(location.href)}</p>`);
    out.push('<section class="rec" id="recommendation"><h2>Recommended</h2>');
    if (p) {
      out.push(`<p class="headline">${esc(headlineText(p))}</p>`);
      out.push(kv(planFacts(p, result).map(([k, v, band]) => [k, band ? `${v} (${band})` : v])));
      const warnings = planWarnings(p);
      if (warnings.length) out.push(`<p class="warn"><strong>Check before booking:</strong> ${warnings.slice(0, 5).map(esc).join("; ")}</p>`);
      out.push(`<h3>Why</h3><ul>${whyLines(result).map((w) => `<li>${esc(w)}</li>`).join("")}</ul>`);
      const tied = tiesOf(result);
      const named = tied.slice(0, 6).map((t) => `${shortName(t)} ${fmtUsdShort(t.cost_usd)}`).join(", ")
        + (tied.length > 6 ? ` and ${tied.length - 6} more` : "");
      out.push(`<p>${tied.length ? `<strong>Ties with #1</strong> (cost bands overlap): ${esc(named)}`
        : "No other plan's cost band overlaps #1's."}</p>`);
      const flips = (result.summary || {}).flips_first || [];
      if (flips.length) out.push(`<p><strong>What would change the recommendation:</strong> ${flips.map((f) => esc(prose(f))).join("; ")}</p>`);
    } else {
      out.push("<p class=\"headline\">No plan meets the constraints</p>");
      out.push(`<ul>${(result.why || []).map((w) => `<li>${esc(prose(w))}</li>`).join("")}</ul>`);
    }
    out.push("</section>");
    out.push('<section id="alternatives"><h2>Alternatives</h2><table><thead><tr>',
      ["#", "Provider", "GPU", "GPUs", "Pricing", "Region", serve ? "TPOT" : "Wall", "Expected cost", "p10–p90", "Risk", "Price date", "Confidence"]
        .map((h, i) => `<th${i >= 6 && i <= 9 || i === 0 || i === 3 ? ' class="n"' : ""}>${esc(h)}</th>`).join(""),
      "</tr></thead><tbody>");
    for (const q of plans) {
      const cells = [[q.rank, 1], [providerName(q)], [q.gpu], [q.gpus, 1], [fmtPricing(q.pricing)],
        [`${q.region || "–"}${(q.also_at || []).length ? ` +${q.also_at.length}` : ""}`],
        [serve ? fmtMs(tpot(q)) : fmtHours(q.wall_hours), 1], [fmtUsd(q.cost_usd), 1],
        [`${fmtUsdShort(isNum(q.cost_p10_usd) ? q.cost_p10_usd : q.cost_usd)}–${fmtUsdShort(q.cost_p90_usd)}${q.ties_first ? " =" : ""}`, 1],
        [isNum(q.risk) ? q.risk.toFixed(2) : "–", 1], [`${(q.offer || {}).as_of || ""}${q.stale ? " (stale)" : ""}`], [q.confidence]];
      out.push(`<tr>${cells.map(([v, n]) => `<td${n ? ' class="n"' : ""}>${esc(v)}</td>`).join("")}</tr>`);
    }
    out.push("</tbody></table></section>");
    const assumptions = [];
    const s = result.summary || {};
    if (s.ranked_by) assumptions.push(["ranked by", s.ranked_by]);
    for (const [k, v] of Object.entries(result.assumptions || {})) assumptions.push([k.replace(/_/g, " "), prose(flat(v))]);
    out.push(`<section id="assumptions"><h2>Assumptions</h2>${kv(assumptions)}</section>`);
    const risks = plans.slice(0, 5).filter((q) => (q.risk_notes || []).length || (q.warnings || []).length);
    out.push('<section id="risks"><h2>Risks (top plans)</h2>', risks.length ? `<ul>${risks.map((q) =>
      `<li><strong>${esc(shortName(q))}</strong>: ${(q.risk_notes || []).concat(q.warnings || []).map((n) => esc(prose(n))).join("; ")}</li>`).join("")}</ul>`
      : "<p>No risk notes on the top plans.</p>", "</section>");
    const dates = plans.map((q) => (q.offer || {}).as_of).filter(Boolean).sort();
    const conf = {};
    for (const q of plans) conf[q.confidence] = (conf[q.confidence] || 0) + 1;
    out.push(`<section id="price-ages"><h2>Price ages</h2>${kv(plans.length ? [
      ["price dates", dates.length ? `${dates[0]} to ${dates[dates.length - 1]}` : "–"],
      ["stale (older than 180 days)", `${plans.filter((q) => q.stale).length} of ${plans.length} plans`],
      ["confidence", Object.entries(conf).map(([k, v]) => `${k}: ${v}`).join(", ")],
    ] : [])}</section>`);
    out.push("<p class=\"meta\">Estimates, not quotes: prices carry their date and source; refresh the catalog before relying on stale ones.</p>");
    out.push("</main></body></html>\n");
    return out.join("\n");
  }

  // ---- export ----------------------------------------------------------------------------------

  const ORCHESTRATOR = { skypilot: "SkyPilot", dstack: "dstack", k8s: "Kubernetes" };

  async function onExport(event) {
    const button = event.currentTarget;
    const target = button.dataset.target;
    const p = selectedPlan();
    if (!state.request || !p) return;
    showError("");
    const body = { [state.request.kind]: state.request.body, rank: p.rank };
    button.disabled = true;
    const box = $("launch");
    try {
      const res = await api(`/api/export/${encodeURIComponent(target)}`, body);
      const text = await res.text();
      const name = filenameFrom(res.headers.get("content-disposition"))
        || safeName(`${state.result.model}-${state.result.workload}-rank${p.rank}.${target}.yaml`);
      saveFile(text, name, "application/yaml");
      showLaunch(target, name, text, p);
    } catch (e) {
      clear(box);
      box.hidden = false;
      box.classList.add("failed");
      box.appendChild(el("h3", { text: `No ${ORCHESTRATOR[target] || target} file for #${p.rank}` }));
      box.appendChild(el("p", { text: friendly(e) }));
      box.appendChild(el("p", { class: "small", text: "Try another export above; the options this message names "
        + "are on the command line: gpuplan export <target> --from plan.json (Plan JSON download)." }));
    } finally {
      button.disabled = false;
    }
  }

  /** After an export: the file's name, the launch command from its header, and what to do first. */
  function showLaunch(target, name, text, p) {
    const box = $("launch");
    clear(box);
    box.classList.remove("failed");
    box.hidden = false;
    const header = text.split("\n").filter((l) => l.startsWith("#")).map((l) => l.replace(/^#\s?/, ""));
    const launch = header.find((l) => /^launch:/i.test(l));
    const notes = header.filter((l) => /^(NOTE|WARNING):/.test(l));
    box.appendChild(el("h3", { text: `Saved ${name}: ${ORCHESTRATOR[target] || target} file for #${p.rank} ${providerName(p)} ${p.gpu}` }));
    if (launch) {
      const cmd = launch.replace(/^launch:\s*/i, "").replace(/<this file>/g, name);
      box.appendChild(el("p", { class: "muted small", text: "Launch it with:" }));
      box.appendChild(el("pre", { class: "code", "data-testid": "launch-command", text: cmd }));
    }
    const warnings = notes.filter((n) => n.startsWith("WARNING:"));
    const rest = notes.filter((n) => !n.startsWith("WARNING:"));
    const shown = warnings.concat(rest).slice(0, 6);
    if (shown.length) {
      box.appendChild(el("p", { class: "small", text: "Before launching:" }));
      box.appendChild(el("ul", { class: "small" }, shown.map((n) => el("li", { class: n.startsWith("WARNING:") ? "" : "muted", text: n }))));
      if (notes.length > shown.length) box.appendChild(el("p", { class: "muted small", text: `${notes.length - shown.length} more notes at the top of the file.` }));
    }
  }

  function filenameFrom(header) {
    if (!header) return null;
    const m = /filename="([^"]+)"/.exec(header);
    if (!m) return null;
    const safe = m[1].replace(/[^A-Za-z0-9._-]/g, "-");
    return safe || null;
  }

  async function copyFrom(id, button) {
    const input = $(id);
    input.select();
    let ok = false;
    try {
      await navigator.clipboard.writeText(input.value);
      ok = true;
    } catch (e) {
      ok = false;
    }
    const label = button.dataset.label || button.textContent;
    button.dataset.label = label;
    button.textContent = ok ? "Copied" : "Select and copy";
    setTimeout(() => { button.textContent = label; }, 1500);
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

  async function start() {
    state.listsReady = loadLists();
    await state.listsReady;
    const q = new URLSearchParams(location.search);
    if (!q.has("workload") && !q.has("model")) return;
    try {
      applyQuery(q);
    } catch (e) {
      showError(e.message, e.field);
      return;
    }
    onSubmit(null);
  }

  function init() {
    for (const f of FIELDS) f.def = rawValue(f);
    $("plan-form").addEventListener("submit", onSubmit);
    for (const r of document.querySelectorAll("input[name=workload]")) r.addEventListener("change", onWorkloadChange);
    $("model").addEventListener("change", onModelChange);
    $("method").addEventListener("change", onMethodChange);
    for (const id of ["providers", "regions", "min-confidence", "max-price-age", "allow-decentralized", "allow-unclustered"]) {
      $(id).addEventListener("change", updateCounts);
    }
    for (const i of $("kinds").querySelectorAll("input")) i.addEventListener("change", updateCounts);
    $("plan-form").addEventListener("input", (e) => {
      if (e.target.getAttribute && e.target.getAttribute("aria-invalid") === "true") e.target.removeAttribute("aria-invalid");
    });
    $("price-gpu").addEventListener("change", () => { state.priceGpuChosen = true; renderPriceChart(); });
    for (const b of document.querySelectorAll("button.export")) b.addEventListener("click", onExport);
    for (const id of ["wi-price", "wi-eff", "wi-fail", "wi-scope"]) $(id).addEventListener("change", onWhatIfInput);
    for (const id of ["wi-price", "wi-eff", "wi-fail"]) $(id).addEventListener("input", onWhatIfInput);
    $("wi-reset").addEventListener("click", () => setWhatIf({ price: 1, eff: 1, fail: 1, scope: "all" }, true));
    $("download-csv").addEventListener("click", onDownloadCsv);
    $("download-json").addEventListener("click", onDownloadJson);
    $("download-report").addEventListener("click", onDownloadReport);
    $("copy-link").addEventListener("click", (e) => copyFrom("share-link", e.currentTarget));
    $("copy-cli").addEventListener("click", (e) => copyFrom("cli-command", e.currentTarget));
    window.addEventListener("resize", onResize);
    onWorkloadChange();
    onModelChange();
    onMethodChange();
    start();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
