pub mod mem;
// The gated Env is for the tests of overlapping operations (tests/driver.rs); other crates that share
// this support module do not use it.
#[allow(dead_code)]
pub mod gate;
