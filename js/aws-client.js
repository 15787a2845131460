// AwsClient: a drop-in for aws4fetch's class of the same name (SPEC §4.1), built only on the public
// signRequest and presignUrl. It takes what fetch takes (a URL or a Request, init with method, headers
// and body), guesses service and region from well-known hosts, signs, and sends with retries.
// It must never resend a request that may have changed something when resent (a conditional write, a
// POST, a one-shot stream body), never sign anything but what the runtime will send, never let an unknown
// option pass silently, and never put a secret into an error.

import { fetchMethod, presignUrl, signRequest } from "./sign.js";
import { CelldEdgeError, describe, invalidInput as invalid } from "./error.js";

/** aws4fetch's defaults: up to 10 retries, the first within 50 ms. */
const DEFAULT_RETRIES = 10;
const DEFAULT_INIT_RETRY_MS = 50;
/** No single backoff grows past this, however many retries are allowed. */
const MAX_RETRY_MS = 20_000;
/** A HEAD refused with 403 (no body, so no error code) counts as skewed past this clock difference. */
const HEAD_SKEW_MS = 5 * 60_000;
/** A store's Date further than this from our clock is not believed (docs/aws-client.md). */
const MAX_SKEW_MS = 24 * 3_600_000;
/** Clock offsets are kept for this many hosts (the oldest learnt is forgotten first). */
const SKEW_HOSTS = 64;

const CLIENT_OPTIONS = new Set(["accessKeyId", "secretAccessKey", "sessionToken", "service", "region", "retries", "initRetryMs", "unsignedPayload", "fetch"]);
const AWS_OPTIONS = new Set(["accessKeyId", "secretAccessKey", "sessionToken", "service", "region", "datetime", "signQuery", "expiresIn", "unsignedPayload"]);
/** Options aws4fetch has (or that people reach for) that are refused here, and why. */
const REFUSED = {
  cache: "the signer keeps its own signing-key cache",
  appendSessionToken: "not supported (it exists for AWS IoT's MQTT gateway only)",
  allHeaders: "not needed: every header is signed except those proxies and runtimes rewrite",
  singleEncode: "not needed: S3 paths are encoded once and other services' twice, as AWS requires",
  expires: "did you mean expiresIn (seconds)?",
  headers: "headers go in init.headers (with signQuery they are the headers the URL is signed for)",
  signedHeaders: "with signQuery the URL is signed for the headers in init.headers",
};
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
/** Error codes that say the request was refused for its time alone (nothing was done). */
const SKEW_CODES = new Set(["RequestTimeTooSkewed", "RequestExpired", "RequestInTheFuture"]);
const EDGE_SPACE = /^[ \t\r\n]+|[ \t\r\n]+$/g;
const FORM_TYPE = "application/x-www-form-urlencoded;charset=UTF-8";


/** Refuses every key of `opts` not in `known`, naming it (and what to use instead, when known). */
function checkKeys(opts, known, what) {
  for (const key of Object.keys(opts)) {
    if (known.has(key)) continue;
    const why = REFUSED[key];
    throw invalid(`unknown ${what} option ${JSON.stringify(key)}${why ? `: ${why}` : ""}`);
  }
}

function optString(v, name) {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw invalid(`${name} must be a string, got ${describe(v)}`);
  if (v === "") throw invalid(`${name} must not be empty`);
  return v;
}

function optBoolean(v, name) {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw invalid(`${name} must be a boolean, got ${describe(v)}`);
  return v;
}

/** The well-known hosts' AWS partition regions look like this (us-east-1, us-gov-west-1, cn-north-1...). */
const REGION = /^[a-z]{2}(?:-[a-z]+)+-\d+$/;
/** Endpoint prefixes (the host's labels before the region, or its service label) that sign under another
 * service name (botocore's signing names). */
const SIGNING_NAMES = {
  appstream2: "appstream",
  cloudhsmv2: "cloudhsm",
  email: "ses",
  "git-codecommit": "codecommit",
  marketplace: "aws-marketplace",
  mobile: "AWSMobileHubService",
  "mturk-requester-sandbox": "mturk-requester",
  "personalize-runtime": "personalize",
  pinpoint: "mobiletargeting",
  queue: "sqs",
  "bedrock-runtime": "bedrock",
  "bedrock-agent-runtime": "bedrock",
  "bedrock-agent": "bedrock",
  "agreement-marketplace": "aws-marketplace",
  "entitlement-marketplace": "aws-marketplace",
  appconfigdata: "appconfig",
  "contact-lens": "connect",
  forecastquery: "forecast",
  "identity-chime": "chime",
  "media-pipelines-chime": "chime",
  "meetings-chime": "chime",
  "messaging-chime": "chime",
  "voice-chime": "chime",
  ivsrealtime: "ivs",
  "memory-db": "memorydb",
  "models-v2-lex": "lex",
  "runtime-v2-lex": "lex",
  oidc: "sso-oauth",
  "servicecatalog-appregistry": "servicecatalog",
  "s3-control": "s3",
  importexport: "IngestionService",
  "portal.sso": "awsssoportal",
  "participant.connect": "execute-api",
  "data.iotevents": "ioteventsdata",
  eventsv2: "events",
};

/**
 * `[service, region]` for a well-known host (either may be undefined when the host does not say):
 * AWS regional and global endpoints (virtual-hosted and path-style S3, dual-stack, FIPS, access points,
 * Lambda function URLs, IoT by host and path), Cloudflare R2 (`auto`) and Backblaze B2.
 */
function guessServiceRegion(hostname, pathname) {
  const host = hostname.toLowerCase();
  if (host === "r2.cloudflarestorage.com" || host.endsWith(".r2.cloudflarestorage.com")) return ["s3", "auto"];
  let m = /(?:^|\.)s3\.([a-z0-9-]+)\.backblazeb2\.com$/.exec(host);
  if (m) return ["s3", m[1]];
  m = /^([a-z0-9-]+\.)*lambda-url\.([a-z0-9-]+)\.on\.aws$/.exec(host);
  if (m) return ["lambda", m[2]];
  // api.aws and api.amazonwebservices.com.cn: the dual-stack-only hosts.
  m = /^(.+)\.(?:amazonaws\.com(\.cn)?|api\.aws|api\.amazonwebservices\.com(\.cn))$/.exec(host);
  if (!m) return [undefined, undefined];
  const china = m[2] !== undefined || m[3] !== undefined;
  const labels = m[1].split(".").filter((l) => l !== "dualstack");
  if (labels.at(-1) === "vpce") labels.pop(); // PrivateLink: <endpoint>.s3.<region>.vpce.amazonaws.com
  let region;
  let name = labels.at(-1);
  if (REGION.test(name) || name === "us-gov") {
    region = labels.at(-2) === undefined ? undefined : name;
    name = labels.at(-2) ?? name;
  } else if (labels.length >= 2 && REGION.test(labels.at(-2))) {
    region = labels.at(-2); // <domain>.<region>.es.amazonaws.com and the like
  }
  if (region === "us-gov") region = "us-gov-west-1";
  if (name === "s3" || name === "s3-accelerate" || name === "s3-accesspoint" || name === "s3-control" || name === "s3-fips" || name === "s3-external-1") {
    return ["s3", region ?? "us-east-1"];
  }
  m = /^s3-(?:fips-)?(.+)$/.exec(name); // legacy s3-<region> and s3-fips-<region> (botocore: us-gov-west-1)
  if (m && REGION.test(m[1])) return ["s3", m[1]];
  if (REGION.test(name) && region === undefined) return [undefined, name];
  if (name.endsWith("-fips")) name = name.slice(0, -5);
  if (name === "iot" && region !== undefined) return [iotSigningName(labels.slice(0, -2).join("."), pathname), region];
  // Global endpoints (iam, sts, route53, cloudfront...) sign in their partition's global region (botocore:
  // route53, budgets and health in China sign in cn-northwest-1).
  const endpointPrefix = labels.slice(0, labels.lastIndexOf(region ?? "")).join("."); // portal.sso, ...
  return [SIGNING_NAMES[endpointPrefix] ?? SIGNING_NAMES[name] ?? name, region ?? (china ? "cn-northwest-1" : "us-east-1")];
}

/**
 * AWS IoT's hosts sign under botocore's signing names: the control plane `iot.<region>` (and
 * `iot-fips.<region>`) as `iot`; `data.jobs.iot.<region>` as `iot-jobs-data` (and secure tunneling's and
 * Greengrass's hosts under their names); any other `*.iot.<region>`
 * (`data.iot`, `data-ats.iot`, an account's `<id>-ats.iot`) is the data plane, `iotdata`, except MQTT over
 * WebSocket (`/mqtt`), which AWS signs as `iotdevicegateway`. aws4fetch signs the control plane as
 * `execute-api`; botocore and AWS say `iot`.
 */
function iotSigningName(prefix, pathname) {
  if (prefix === "") return "iot";
  if (prefix === "data.jobs") return "iot-jobs-data";
  if (prefix === "api.tunneling") return "IoTSecuredTunneling";
  if (prefix === "greengrass" || prefix === "greengrass-ats") return "greengrass";
  return pathname === "/mqtt" ? "iotdevicegateway" : "iotdata";
}

/** What a body is, for hashing and resending. */
function bodyKind(body) {
  if (body === undefined || body === null) return "none";
  if (typeof body === "string") return "text";
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return "bytes";
  if (typeof Blob !== "undefined" && body instanceof Blob) return "blob";
  if (typeof URLSearchParams !== "undefined" && body instanceof URLSearchParams) return "form";
  if (typeof FormData !== "undefined" && body instanceof FormData) return "formdata";
  if (typeof ReadableStream !== "undefined" && body instanceof ReadableStream) return "stream";
  throw invalid(`body of type ${describe(body)} is not supported: pass a string, ArrayBuffer, typed array, Blob, URLSearchParams, FormData or ReadableStream`);
}

/**
 * The caller's headers (a plain object, a Headers or [name, value] pairs) as a Map of lower-case names
 * to values, repeats joined with `,` as SigV4 does (fetch would join them with ", " and break the
 * signature).
 */
function collectHeaders(h) {
  const out = new Map();
  if (h === undefined || h === null) return out;
  if (typeof h !== "object") throw invalid(`headers must be an object, Headers or [name, value] pairs, got ${describe(h)}`);
  const add = (name, value) => {
    if (typeof name !== "string") throw invalid(`header names must be strings, got ${describe(name)}`);
    if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") value = String(value);
    else if (typeof value !== "string") throw invalid(`header ${JSON.stringify(name)} must have a string value, got ${describe(value)}`);
    // Trimmed as fetch's Headers trims, before repeats are joined (the signer trims only the joined value).
    value = value.replace(EDGE_SPACE, "");
    const lower = name.toLowerCase();
    const had = out.get(lower);
    out.set(lower, had === undefined ? value : `${had},${value}`);
  };
  if (typeof h[Symbol.iterator] === "function") {
    for (const pair of h) {
      if (!Array.isArray(pair) || pair.length !== 2) throw invalid("headers: each entry must be a [name, value] pair");
      add(pair[0], pair[1]);
    }
  } else {
    for (const name of Object.keys(h)) add(name, h[name]);
  }
  return out;
}

/** True when resending the request could act twice or act on a changed state (SPEC §3: never blind). */
function isConditional(headers) {
  for (const name of headers.keys()) {
    if (name.startsWith("if-") || name.startsWith("x-amz-if-") || name.startsWith("x-amz-copy-source-if-") || name === "x-amz-write-offset-bytes") return true;
  }
  return false;
}

/** The URL without query or fragment (a presigned signature and token) and without anything up to its
 * last `@` (a password), for messages, whatever else is wrong with it (no scheme, another scheme). */
function where(url) {
  const cut = url.search(/[?#]/);
  const bare = cut < 0 ? url : url.slice(0, cut);
  const at = bare.lastIndexOf("@");
  return at < 0 ? bare : `…@${bare.slice(at + 1)}`;
}

/** A runtime's error message with any URL query cut out (Deno's name the URL, presigned token and all). */
function scrub(message) {
  return String(message).replace(/\?[^\s)"'<>]*/g, "?…");
}

/** Whether `e` or its causes name a URL query (Deno's messages hold the whole URL) or carry the URL
 * given (Node's URL errors, as `input`). */
function leaks(e, depth = 0) {
  if (typeof e === "string") return scrub(e) !== e;
  if (!(e instanceof Error)) return e !== null && typeof e === "object";
  return scrub(e.message) !== String(e.message) || (typeof e.stack === "string" && scrub(e.stack) !== e.stack) ||
    e.input !== undefined || (depth < 4 && e.cause !== undefined && leaks(e.cause, depth + 1));
}

/** A runtime's error, as the cause of ours: itself when it `leaks` nothing, else a copy with `scrub`bed
 * message, stack and causes, keeping its class, name and code. */
function scrubbed(e, depth = 0) {
  if (depth === 0 && !leaks(e)) return e;
  if (typeof e === "string") return scrub(e);
  if (!(e instanceof Error)) return e === null || typeof e !== "object" ? e : undefined;
  const cause = depth < 4 && e.cause !== undefined ? { cause: scrubbed(e.cause, depth + 1) } : undefined;
  const copy = new (e instanceof TypeError ? TypeError : Error)(scrub(e.message), cause);
  copy.name = e.name;
  if (typeof e.stack === "string") copy.stack = scrub(e.stack);
  if (e.code !== undefined) copy.code = e.code;
  return copy;
}

/** Removes `X-Amz-Expires` from a URL's query without re-encoding the rest; returns [url, value]. */
function takeExpires(url) {
  const q = url.indexOf("?");
  if (q < 0) return [url, undefined];
  let value;
  const kept = url
    .slice(q + 1)
    .split("&")
    .filter((piece) => {
      const eq = piece.indexOf("=");
      const key = eq < 0 ? piece : piece.slice(0, eq);
      if (key.toLowerCase() !== "x-amz-expires") return true;
      value = eq < 0 ? "" : piece.slice(eq + 1);
      return false;
    });
  return [kept.length ? `${url.slice(0, q)}?${kept.join("&")}` : url.slice(0, q), value];
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The store's error code from an S3 XML or AWS JSON error body, and its message. */
function errorCode(text) {
  const xml = /<Code>([^<]*)<\/Code>/.exec(text);
  if (xml) return [xml[1], /<Message>([^<]*)<\/Message>/.exec(text)?.[1] ?? ""];
  try {
    const json = JSON.parse(text);
    const code = String(json.__type ?? json.code ?? json.Code ?? "").split("#").pop();
    return [code, String(json.message ?? json.Message ?? "")];
  } catch {
    return ["", ""];
  }
}

export class AwsClient {
  #accessKeyId;
  #secretAccessKey;
  #sessionToken;
  #service;
  #region;
  #retries;
  #initRetryMs;
  #unsignedPayload;
  #fetch;
  /** How far each store host's clock is ahead of ours (ms), learnt from RequestTimeTooSkewed answers. */
  #skews = new Map();
  /** The last host guessed and what was guessed (a client usually talks to one host). */
  #guessedHost;
  #guessed;

  /**
   * Options: accessKeyId, secretAccessKey (required), sessionToken, service, region (guessed from the
   * host when not given), retries (default 10), initRetryMs (default 50), unsignedPayload (default true
   * for S3, false elsewhere), fetch (default globalThis.fetch). Unknown keys are refused.
   */
  constructor(options) {
    if (options === null || typeof options !== "object") throw invalid(`new AwsClient() needs an options object, got ${describe(options)}`);
    checkKeys(options, CLIENT_OPTIONS, "AwsClient");
    this.#accessKeyId = optString(options.accessKeyId, "accessKeyId");
    this.#secretAccessKey = optString(options.secretAccessKey, "secretAccessKey");
    if (this.#accessKeyId === undefined) throw invalid("accessKeyId is required");
    if (this.#secretAccessKey === undefined) throw invalid("secretAccessKey is required");
    this.#sessionToken = options.sessionToken === "" ? undefined : optString(options.sessionToken, "sessionToken");
    this.#service = optString(options.service, "service");
    this.#region = optString(options.region, "region");
    const retries = options.retries ?? DEFAULT_RETRIES;
    if (!Number.isSafeInteger(retries) || retries < 0) throw invalid(`retries must be a whole number >= 0, got ${describe(retries) === "number" ? retries : describe(retries)}`);
    this.#retries = retries;
    const initRetryMs = options.initRetryMs ?? DEFAULT_INIT_RETRY_MS;
    if (typeof initRetryMs !== "number" || !Number.isFinite(initRetryMs) || initRetryMs < 0) {
      throw invalid(`initRetryMs must be a number of milliseconds >= 0, got ${describe(initRetryMs) === "number" ? initRetryMs : describe(initRetryMs)}`);
    }
    this.#initRetryMs = initRetryMs;
    this.#unsignedPayload = optBoolean(options.unsignedPayload, "unsignedPayload");
    if (options.fetch !== undefined && options.fetch !== null && typeof options.fetch !== "function") throw invalid(`fetch must be a function, got ${describe(options.fetch)}`);
    this.#fetch = options.fetch ?? undefined;
  }

  get accessKeyId() {
    return this.#accessKeyId;
  }
  get service() {
    return this.#service;
  }
  get region() {
    return this.#region;
  }
  get retries() {
    return this.#retries;
  }
  get initRetryMs() {
    return this.#initRetryMs;
  }

  /** A signed Request for `fetch(input, init)`. `init.aws` may override credentials, service, region, datetime, signQuery, expiresIn, unsignedPayload. */
  async sign(input, init) {
    const plan = await this.#plan(input, init, false);
    return this.#request(plan, plan.datetime ?? this.#now(plan));
  }

  /** The time to sign `plan` at: ours corrected by its host's offset, except that a presigned URL is
   * never dated later than our clock says (a learnt offset must not extend its life). */
  #now(plan) {
    const skew = this.#skews.get(plan.host) ?? 0;
    return new Date(Date.now() + (plan.signQuery ? Math.min(0, skew) : skew));
  }

  /** Keeps `offset` as `host`'s, forgetting the oldest host's beyond SKEW_HOSTS. */
  #learnSkew(host, offset) {
    this.#skews.delete(host);
    this.#skews.set(host, offset);
    if (this.#skews.size > SKEW_HOSTS) this.#skews.delete(this.#skews.keys().next().value);
  }

  /**
   * Signs and sends, with retries (exponential backoff, full jitter) on 5xx/429/network errors for
   * requests safe to repeat, and one re-signed attempt after a clock-skew refusal. Resolves to the
   * Response (the last one when retries run out); rejects with a `transport` error when no answer came.
   */
  async fetch(input, init) {
    const plan = await this.#plan(input, init, true);
    // globalThis.fetch is looked up per call (a runtime or test may replace it) and called as a method.
    const send = this.#fetch ?? ((request) => globalThis.fetch(request));
    let skewFixed = false;
    for (let attempt = 0; ; attempt++) {
      const request = this.#request(plan, this.#now(plan));
      let response;
      try {
        response = await send(request);
      } catch (e) {
        if (plan.signal?.aborted) throw plan.signal.reason ?? e;
        if (plan.retry && attempt < this.#retries) {
          await this.#backoff(attempt, plan.signal);
          continue;
        }
        throw new CelldEdgeError(`${plan.method} ${where(request.url)}: no answer (${(e && e.name) || "Error"}: ${scrub((e && e.message) || e)})${plan.retry ? ` after ${attempt + 1} attempts` : ""}`, { code: "transport", cause: scrubbed(e) });
      }
      if (!skewFixed && plan.replayable && (response.status === 403 || response.status === 400)) {
        const skew = await this.#skewFrom(response, plan);
        if (skew !== undefined) {
          skewFixed = true;
          this.#learnSkew(plan.host, skew);
          await response.body?.cancel().catch(() => {});
          attempt--; // the refused attempt did nothing: it does not count against the retries
          continue;
        }
      }
      if ((response.status >= 500 || response.status === 429) && plan.retry && attempt < this.#retries) {
        await response.body?.cancel().catch(() => {});
        await this.#backoff(attempt, plan.signal);
        continue;
      }
      return response;
    }
  }

  #backoff(attempt, signal) {
    return sleep(Math.random() * Math.min(MAX_RETRY_MS, this.#initRetryMs * 2 ** attempt), signal);
  }

  /** The store's clock offset when `response` refuses the request for its time, else undefined. A Date
   * that is not plausible (more than MAX_SKEW_MS from our clock, or a time the signer cannot write) is
   * not believed: one bad answer must not stop the client from signing. */
  async #skewFrom(response, plan) {
    const serverMs = Date.parse(response.headers.get("date") ?? "");
    if (!Number.isFinite(serverMs)) return undefined;
    const offset = serverMs - Date.now();
    if (!(Math.abs(offset) <= MAX_SKEW_MS)) return undefined;
    if (plan.method === "HEAD" || response.body === null) {
      return response.status === 403 && Math.abs(offset - (this.#skews.get(plan.host) ?? 0)) > HEAD_SKEW_MS ? offset : undefined;
    }
    let text;
    try {
      text = await response.clone().text();
    } catch {
      return undefined;
    }
    const [code, message] = errorCode(text);
    if (SKEW_CODES.has(code)) return offset;
    if ((code === "InvalidSignatureException" || code === "SignatureDoesNotMatch") && /signature expired|not yet current/i.test(message)) return offset;
    return undefined;
  }

  /** Everything about a request except its time: checked options, the URL, headers, body and whether it may be resent. */
  async #plan(input, init, forFetch) {
    if (init !== undefined && init !== null && typeof init !== "object") throw invalid(`init must be an object, got ${describe(init)}`);
    const rest = init ? { ...init } : {};
    const aws = rest.aws ?? {};
    delete rest.aws;
    if (aws === null || typeof aws !== "object") throw invalid(`init.aws must be an object, got ${describe(aws)}`);
    checkKeys(aws, AWS_OPTIONS, "aws");
    if (forFetch && aws.datetime !== undefined && aws.datetime !== null) {
      throw invalid("aws.datetime is for sign(): fetch() signs each attempt at the current time (corrected for clock skew)");
    }

    const isRequest = typeof Request !== "undefined" && input instanceof Request;
    let url;
    let parsed;
    if (isRequest) url = input.url;
    else if (typeof input === "string" || (input !== null && typeof input === "object" && typeof input.href === "string")) {
      const text = typeof input === "string" ? input : input.href;
      try {
        parsed = new URL(text); // what fetch sends is the URL as fetch parses it
      } catch (e) {
        throw invalid(`url ${JSON.stringify(where(text))} does not parse`, scrubbed(e));
      }
      url = parsed.href;
    } else throw invalid(`input must be a URL string, URL or Request, got ${describe(input)}`);
    if (!url.startsWith("https://") && !url.startsWith("http://")) throw invalid(`url ${JSON.stringify(where(url))} must be http or https`);

    const headers = collectHeaders(rest.headers !== undefined ? rest.headers : isRequest ? input.headers : undefined);
    delete rest.headers;
    let body = rest.body;
    delete rest.body;
    let method = rest.method ?? (isRequest ? input.method : undefined);
    delete rest.method;
    if (body === undefined && isRequest && input.body !== null) {
      if (input.bodyUsed) throw invalid("the Request's body has already been read");
      // aws4fetch's rule: a Request's body is read into memory (so it can be hashed and resent), unless
      // the Request says its payload hash itself; then its stream is sent as it is, once.
      body = headers.has("x-amz-content-sha256") ? input.body : new Uint8Array(await input.clone().arrayBuffer());
    }
    let kind = bodyKind(body);
    if (method === undefined || method === null) method = kind === "none" ? "GET" : "POST"; // as aws4fetch
    if (typeof method !== "string" || method === "") throw invalid(`method must be a non-empty string, got ${describe(method)}`);
    method = fetchMethod(method);
    if ((method === "GET" || method === "HEAD") && kind !== "none") throw invalid(`a ${method} request cannot have a body`);
    if (isRequest) {
      if (rest.signal === undefined) rest.signal = input.signal;
      if (rest.redirect === undefined) rest.redirect = input.redirect;
    }

    let service = optString(aws.service, "aws.service") ?? this.#service;
    let region = optString(aws.region, "aws.region") ?? this.#region;
    if (service === undefined || region === undefined) {
      const { hostname: host, pathname } = parsed ?? new URL(url);
      // IoT's data plane signs /mqtt under another name: the path is part of what was guessed from.
      const guessedFrom = `${host}${pathname === "/mqtt" ? "/mqtt" : ""}`;
      if (guessedFrom !== this.#guessedHost) {
        this.#guessed = guessServiceRegion(host, pathname);
        this.#guessedHost = guessedFrom;
      }
      service ??= this.#guessed[0];
      region ??= this.#guessed[1];
      if (service === undefined || region === undefined) {
        const missing = [service === undefined && "service", region === undefined && "region"].filter(Boolean).join(" and ");
        throw invalid(`cannot guess the ${missing} from host ${JSON.stringify(host)}: pass ${missing} to new AwsClient() or in init.aws`);
      }
    }
    const accessKeyId = optString(aws.accessKeyId, "aws.accessKeyId") ?? this.#accessKeyId;
    const secretAccessKey = optString(aws.secretAccessKey, "aws.secretAccessKey") ?? this.#secretAccessKey;
    let sessionToken = aws.sessionToken === "" ? undefined : optString(aws.sessionToken, "aws.sessionToken") ?? this.#sessionToken;

    // The signer owns these: a previously signed Request carries them. A token given only as a header is
    // the session token.
    headers.delete("host");
    headers.delete("authorization");
    headers.delete("x-amz-date");
    const tokenHeader = headers.get("x-amz-security-token");
    headers.delete("x-amz-security-token");
    if (sessionToken === undefined && tokenHeader) sessionToken = tokenHeader;

    const signQuery = optBoolean(aws.signQuery, "aws.signQuery") ?? false;
    let expiresIn = aws.expiresIn ?? undefined;
    if (expiresIn !== undefined && !signQuery) throw invalid("aws.expiresIn needs aws.signQuery: true");
    if (signQuery) {
      const [bare, given] = takeExpires(url);
      if (given !== undefined) {
        // aws4fetch takes the validity from an X-Amz-Expires query parameter.
        const fromUrl = /^\d+$/.test(given) ? Number(given) : NaN;
        if (!Number.isSafeInteger(fromUrl)) throw invalid(`X-Amz-Expires ${JSON.stringify(given)} in the url is not a whole number of seconds`);
        if (expiresIn !== undefined && expiresIn !== fromUrl) throw invalid(`aws.expiresIn ${expiresIn} and the url's X-Amz-Expires ${fromUrl} disagree`);
        expiresIn = fromUrl;
        url = bare;
      }
    }

    if (kind === "form" && !headers.has("content-type")) headers.set("content-type", FORM_TYPE);
    const unsignedPayload = optBoolean(aws.unsignedPayload, "aws.unsignedPayload") ?? this.#unsignedPayload ?? service === "s3";
    // What the signer hashes: nothing when the payload is unsigned or its hash is given.
    let hashed;
    if (!signQuery && !unsignedPayload && !headers.has("x-amz-content-sha256")) {
      if (kind === "text" || kind === "bytes") hashed = body;
      else if (kind === "form") hashed = body.toString();
      else if (kind === "blob") hashed = new Uint8Array(await body.arrayBuffer());
      else if (kind !== "none") {
        throw invalid(`a ${kind === "stream" ? "ReadableStream" : "FormData"} body cannot be hashed: give its SHA-256 as x-amz-content-sha256, or sign it UNSIGNED-PAYLOAD (unsignedPayload: true, S3's default)`);
      }
    }
    // A stream can be sent once: such a request is never resent, not even after a clock-skew refusal.
    const replayable = kind !== "stream";
    const retry = replayable && (SAFE_METHODS.has(method) || ((method === "PUT" || method === "DELETE") && !isConditional(headers)));
    const pairs = [...headers];
    // Clock offsets are per host: one store's clock (or one odd answer) says nothing of another's.
    const host = (parsed ?? new URL(url)).host;
    return {
      method, url, host, pairs, body, kind, hashed, unsignedPayload, service, region, accessKeyId, secretAccessKey, sessionToken,
      signQuery, expiresIn, datetime: aws.datetime ?? undefined, rest, signal: rest.signal ?? undefined, replayable, retry,
    };
  }

  /** The plan signed at `datetime`, as a Request. */
  #request(plan, datetime) {
    const { method, service, region, accessKeyId, secretAccessKey, sessionToken } = plan;
    let url;
    let headers;
    if (plan.signQuery) {
      url = presignUrl({ method, url: plan.url, region, service, accessKeyId, secretAccessKey, sessionToken, datetime, expiresIn: plan.expiresIn, signedHeaders: plan.pairs });
      headers = plan.pairs;
    } else {
      const signed = signRequest({
        method, url: plan.url, headers: plan.pairs, body: plan.hashed, unsignedPayload: plan.hashed === undefined && plan.unsignedPayload,
        region, service, accessKeyId, secretAccessKey, sessionToken, datetime,
      });
      url = signed.url;
      headers = signed.headers;
    }
    const init = { ...plan.rest, method, headers };
    if (plan.kind !== "none") init.body = plan.body;
    if (plan.kind === "stream") init.duplex = "half";
    let request;
    try {
      request = new Request(url, init);
    } catch (e) {
      throw invalid(`the signed request could not be built (${scrub((e && e.message) || e)})`, scrubbed(e));
    }
    if (request.url !== url) {
      throw invalid(`url ${JSON.stringify(where(url))} would be sent as ${JSON.stringify(where(request.url))}, which is not what was signed`);
    }
    return request;
  }
}
