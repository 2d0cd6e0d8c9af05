//! The software HCA.
pub mod engine;
pub mod wire;
