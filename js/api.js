// The package barrel: the public JS surface of celld-edge, shared by every runtime entry (node.js,
// inline.js, workerd.js). It only re-exports; each name lives in its own file.

export * from "./ownership.js";
export { S3Inspector } from "./inspector.js";
export { AwsClient } from "./aws-client.js";
export { presignUrl, signRequest } from "./sign.js";
export { CelldEdgeError } from "./error.js";
