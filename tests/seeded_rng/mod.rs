//! The library's seeded generator (SplitMix64, `engine::sim::Rng`) with the
//! `usize` bounds the format and wire fuzz tests index with, so their
//! random cases are reproducible.
#![allow(dead_code)]

use uct::hca::soft::engine::sim;

pub struct Rng(sim::Rng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(sim::Rng::new(seed))
    }

    pub fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform-ish in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        self.0.below(n as u64) as usize
    }
}
