//! A `wasmtime serve` component answering `GET /cells/<cell>` like the Workers quick start
//! (examples/quickstart/worker.js): the cell's owner when another live node holds it, else a claim by
//! this node, as JSON in the JS API's shapes. The store comes from the environment (`wasmtime serve -S cli
//! --env S3_ENDPOINT=... ...`): S3_ENDPOINT, S3_BUCKET, S3_REGION (default us-east-1), AWS_ACCESS_KEY_ID,
//! AWS_SECRET_ACCESS_KEY, and optionally CELLD_PREFIX and CELLD_ADDR (advertised in the lease).
//!
//! `wasmtime serve` makes a fresh instance for every request, so each request is a node of its own, with a
//! made-up id (as each Worker isolate is): the first request for a cell claims it, the next ones answer
//! that owner while its lease lives (10 s: nothing renews it once its request is answered), and the
//! first request after that takes the cell over. A node id given to every instance would be refused
//! from the second request on (two live instances may never share one).

use celld_edge::component::WasiEnv;
use celld_edge::ownership::{ClaimOutcome, Config, S3Ownership};
use wstd::http::{Body, Error, Request, Response, StatusCode};

#[wstd::http_server]
async fn main(request: Request<Body>) -> Result<Response<Body>, Error> {
    let Some(cell) = request.uri().path().strip_prefix("/cells/").filter(|c| !c.is_empty() && !c.contains('/')) else {
        return reply(StatusCode::NOT_FOUND, "\"not found: ask for /cells/<cell>\"".into());
    };
    let cell = match percent_decoded(cell) {
        Some(cell) => cell,
        None => return reply(StatusCode::BAD_REQUEST, error_json("invalid-input", "the cell is not percent-encoded UTF-8")),
    };
    match answer(&cell).await {
        Ok(json) => reply(StatusCode::OK, json),
        Err(e) => {
            let status = if e.code() == "invalid-input" { StatusCode::BAD_REQUEST } else { StatusCode::SERVICE_UNAVAILABLE };
            reply(status, error_json(e.code(), &e.message()))
        }
    }
}

/// The owner (another live node holds the cell: route there), or this node's claim.
async fn answer(cell: &str) -> celld_edge::Result<String> {
    let own = S3Ownership::new(config()?, WasiEnv)?;
    own.acquire_lease().await?;
    if let Some(owner) = own.owner(cell).await? {
        if owner.live && owner.node != own.config().node {
            return Ok(json(&owner));
        }
    }
    let claim: ClaimOutcome = own.claim(cell).await?;
    Ok(json(&claim))
}

fn config() -> celld_edge::Result<Config> {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let mut config = Config::new(&var("S3_ENDPOINT"), &var("S3_BUCKET"), "", &var("AWS_ACCESS_KEY_ID"), &var("AWS_SECRET_ACCESS_KEY"));
    config.made_up_node = true;
    if let Ok(region) = std::env::var("S3_REGION") {
        config.region = region;
    }
    config.prefix = var("CELLD_PREFIX");
    config.addr = var("CELLD_ADDR");
    Ok(config)
}

fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| error_json("internal", &e.to_string()))
}

fn error_json(code: &str, message: &str) -> String {
    serde_json::json!({ "error": code, "message": message }).to_string()
}

fn reply(status: StatusCode, json: String) -> Result<Response<Body>, Error> {
    Ok(Response::builder().status(status).header("content-type", "application/json").body(Body::from(json))?)
}

/// `%XX` sequences decoded; `None` when they do not make UTF-8.
fn percent_decoded(s: &str) -> Option<String> {
    let (bytes, mut out, mut i) = (s.as_bytes(), Vec::with_capacity(s.len()), 0);
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
