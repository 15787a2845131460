// The Deno part of bench/claims' CPU per claim + release (run by it, not by hand): bench/claims-cpu.mjs
// in this Deno process, celld-edge through the package's deno entry (./deno.json). Prints one JSON line.
import { S3Ownership } from "celld-edge";
import process from "node:process";
import { BaselineOwnership } from "../baseline-protocol.mjs";
import { claimCpu } from "../claims-cpu.mjs";

const cpuMicros = () => {
  const c = process.cpuUsage();
  return c.user + c.system;
};
console.log(JSON.stringify({ version: Deno.version.deno, ...(await claimCpu({ S3Ownership, BaselineOwnership, cpuMicros })) }));
