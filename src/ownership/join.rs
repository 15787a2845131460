//! Small future combinators over whatever executor the host runs: `join_all` polls futures concurrently
//! and collects their outputs in order; `first` resolves with whichever of two futures finishes first
//! (a sleep cut short by `close()` or an `AbortSignal`); `beside` drives a side job along a main one. The
//! crate has no executor of its own, so this must never spawn or block: it only polls what it holds.
//! futures-util is not a dependency (docs/packaging.md says why these few are written here).

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

/// Which of two futures finished first.
pub enum Either<A, B> {
    Left(A),
    Right(B),
}

pub struct First<A: Future, B: Future> {
    a: Pin<Box<A>>,
    b: Pin<Box<B>>,
}

impl<A: Future, B: Future> Future for First<A, B> {
    type Output = Either<A::Output, B::Output>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(v) = self.a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(v));
        }
        self.b.as_mut().poll(cx).map(Either::Right)
    }
}

/// Polls both (`a` first); the other is dropped unfinished.
pub fn first<A: Future, B: Future>(a: A, b: B) -> First<A, B> {
    First { a: Box::pin(a), b: Box::pin(b) }
}

/// A job that runs beside others (the renewal loop's credentials refresh), kept across the steps it
/// outlives.
pub type Side<'a, T> = Option<Pin<Box<dyn Future<Output = T> + 'a>>>;

pub struct Beside<'s, 'a, M: Future, T> {
    main: Pin<Box<M>>,
    side: &'s mut Side<'a, T>,
    done: Option<T>,
}

// `main` is boxed and the side's output never pinned, so moving a Beside is fine.
impl<M: Future, T> Unpin for Beside<'_, '_, M, T> {}

impl<M: Future, T> Future for Beside<'_, '_, M, T> {
    type Output = (M::Output, Option<T>);
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Some(side) = this.side.as_mut() {
            if let Poll::Ready(v) = side.as_mut().poll(cx) {
                this.done = Some(v);
                *this.side = None;
            }
        }
        match this.main.as_mut().poll(cx) {
            Poll::Ready(out) => Poll::Ready((out, this.done.take())),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Runs `main` to its end while also driving `side` (if any); `side` is emptied when it finishes, and its
/// output is returned with `main`'s. A side job still running stays in `side` for the next step.
pub fn beside<'s, 'a, M: Future, T>(main: M, side: &'s mut Side<'a, T>) -> Beside<'s, 'a, M, T> {
    Beside { main: Box::pin(main), side, done: None }
}
