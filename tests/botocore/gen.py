"""Generates SigV4 cases and signs them with botocore, printing one JSON object per line.

Deterministic (fixed seed, fixed date 20150830T123600Z). Run by tests/sigv4_botocore.rs, which signs each
case with celld-edge's signer and compares. Usage: python gen.py [COUNT]

Every case is built so that botocore and AWS's documented rules agree; where botocore departs from them
the input class is left out, and the reason is written next to the rule that leaves it out:
- S3 header auth: botocore signs the URL path verbatim (its serializer encoded the key once), so it is
  given quote(key, safe='/~'); our signer gets that, a lower-case-hex variant, or the raw key.
- Generic services: botocore signs quote(normalize(path), safe='/~') of the path as given; both signers
  get the same path string.
- Header auth query: botocore sorts the query verbatim, without encoding, so it gets the canonical
  encoding; our signer gets that, a lower-case-hex variant, or raw text.
- Presign query: botocore runs it through parse_qs (which decodes '+' as a space and keeps only the
  first of repeated keys) and re-encodes it, so presign cases have no repeated keys. Raw '+' never
  reaches botocore: its encoded form %2B is what it gets, which parse_qs keeps as a plus.
- An empty query piece (`a=1&&b`, a trailing `&`) carries no parameter: we drop it, botocore signs it as
  `=`. None is generated (a bare empty key is the only way to produce one).
- botocore replaces a Date header with its own and then drops X-Amz-Date: no Date headers here.
- botocore signs Content-Length; we pass it unsigned (runtimes rewrite it): never generated.
- botocore's S3 signer recomputes a caller's X-Amz-Content-SHA256: only generic cases give one.
- botocore's presigner drops Content-Type 'application/x-www-form-urlencoded; charset=utf-8': never
  generated.
- botocore folds Unicode whitespace in header values; we refuse non-ASCII header values outright.
- S3 keys with a `.` or `..` segment: botocore signs them as given, fetch resolves them before sending,
  so our signer refuses them; never generated. A raw `\` in a path neither (fetch sends it as `/`).
"""

import datetime
import hashlib
import json
import random
import sys
import types
from unittest import mock
from urllib.parse import quote

import botocore.auth as auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

DATE = datetime.datetime(2015, 8, 30, 12, 36, 0)

KEY_PIECES = [
    "a", "b", "Z", "0", "9", "photo", "key", "-", "_", ".", "~", " ", "  ", "+", "%", "%20", "%2F",
    "%41", "100%", "=", "&", "$", "@", ":", ",", ";", "!", "*", "'", "(", ")", "[", "]", "|", "^", "`",
    "{", "}", "\"", "<", ">", "\\", "é", "ñ", "ሴ", "日本", "😀", "/", "//", "./", "../", "/./", "/../",
    "?", "#", "\t", "\n", "\x7f",
]
QUERY_PIECES = [
    "a", "B", "x", "list-type", "prefix", "1", "2", "", " ", "+", "=", "&", "%", "/", "~", "-", "_", ".",
    "é", "ሴ", "😀", "#", "?", ":", "@", "$", ",", ";",
]
VALUE_PIECES = ["v", "Value", "0", "bytes=0-9", "\"etag\"", "*", ",", ";", "=", ":", "/", "a b", "x-y",
                "UPPER", "lower", "(", ")", "?", "@", "{", "}", "~", "!", "#", "%", "&", "'", "+"]
HEADER_NAMES = ["X-Amz-Meta-Foo", "x-amz-meta-bar", "If-Match", "if-none-match", "Content-Type",
                "Range", "x-amz-storage-class", "Cache-Control", "My-Header1", "X-Custom_Thing",
                "x-amz-meta-odd!#$%&'*+.^`|~", "Content-MD5", "ACCEPT"]
UNSIGNED_BY_BOTH = ["User-Agent", "Expect", "X-Amzn-Trace-Id", "Connection", "Transfer-Encoding", "TE",
                    "Upgrade", "Keep-Alive", "Proxy-Authorization"]
HOSTS = [
    ("https", "examplebucket.s3.amazonaws.com", ""),
    ("https", "s3.eu-west-3.amazonaws.com", "/bucket"),
    ("http", "127.0.0.1:9000", "/bucket"),
    ("https", "localhost:443", "/b"),
    ("http", "Example.COM:80", ""),
    ("https", "[::1]:8443", "/bkt"),
]
REGIONS = ["us-east-1", "eu-west-3", "auto", "ap-southeast-2"]
GENERIC_SERVICES = ["service", "execute-api", "sqs", "dynamodb"]
METHODS = ["GET", "PUT", "POST", "DELETE", "HEAD"]


def rand_text(rng, pieces, lo, hi):
    return "".join(rng.choice(pieces) for _ in range(rng.randint(lo, hi)))


def lower_hex(s):
    """%AB -> %ab: the same bytes, non-canonically written."""
    out, i = [], 0
    while i < len(s):
        if s[i] == "%" and i + 2 < len(s):
            out.append("%" + s[i + 1:i + 3].lower())
            i += 3
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def gen_key(rng):
    key = rand_text(rng, KEY_PIECES, 1, 8)
    return key.lstrip("/") or "k"


def raw_path_ok(s):
    # Raw text our URL parser reads as one path: no query/fragment delimiters, no control characters
    # (fetch would strip them), no '%' (raw text would be read as escapes), no backslash (fetch sends it as
    # '/'), and no edge whitespace (urlsplit strips it).
    return not any(c in s for c in "?#%\t\n\x7f\\") and s == s.strip()


def gen_query(rng, presign):
    pairs, seen = [], set()
    for _ in range(rng.choice([0, 0, 1, 2, 3, 5])):
        if pairs and rng.random() < 0.25 and not presign:
            key = rng.choice(pairs)[0]  # repeated key
        else:
            key = rand_text(rng, QUERY_PIECES, 1, 4)
        if key in seen and presign:
            continue
        if key.lower().startswith("x-amz-"):
            continue
        seen.add(key)
        bare = rng.random() < 0.1
        value = None if bare else rand_text(rng, QUERY_PIECES, 0, 5)
        if key == "" and value is None:
            continue  # an empty piece (`&&`, trailing `&`): see the module docstring
        pairs.append((key, value))
    return pairs


def encode_query(pairs):
    parts = []
    for k, v in pairs:
        ek = quote(k, safe="-_.~")
        parts.append(ek if v is None else ek + "=" + quote(v, safe="-_.~"))
    return "&".join(parts)


def raw_query(pairs):
    """The pairs as raw text, or None when that text would not mean the same pairs."""
    parts = []
    for k, v in pairs:
        if any(c in k for c in "&=%#") or (v is not None and any(c in v for c in "&%#")):
            return None
        parts.append(k if v is None else k + "=" + v)
    text = "&".join(parts)
    return text if text == text.strip() and "\t" not in text else None


def odd_spacing(rng, value):
    pad = lambda: rng.choice(["", " ", "  ", "\t", " \t "])
    inner = value.replace(" ", rng.choice([" ", "   ", "\t", " \t"]))
    return pad() + inner + pad()


def gen_headers(rng, service, presign):
    headers = []
    for _ in range(rng.randint(0, 5)):
        name = rng.choice(HEADER_NAMES)
        name = "".join(c.upper() if rng.random() < 0.3 else c for c in name)
        value = rand_text(rng, VALUE_PIECES, 0, 4)
        headers.append((name, odd_spacing(rng, value)))
        if rng.random() < 0.15:  # same name again, other case
            headers.append((name.swapcase(), rand_text(rng, VALUE_PIECES, 1, 3)))
    if rng.random() < 0.2:
        headers.append((rng.choice(UNSIGNED_BY_BOTH), "x  y"))
    if service != "s3" and not presign and rng.random() < 0.15:
        headers.append(("X-Amz-Content-SHA256", rng.choice(
            ["UNSIGNED-PAYLOAD", hashlib.sha256(b"other").hexdigest()])))
    if presign:
        ct = "application/x-www-form-urlencoded; charset=utf-8"
        headers = [(n, v) for n, v in headers if not (n.lower() == "content-type" and v == ct)]
    return headers


def credentials(rng):
    alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    ak = "AKIA" + "".join(rng.choice(alnum) for _ in range(16))
    sk = "".join(rng.choice(alnum + "abcdefghijklmnopqrstuvwxyz/+") for _ in range(40))
    token = None
    if rng.random() < 0.4:
        token = "".join(rng.choice(alnum + "abcdefghijklmnopqrstuvwxyz/+=") for _ in range(rng.randint(20, 300)))
    return ak, sk, token


def make_case(rng, n):
    s3 = rng.random() < 0.6
    presign = rng.random() < 0.35
    service = "s3" if s3 else rng.choice(GENERIC_SERVICES)
    scheme, host, prefix = rng.choice(HOSTS)
    key = gen_key(rng)
    while s3 and any(segment in (".", "..") for segment in key.split("/")):
        key = gen_key(rng)
    encoded_path = prefix + "/" + quote(key, safe="/~")
    if s3:
        botocore_path = encoded_path
        choices = [encoded_path, lower_hex(encoded_path)]
        raw = prefix + "/" + key
        if raw_path_ok(raw):
            choices.append(raw)
        our_path = rng.choice(choices)
    else:
        # Generic paths are signed as given (wire form); both signers get the same string.
        candidates = [encoded_path]
        raw = prefix + "/" + key
        if raw_path_ok(raw):
            candidates.append(raw)
        botocore_path = our_path = rng.choice(candidates)
    pairs = gen_query(rng, presign)
    botocore_query = encode_query(pairs)
    query_choices = [botocore_query, lower_hex(botocore_query)]
    raw_q = raw_query(pairs)
    if raw_q is not None:
        query_choices.append(raw_q)
    our_query = rng.choice(query_choices)
    base = f"{scheme}://{host}"
    botocore_url = base + botocore_path + ("?" + botocore_query if botocore_query else "")
    our_url = base + our_path + ("?" + our_query if our_query else "")

    method = rng.choice(METHODS)
    headers = gen_headers(rng, service, presign)
    body = b"" if presign or rng.random() < 0.3 else bytes(rng.randrange(256) for _ in range(rng.randint(1, 300)))
    unsigned = not presign and rng.random() < 0.2
    if unsigned:
        # botocore replaces a caller's X-Amz-Content-SHA256 when payload signing is off.
        headers = [(n, v) for n, v in headers if n.lower() != "x-amz-content-sha256"]
    region = rng.choice(REGIONS)
    ak, sk, token = credentials(rng)
    expires = rng.choice([1, 60, 3600, 86400, 604800, rng.randint(1, 604800)])

    request = AWSRequest(method=method, url=botocore_url, data=body)
    for name, value in headers:
        request.headers[name] = value
    creds = Credentials(ak, sk, token)
    if presign:
        cls = auth.S3SigV4QueryAuth if s3 else auth.SigV4QueryAuth
        signer = cls(creds, service, region, expires=expires)
    else:
        cls = auth.S3SigV4Auth if s3 else auth.SigV4Auth
        signer = cls(creds, service, region)
        if unsigned:
            request.context["payload_signing_enabled"] = False
            request.context["client_config"] = types.SimpleNamespace(s3={"payload_signing_enabled": False})
    recorded = {}
    original = signer.canonical_request

    def record(req):
        recorded["creq"] = original(req)
        return recorded["creq"]

    signer.canonical_request = record
    with mock.patch.object(auth, "get_current_datetime", return_value=DATE):
        signer.add_auth(request)

    return {
        "id": n,
        "mode": "presign" if presign else "sign",
        "method": method,
        "url": our_url,
        "headers": headers,
        "body_hex": body.hex(),
        "unsigned": unsigned,
        "region": region,
        "service": service,
        "access_key": ak,
        "secret": sk,
        "token": token,
        "expires": expires,
        "expected_canonical_request": recorded["creq"],
        "expected_authorization": request.headers.get("Authorization"),
        "expected_url": request.url,
    }


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
    rng = random.Random(20150830)
    for n in range(count):
        print(json.dumps(make_case(rng, n), ensure_ascii=False))


if __name__ == "__main__":
    main()
