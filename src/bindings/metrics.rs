//! The result of `own.metrics()` (bindings/ownership.rs): this instance's counters
//! (`crate::metrics::Metrics`, folded from every event the core emits, in `WebObserver`, bindings/events.rs) as a plain JS
//! object, the shape js/ownership.d.ts declares (`Metrics`). Counts nothing itself.

use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;

use crate::metrics::{Latency, Metrics, LOST_NAMES, SETTLED_NAMES};

fn set(o: &Object, name: &str, v: &JsValue) {
    // Data properties on a fresh, extensible object: this cannot fail.
    let _ = Reflect::set(o, &JsValue::from_str(name), v);
}

fn num(v: u64) -> JsValue {
    JsValue::from_f64(v as f64)
}

fn latency(l: &Latency) -> JsValue {
    let o = Object::new();
    set(&o, "count", &num(l.count));
    set(&o, "sumMs", &JsValue::from_f64(l.sum_ms));
    set(&o, "maxMs", &JsValue::from_f64(l.max_ms));
    set(&o, "lastMs", &JsValue::from_f64(l.last_ms));
    o.into()
}

/// `{ name: count }` for parallel name and count arrays.
fn counts(names: &[&str], values: &[u64]) -> JsValue {
    let o = Object::new();
    for (n, v) in names.iter().zip(values) {
        set(&o, n, &num(*v));
    }
    o.into()
}

/// `m` as a fresh plain object.
pub(super) fn metrics_out(m: &Metrics) -> JsValue {
    let requests = Object::new();
    for ((op, record), outcome, n) in &m.requests {
        let kind = &[op, "-", record].concat();
        let by_outcome = Reflect::get(&requests, &JsValue::from_str(kind)).ok().filter(JsValue::is_object).unwrap_or_else(|| {
            let o: JsValue = Object::new().into();
            set(&requests, kind, &o);
            o
        });
        set(by_outcome.unchecked_ref(), outcome, &num(*n));
    }
    let request_ms = Object::new();
    for ((op, record), l) in &m.request_ms {
        set(&request_ms, &[op, "-", record].concat(), &latency(l));
    }
    let o = Object::new();
    set(&o, "requests", &requests);
    set(&o, "requestMs", &request_ms);
    set(&o, "claims", &counts(&["applied", "takeovers", "rejected"], &[m.claims_applied, m.takeovers, m.claims_rejected]));
    set(&o, "fences", &num(m.fences));
    set(&o, "authorityLost", &counts(&LOST_NAMES, &m.authority_lost));
    let leases = Object::new();
    set(&leases, "acquired", &num(m.leases_acquired));
    set(&leases, "acquireMs", &latency(&m.acquire_ms));
    set(&leases, "renewMs", &latency(&m.renew_ms));
    set(&leases, "retired", &num(m.leases_retired));
    set(&o, "leases", &leases);
    set(&o, "ambiguous", &counts(&SETTLED_NAMES, &m.ambiguous));
    set(&o, "readRetries", &num(m.read_retries));
    set(&o, "closes", &num(m.closes));
    set(&o, "credentials", &counts(&["refreshed", "failed"], &[m.credentials_refreshed, m.credentials_failed]));
    o.into()
}
