// Type-checks in a CommonJS TypeScript project (`"type": "commonjs"`, --module node16): the import below
// compiles to require(), which needs the require condition's own declarations (pkg/index.d.cts).
import { signRequest, S3Ownership, type CelldEdgeError } from "celld-edge";

const signed = signRequest({ accessKeyId: "AKID", secretAccessKey: "secret", region: "auto", url: "https://h/b/k" });
const own = new S3Ownership({ endpoint: "https://h", bucket: "b", region: "auto", accessKeyId: "k", secretAccessKey: "s", node: "n" });
own.claim("c").catch((e: CelldEdgeError) => console.log(e.code, signed.headers.authorization));
