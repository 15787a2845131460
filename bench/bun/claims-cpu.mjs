// The Bun part of bench/claims' CPU per claim + release (run by it, not by hand): bench/claims-cpu.mjs in
// this Bun process, celld-edge as Bun resolves the package. Prints one JSON line.
import { S3Ownership } from "celld-edge";
import { BaselineOwnership } from "../baseline-protocol.mjs";
import { claimCpu } from "../claims-cpu.mjs";

const cpuMicros = () => {
  const c = process.cpuUsage();
  return c.user + c.system;
};
console.log(JSON.stringify({ version: Bun.version, ...(await claimCpu({ S3Ownership, BaselineOwnership, cpuMicros })) }));
