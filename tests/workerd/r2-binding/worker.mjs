// Test Worker: what the local R2 binding (workerd + Miniflare, as `wrangler dev` runs it) does with the
// conditions the protocol rests on, checked directly on env.CELLS, with no celld-edge in between. If one of
// these changes, the R2 transport (src/s3/r2.rs, src/bindings/r2.rs) must be looked at again. Answers
// GET / with [{ name, ok, error }] as JSON.
import { runChecks, eq, fail, unique } from "../../common/checks.mjs";

const json = (v) => JSON.stringify(v);
const ROUNDS = 50;
const RACERS = 8;

function checks(bucket) {
  const key = (name) => `r2-binding/${unique()}/${name}`;
  return [
    ["put onlyIf etagDoesNotMatch * creates once, then resolves null", async () => {
      const k = key("create");
      const first = await bucket.put(k, json({ n: 1 }), { onlyIf: { etagDoesNotMatch: "*" } });
      if (!first?.etag) fail(`the first create did not apply: ${first}`);
      const second = await bucket.put(k, json({ n: 2 }), { onlyIf: { etagDoesNotMatch: "*" } });
      eq(second, null, "the second create");
      eq(await (await bucket.get(k)).json(), { n: 1 }, "the record after both creates");
    }],
    ["put onlyIf etagMatches: a current etag applies, a stale one resolves null", async () => {
      const k = key("update");
      const created = await bucket.put(k, json({ n: 1 }), { onlyIf: { etagDoesNotMatch: "*" } });
      const updated = await bucket.put(k, json({ n: 2 }), { onlyIf: { etagMatches: created.etag } });
      if (!updated?.etag || updated.etag === created.etag) fail(`the update on the current etag did not apply: ${json(updated)}`);
      eq(await bucket.put(k, json({ n: 3 }), { onlyIf: { etagMatches: created.etag } }), null, "an update on the stale etag");
      eq(await (await bucket.get(k)).json(), { n: 2 }, "the record");
    }],
    ["put onlyIf etagMatches on a missing key resolves null and creates nothing", async () => {
      const k = key("missing");
      eq(await bucket.put(k, "{}", { onlyIf: { etagMatches: "0123456789abcdef0123456789abcdef" } }), null, "the update");
      eq(await bucket.head(k), null, "the key after it");
    }],
    ["etag is unquoted, httpEtag the quoted form; etagMatches takes only the unquoted one", async () => {
      const k = key("forms");
      const created = await bucket.put(k, "{}", { onlyIf: { etagDoesNotMatch: "*" } });
      if (created.etag.includes('"')) fail(`etag is quoted: ${created.etag}`);
      eq(created.httpEtag, `"${created.etag}"`, "httpEtag");
      const got = await bucket.get(k);
      eq([got.etag, got.httpEtag], [created.etag, created.httpEtag], "get's etags");
      let thrown = null;
      try {
        await bucket.put(k, "{ }", { onlyIf: { etagMatches: created.httpEtag } });
      } catch (e) {
        thrown = e;
      }
      if (!(thrown instanceof TypeError)) fail(`etagMatches with the quoted form did not throw a TypeError: ${thrown}`);
      eq((await bucket.head(k)).etag, created.etag, "the record after the quoted form");
      if (!(await bucket.put(k, "{  }", { onlyIf: { etagMatches: created.etag } }))) fail("etagMatches with the unquoted form did not apply");
    }],
    ["equal bodies get equal etags (what the writer nonce is for)", async () => {
      const [a, b] = [await bucket.put(key("same-a"), "{}"), await bucket.put(key("same-b"), "{}")];
      eq(a.etag, b.etag, "the etags of two equal bodies");
    }],
    [`${ROUNDS} rounds of ${RACERS} concurrent creates each apply exactly one`, async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const k = key(`race-create-${round}`);
        const results = await Promise.all(
          Array.from({ length: RACERS }, (_, i) => bucket.put(k, json({ i }), { onlyIf: { etagDoesNotMatch: "*" } })),
        );
        const won = results.filter((r) => r !== null);
        if (won.length !== 1) fail(`round ${round}: ${won.length} of ${RACERS} creates applied`);
        const winner = results.findIndex((r) => r !== null);
        eq(await (await bucket.get(k)).json(), { i: winner }, `round ${round}: the record is the winner's`);
      }
    }],
    [`${ROUNDS} rounds of ${RACERS} concurrent updates on one etag each apply exactly one`, async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const k = key(`race-update-${round}`);
        const base = await bucket.put(k, json({ i: -1 }), { onlyIf: { etagDoesNotMatch: "*" } });
        const results = await Promise.all(
          Array.from({ length: RACERS }, (_, i) => bucket.put(k, json({ i }), { onlyIf: { etagMatches: base.etag } })),
        );
        const won = results.filter((r) => r !== null);
        if (won.length !== 1) fail(`round ${round}: ${won.length} of ${RACERS} updates applied`);
        eq((await bucket.get(k)).etag, won[0].etag, `round ${round}: the record is the winner's`);
      }
    }],
    ["delete takes no condition: onlyIf with a wrong etag still deletes", async () => {
      const k = key("delete");
      await bucket.put(k, "{}");
      const answer = await bucket.delete(k, { onlyIf: { etagMatches: "0123456789abcdef0123456789abcdef" } });
      eq(answer, undefined, "delete's answer");
      eq(await bucket.head(k), null, "the key after a delete whose condition did not hold");
    }],
    ["a key written again after its delete: create applies, the deleted etag does not", async () => {
      const k = key("rewrite");
      const old = await bucket.put(k, "{}", { onlyIf: { etagDoesNotMatch: "*" } });
      await bucket.delete(k);
      eq(await bucket.put(k, "{ }", { onlyIf: { etagMatches: old.etag } }), null, "an update on the deleted etag");
      if (!(await bucket.put(k, "{}", { onlyIf: { etagDoesNotMatch: "*" } }))) fail("the create after the delete did not apply");
    }],
    ["get of a missing key resolves null", async () => {
      eq(await bucket.get(key("absent")), null, "get");
    }],
    ["list pages by prefix with limit and cursor; a delimiter rolls keys up", async () => {
      const dir = key("list");
      for (const name of ["a.json", "b.json", "c.json", "d/data/x", "d/own.json"]) await bucket.put(`${dir}/${name}`, "{}");
      const first = await bucket.list({ prefix: `${dir}/`, limit: 2 });
      eq(first.objects.map((o) => o.key.slice(dir.length + 1)), ["a.json", "b.json"], "page 1");
      if (!first.truncated || !first.cursor) fail(`page 1 is not truncated with a cursor: ${json(first)}`);
      if (!(first.objects[0].uploaded instanceof Date)) fail("uploaded is not a Date");
      const rest = await bucket.list({ prefix: `${dir}/`, cursor: first.cursor, limit: 1000 });
      eq(rest.objects.map((o) => o.key.slice(dir.length + 1)), ["c.json", "d/data/x", "d/own.json"], "page 2");
      eq(rest.truncated, false, "page 2 truncated");
      // As in S3, the delimiter is looked for past the prefix (how the inspector rolls up cells' data).
      const rolled = await bucket.list({ prefix: `${dir}/`, delimiter: "/data/" });
      eq(rolled.objects.map((o) => o.key.slice(dir.length + 1)), ["a.json", "b.json", "c.json", "d/own.json"], "objects beside a delimiter");
      eq(rolled.delimitedPrefixes, [`${dir}/d/data/`], "delimitedPrefixes");
    }],
  ];
}

export default {
  async fetch(request, env) {
    return Response.json(await runChecks(checks(env.CELLS)));
  },
};
