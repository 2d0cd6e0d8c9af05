//! The software HCA.
pub mod wire;
