// The workerd part of `node bench/sign.mjs` (run by it in Miniflare, not by hand). Clocks are frozen
// inside a Worker between I/O, so it times nothing: GET /?signer=NAME&case=put|get&n=N signs N times and
// answers with the last authorization; the runner times the request from outside. GET /check answers
// "ok" once celld-edge and aws4fetch agree on a signature.
// Each signer and case has its own loop below (no eval in Workers to generate them), so no loop's call
// site sees more than one signer.
import { signRequest } from "celld-edge";
import { signRequest as signOnly } from "celld-edge/sign";
import { AwsClient } from "aws4fetch";
import { checkAgreement, signers } from "../sign-cases.mjs";

const table = signers({ signRequest, signOnly, AwsClient });
const ourPut = table.put["celld-edge"];
const ourGet = table.get["celld-edge"];
const onlyPut = table.put["celld-edge/sign"];
const onlyGet = table.get["celld-edge/sign"];
const theirPut = table.put.aws4fetch;
const theirGet = table.get.aws4fetch;

const loops = {
  "celld-edge": {
    put(n) { let a = ""; for (let i = 0; i < n; i++) a = ourPut(); return a; },
    get(n) { let a = ""; for (let i = 0; i < n; i++) a = ourGet(); return a; },
  },
  "celld-edge/sign": {
    put(n) { let a = ""; for (let i = 0; i < n; i++) a = onlyPut(); return a; },
    get(n) { let a = ""; for (let i = 0; i < n; i++) a = onlyGet(); return a; },
  },
  aws4fetch: {
    async put(n) { let a = ""; for (let i = 0; i < n; i++) a = await theirPut(); return a; },
    async get(n) { let a = ""; for (let i = 0; i < n; i++) a = await theirGet(); return a; },
  },
};

export default {
  async fetch(request) {
    const q = new URL(request.url).searchParams;
    if (new URL(request.url).pathname === "/check") {
      await checkAgreement({ signRequest, AwsClient });
      return new Response("ok");
    }
    return new Response(String(await loops[q.get("signer")][q.get("case")](Number(q.get("n")))));
  },
};
