//! Maps keyed by a hardware number (QPN, memory key): looked up on every
//! packet and every completion, so they hash with Fx (a multiply) instead
//! of the standard SipHash (~120 instructions a lookup in callgrind of a
//! ping-pong; see benches/BENCHMARKS.md, "Where the time goes"). The keys
//! are 32-bit numbers the device hands out; a peer that forges packets can
//! at worst make lookups in its own small table collide, not reach another
//! table.

use std::collections::HashMap;

/// A map from a 32-bit hardware number to `V`.
pub type IdMap<V> = HashMap<u32, V, rustc_hash::FxBuildHasher>;
