// The store a bench runs against, as S3Ownership's connection options, from the environment that
// scripts/lib/servers.sh exports (CELLD_TEST_<KIND>_*; it says which server each kind is). `runner` is the
// bench's script that starts the servers itself, named when they are not set.
export function storeFromEnv(kind, runner) {
  const env = process.env;
  const store = {
    endpoint: env[`CELLD_TEST_${kind}_ENDPOINT`],
    bucket: env[`CELLD_TEST_${kind}_BUCKET`],
    region: "us-east-1",
    accessKeyId: env[`CELLD_TEST_${kind}_KEY_ID`],
    secretAccessKey: env[`CELLD_TEST_${kind}_SECRET`],
  };
  if (!store.endpoint) throw new Error(`set CELLD_TEST_${kind}_* (or run ${runner})`);
  return store;
}
