//! The `signing` interface: `sign-request` and `presign-url` over the crate's signer (`crate::sigv4`), as
//! the JS `signRequest` / `presignUrl` are. One `Signer` per instance keeps derived keys between calls.
//! A missing `datetime` is the wall clock's now (wasi:clocks).

use std::cell::RefCell;

use super::bindings::exports::celld::edge::signing::{Credentials as WitCredentials, Error, Guest, PresignInput as WitPresign, SignInput as WitSign, Signed};
use super::bindings::Component;
use super::error::to_wit;
use super::WasiEnv;
use crate::env::Env;
use crate::sigv4::{AmzDate, Credentials, Payload, PresignInput, SignInput, Signer};

thread_local! {
    static SIGNER: RefCell<Signer> = RefCell::new(Signer::new());
}

fn datetime(given: Option<&str>) -> crate::Result<AmzDate> {
    match given {
        Some(s) => AmzDate::parse(s),
        None => Ok(AmzDate::from_unix_ms(WasiEnv.wall_ms())),
    }
}

fn credentials(c: &WitCredentials) -> Credentials<'_> {
    Credentials { access_key_id: &c.access_key_id, secret_access_key: &c.secret_access_key, session_token: c.session_token.as_deref() }
}

impl Guest for Component {
    fn sign_request(input: WitSign) -> Result<Signed, Error> {
        let datetime = datetime(input.datetime.as_deref()).map_err(to_wit)?;
        let payload = if input.unsigned_payload { Payload::Unsigned } else { Payload::Bytes(&input.body) };
        let signing = SignInput {
            method: &input.method,
            url: &input.url,
            headers: &input.headers,
            payload,
            region: &input.region,
            service: input.service.as_deref().unwrap_or("s3"),
            credentials: &credentials(&input.credentials),
            datetime: &datetime,
        };
        let signed = SIGNER.with_borrow_mut(|s| s.sign(&signing)).map_err(to_wit)?;
        Ok(Signed { method: input.method.clone(), url: signed.url, headers: signed.headers })
    }

    fn presign_url(input: WitPresign) -> Result<String, Error> {
        let datetime = datetime(input.datetime.as_deref()).map_err(to_wit)?;
        let presigning = PresignInput {
            method: &input.method,
            url: &input.url,
            region: &input.region,
            service: input.service.as_deref().unwrap_or("s3"),
            credentials: &credentials(&input.credentials),
            datetime: &datetime,
            expires_in: input.expires_in,
            signed_headers: &input.signed_headers,
        };
        SIGNER.with_borrow_mut(|s| s.presign(&presigning)).map_err(to_wit)
    }
}
