//! An `Env` whose requests and sleeps wait until the test lets them go: the test decides when a request
//! lands in the store (`land`) and, separately, when its answer arrives (`deliver`), so that answers can
//! come late, after other operations of the same instance, or out of order. Requests the test does not
//! hold go straight to the in-memory store. Futures are polled by hand (`poll`).

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use celld_edge::env::{Env, HttpRequest, HttpResponse, TransportError};

use super::mem::MemEnv;

type Answer = Result<HttpResponse, TransportError>;

struct Held {
    /// `METHOD key`.
    what: String,
    req: Option<HttpRequest>,
    answer: Option<Answer>,
    delivered: bool,
}

/// Which requests (method, key) the test holds.
type HoldIf = Box<dyn Fn(&str, &str) -> bool>;

#[derive(Default)]
struct Inner {
    held: Vec<Held>,
    /// Sleeps asked for (ms), and whether each has ended.
    sleeps: Vec<(u32, bool)>,
    hold: Option<HoldIf>,
}

#[derive(Clone)]
pub struct GateEnv {
    pub mem: MemEnv,
    inner: Rc<RefCell<Inner>>,
}

impl GateEnv {
    pub fn new(mem: MemEnv) -> Self {
        GateEnv { mem, inner: Rc::default() }
    }

    /// Holds every later request for which `pred(method, key)` is true.
    pub fn hold(&self, pred: impl Fn(&str, &str) -> bool + 'static) {
        self.inner.borrow_mut().hold = Some(Box::new(pred));
    }

    /// The held requests not yet answered: (index, `METHOD key`).
    pub fn waiting(&self) -> Vec<(usize, String)> {
        let inner = self.inner.borrow();
        inner.held.iter().enumerate().filter(|(_, h)| !h.delivered).map(|(i, h)| (i, h.what.clone())).collect()
    }

    /// Applies held request `i` to the store now; its answer waits for `deliver`.
    pub fn land(&self, i: usize) {
        let req = self.inner.borrow_mut().held[i].req.take().expect("lands once");
        let answer = self.mem.0.borrow_mut().apply(&req);
        self.inner.borrow_mut().held[i].answer = Some(Ok(answer));
    }

    /// Lets held request `i`'s answer arrive (landing it first if it has not landed).
    pub fn deliver(&self, i: usize) {
        if self.inner.borrow().held[i].req.is_some() {
            self.land(i);
        }
        self.inner.borrow_mut().held[i].delivered = true;
    }

    /// Answers held request `i` with `err` without applying it (lost on its way to the store).
    pub fn fail(&self, i: usize, err: TransportError) {
        let mut inner = self.inner.borrow_mut();
        let held = &mut inner.held[i];
        held.req = None;
        held.answer = Some(Err(err));
        held.delivered = true;
    }

    /// The sleeps asked for so far, in ms.
    pub fn sleeps(&self) -> Vec<u32> {
        self.inner.borrow().sleeps.iter().map(|(ms, _)| *ms).collect()
    }

    /// Ends every sleep in progress, advancing both clocks by the longest.
    pub fn wake_sleeps(&self) {
        let longest = self.inner.borrow().sleeps.iter().filter(|(_, done)| !done).map(|(ms, _)| *ms).max().unwrap_or(0);
        self.wake_sleeps_after(u64::from(longest));
    }

    /// Ends every sleep in progress, advancing both clocks by `ms` (time that passed in part before).
    pub fn wake_sleeps_after(&self, ms: u64) {
        for s in self.inner.borrow_mut().sleeps.iter_mut() {
            s.1 = true;
        }
        self.mem.advance(ms);
    }
}

struct HeldAnswer {
    inner: Rc<RefCell<Inner>>,
    i: usize,
}

impl Future for HeldAnswer {
    type Output = Answer;
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Answer> {
        let mut inner = self.inner.borrow_mut();
        let h = &mut inner.held[self.i];
        match (h.delivered, h.answer.take()) {
            (true, Some(answer)) => Poll::Ready(answer),
            (_, answer) => {
                h.answer = answer;
                Poll::Pending
            }
        }
    }
}

struct Sleeping {
    inner: Rc<RefCell<Inner>>,
    i: usize,
}

impl Future for Sleeping {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.inner.borrow().sleeps[self.i].1 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Env for GateEnv {
    async fn send(&self, req: HttpRequest, timeout_ms: Option<u32>) -> Answer {
        let key = req.url.strip_prefix(&self.mem.0.borrow().bucket_prefix).unwrap_or_default().to_owned();
        let held = self.inner.borrow().hold.as_ref().is_some_and(|h| h(req.method, &key));
        if !held {
            return self.mem.send(req, timeout_ms).await;
        }
        let what = format!("{} {key}", req.method);
        let i = {
            let mut inner = self.inner.borrow_mut();
            inner.held.push(Held { what, req: Some(req), answer: None, delivered: false });
            inner.held.len() - 1
        };
        HeldAnswer { inner: self.inner.clone(), i }.await
    }
    fn wall_ms(&self) -> u64 {
        self.mem.wall_ms()
    }
    fn mono_ms(&self) -> f64 {
        self.mem.mono_ms()
    }
    fn random_u64(&self) -> u64 {
        self.mem.random_u64()
    }
    async fn sleep(&self, ms: u32) {
        let i = {
            let mut inner = self.inner.borrow_mut();
            inner.sleeps.push((ms, false));
            inner.sleeps.len() - 1
        };
        Sleeping { inner: self.inner.clone(), i }.await
    }
}

/// Polls `fut` once: its output if it finished.
pub fn poll<F: Future>(fut: &mut Pin<Box<F>>) -> Option<F::Output> {
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => Some(out),
        Poll::Pending => None,
    }
}
