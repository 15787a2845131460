//! `join_all`: run futures concurrently on whatever executor polls it and collect their outputs in order.
//! The crate has no executor of its own (the host drives its futures), so this must never spawn, block or
//! wake anything itself: it only polls what it holds.

use crate::prelude::*;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

pub struct JoinAll<F: Future> {
    futures: Vec<Pin<Box<F>>>,
    outputs: Vec<Option<F::Output>>,
}

// The futures are boxed and the outputs never pinned, so moving a JoinAll is fine.
impl<F: Future> Unpin for JoinAll<F> {}

impl<F: Future> Future for JoinAll<F> {
    type Output = Vec<F::Output>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut pending = false;
        for (fut, out) in this.futures.iter_mut().zip(this.outputs.iter_mut()) {
            if out.is_none() {
                match fut.as_mut().poll(cx) {
                    Poll::Ready(v) => *out = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            return Poll::Pending;
        }
        // Plain loops here and below: iterator adapters would each be monomorphised into the wasm.
        let mut outputs = Vec::with_capacity(this.outputs.len());
        for out in this.outputs.iter_mut() {
            if let Some(v) = out.take() {
                outputs.push(v);
            }
        }
        Poll::Ready(outputs)
    }
}

pub fn join_all<F: Future>(futures: impl IntoIterator<Item = F>) -> JoinAll<F> {
    let mut all = JoinAll { futures: Vec::new(), outputs: Vec::new() };
    for future in futures {
        all.futures.push(Box::pin(future));
        all.outputs.push(None);
    }
    all
}
