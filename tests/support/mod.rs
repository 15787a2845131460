pub mod mem;
// Not every test crate that shares this support module uses each of these: the gated Env is for the
// tests of overlapping operations in tests/driver.rs, `overlap` for tests/celld_compat.rs and qualify.rs.
#[allow(dead_code)]
pub mod gate;
#[allow(dead_code)]
pub mod overlap;
