//! Operations of one instance that really overlap, natively: `Yielding` is `MemEnv` whose every request
//! waits one poll before it is sent, and `run_all` polls futures round robin until all are done (a no-op
//! waker: these futures only ever wait on `Yielding`).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use celld_edge::env::{Env, HttpRequest, HttpResponse, TransportError};

use super::mem::MemEnv;

#[derive(Clone)]
pub struct Yielding(pub MemEnv);

/// Pending on its first poll, ready on the second.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Env for Yielding {
    async fn send(&self, req: HttpRequest, timeout_ms: Option<u32>) -> Result<HttpResponse, TransportError> {
        YieldOnce(false).await;
        self.0.send(req, timeout_ms).await
    }
    fn wall_ms(&self) -> u64 {
        self.0.wall_ms()
    }
    fn mono_ms(&self) -> f64 {
        self.0.mono_ms()
    }
    fn random_u64(&self) -> u64 {
        self.0.random_u64()
    }
    async fn sleep(&self, ms: u32) {
        self.0.sleep(ms).await
    }
}

pub fn run_all<T>(mut futures: Vec<Pin<Box<dyn Future<Output = T> + '_>>>) -> Vec<T> {
    let mut out: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..10_000 {
        for (f, o) in futures.iter_mut().zip(out.iter_mut()) {
            if o.is_none() {
                if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                    *o = Some(v);
                }
            }
        }
        if out.iter().all(Option::is_some) {
            return out.into_iter().map(Option::unwrap).collect();
        }
    }
    panic!("the futures did not finish");
}
