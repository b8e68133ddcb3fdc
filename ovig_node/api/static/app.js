// The OVIG dashboard: plain JS over the JSON API, routed by the URL hash (#/, #/tasks/N, #/disputes/N,
// #/auditors). Every value from the chain is escaped: specs, manifests and reports are chosen by others.
// The server renders the task list into the page first (ovig_node/api/dashboard.py mirrors tasksPage) and
// inlines the tooltips' words (static/words.json), so both renderers say the same.
"use strict";

const view = document.getElementById("view");
const STATUSES = ["pending", "committed", "sampled", "opened", "verified", "disputed", "faulty"];
const MEANING = {
  pending: "batch not committed yet",
  committed: "in a committed root, not sampled",
  sampled: "sampled, not opened yet",
  opened: "opened: digests proven, files pinned",
  verified: "found valid: by a watcher you trust (your own, or one named with --trust-attester), or by a panel",
  disputed: "challenged: dispute open or undecided",
  faulty: "a panel found it faulty",
};
const PAGE = 25;
const WORDS = readWords();
let config = { gateway: null, labels: {}, contracts: {}, trusted: [] };
let routed = 0; // the latest navigation: a page whose data arrives after the reader moved on is not shown

function readWords() {
  // Missing only when index.html is served raw (not through `/`): tooltips are then left out.
  try { return JSON.parse(document.getElementById("words").textContent); } catch (error) { return { headers: {}, facts: {}, states: {} }; }
}

// --- helpers -------------------------------------------------------------------------------------

function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

async function getJSON(path) {
  const response = await fetch(path, { headers: { accept: "application/json" } });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.detail ? `${response.status}: ${body.detail}` : `${response.status}`);
  return body;
}

function eth(wei) {
  // Wei arrive as decimal strings: BigInt keeps them exact.
  const value = BigInt(wei);
  const whole = value / 10n ** 18n;
  // Cut to 6 decimals, then trailing zeros dropped (the other way round, 1.5000001 ETH read "1.500000").
  const frac = (value % 10n ** 18n).toString().padStart(18, "0").slice(0, 6).replace(/0+$/, "");
  return `${whole}${frac ? "." + frac : ""} ETH`;
}

// The API's own watcher nodes, by address: their attestations count as verified without any flag.
function ownNode(address) {
  return (config.trusted.find((t) => t.watcher === address) || {}).node || null;
}

function who(address) {
  if (!address) return '<span class="muted">—</span>';
  const label = config.labels[address] || Object.keys(config.contracts).find((n) => config.contracts[n] === address) ||
    ownNode(address);
  const short = `${address.slice(0, 6)}…${address.slice(-4)}`;
  return `<span class="mono" title="${esc(address)}">${esc(label ? `${label} (${short})` : short)}</span>`;
}

function when(unix) {
  if (unix == null) return "—";
  const date = new Date(unix * 1000);
  return date.toLocaleTimeString([], { hour12: false });
}

function cid(value) {
  if (!value) return '<span class="muted">—</span>';
  const short = value.length > 16 ? `${value.slice(0, 8)}…${value.slice(-6)}` : value;
  if (!config.gateway) return `<code title="${esc(value)}">${esc(short)}</code>`;
  const href = `${config.gateway.replace(/\/$/, "")}/ipfs/${encodeURIComponent(value)}`;
  return `<a href="${esc(href)}" target="_blank" rel="noopener" title="${esc(value)}"><code>${esc(short)}</code></a>`;
}

function hash(value) {
  return value ? `<code title="${esc(value)}">${esc(value.slice(0, 10))}…</code>` : '<span class="muted">—</span>';
}

// A state as the API names it: the badge says exactly that name (underscores as spaces), coloured by
// style.css's rule for it, with what it means on hover.
function badge(state) {
  const meaning = WORDS.states[state] || "";
  return `<span class="badge ${esc(state)}" data-status="${esc(state)}" title="${esc(meaning)}">${esc(String(state).replaceAll("_", " "))}</span>`;
}

// A dispute's verdict: "none" is no verdict yet, so no badge claims one; while the dispute is appealable, what
// its last round decided, which stands unless appealed.
function verdict(d) {
  if (d.verdict !== "none") return badge(d.verdict);
  if (d.status === "appealable" && d.outcome) {
    return `${badge(d.outcome)} <span class="muted">decided; stands unless appealed by ${when(d.appeal_until)}</span>`;
  }
  return `<span class="muted" title="${esc(WORDS.states.none)}">not decided yet</span>`;
}

function tip(label) {
  const words = WORDS.facts[label] || WORDS.headers[label];
  return words ? ` title="${esc(words)}"` : "";
}

function table(headers, rows, attrs = "") {
  const head = headers.map((h) => `<th${h.num ? ' class="num"' : ""}${tip(h.label ?? h)}>${esc(h.label ?? h)}</th>`).join("");
  const body = rows.length ? rows.join("") : `<tr><td colspan="${headers.length}" class="muted">none</td></tr>`;
  return `<table ${attrs}><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

function fact(label, html, attrs = "") {
  return `<div${tip(label)}${attrs ? " " + attrs : ""}><small>${esc(label)}</small>${html}</div>`;
}

// Coverage's "by how many keys": by_watchers[n] opened intervals had exactly n keys attest them sound; the
// API's last possible bucket (queries.MAX_LISTED) counts that many or more.
const MAX_LISTED = 16;
function byKeys(counts) {
  const keys = (i) => (i === 0 ? "no key" : `${i}${i === MAX_LISTED ? " or more" : ""} key${i === 1 ? "" : "s"}`);
  return counts.map((n, i) => `${n} by ${keys(i)}`).join(", ") || "—";
}

// Why the API trusts an attester, or that it does not.
function trust(w) {
  if (!w.trusted) return '<span class="muted">not trusted</span>';
  const node = ownNode(w.watcher);
  return node ? `your watcher node ${esc(node)}` : "trusted (--trust-attester)";
}

// What made an interval verified, in words (the API's verified_by).
function verifiedBy(v) {
  if (!v) return "";
  if (v.kind === "panel") return `verified by dispute ${v.dispute}'s panel`;
  if (v.kind === "watcher_state") return "verified by your own watcher node's replay (its state file)";
  const node = ownNode(v.watcher);
  const whose = node ? `your watcher node ${node}` : "a watcher you trust (--trust-attester)";
  return `verified by ${v.name || v.watcher}'s attestation: ${whose}`;
}

// The charts and tables print numbers the same way, so a reader can match a point to its row.
function num(value) {
  return value == null ? "—" : Number(value).toExponential(3);
}

// --- pages ---------------------------------------------------------------------------------------

async function tasksPage(params) {
  const query = new URLSearchParams({ limit: PAGE, offset: params.get("offset") || 0, order: "desc" });
  for (const key of ["status", "owner", "provider"]) if (params.get(key)) query.set(key, params.get(key));
  const page = await getJSON(`/api/tasks?${query}`);
  const rows = page.items.map((t) => `<tr data-task="${t.task}">
      <td><a href="#/tasks/${t.task}">task ${t.task}</a></td><td>${badge(t.status)}</td>
      <td>${who(t.owner)}</td><td>${who(t.provider)}</td><td class="num">${eth(t.reward)}</td>
      <td class="num">${t.total_steps} / ${t.stride} / ${t.intervals}</td>
      <td class="num">${t.committed_batches} / ${t.opened_batches} of ${t.batch_count}</td>
      <td class="num">${t.open_disputes}</td><td>${when(t.posted_at)}</td></tr>`);
  const options = ["", "posted", "accepted", "committed", "finalized", "slashed", "cancelled", "abandoned"]
    .map((s) => `<option value="${s}"${params.get("status") === s ? " selected" : ""}>${s || "any status"}</option>`).join("");
  const offset = page.offset;
  const nav = (o) => { const p = new URLSearchParams(params); p.set("offset", o); return `#/?${p}`; };
  const html = `<h1>Tasks <span class="muted">${page.total}</span></h1>
    <form class="filters" id="filters">
      <select name="status">${options}</select>
      <input name="owner" placeholder="owner 0x…" value="${esc(params.get("owner") || "")}" size="44">
      <input name="provider" placeholder="provider 0x…" value="${esc(params.get("provider") || "")}" size="44">
      <button>filter</button>
    </form>
    <section>${table(["task", "status", "owner", "provider", { label: "reward", num: 1 }, { label: "steps N / stride s / intervals K", num: 1 },
      { label: "batches committed / opened", num: 1 }, { label: "open disputes", num: 1 }, "posted"], rows, 'id="tasks"')}
      <div class="pager">
        ${offset > 0 ? `<a href="${nav(Math.max(0, offset - PAGE))}">← newer</a>` : ""}
        <span class="muted">${page.total ? offset + 1 : 0}–${offset + page.items.length} of ${page.total}</span>
        ${offset + PAGE < page.total ? `<a href="${nav(offset + PAGE)}">older →</a>` : ""}
      </div></section>`;
  const after = () => document.getElementById("filters").addEventListener("submit", (event) => {
    event.preventDefault();
    const p = new URLSearchParams();
    for (const [key, value] of new FormData(event.target)) if (value) p.set(key, value.trim());
    location.hash = `#/?${p}`;
  });
  return { html, after };
}

async function taskPage(id) {
  const [task, intervals, timeline, coverage] = await Promise.all([
    getJSON(`/api/tasks/${id}`), getJSON(`/api/tasks/${id}/intervals?limit=4096`), getJSON(`/api/tasks/${id}/timeline`),
    getJSON(`/api/tasks/${id}/coverage`),
  ]);
  const openings = await getJSON(`/api/tasks/${id}/openings`);
  const t = task.terms;
  const slashed = task.slashed
    ? `<section class="error">Slashed${task.slashed.dispute ? `: <a href="#/disputes/${task.slashed.dispute}">dispute ${task.slashed.dispute}</a> found an interval of batch ${task.slashed.batch} faulty`
      : `: batch ${task.slashed.batch} was not opened in time`} (by ${who(task.slashed.by)})${
      task.slashed.lead ? `; lead's share ${task.slashed.lead_paid ? "paid to" : "waits for earlier challenges, now"} ${who(task.slashed.lead)}` : ""}</section>`
    : "";
  const legend = STATUSES.map((s) => `<span title="${esc(MEANING[s])}"><i class="swatch s-${s}" data-legend="${s}"></i>${s}</span>`).join("");
  const disputeOf = {};
  for (const d of task.disputes) disputeOf[d.k] = d.dispute;
  const cells = intervals.items.map((iv) => {
    const tip = `interval ${iv.k} (batch ${iv.batch}, steps to ${iv.end_step}): ${iv.status}` +
      (iv.verified_by ? `, ${verifiedBy(iv.verified_by)}` : "") +
      (iv.end_digest ? `; end digest ${iv.end_digest}` : "") + (iv.watcher ? `; your watcher node's verdict: ${iv.watcher.verdict}` : "") +
      (iv.layer_one_score != null ? `; layer-one score ${iv.layer_one_score.toPrecision(3)}` : "") +
      iv.attestations.map((a) => `; attested sound by ${a.name || a.watcher}${a.trusted ? " (trusted)" : ""} on ${a.profile}`).join("") +
      (iv.attested_by > iv.attestations.length ? `; and ${iv.attested_by - iv.attestations.length} more` : "");
    const scored = iv.layer_one_score != null ? ` data-score="${iv.layer_one_score}"` : "";
    // The count shown is of trusted watchers: anyone may attest from as many keys as they like.
    const sound = iv.attestations.filter((a) => a.sound && a.trusted).length;
    const by = iv.verified_by ? ` data-verified-by="${esc(iv.verified_by.kind === "attestation" ? iv.verified_by.watcher : iv.verified_by.kind)}"` : "";
    const attrs = `class="cell s-${iv.status}" data-k="${iv.k}" data-status="${iv.status}" data-attested="${sound}"${scored}${by} title="${esc(tip)}"`;
    const label = `${iv.k}${sound ? `<sup class="attested">${sound}</sup>` : ""}`;
    const dispute = iv.disputes.length ? iv.disputes[iv.disputes.length - 1] : null;
    return dispute ? `<a href="#/disputes/${dispute}" ${attrs}>${label}</a>` : `<div ${attrs}>${label}</div>`;
  }).join("");
  const more = intervals.total > intervals.items.length ? `<p class="muted">first ${intervals.items.length} of ${intervals.total} intervals</p>` : "";
  const batches = task.batches.map((b) => `<tr><td>${b.j}</td><td>${badge(b.status)}</td><td>${hash(b.root)}</td>
      <td>${b.sampled.length ? esc(b.sampled.join(", ")) : '<span class="muted">—</span>'}</td><td>${cid(b.manifest_cid)}</td>
      <td>${cid(b.opening_cid)}</td><td>${when(b.opening_window_end)}</td><td>${when(b.challenge_window_end)}</td></tr>`);
  const opened = openings.map((o) => `<tr><td>${o.k}</td><td>${hash(o.start_digest)}</td><td>${hash(o.end_digest)}</td>
      <td>${cid(o.opening_cid)}</td><td class="num">${o.block}</td></tr>`);
  const disputes = task.disputes.map((d) => `<tr><td><a href="#/disputes/${d.dispute}">dispute ${d.dispute}</a></td>
      <td>${d.k}</td><td>${esc(d.reason)}</td><td>${badge(d.status)}</td><td>${verdict(d)}</td>
      <td>${who(d.challenger)}</td><td>${cid(d.report_cid)}</td></tr>`);
  const share = (n) => (coverage.opened ? `${n} of ${coverage.opened} opened (${Math.round((100 * n) / coverage.opened)}%)` : "none opened yet");
  const attesters = coverage.watchers.map((w) => `<tr data-watcher="${esc(w.watcher)}"><td>${who(w.watcher)}</td><td>${trust(w)}</td>
      <td class="num">${w.intervals}</td><td>${esc(w.profiles.join("; "))}</td></tr>`);
  const trustedList = config.trusted.map((t) => `${who(t.watcher)} <span class="muted">${t.node ? `your watcher node ${esc(t.node)}` : "--trust-attester"}</span>`)
    .join("; ") || '<span class="muted">none: run a watcher, or name one with --trust-attester</span>';
  const payouts = task.payouts.map((p) => `<tr><td>${who(p.account)}</td><td>${esc(p.contract)}</td>
      <td class="num">${eth(p.amount)}</td><td class="num">${p.block}</td></tr>`);
  const events = timeline.map((e) => `<li data-kind="${e.kind}" class="${e.upcoming ? "upcoming" : ""}">
      <span class="mono">${when(e.time)}</span><span class="kind">${esc(e.kind)}</span><span class="text">${esc(e.text)}</span></li>`).join("");
  return `<h1>Task ${task.task} ${badge(task.status)}</h1>${slashed}
    <section class="facts">${fact("owner", who(task.owner))}${fact("provider", who(task.provider))}
      ${fact("reward", eth(task.reward))}${fact("provider bond", eth(t.provider_bond))}${fact("challenger bond", eth(t.challenger_bond))}
      ${fact("steps N / stride s", `${t.total_steps} / ${t.stride}`)}${fact("intervals K / per batch m", `${task.intervals} / ${t.intervals_per_batch}`)}
      ${fact("sampled per batch", `${t.sample_bps / 100}%`)}${fact("windows: opening / challenge / reveal", `${t.windows.opening} / ${t.windows.challenge} / ${t.windows.reveal} s`)}
      ${fact("commit deadline", when(t.deadline))}${fact("spec", cid(task.spec_cid))}${fact("spec hash", hash(t.spec_hash))}</section>
    <div class="columns"><div>
      <h2>Intervals</h2><section><div class="legend" id="legend">${legend}</div><div class="grid" id="intervals">${cells}</div>${more}</section>
      <h2>Coverage</h2><section id="coverage"><div class="facts">${fact("attested by a trusted watcher", share(coverage.trusted_attested))}
        ${fact("attested by any key (untrusted too)", share(coverage.attested))}
        ${fact("opened intervals by attesting keys", byKeys(coverage.by_watchers), 'id="by-keys"')}
        ${fact("execution profiles (any key)", String(coverage.profiles))}${fact("attesting keys", String(coverage.watcher_count))}
        ${fact("trusted watchers", trustedList, 'id="trusted"')}</div>
        ${table(["watcher", "trust", { label: "intervals attested", num: 1 }, "profiles"], attesters, 'id="attesters"')}</section>
      <h2>Batches</h2><section>${table(["j", "status", "root", "sampled", "manifest", "opening manifest", "opening window", "challenge window"], batches, 'id="batches"')}</section>
      <h2>Openings</h2><section>${table(["k", "start digest", "end digest", "opening manifest", { label: "block", num: 1 }], opened, 'id="openings"')}</section>
      <h2>Disputes</h2><section>${table(["dispute", "interval", "reason", "status", "verdict", "lead", "report"], disputes, 'id="disputes"')}</section>
      <h2>Payouts</h2><section>${table(["account", "contract", { label: "amount", num: 1 }, { label: "block", num: 1 }], payouts, 'id="payouts"')}</section>
    </div><div><h2>Timeline</h2><section><ol class="timeline" id="timeline">${events}</ol></section></div></div>`;
}

async function disputePage(id) {
  const dispute = await getJSON(`/api/disputes/${id}`);
  let report = null;
  let reportError = null;
  try { report = await getJSON(`/api/disputes/${id}/report`); } catch (error) { reportError = error.message; }
  const rounds = dispute.rounds.map((r) => `<h2>Round ${r.round} <span class="muted">commit until ${when(r.commit_end)}, reveal until ${when(r.reveal_end)}</span></h2>
    <section>${table(["panelist", "committed", "vote"], r.votes.map((v) => `<tr data-panelist="${esc(v.panelist)}"><td>${who(v.panelist)}</td>
      <td>${v.committed ? "yes" : "no"}</td><td>${v.vote ? badge(v.vote) : '<span class="muted">not revealed</span>'}</td></tr>`), `id="round-${r.round}"`)}</section>`).join("");
  const payouts = dispute.payouts.map((p) => `<tr><td>${who(p.account)}</td><td>${esc(p.contract)}</td><td class="num">${eth(p.amount)}</td></tr>`);
  // The heading's badge is the dispute's status, as the task page's is the task's: its verdict is a fact of its own.
  return `<h1>Dispute ${dispute.dispute} ${badge(dispute.status)}</h1>
    <section class="facts">${fact("task", `<a href="#/tasks/${dispute.task}">task ${dispute.task}</a>`)}${fact("interval", dispute.k)}
      ${fact("reason", esc(dispute.reason))}${fact("status", badge(dispute.status), 'id="dispute-status"')}
      ${fact("verdict", verdict(dispute), 'id="dispute-verdict"')}${fact("round", dispute.round)}
      ${fact("lead", who(dispute.challenger))}${fact("joined", dispute.joined)}${fact("report", cid(dispute.report_cid))}</section>
    <h2>Challenger's report: replay against the boundary</h2>
    <section id="report">${report ? reportView(report) : `<p class="error">${esc(reportError)}</p>`}</section>
    ${rounds}
    <h2>Settlement payouts</h2><section>${table(["account", "contract", { label: "amount", num: 1 }], payouts, 'id="settlement"')}</section>`;
}

function reportView(report) {
  const head = `<p>verdict ${badge(report.verdict)} <span class="muted">${esc(report.reason)}</span>
    ${report.margin != null ? ` — furthest outside by 10<sup>${Number(report.margin).toFixed(1)}</sup>` : ""}</p>
    ${report.detail ? `<p class="muted">${esc(report.detail)}</p>` : ""}
    <div class="key"><span><i style="border-color: var(--accent)"></i>replay difference</span>
      <span><i style="border-color: #94a3b8"></i>honest bound</span>
      <span><i style="border-color: var(--s-faulty); border-top-style: dashed"></i>limit = max(alpha × bound, floor)</span></div>`;
  const figures = [];
  for (const [signal, kinds] of Object.entries(report.signals || {})) {
    for (const [kind, rows] of Object.entries(kinds)) {
      const body = rows.map((r) => `<tr><td>p${esc(r.p)}</td><td class="num value">${num(r.value)}</td><td class="num bound">${num(r.bound)}</td>
        <td class="num limit">${num(r.limit)}</td><td class="${r.ok ? "" : "out"}">${r.ok ? "within" : "OUT"}</td></tr>`);
      figures.push(`<figure data-signal="${esc(signal)}" data-kind="${esc(kind)}"><figcaption>${esc(signal)} · ${esc(kind)}</figcaption>
        ${chart(rows, `${signal} ${kind}`)}${table(["percentile", { label: "replay", num: 1 }, { label: "bound", num: 1 }, { label: "limit", num: 1 }, "within limit"], body)}</figure>`);
    }
  }
  return head + (figures.length ? `<div class="charts">${figures.join("")}</div>` : '<p class="muted">the report has no percentile rows</p>');
}

// One signal and kind: percentiles on x, log10 of the values on y; the replay's points turn red where
// they pass the limit.
function chart(rows, title) {
  const W = 400, H = 230, L = 52, R = 14, T = 14, B = 34;
  const positive = rows.flatMap((r) => [r.value, r.bound, r.limit]).filter((v) => v != null && v > 0);
  if (!positive.length) return '<p class="muted">no positive values to chart</p>';
  let lo = Math.floor(Math.log10(Math.min(...positive)));
  let hi = Math.ceil(Math.log10(Math.max(...positive)));
  if (hi === lo) hi = lo + 1;
  const x = (i) => L + (rows.length === 1 ? (W - L - R) / 2 : (i * (W - L - R)) / (rows.length - 1));
  const y = (v) => T + ((hi - (v > 0 ? Math.log10(v) : lo)) * (H - T - B)) / (hi - lo);
  const step = Math.max(1, Math.ceil((hi - lo) / 6));
  let grid = "";
  for (let e = lo; e <= hi; e += step) {
    grid += `<line class="gridline" x1="${L}" x2="${W - R}" y1="${y(10 ** e)}" y2="${y(10 ** e)}"/>` +
      `<text x="${L - 6}" y="${y(10 ** e) + 3}" text-anchor="end">1e${e}</text>`;
  }
  const labels = rows.map((r, i) => `<text x="${x(i)}" y="${H - B + 16}" text-anchor="middle">p${esc(r.p)}</text>`).join("");
  const path = (key) => rows.map((r, i) => (r[key] > 0 ? `${i ? "L" : "M"}${x(i).toFixed(1)},${y(r[key]).toFixed(1)}` : ""))
    .filter(Boolean).join(" ").replace(/^L/, "M");
  const points = rows.filter((r) => r.value > 0).map((r) => `<circle class="${r.ok ? "ok" : "out"}" cx="${x(rows.indexOf(r)).toFixed(1)}"
    cy="${y(r.value).toFixed(1)}" r="4"><title>p${esc(r.p)}: ${num(r.value)} (limit ${num(r.limit)})</title></circle>`).join("");
  return `<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(title)}">${grid}
    <line class="axis" x1="${L}" x2="${L}" y1="${T}" y2="${H - B}"/><line class="axis" x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}"/>
    ${labels}<path class="bound" d="${path("bound")}"/><path class="limit" d="${path("limit")}"/><path class="value" d="${path("value")}"/>${points}</svg>`;
}

async function auditorsPage() {
  const auditors = await getJSON("/api/auditors");
  const rows = auditors.map((a) => `<tr><td>${who(a.address)}</td><td class="num">${eth(a.stake)}</td><td class="num">${eth(a.locked)}</td>
    <td class="num">${a.registered_block}</td><td>${a.exited ? "exited" : a.exit_requested ? `exit from ${when(a.exit_at)}` : "active"}</td></tr>`);
  return `<h1>Auditors <span class="muted">${auditors.length}</span></h1>
    <section>${table(["auditor", { label: "stake", num: 1 }, { label: "locked", num: 1 }, { label: "registered (block)", num: 1 }, "state"], rows, 'id="auditors"')}</section>`;
}

// --- routing and health --------------------------------------------------------------------------

async function route() {
  const token = ++routed;
  const [path, search] = (location.hash.slice(1) || "/").split("?");
  const params = new URLSearchParams(search || "");
  const parts = path.split("/").filter(Boolean);
  try {
    let page;
    if (parts[0] === "tasks" && parts[1]) page = await taskPage(Number(parts[1]));
    else if (parts[0] === "disputes" && parts[1]) page = await disputePage(Number(parts[1]));
    else if (parts[0] === "auditors") page = await auditorsPage();
    else page = await tasksPage(params);
    if (token !== routed) return; // the reader followed a link (of the server's page, say) meanwhile
    view.innerHTML = page.html ?? page;
    if (page.after) page.after();
    view.dataset.ready = location.hash || "#/";
  } catch (error) {
    if (token !== routed) return;
    view.innerHTML = `<p class="error">${esc(error.message)}</p>`;
    view.dataset.ready = "error";
  }
}

async function health() {
  const badge = document.getElementById("health");
  try {
    const h = await getJSON("/health");
    badge.textContent = `chain ${h.chain_id ?? "?"} · head ${h.head_block ?? "?"} · indexed ${h.indexed_block ?? "?"} · lag ${h.lag_blocks ?? "?"}`;
    badge.className = h.ok ? "health" : "health bad";
    badge.title = h.error || "indexer healthy";
  } catch (error) {
    badge.textContent = "API unreachable";
    badge.className = "health bad";
  }
}

async function start() {
  try { config = await getJSON("/api/config"); } catch (error) { /* links and labels are optional */ }
  window.addEventListener("hashchange", () => { view.dataset.ready = ""; route(); });
  await Promise.all([route(), health()]);
  setInterval(health, 5000);
}

start();
