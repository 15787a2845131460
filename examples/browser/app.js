// The browser example's logic (index.html): connects an S3Ownership as this page's own node (a random id:
// ids must be unique per running instance), keeps its lease renewed, refreshes every cell's owner once a
// second, and claims/releases cells on the buttons. It only displays what the library answers.
import { S3Ownership } from "celld-edge";

const $ = (id) => document.getElementById(id);
const REFRESH_MS = 1000;
let own = null;
let node = "";
const rows = new Map(); // cell -> { tr, owner, epoch, live, claim, release }

function status(text, isError = false) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

function cellRow(cell) {
  const tr = document.createElement("tr");
  tr.dataset.cell = cell;
  const td = (cls) => Object.assign(tr.appendChild(document.createElement("td")), { className: cls });
  td("cell").textContent = cell;
  const row = { tr, owner: td("owner"), epoch: td("epoch"), live: td("live") };
  const actions = td("actions");
  for (const [name, fn] of [["claim", claim], ["release", release]]) {
    row[name] = Object.assign(actions.appendChild(document.createElement("button")), { textContent: name[0].toUpperCase() + name.slice(1), className: name });
    row[name].addEventListener("click", () => fn(cell));
  }
  $("cells-table").tBodies[0].appendChild(tr);
  return row;
}

function show(cell, info) {
  const row = rows.get(cell);
  const owned = info !== null && info.node !== null;
  row.owner.textContent = info === null ? "(never claimed)" : owned ? info.node + (info.node === node ? " (this page)" : "") : "(released)";
  row.epoch.textContent = info === null ? "" : String(info.epoch);
  row.live.textContent = owned ? (info.live ? "live" : "dead") : "";
  row.live.className = `live ${owned ? (info.live ? "live-yes" : "live-no") : ""}`;
  row.tr.classList.toggle("mine", owned && info.node === node);
  row.release.disabled = !(owned && info.node === node);
  row.claim.disabled = owned && info.live;
}

async function refresh() {
  try {
    await Promise.all([...rows.keys()].map(async (cell) => show(cell, await own.owner(cell))));
    status(`This page is node ${node}; lease ${own.leaseValid() ? "valid" : "NOT valid"}. Updated ${new Date().toLocaleTimeString()}.`);
  } catch (e) {
    status(`refresh failed: ${e.code}: ${e.message}`, true);
  }
}

async function claim(cell) {
  try {
    if (!own.leaseValid()) await own.acquireLease(); // fenced earlier: a fresh lease, then claim anew
    const result = await own.claim(cell);
    if (result.outcome === "rejected") status(`${cell} is owned by ${result.owner.node} (live): route to it`, true);
  } catch (e) {
    status(`claim ${cell}: ${e.code}: ${e.message}`, true);
  }
  await refresh();
}

async function release(cell) {
  try {
    await own.release(cell);
  } catch (e) {
    status(`release ${cell}: ${e.code}: ${e.message}`, true);
  }
  await refresh();
}

$("connect").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("connect-button").disabled = true;
  const value = (id) => $(id).value.trim();
  node = `browser-${crypto.randomUUID().slice(0, 8)}`;
  try {
    own = new S3Ownership({
      endpoint: value("endpoint"),
      bucket: value("bucket"),
      region: value("region"),
      prefix: value("prefix"),
      accessKeyId: value("accessKeyId"),
      secretAccessKey: value("secretAccessKey"),
      node,
    });
    status(`Connecting as ${node} (probing the store, acquiring a lease)...`);
    await own.acquireLease();
    own.startRenewing((e) => status(`lease renewal: ${e.code}: ${e.message}`, true));
  } catch (e) {
    status(`connect: ${e.code}: ${e.message}`, true);
    $("connect-button").disabled = false;
    return;
  }
  for (const cell of value("cells").split(",").map((c) => c.trim()).filter(Boolean)) {
    if (!rows.has(cell)) rows.set(cell, cellRow(cell));
  }
  $("cells-table").hidden = false;
  const tick = async () => {
    await refresh();
    setTimeout(tick, REFRESH_MS);
  };
  tick();
});
