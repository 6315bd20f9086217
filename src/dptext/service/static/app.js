"use strict";
// The dptext page: plain JS over the /v1 API (docs/service.md); the key stays in this tab
// (sessionStorage). Two ways to protect a text: entity mode (the default: the detected
// identifiers are replaced, the rest released verbatim and reported so) and whole-text
// mechanisms ("Stronger: rewrite every word").
const $ = (id) => document.getElementById(id);
let mechanisms = [];       // GET /v1/mechanisms
let datasetBudget = null;  // the per-person budget of the dataset, null: none set
let columns = [];          // the columns of the chosen file
let entityParams = null;   // the entity parameters the service lists (GET /v1/mechanisms)

// What a data steward chooses among: groups of the detector's categories
// (dptext.detect.categories; the service expands the group names).
const GROUPS = [
  { id: "names", label: "Names of people", send: ["PERSON"], cats: ["PERSON", "DENY_LIST"] },
  { id: "places", label: "Places and addresses", send: ["LOCATION", "STREET_ADDRESS", "ZIP_CODE"],
    cats: ["GPE", "LOC", "FAC", "STREET_ADDRESS", "ZIP_CODE"] },
  { id: "orgs", label: "Organisations (hospitals, employers)", send: ["ORG"], cats: ["ORG"] },
  { id: "dates", label: "Dates and ages", send: ["DATE", "AGE"], cats: ["DATE", "TIME", "AGE"] },
  { id: "contact", label: "Phones, e-mails, web and IP addresses", send: ["CONTACT", "IP_ADDRESS"],
    cats: ["PHONE_NUMBER", "EMAIL_ADDRESS", "URL", "IP_ADDRESS"] },
  { id: "ids", label: "Record, account and ID numbers", send: ["IDS"],
    cats: ["MEDICAL_RECORD", "ACCOUNT_NUMBER", "HEALTH_PLAN", "LICENSE_NUMBER", "VEHICLE_ID",
           "DEVICE_ID", "ID_NUMBER", "US_SSN", "US_PASSPORT", "US_DRIVER_LICENSE",
           "CREDIT_CARD", "IBAN_CODE"] },
];
const RESIDUAL_GROUP = { id: "residual", label: "Unusual token (safety net)" };
const WORD_KINDS = {
  privatized: "privatized", stopword: "kept (stopword)", oov: "out of vocabulary",
  non_sensitive: "non-sensitive", punctuation: "punctuation", rewritten: "rewritten",
};

function key() { return sessionStorage.getItem("dptext-key") || ""; }
function headers(json) {
  const h = { "Authorization": "Bearer " + key() };
  if (json) h["Content-Type"] = "application/json";
  return h;
}
async function api(path, options = {}) {
  const r = await fetch(path, options);
  const body = r.headers.get("content-type")?.includes("json") ? await r.json() : await r.text();
  if (!r.ok) {
    const err = new Error((body && body.error) || ("HTTP " + r.status));
    err.status = r.status;
    throw err;
  }
  return body;
}
function entityMode() { return $("mode-entities").checked && !$("mode-entities").disabled; }
function dataset() { return $("dataset").value.trim() || "default"; }

// ------------------------------------------------------------------ the request
function params() {
  const p = {};
  const d = parseFloat($("document-epsilon").value);
  if (!entityMode() && !Number.isNaN(d)) { p.document_epsilon = d; return p; }
  const e = parseFloat($("epsilon").value);
  if (!Number.isNaN(e)) p.epsilon = e;
  return p;
}
const WORD_POLICIES = { surrogate: "a made-up one", placeholder: "a placeholder such as [GPE]",
                        mechanism: "words drawn by the mechanism" };
function entities() {
  // the entity parameters (null in whole-text mode): only those the service lists
  if (!entityMode()) return null;
  const chosen = GROUPS.filter((g) => $("cat-" + g.id).checked).flatMap((g) => g.send);
  const all = { entities: chosen, detector: $("detector").value, name_policy: $("name-policy").value,
                word_policy: $("word-policy").value, residual: $("residual").value,
                check: $("check").checked };
  return Object.fromEntries(Object.entries(all).filter(([k]) => k in entityParams));
}
function showEntityParams() {
  // a parameter the service offers choices for: its select shows them
  const wp = entityParams && entityParams.word_policy;
  $("word-policy-box").hidden = !wp;
  if (wp && !$("word-policy").options.length) {
    for (const c of wp.choices || []) {
      const o = document.createElement("option");
      o.value = c;
      o.textContent = WORD_POLICIES[c] || c;
      $("word-policy").appendChild(o);
    }
    $("word-policy").value = wp.default;
  }
  showUnused();
}
function showUnused() {
  // the mechanism draws nothing when every policy replaces whole
  const unused = entityMode() && $("name-policy").value !== "mechanism" &&
    !$("word-policy-box").hidden && $("word-policy").value !== "mechanism";
  $("mech-unused").hidden = !unused;
}
function requestBody(texts, units) {
  const body = { texts, mechanism: $("mechanism").value, params: params(), dataset: dataset() };
  const ent = entities();
  if (ent) body.entities = ent;
  if (units) body.units = units;
  return body;
}

// ------------------------------------------------------------------ mechanisms
function groupOf(category) {
  if (category === "RESIDUAL") return RESIDUAL_GROUP;
  return GROUPS.find((g) => g.cats.includes(category)) || { id: "other", label: "Other identifier" };
}
function showMode() {
  const ent = entityMode();
  $("entity-controls").hidden = !ent;
  $("document-epsilon-box").hidden = ent;
  $("estimate").hidden = ent;  // the dry run counts whole-text mechanisms only
  $("estimate-out").hidden = true;
  $("mechanism-label").textContent = ent ? "Mechanism (for the words not replaced whole)" : "Mechanism";
  showUnused();
  fillMechanisms();
}
function fillMechanisms() {
  const sel = $("mechanism");
  const before = sel.value;
  sel.innerHTML = "";
  for (const m of mechanisms) {
    if (entityMode() && m.entities === false) continue;  // one that cannot run on spans
    const o = document.createElement("option");
    o.value = m.name;
    o.textContent = m.name + (m.typical_epsilon ? " (typical epsilon " + m.typical_epsilon + ")" : "");
    sel.appendChild(o);
  }
  const names = [...sel.options].map((o) => o.value);
  sel.value = names.includes(before) ? before : (names.includes("custext") ? "custext" : names[0]);
  showMechanism();
}
function showMechanism() {
  const m = mechanisms.find((x) => x.name === $("mechanism").value);
  if (!m) return;
  $("mech-help").textContent = m.summary + ". Epsilon: " + m.epsilon_meaning +
    (m.typical_epsilon ? ". Typical range: " + m.typical_epsilon : "") + ".";
  if (m.parameters.epsilon !== undefined && m.parameters.epsilon !== null) {
    $("epsilon").value = m.parameters.epsilon;
    $("epsilon").placeholder = "";
  } else {  // no default: the mechanism needs an epsilon (its typical range is the hint)
    $("epsilon").value = "";
    $("epsilon").placeholder = "required" + (m.typical_epsilon ? ": " + m.typical_epsilon : "");
  }
}
async function loadMechanisms() {
  try {
    mechanisms = await api("/v1/mechanisms", { headers: headers() });
    $("key-status").textContent = "Key accepted.";
    entityParams = (mechanisms.find((m) => m.entity_parameters) || {}).entity_parameters || null;
    showEntityParams();
    if (!entityParams) {  // an older service: never pretend to run entity mode
      $("mode-entities").disabled = true;
      $("mode-whole").checked = true;
      $("mode-note").textContent = "This server does not offer entity mode: every word is rewritten.";
      showMode();
    }
    fillMechanisms();
    loadBudget();
  } catch (err) { $("key-status").textContent = "Key refused: " + err.message; }
}

// ------------------------------------------------------------------ person and budget
let budgetSeq = 0;  // the latest budget request wins (a dataset change, then a new budget)
async function loadBudget() {
  // the dataset's per-person budget decides whether a person must be named
  const seq = ++budgetSeq;
  let epsilon = null;
  $("budget-status").textContent = "";
  try {
    epsilon = (await api("/v1/budgets/" + encodeURIComponent(dataset()), { headers: headers() })).epsilon;
  } catch (err) {
    if (err.status !== 404 && seq === budgetSeq) $("budget-status").textContent = "Could not read the budget: " + err.message;
  }
  if (seq !== budgetSeq) return;
  datasetBudget = epsilon;
  showPerson();
}
function showPerson() {
  const needed = datasetBudget !== null;
  $("unit").required = needed;
  $("unit").setAttribute("aria-required", String(needed));
  $("unit-label").textContent = needed ? "Person (required)" : "Person (optional)";
  $("unit-help").textContent = needed
    ? "This dataset has a budget of " + datasetBudget + " epsilon per person: name whose text " +
      "this is, so that it is charged to the right person."
    : "Leave empty and this text is its own unit: charged to no one's budget. Name the person " +
      "to compose all their texts.";
  $("budget-eps").placeholder = needed ? String(datasetBudget) : "none set";
  if (needed) $("budget-status").textContent = "Budget: " + datasetBudget + " epsilon per person in " + dataset() + ".";
  else if (!$("budget-status").textContent) $("budget-status").textContent = "No budget set for " + dataset() + ": nothing is withheld.";
  fillUnitField();
}
async function setBudget() {
  ++budgetSeq;
  try {
    const b = await api("/v1/budgets", { method: "POST", headers: headers(true), body: JSON.stringify({
      dataset: dataset(), epsilon: parseFloat($("budget-eps").value) }) });
    datasetBudget = b.epsilon;
    showPerson();
    $("budget-status").textContent = "Budget set: " + b.epsilon + " epsilon per person in " + b.dataset + ".";
  } catch (err) { $("budget-status").textContent = "Error: " + err.message; }
}
function unitLine(unit, b) {
  const left = b.remaining_epsilon === null || b.remaining_epsilon === undefined ? "no budget set"
    : b.remaining_epsilon.toFixed(2) + " epsilon remaining";
  return unit + ": spent " + b.spent_epsilon.toFixed(2) + " epsilon (basic composition) over " +
    b.records + " records; " + left + ".";
}
async function budgetLine(unit) {
  if (!unit) return "No person named: this text was its own unit, charged to no one's budget.";
  try {
    const b = await api("/v1/units/" + encodeURIComponent(unit) + "/budget?dataset=" +
      encodeURIComponent(dataset()), { headers: headers() });
    const left = b.remaining_epsilon === null ? "no budget set" :
      b.remaining_epsilon.toFixed(2) + " epsilon remaining";
    return unit + ": spent " + b.spent.epsilon_basic.toFixed(2) +
      " epsilon (basic composition) over " + b.spent.records + " records; " + left + ".";
  } catch (err) { return err.status === 404 ? unit + ": nothing spent yet." : err.message; }
}
function personMissing(unit, where) {
  if (datasetBudget === null || unit) return false;
  where.textContent = "Name the person: this dataset has a budget per person, and a text " +
    "without one would be charged to no one.";
  $("unit").focus();
  return true;
}

// ------------------------------------------------------------------ a text
function render(text, spans) {
  const out = $("output");
  out.innerHTML = "";
  const seen = new Map();
  let pos = 0;
  for (const s of spans) {
    if (s.kind === "verbatim") continue;  // released as written: shown plain
    if (s.start > pos) out.appendChild(document.createTextNode(text.slice(pos, s.start)));
    const el = document.createElement("span");
    const cat = s.kind === "entity" ? (s.category || "other") : null;
    if (cat) {
      const g = groupOf(cat);
      el.className = "tok ent g-" + g.id;
      seen.set("g-" + g.id, g.label);
    } else {
      el.className = "tok " + s.kind;
      seen.set(s.kind, WORD_KINDS[s.kind]);
    }
    el.textContent = text.slice(s.start, s.end);
    const label = (cat ? cat : s.kind) + ": " + s.reason;
    el.title = label;
    el.tabIndex = 0;
    el.dataset.reason = label;
    const say = () => { $("hover-reason").textContent = el.dataset.reason; };
    el.addEventListener("mouseenter", say);
    el.addEventListener("focus", say);
    out.appendChild(el);
    pos = s.end;
  }
  if (pos < text.length) out.appendChild(document.createTextNode(text.slice(pos)));
  const legend = $("legend");
  legend.innerHTML = "";
  for (const [cls, label] of seen) {
    const sp = document.createElement("span");
    sp.className = cls.startsWith("g-") ? "tok ent " + cls : "tok " + cls;
    sp.textContent = label;
    legend.appendChild(sp);
  }
  if (entityMode()) {
    const sp = document.createElement("span");
    sp.className = "tok plain";
    sp.textContent = "unmarked: released as written (not protected)";
    legend.appendChild(sp);
  }
}
async function run() {
  const unit = $("unit").value.trim();
  if (personMissing(unit, $("run-status"))) return;
  if (!$("text").value.trim()) { $("run-status").textContent = "Write or paste a text first."; $("text").focus(); return; }
  $("run").disabled = true;
  $("run-status").textContent = "Sanitizing...";
  try {
    const r = await api("/v1/privatize", { method: "POST", headers: headers(true),
      body: JSON.stringify(requestBody([$("text").value], unit ? [unit] : null)) });
    const res = r.results[0];
    $("out-box").hidden = false;
    $("report-details").open = false;  // a new result: its JSON behind "details" again
    $("hover-reason").textContent = "";
    if (res.withheld) {
      $("legend").innerHTML = "";
      $("output").textContent = "Withheld: " + res.reason;
      $("summary").textContent = res.summary || "";
      $("report").textContent = res.report ? JSON.stringify(res.report, null, 2) : "";
    } else {
      render(res.text, res.spans);
      $("summary").textContent = res.summary || (res.report && res.report.guarantee) || "";
      $("report").textContent = JSON.stringify(res.report, null, 2);
    }
    const b = r.budget && r.budget.units && r.budget.units[unit];
    $("budget").textContent = b ? unitLine(unit, b) : await budgetLine(unit);
    $("run-status").textContent = res.withheld ? "Withheld." : "Done.";
  } catch (err) {
    $("run-status").textContent = "Error: " + err.message;
  } finally { $("run").disabled = false; }
}
async function estimate() {
  // the dry run: what this text would cost this person; nothing is privatized or charged
  $("estimate").disabled = true;
  const out = $("estimate-out");
  out.hidden = false;
  try {
    const unit = $("unit").value.trim();
    const s = await api("/v1/estimate", { method: "POST", headers: headers(true),
      body: JSON.stringify(requestBody([$("text").value], unit ? [unit] : null)) });
    let text = "Estimate (nothing charged): this text would cost epsilon " +
      s.record_epsilon.max.toFixed(2) + " (basic composition, as charged) over " +
      s.tokens_charged.max + " privatized tokens.";
    if (s.budget !== null && s.budget !== undefined)
      text += s.records_withheld ? " It would be withheld: over the person's remaining budget." :
        " It fits the person's remaining budget.";
    else text += " No budget applies.";
    if (s.per_token_epsilon) text += " Per-token epsilon: " + s.per_token_epsilon.max.toPrecision(3) + ".";
    out.textContent = text;
  } catch (err) { out.textContent = "Error: " + err.message; }
  finally { $("estimate").disabled = false; }
}

// ------------------------------------------------------------------ a file
const ROLES = [["", "choose..."], ["field", "privatize"], ["keep", "keep as is (not protected)"],
               ["drop", "drop"], ["hash", "replace by a pseudonym (keyed hash)"]];
function fillUnitField() {
  const sel = $("unit-field");
  const before = sel.value;
  sel.innerHTML = "";
  const none = document.createElement("option");
  none.value = "";
  none.textContent = datasetBudget === null ? "none: each record is its own unit"
    : "choose (required: this dataset has a budget per person)";
  sel.appendChild(none);
  for (const c of columns) {
    const o = document.createElement("option");
    o.value = c.name;
    o.textContent = c.name;
    sel.appendChild(o);
  }
  sel.value = columns.some((c) => c.name === before) ? before : "";
}
async function chooseFile() {
  const f = $("file").files[0];
  $("job-box").hidden = true;
  $("job-status").textContent = "";
  if (!f) return;
  $("file-name").textContent = "Reading the columns of " + f.name + "...";
  try {
    const form = new FormData();
    form.append("file", f);
    const r = await api("/v1/columns", { method: "POST", headers: headers(), body: form });
    columns = r.columns.map((c) => (typeof c === "string" ? { name: c } : c));
    const body = $("columns").tBodies[0];
    body.innerHTML = "";
    for (const c of columns) {
      const tr = document.createElement("tr");
      const name = document.createElement("th");
      name.scope = "row";
      name.textContent = c.name;
      const ex = document.createElement("td");
      ex.className = "example";
      ex.textContent = c.example === undefined || c.example === null ? "" : String(c.example);
      const td = document.createElement("td");
      const sel = document.createElement("select");
      sel.id = "role-" + c.name;
      sel.dataset.column = c.name;
      sel.setAttribute("aria-label", "Release column " + c.name + " as");
      for (const [v, label] of ROLES) {
        const o = document.createElement("option");
        o.value = v;
        o.textContent = label;
        sel.appendChild(o);
      }
      sel.addEventListener("change", clearRefusal);
      td.appendChild(sel);
      tr.append(name, ex, td);
      body.appendChild(tr);
    }
    fillUnitField();
    $("columns-box").hidden = false;
    $("file-name").textContent = f.name + ": " + columns.length + " columns" +
      (r.records !== undefined ? ", " + r.records + " records" : "") + ".";
  } catch (err) {
    $("columns-box").hidden = true;
    $("file-name").textContent = f.name + ": " + err.message;
  }
}
function clearRefusal() {
  // a refusal of the choices made before ("not covered", "choose the person column") goes
  // as soon as the choices change
  if (!$("upload").disabled) $("job-status").textContent = "";
}
function roles() {
  const out = { field: [], keep: [], drop: [], hash: [], missing: [] };
  for (const sel of $("columns").querySelectorAll("select[data-column]"))
    (sel.value ? out[sel.value] : out.missing).push(sel.dataset.column);
  return out;
}
async function upload() {
  const f = $("file").files[0];
  const status = $("job-status");
  if (!f) { status.textContent = "Choose a file first."; return; }
  const unitField = $("unit-field").value;
  const r = roles();
  r.missing = r.missing.filter((c) => c !== unitField);  // the person column: dropped unless kept or hashed
  if (r.missing.length) {
    status.textContent = "Columns " + r.missing.join(", ") + " are not covered: choose privatize, " +
      "keep, drop or hash for each.";
    $("role-" + r.missing[0]).focus();
    return;
  }
  if (!r.field.length) { status.textContent = "Choose at least one column to privatize."; return; }
  if (datasetBudget !== null && !unitField) {
    status.textContent = "Choose the person column: this dataset has a budget per person.";
    $("unit-field").focus();
    return;
  }
  const form = new FormData();
  form.append("file", f);
  form.append("fields", r.field.join(","));
  for (const k of ["keep", "drop", "hash"]) if (r[k].length) form.append(k, r[k].join(","));
  form.append("mechanism", $("mechanism").value);
  form.append("params", JSON.stringify(params()));
  const ent = entities();
  if (ent) form.append("entities", JSON.stringify(ent));
  form.append("dataset", dataset());
  if (unitField) form.append("unit_field", unitField);
  $("downloads").innerHTML = "";
  $("job-box").hidden = true;
  $("upload").disabled = true;
  try {
    let job = await api("/v1/jobs", { method: "POST", headers: headers(), body: form });
    $("progress").hidden = false;
    while (job.state === "queued" || job.state === "running") {
      $("progress").value = job.progress;
      status.textContent = job.state + ": " + job.records_done + " of " + job.records_total + " records";
      await new Promise((res) => setTimeout(res, 300));
      job = await api("/v1/jobs/" + job.id, { headers: headers() });
    }
    $("progress").value = 1;
    if (job.state !== "done") { status.textContent = "Failed: " + job.error; return; }
    status.textContent = "Done: " + job.released + " released, " + job.withheld +
      " withheld by budgets" + (job.rejected ? ", " + job.rejected + " rejected (the rejects " +
      "file says why, never with the text)" : "") + ".";
    await showJob(job);
  } catch (err) { status.textContent = "Error: " + err.message; }
  finally { $("upload").disabled = false; }
}
function leakLine(job) {
  // dptext.deid.check over the upload and the released output (never the values)
  const leak = job.leak_check;
  if (!leak || !leak.ran) return job.entities ? "Leak check: not run." : "";
  const missing = leak.missing ? "; " + leak.missing + " record(s) not released (not compared)" : "";
  if (!leak.leaks) return "Leak check: passed - no identifier of the " + leak.compared +
    " released records was found in the output" + missing + ".";
  const cats = Object.entries(leak.by_category || {}).map(([c, k]) => c + " " + k).join(", ");
  const recs = (leak.leaking_records || []).map((i) => i + 1).join(", ");
  return "Leak check: FAILED - " + leak.leaks + " identifier(s) survived (" + cats + ") in " +
    "record(s) " + recs + " of the file (counted from 1, as in the rejects file)" + missing +
    ". Do not release this output as it is.";
}
async function showJob(job) {
  $("job-box").hidden = false;
  $("job-details").open = false;
  $("job-leaks").textContent = leakLine(job);
  $("job-summary").textContent = job.summary || "";
  $("job-leaks").className = job.leak_check && job.leak_check.leaks ? "alert" : "";
  $("job-budget").textContent = job.unit_field
    ? "Each record was charged to its person (column " + job.unit_field + ")" +
      (datasetBudget !== null ? ", within a budget of " + datasetBudget + " epsilon per person." : ".")
    : "No person column: each record was its own unit, charged to no one's budget.";
  downloads(job);
  try {  // the release report a reviewer reads, in a sandboxed frame (no script runs in it)
    const page = await fetch("/v1/jobs/" + job.id + "/html", { headers: headers() });
    $("job-report-page").srcdoc = page.ok ? await page.text() : "";
  } catch (err) { $("job-report-page").srcdoc = ""; }
  try {
    const rep = await api("/v1/jobs/" + job.id + "/report", { headers: headers() });
    $("job-report").textContent = typeof rep === "string" ? rep : JSON.stringify(rep, null, 2);
  } catch (err) { $("job-report").textContent = err.message; }
}
async function download(job, what) {
  const r = await fetch("/v1/jobs/" + job.id + "/" + what, { headers: headers() });
  if (!r.ok) return;
  const blob = await r.blob();
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = job.id + "-" + what + (what === "output" ? "." + job.format : what === "report"
    ? ".json" : what === "html" ? ".report.html" : ".jsonl");
  document.body.appendChild(a);
  a.click();
  a.remove();
}
function downloads(job) {
  const p = $("downloads");
  p.innerHTML = "";
  for (const what of ["output", "rejects", "report", "html"]) {
    const b = document.createElement("button");
    b.type = "button";
    b.id = "download-" + what;
    b.className = "secondary";
    b.textContent = "Download " + (what === "html" ? "report (HTML)" : what);
    b.addEventListener("click", () => download(job, what));
    p.appendChild(b);
    p.appendChild(document.createTextNode(" "));
  }
}

// ------------------------------------------------------------------ wiring
function buildCategories() {
  const box = $("categories");
  for (const g of GROUPS) {
    const label = document.createElement("label");
    label.className = "check";
    label.htmlFor = "cat-" + g.id;
    const box1 = document.createElement("input");
    box1.type = "checkbox";
    box1.id = "cat-" + g.id;
    box1.checked = true;
    const sw = document.createElement("span");
    sw.className = "swatch g-" + g.id;
    sw.setAttribute("aria-hidden", "true");
    label.append(box1, sw, document.createTextNode(" " + g.label));
    box.appendChild(label);
  }
}
buildCategories();
$("key-save").addEventListener("click", () => { sessionStorage.setItem("dptext-key", $("key").value.trim()); loadMechanisms(); });
$("key").addEventListener("keydown", (e) => { if (e.key === "Enter") $("key-save").click(); });
for (const r of document.querySelectorAll("input[name=mode]")) r.addEventListener("change", showMode);
$("mechanism").addEventListener("change", showMechanism);
$("name-policy").addEventListener("change", showUnused);
$("word-policy").addEventListener("change", showUnused);
$("dataset").addEventListener("change", loadBudget);
$("run").addEventListener("click", run);
$("estimate").addEventListener("click", estimate);
$("upload").addEventListener("click", upload);
$("set-budget").addEventListener("click", setBudget);
$("file").addEventListener("change", chooseFile);
$("unit-field").addEventListener("change", clearRefusal);
const drop = $("drop");
drop.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); $("file").click(); } });
drop.addEventListener("click", (e) => { if (e.target === drop) $("file").click(); });
drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => {
  e.preventDefault(); drop.classList.remove("over");
  $("file").files = e.dataTransfer.files;
  chooseFile();
});
showMode();
if (key()) { $("key").value = key(); loadMechanisms(); }
