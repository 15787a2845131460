// README.md's takeover figures are the bench's (issue 33, item 4): the table between the README's
// `<!-- takeover: bench/takeover-latest.json -->` markers must be exactly what that record, written by the
// last `bench/takeover` run, gives (`takeoverTable` below), so that the README cannot state a figure no run
// produced. A new run of the bench rewrites the record; paste the table this test prints when it differs.
import { test } from "node:test";
import { equal } from "node:assert/strict";
import { readFileSync } from "node:fs";

const root = new URL("../../", import.meta.url);
const read = (p) => readFileSync(new URL(p, root), "utf8");

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

/** The README's table of a bench/takeover-latest.json record. */
export function takeoverTable(r) {
  const lines = [
    `| after | the peer | p50 | p99 |`,
    `|---|---|---|---|`,
    ...r.rows.map((row) => {
      const [after, peer] = row.case.split(" -> ");
      return `| ${after === "crash" ? "a crash (`kill -9`)" : "`release()`"} | ${peer} | ${seconds(row.p50)} | ${seconds(row.p99)} |`;
    }),
    "",
    `Measured by \`bench/takeover ${r.samples}\` on ${r.date} (${r.store}, \`leaseTtlMs\` ${r.leaseTtlMs}, \`maxClockSkewMs\` ${r.maxClockSkewMs}, ${r.samples} samples per row, ${r.parallel} at a time on a loaded 2-core machine; the asking peer claims every ${r.askMs} ms).`,
  ];
  return lines.join("\n");
}

test("README's takeover table is bench/takeover-latest.json's", () => {
  const record = JSON.parse(read("bench/takeover-latest.json"));
  const readme = read("README.md");
  const open = "<!-- takeover: bench/takeover-latest.json -->\n";
  const start = readme.indexOf(open);
  const end = readme.indexOf("\n<!-- /takeover -->", start);
  const stated = start < 0 || end < 0 ? "(no table between the markers)" : readme.slice(start + open.length, end);
  equal(stated, takeoverTable(record), "README.md's takeover table; the record gives the expected one");
});
