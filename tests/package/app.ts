// Type-checks against the shipped declarations (tsc --strict --noEmit): the calls users write must
// compile, and the misuse below must not (each @ts-expect-error fails the check if it compiles).
import { signRequest, presignUrl, type CelldEdgeError, type ErrorCode, type SignedRequest } from "celld-edge";

const creds = { accessKeyId: "AKID", secretAccessKey: "secret", region: "auto" };
const signed: SignedRequest = signRequest({ ...creds, method: "PUT", url: "https://h/b/k", body: new Uint8Array(2), headers: { "if-match": '"e"' } });
const auth: string | undefined = signed.headers["authorization"];
signRequest({ ...creds, url: new URL("https://h/b/k"), body: "text", datetime: new Date(), headers: [["a", "b"]] });
signRequest({ ...creds, url: "https://h/b/k", body: new ReadableStream(), unsignedPayload: true });
const link: string = presignUrl({ ...creds, url: "https://h/b/k", expiresIn: 60, signedHeaders: { "content-type": "text/plain" } });

// @ts-expect-error a stream cannot be hashed: it needs unsignedPayload: true
signRequest({ ...creds, url: "https://h/b/k", body: new ReadableStream() });
// @ts-expect-error header values are strings
signRequest({ ...creds, url: "https://h/b/k", headers: { "x-n": 1 } });
// @ts-expect-error credentials are required
presignUrl({ url: "https://h/b/k", region: "auto" });

try {
  presignUrl({ ...creds, url: "https://h/b/k", expiresIn: 0 });
} catch (e) {
  const code: ErrorCode = (e as CelldEdgeError).code;
  console.log(code, auth, link);
}
