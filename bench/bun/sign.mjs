// The Bun part of `node bench/sign.mjs` (run by it, not by hand): celld-edge and celld-edge/sign (the
// package as Bun resolves it), aws4fetch and aws4 (Bun's node:crypto) timed in interleaved rounds in this Bun process. Prints
// one JSON line: { version, rates: { case: { name: signatures per CPU-second } } }.
import { signRequest } from "celld-edge";
import { signRequest as signOnly } from "celld-edge/sign";
import { AwsClient } from "aws4fetch";
import aws4 from "aws4";
import { checkAgreement, interleaved, signers } from "../sign-cases.mjs";

const [rounds, roundMs] = process.argv.slice(2).map(Number);
await checkAgreement({ signRequest, AwsClient });
const cpuMicros = () => {
  const c = process.cpuUsage();
  return c.user + c.system;
};
const rates = await interleaved(signers({ signRequest, signOnly, AwsClient, aws4 }), rounds, roundMs, cpuMicros);
console.log(JSON.stringify({ version: Bun.version, rates }));
