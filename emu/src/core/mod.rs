//! Engine, virtual time, packets, buffers and the bearer classifier.
pub mod classifier;
pub mod engine;
pub mod packet;
pub mod pool;
pub mod time;
