// Runs shared [name, fn] checks where no test runner exists (a Worker, a browser page) and carries the
// outcomes back to the harness as [{ name, ok, error }], which `asSubtests` turns into node:test subtests.
// Runtime-neutral: no fs, no node: imports.

export async function runChecks(pairs) {
  const results = [];
  for (const [name, fn] of pairs) {
    try {
      await fn();
      results.push({ name, ok: true });
    } catch (e) {
      results.push({ name, ok: false, error: String(e && e.stack ? e.stack : e) });
    }
  }
  return results;
}

/** One node:test subtest per result of `runChecks`; `where` names what ran them, for an empty run. */
export async function asSubtests(t, results, where) {
  if (results.length === 0) throw new Error(`${where} ran no checks`);
  for (const r of results) {
    await t.test(r.name, () => {
      if (!r.ok) throw new Error(r.error);
    });
  }
}

/** Fails the check with `message`. */
export function fail(message) {
  throw new Error(message);
}

/** Fails unless `actual` and `expected` are the same JSON. */
export function eq(actual, expected, what) {
  const [a, e] = [JSON.stringify(actual), JSON.stringify(expected)];
  if (a !== e) fail(`${what}: expected ${e}, got ${a}`);
}

/** A short random name part, so that checks never share keys. */
export const unique = () => Math.random().toString(36).slice(2, 10);

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
