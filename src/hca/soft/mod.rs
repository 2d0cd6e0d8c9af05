//! The software HCA.
