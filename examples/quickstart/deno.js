import { S3Ownership } from "celld-edge"; // mapped in deno.json (see Install: npm:, or a tarball in node_modules)

const own = new S3Ownership({
  endpoint: Deno.env.get("S3_ENDPOINT"), bucket: Deno.env.get("S3_BUCKET"), region: Deno.env.get("S3_REGION"),
  accessKeyId: Deno.env.get("AWS_ACCESS_KEY_ID"), secretAccessKey: Deno.env.get("AWS_SECRET_ACCESS_KEY"),
  node: `deno-${crypto.randomUUID()}`,
});
await own.acquireLease();
own.startRenewing((e) => console.error("lease:", e.code)); // fenced: stop acting for the cell
for (const signal of ["SIGINT", "SIGTERM"]) { // Ctrl-C, and what service managers and containers send
  Deno.addSignalListener(signal, async () => {
    await own.close({ release: true }); // the next owner claims it at once instead of waiting out the lease
    Deno.exit(0);
  });
}
const claim = await own.claim("cell-1");
console.log(claim.outcome === "applied" ? `mine at epoch ${claim.epoch}` : `owned by ${claim.owner.node}`);
