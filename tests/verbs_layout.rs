//! The verbs FFI (`src/hca/verbs/ffi.rs`) against Debian's `libibverbs-dev`
//! headers: `c-tests/verbs/verbs_layout.c` is compiled with the system C
//! compiler and prints every size, alignment, member offset and constant the
//! FFI mirrors; this test prints the same table from the Rust types and
//! fails on any line that differs or exists on one side only.

use std::collections::BTreeMap;
use std::mem::{align_of, offset_of, size_of};
use std::path::PathBuf;
use std::process::Command;

use uct::hca::verbs::cq_arm::{MLX5_CQ_DB_REQ_NOT, MLX5_CQ_DB_REQ_NOT_SOL, MLX5_CQ_DOORBELL};
use uct::hca::verbs::ffi::*;

/// Structs mirrored by their public head only (the library allocates them;
/// we read a few leading members): the Rust struct may be shorter.
const HEAD_ONLY: &[&str] = &["ibv_cq", "ibv_srq", "ibv_qp", "ibv_context"];
/// Structs the library fills, mirrored with extra room for newer releases:
/// the Rust struct may be longer.
const WITH_ROOM: &[&str] = &["mlx5dv_context"];

fn c_table() -> BTreeMap<String, u64> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let source = manifest.join("c-tests/verbs/verbs_layout.c");
    let dir = std::env::temp_dir().join(format!("uct-verbs-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let exe = dir.join("verbs_layout");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let status = Command::new(&cc)
        .args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(&source)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
    assert!(
        status.success(),
        "{cc} could not compile {} (is libibverbs-dev installed?)",
        source.display()
    );
    let output = Command::new(&exe).output().expect("run verbs_layout");
    assert!(output.status.success(), "verbs_layout failed");
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8(output.stdout).expect("utf-8 output");
    parse_table(&text)
}

fn parse_table(text: &str) -> BTreeMap<String, u64> {
    let mut table = BTreeMap::new();
    for line in text.lines() {
        let (key, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("bad line {line:?}"));
        let value: u64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value in {line:?}"));
        assert!(
            table.insert(key.to_string(), value).is_none(),
            "duplicate line {key}"
        );
    }
    table
}

macro_rules! size {
    ($out:ident, $s:ident) => {
        $out.push(format!("size {} {}", stringify!($s), size_of::<$s>()));
        $out.push(format!("align {} {}", stringify!($s), align_of::<$s>()));
    };
}
macro_rules! offset {
    ($out:ident, $s:ident, $f:ident) => {
        $out.push(format!(
            "offset {}.{} {}",
            stringify!($s),
            stringify!($f),
            offset_of!($s, $f)
        ));
    };
}
macro_rules! constant {
    ($out:ident, $c:ident) => {
        #[allow(clippy::unnecessary_cast)]
        $out.push(format!("const {} {}", stringify!($c), $c as u64));
    };
}

fn rust_table() -> BTreeMap<String, u64> {
    let mut out: Vec<String> = Vec::new();
    size!(out, ibv_device_attr);
    offset!(out, ibv_device_attr, fw_ver);
    offset!(out, ibv_device_attr, node_guid);
    offset!(out, ibv_device_attr, sys_image_guid);
    offset!(out, ibv_device_attr, max_mr_size);
    offset!(out, ibv_device_attr, page_size_cap);
    offset!(out, ibv_device_attr, vendor_id);
    offset!(out, ibv_device_attr, vendor_part_id);
    offset!(out, ibv_device_attr, hw_ver);
    offset!(out, ibv_device_attr, max_qp);
    offset!(out, ibv_device_attr, max_qp_wr);
    offset!(out, ibv_device_attr, device_cap_flags);
    offset!(out, ibv_device_attr, max_sge);
    offset!(out, ibv_device_attr, max_sge_rd);
    offset!(out, ibv_device_attr, max_cq);
    offset!(out, ibv_device_attr, max_cqe);
    offset!(out, ibv_device_attr, max_mr);
    offset!(out, ibv_device_attr, max_pd);
    offset!(out, ibv_device_attr, max_qp_rd_atom);
    offset!(out, ibv_device_attr, max_ee_rd_atom);
    offset!(out, ibv_device_attr, max_res_rd_atom);
    offset!(out, ibv_device_attr, max_qp_init_rd_atom);
    offset!(out, ibv_device_attr, max_ee_init_rd_atom);
    offset!(out, ibv_device_attr, atomic_cap);
    offset!(out, ibv_device_attr, max_ee);
    offset!(out, ibv_device_attr, max_rdd);
    offset!(out, ibv_device_attr, max_mw);
    offset!(out, ibv_device_attr, max_raw_ipv6_qp);
    offset!(out, ibv_device_attr, max_raw_ethy_qp);
    offset!(out, ibv_device_attr, max_mcast_grp);
    offset!(out, ibv_device_attr, max_mcast_qp_attach);
    offset!(out, ibv_device_attr, max_total_mcast_qp_attach);
    offset!(out, ibv_device_attr, max_ah);
    offset!(out, ibv_device_attr, max_fmr);
    offset!(out, ibv_device_attr, max_map_per_fmr);
    offset!(out, ibv_device_attr, max_srq);
    offset!(out, ibv_device_attr, max_srq_wr);
    offset!(out, ibv_device_attr, max_srq_sge);
    offset!(out, ibv_device_attr, max_pkeys);
    offset!(out, ibv_device_attr, local_ca_ack_delay);
    offset!(out, ibv_device_attr, phys_port_cnt);
    size!(out, ibv_port_attr);
    offset!(out, ibv_port_attr, state);
    offset!(out, ibv_port_attr, max_mtu);
    offset!(out, ibv_port_attr, active_mtu);
    offset!(out, ibv_port_attr, gid_tbl_len);
    offset!(out, ibv_port_attr, port_cap_flags);
    offset!(out, ibv_port_attr, max_msg_sz);
    offset!(out, ibv_port_attr, bad_pkey_cntr);
    offset!(out, ibv_port_attr, qkey_viol_cntr);
    offset!(out, ibv_port_attr, pkey_tbl_len);
    offset!(out, ibv_port_attr, lid);
    offset!(out, ibv_port_attr, sm_lid);
    offset!(out, ibv_port_attr, lmc);
    offset!(out, ibv_port_attr, max_vl_num);
    offset!(out, ibv_port_attr, sm_sl);
    offset!(out, ibv_port_attr, subnet_timeout);
    offset!(out, ibv_port_attr, init_type_reply);
    offset!(out, ibv_port_attr, active_width);
    offset!(out, ibv_port_attr, active_speed);
    offset!(out, ibv_port_attr, phys_state);
    offset!(out, ibv_port_attr, link_layer);
    offset!(out, ibv_port_attr, flags);
    offset!(out, ibv_port_attr, port_cap_flags2);
    size!(out, ibv_global_route);
    offset!(out, ibv_global_route, dgid);
    offset!(out, ibv_global_route, flow_label);
    offset!(out, ibv_global_route, sgid_index);
    offset!(out, ibv_global_route, hop_limit);
    offset!(out, ibv_global_route, traffic_class);
    size!(out, ibv_ah_attr);
    offset!(out, ibv_ah_attr, grh);
    offset!(out, ibv_ah_attr, dlid);
    offset!(out, ibv_ah_attr, sl);
    offset!(out, ibv_ah_attr, src_path_bits);
    offset!(out, ibv_ah_attr, static_rate);
    offset!(out, ibv_ah_attr, is_global);
    offset!(out, ibv_ah_attr, port_num);
    size!(out, ibv_qp_cap);
    offset!(out, ibv_qp_cap, max_send_wr);
    offset!(out, ibv_qp_cap, max_recv_wr);
    offset!(out, ibv_qp_cap, max_send_sge);
    offset!(out, ibv_qp_cap, max_recv_sge);
    offset!(out, ibv_qp_cap, max_inline_data);
    size!(out, ibv_qp_init_attr);
    offset!(out, ibv_qp_init_attr, qp_context);
    offset!(out, ibv_qp_init_attr, send_cq);
    offset!(out, ibv_qp_init_attr, recv_cq);
    offset!(out, ibv_qp_init_attr, srq);
    offset!(out, ibv_qp_init_attr, cap);
    offset!(out, ibv_qp_init_attr, qp_type);
    offset!(out, ibv_qp_init_attr, sq_sig_all);
    size!(out, ibv_qp_attr);
    offset!(out, ibv_qp_attr, qp_state);
    offset!(out, ibv_qp_attr, cur_qp_state);
    offset!(out, ibv_qp_attr, path_mtu);
    offset!(out, ibv_qp_attr, path_mig_state);
    offset!(out, ibv_qp_attr, qkey);
    offset!(out, ibv_qp_attr, rq_psn);
    offset!(out, ibv_qp_attr, sq_psn);
    offset!(out, ibv_qp_attr, dest_qp_num);
    offset!(out, ibv_qp_attr, qp_access_flags);
    offset!(out, ibv_qp_attr, cap);
    offset!(out, ibv_qp_attr, ah_attr);
    offset!(out, ibv_qp_attr, alt_ah_attr);
    offset!(out, ibv_qp_attr, pkey_index);
    offset!(out, ibv_qp_attr, alt_pkey_index);
    offset!(out, ibv_qp_attr, en_sqd_async_notify);
    offset!(out, ibv_qp_attr, sq_draining);
    offset!(out, ibv_qp_attr, max_rd_atomic);
    offset!(out, ibv_qp_attr, max_dest_rd_atomic);
    offset!(out, ibv_qp_attr, min_rnr_timer);
    offset!(out, ibv_qp_attr, port_num);
    offset!(out, ibv_qp_attr, timeout);
    offset!(out, ibv_qp_attr, retry_cnt);
    offset!(out, ibv_qp_attr, rnr_retry);
    offset!(out, ibv_qp_attr, alt_port_num);
    offset!(out, ibv_qp_attr, alt_timeout);
    offset!(out, ibv_qp_attr, rate_limit);
    size!(out, ibv_srq_attr);
    offset!(out, ibv_srq_attr, max_wr);
    offset!(out, ibv_srq_attr, max_sge);
    offset!(out, ibv_srq_attr, srq_limit);
    size!(out, ibv_srq_init_attr);
    offset!(out, ibv_srq_init_attr, srq_context);
    offset!(out, ibv_srq_init_attr, attr);
    size!(out, ibv_pd);
    offset!(out, ibv_pd, context);
    offset!(out, ibv_pd, handle);
    size!(out, ibv_mr);
    offset!(out, ibv_mr, context);
    offset!(out, ibv_mr, pd);
    offset!(out, ibv_mr, addr);
    offset!(out, ibv_mr, length);
    offset!(out, ibv_mr, handle);
    offset!(out, ibv_mr, lkey);
    offset!(out, ibv_mr, rkey);
    size!(out, ibv_context_ops);
    offset!(out, ibv_context_ops, poll_cq);
    offset!(out, ibv_context_ops, req_notify_cq);
    out.push(format!(
        "offset ibv_context_ops._compat_async_event {}",
        offset_of!(ibv_context_ops, trailing) + 18 * size_of::<*mut std::ffi::c_void>()
    ));
    size!(out, ibv_context);
    offset!(out, ibv_context, device);
    offset!(out, ibv_context, ops);
    offset!(out, ibv_context, cmd_fd);
    offset!(out, ibv_context, async_fd);
    offset!(out, ibv_context, num_comp_vectors);
    size!(out, ibv_comp_channel);
    offset!(out, ibv_comp_channel, context);
    offset!(out, ibv_comp_channel, fd);
    offset!(out, ibv_comp_channel, refcnt);
    size!(out, ibv_cq);
    offset!(out, ibv_cq, context);
    offset!(out, ibv_cq, channel);
    offset!(out, ibv_cq, cq_context);
    offset!(out, ibv_cq, handle);
    offset!(out, ibv_cq, cqe);
    size!(out, ibv_srq);
    offset!(out, ibv_srq, context);
    offset!(out, ibv_srq, srq_context);
    offset!(out, ibv_srq, pd);
    offset!(out, ibv_srq, handle);
    size!(out, ibv_qp);
    offset!(out, ibv_qp, context);
    offset!(out, ibv_qp, qp_context);
    offset!(out, ibv_qp, pd);
    offset!(out, ibv_qp, send_cq);
    offset!(out, ibv_qp, recv_cq);
    offset!(out, ibv_qp, srq);
    offset!(out, ibv_qp, handle);
    offset!(out, ibv_qp, qp_num);
    offset!(out, ibv_qp, state);
    offset!(out, ibv_qp, qp_type);
    size!(out, mlx5dv_qp);
    offset!(out, mlx5dv_qp, dbrec);
    offset!(out, mlx5dv_qp, sq);
    offset!(out, mlx5dv_qp, rq);
    offset!(out, mlx5dv_qp, bf);
    offset!(out, mlx5dv_qp, comp_mask);
    offset!(out, mlx5dv_qp, uar_mmap_offset);
    offset!(out, mlx5dv_qp, tirn);
    offset!(out, mlx5dv_qp, tisn);
    offset!(out, mlx5dv_qp, rqn);
    offset!(out, mlx5dv_qp, sqn);
    offset!(out, mlx5dv_qp, tir_icm_addr);
    size!(out, mlx5dv_cq);
    offset!(out, mlx5dv_cq, buf);
    offset!(out, mlx5dv_cq, dbrec);
    offset!(out, mlx5dv_cq, cqe_cnt);
    offset!(out, mlx5dv_cq, cqe_size);
    offset!(out, mlx5dv_cq, cq_uar);
    offset!(out, mlx5dv_cq, cqn);
    offset!(out, mlx5dv_cq, comp_mask);
    size!(out, mlx5dv_srq);
    offset!(out, mlx5dv_srq, buf);
    offset!(out, mlx5dv_srq, dbrec);
    offset!(out, mlx5dv_srq, stride);
    offset!(out, mlx5dv_srq, head);
    offset!(out, mlx5dv_srq, tail);
    offset!(out, mlx5dv_srq, comp_mask);
    offset!(out, mlx5dv_srq, srqn);
    size!(out, mlx5dv_obj);
    offset!(out, mlx5dv_obj, qp);
    offset!(out, mlx5dv_obj, cq);
    offset!(out, mlx5dv_obj, srq);
    offset!(out, mlx5dv_obj, rwq);
    offset!(out, mlx5dv_obj, dm);
    offset!(out, mlx5dv_obj, ah);
    offset!(out, mlx5dv_obj, pd);
    size!(out, mlx5dv_context);
    offset!(out, mlx5dv_context, version);
    offset!(out, mlx5dv_context, flags);
    offset!(out, mlx5dv_context, comp_mask);
    out.push(format!(
        "offset mlx5dv_qp.sq.buf {}",
        offset_of!(mlx5dv_qp, sq) + offset_of!(mlx5dv_qp_ring, buf)
    ));
    out.push(format!(
        "offset mlx5dv_qp.sq.wqe_cnt {}",
        offset_of!(mlx5dv_qp, sq) + offset_of!(mlx5dv_qp_ring, wqe_cnt)
    ));
    out.push(format!(
        "offset mlx5dv_qp.sq.stride {}",
        offset_of!(mlx5dv_qp, sq) + offset_of!(mlx5dv_qp_ring, stride)
    ));
    out.push(format!(
        "offset mlx5dv_qp.rq.buf {}",
        offset_of!(mlx5dv_qp, rq) + offset_of!(mlx5dv_qp_ring, buf)
    ));
    out.push(format!(
        "offset mlx5dv_qp.rq.wqe_cnt {}",
        offset_of!(mlx5dv_qp, rq) + offset_of!(mlx5dv_qp_ring, wqe_cnt)
    ));
    out.push(format!(
        "offset mlx5dv_qp.rq.stride {}",
        offset_of!(mlx5dv_qp, rq) + offset_of!(mlx5dv_qp_ring, stride)
    ));
    out.push(format!(
        "offset mlx5dv_qp.bf.reg {}",
        offset_of!(mlx5dv_qp, bf) + offset_of!(mlx5dv_qp_bf, reg)
    ));
    out.push(format!(
        "offset mlx5dv_qp.bf.size {}",
        offset_of!(mlx5dv_qp, bf) + offset_of!(mlx5dv_qp_bf, size)
    ));
    out.push(format!(
        "offset mlx5dv_obj.qp.in {}",
        offset_of!(mlx5dv_obj, qp) + offset_of!(mlx5dv_obj_pair<ibv_qp, mlx5dv_qp>, r#in)
    ));
    out.push(format!(
        "offset mlx5dv_obj.qp.out {}",
        offset_of!(mlx5dv_obj, qp) + offset_of!(mlx5dv_obj_pair<ibv_qp, mlx5dv_qp>, out)
    ));
    constant!(out, IBV_QP_STATE);
    constant!(out, IBV_QP_CUR_STATE);
    constant!(out, IBV_QP_ACCESS_FLAGS);
    constant!(out, IBV_QP_PKEY_INDEX);
    constant!(out, IBV_QP_PORT);
    constant!(out, IBV_QP_AV);
    constant!(out, IBV_QP_PATH_MTU);
    constant!(out, IBV_QP_TIMEOUT);
    constant!(out, IBV_QP_RETRY_CNT);
    constant!(out, IBV_QP_RNR_RETRY);
    constant!(out, IBV_QP_RQ_PSN);
    constant!(out, IBV_QP_MAX_QP_RD_ATOMIC);
    constant!(out, IBV_QP_MIN_RNR_TIMER);
    constant!(out, IBV_QP_SQ_PSN);
    constant!(out, IBV_QP_MAX_DEST_RD_ATOMIC);
    constant!(out, IBV_QP_CAP);
    constant!(out, IBV_QP_DEST_QPN);
    constant!(out, IBV_ACCESS_LOCAL_WRITE);
    constant!(out, IBV_ACCESS_REMOTE_WRITE);
    constant!(out, IBV_ACCESS_REMOTE_READ);
    constant!(out, IBV_ACCESS_REMOTE_ATOMIC);
    constant!(out, IBV_QPT_RC);
    constant!(out, IBV_QPS_RESET);
    constant!(out, IBV_QPS_INIT);
    constant!(out, IBV_QPS_RTR);
    constant!(out, IBV_QPS_RTS);
    constant!(out, IBV_QPS_SQD);
    constant!(out, IBV_QPS_SQE);
    constant!(out, IBV_QPS_ERR);
    constant!(out, IBV_MTU_256);
    constant!(out, IBV_MTU_512);
    constant!(out, IBV_MTU_1024);
    constant!(out, IBV_MTU_2048);
    constant!(out, IBV_MTU_4096);
    constant!(out, IBV_PORT_DOWN);
    constant!(out, IBV_PORT_INIT);
    constant!(out, IBV_PORT_ARMED);
    constant!(out, IBV_PORT_ACTIVE);
    constant!(out, IBV_PORT_ACTIVE_DEFER);
    constant!(out, IBV_LINK_LAYER_UNSPECIFIED);
    constant!(out, IBV_LINK_LAYER_INFINIBAND);
    constant!(out, IBV_LINK_LAYER_ETHERNET);
    constant!(out, IBV_ATOMIC_NONE);
    constant!(out, IBV_ATOMIC_HCA);
    constant!(out, IBV_ATOMIC_GLOB);
    constant!(out, MLX5DV_OBJ_QP);
    constant!(out, MLX5DV_OBJ_CQ);
    constant!(out, MLX5DV_OBJ_SRQ);
    constant!(out, MLX5DV_CONTEXT_FLAGS_CQE_V1);
    constant!(out, MLX5DV_SRQ_MASK_SRQN);
    constant!(out, MLX5_CQ_DOORBELL);
    constant!(out, MLX5_CQ_DB_REQ_NOT);
    constant!(out, MLX5_CQ_DB_REQ_NOT_SOL);
    out.push(format!("size ibv_gid {}", size_of::<ibv_gid>()));
    out.push(format!("align ibv_gid {}", align_of::<ibv_gid>()));
    parse_table(&out.join("\n"))
}

#[test]
fn ffi_layout_matches_libibverbs_dev_headers() {
    let c = c_table();
    let rust = rust_table();
    let mut problems = Vec::new();
    for (key, &c_value) in &c {
        let Some(&rust_value) = rust.get(key) else {
            problems.push(format!(
                "{key}: in the C table only (add it to the Rust side)"
            ));
            continue;
        };
        let struct_name = key.strip_prefix("size ").unwrap_or("");
        let ok = if HEAD_ONLY.contains(&struct_name) {
            rust_value <= c_value
        } else if WITH_ROOM.contains(&struct_name) {
            rust_value >= c_value
        } else {
            rust_value == c_value
        };
        if !ok {
            problems.push(format!("{key}: C {c_value}, Rust {rust_value}"));
        }
    }
    for key in rust.keys().filter(|k| !c.contains_key(*k)) {
        problems.push(format!(
            "{key}: in the Rust table only (add it to verbs_layout.c)"
        ));
    }
    assert!(
        problems.is_empty(),
        "verbs FFI differs from the headers:\n{}",
        problems.join("\n")
    );
    // Not vacuous: every struct and constant group was compared.
    assert!(c.len() > 250, "only {} lines compared", c.len());
}

#[test]
fn parse_table_rejects_duplicates_and_reads_values() {
    let table = parse_table("size a 4\noffset a.b 2");
    assert_eq!(table.get("size a"), Some(&4));
    assert_eq!(table.get("offset a.b"), Some(&2));
    let dup = std::panic::catch_unwind(|| parse_table("const X 1\nconst X 2"));
    assert!(dup.is_err());
}
