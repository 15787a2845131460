// Short-lived credentials checks shared by every JS runtime's suite, against a signature-checking test
// server (versitygw: a wrong key is refused there): the `credentials` option's function is asked
// before the first request (once for concurrent callers), asked again before its keys expire without the
// lease or claims being lost, and a failure is an `auth` error keeping what the function threw.
// Runtime-neutral: no fs, no node: imports. No timing assertions: waits only outlast the keys' lifetime.

import { ownershipServers } from "./ownership.mjs";
import { eq, fail, sleep, unique } from "./checks.mjs";

async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  fail("expected a rejection");
}

/** Keys this short-lived are past their last usable moment (three quarters of their life) after `LIFE_MS`. */
const LIFE_MS = 2_000;

export function credentialsChecks({ api, env, runtime }) {
  const { S3Ownership, S3Inspector } = api;
  const strict = ownershipServers(env).find((s) => s.checksSignatures);
  const { endpoint, bucket } = strict;
  const good = { accessKeyId: strict.accessKeyId, secretAccessKey: strict.secretAccessKey };
  const checks = [];
  const check = (name, fn) => {
    checks.push([`credentials: ${name}`, () => {
      const calls = [];
      /** A provider answering from `answers` in turn (a function: called; else returned), counting calls. */
      const provider = (...answers) => async () => {
        calls.push(Date.now());
        await sleep(20);
        const a = answers[Math.min(calls.length, answers.length) - 1];
        return typeof a === "function" ? a() : a;
      };
      const make = (credentials, extra = {}) =>
        new S3Ownership({ endpoint, bucket, region: "us-east-1", prefix: `t-${runtime}-cred-${unique()}/`, probe: false, node: `${runtime}-${unique()}`, credentials, ...extra });
      return fn({ calls, provider, make, cell: `c-${unique()}` });
    }]);
  };

  check("asked once before the first request, by concurrent callers together; its keys sign", async ({ calls, provider, make, cell }) => {
    const own = make(provider({ ...good, expiration: new Date(Date.now() + 3_600_000) }));
    eq(calls.length, 0, "nothing asked at construction");
    await Promise.all([own.acquireLease(), own.readOwner(cell), own.readOwner(`${cell}-2`), own.readNodeLease("someone")]);
    eq(calls.length, 1, "one call for four concurrent operations");
    eq((await own.claim(cell)).outcome, "applied", "a claim signed with the provider's keys, accepted by the strict server");
    eq(calls.length, 1, "keys valid for an hour are not asked for again");
  });

  check("asked again before expiry, keeping the lease and the claims", async ({ calls, provider, make, cell }) => {
    const keys = () => ({ ...good, sessionToken: undefined, expiration: new Date(Date.now() + LIFE_MS).toISOString() });
    const own = make(provider(keys));
    await own.acquireLease();
    const { epoch } = await own.claim(cell);
    const signal = own.signal(cell);
    await sleep(LIFE_MS);
    eq(await own.verify(cell, epoch), true, "verify after the first keys' lifetime");
    eq(calls.length, 2, "asked again");
    eq([own.leaseValid(), signal.aborted], [true, false], "lease and claim kept");
  });

  check("a failed refresh is auth with the thrown cause; lease and claims are kept; the instance recovers", async ({ calls, provider, make, cell }) => {
    const down = new Error("sts is down");
    let up = true;
    const own = make(provider(() => {
      if (!up) throw down;
      return { ...good, expiration: Date.now() + LIFE_MS };
    }));
    await own.acquireLease();
    const { epoch } = await own.claim(cell);
    up = false;
    await sleep(LIFE_MS);
    const err = await rejection(own.verify(cell, epoch));
    eq([err.code, err.cause === down, err.message.includes("sts is down")], ["auth", true, true], `the failure (${err.message})`);
    eq([own.leaseValid(), own.signal(cell).aborted], [true, false], "lease and claim kept");
    up = true;
    eq(await own.verify(cell, epoch), true, "the provider is back: same lease, same claim");
    if (calls.length < 3) fail(`asked ${calls.length} times`);
  });

  check("a provider that never answers is auth after requestTimeoutMs, not a hang; the next request asks again", async ({ calls, provider, make }) => {
    const own = make(provider(() => new Promise(() => {}), { ...good }), { requestTimeoutMs: 300 });
    const err = await rejection(own.acquireLease());
    eq([err.code, err.message.includes("did not answer within 300 ms")], ["auth", true], `the hang (${err.message})`);
    await own.acquireLease();
    eq([calls.length, own.leaseValid()], [2, true], "asked again, and its keys sign");
  });

  check("listings keep the provider's keys and its thrown cause (S3Inspector, own.listCells)", async ({ calls, provider, make }) => {
    const down = new Error("sts is down");
    const inspector = new S3Inspector({ endpoint, bucket, region: "us-east-1", prefix: `t-${runtime}-cred-${unique()}/`, credentials: provider(() => { throw down; }) });
    const err = await rejection(inspector.listCells());
    eq([err.code, err.cause === down], ["auth", true], `the inspector's failure (${err.message})`);
    const own = make(async () => {
      calls.push(Date.now());
      return { ...good, expiration: Date.now() + 3_600_000 };
    });
    const before = calls.length;
    await own.listCells();
    await own.listNodes();
    eq(calls.length - before, 1, "asked once for the owner's listings, not at each");
  });

  check("keys the store refuses are asked for again", async ({ calls, provider, make }) => {
    const own = make(provider({ ...good, secretAccessKey: "wrong" }, { ...good }));
    const err = await rejection(own.acquireLease());
    eq([err.code, err.message.includes("SignatureDoesNotMatch") || err.message.includes("403")], ["auth", true], `refused (${err.message})`);
    await own.acquireLease();
    eq(calls.length, 2, "asked again after the refusal");
  });

  check("bad options and bad answers are refused, naming what is wrong", async ({ provider, make }) => {
    const ctorError = (opts) => {
      try {
        new S3Ownership({ endpoint, bucket, node: "n", ...opts });
      } catch (e) {
        return [e.code, e.message];
      }
      return ["none"];
    };
    const [code1, msg1] = ctorError({ credentials: { accessKeyId: "a" } });
    eq([code1, msg1.includes("credentials must be an async function")], ["invalid-input", true], msg1);
    const [code2, msg2] = ctorError({ credentials: async () => good, ...good });
    eq([code2, msg2.includes("not both")], ["invalid-input", true], msg2);
    const typo = await rejection(make(provider({ accessKeyId: "a", secretKey: "b" })).acquireLease());
    eq([typo.code, typo.message.includes(`unknown key "secretKey"`)], ["auth", true], typo.message);
    const when = await rejection(make(provider({ ...good, expiration: "soon" })).acquireLease());
    eq([when.code, when.message.includes("expiration")], ["auth", true], when.message);
    // What AWS SDK providers add is accepted as it is.
    const sdk = make(provider({ ...good, credentialScope: "us-east-1", accountId: "123", $source: {} }));
    await sdk.acquireLease();
  });

  check("keys in the wrong shape (a secrets manager's object, an array) are refused by type and never printed", async ({ provider, make }) => {
    const SECRET = "Secret-Never-Printed-7f3a";
    const shapes = [{ SecretString: SECRET }, [SECRET]];
    const leaks = [];
    const clean = (what, text) => {
      if (String(text).includes(SECRET)) leaks.push(`${what}: ${text}`);
    };
    for (const shape of shapes) {
      for (const field of ["accessKeyId", "secretAccessKey", "sessionToken"]) {
        const keys = { ...good, [field]: shape };
        const given = `${field} as ${Array.isArray(shape) ? "an array" : "an object"}`;
        for (const [what, f] of [
          ["S3Ownership", () => new S3Ownership({ endpoint, bucket, node: "n", ...keys })],
          ["S3Inspector", () => new S3Inspector({ endpoint, bucket, ...keys })],
          ["signRequest", () => api.signRequest({ url: `${endpoint}/${bucket}/k`, region: "us-east-1", ...keys })],
          ["presignUrl", () => api.presignUrl({ url: `${endpoint}/${bucket}/k`, region: "us-east-1", ...keys })],
          ["AwsClient", () => new api.AwsClient(keys)],
        ]) {
          let err;
          try {
            f();
          } catch (e) {
            err = e;
          }
          eq([err?.code, err?.message.includes(`${field} must be a string, got `)], ["invalid-input", true], `${what} with ${given} (${err?.message})`);
          clean(`${what} with ${given}`, `${err.message} ${err.stack}`);
        }
        // From a credentials function: the error and the credentials-failed event's detail.
        const events = [];
        const own = make(provider({ ...good, [field]: shape }), { onEvent: (e) => events.push(e) });
        const err = await rejection(own.acquireLease());
        eq([err.code, err.message.includes(`${field} must be a string, got object`)], ["auth", true], `a provider answering ${given} (${err.message})`);
        const failed = events.filter((e) => e.type === "credentials-failed");
        if (failed.length === 0) fail(`no credentials-failed event for ${given}: ${JSON.stringify(events)}`);
        clean(`a provider answering ${given}`, `${err.message} ${err.stack} ${JSON.stringify(events)}`);
      }
    }
    eq(leaks, [], "secrets printed");
  });

  return checks;
}
