// The Deno part of `node bench/sign.mjs` (run by it, not by hand): celld-edge (the package's deno entries,
// through ./deno.json; the signing-only one too) and aws4fetch timed in interleaved rounds in this Deno process. Prints one JSON
// line: { version, rates: { case: { name: signatures per CPU-second } } }.
import { signRequest } from "celld-edge";
import { signRequest as signOnly } from "celld-edge/sign";
import { AwsClient } from "aws4fetch";
import process from "node:process";
import { checkAgreement, interleaved, signers } from "../sign-cases.mjs";

const [rounds, roundMs] = Deno.args.map(Number);
await checkAgreement({ signRequest, AwsClient });
const cpuMicros = () => {
  const c = process.cpuUsage();
  return c.user + c.system;
};
const rates = await interleaved(signers({ signRequest, signOnly, AwsClient }), rounds, roundMs, cpuMicros);
console.log(JSON.stringify({ version: Deno.version.deno, rates }));
