// The explorer's behaviour: swap the SVG laid out for the modules that are open, and decorate
// it (search matches, gradient colours, a parameter's path to the output, NaN/Inf marks).
"use strict";
const PAGE = JSON.parse(document.getElementById("graph-data").textContent);
const G = PAGE.graph;
const SVGS = {};  // expansion state (open modules, sorted, one a line) -> SVG text
const nodes = new Map(G.nodes.map(n => [n.id, n]));
const modules = new Map(G.modules.map(m => [m.path, m]));
const consumers = new Map();
for (const [a, b] of G.edges) {
  if (!consumers.has(a)) consumers.set(a, []);
  consumers.get(a).push(b);
}
const graphBox = document.getElementById("graph");
const tooltip = document.getElementById("tooltip");
const details = document.getElementById("details");
const statusLine = document.getElementById("status");
let open = new Set();
let matches = new Set();   // ids of nodes found by the search
let onPath = null;         // ids on the path from the chosen parameter to the output
let selected = null;

// --- which modules are open --------------------------------------------------------------------
function ancestors(path) {  // [path, its parent, ..., its top-level module]
  const out = [];
  for (let p = path; p; p = modules.get(p).parent) out.push(p);
  return out;
}
function keyOf(set) { return [...set].sort().join("\n"); }
function chain(path) { return new Set(ancestors(path)); }

// The element id a node is drawn as now: its own, or the box of the outermost closed module.
function shownAs(id) {
  const outer = ancestors(nodes.get(id).module).reverse();
  for (const p of outer) if (!open.has(p)) return "m-" + p;
  return id;
}

function show(set) {
  open = set;
  graphBox.innerHTML = SVGS[keyOf(set)];
  const level = [...depth.options].find(o => o.value && keyOf(levelState(o.value)) === keyOf(set));
  depth.value = level ? level.value : "";  // "–": some other set of modules is open
  decorate();
}

// The laid-out state closest to `wanted`: the most open modules among those wanted, `needed`
// included. Each module alone and no module at all are always laid out, so one is found.
function showNearest(wanted, needed) {
  let best = null;
  for (const key of Object.keys(SVGS)) {
    const state = key ? key.split("\n") : [];
    if ((best === null || state.length > best.length) && state.every(p => wanted.has(p)) &&
        needed.every(p => state.includes(p))) best = state;
  }
  const closed = [...wanted].filter(p => !best.includes(p));
  statusLine.textContent = closed.length ? `closed ${closed.join(", ")}: that combination of ` +
    "open modules was not laid out (explore(max_states=...) lays out more)" : "";
  show(new Set(best));
}

function expand(path) {
  showNearest(new Set([...open, ...ancestors(path)]), ancestors(path));
  const cluster = document.getElementById("c-" + path);
  if (cluster) cluster.scrollIntoView({block: "nearest", inline: "nearest"});
}

function collapse(path) {
  showNearest(new Set([...open].filter(p => !ancestors(p).includes(path))), []);
}

function openTo(id) {  // show a node itself, opening what holds it
  const module = nodes.get(id).module;
  if (module && shownAs(id) !== id) expand(module);
  select(id);
}

// --- what a node is -------------------------------------------------------------------------
const fmt = v => v === null || v === undefined ? "–" : Number(v).toPrecision(4);
const shape = s => "(" + s.join(", ") + (s.length === 1 ? ",)" : ")");

function describe(id) {
  if (id.startsWith("m-")) {
    const path = id.slice(2);
    const inside = G.nodes.filter(n => n.module === path || n.module.startsWith(path + "."));
    const params = inside.filter(n => n.kind === "param")
      .reduce((sum, n) => sum + n.shape.reduce((a, b) => a * b, 1), 0);
    const cls = modules.get(path).class;
    return `module ${path}${cls ? " (" + cls + ")" : ""}\n` +
      `${inside.filter(n => n.kind === "op").length} ops, ${params.toLocaleString("en")} ` +
      "parameters\nclick to open";
  }
  const n = nodes.get(id);
  const lines = [`${n.kind} ${n.name}`, `module  ${n.module || "(none)"}`];
  n.inputs.forEach((inp, i) => {
    const src = inp.node === null ? null : nodes.get(inp.node);
    const from = src ? `${src.name} ` : "constant ";
    lines.push(`in ${i}    ${from}${shape(inp.shape)} ${inp.dtype} ${src ? src.device : n.device}`);
  });
  lines.push(`out     ${shape(n.shape)} ${n.dtype} ${n.device}`);
  if (n.stats) {
    const s = n.stats;
    lines.push(`min ${fmt(s.min)}  max ${fmt(s.max)}  mean ${fmt(s.mean)}  std ${fmt(s.std)}`);
    lines.push(`NaN ${s.nan}  Inf ${s.inf}  of ${s.numel}`);
  }
  if (n.grad) lines.push(`grad norm ${fmt(n.grad.norm)}  NaN ${n.grad.nan}  Inf ${n.grad.inf}`);
  if (G.nonfinite.forward.includes(id)) lines.push("NaN/Inf first appears here (forward)");
  if (G.nonfinite.backward.includes(id)) lines.push("its gradient rule made the first NaN/Inf");
  return lines.join("\n");
}

function select(id) {
  selected = id;
  details.textContent = describe(id);
  if (nodes.has(id) && nodes.get(id).kind === "param" && backward.checked) choosePath(id);
  else decorate();
}

// --- decorating the drawing -------------------------------------------------------------------
function mark(ids, cls) {
  for (const id of ids) {
    const el = document.getElementById(shownAs(id));
    if (el) el.classList.add(cls);
  }
}

function decorate() {
  for (const el of graphBox.querySelectorAll("g.node, g.edge")) {
    el.classList.remove("match", "selected", "nonfinite", "origin", "onpath");
  }
  mark(G.nodes.filter(n => n.nonfinite).map(n => n.id), "nonfinite");
  mark(G.nonfinite.forward.concat(G.nonfinite.backward), "origin");
  mark(matches, "match");
  if (selected) {
    const el = document.getElementById(selected.startsWith("m-") ? selected : shownAs(selected));
    if (el) el.classList.add("selected");
  }
  colourGradients();
  document.body.classList.toggle("pathmode", onPath !== null);
  if (onPath) {
    mark(onPath, "onpath");
    for (const [a, b] of G.edges) {
      if (onPath.has(a) && onPath.has(b)) {
        const el = document.getElementById(shownAs(a) + ">" + shownAs(b));
        if (el) el.classList.add("onpath");
      }
    }
  }
}

// --- the backward view --------------------------------------------------------------------------
const backward = document.getElementById("backward");
const norms = G.nodes.map(n => n.grad && n.grad.norm).filter(v => v > 0).map(Math.log10);
const lo = Math.min(...norms), hi = Math.max(...norms);
function colour(norm) {  // blue for the smallest gradient norm, red for the largest (log scale)
  if (!(norm > 0)) return "#999999";
  const t = hi > lo ? (Math.log10(norm) - lo) / (hi - lo) : 1;
  return `hsl(${Math.round(240 * (1 - t))}, 85%, 45%)`;
}

function colourGradients() {
  for (const el of graphBox.querySelectorAll("g.edge path, g.edge polygon")) {
    el.style.stroke = "";
    el.style.fill = el.tagName === "polygon" ? "" : "none";
  }
  for (const el of graphBox.querySelectorAll("g.node polygon")) el.style.fill = "";
  if (!backward.checked) return;
  const strongest = new Map();  // drawn edge -> largest gradient norm flowing along it
  for (const [a, b] of G.edges) {
    const id = shownAs(a) + ">" + shownAs(b);
    const g = nodes.get(a).grad;
    const norm = g ? g.norm : null;
    if (!strongest.has(id) || norm > strongest.get(id)) strongest.set(id, norm);
  }
  for (const [id, norm] of strongest) {
    const el = document.getElementById(id);
    if (!el) continue;
    for (const part of el.querySelectorAll("path, polygon")) {
      part.style.stroke = colour(norm);
      if (part.tagName === "polygon") part.style.fill = colour(norm);
    }
  }
  for (const n of G.nodes) {
    const el = n.kind === "param" && document.getElementById(n.id);
    if (el && n.grad) el.querySelector("polygon").style.fill = colour(n.grad.norm);
  }
}

function choosePath(id) {
  onPath = null;
  if (id) {
    onPath = new Set([id]);
    const todo = [id];
    while (todo.length) {
      for (const next of consumers.get(todo.pop()) || []) {
        if (!onPath.has(next)) { onPath.add(next); todo.push(next); }
      }
    }
  }
  paramSelect.value = id || "";
  decorate();
}

// --- search ------------------------------------------------------------------------------------
const search = document.getElementById("search");
const results = document.getElementById("results");
search.addEventListener("input", () => {
  const q = search.value.trim().toLowerCase();
  matches = new Set(q ? G.nodes.filter(n => n.name.toLowerCase().includes(q) ||
                                         n.module.toLowerCase().includes(q)).map(n => n.id) : []);
  document.getElementById("matches").textContent = q ? `${matches.size} found` : "";
  results.innerHTML = "";
  for (const id of [...matches].slice(0, 50)) {
    const n = nodes.get(id);
    const li = document.createElement("li");
    li.innerHTML = "<a></a>";
    li.firstChild.textContent = `${n.name}${n.module ? " in " + n.module : ""}`;
    li.firstChild.addEventListener("click", () => openTo(id));
    results.appendChild(li);
  }
  decorate();
});

// --- controls ----------------------------------------------------------------------------------
const paramSelect = document.getElementById("param");
for (const n of G.nodes.filter(n => n.kind === "param" && n.grad)) {
  paramSelect.add(new Option(n.name, n.id));
}
paramSelect.addEventListener("change", () => choosePath(paramSelect.value || null));
backward.disabled = norms.length === 0;
backward.addEventListener("change", () => {
  if (!backward.checked) choosePath(null);
  else decorate();
  document.getElementById("legend").innerHTML = backward.checked ?
    `grad norm <span style="background:${colour(10 ** lo)}"></span> ` +
    `${(10 ** lo).toExponential(1)} … <span style="background:${colour(10 ** hi)}"></span> ` +
    `${(10 ** hi).toExponential(1)}` : "";
});

const depth = document.getElementById("depth");
const deepest = Math.max(0, ...G.modules.map(m => m.level));
const levelState = d => new Set(G.modules.filter(m => m.level < Number(d)).map(m => m.path));
depth.add(new Option("–", ""));
for (let d = 1; d <= deepest + 1; d++) depth.add(new Option(d > deepest ? "all" : d, d));
depth.addEventListener("change", () => {
  statusLine.textContent = "";
  if (depth.value) show(levelState(depth.value));
});

graphBox.addEventListener("click", event => {
  const node = event.target.closest("g.node");
  if (node && node.id.startsWith("m-")) expand(node.id.slice(2));
  else if (node) select(node.id);
  else {
    const cluster = event.target.closest("g.cluster");
    if (cluster && event.target.closest("text")) collapse(cluster.id.slice(2));
  }
});
graphBox.addEventListener("mouseover", event => {
  const node = event.target.closest("g.node");
  if (!node) return;
  tooltip.textContent = describe(node.id);
  tooltip.hidden = false;
});
graphBox.addEventListener("mousemove", event => {  // beside the pointer, inside the window
  const room = window.innerHeight - tooltip.offsetHeight - 8;
  tooltip.style.left = Math.min(event.clientX + 14, window.innerWidth - tooltip.offsetWidth - 8) +
    "px";
  tooltip.style.top = Math.min(event.clientY + 14, room) + "px";
});
graphBox.addEventListener("mouseout", event => {
  if (event.target.closest("g.node")) tooltip.hidden = true;
});

const origins = G.nonfinite.forward.concat(G.nonfinite.backward);
if (origins.length) {
  const banner = document.getElementById("nonfinite");
  banner.hidden = false;
  banner.textContent = "NaN/Inf first appears at: ";
  for (const id of origins) {
    const a = document.createElement("a");
    const n = nodes.get(id);
    const where = G.nonfinite.forward.includes(id) ? "forward" : "backward";
    a.textContent = `${n.name}${n.module ? " in " + n.module : ""} (${where}) `;
    a.addEventListener("click", () => openTo(id));
    banner.appendChild(a);
  }
}

async function inflate(packed) {  // base64 of gzip, as explore() wrote it
  const bytes = Uint8Array.from(atob(packed), c => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).text();
}

document.getElementById("heading").textContent = PAGE.heading;
Promise.all(Object.entries(PAGE.svgs).map(async ([key, packed]) => {
  SVGS[key] = await inflate(packed);
})).then(() => {
  show(new Set());
  document.body.dataset.ready = "true";  // what tests wait for
});
