#!/usr/bin/env node
// celld-edge: the package's command line (`npx celld-edge ...`, SPEC §4.2). `inspect` prints a bucket's
// cells (owner, epoch, lease age, live / dead / released / awaiting recovery) and nodes; `probe` qualifies
// a bucket once. Both run an S3Inspector (no node id, no lease): read-only except for the probe's own
// `probe/` keys and its verdict record; it never acquires a lease, claims or releases anything. Arguments
// are parsed with Node's util.parseArgs; credentials come from the environment only (never from flags,
// which land in shell history and `ps`). Exit codes: 0 done, 1 the store or the library failed (the error's
// code is printed), 2 bad arguments.
//
// The entries it prints are S3Inspector's (js/ownership.d.ts: CellEntry, NodeEntry; docs/inspect.md).

import { parseArgs } from "node:util";

const HELP = `Usage: celld-edge <command> [options]

Commands:
  inspect   list the bucket's cells (owner, epoch, lease, status) and nodes
  probe     qualify the bucket once: check that it honours conditional writes (writes and
            deletes a few objects under <prefix>probe/) and record the verdict at
            <prefix>probe/qualified.json, which later instances trust (probeTrustMs)
  help      show this text

Options:
  --endpoint URL     the S3 endpoint, e.g. https://s3.us-east-1.amazonaws.com
                     (default: $AWS_ENDPOINT_URL_S3, then $AWS_ENDPOINT_URL)
  --bucket NAME      the bucket (required)
  --prefix P/        the fleet's key prefix, ending in "/" (default: none)
  --region R         the signing region (default: $AWS_REGION, $AWS_DEFAULT_REGION, us-east-1)
  --max-clock-skew-ms MS
                     the fleet's maxClockSkewMs: a lease is dead once expired this long
                     (default 1000, the library's)
  --path-style       address the bucket as <endpoint>/<bucket>/... (the default)
  --virtual-hosted   address the bucket as <bucket>.<host>/... instead
  --json             print JSON for scripts instead of tables; errors too, on stdout, as
                     { "error": { "code", "message", ... } } (with the same exit status)
  -h, --help         show this text
  --version          print the package version

Credentials come from the environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and, for
temporary credentials, AWS_SESSION_TOKEN.

Exit status: 0 done, 1 the store or the library failed (its error code is printed), 2 bad arguments.

Examples:
  npx celld-edge inspect --endpoint http://127.0.0.1:9000 --bucket fleet --prefix prod/
  npx celld-edge inspect --endpoint https://<account>.r2.cloudflarestorage.com --bucket fleet --region auto --json
  npx celld-edge probe --endpoint http://127.0.0.1:9000 --bucket fleet
`;

const OPTIONS = {
  endpoint: { type: "string" },
  bucket: { type: "string" },
  prefix: { type: "string" },
  region: { type: "string" },
  "max-clock-skew-ms": { type: "string" },
  "path-style": { type: "boolean" },
  "virtual-hosted": { type: "boolean" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
};

class UsageError extends Error {}

/** Levenshtein distance, for suggesting the option a mistyped one was meant to be. */
function edits(a, b) {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 0; i < a.length; i++) {
    const next = [i + 1];
    for (let j = 0; j < b.length; j++) next.push(Math.min(row[j] + (a[i] === b[j] ? 0 : 1), row[j + 1] + 1, next[j] + 1));
    row = next;
  }
  return row[b.length];
}

/** The known name closest to `typed` when it is close enough to be a typo of it, else undefined. */
function closest(typed, known) {
  const [best] = known.map((k) => [edits(typed, k), k]).sort((x, y) => x[0] - y[0]);
  return best && best[0] <= Math.max(2, Math.floor(best[1].length / 3)) ? best[1] : undefined;
}

const COMMANDS = ["inspect", "probe", "help"];

/** parseArgs's refusal in this tool's words: an unknown option is named with the closest known one
 * (Node's own text talks about positional arguments, which this tool does not take). */
function usageError(e) {
  const name = /'([^']+)'/.exec(e.message)?.[1];
  if (e.code !== "ERR_PARSE_ARGS_UNKNOWN_OPTION" || name === undefined) return new UsageError(e.message);
  const meant = closest(name.replace(/^-+/, "").split("=")[0].toLowerCase(), Object.keys(OPTIONS));
  return new UsageError(`unknown option ${name}${meant ? `: did you mean --${meant}?` : ""} (--help lists them)`);
}

/** Characters a terminal acts on (C0 and C1 controls, DEL: escape sequences, OSC 52 clipboard writes)
 * or that reorder or break a line (bidi overrides and isolates, line/paragraph separators). */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** `text` safe to print: anything in UNSAFE as a visible `\xHH` / `\u{HHHH}` escape. Everything printed
 * from the store, the arguments or an error goes through this (or `jsonText`). */
function clean(text) {
  return String(text).replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u{${code.toString(16)}}`;
  });
}

/** JSON for scripts, with what JSON.stringify leaves raw (DEL, C1 controls, bidi controls, U+2028/9)
 * escaped as `\uHHHH` too: the same value to a parser, nothing a terminal acts on. */
function jsonText(value) {
  // C0 controls are escaped by JSON.stringify already (and its own newlines are layout).
  return JSON.stringify(value, null, 2).replace(/[\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** The command and its options, checked; throws UsageError. */
function parse(argv, env) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    throw usageError(e);
  }
  const { values, positionals } = parsed;
  if (values.help || values.version) return { command: values.version && !values.help ? "version" : "help" };
  const [command, ...extra] = positionals;
  if (command === undefined) throw new UsageError("no command given (inspect, probe or help)");
  if (command === "help") return { command };
  if (command !== "inspect" && command !== "probe") {
    const meant = closest(command.toLowerCase(), COMMANDS);
    throw new UsageError(`unknown command ${JSON.stringify(command)}${meant ? `: did you mean ${meant}?` : ""} (${COMMANDS.join(", ")})`);
  }
  if (extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`);
  if (values["path-style"] && values["virtual-hosted"]) throw new UsageError("--path-style and --virtual-hosted exclude each other");
  const endpoint = values.endpoint ?? env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  if (!endpoint) throw new UsageError("--endpoint is required (or set AWS_ENDPOINT_URL_S3)");
  if (!values.bucket) throw new UsageError("--bucket is required");
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) {
    throw new UsageError("credentials come from the environment: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
  }
  const options = {
    endpoint,
    bucket: values.bucket,
    region: values.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? "us-east-1",
    pathStyle: !values["virtual-hosted"],
    accessKeyId,
    secretAccessKey,
  };
  if (env.AWS_SESSION_TOKEN) options.sessionToken = env.AWS_SESSION_TOKEN;
  if (values.prefix !== undefined) options.prefix = values.prefix;
  const skew = values["max-clock-skew-ms"];
  if (skew !== undefined) {
    if (!/^\d+$/.test(skew)) throw new UsageError(`--max-clock-skew-ms must be a whole number of milliseconds, got ${JSON.stringify(skew)}`);
    options.maxClockSkewMs = Number(skew);
  }
  return { command, options, json: values.json === true };
}

/** `1.2s`, `350ms`, `3m05s`, `2h10m`, `4d`: short and exact enough for a table. */
function duration(ms) {
  const a = Math.abs(ms);
  if (a < 1000) return `${Math.round(a)}ms`;
  if (a < 60_000) return `${(a / 1000).toFixed(1)}s`;
  if (a < 3_600_000) return `${Math.floor(a / 60_000)}m${String(Math.floor((a % 60_000) / 1000)).padStart(2, "0")}s`;
  if (a < 86_400_000) return `${Math.floor(a / 3_600_000)}h${String(Math.floor((a % 3_600_000) / 60_000)).padStart(2, "0")}m`;
  return `${Math.floor(a / 86_400_000)}d`;
}

function expiry(inMs) {
  if (inMs === null || inMs === undefined) return "-";
  return inMs >= 0 ? `in ${duration(inMs)}` : `${duration(inMs)} ago`;
}

function ago(ms) {
  return ms === null || ms === undefined ? "-" : `${duration(Math.max(0, ms))} ago`;
}

/** Left-aligned columns, two spaces apart; every cell `clean`ed. */
function table(header, rows) {
  rows = rows.map((r) => r.map(clean));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (r) => r.map((c, i) => String(c).padEnd(widths[i])).join("  ").trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

function cellsTable(cells) {
  const rows = cells.map((c) => [c.cell, c.node ?? "-", c.epoch ?? "-", c.status, expiry(c.leaseExpiresInMs), ago(c.leaseAgeMs), recovering(c)]);
  return table(["CELL", "OWNER", "EPOCH", "STATUS", "LEASE EXPIRES", "LEASE RENEWED", "NOTE"], rows);
}

/** Who is recovering a dead celld node's log: "celld-c recovering, heartbeat 4.0s ago", or that nobody
 * is (no claimant, or a claim stale after 30 s without a heartbeat). */
function recovering(entry) {
  if (!entry.awaitingRecovery) return "";
  const r = entry.recovery;
  if (!r?.claimant) return "awaiting recovery: no celld node recovering";
  const beat = r.heartbeatAgeMs === null ? "no heartbeat" : `heartbeat ${ago(r.heartbeatAgeMs)}`;
  return `awaiting recovery: ${r.claimant} recovering, ${beat}${r.stale ? " (stale)" : ""}`;
}

function nodesTable(nodes) {
  const rows = nodes.map((n) => [n.node, n.lease, expiry(n.expiresInMs), ago(n.ageMs), n.addr || "-", recovering(n)]);
  return table(["NODE", "LEASE", "EXPIRES", "RENEWED", "ADDR", "NOTE"], rows);
}

function problems(entries) {
  return entries.filter((e) => e.error).map((e) => `  ${clean(e.key)}: ${clean(e.error.code)}: ${clean(e.error.message)}`);
}

/** The library, loaded only once the arguments are good (so --help and bad arguments need no wasm). */
async function library() {
  try {
    return await import("celld-edge");
  } catch (e) {
    const err = new Error(`cannot load the celld-edge library: ${e.message}`, { cause: e });
    err.code = "unavailable";
    throw err;
  }
}

async function inspect(inspector, json, out) {
  const [cells, nodes] = await Promise.all([inspector.listCells(), inspector.listNodes()]);
  if (json) {
    out(jsonText({ cells, nodes }));
    return;
  }
  const counts = {};
  for (const c of cells) counts[c.status] = (counts[c.status] ?? 0) + 1;
  const summary = Object.entries(counts).map(([s, n]) => `${n} ${clean(s)}`).join(", ");
  out(`Cells: ${cells.length}${summary ? ` (${summary})` : ""}`);
  if (cells.length > 0) out(cellsTable(cells));
  out("");
  out(`Nodes: ${nodes.length} (${nodes.filter((n) => n.live).length} live)`);
  if (nodes.length > 0) out(nodesTable(nodes));
  const bad = [...problems(cells), ...problems(nodes)];
  if (bad.length > 0) out(["", "Records that do not decode:", ...bad].join("\n"));
}

/** The verdict recorded at `record` before this probe, as `{ verdict, atMs }`, or null when there is none
 * or it cannot be read (the probe itself then says what is wrong with the store). */
async function recordedVerdict({ signRequest }, options, record) {
  const base = new URL(options.endpoint);
  const key = record.split("/").map(encodeURIComponent).join("/");
  const url = options.pathStyle
    ? `${base.origin}${base.pathname.replace(/\/$/, "")}/${encodeURIComponent(options.bucket)}/${key}`
    : `${base.protocol}//${options.bucket}.${base.host}${base.pathname.replace(/\/$/, "")}/${key}`;
  try {
    const { accessKeyId, secretAccessKey, sessionToken, region } = options;
    const get = signRequest({ accessKeyId, secretAccessKey, sessionToken, region, url });
    const res = await fetch(get.url, { headers: get.headers });
    if (!res.ok) return null;
    const { verdict, at_ms: atMs } = await res.json();
    return typeof verdict === "string" && Number.isSafeInteger(atMs) ? { verdict, atMs } : null;
  } catch {
    return null;
  }
}

async function probe(lib, inspector, options, json, out) {
  const record = `${options.prefix ?? ""}probe/qualified.json`;
  const before = await recordedVerdict(lib, options, record);
  const report = await inspector.probe();
  const previous = before && { verdict: before.verdict, at: new Date(before.atMs).toISOString(), agoMs: Math.max(0, Date.now() - before.atMs) };
  if (json) {
    out(jsonText({ qualified: true, endpoint: options.endpoint, bucket: options.bucket, prefix: options.prefix ?? "", record, previous, report }));
    return;
  }
  out(`Qualified: ${clean(options.endpoint)} bucket ${clean(options.bucket)}${options.prefix ? ` prefix ${clean(options.prefix)}` : ""} honours conditional writes.`);
  if (previous) {
    const was = previous.verdict === "qualified" ? "qualified" : `recorded as ${clean(previous.verdict)}`;
    out(`It was already ${was} at ${previous.at} (${duration(previous.agoMs)} ago): this probe qualified it again and replaced that record.`);
  }
  out(`Recorded at ${clean(record)}: instances trust it for their probeTrustMs (default 7 days) instead of probing.`);
  for (const [k, v] of Object.entries(report)) out(`  ${clean(k)}: ${clean(v)}`);
}

/** An error as the JSON object `--json` prints: `{ error: { code, message, key, status, s3Code } }`. */
function jsonError(code, e) {
  const { key, status, s3Code } = e ?? {};
  return jsonText({ error: { code, message: e?.message ?? String(e), key, status, s3Code, cause: e?.cause?.message } });
}

/** Runs the command line; resolves to the exit status. `io` is { out, err } line writers. */
async function main(argv, env, io) {
  let args;
  try {
    args = parse(argv, env);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    if (argv.includes("--json")) {
      io.out(jsonError("usage", e));
      return 2;
    }
    io.err(`celld-edge: ${clean(e.message)}`);
    io.err("Try 'celld-edge --help'.");
    return 2;
  }
  if (args.command === "help") {
    io.out(HELP.trimEnd());
    return 0;
  }
  if (args.command === "version") {
    const { readFileSync } = await import("node:fs");
    io.out(JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version);
    return 0;
  }
  try {
    const lib = await library();
    const inspector = new lib.S3Inspector(args.options);
    if (args.command === "inspect") await inspect(inspector, args.json, io.out);
    else await probe(lib, inspector, args.options, args.json, io.out);
    return 0;
  } catch (e) {
    const code = e?.code ?? "error";
    if (args.json) {
      io.out(jsonError(code, e));
      return code === "invalid-input" ? 2 : 1;
    }
    // The library's messages may begin with what the code says ("invalid input: ..."): said once.
    const message = String(e?.message ?? e);
    const said = `${code.replace(/-/g, " ")}: `;
    io.err(`celld-edge: ${clean(code)}: ${clean(message.startsWith(said) ? message.slice(said.length) : message)}`);
    if (e?.cause && e.cause !== e) io.err(`  cause: ${clean(e.cause?.message ?? e.cause)}`);
    return code === "invalid-input" ? 2 : 1;
  }
}

// A reader that stopped reading (`celld-edge inspect | head`) is not an error of ours.
process.stdout.on("error", (e) => process.exit(e.code === "EPIPE" ? 0 : 1));
const io = { out: (line) => process.stdout.write(`${line}\n`), err: (line) => process.stderr.write(`${line}\n`) };
process.exitCode = await main(process.argv.slice(2), process.env, io);
