// Counts round trips *in sequence*, not by timing: every request gets a depth, one more than the deepest
// request already answered when it was sent. Requests sent together (before any of them is answered)
// share a depth, so an operation's depth is how many round trips a user waits for one after another,
// whatever the store's latency. Works over an injected fetch (S3 API) and over an R2 binding alike.
// Runtime-neutral (no fs, no node: imports): used by bench/claims and by the tests that pin the cold path.

export class RoundTrips {
  /** `prefix`: the key prefix of the instances measured, left out of the labels. */
  constructor(prefix = "") {
    this.prefix = prefix;
    this.sent = [];
    this.answered = 0; // the deepest depth answered so far
  }

  /** A `fetch` that counts what goes through it to `inner`. */
  fetch(inner = globalThis.fetch) {
    return async (input, init) => {
      const req = input instanceof Request && init === undefined ? input : new Request(input, init);
      const condition = req.headers.get("if-none-match") ? " if-none-match" : req.headers.get("if-match") ? " if-match" : "";
      const url = new URL(req.url);
      const what = url.searchParams.has("list-type") ? `list ${this.#short(url.searchParams.get("prefix") ?? "")}` : this.#short(decodeURIComponent(url.pathname));
      return this.#track(`${req.method} ${what}${condition}`, () => inner(req));
    };
  }

  /** An R2 bucket binding that counts the calls made on it, then makes them on `bucket`. */
  binding(bucket) {
    const condition = (options) => {
      const c = options?.onlyIf ?? {};
      return c.etagDoesNotMatch ? " if-none-match" : c.etagMatches ? " if-match" : "";
    };
    return {
      get: (key, options) => this.#track(`GET ${this.#short(key)}`, () => bucket.get(key, options)),
      head: (key) => this.#track(`HEAD ${this.#short(key)}`, () => bucket.head(key)),
      put: (key, value, options) => this.#track(`PUT ${this.#short(key)}${condition(options)}`, () => bucket.put(key, value, options)),
      delete: (keys) => this.#track(`DELETE ${this.#short(String(keys))}`, () => bucket.delete(keys)),
      list: (options) => this.#track(`list ${this.#short(options?.prefix ?? "")}`, () => bucket.list(options)),
    };
  }

  /** Runs `op` and returns { result, requests, sequence, waves }: waves[i] lists the requests of depth i + 1. */
  async measure(op) {
    this.sent = [];
    this.answered = 0;
    const result = await op();
    const waves = [];
    for (const { label, depth } of this.sent) (waves[depth - 1] ??= []).push(label);
    return { result, requests: this.sent.length, sequence: waves.length, waves };
  }

  /** "GET a + GET b → PUT c" for printing. */
  static show(waves) {
    return waves.map((wave) => (wave ?? []).join(" + ")).join(" → ");
  }

  #short(key) {
    const at = this.prefix ? key.indexOf(this.prefix) : -1;
    return at >= 0 ? key.slice(at + this.prefix.length) : key.replace(/^\/+/, "");
  }

  async #track(label, send) {
    const entry = { label, depth: this.answered + 1 };
    this.sent.push(entry);
    try {
      return await send();
    } finally {
      this.answered = Math.max(this.answered, entry.depth);
    }
  }
}

/** A server's S3-API transport for the round-trip checks: its options through a counting fetch, and a
 * signed PUT that plants a whole key. */
export function s3Transport({ signRequest }, server) {
  const store = { endpoint: server.endpoint, bucket: server.bucket, region: "us-east-1", accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey };
  const plant = async (key, body) => {
    const url = `${server.endpoint}/${server.bucket}/${key.split("/").map(encodeURIComponent).join("/")}`;
    const signed = signRequest({ method: "PUT", url, body, region: "us-east-1", accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey });
    const res = await fetch(signed.url, { method: "PUT", headers: signed.headers, body });
    if (!res.ok) throw new Error(`planting ${key}: ${res.status} ${await res.text()}`);
  };
  return { transport: (trips) => ({ ...store, fetch: trips.fetch() }), plant };
}
