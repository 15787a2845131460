// The workerd part of bench/claims' CPU per claim + release (run by it in Miniflare, not by hand). Clocks
// are frozen inside a Worker, so it times nothing: GET /?what=NAME&n=N sets up the four runners of
// bench/claims-cpu.mjs (the recording, a lease each) and runs N claim + release pairs of one of them; the
// runner reads workerd's CPU time around the request and subtracts that of N = 0 (the setup alone).
// GET /?what=count answers the requests per claim + release instead (untimed).
import { S3Ownership } from "celld-edge";
import { BaselineOwnership } from "../baseline-protocol.mjs";
import { claimRunners, requestsPerPair } from "../claims-cpu.mjs";

export default {
  async fetch(request) {
    const url = new URL(request.url);
    const runs = await claimRunners({ S3Ownership, BaselineOwnership });
    const what = url.searchParams.get("what");
    if (what === "count") {
      return Response.json({ requests: runs.requests, perPair: await requestsPerPair(runs) });
    }
    await runs.runners[what](Number(url.searchParams.get("n")));
    return Response.json({ requests: runs.requests });
  },
};
