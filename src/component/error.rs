//! `crate::Error` as the world's `error` record: the JS API's code, the message, the key and the store's
//! status and S3 code, never a secret (the core's messages carry none).

use super::bindings::exports::celld::edge::types::{Error as WitError, ErrorCode};
use crate::error::Error;

pub(super) fn to_wit(e: Error) -> WitError {
    let code = match &e {
        Error::InvalidInput(_) => ErrorCode::InvalidInput,
        Error::Auth(_) => ErrorCode::Auth,
        Error::Request(_) => ErrorCode::Request,
        Error::Transport(_) => ErrorCode::Transport,
        Error::Ambiguous(_) => ErrorCode::Ambiguous,
        Error::Throttled(_) => ErrorCode::Throttled,
        Error::Cors(_) => ErrorCode::Cors,
        Error::CorruptRecord(_) => ErrorCode::CorruptRecord,
        Error::StoreViolation(_) => ErrorCode::StoreViolation,
        Error::NotLeased(_) => ErrorCode::NotLeased,
        Error::Fenced(_) => ErrorCode::Fenced,
        Error::UnsupportedBackend(_) => ErrorCode::UnsupportedBackend,
        Error::UninitializedFleet(_) => ErrorCode::UninitializedFleet,
        Error::Aborted(_) => ErrorCode::Aborted,
    };
    let fault = e.fault();
    WitError {
        code,
        message: e.message(),
        key: e.key().map(str::to_owned),
        status: fault.status,
        store_code: Some(fault.code).filter(|c| !c.is_empty()),
    }
}
