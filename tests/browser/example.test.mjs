// The browser example (examples/browser/) as a user runs it: its server (server.mjs, a child process)
// serves the page and the package and hands the page short-lived keys from STS AssumeRole (ministack
// answers it); headless Chromium (Debian's /usr/bin/chromium via playwright-core) opens the page, which
// talks to ministack through its CORS pass-through: a live view of a bucket that other nodes (from Node)
// use. See their cells (one live, one released, one whose owner's lease dies, a corrupt record) and their
// leases; claim a new cell as the page; take the dead one over; save a screenshot to
// test-output/browser-example.png and check what it shows (the page's text at that moment, and the PNG's
// size); release. Every state the page shows is checked in the store; every request the page sends to the
// store carries the minted session's keys, never the server's; the console shows no error but the 404s
// of first reads that the README explains.
import { after, test } from "node:test";
import { deepEqual, equal, match, ok } from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { S3Ownership, signRequest } from "celld-edge";
import { launchChromium } from "./harness.mjs";
import { atomicStore } from "../common/ownership.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const env = process.env;
if (!env.CELLD_TEST_ATOMIC_BROWSER_ENDPOINT) throw new Error("CELLD_TEST_ATOMIC_BROWSER_ENDPOINT is not set: run through scripts/test");
const store = { ...atomicStore(env), prefix: `browser-example-${Date.now()}/` };

/** Starts examples/browser/server.mjs as its header says; resolves to its address once it listens. */
function startServer() {
  const child = spawn(process.execPath, [join(root, "examples/browser/server.mjs")], {
    env: {
      ...env, S3_ENDPOINT: env.CELLD_TEST_ATOMIC_BROWSER_ENDPOINT, S3_BUCKET: store.bucket, S3_REGION: store.region,
      AWS_ACCESS_KEY_ID: store.accessKeyId, AWS_SECRET_ACCESS_KEY: store.secretAccessKey, PREFIX: store.prefix, PORT: "0",
      ROLE_ARN: "arn:aws:iam::000000000000:role/celld-browser-example", STS_ENDPOINT: store.endpoint,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`examples/browser/server.mjs exited (${code})`)));
    child.stdout.once("data", (line) => resolve({ child, url: String(line).trim() }));
  });
}

const { child: server, url: pageUrl } = await startServer();
const browser = await launchChromium();
after(async () => {
  await browser.close();
  server.kill();
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
  const consoleErrors = [];
  tab.on("console", (m) => m.type() === "error" && consoleErrors.push({ text: m.text(), url: m.location().url ?? "" }));
  const toStore = [];
  tab.on("request", (r) => r.url().startsWith(env.CELLD_TEST_ATOMIC_BROWSER_ENDPOINT) && r.method() !== "OPTIONS" && toStore.push(r.headers()));
  try {
    await tab.goto(pageUrl);
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
        throw new Error(`${kind} ${id}: wanted ${JSON.stringify(want)}, shows ${JSON.stringify(await rowOf(kind, id))}; status: ${await tab.textContent("#status")}; notice: ${await tab.textContent("#notice")}; page errors: ${errors}`);
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
    await tab.waitForFunction(() => / This page is node edge-[0-9a-f]{16}; lease valid/.test(document.getElementById("status").textContent), null, { timeout: 15_000 });
    const me = (await tab.textContent("#status")).match(/node (edge-[0-9a-f]{16})/)[1];
    await waitRow("cell", "a", { owner: `${me} (this page)`, epoch: "1", status: "live" });
    await waitRow("node", me, { node: `${me} (this page)`, lease: "live" });
    deepEqual(await observer.readOwner("a").then((r) => [r.node, r.epoch]), [me, 1], "a in the store");

    await waitRow("cell", "c", { owner: "gone", epoch: "1", status: "dead" }); // dead by the peer rule within ~3 s
    await waitRow("node", "gone", { lease: "dead" });
    // The page's instance may first have to watch the dead holder's lease before the peer rule lets it
    // judge it (it says "owned by gone (live)"): as a user would, click again (seen about 1 run in 5).
    for (let i = 0; i < 5; i++) {
      await tab.click('tr[data-cell="c"] button.claim');
      await tab.waitForFunction(() => /^(claimed c|c is owned|claim c)/.test(document.getElementById("notice").textContent), null, { timeout: 15_000 });
      if (!/^c is owned by gone \(live\)/.test(await tab.textContent("#notice"))) break;
      await tab.evaluate(() => { document.getElementById("notice").textContent = ""; });
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
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
    // The page's keys are the minted session's: signed with a session token, never with the server's key id.
    ok(toStore.length > 10, `${toStore.length} requests to the store`);
    for (const h of toStore) {
      ok(h["x-amz-security-token"], `a session token on every request: ${JSON.stringify(h)}`);
      ok(!h.authorization.includes(`Credential=${store.accessKeyId}/`), `not the server's keys: ${h.authorization}`);
    }
    // Expected in red: a new instance's first reads of the fleet's markers, absent in this bucket (README,
    // Browser example). The page avoids the others: no node id (its first lease is written unread), a new
    // cell claimed with expectNew, the bucket qualified by the server.
    const expected404 = /\/(fleet\/control\.json|wake\/format\.json)$/;
    const unexpected = consoleErrors.filter((c) => !(/status of 404/.test(c.text) && expected404.test(c.url)));
    deepEqual(unexpected, [], "no console errors but the expected 404s");
  } finally {
    peer.stopRenewing();
    await tab.close();
  }
});
