/* The bundled API page: renders /openapi.json as a list of endpoints with their parameters,
 * request bodies and responses. No libraries, nothing fetched from elsewhere (the page works
 * offline and under the same strict CSP as the planner page); text only through textContent. */
"use strict";

(function () {
  function $(id) { return document.getElementById(id); }

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = String(v); else node.setAttribute(k, String(v));
    }
    for (const c of [].concat(children || [])) {
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return node;
  }

  let spec = null;

  function resolve(schema) {
    let s = schema || {};
    for (let i = 0; i < 10 && s.$ref; i++) {
      const path = s.$ref.replace(/^#\//, "").split("/");
      s = path.reduce((node, key) => (node ? node[key] : undefined), spec) || {};
    }
    return s;
  }

  function refName(schema) {
    if (schema && schema.$ref) return schema.$ref.split("/").pop();
    return null;
  }

  /** "number ≤ 1e16, > 0" style text for a property schema. */
  function typeText(schema) {
    const s = resolve(schema);
    if (s.anyOf) {
      const parts = s.anyOf.filter((x) => x.type !== "null").map(typeText);
      const nullable = s.anyOf.some((x) => x.type === "null");
      return parts.join(" or ") + (nullable ? " (optional)" : "");
    }
    const named = refName(schema);
    if (named) return `object ${named}`;
    if (s.enum) return `one of ${s.enum.map(String).join(", ")}`;
    let t = s.type || "object";
    if (t === "array") t = `list of ${typeText(s.items || {})}`;
    const limits = [];
    if (s.exclusiveMinimum !== undefined) limits.push(`> ${s.exclusiveMinimum}`);
    if (s.minimum !== undefined) limits.push(`≥ ${s.minimum}`);
    if (s.maximum !== undefined) limits.push(`≤ ${s.maximum}`);
    if (s.maxItems !== undefined) limits.push(`at most ${s.maxItems} items`);
    if (s.maxLength !== undefined) limits.push(`at most ${s.maxLength} characters`);
    return limits.length ? `${t} (${limits.join(", ")})` : t;
  }

  function propsTable(schema, depth) {
    const s = resolve(schema);
    const props = s.properties || {};
    const required = new Set(s.required || []);
    const rows = Object.entries(props).map(([name, p]) => {
      const r = resolve(p);
      const dflt = p.default !== undefined ? JSON.stringify(p.default) : r.default !== undefined ? JSON.stringify(r.default) : "";
      const desc = p.description || r.description || "";
      const cells = [el("td", { class: "name", text: name + (required.has(name) ? " *" : "") }),
        el("td", { text: typeText(p) }), el("td", { text: dflt }), el("td", { text: desc })];
      return el("tr", null, cells);
    });
    const table = el("table", null, [
      el("thead", null, el("tr", null, ["Field", "Type", "Default", "Meaning"].map((h) => el("th", { scope: "col", text: h })))),
      el("tbody", null, rows)]);
    const out = [el("div", { class: "table-wrap" }, table)];
    if (depth < 1) {
      for (const [name, p] of Object.entries(props)) {
        const inner = refName(p) ? p : null;
        if (inner && resolve(inner).properties) {
          out.push(el("details", null, [el("summary", { text: `${name}: ${refName(inner)}` }), ...propsTable(inner, depth + 1)]));
        }
      }
    }
    return out;
  }

  function endpoint(path, method, op, index) {
    const id = `op-${index}`;
    const card = el("section", { class: "card endpoint", id, "aria-labelledby": `${id}-h` });
    card.appendChild(el("h2", { id: `${id}-h` }, [el("span", { class: `method ${method}`, text: method.toUpperCase() }),
      el("code", { text: path }), el("span", { class: "muted small", text: op.summary || "" })]));
    if (op.description) card.appendChild(el("p", { text: op.description }));
    const params = op.parameters || [];
    if (params.length) {
      card.appendChild(el("h3", { text: "Parameters" }));
      const rows = params.map((p) => el("tr", null, [el("td", { class: "name", text: `${p.name}${p.required ? " *" : ""}` }),
        el("td", { text: p.in }), el("td", { text: typeText(p.schema || {}) }),
        el("td", { text: (p.schema && p.schema.default !== undefined) ? JSON.stringify(p.schema.default) : "" }),
        el("td", { text: p.description || (p.schema && p.schema.description) || "" })]));
      card.appendChild(el("div", { class: "table-wrap" }, el("table", null, [
        el("thead", null, el("tr", null, ["Name", "In", "Type", "Default", "Meaning"].map((h) => el("th", { scope: "col", text: h })))),
        el("tbody", null, rows)])));
    }
    const body = op.requestBody && op.requestBody.content && op.requestBody.content["application/json"];
    if (body) {
      const name = refName(body.schema) || "JSON";
      card.appendChild(el("h3", { text: `Request body: ${name}` }));
      const desc = resolve(body.schema).description;
      if (desc) card.appendChild(el("p", { class: "small", text: desc }));
      for (const node of propsTable(body.schema, 0)) card.appendChild(node);
    }
    card.appendChild(el("h3", { text: "Responses" }));
    card.appendChild(el("ul", null, Object.entries(op.responses || {}).map(([code, r]) => {
      const content = r.content || {};
      const types = Object.entries(content).map(([t, c]) => (refName(c.schema) ? `${t} (${refName(c.schema)})` : t));
      return el("li", { text: `${code}: ${r.description || ""}${types.length ? ` · ${types.join(", ")}` : ""}` });
    })));
    return card;
  }

  async function start() {
    try {
      const res = await fetch("/openapi.json", { headers: { accept: "application/json" } });
      if (!res.ok) throw new Error(`/openapi.json answered ${res.status}`);
      spec = await res.json();
    } catch (e) {
      const box = $("docs-error");
      box.textContent = `could not load the API description: ${e.message}`;
      box.hidden = false;
      return;
    }
    const info = spec.info || {};
    $("api-title").textContent = `${info.title || "API"} ${info.version || ""}`.trim();
    $("api-description").textContent = info.description || "";
    const toc = $("toc"), box = $("endpoints");
    let i = 0;
    for (const [path, methods] of Object.entries(spec.paths || {})) {
      for (const [method, op] of Object.entries(methods)) {
        const index = i++;
        toc.appendChild(el("li", null, el("a", { href: `#op-${index}`, text: `${method.toUpperCase()} ${path}` })));
        box.appendChild(endpoint(path, method, op, index));
      }
    }
    document.body.dataset.ready = "true";
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
