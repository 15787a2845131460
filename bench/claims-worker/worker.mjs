// The workerd part of bench/claims' CPU per claim + release (run by it in Miniflare, not by hand). Clocks
// are frozen inside a Worker, so it times nothing: GET /?what=NAME&n=N sets up the four runners of
// bench/claims-cpu.mjs (the recording, a lease each) and runs N claim + release pairs of one of them; the
// runner reads workerd's CPU time around the request and subtracts that of N = 0 (the setup alone).
import { S3Ownership } from "celld-edge";
import { BaselineOwnership } from "../baseline-protocol.mjs";
import { claimRunners } from "../claims-cpu.mjs";

export default {
  async fetch(request) {
    const url = new URL(request.url);
    const { runners, requests } = await claimRunners({ S3Ownership, BaselineOwnership });
    await runners[url.searchParams.get("what")](Number(url.searchParams.get("n")));
    return Response.json(requests);
  },
};
