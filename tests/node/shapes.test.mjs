// The .d.ts declares what the wasm takes: the option names of `new S3Ownership(...)` and
// `new S3Inspector(...)` are read from js/ownership.d.ts and compared with the lists the wasm checks
// options against (src/bindings/convert.rs), so an option added on one side only fails here.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import "../../js/node.js";
import { inspectorOptionNames, ownershipOptionNames } from "../../pkg/celld_edge.js";

const dts = readFileSync(new URL("../../js/ownership.d.ts", import.meta.url), "utf8");

/** The member names of `export interface <name> { ... }` (one level deep: members at two spaces). */
function interfaceMembers(name) {
  const body = dts.match(new RegExp(`export interface ${name} \\{\\n([\\s\\S]*?)\\n\\}`))?.[1];
  assert.ok(body !== undefined, `js/ownership.d.ts declares interface ${name}`);
  return [...body.matchAll(/^  (\w+)\??:/gm)].map((m) => m[1]);
}

/** The names of `export type <name> = Pick<Base, "a" | "b" ...>`. */
function pickedNames(name) {
  const body = dts.match(new RegExp(`export type ${name} = Pick<\\s*\\w+,([\\s\\S]*?)>;`))?.[1];
  assert.ok(body !== undefined, `js/ownership.d.ts declares type ${name} as a Pick`);
  return [...body.matchAll(/"(\w+)"/g)].map((m) => m[1]);
}

const sorted = (names) => [...names].sort();

test("S3OwnershipOptions in js/ownership.d.ts names exactly the options the wasm takes", () => {
  assert.deepEqual(sorted(interfaceMembers("S3OwnershipOptions")), sorted(ownershipOptionNames().split(",")));
});

test("S3InspectorOptions in js/ownership.d.ts names exactly the options the wasm takes", () => {
  assert.deepEqual(sorted(pickedNames("S3InspectorOptions")), sorted(inspectorOptionNames()));
});
