//! The token parts of the C queries and the purge preparation, driven
//! through the real `uct_iface_attr_v2_t` / `uct_ep_attr_t` /
//! `uct_ep_outstanding_purge_params_t` structs: capability advertisement,
//! lengths, the sender → receiver → sender token exchange, and the checks
//! (TX without RX, NULL buffers, unknown connection, foreign or stale RX
//! token, not connected).

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use uct::abi::*;
use uct::failover::{
    ep_query_tx_token, iface_query_tokens, prepare_purge, ConnectionId, DeviceId, FailoverError,
    OpClass, OpPsns, QpIdentity, ResponderLookup, ResponderState, RxToken, TxToken, Verdict,
    RX_TOKEN_LENGTH, TX_TOKEN_LENGTH,
};

fn connection() -> ConnectionId {
    ConnectionId {
        requester: QpIdentity {
            device: DeviceId([0x11; 16]),
            qpn: 0x100,
            generation: 0x00_aaaa,
        },
        responder: QpIdentity {
            device: DeviceId([0x22; 16]),
            qpn: 0x200,
            generation: 0x00_bbbb,
        },
    }
}

fn iface_attr(field_mask: u64) -> uct_iface_attr_v2_t {
    uct_iface_attr_v2_t {
        field_mask,
        max_put_sgl_zcopy_count: 0,
        max_get_sgl_zcopy_count: 0,
        cap: uct_iface_attr_v2_cap { flags: 0 },
        tx_token_length: 0,
        rx_token_length: 0,
        tx_token: null(),
        rx_token: null_mut(),
    }
}

fn ep_attr(field_mask: u64, tx_token: *mut c_void) -> uct_ep_attr_t {
    // SAFETY: sockaddr_storage is plain bytes; all-zero is valid.
    let storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    uct_ep_attr_t {
        field_mask,
        local_address: storage,
        remote_address: storage,
        tx_token,
    }
}

/// `iface_query_tokens` on `attr`, whose token pointers (where their bits
/// are set) are NULL or buffers of the token lengths, as in every test here.
fn query_tokens(
    attr: &mut uct_iface_attr_v2_t,
    lookup: Option<ResponderLookup<'_>>,
) -> Result<(), Status> {
    // SAFETY: a valid attr with NULL or token-sized buffers (above).
    unsafe { iface_query_tokens(attr, lookup) }
}

/// `ep_query_tx_token` on `attr`, whose TX token pointer (where its bit is
/// set) is NULL or a buffer of the TX token length.
fn query_tx_token(
    attr: &mut uct_ep_attr_t,
    connection: Option<&ConnectionId>,
) -> Result<(), Status> {
    // SAFETY: a valid attr with a NULL or token-sized buffer (above).
    unsafe { ep_query_tx_token(attr, connection) }
}

/// The receiver: one QP (0x200) connected as in `connection()`.
fn receiver(
    next_rcv_psn: u32,
) -> impl FnMut(&ConnectionId) -> Result<ResponderState, FailoverError> {
    move |claimed| {
        if claimed.responder.qpn != 0x200 {
            return Err(FailoverError::UnknownConnection {
                responder_qpn: claimed.responder.qpn,
            });
        }
        Ok(ResponderState {
            connection: connection(),
            next_rcv_psn,
        })
    }
}

#[test]
fn capability_and_lengths_are_advertised_only_with_support() {
    let mut attr = iface_attr(UCT_IFACE_ATTR_FIELD_CAP_FLAGS);
    attr.cap.flags = UCT_IFACE_FLAG_V2_QUERY_TOKEN | UCT_IFACE_FLAG_V2_PUT_SGL_ZCOPY;
    assert_eq!(query_tokens(&mut attr, None), Ok(()));
    assert_eq!(attr.cap.flags, UCT_IFACE_FLAG_V2_PUT_SGL_ZCOPY);

    for field in [
        UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH,
        UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH,
        UCT_IFACE_ATTR_FIELD_TX_TOKEN | UCT_IFACE_ATTR_FIELD_RX_TOKEN,
    ] {
        let mut attr = iface_attr(field);
        assert_eq!(query_tokens(&mut attr, None), Err(Status::Unsupported));
    }

    let mut lookup = receiver(0);
    let mut attr = iface_attr(
        UCT_IFACE_ATTR_FIELD_CAP_FLAGS
            | UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH
            | UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH,
    );
    attr.cap.flags = UCT_IFACE_FLAG_V2_GET_SGL_ZCOPY;
    assert_eq!(query_tokens(&mut attr, Some(&mut lookup)), Ok(()));
    assert_eq!(
        attr.cap.flags,
        UCT_IFACE_FLAG_V2_GET_SGL_ZCOPY | UCT_IFACE_FLAG_V2_QUERY_TOKEN
    );
    assert_eq!(attr.tx_token_length, TX_TOKEN_LENGTH);
    assert_eq!(attr.rx_token_length, RX_TOKEN_LENGTH);
}

#[test]
fn token_exchange_sender_receiver_sender() {
    // Sender: its ep's TX token.
    let mut tx = [0u8; TX_TOKEN_LENGTH];
    let mut attr = ep_attr(UCT_EP_ATTR_FIELD_TX_TOKEN, tx.as_mut_ptr().cast());
    assert_eq!(query_tx_token(&mut attr, Some(&connection())), Ok(()));
    assert_eq!(TxToken::decode(&tx).unwrap().connection, connection());

    // Receiver: derives the RX token.
    let tx_before = tx;
    let mut rx = [0u8; RX_TOKEN_LENGTH];
    let mut attr = iface_attr(UCT_IFACE_ATTR_FIELD_TX_TOKEN | UCT_IFACE_ATTR_FIELD_RX_TOKEN);
    attr.tx_token = tx.as_ptr().cast();
    attr.rx_token = rx.as_mut_ptr().cast();
    let mut lookup = receiver(0x00_0105);
    assert_eq!(query_tokens(&mut attr, Some(&mut lookup)), Ok(()));
    assert_eq!(tx, tx_before, "the TX token is input only");
    assert_eq!(RxToken::decode(&rx).unwrap().next_rcv_psn, 0x105);

    // Sender: purges with it.
    let ops = [
        OpPsns {
            class: OpClass::Am,
            first_psn: 0x100,
            psn_count: 5,
            cqe_seen: false,
        },
        OpPsns {
            class: OpClass::Put,
            first_psn: 0x105,
            psn_count: 2,
            cqe_seen: false,
        },
    ];
    let (token, verdicts) = prepare_purge(&rx, &connection(), &ops, 0x107).unwrap();
    assert_eq!(token.next_rcv_psn, 0x105);
    assert_eq!(verdicts, vec![Verdict::Delivered, Verdict::Replay]);
}

#[test]
fn iface_token_checks() {
    let token = TxToken {
        connection: connection(),
    };
    let mut tx = [0u8; TX_TOKEN_LENGTH];
    token.encode(&mut tx).unwrap();
    let mut rx = [0x5au8; RX_TOKEN_LENGTH];
    let mut lookup = receiver(1);

    // TX token without RX token, and the reverse.
    for field in [UCT_IFACE_ATTR_FIELD_TX_TOKEN, UCT_IFACE_ATTR_FIELD_RX_TOKEN] {
        let mut attr = iface_attr(field);
        attr.tx_token = tx.as_ptr().cast();
        attr.rx_token = rx.as_mut_ptr().cast();
        assert_eq!(
            query_tokens(&mut attr, Some(&mut lookup)),
            Err(Status::InvalidParam),
            "field 0x{field:x} alone"
        );
    }
    // NULL buffers.
    for (tx_ptr, rx_ptr) in [
        (null(), rx.as_mut_ptr().cast::<c_void>()),
        (tx.as_ptr().cast::<c_void>(), null_mut()),
    ] {
        let mut attr = iface_attr(UCT_IFACE_ATTR_FIELD_TX_TOKEN | UCT_IFACE_ATTR_FIELD_RX_TOKEN);
        attr.tx_token = tx_ptr;
        attr.rx_token = rx_ptr;
        assert_eq!(
            query_tokens(&mut attr, Some(&mut lookup)),
            Err(Status::InvalidParam)
        );
    }
    // A TX token for a QP this receiver does not have.
    let mut other = connection();
    other.responder.qpn = 0x201;
    let mut foreign = [0u8; TX_TOKEN_LENGTH];
    TxToken { connection: other }.encode(&mut foreign).unwrap();
    let garbage = [0x42u8; TX_TOKEN_LENGTH];
    for bad in [&foreign, &garbage] {
        let mut attr = iface_attr(UCT_IFACE_ATTR_FIELD_TX_TOKEN | UCT_IFACE_ATTR_FIELD_RX_TOKEN);
        attr.tx_token = bad.as_ptr().cast();
        attr.rx_token = rx.as_mut_ptr().cast();
        assert_eq!(
            query_tokens(&mut attr, Some(&mut lookup)),
            Err(Status::InvalidParam)
        );
    }
    assert_eq!(rx, [0x5a; RX_TOKEN_LENGTH], "nothing written on refusal");
}

#[test]
fn ep_token_checks() {
    // Not asked for: nothing happens, even with a NULL buffer.
    let mut attr = ep_attr(UCT_EP_ATTR_FIELD_LOCAL_SOCKADDR, null_mut());
    assert_eq!(query_tx_token(&mut attr, None), Ok(()));
    // NULL buffer.
    let mut attr = ep_attr(UCT_EP_ATTR_FIELD_TX_TOKEN, null_mut());
    assert_eq!(
        query_tx_token(&mut attr, Some(&connection())),
        Err(Status::InvalidParam)
    );
    // Not connected.
    let mut tx = [0u8; TX_TOKEN_LENGTH];
    let mut attr = ep_attr(UCT_EP_ATTR_FIELD_TX_TOKEN, tx.as_mut_ptr().cast());
    assert_eq!(query_tx_token(&mut attr, None), Err(Status::NotConnected));
    assert_eq!(tx, [0; TX_TOKEN_LENGTH]);
}

#[test]
fn purge_refuses_foreign_stale_and_missing_tokens() {
    let ops = [OpPsns {
        class: OpClass::Am,
        first_psn: 10,
        psn_count: 1,
        cqe_seen: true,
    }];
    let token = |connection: ConnectionId, psn: u32| {
        let mut bytes = [0u8; RX_TOKEN_LENGTH];
        RxToken {
            connection,
            next_rcv_psn: psn,
        }
        .encode(&mut bytes)
        .unwrap();
        bytes
    };
    let good = token(connection(), 11);
    assert!(prepare_purge(&good, &connection(), &ops, 11).is_ok());
    let mut recreated = connection();
    recreated.requester.generation += 1;
    let foreign = token(recreated, 11);
    assert_eq!(
        prepare_purge(&foreign, &connection(), &ops, 11).unwrap_err(),
        Status::InvalidParam
    );
    // Stale: derived before the acknowledged AM.
    let stale = token(connection(), 10);
    assert_eq!(
        prepare_purge(&stale, &connection(), &ops, 11).unwrap_err(),
        Status::InvalidParam
    );
    // A token cut short (the entry point refuses a NULL one; see
    // failover_rc_checks).
    assert_eq!(
        prepare_purge(&good[..RX_TOKEN_LENGTH - 1], &connection(), &ops, 11).unwrap_err(),
        Status::InvalidParam
    );
}
