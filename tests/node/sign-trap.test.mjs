// A trap in the signing-only wasm (SPEC §4.5's entry, celld-edge/sign): the caller gets a typed "internal"
// error, never a hang, and the entry signs again from the next task in a fresh instance, as the main entry
// does (tests/node/trap.test.mjs). The trap is the signing-only wasm's test-only `__celldTestTrap` (the next
// signer call panics while it holds the signer), which the package never exports: this file bundles an
// entry of its own, the package's inline entry (js/sign-inline.js) with the signing-only glue
// (scripts/lib/sign-glue.mjs) as scripts/build bundles it, plus that export of the same glue instance.
import { test } from "node:test";
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import { signGlue } from "../../scripts/lib/sign-glue.mjs";

const root = fileURLToPath(new URL("../../", import.meta.url));
const [bundle] = (await build({
  stdin: { contents: 'export * from "./js/sign-inline.js";\nexport { __celldTestTrap } from "./pkg/celld_edge_sign.js";\n', resolveDir: root, sourcefile: "sign-trap-entry.js" },
  bundle: true, write: false, format: "esm", platform: "neutral", logLevel: "warning", plugins: [signGlue],
})).outputFiles;
const api = await import(`data:text/javascript;base64,${Buffer.from(bundle.text).toString("base64")}`);

const opts = { method: "PUT", url: "https://h.test/b/k", region: "us-east-1", accessKeyId: "a", secretAccessKey: "s", datetime: "20150830T123600Z", body: "x" };
const presign = { url: "https://h.test/b/k", region: "us-east-1", accessKeyId: "a", secretAccessKey: "s", datetime: "20150830T123600Z", expiresIn: 60 };
const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

function thrown(f) {
  try {
    f();
  } catch (e) {
    return e;
  }
  throw new Error("expected it to throw, but it returned");
}

function isInternal(e, what) {
  if (!(e instanceof api.CelldEdgeError) || e.code !== "internal") throw new Error(`${what}: expected an internal CelldEdgeError, got ${e?.constructor?.name} ${e?.code} ${e?.message ?? e}`);
}

test("a trap in the signing-only wasm is an internal CelldEdgeError with the panic's message; signing refuses until the next task, then signs alike", async () => {
  const want = api.signRequest(opts).headers.authorization;
  const wantUrl = api.presignUrl(presign);
  api.__celldTestTrap();
  const trapped = thrown(() => api.signRequest(opts));
  isInternal(trapped, "the trapping signRequest");
  if (!trapped.message.includes("test trap")) throw new Error(`the panic's message is not in the error: ${trapped.message}`);
  // Still the trap's task: the trapped instance (its signer still borrowed) is not asked again.
  isInternal(thrown(() => api.signRequest(opts)), "signRequest during the replacement");
  isInternal(thrown(() => api.presignUrl(presign)), "presignUrl during the replacement");
  await nextTask();
  if (api.signRequest(opts).headers.authorization !== want) throw new Error("the fresh signer signs differently");
  if (api.presignUrl(presign) !== wantUrl) throw new Error("the fresh signer presigns differently");
  const refused = thrown(() => api.signRequest({ ...opts, url: "https://h.test/b/../k" }));
  if (refused.code !== "invalid-input") throw new Error(`the fresh signer's refusal: ${refused.code} ${refused.message}`);
});

test("a trap while AwsClient signs rejects fetch() and sign() with internal (nothing is sent), and the client works from the next task", async () => {
  const sent = [];
  const client = new api.AwsClient({ accessKeyId: "a", secretAccessKey: "s", region: "us-east-1", service: "s3", fetch: async (r) => (sent.push(r.url), new Response("ok")) });
  const want = (await client.sign("https://h.test/b/k", { aws: { datetime: "20150830T123600Z" } })).headers.get("authorization");
  api.__celldTestTrap();
  const fetched = await client.fetch("https://h.test/b/k").then(() => undefined, (e) => e);
  isInternal(fetched, "AwsClient.fetch");
  isInternal(await client.sign("https://h.test/b/k").then(() => undefined, (e) => e), "AwsClient.sign during the replacement");
  if (sent.length !== 0) throw new Error(`a request was sent: ${sent}`);
  await nextTask();
  const again = (await client.sign("https://h.test/b/k", { aws: { datetime: "20150830T123600Z" } })).headers.get("authorization");
  if (again !== want) throw new Error("the client signs differently after the trap");
  if ((await client.fetch("https://h.test/b/k")).status !== 200 || sent.length !== 1) throw new Error("the client's fetch after the trap");
});
