pub mod mem;
pub mod gate;
