//! TEST ONLY switches that make the stand-in look like a machine with bad
//! RDMA devices, so the backend's handling of them can be tested (issue
//! 6, "bad input"). Each is read when the verb runs, so a process may set
//! it before the first call (or change it between calls):
//!
//! - `UCT_STANDIN_NOT_MLX5=<dev>[,<dev>...]`: `mlx5dv_is_supported` is
//!   false for these devices (a non-mlx5 NIC);
//! - `UCT_STANDIN_PORT_DOWN=<dev>[,<dev>...]`: `ibv_query_port` reports
//!   their port DOWN (physical state Disabled), whatever the soft port is;
//! - `UCT_STANDIN_FAIL=<verb>[,<verb>...]`: these verbs fail with errno
//!   ENOMEM before doing anything. Verbs: `open_device`, `alloc_pd`,
//!   `reg_mr`, `create_cq`, `create_srq`, `create_qp`.
//!
//! And one probe: `uct_standin_live_objects()` (exported) counts the live
//! handles, so a test can see that a failed setup released what it made.

pub const NOT_MLX5_ENV: &str = "UCT_STANDIN_NOT_MLX5";
pub const PORT_DOWN_ENV: &str = "UCT_STANDIN_PORT_DOWN";
pub const FAIL_ENV: &str = "UCT_STANDIN_FAIL";

/// The verbs `UCT_STANDIN_FAIL` can name.
pub const FAILABLE_VERBS: [&str; 6] = [
    "open_device",
    "alloc_pd",
    "reg_mr",
    "create_cq",
    "create_srq",
    "create_qp",
];

/// Whether the comma-separated list in `env` names `item`.
fn listed(env: &str, item: &str) -> bool {
    std::env::var(env)
        .map(|list| list_names(&list, item))
        .unwrap_or(false)
}

fn list_names(list: &str, item: &str) -> bool {
    list.split(',').map(str::trim).any(|entry| entry == item)
}

/// `mlx5dv_is_supported` is to say no for `device`.
pub fn not_mlx5(device: &str) -> bool {
    listed(NOT_MLX5_ENV, device)
}

/// `ibv_query_port` is to say DOWN for `device`.
pub fn port_down(device: &str) -> bool {
    listed(PORT_DOWN_ENV, device)
}

/// `verb` (one of [`FAILABLE_VERBS`]) is to fail; logs that it does, so a
/// test log shows the failure was injected.
pub fn fails(verb: &str) -> bool {
    debug_assert!(FAILABLE_VERBS.contains(&verb), "{verb}");
    let fail = listed(FAIL_ENV, verb);
    if fail {
        tracing::debug!("verbs stand-in: ibv_{verb} fails as {FAIL_ENV} asks");
    }
    fail
}

/// TEST ONLY: the number of live stand-in handles (contexts, PDs, MRs,
/// channels, CQs, SRQs, QPs, device lists).
#[no_mangle]
pub extern "C" fn uct_standin_live_objects() -> usize {
    crate::objects::live_count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_match_whole_names_only() {
        assert!(list_names("mlx5_0,mlx5_1", "mlx5_1"));
        assert!(list_names(" create_qp , reg_mr", "reg_mr"));
        assert!(!list_names("mlx5_10", "mlx5_1"));
        assert!(!list_names("", "mlx5_0"));
    }
}
