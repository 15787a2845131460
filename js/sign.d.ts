// Type declarations of the signing-only entry `celld-edge/sign`: the signing part of index.d.ts, the same
// declarations (the entry exports the same classes and functions, over a wasm of its own).
export {
  AwsClient, CelldEdgeError, presignUrl, signRequest,
  type AwsClientOptions, type AwsRequestInit, type AwsRequestOptions, type Credentials, type ErrorCode, type HeadersInput,
  type PresignUrlOptions, type SignedRequest, type SignRequestBase, type SignRequestOptions, type UrlInput,
} from "./index.js";
