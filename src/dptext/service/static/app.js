"use strict";
// The dptext page: plain JS over the /v1 API; the key stays in this tab (sessionStorage).
const $ = (id) => document.getElementById(id);
let mechanisms = [];

function key() { return sessionStorage.getItem("dptext-key") || ""; }
function headers(json) {
  const h = { "Authorization": "Bearer " + key() };
  if (json) h["Content-Type"] = "application/json";
  return h;
}
async function api(path, options = {}) {
  const r = await fetch(path, options);
  const body = r.headers.get("content-type")?.includes("json") ? await r.json() : await r.text();
  if (!r.ok) throw new Error((body && body.error) || ("HTTP " + r.status));
  return body;
}
function params() {
  const p = {};
  const d = parseFloat($("document-epsilon").value);
  if (!Number.isNaN(d)) { p.document_epsilon = d; return p; }  // per record, not per token
  const e = parseFloat($("epsilon").value);
  if (!Number.isNaN(e)) p.epsilon = e;
  return p;
}
function showMechanism() {
  const m = mechanisms.find((x) => x.name === $("mechanism").value);
  if (!m) return;
  $("mech-help").textContent = m.summary + ". Epsilon: " + m.epsilon_meaning +
    (m.typical_epsilon ? ". Typical range: " + m.typical_epsilon : "") + ".";
  if (m.parameters.epsilon !== undefined && m.parameters.epsilon !== null) {
    $("epsilon").value = m.parameters.epsilon;
  } else {  // no default: the mechanism needs an epsilon (its typical range is the hint)
    $("epsilon").value = "";
    $("epsilon").placeholder = "required" + (m.typical_epsilon ? ": " + m.typical_epsilon : "");
  }
}
async function loadMechanisms() {
  try {
    mechanisms = await api("/v1/mechanisms", { headers: headers() });
    $("key-status").textContent = "Key accepted.";
    const sel = $("mechanism");
    sel.innerHTML = "";
    for (const m of mechanisms) {
      const o = document.createElement("option");
      o.value = m.name;
      o.textContent = m.name + (m.typical_epsilon ? " (epsilon " + m.typical_epsilon + ")" : "");
      sel.appendChild(o);
    }
    sel.value = mechanisms.some((m) => m.name === "custext") ? "custext" : mechanisms[0].name;
    showMechanism();
  } catch (err) { $("key-status").textContent = "Key refused: " + err.message; }
}
function render(text, spans) {
  const out = $("output");
  out.innerHTML = "";
  let pos = 0;
  for (const s of spans) {
    if (s.start > pos) out.appendChild(document.createTextNode(text.slice(pos, s.start)));
    const el = document.createElement("span");
    el.className = "tok " + s.kind;
    el.textContent = text.slice(s.start, s.end);
    el.title = s.kind + ": " + s.reason;
    el.tabIndex = 0;
    el.dataset.reason = s.kind + ": " + s.reason;
    const say = () => { $("hover-reason").textContent = el.dataset.reason; };
    el.addEventListener("mouseenter", say);
    el.addEventListener("focus", say);
    out.appendChild(el);
    pos = s.end;
  }
  if (pos < text.length) out.appendChild(document.createTextNode(text.slice(pos)));
}
async function showBudget(unit) {
  try {
    const b = await api("/v1/units/" + encodeURIComponent(unit) + "/budget?dataset=" +
      encodeURIComponent($("dataset").value), { headers: headers() });
    const left = b.remaining_epsilon === null ? "no budget set" :
      b.remaining_epsilon.toFixed(2) + " epsilon remaining";
    $("budget").textContent = unit + ": spent " + b.spent.epsilon_basic.toFixed(2) +
      " epsilon (basic composition) over " + b.spent.records + " records; " + left + ".";
  } catch (err) { $("budget").textContent = err.message; }
}
async function run() {
  $("run").disabled = true;
  try {
    const unit = $("unit").value.trim();
    const body = { texts: [$("text").value], mechanism: $("mechanism").value,
                   params: params(), dataset: $("dataset").value };
    if (unit) body.units = [unit];
    const r = await api("/v1/privatize", { method: "POST", headers: headers(true),
                                           body: JSON.stringify(body) });
    const res = r.results[0];
    $("out-box").hidden = false;
    if (res.withheld) {
      $("output").textContent = "Withheld: " + res.reason;
      $("report").textContent = "";
    } else {
      render(res.text, res.spans);
      $("report").textContent = JSON.stringify(res.report, null, 2);
    }
    if (unit) await showBudget(unit); else $("budget").textContent = "(no person given: each text is its own unit)";
  } catch (err) {
    $("out-box").hidden = false;
    $("output").textContent = "Error: " + err.message;
  } finally { $("run").disabled = false; }
}
async function estimate() {
  // the dry run: what this text would cost this person; nothing is privatized or charged
  $("estimate").disabled = true;
  const out = $("estimate-out");
  out.hidden = false;
  try {
    const unit = $("unit").value.trim();
    const body = { texts: [$("text").value], mechanism: $("mechanism").value,
                   params: params(), dataset: $("dataset").value };
    if (unit) body.units = [unit];
    const s = await api("/v1/estimate", { method: "POST", headers: headers(true),
                                          body: JSON.stringify(body) });
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
async function download(job, what) {
  const r = await fetch("/v1/jobs/" + job.id + "/" + what, { headers: headers() });
  if (!r.ok) return;
  const blob = await r.blob();
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = job.id + "-" + what + (what === "output" ? "." + job.format : what === "report" ? ".json" : ".jsonl");
  document.body.appendChild(a);
  a.click();
  a.remove();
}
function downloads(job) {
  const p = $("downloads");
  p.innerHTML = "";
  for (const what of ["output", "rejects", "report"]) {
    const b = document.createElement("button");
    b.type = "button";
    b.id = "download-" + what;
    b.textContent = "Download " + what;
    b.addEventListener("click", () => download(job, what));
    p.appendChild(b);
    p.appendChild(document.createTextNode(" "));
  }
}
async function upload() {
  const f = $("file").files[0];
  if (!f) { $("job-status").textContent = "Choose a file first."; return; }
  const form = new FormData();
  form.append("file", f);
  form.append("fields", $("fields").value);
  form.append("mechanism", $("mechanism").value);
  form.append("params", JSON.stringify(params()));
  form.append("dataset", $("dataset").value);
  if ($("unit-field").value.trim()) form.append("unit_field", $("unit-field").value.trim());
  $("downloads").innerHTML = "";
  try {
    let job = await api("/v1/jobs", { method: "POST", headers: headers(), body: form });
    $("progress").hidden = false;
    while (job.state === "queued" || job.state === "running") {
      $("progress").value = job.progress;
      $("job-status").textContent = job.state + ": " + job.records_done + " of " + job.records_total + " records";
      await new Promise((r) => setTimeout(r, 300));
      job = await api("/v1/jobs/" + job.id, { headers: headers() });
    }
    $("progress").value = 1;
    $("job-status").textContent = job.state === "done"
      ? "Done: " + job.released + " released, " + job.withheld + " withheld by budgets."
      : "Failed: " + job.error;
    if (job.state === "done") downloads(job);
  } catch (err) { $("job-status").textContent = "Error: " + err.message; }
}
async function setBudget() {
  try {
    const b = await api("/v1/budgets", { method: "POST", headers: headers(true), body: JSON.stringify({
      dataset: $("dataset").value, epsilon: parseFloat($("budget-eps").value) }) });
    $("budget-status").textContent = "Budget set: " + b.epsilon + " epsilon per person in " + b.dataset + ".";
  } catch (err) { $("budget-status").textContent = "Error: " + err.message; }
}
$("key-save").addEventListener("click", () => { sessionStorage.setItem("dptext-key", $("key").value.trim()); loadMechanisms(); });
$("mechanism").addEventListener("change", showMechanism);
$("run").addEventListener("click", run);
$("estimate").addEventListener("click", estimate);
$("upload").addEventListener("click", upload);
$("set-budget").addEventListener("click", setBudget);
const drop = $("drop");
drop.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); $("file").click(); } });
drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => { e.preventDefault(); drop.classList.remove("over"); $("file").files = e.dataTransfer.files; });
if (key()) { $("key").value = key(); loadMechanisms(); }
