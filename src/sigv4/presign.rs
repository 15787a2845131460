//! Presigned URLs (query authentication): the `X-Amz-*` parameters join the query, the payload is
//! `UNSIGNED-PAYLOAD` for S3 (the empty body's hash elsewhere, as botocore does), and the signature is
//! appended as `X-Amz-Signature`. Must never accept a URL that already carries auth parameters: two
//! copies would make the server pick one we did not sign.

use super::canonical::{self, Parts, EMPTY_SHA256, UNSIGNED_PAYLOAD};
use super::query::{self, Param};
use super::{
    check_common, given_payload_hash, paths, start_url, url, AmzDate, Credentials, Signer,
};
use crate::error::{Error, Result};

/// Longest validity S3 accepts: seven days.
pub const MAX_EXPIRES_SECS: u64 = 604_800;

const AUTH_PARAMS: [&str; 7] = [
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Date",
    "X-Amz-Expires",
    "X-Amz-SignedHeaders",
    "X-Amz-Security-Token",
    "X-Amz-Signature",
];

pub struct PresignInput<'a> {
    pub method: &'a str,
    /// Absolute http(s) URL, same rules as [`super::SignInput::url`].
    pub url: &'a str,
    pub region: &'a str,
    pub service: &'a str,
    pub credentials: &'a Credentials<'a>,
    pub datetime: &'a AmzDate,
    /// Seconds the URL stays valid, 1..=604800.
    pub expires_in: u64,
    /// Headers the eventual request must carry with these exact values (besides `host`, always signed).
    /// Same rules as [`super::SignInput::headers`]; hop-by-hop ones are not signed and so not required.
    pub signed_headers: &'a [(String, String)],
}

impl Signer {
    /// Signs with query parameters and returns the URL to use.
    pub fn presign(&mut self, input: &PresignInput<'_>) -> Result<String> {
        self.request.clear();
        self.string_to_sign.clear();
        let method = check_common(input.method, input.region, input.service, input.credentials)?;
        if !(1..=MAX_EXPIRES_SECS).contains(&input.expires_in) {
            let mut message = String::from("expires_in ");
            super::push_decimal(&mut message, input.expires_in);
            message.push_str(" is outside 1..=");
            super::push_decimal(&mut message, MAX_EXPIRES_SECS);
            message.push_str(" seconds");
            return Err(Error::invalid(message));
        }
        let url = url::parse(input.url)?;
        let s3 = input.service == "s3";
        let mut params = query::parse(url.query);
        if let Some(p) = params
            .iter()
            .find(|p| AUTH_PARAMS.iter().any(|a| a.eq_ignore_ascii_case(&p.key)))
        {
            return Err(Error::invalid_value("url already has the auth parameter ", &p.key, ""));
        }

        let headers = &mut self.headers;
        headers.fill(input.signed_headers)?;
        let payload_hash = match given_payload_hash(headers)? {
            Some(given) => given.to_owned(),
            None if s3 => UNSIGNED_PAYLOAD.to_owned(),
            None => EMPTY_SHA256.to_owned(),
        };
        headers.finish();
        let mut names = String::with_capacity(headers.signed.len() * 16);
        headers.push_names(&mut names, &url.host);

        let creds = input.credentials;
        let datetime = input.datetime;
        let entry = self.keys.get(
            creds.secret_access_key,
            datetime.date(),
            input.region,
            input.service,
        )?;
        let mut credential =
            String::with_capacity(creds.access_key_id.len() + 1 + entry.scope.len());
        credential.push_str(creds.access_key_id);
        credential.push('/');
        credential.push_str(&entry.scope);
        params.push(Param::raw("X-Amz-Algorithm", canonical::ALGORITHM));
        params.push(Param::raw("X-Amz-Credential", &credential));
        params.push(Param::raw("X-Amz-Date", datetime.as_str()));
        let mut expires = String::with_capacity(6);
        super::push_decimal(&mut expires, input.expires_in);
        params.push(Param::raw("X-Amz-Expires", &expires));
        params.push(Param::raw("X-Amz-SignedHeaders", &names));
        if let Some(token) = creds.session_token {
            params.push(Param::raw("X-Amz-Security-Token", token));
        }

        let mut canonical_path = String::with_capacity(url.path.len() + 16);
        let wire_path = paths(&mut canonical_path, url.path, s3)?;
        canonical::write_request(
            &mut self.request,
            &Parts {
                method,
                path: &canonical_path,
                params: &params,
                headers,
                host: &url.host,
                signed_names: &names,
                payload_hash: &payload_hash,
            },
        );
        canonical::write_string_to_sign(
            &mut self.string_to_sign,
            datetime.as_str(),
            &entry.scope,
            &self.request,
        );

        let wire_path = wire_path.unwrap_or(&canonical_path);
        let mut out = start_url(&url, wire_path, url.query.len() * 3 + 400);
        out.push('?');
        // The caller's parameters first, then ours, as AWS's examples show them.
        query::push_wire(&mut out, &params);
        out.push_str("&X-Amz-Signature=");
        canonical::push_signature(&mut out, &entry.mac, &self.string_to_sign);
        Ok(out)
    }
}
