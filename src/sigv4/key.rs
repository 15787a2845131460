//! The derived signing key, `HMAC(HMAC(HMAC(HMAC("AWS4"+secret, date), region), service), "aws4_request")`,
//! and a small cache of it keyed by (secret, date, region, service). The cache stores the HMAC state
//! already keyed with the signing key, so a warm signature pays only the HMAC over the string to sign,
//! and the credential scope string, so it is not rebuilt per request.
//! Must never put the secret or a key into an error message.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::error::{Error, Result};

pub(crate) type HmacSha256 = Hmac<Sha256>;

/// Distinct (secret, date, region, service) combinations kept; a client rarely uses more than one.
const CAPACITY: usize = 4;

fn keyed(key: &[u8]) -> Result<HmacSha256> {
    // HMAC takes keys of any length, so this cannot fail; mapped rather than unwrapped all the same.
    HmacSha256::new_from_slice(key).map_err(|_| Error::invalid("HMAC key rejected"))
}

fn hmac(key: &[u8], msg: &str) -> Result<[u8; 32]> {
    let mut mac = keyed(key)?;
    mac.update(msg.as_bytes());
    Ok(mac.finalize().into_bytes().into())
}

/// One derived key, with what it was derived from.
pub(crate) struct Entry {
    secret: String,
    date: String,
    region: String,
    service: String,
    /// `date/region/service/aws4_request`.
    pub scope: String,
    /// HMAC-SHA256 keyed with the signing key; clone it, then feed the string to sign.
    pub mac: HmacSha256,
    /// `KeyCache::clock` at the last use: the smallest is evicted first.
    used: u64,
}

/// Entries stay where they were stored (each holds a keyed HMAC state of ~200 bytes, so moving them to
/// the front on every hit costs more than the lookup); recency is a use counter per entry instead.
#[derive(Default)]
pub(crate) struct KeyCache {
    entries: Vec<Entry>,
    /// Counts lookups; stamped into the entry used.
    clock: u64,
    /// How many keys were derived; the tests read it to prove reuse.
    pub derivations: u64,
}

impl KeyCache {
    /// The entry for these inputs, derived on a miss.
    pub(crate) fn get(
        &mut self,
        secret: &str,
        date: &str,
        region: &str,
        service: &str,
    ) -> Result<&Entry> {
        self.clock += 1;
        let hit = self.entries.iter().position(|e| {
            e.date == date && e.region == region && e.service == service && e.secret == secret
        });
        let i = match hit {
            Some(i) => i,
            None => {
                let entry = derive(secret, date, region, service)?;
                self.derivations += 1;
                if self.entries.len() < CAPACITY {
                    self.entries.push(entry);
                    self.entries.len() - 1
                } else {
                    // The least recently used one makes room (no index panics: `get_mut`).
                    let (mut oldest, mut oldest_used) = (0, u64::MAX);
                    for (i, e) in self.entries.iter().enumerate() {
                        if e.used < oldest_used {
                            (oldest, oldest_used) = (i, e.used);
                        }
                    }
                    if let Some(slot) = self.entries.get_mut(oldest) {
                        *slot = entry;
                    }
                    oldest
                }
            }
        };
        let entry = self
            .entries
            .get_mut(i)
            .ok_or_else(|| Error::invalid("signing key cache is empty"))?;
        entry.used = self.clock;
        Ok(entry)
    }
}

fn derive(secret: &str, date: &str, region: &str, service: &str) -> Result<Entry> {
    let mut seed = String::with_capacity(4 + secret.len());
    seed.push_str("AWS4");
    seed.push_str(secret);
    let k_date = hmac(seed.as_bytes(), date)?;
    let k_region = hmac(&k_date, region)?;
    let k_service = hmac(&k_region, service)?;
    let k_signing = hmac(&k_service, "aws4_request")?;
    let mut scope = String::with_capacity(date.len() + region.len() + service.len() + 15);
    for (i, part) in [date, region, service, "aws4_request"]
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            scope.push('/');
        }
        scope.push_str(part);
    }
    Ok(Entry {
        secret: secret.to_owned(),
        date: date.to_owned(),
        region: region.to_owned(),
        service: service.to_owned(),
        scope,
        mac: keyed(&k_signing)?,
        used: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

    fn sign(cache: &mut KeyCache, secret: &str, date: &str, region: &str, service: &str) -> String {
        let entry = cache.get(secret, date, region, service).unwrap();
        let mut mac = entry.mac.clone();
        mac.update(b"string to sign");
        let mut out = entry.scope.clone();
        out.push(' ');
        super::super::encode::push_hex(&mut out, &mac.finalize().into_bytes());
        out
    }

    #[test]
    fn derives_the_documented_key() {
        // AWS's documented derivation example (general reference, "Examples of how to derive a signing
        // key"): this secret, 20120215, us-east-1, iam.
        let mut cache = KeyCache::default();
        let entry = cache
            .get(
                "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                "20120215",
                "us-east-1",
                "iam",
            )
            .unwrap();
        assert_eq!(entry.scope, "20120215/us-east-1/iam/aws4_request");
        let expected =
            hex::decode("f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d")
                .unwrap();
        let mut want = keyed(&expected).unwrap();
        want.update(b"probe");
        let mut got = entry.mac.clone();
        got.update(b"probe");
        assert_eq!(got.finalize().into_bytes(), want.finalize().into_bytes());
    }

    #[test]
    fn reuses_a_key_and_derives_anew_when_any_input_changes() {
        let mut cache = KeyCache::default();
        let first = sign(&mut cache, SECRET, "20150830", "us-east-1", "s3");
        assert_eq!(cache.derivations, 1);
        assert_eq!(
            sign(&mut cache, SECRET, "20150830", "us-east-1", "s3"),
            first
        );
        assert_eq!(
            cache.derivations, 1,
            "same inputs must reuse the cached key"
        );

        let other_date = sign(&mut cache, SECRET, "20150831", "us-east-1", "s3");
        let other_region = sign(&mut cache, SECRET, "20150830", "eu-west-1", "s3");
        let other_service = sign(&mut cache, SECRET, "20150830", "us-east-1", "iam");
        let other_secret = sign(&mut cache, "another-secret", "20150830", "us-east-1", "s3");
        assert_eq!(cache.derivations, 5);
        let all = [
            &first,
            &other_date,
            &other_region,
            &other_service,
            &other_secret,
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a, b);
            }
        }
        // A fresh cache derives the same thing: the cached value is not stale or shared wrongly.
        let mut fresh = KeyCache::default();
        assert_eq!(
            sign(&mut fresh, SECRET, "20150830", "eu-west-1", "s3"),
            other_region
        );
    }

    #[test]
    fn keeps_a_bounded_number_of_keys_evicting_the_least_recently_used() {
        let mut cache = KeyCache::default();
        let day = |d: u32| format!("201508{d:02}");
        for d in 1..=6 {
            sign(&mut cache, SECRET, &day(d), "r", "s");
        }
        assert_eq!(cache.entries.len(), CAPACITY);
        assert_eq!(cache.derivations, 6);
        sign(&mut cache, SECRET, &day(3), "r", "s"); // still cached
        assert_eq!(cache.derivations, 6);
        sign(&mut cache, SECRET, &day(1), "r", "s"); // evicted long ago; replaces 4, the least recent
        assert_eq!(cache.derivations, 7);
        assert_eq!(cache.entries.len(), CAPACITY);
        for d in [3, 5, 6, 1] {
            sign(&mut cache, SECRET, &day(d), "r", "s");
        }
        assert_eq!(cache.derivations, 7, "3, 5, 6 and 1 are the ones kept");
        sign(&mut cache, SECRET, &day(4), "r", "s");
        assert_eq!(cache.derivations, 8);
        // 3 was the least recently used of the four, so 4 took its place.
        sign(&mut cache, SECRET, &day(3), "r", "s");
        assert_eq!(cache.derivations, 9);
    }
}
