// The browser example (examples/browser/) in headless Chromium (Debian's /usr/bin/chromium via
// playwright-core), served as-is from the repo and talking to ministack through its CORS pass-through:
// fill in the form, connect, claim a cell and see the table show this page as owner at epoch 1 with a live
// lease, see other nodes' cells (one live, one whose lease died), take the dead one over, release, and save
// a screenshot to test-output/browser-example.png. Every state the table shows is checked in the store.
import { after, test } from "node:test";
import { deepEqual, equal, match } from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { S3Ownership } from "celld-edge";
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

test("examples/browser: live table, claim, takeover, release, screenshot", async () => {
  // Other nodes, from Node: "peer" holds cell "b" (live); "gone" claims "c" and then stops renewing.
  const node = (id, extra) => new S3Ownership({ ...store, node: id, probe: false, ...extra });
  const peer = node("peer", { addr: "peer.example:7000" });
  const gone = node("gone", { leaseTtlMs: 1500, maxClockSkewMs: 200 });
  const observer = node("observer");
  await peer.acquireLease();
  await gone.acquireLease();
  equal((await peer.claim("b")).outcome, "applied");
  equal((await gone.claim("c")).outcome, "applied");
  peer.startRenewing();

  const tab = await browser.newPage({ viewport: { width: 1000, height: 560 } });
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
    await tab.fill("#cells", "a, b, c, d");
    await tab.click("#connect-button");
    const rowText = (cell, col) => tab.textContent(`tr[data-cell="${cell}"] td.${col}`);
    /** Waits until the row shows these columns (the page refreshes every second). */
    const waitRow = async (cell, want) => {
      try {
        await tab.waitForFunction(
          ([cell, want]) => {
            const tr = document.querySelector(`tr[data-cell="${cell}"]`);
            return tr && Object.entries(want).every(([col, text]) => tr.querySelector(`td.${col}`).textContent === text);
          },
          [cell, want],
          { timeout: 15_000, polling: 100 },
        );
      } catch {
        const seen = { owner: await rowText(cell, "owner").catch(() => null), epoch: await rowText(cell, "epoch").catch(() => null), live: await rowText(cell, "live").catch(() => null) };
        throw new Error(`row ${cell}: wanted ${JSON.stringify(want)}, shows ${JSON.stringify(seen)}; status: ${await tab.textContent("#status")}; page errors: ${errors}`);
      }
    };
    await waitRow("a", { owner: "(never claimed)", epoch: "", live: "" });
    await waitRow("b", { owner: "peer", epoch: "1", live: "live" });
    const status = await tab.textContent("#status");
    const me = status.match(/node (browser-[0-9a-f]{8})/)?.[1];
    match(status, /lease valid/, status);

    await tab.click('tr[data-cell="a"] button.claim');
    await waitRow("a", { owner: `${me} (this page)`, epoch: "1", live: "live" });
    deepEqual(await observer.readOwner("a").then((r) => [r.node, r.epoch]), [me, 1], "a in the store");
    equal(await tab.isDisabled('tr[data-cell="b"] button.claim'), true, "a live peer's cell cannot be claimed");

    await waitRow("c", { owner: "gone", epoch: "1", live: "dead" }); // its lease lapses within ~3 s
    await tab.click('tr[data-cell="c"] button.claim');
    await waitRow("c", { owner: `${me} (this page)`, epoch: "2", live: "live" });
    deepEqual(await observer.readOwner("c").then((r) => [r.node, r.epoch]), [me, 2], "c taken over in the store");

    mkdirSync(join(root, "test-output"), { recursive: true });
    await tab.screenshot({ path: join(root, "test-output/browser-example.png"), fullPage: true });

    await tab.click('tr[data-cell="a"] button.release');
    await waitRow("a", { owner: "(released)", epoch: "1", live: "" });
    deepEqual(await observer.readOwner("a").then((r) => [r.node, r.epoch]), [null, 1], "a released in the store, epoch kept");
    equal(errors.length, 0, `page errors: ${errors}`);
  } finally {
    peer.stopRenewing();
    await tab.close();
  }
});
