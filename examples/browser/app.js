// The browser example's logic (index.html): a live view of one bucket + prefix. An S3Inspector (no node
// id, no lease) lists every cell (owner, epoch, status, the owner's lease expiry and age) and every node
// lease once a second. Claiming makes the page a node of its own (an S3Ownership with a random id, created
// at the first claim, its lease kept renewed); the view itself never needs one. It only displays what the
// library answers: liveness is the library's peer rule, never recomputed here. Where the store is comes
// from the server (/store); the keys are short-lived ones for this prefix only, asked of the server
// (/credentials) whenever the library needs fresh ones: the page never sees long-lived keys.
import { S3Inspector, S3Ownership } from "celld-edge";

const $ = (id) => document.getElementById(id);
const REFRESH_MS = 1000;
let store = null; // the connection options, shared by the view and this page's node
let view = null;
let own = null;
let node = "";
let refreshing = false;
let listed = new Set(); // the cells of the last listing

function status(text, isError = false) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

/** What the last claim or release said, until the next one: shown under the listing's summary. */
function notice(text, isError = true) {
  $("notice").textContent = text;
  $("notice").className = isError ? "error" : "";
}

/** `1.2s`, `350ms`, `3m05s`: short enough for a table cell. */
function duration(ms) {
  const a = Math.abs(ms);
  if (a < 1000) return `${Math.round(a)}ms`;
  if (a < 60_000) return `${(a / 1000).toFixed(1)}s`;
  return `${Math.floor(a / 60_000)}m${String(Math.floor((a % 60_000) / 1000)).padStart(2, "0")}s`;
}
const expiry = (ms) => (ms === null ? "" : ms >= 0 ? `in ${duration(ms)}` : `${duration(ms)} ago`);
const ago = (ms) => (ms === null ? "" : `${duration(Math.max(0, ms))} ago`);

/** Replaces the body of `table` with one row per entry: `cells` maps column class -> text. */
function fill(table, entries, key, columns, decorate = () => {}) {
  const body = $(table).tBodies[0];
  body.replaceChildren();
  for (const entry of entries) {
    const tr = body.appendChild(document.createElement("tr"));
    tr.dataset[key] = entry[key];
    for (const [cls, text] of Object.entries(columns(entry))) {
      Object.assign(tr.appendChild(document.createElement("td")), { className: cls, textContent: text });
    }
    decorate(tr, entry);
  }
  $(table).hidden = false;
}

function cellColumns(c) {
  const owner = c.released ? "(released)" : c.node === null ? "?" : c.node + (c.node === node ? " (this page)" : "");
  return {
    cell: c.cell,
    owner,
    epoch: c.epoch === null ? "" : String(c.epoch),
    status: c.status,
    expires: expiry(c.leaseExpiresInMs),
    renewed: ago(c.leaseAgeMs),
  };
}

function cellActions(tr, c) {
  tr.classList.add(`status-${c.status}`);
  const mine = c.node !== null && c.node === node;
  tr.classList.toggle("mine", mine);
  if (c.error) tr.title = `${c.error.code}: ${c.error.message}`;
  const actions = tr.appendChild(Object.assign(document.createElement("td"), { className: "actions" }));
  const button = (name, enabled, fn) => {
    const b = actions.appendChild(Object.assign(document.createElement("button"), { textContent: name[0].toUpperCase() + name.slice(1), className: name }));
    b.disabled = !enabled;
    b.addEventListener("click", () => fn(c.cell));
  };
  // A cell is claimable unless a live owner (or one awaiting recovery) holds it; the library decides.
  button("claim", c.status !== "live" && c.status !== "awaiting-recovery" && c.status !== "corrupt" && !mine, claim);
  button("release", mine, release);
}

function nodeColumns(n) {
  return {
    node: n.node + (n.node === node ? " (this page)" : ""),
    lease: n.awaitingRecovery ? "dead, awaiting recovery" : n.lease,
    expires: expiry(n.expiresInMs),
    renewed: ago(n.ageMs),
    addr: n.addr,
  };
}

async function refresh() {
  if (refreshing) return; // one listing at a time, however slow the store
  refreshing = true;
  try {
    const [cells, nodes] = await Promise.all([view.listCells(), view.listNodes()]);
    listed = new Set(cells.map((c) => c.cell));
    fill("cells-table", cells, "cell", cellColumns, cellActions);
    fill("nodes-table", nodes, "node", nodeColumns, (tr, n) => tr.classList.add(`lease-${n.lease}`));
    const live = nodes.filter((n) => n.live).length;
    const me = own ? ` This page is node ${node}; lease ${own.leaseValid() ? "valid" : "NOT valid"}.` : "";
    status(`${cells.length} cells, ${nodes.length} nodes (${live} live).${me} Updated ${new Date().toLocaleTimeString()}.`);
  } catch (e) {
    status(`listing failed: ${e.code}: ${e.message}`, true);
  } finally {
    refreshing = false;
  }
}

/** This page's own node, made and leased at the first claim. No `node` option: the library makes up an
 * id no other process has, and so writes its first lease without reading it first. */
async function member() {
  if (own === null) {
    own = new S3Ownership(store);
    node = own.node;
    own.startRenewing((e) => notice(`lease renewal: ${e.code}: ${e.message}`));
  }
  if (!own.leaseValid()) await own.acquireLease(); // first claim, or fenced earlier: a fresh lease
  return own;
}

async function claim(cell) {
  try {
    // A cell the last listing did not show is most likely new: written at once (If-None-Match), not read
    // first; if it exists after all the write is refused, and the claim reads it and decides as usual.
    const result = await (await member()).claim(cell, { expectNew: !listed.has(cell) });
    if (result.outcome === "rejected") notice(`${cell} is owned by ${result.owner.node} (live): route to it`);
    else notice(`claimed ${cell} at epoch ${result.epoch}`, false);
  } catch (e) {
    notice(`claim ${cell}: ${e.code}: ${e.message}`);
  }
  await refresh();
}

async function release(cell) {
  try {
    notice(`release ${cell}: ${await own.release(cell)}`, false);
  } catch (e) {
    notice(`release ${cell}: ${e.code}: ${e.message}`);
  }
  await refresh();
}

async function connect() {
  try {
    const where = await (await fetch("/store")).json(); // { endpoint, bucket, region, prefix }
    store = { ...where, credentials: async () => (await fetch("/credentials", { method: "POST" })).json() };
    view = new S3Inspector(store);
  } catch (e) {
    status(`connect: ${e.code ?? "error"}: ${e.message}`, true);
    return;
  }
  $("claim").hidden = false;
  const tick = async () => {
    await refresh();
    setTimeout(tick, REFRESH_MS);
  };
  tick();
}

$("claim").addEventListener("submit", (event) => {
  event.preventDefault();
  const cell = $("claim-cell").value.trim();
  if (cell) claim(cell);
});

connect();
