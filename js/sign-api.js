// The signing-only entry's public surface (`celld-edge/sign`, SPEC §4.5): the signers and AwsClient as
// the main entry exports them (api.js), over the signing-only wasm. Only re-exports. The sign-*.js entries
// are not loaded as they are: scripts/build bundles them into pkg/sign*.js (scripts/lib/bundle-sign.mjs),
// pointing sign.js and instance.js at the signing-only wasm's glue (docs/packaging.md).

export { AwsClient } from "./aws-client.js";
export { presignUrl, signRequest } from "./sign.js";
export { CelldEdgeError } from "./error.js";
