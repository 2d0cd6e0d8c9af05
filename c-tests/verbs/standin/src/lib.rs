//! TEST ONLY. A stand-in for `libibverbs.so.1` and `libmlx5.so.1` built on
//! the soft HCA, so that the verbs backend (`uct::hca::verbs`) runs, through
//! its real `dlopen` path, on machines without a NIC. What it promises (and
//! all the backend may rely on, since a NIC promises the same):
//!
//! - devices: one per `UCX_SOFT_HCA_DEVICES` entry (whatever
//!   `UCX_SOFT_HCA` says), all mlx5, one active RoCE port whose single GID
//!   (index 0, RoCE v2 in `$UCT_VERBS_SYSFS_ROOT/<dev>/ports/1/gid_attrs/
//!   types/0`, written by `ibv_get_device_list`) encodes the soft device's
//!   UDP endpoint: fe80:: prefix, IPv4 in bytes 10..14, port in 14..16;
//! - objects: PD, MR, completion channel, CQ (64- or 128-byte CQEs through
//!   `mlx5dv_create_cq`, short receives scattered into the CQE as mlx5
//!   does), SRQ, RC QP on an SRQ (also `mlx5dv_create_qp` with the
//!   scatter-to-CQE flags), UD QP (own receive queue or SRQ; Q_Key set at
//!   INIT; receive CQEs with the source QPN, the GRH in the buffer and the
//!   RoCE v2 IPv6 packet type), AH of a soft port's GID (its mlx5 address
//!   vector through `MLX5DV_OBJ_AH`), whose mlx5 rings (`mlx5dv_init_obj`)
//!   are the soft device's; through verbs work requests only receives into
//!   a UD QP's own queue (`verbs_post`); the QP's BlueFlame register is a read-only page whose
//!   doorbell store traps into the soft doorbell in the posting thread
//!   (`trapped_doorbell`, x86-64; BlueFlame size 0, so one 8-byte store per
//!   ring), and a watcher thread also rings the soft doorbell when a QP's
//!   `dbrec[1]` moves (`watcher`: the only way with
//!   `UCT_STANDIN_DOORBELL=watch`);
//! - what programs linked against rdma-core need besides (Debian's UCX
//!   modules, `ibv_devinfo`): rdma-core's version nodes on every export,
//!   DEVX calls failing with EOPNOTSUPP (as without kernel DEVX), an eventfd
//!   as `async_fd`, access bits of the optional range accepted, and with
//!   `UCT_VERBS_SYSFS_ROOT` a sysfs tree per device with a ConnectX-5 PCI
//!   identity (`devices::write_sysfs_tree`); the library's own soname is
//!   `libuct_verbs_standin.so` and it exports nothing of the uct crate but
//!   the fault API below;
//! - events: a CQ is armed as mlx5 hardware is, by the arm doorbell in its
//!   UAR page (`mlx5dv_cq.cq_uar`, a plain page the watcher thread takes:
//!   a CQE at or past the named consumer index signals at once, else the
//!   next one does; solicited-only counts as any completion), or by
//!   `ibv_context.ops.req_notify_cq` (next CQE) for rdma-core callers; the
//!   channel fd turns readable, `ibv_get_cq_event` names the CQ; CQ
//!   numbers are never 0;
//! - `ibv_query_device` reports `IBV_ATOMIC_HCA`, and fetching atomics
//!   land as on mlx5 hardware in host-endian 8-byte mode: 64-bit results in
//!   host order, 32-bit (masked) results big-endian;
//! - `UCT_STANDIN_TRACE=<file>`: one line per `ibv_open_device`
//!   (`open <dev> pid <pid>`) and `ibv_create_qp` (`qp <qpn> pid <pid>`);
//! - the soft HCA fault API (`uct_soft_hca_link_set`, `_loss_set`,
//!   `_drop_next`) is exported too and acts on these devices, so our
//!   libuct can forward its own calls for a verbs device here;
//! - bad devices on request (`simulate`): `UCT_STANDIN_NOT_MLX5=<devs>`
//!   (not mlx5), `UCT_STANDIN_PORT_DOWN=<devs>` (port DOWN),
//!   `UCT_STANDIN_FAIL=<verbs>` (e.g. `create_qp`: fails with ENOMEM).
//!
//! Never ship it: it is not rdma-core and talks RoCEv2 over UDP sockets.

mod devices;
mod devx;
mod ibv;
mod ibv_misc;
mod layout;
mod mlx5dv;
mod objects;
mod simulate;
mod trapped_doorbell;
mod verbs_post;
mod watcher;

/// The fault API of the soft HCA, acting on this library's soft devices.
/// Exported from this `.so` because `uct`'s `#[no_mangle]` items are; the
/// re-export documents that they are meant to be.
pub use uct::api::soft_hca::{
    uct_soft_hca_drop_next, uct_soft_hca_link_set, uct_soft_hca_loss_set,
};
