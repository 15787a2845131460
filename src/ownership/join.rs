//! Small future combinators over whatever executor the host runs: `join_all` polls futures concurrently
//! and collects their outputs in order; `first` resolves with whichever of two futures finishes first
//! (a sleep cut short by `close()` or an `AbortSignal`); `Flight` lets many callers wait for one attempt
//! that one of them runs (single-flight lease writes and claims). The crate has no executor of its own, so this must never
//! spawn or block: it only polls what it holds, and wakes the wakers it was given.

use crate::prelude::*;
use alloc::rc::Rc;
use core::cell::RefCell;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

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

/// One attempt that several callers wait for: its leader runs it and `finish`es it; everyone else `wait`s.
/// A leader dropped before finishing (its caller gave up) abandons it, and its waiters try again.
pub struct Flight<T> {
    state: RefCell<FlightState<T>>,
}

enum FlightState<T> {
    Running(Vec<Waker>),
    Done(T),
    Abandoned,
}

impl<T: Clone> Flight<T> {
    pub fn new() -> Rc<Self> {
        Rc::new(Flight { state: RefCell::new(FlightState::Running(Vec::new())) })
    }

    fn settle(&self, to: FlightState<T>) {
        let before = core::mem::replace(&mut *self.state.borrow_mut(), to);
        if let FlightState::Running(wakers) = before {
            for w in wakers {
                w.wake();
            }
        }
    }

    /// The attempt's outcome, for every waiter.
    pub fn finish(&self, outcome: T) {
        self.settle(FlightState::Done(outcome));
    }

    pub fn abandon(&self) {
        self.settle(FlightState::Abandoned);
    }

    /// Resolves to the outcome, or `None` when the leader gave up without one.
    pub fn wait(self: &Rc<Self>) -> Wait<T> {
        Wait { flight: self.clone() }
    }
}

pub struct Wait<T> {
    flight: Rc<Flight<T>>,
}

impl<T: Clone> Future for Wait<T> {
    type Output = Option<T>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        match &mut *self.flight.state.borrow_mut() {
            FlightState::Running(wakers) => {
                if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
                    wakers.push(cx.waker().clone());
                }
                Poll::Pending
            }
            FlightState::Done(outcome) => Poll::Ready(Some(outcome.clone())),
            FlightState::Abandoned => Poll::Ready(None),
        }
    }
}

/// Held by a flight's leader: `finish` hands the outcome over; dropping it unfinished abandons the flight.
/// `clear` takes the flight out of wherever the waiters found it, before they are woken.
pub struct Lead<T: Clone, C: FnMut()> {
    flight: Rc<Flight<T>>,
    clear: Option<C>,
}

impl<T: Clone, C: FnMut()> Lead<T, C> {
    pub fn new(flight: Rc<Flight<T>>, clear: C) -> Self {
        Lead { flight, clear: Some(clear) }
    }

    pub fn finish(mut self, outcome: T) {
        if let Some(mut clear) = self.clear.take() {
            clear();
        }
        self.flight.finish(outcome);
    }
}

impl<T: Clone, C: FnMut()> Drop for Lead<T, C> {
    fn drop(&mut self) {
        if let Some(mut clear) = self.clear.take() {
            clear();
            self.flight.abandon();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::sync::Arc;
    use core::sync::atomic::{AtomicUsize, Ordering};
    use alloc::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn waiters_get_the_leaders_outcome_and_are_woken_once() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        let flight = Flight::<u32>::new();
        let (mut a, mut b) = (flight.wait(), flight.wait());
        assert!(Pin::new(&mut a).poll(&mut cx).is_pending());
        assert!(Pin::new(&mut a).poll(&mut cx).is_pending());
        assert!(Pin::new(&mut b).poll(&mut cx).is_pending());
        let cleared = core::cell::Cell::new(false);
        Lead::new(flight.clone(), || cleared.set(true)).finish(7);
        assert!(cleared.get());
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "one waker registered once");
        assert_eq!(Pin::new(&mut a).poll(&mut cx), Poll::Ready(Some(7)));
        assert_eq!(Pin::new(&mut b).poll(&mut cx), Poll::Ready(Some(7)));
    }

    #[test]
    fn first_takes_whichever_is_ready() {
        let mut cx = Context::from_waker(Waker::noop());
        let flight = Flight::<u32>::new();
        let mut f = first(flight.wait(), core::future::ready(5));
        assert!(matches!(Pin::new(&mut f).poll(&mut cx), Poll::Ready(Either::Right(5))));
        let mut g = first(flight.wait(), core::future::pending::<()>());
        assert!(Pin::new(&mut g).poll(&mut cx).is_pending());
        flight.finish(3);
        assert!(matches!(Pin::new(&mut g).poll(&mut cx), Poll::Ready(Either::Left(Some(3)))));
    }

    #[test]
    fn a_dropped_leader_abandons_its_flight() {
        let flight = Flight::<u32>::new();
        let mut w = flight.wait();
        let cleared = core::cell::Cell::new(0);
        drop(Lead::new(flight.clone(), || cleared.set(cleared.get() + 1)));
        assert_eq!(cleared.get(), 1);
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(Pin::new(&mut w).poll(&mut cx), Poll::Ready(None));
    }
}
