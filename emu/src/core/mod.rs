//! Engine, virtual time, packets and the bearer classifier.
pub mod time;
pub mod packet;
