//! The signer's public contract beyond known answers: every invalid input is `invalid-input` with a
//! message naming it, the returned URL and headers are what must be sent, the key cache never leaks
//! one credential's key into another's signature, and no input whatsoever makes it panic.
// Native only: `wasm-pack test` compiles every test target for wasm32 (and runs only the wasm ones).
#![cfg(not(target_arch = "wasm32"))]

use celld_edge::sigv4::{AmzDate, Credentials, Payload, PresignInput, SignInput, Signed, Signer};
use celld_edge::Error;

const CREDS: Credentials<'static> = Credentials {
    access_key_id: "AKIDEXAMPLE",
    secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    session_token: None,
};

fn date() -> AmzDate {
    AmzDate::parse("20150830T123600Z").unwrap()
}

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

/// A valid S3 PUT; tests change one field at a time.
struct Req<'a> {
    method: &'a str,
    url: &'a str,
    headers: Vec<(String, String)>,
    payload: Payload<'a>,
    region: &'a str,
    service: &'a str,
    creds: Credentials<'a>,
}

impl<'a> Req<'a> {
    fn new() -> Self {
        Req {
            method: "PUT",
            url: "https://bucket.s3.us-east-1.amazonaws.com/cells/a.json",
            headers: owned(&[("If-None-Match", "*"), ("Content-Type", "application/json")]),
            payload: Payload::Bytes(b"{}"),
            region: "us-east-1",
            service: "s3",
            creds: Credentials { ..CREDS },
        }
    }

    fn sign(&self, signer: &mut Signer) -> Result<Signed, Error> {
        signer.sign(&SignInput {
            method: self.method,
            url: self.url,
            headers: &self.headers,
            payload: self.payload,
            region: self.region,
            service: self.service,
            credentials: &self.creds,
            datetime: &date(),
        })
    }
}

fn presign(
    signer: &mut Signer,
    url: &str,
    expires_in: u64,
    headers: &[(String, String)],
) -> Result<String, Error> {
    signer.presign(&PresignInput {
        method: "GET",
        url,
        region: "us-east-1",
        service: "s3",
        credentials: &CREDS,
        datetime: &date(),
        expires_in,
        signed_headers: headers,
    })
}

fn header<'a>(signed: &'a Signed, name: &str) -> Option<&'a str> {
    signed
        .headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

fn assert_invalid(result: Result<impl std::fmt::Debug, Error>, mentions: &str) {
    match result {
        Err(Error::InvalidInput(msg)) => {
            assert!(
                msg.to_lowercase().contains(&mentions.to_lowercase()),
                "{msg:?} should mention {mentions:?}"
            )
        }
        other => panic!("expected invalid-input mentioning {mentions:?}, got {other:?}"),
    }
}

#[test]
fn each_invalid_input_is_refused_with_a_message_naming_it() {
    let mut s = Signer::new();
    let check = |s: &mut Signer, edit: &dyn Fn(&mut Req), mentions: &str| {
        let mut r = Req::new();
        edit(&mut r);
        assert_invalid(r.sign(s).map(|_| ()), mentions);
    };
    assert!(Req::new().sign(&mut s).is_ok());
    for url in [
        "",
        "bucket/key",
        "ftp://h/k",
        "https:///k",
        "https://u:p@h/k",
        "https://h:99999/k",
        "https://h/k\r\n",
    ] {
        check(&mut s, &|r| r.url = url, "url");
    }
    check(&mut s, &|r| r.method = "", "method");
    check(&mut s, &|r| r.method = "GE T", "method");
    check(&mut s, &|r| r.region = "", "region");
    check(&mut s, &|r| r.region = "us-east-1/x", "region");
    check(&mut s, &|r| r.service = "", "service");
    check(&mut s, &|r| r.creds.access_key_id = "", "access key");
    check(&mut s, &|r| r.creds.access_key_id = "AK/ID", "access key");
    check(&mut s, &|r| r.creds.secret_access_key = "", "secret");
    check(
        &mut s,
        &|r| r.creds.session_token = Some(""),
        "session token",
    );
    check(
        &mut s,
        &|r| r.creds.session_token = Some("a\nb"),
        "session token",
    );
    check(
        &mut s,
        &|r| r.headers = owned(&[("bad name", "v")]),
        "header name",
    );
    check(
        &mut s,
        &|r| r.headers = owned(&[("x-amz-meta-a", "v\r\nx-evil: 1")]),
        "x-amz-meta-a",
    );
    for reserved in [
        "Host",
        "authorization",
        "X-Amz-Date",
        "x-amz-security-token",
    ] {
        check(&mut s, &|r| r.headers = owned(&[(reserved, "v")]), reserved);
    }
    check(&mut s, &|r| r.payload = Payload::Hash(""), "payload hash");
    check(
        &mut s,
        &|r| r.payload = Payload::Hash("two words"),
        "payload hash",
    );
    check(
        &mut s,
        &|r| r.headers = owned(&[("x-amz-content-sha256", "  ")]),
        "payload hash",
    );
    let twice = [
        ("x-amz-content-sha256", "UNSIGNED-PAYLOAD"),
        ("X-Amz-Content-Sha256", "x"),
    ];
    check(&mut s, &|r| r.headers = owned(&twice), "more than once");
    assert_invalid(AmzDate::parse("2015-08-30T12:36:00Z"), "datetime");
    assert_invalid(AmzDate::parse("20150230T123600Z"), "day");
}

#[test]
fn presign_refuses_bad_expiry_and_existing_auth_parameters() {
    let mut s = Signer::new();
    let url = "https://b.s3.amazonaws.com/k";
    assert_invalid(presign(&mut s, url, 0, &[]), "expires_in");
    assert_invalid(presign(&mut s, url, 604_801, &[]), "expires_in");
    assert!(presign(&mut s, url, 1, &[])
        .unwrap()
        .contains("X-Amz-Expires=1&"));
    assert!(presign(&mut s, url, 604_800, &[])
        .unwrap()
        .contains("X-Amz-Expires=604800&"));
    assert_invalid(
        presign(
            &mut s,
            "https://b.s3.amazonaws.com/k?X-Amz-Signature=00",
            60,
            &[],
        ),
        "X-Amz-Signature",
    );
    assert_invalid(
        presign(
            &mut s,
            "https://b.s3.amazonaws.com/k?x-amz-credential=a",
            60,
            &[],
        ),
        "auth parameter",
    );
    assert_invalid(presign(&mut s, "mailto:x@y", 60, &[]), "url");
    assert_invalid(presign(&mut s, url, 60, &owned(&[("Host", "b")])), "Host");
}

#[test]
fn presign_signs_the_headers_given_and_the_session_token() {
    let mut s = Signer::new();
    let url = presign(
        &mut s,
        "https://b.s3.amazonaws.com/a b?list-type=2",
        60,
        &owned(&[("If-None-Match", "*")]),
    )
    .unwrap();
    assert!(url.starts_with(
        "https://b.s3.amazonaws.com/a%20b?list-type=2&X-Amz-Algorithm=AWS4-HMAC-SHA256&"
    ));
    assert!(
        url.contains("&X-Amz-SignedHeaders=host%3Bif-none-match&"),
        "{url}"
    );
    assert!(s.canonical_request().contains("\nif-none-match:*\n"));
    assert!(s.canonical_request().ends_with("\nUNSIGNED-PAYLOAD"));
    let with_token = Signer::new()
        .presign(&PresignInput {
            method: "GET",
            url: "https://b.s3.amazonaws.com/k",
            region: "us-east-1",
            service: "s3",
            credentials: &Credentials {
                session_token: Some("tok/en+="),
                ..CREDS
            },
            datetime: &date(),
            expires_in: 60,
            signed_headers: &[],
        })
        .unwrap();
    assert!(
        with_token.contains("&X-Amz-Security-Token=tok%2Fen%2B%3D&X-Amz-Signature="),
        "{with_token}"
    );
}

#[test]
fn returned_url_and_headers_are_what_was_signed() {
    let mut s = Signer::new();
    let mut r = Req::new();
    r.url = "https://Bucket.S3.amazonaws.com:443/dir//a b+c/~x?b=2&uploads&a=%e1%88%b4";
    r.headers = owned(&[
        ("X-Amz-Meta-Note", "  two   words "),
        ("x-amz-meta-note", "again"),
        ("User-Agent", "celld-edge  test"),
        ("Content-Length", "2"),
    ]);
    r.creds.session_token = Some("token");
    let signed = r.sign(&mut s).unwrap();
    assert_eq!(
        signed.url,
        "https://bucket.s3.amazonaws.com/dir//a%20b%2Bc/~x?b=2&uploads&a=%E1%88%B4"
    );
    let names: Vec<&str> = signed.headers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "x-amz-content-sha256",
            "x-amz-date",
            "x-amz-meta-note",
            "x-amz-security-token",
            "user-agent",
            "content-length",
            "authorization"
        ]
    );
    assert_eq!(header(&signed, "x-amz-meta-note"), Some("two words,again"));
    assert_eq!(header(&signed, "user-agent"), Some("celld-edge  test"));
    assert_eq!(header(&signed, "x-amz-security-token"), Some("token"));
    let auth = header(&signed, "authorization").unwrap();
    assert!(
        auth.contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-meta-note;x-amz-security-token,"),
        "{auth}"
    );
    let creq = s.canonical_request();
    assert!(creq.starts_with(
        "PUT\n/dir//a%20b%2Bc/~x\na=%E1%88%B4&b=2&uploads=\nhost:bucket.s3.amazonaws.com\n"
    ));

    // Signing what was returned changes nothing: the encoding is idempotent end to end.
    let mut again = Req::new();
    again.url = &signed.url;
    again.headers = owned(&[("x-amz-meta-note", "two words,again")]);
    again.creds.session_token = Some("token");
    let resigned = again.sign(&mut s).unwrap();
    assert_eq!(resigned.url, signed.url);
    assert_eq!(header(&resigned, "authorization"), Some(auth));
}

#[test]
fn s3_always_sends_the_payload_hash_generic_services_only_when_it_is_not_the_body_hash() {
    let mut s = Signer::new();
    let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    let mut r = Req::new();
    r.payload = Payload::Bytes(b"");
    assert_eq!(
        header(&r.sign(&mut s).unwrap(), "x-amz-content-sha256"),
        Some(empty)
    );
    r.payload = Payload::Unsigned;
    assert_eq!(
        header(&r.sign(&mut s).unwrap(), "x-amz-content-sha256"),
        Some("UNSIGNED-PAYLOAD")
    );
    assert!(s.canonical_request().ends_with("\nUNSIGNED-PAYLOAD"));
    r.payload = Payload::Hash(empty);
    let by_hash = r.sign(&mut s).unwrap();
    r.payload = Payload::Bytes(b"");
    let by_bytes = r.sign(&mut s).unwrap();
    assert_eq!(by_hash.headers, by_bytes.headers);

    r.service = "execute-api";
    let generic = r.sign(&mut s).unwrap();
    assert_eq!(header(&generic, "x-amz-content-sha256"), None);
    assert!(s.canonical_request().ends_with(empty));
    r.payload = Payload::Unsigned;
    assert_eq!(
        header(&r.sign(&mut s).unwrap(), "x-amz-content-sha256"),
        Some("UNSIGNED-PAYLOAD")
    );
    r.payload = Payload::Bytes(b"body");
    r.headers = owned(&[("X-Amz-Content-SHA256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER")]);
    let streaming = r.sign(&mut s).unwrap();
    assert_eq!(
        header(&streaming, "x-amz-content-sha256"),
        Some("STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    );
    assert!(s
        .canonical_request()
        .ends_with("\nSTREAMING-UNSIGNED-PAYLOAD-TRAILER"));
}

#[test]
fn a_reused_signer_signs_exactly_like_a_fresh_one_for_every_credential() {
    // The cache must key on everything the derived key depends on: interleave secrets, dates, regions
    // and services through one signer and compare each with a fresh signer's answer.
    let mut shared = Signer::new();
    let dates = ["20150830T123600Z", "20150831T000000Z"];
    for round in 0..3 {
        for secret in ["secret-one", "secret-two"] {
            for d in dates {
                for region in ["us-east-1", "auto"] {
                    for service in ["s3", "sqs"] {
                        let datetime = AmzDate::parse(d).unwrap();
                        let creds = Credentials {
                            secret_access_key: secret,
                            ..CREDS
                        };
                        let input = SignInput {
                            method: "GET",
                            url: "https://h.example/k",
                            headers: &[],
                            payload: Payload::Bytes(b""),
                            region,
                            service,
                            credentials: &creds,
                            datetime: &datetime,
                        };
                        let warm = shared.sign(&input).unwrap();
                        let cold = Signer::new().sign(&input).unwrap();
                        assert_eq!(
                            warm.headers, cold.headers,
                            "round {round} {secret} {d} {region} {service}"
                        );
                    }
                }
            }
        }
    }
}

/// xorshift64*: deterministic, dependency-free noise for the no-panic sweep.
struct Noise(u64);

/// Awkward but printable-ASCII pieces, and the non-ASCII and control ones mixed in one time in eight.
const ASCII: &[&str] = &[
    "a",
    "Z",
    "0",
    "/",
    "//",
    ".",
    "..",
    "%",
    "%2",
    "%2F",
    "%zz",
    "%e1%88",
    "?",
    "#",
    "&",
    "=",
    "+",
    " ",
    ":",
    "@",
    "[",
    "]",
    "::1",
    "https://",
    "s3",
    "X-Amz-Signature",
    "-",
    "_",
    "~",
    "\\",
];
const WILD: &[&str] = &["\t", "\r", "\n", "\0", "\u{7f}", "\u{a0}", "é", "ሴ", "😀"];

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }

    fn one_in(&mut self, n: u64) -> bool {
        self.next() % n == 0
    }

    /// Up to `max` pieces; printable ASCII unless this field drew the wild card.
    fn text(&mut self, max: u64) -> String {
        let wild = self.one_in(8);
        let n = self.next() % (max + 1);
        (0..n)
            .map(|_| {
                if wild && self.one_in(2) {
                    self.pick(WILD)
                } else {
                    self.pick(ASCII)
                }
            })
            .collect()
    }

    /// A valid choice seven times in eight, otherwise one of the bad ones.
    fn mostly<'a>(&mut self, good: &'a str, bad: &[&'a str]) -> &'a str {
        if self.one_in(8) {
            self.pick(bad)
        } else {
            good
        }
    }
}

#[test]
fn no_input_makes_it_panic() {
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    let mut s = Signer::new();
    let (mut ok, mut refused) = (0, 0);
    for i in 0..20_000u32 {
        let url = match i % 4 {
            0 => noise.text(12),
            1 => format!("https://h.example/{}?{}", noise.text(6), noise.text(6)),
            2 => format!("https://{}", noise.text(10)),
            _ => format!("http://h.example{}", noise.text(10)),
        };
        let headers: Vec<(String, String)> = (0..noise.next() % 4)
            .map(|_| {
                let name = if noise.one_in(4) {
                    noise.text(3)
                } else {
                    noise.pick(&["x-a", "Range"]).to_owned()
                };
                (name, noise.text(4))
            })
            .collect();
        let method = noise.mostly("GET", &["", "G\u{e9}T", "GE T"]);
        let region = noise.mostly("us-east-1", &["", "a/b", "\u{e9}"]);
        let service = noise.pick(&["s3", "service"]);
        let service = noise.mostly(service, &["", "s 3"]);
        let token = noise.text(2);
        let creds = Credentials {
            access_key_id: noise.mostly("AKID", &["", "A/K", "ሴ"]),
            secret_access_key: noise.mostly("secret", &["", "ሴ"]),
            session_token: if noise.one_in(2) { None } else { Some(&token) },
        };
        let hash = noise.text(2);
        let payload = match noise.next() % 3 {
            0 => Payload::Bytes(b"x"),
            1 => Payload::Unsigned,
            _ => Payload::Hash(&hash),
        };
        let date_text = noise.text(4);
        let datetime =
            AmzDate::parse(&date_text).unwrap_or_else(|_| AmzDate::from_unix_ms(noise.next()));
        let signed = s.sign(&SignInput {
            method,
            url: &url,
            headers: &headers,
            payload,
            region,
            service,
            credentials: &creds,
            datetime: &datetime,
        });
        let presigned = s.presign(&PresignInput {
            method,
            url: &url,
            region,
            service,
            credentials: &creds,
            datetime: &datetime,
            expires_in: noise.next() % 700_000,
            signed_headers: &headers,
        });
        for outcome in [signed.map(|_| ()), presigned.map(|_| ())] {
            match outcome {
                Ok(()) => ok += 1,
                Err(e) => {
                    assert_eq!(e.code(), "invalid-input", "{e}");
                    refused += 1;
                }
            }
        }
    }
    // The sweep must reach the signing code, not only the validators.
    assert!(ok > 2_000 && refused > 2_000, "ok {ok}, refused {refused}");
}

#[test]
fn signs_what_fetch_sends_or_refuses() {
    // fetch upper-cases the six standard methods however they are written, and sends others as written.
    let mut s = Signer::new();
    let mut r = Req::new();
    let upper = r.sign(&mut s).unwrap();
    r.method = "put";
    assert_eq!(r.sign(&mut s).unwrap().headers, upper.headers, "put signs as PUT");
    r.method = "patch";
    r.sign(&mut s).unwrap();
    assert!(s.canonical_request().starts_with("patch\n"), "{}", s.canonical_request());

    // WHATWG URL parsing rewrites IP hosts: the Host signed is the one fetch sends.
    r.method = "PUT";
    r.url = "http://127.1:9000/b/k";
    assert_eq!(r.sign(&mut s).unwrap().url, "http://127.0.0.1:9000/b/k");
    assert!(s.canonical_request().contains("\nhost:127.0.0.1:9000\n"), "{}", s.canonical_request());
    r.url = "http://[::ffff:127.0.0.1]/b/k";
    assert_eq!(r.sign(&mut s).unwrap().url, "http://[::ffff:7f00:1]/b/k");

    // fetch resolves dot segments (also %2E-written) before sending: an S3 key with one cannot be signed.
    for url in ["http://h/b/x/%2E%2E/k", "http://h/b/%2e/k", "http://h/b/../k", "http://h/b/k/.", "http://h/b/a\\b"] {
        r.url = url;
        assert_eq!(r.sign(&mut s).err().map(|e| e.code()), Some("invalid-input"), "{url}");
        assert_eq!(presign(&mut s, url, 60, &[]).err().map(|e| e.code()), Some("invalid-input"), "{url}");
    }
    r.url = "http://h/b/%2E%2E.k/..k/.../k";
    r.sign(&mut s).unwrap();
}
