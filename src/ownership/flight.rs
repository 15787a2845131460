//! One operation shared among concurrent callers ("single flight"): the lease write, a claim per cell, the
//! store's qualification, the fleet check, the credentials refresh and `close()` each run at most once at a
//! time per instance, and every caller arriving meanwhile takes that run's outcome. `Single` is one slot,
//! `PerKey` one slot per key (claims per cell); both wait and lead through `share`, the one loop that does
//! it. It must never spawn or block: it only polls what it holds, and wakes the wakers it was given.

use std::rc::Rc;
use core::cell::RefCell;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

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


/// What a caller that found a flight in progress got from it.
pub enum Joined<T> {
    Done(T),
    /// Its leader gave up (its caller was dropped) before an outcome.
    Abandoned,
    /// The caller's patience (`Share::patience`) ran out first.
    Impatient,
}

/// Where a flight in progress is found: one slot, or one slot of a key.
trait Slot<T, Tag> {
    fn get(&self) -> Option<(Tag, Rc<Flight<T>>)>;
    fn put(&self, tag: Tag, flight: Rc<Flight<T>>);
    /// Takes `flight` out, if it is still the one there.
    fn clear(&self, flight: &Rc<Flight<T>>);
}

/// One shared operation at a time; `Tag` says what kind the one in progress is (the lease: acquisition or
/// renewal).
pub struct Single<T, Tag = ()> {
    slot: RefCell<Option<(Tag, Rc<Flight<T>>)>>,
}

impl<T, Tag> Default for Single<T, Tag> {
    fn default() -> Self {
        Single { slot: RefCell::new(None) }
    }
}

impl<T: Clone, Tag: Clone> Slot<T, Tag> for Single<T, Tag> {
    fn get(&self) -> Option<(Tag, Rc<Flight<T>>)> {
        self.slot.borrow().clone()
    }
    fn put(&self, tag: Tag, flight: Rc<Flight<T>>) {
        *self.slot.borrow_mut() = Some((tag, flight));
    }
    fn clear(&self, flight: &Rc<Flight<T>>) {
        let mut slot = self.slot.borrow_mut();
        if slot.as_ref().is_some_and(|(_, f)| Rc::ptr_eq(f, flight)) {
            *slot = None;
        }
    }
}

/// How a caller shares: what it takes from a flight it joins, what answers it with none in progress, and
/// how long it waits for one.
pub struct Share<J, R, P> {
    /// `Some`: this caller's answer; `None`: look again (and maybe lead).
    pub joined: J,
    /// With no flight in progress, an answer without one (a verdict already kept).
    pub ready: R,
    /// A joiner waits no longer than this future takes (`core::future::pending` for no limit).
    pub patience: P,
}

/// The outcome when the flight had one (`Share::joined` for callers that take any outcome).
pub fn done<T>(joined: Joined<T>) -> Option<T> {
    match joined {
        Joined::Done(outcome) => Some(outcome),
        Joined::Abandoned | Joined::Impatient => None,
    }
}

/// The one single-flight loop: joins the flight in `slot` (`joined` decides whether its outcome answers
/// this caller), else takes `ready`'s answer, else leads `op`, whose first output every joiner gets and
/// whose second is the leader's own answer.
async fn share_in<T, Tag, R, F, P>(
    slot: &impl Slot<T, Tag>,
    tag: Tag,
    mut how: Share<impl FnMut(&Tag, Joined<T>) -> Option<R>, impl FnMut() -> Option<R>, impl FnMut() -> P>,
    op: impl FnOnce() -> F,
) -> R
where
    T: Clone,
    F: Future<Output = (T, R)>,
    P: Future<Output = ()>,
{
    loop {
        if let Some((kind, flight)) = slot.get() {
            let joined = match crate::ownership::join::first(flight.wait(), (how.patience)()).await {
                crate::ownership::join::Either::Left(Some(outcome)) => Joined::Done(outcome),
                crate::ownership::join::Either::Left(None) => Joined::Abandoned,
                crate::ownership::join::Either::Right(()) => Joined::Impatient,
            };
            match (how.joined)(&kind, joined) {
                Some(answer) => return answer,
                None => continue,
            }
        }
        if let Some(answer) = (how.ready)() {
            return answer;
        }
        return lead_in(slot, tag, op()).await;
    }
}

/// Runs `op` as a flight others may join (without joining one in progress).
async fn lead_in<T: Clone, Tag, R>(slot: &impl Slot<T, Tag>, tag: Tag, op: impl Future<Output = (T, R)>) -> R {
    let flight = Flight::new();
    slot.put(tag, flight.clone());
    let mine = flight.clone();
    let lead = Lead::new(flight, || slot.clear(&mine));
    let (outcome, answer) = op.await;
    lead.finish(outcome);
    answer
}

/// Waits until `slot` has no flight in progress.
async fn idle_in<T: Clone, Tag>(slot: &impl Slot<T, Tag>) {
    while let Some((_, flight)) = slot.get() {
        let _ = flight.wait().await;
    }
}

impl<T: Clone, Tag: Clone> Single<T, Tag> {
    /// Shares one run of `op` among concurrent callers (`share_in`).
    pub async fn share<R, F: Future<Output = (T, R)>, P: Future<Output = ()>>(
        &self,
        tag: Tag,
        how: Share<impl FnMut(&Tag, Joined<T>) -> Option<R>, impl FnMut() -> Option<R>, impl FnMut() -> P>,
        op: impl FnOnce() -> F,
    ) -> R {
        share_in(self, tag, how, op).await
    }

    /// Runs `op` as the flight in progress, joining none (a tooth's parallel writes).
    pub async fn lead<F: Future<Output = T>>(&self, tag: Tag, op: F) -> T {
        lead_in(self, tag, async { let t = op.await; (t.clone(), t) }).await
    }

    /// Waits until no flight is in progress.
    pub async fn idle(&self) {
        idle_in(self).await
    }
}

/// One shared operation at a time per key (a claim per cell).
pub struct PerKey<T> {
    flights: RefCell<Vec<(String, Rc<Flight<T>>)>>,
}

impl<T> Default for PerKey<T> {
    fn default() -> Self {
        PerKey { flights: RefCell::new(Vec::new()) }
    }
}

/// The slot of one key.
struct Keyed<'a, T> {
    flights: &'a RefCell<Vec<(String, Rc<Flight<T>>)>>,
    key: &'a str,
}

impl<T: Clone> Slot<T, ()> for Keyed<'_, T> {
    fn get(&self) -> Option<((), Rc<Flight<T>>)> {
        self.flights.borrow().iter().find(|(k, _)| k == self.key).map(|(_, f)| ((), f.clone()))
    }
    fn put(&self, _: (), flight: Rc<Flight<T>>) {
        self.flights.borrow_mut().push((self.key.to_owned(), flight));
    }
    fn clear(&self, flight: &Rc<Flight<T>>) {
        self.flights.borrow_mut().retain(|(_, f)| !Rc::ptr_eq(f, flight));
    }
}

/// Every key's flights, for waiting until none is in progress.
struct AnyKey<'a, T>(&'a RefCell<Vec<(String, Rc<Flight<T>>)>>);

impl<T: Clone> Slot<T, ()> for AnyKey<'_, T> {
    fn get(&self) -> Option<((), Rc<Flight<T>>)> {
        self.0.borrow().first().map(|(_, f)| ((), f.clone()))
    }
    fn put(&self, _: (), _: Rc<Flight<T>>) {}
    fn clear(&self, _: &Rc<Flight<T>>) {}
}

impl<T: Clone> PerKey<T> {
    fn slot<'a>(&'a self, key: &'a str) -> Keyed<'a, T> {
        Keyed { flights: &self.flights, key }
    }

    /// Shares one run of `op` among the concurrent callers of `key`.
    pub async fn share<F: Future<Output = T>>(&self, key: &str, op: impl FnOnce() -> F) -> T {
        let how = Share { joined: |_: &(), j| done(j), ready: || None, patience: core::future::pending };
        share_in(&self.slot(key), (), how, || async { let t = op().await; (t.clone(), t) }).await
    }

    /// Runs `op` for `key` beside any run in progress (a tooth's out-of-order claims).
    pub async fn lead<F: Future<Output = T>>(&self, key: &str, op: F) -> T {
        lead_in(&self.slot(key), (), async { let t = op.await; (t.clone(), t) }).await
    }

    /// Waits until no run of `key` is in progress.
    pub async fn idle(&self, key: &str) {
        idle_in(&self.slot(key)).await
    }

    /// Waits until no run of any key is in progress.
    pub async fn idle_all(&self) {
        idle_in(&AnyKey(&self.flights)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ownership::join::{first, Either};
    use std::sync::Arc;
    use core::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

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
