// Placeholder for the ownership declarations (S3Ownership and its option/result types); replaced with
// js/ownership.js. index.d.ts re-exports everything declared here.
export {};
