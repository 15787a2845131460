// The browser example (examples/browser/) in headless Chromium (Debian's /usr/bin/chromium via
// playwright-core), served as-is from the repo and talking to ministack through its CORS pass-through: a
// live view of a bucket that other nodes (from Node) use. Connect; see their cells (one live, one released,
// one whose owner's lease dies, a corrupt record) and their leases; claim a new cell as the page; take the
// dead one over; save a screenshot to test-output/browser-example.png and check what it shows (the page's
// text at that moment, and the PNG's size); release. Every state the page shows is checked in the store.
import { after, test } from "node:test";
import { deepEqual, equal, match, ok } from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { S3Ownership, signRequest } from "celld-edge";
import { launchChromium, serveRepo } from "./harness.mjs";
import { atomicStore } from "../common/ownership.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const env = process.env;
if (!env.CELLD_TEST_ATOMIC_BROWSER_ENDPOINT) throw new Error("CELLD_TEST_ATOMIC_BROWSER_ENDPOINT is not set: run through scripts/test");
const store = { ...atomicStore(env), prefix: `browser-example-${Date.now()}/` };
// Serves examples/browser/, js/ and pkg/ from the repo, like any static server.
const site = await serveRepo(/^\/(js|pkg|examples\/browser)\//);
const browser = await launchChromium();
after(async () => {
  await browser.close();
  site.close();
});

test("examples/browser: live bucket view, claim, takeover, release, screenshot", async () => {
  // Other nodes, from Node: "peer" holds "b" (live) and released "d"; "gone" claims "c", then stops renewing.
  const node = (id, extra) => new S3Ownership({ ...store, node: id, probe: false, ...extra });
  const peer = node("peer", { addr: "peer.example:7000" });
  const gone = node("gone", { leaseTtlMs: 1500, maxClockSkewMs: 200 });
  const observer = node("observer");
  await peer.acquireLease();
  await gone.acquireLease();
  equal((await peer.claim("b")).outcome, "applied");
  equal((await peer.claim("d")).outcome, "applied");
  equal(await peer.release("d"), "applied");
  equal((await gone.claim("c")).outcome, "applied");
  peer.startRenewing();
  // A record that does not decode (written by something else): shown as corrupt, the rest still listed.
  const bad = signRequest({ method: "PUT", url: `${store.endpoint}/${store.bucket}/${store.prefix}cells/bad/own.json`, body: "{", region: "us-east-1", accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey });
  equal((await fetch(bad.url, { method: "PUT", headers: bad.headers, body: "{" })).status, 200);

  const tab = await browser.newPage({ viewport: { width: 1000, height: 720 } });
  const errors = [];
  tab.on("pageerror", (e) => errors.push(String(e)));
  try {
    await tab.goto(`http://127.0.0.1:${site.address().port}/examples/browser/`);
    await tab.fill("#endpoint", env.CELLD_TEST_ATOMIC_BROWSER_ENDPOINT);
    await tab.fill("#bucket", store.bucket);
    await tab.fill("#region", store.region);
    await tab.fill("#prefix", store.prefix);
    await tab.fill("#accessKeyId", store.accessKeyId);
    await tab.fill("#secretAccessKey", store.secretAccessKey);
    await tab.click("#connect-button");
    /** The text of each column of a table row (`kind` "cell" or "node"), or null when absent. */
    const rowOf = (kind, id) =>
      tab.evaluate(([kind, id]) => {
        const tr = document.querySelector(`#${kind}s-table tr[data-${kind}="${id}"]`);
        return tr && Object.fromEntries([...tr.cells].map((td) => [td.className, td.textContent]));
      }, [kind, id]);
    /** Waits until the row shows these columns (the page refreshes every second). */
    const waitRow = async (kind, id, want) => {
      try {
        await tab.waitForFunction(
          ([kind, id, want]) => {
            const tr = document.querySelector(`#${kind}s-table tr[data-${kind}="${id}"]`);
            return tr && Object.entries(want).every(([col, text]) => tr.querySelector(`td.${col}`)?.textContent === text);
          },
          [kind, id, want],
          { timeout: 15_000, polling: 100 },
        );
      } catch {
        throw new Error(`${kind} ${id}: wanted ${JSON.stringify(want)}, shows ${JSON.stringify(await rowOf(kind, id))}; status: ${await tab.textContent("#status")}; page errors: ${errors}`);
      }
    };
    await waitRow("cell", "b", { owner: "peer", epoch: "1", status: "live" });
    await waitRow("cell", "d", { owner: "(released)", epoch: "1", status: "released", expires: "", renewed: "" });
    await waitRow("cell", "bad", { owner: "?", epoch: "", status: "corrupt" });
    await waitRow("node", "peer", { lease: "live", addr: "peer.example:7000" });
    match((await rowOf("cell", "b")).expires, /^in \d/, "the owner's lease expiry");
    match((await rowOf("cell", "b")).renewed, /ago$/, "the owner's lease age");
    equal(await tab.isDisabled('tr[data-cell="b"] button.claim'), true, "a live peer's cell cannot be claimed");
    match(await tab.textContent("#status"), /^5 cells|^4 cells/, await tab.textContent("#status"));

    // Claim a new cell: the page becomes a node of its own.
    await tab.fill("#claim-cell", "a");
    await tab.click("#claim-button");
    await tab.waitForFunction(() => / This page is node browser-[0-9a-f]{8}; lease valid/.test(document.getElementById("status").textContent), null, { timeout: 15_000 });
    const me = (await tab.textContent("#status")).match(/node (browser-[0-9a-f]{8})/)[1];
    await waitRow("cell", "a", { owner: `${me} (this page)`, epoch: "1", status: "live" });
    await waitRow("node", me, { node: `${me} (this page)`, lease: "live" });
    deepEqual(await observer.readOwner("a").then((r) => [r.node, r.epoch]), [me, 1], "a in the store");

    await waitRow("cell", "c", { owner: "gone", epoch: "1", status: "dead" }); // dead by the peer rule within ~3 s
    await waitRow("node", "gone", { lease: "dead" });
    await tab.click('tr[data-cell="c"] button.claim');
    await waitRow("cell", "c", { owner: `${me} (this page)`, epoch: "2", status: "live" });
    deepEqual(await observer.readOwner("c").then((r) => [r.node, r.epoch]), [me, 2], "c taken over in the store");

    // The screenshot, and what the page showed when it was taken.
    mkdirSync(join(root, "test-output"), { recursive: true });
    const png = join(root, "test-output/browser-example.png");
    const shown = await tab.evaluate(() => ({
      cells: [...document.querySelectorAll("#cells-table tbody tr")].map((tr) => [...tr.cells].slice(0, 4).map((td) => td.textContent)),
      nodes: [...document.querySelectorAll("#nodes-table tbody tr")].map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent]),
    }));
    await tab.screenshot({ path: png, fullPage: true });
    deepEqual(shown.cells, [
      ["a", `${me} (this page)`, "1", "live"],
      ["b", "peer", "1", "live"],
      ["bad", "?", "", "corrupt"],
      ["c", `${me} (this page)`, "2", "live"],
      ["d", "(released)", "1", "released"],
    ]);
    deepEqual(shown.nodes.map(([n, l]) => [n.replace(me, "me"), l]).sort(), [["gone", "dead"], ["me (this page)", "live"], ["peer", "live"]]);
    const image = readFileSync(png);
    equal(image.subarray(1, 4).toString(), "PNG");
    const [width, height] = [image.readUInt32BE(16), image.readUInt32BE(20)];
    equal(width, 1000, "the viewport's width");
    ok(height >= 600, `the whole page (${height} px high)`);

    await tab.click('tr[data-cell="a"] button.release');
    await waitRow("cell", "a", { owner: "(released)", epoch: "1", status: "released" });
    deepEqual(await observer.readOwner("a").then((r) => [r.node, r.epoch]), [null, 1], "a released in the store, epoch kept");
    equal(errors.length, 0, `page errors: ${errors}`);
  } finally {
    peer.stopRenewing();
    await tab.close();
  }
});
