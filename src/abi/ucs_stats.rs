//! `ucs/stats/stats_fwd.h`: statistics nodes (not implemented; callers only
//! pass NULL or a pointer they got from UCS).

/// A node of the statistics tree (opaque).
pub struct ucs_stats_node {
    _opaque: [u8; 0],
}
pub type ucs_stats_node_t = ucs_stats_node;
