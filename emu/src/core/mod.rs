//! Engine and the bearer classifier.
pub mod classifier;
pub mod engine;
