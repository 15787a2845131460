// A fetch that hides the store's `Date` header, as a browser does when the bucket's CORS rule does not
// expose it (bench/takeover.mjs: the clock-proof rule then judges leases by observation alone).
export async function withoutDate(request) {
  const res = await fetch(request);
  const headers = new Headers(res.headers);
  headers.delete("date");
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
}
