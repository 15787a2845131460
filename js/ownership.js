// Placeholder for the ownership surface (S3Ownership); replaced when src/bindings/ownership.rs lands.
export {};
