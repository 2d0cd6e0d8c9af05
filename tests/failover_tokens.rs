//! Failover tokens: round trips, the receiver's derivation, and every way a
//! token is refused (garbage, truncation, wrong magic/kind/version/length,
//! checksum, another connection, a recreated QP, another device).

use uct::abi::Status;
use uct::failover::{
    derive_rx_token, ConnectionId, DeviceId, FailoverError, QpIdentity, ResponderState, RxToken,
    TokenKind, TxToken, RX_TOKEN_LENGTH, TX_TOKEN_LENGTH,
};
use uct::hca::DeviceAddress;

fn device(ip: &str) -> DeviceId {
    DeviceId::from_address(&DeviceAddress::Udp(ip.parse().unwrap()))
}

fn connection() -> ConnectionId {
    ConnectionId {
        requester: QpIdentity {
            device: device("127.0.0.1:40001"),
            qpn: 0x00_0a01,
            generation: 0x12_3456,
        },
        responder: QpIdentity {
            device: device("127.0.0.2:40002"),
            qpn: 0x00_0b07,
            generation: 0xab_cdef,
        },
    }
}

fn tx_bytes() -> [u8; TX_TOKEN_LENGTH] {
    let mut bytes = [0u8; TX_TOKEN_LENGTH];
    TxToken {
        connection: connection(),
    }
    .encode(&mut bytes)
    .unwrap();
    bytes
}

fn rx_bytes(next_rcv_psn: u32) -> [u8; RX_TOKEN_LENGTH] {
    let mut bytes = [0u8; RX_TOKEN_LENGTH];
    RxToken {
        connection: connection(),
        next_rcv_psn,
    }
    .encode(&mut bytes)
    .unwrap();
    bytes
}

/// Rewrites the CRC so that a deliberately altered token fails only the
/// check the test is about.
fn reseal(token: &mut [u8]) {
    let body = token.len() - 4;
    let crc = crc32fast::hash(&token[..body]);
    token[body..].copy_from_slice(&crc.to_be_bytes());
}

#[test]
fn lengths_are_the_advertised_constants() {
    assert_eq!(TX_TOKEN_LENGTH, 60);
    assert_eq!(RX_TOKEN_LENGTH, 64);
    assert_eq!(TxToken::LENGTH, TX_TOKEN_LENGTH);
    assert_eq!(RxToken::LENGTH, RX_TOKEN_LENGTH);
}

#[test]
fn tx_token_round_trips() {
    let decoded = TxToken::decode(&tx_bytes()).unwrap();
    assert_eq!(decoded.connection, connection());
}

#[test]
fn rx_token_round_trips_including_the_psn_extremes() {
    for psn in [0, 1, 0x7f_ffff, 0x80_0000, 0xff_ffff] {
        let decoded = RxToken::decode_for(&rx_bytes(psn), &connection()).unwrap();
        assert_eq!(decoded.next_rcv_psn, psn);
        assert_eq!(decoded.connection, connection());
    }
}

#[test]
fn longer_buffers_are_read_up_to_the_token_length() {
    let mut long = vec![0xee; TX_TOKEN_LENGTH + 16];
    long[..TX_TOKEN_LENGTH].copy_from_slice(&tx_bytes());
    assert_eq!(TxToken::decode(&long).unwrap().connection, connection());
}

#[test]
fn receiver_derives_the_rx_token_from_its_qp() {
    let mut out = [0u8; RX_TOKEN_LENGTH];
    let mut asked_for = None;
    let rx = derive_rx_token(
        &tx_bytes(),
        |claimed| {
            asked_for = Some(claimed.responder.qpn);
            Ok(ResponderState {
                connection: connection(),
                next_rcv_psn: 0x00_4242,
            })
        },
        &mut out,
    )
    .unwrap();
    assert_eq!(asked_for, Some(0x00_0b07));
    assert_eq!(rx.next_rcv_psn, 0x00_4242);
    let decoded = RxToken::decode_for(&out, &connection()).unwrap();
    assert_eq!(decoded, rx);
}

#[test]
fn garbage_is_refused() {
    let garbage: Vec<u8> = (0..RX_TOKEN_LENGTH as u32)
        .map(|i| (i.wrapping_mul(97) ^ 0x5a) as u8)
        .collect();
    assert!(matches!(
        TxToken::decode(&garbage),
        Err(FailoverError::BadMagic {
            kind: TokenKind::Tx,
            ..
        })
    ));
    assert!(matches!(
        RxToken::decode(&garbage),
        Err(FailoverError::BadMagic {
            kind: TokenKind::Rx,
            ..
        })
    ));
    assert!(matches!(
        RxToken::decode(&[0u8; RX_TOKEN_LENGTH]),
        Err(FailoverError::BadMagic { found: 0, .. })
    ));
}

#[test]
fn truncated_tokens_are_refused_at_every_length() {
    let tx = tx_bytes();
    for length in 0..TX_TOKEN_LENGTH {
        let error = TxToken::decode(&tx[..length]).unwrap_err();
        assert_eq!(
            error,
            FailoverError::Truncated {
                kind: TokenKind::Tx,
                length,
                needed: TX_TOKEN_LENGTH
            }
        );
        assert_eq!(error.status(), Status::InvalidParam);
    }
    let rx = rx_bytes(9);
    for length in 0..RX_TOKEN_LENGTH {
        assert!(matches!(
            RxToken::decode(&rx[..length]),
            Err(FailoverError::Truncated { length: l, .. }) if l == length
        ));
    }
}

#[test]
fn a_token_of_the_other_kind_is_refused() {
    assert_eq!(
        RxToken::decode(&tx_bytes()).unwrap_err(),
        FailoverError::WrongKind {
            expected: TokenKind::Rx
        }
    );
    assert_eq!(
        TxToken::decode(&rx_bytes(3)).unwrap_err(),
        FailoverError::WrongKind {
            expected: TokenKind::Tx
        }
    );
}

#[test]
fn wrong_version_is_refused() {
    for version in [0u8, 2, 0xff] {
        let mut token = rx_bytes(1);
        token[4] = version;
        reseal(&mut token);
        assert_eq!(
            RxToken::decode(&token).unwrap_err(),
            FailoverError::UnsupportedVersion {
                kind: TokenKind::Rx,
                found: version
            }
        );
    }
}

#[test]
fn wrong_stated_length_is_refused() {
    for stated in [0u16, 59, 61, 64, 0xffff] {
        let mut token = tx_bytes();
        token[6..8].copy_from_slice(&stated.to_be_bytes());
        reseal(&mut token);
        assert_eq!(
            TxToken::decode(&token).unwrap_err(),
            FailoverError::BadLength {
                kind: TokenKind::Tx,
                found: stated,
                expected: 60
            }
        );
    }
}

#[test]
fn reserved_byte_must_be_zero() {
    let mut token = tx_bytes();
    token[5] = 1;
    reseal(&mut token);
    assert!(matches!(
        TxToken::decode(&token),
        Err(FailoverError::ReservedNotZero { found: 1, .. })
    ));
}

#[test]
fn any_flipped_bit_fails_the_checksum() {
    let original = rx_bytes(0x00_1234);
    // Bits of the identity, the PSN and the CRC itself; header bits are
    // caught by their own checks first.
    for byte in 8..RX_TOKEN_LENGTH {
        for bit in 0..8 {
            let mut token = original;
            token[byte] ^= 1 << bit;
            let error = RxToken::decode(&token).unwrap_err();
            assert!(
                matches!(error, FailoverError::BadChecksum { .. }),
                "byte {byte} bit {bit}: {error}"
            );
        }
    }
}

#[test]
fn out_of_range_fields_are_refused_even_with_a_valid_checksum() {
    let mut token = rx_bytes(5);
    token[56] = 0x01; // next_rcv_psn bit 24
    reseal(&mut token);
    assert!(matches!(
        RxToken::decode(&token),
        Err(FailoverError::FieldOutOfRange {
            field: "next_rcv_psn",
            ..
        })
    ));
    let mut token = tx_bytes();
    token[48] = 0x80; // responder QPN top byte
    reseal(&mut token);
    assert!(matches!(
        TxToken::decode(&token),
        Err(FailoverError::FieldOutOfRange {
            field: "responder QPN",
            ..
        })
    ));
}

/// Every identity field, changed on the ep's side, makes the RX token
/// foreign: another QP of the same peer, a recreated QP with the same
/// number (generation), another device.
#[test]
fn rx_token_for_another_connection_is_refused() {
    let token = rx_bytes(100);
    type Change = fn(&mut ConnectionId);
    let variants: [(&str, Change); 6] = [
        ("requester QPN", |c| c.requester.qpn ^= 1),
        ("requester generation", |c| c.requester.generation ^= 1),
        ("requester device", |c| c.requester.device.0[3] ^= 1),
        ("responder QPN", |c| c.responder.qpn = 0x00_0b08),
        ("responder generation", |c| c.responder.generation += 1),
        ("responder device", |c| {
            c.responder.device = device("127.0.0.3:40002")
        }),
    ];
    for (field, change) in variants {
        let mut ours = connection();
        change(&mut ours);
        let error = RxToken::decode_for(&token, &ours).unwrap_err();
        match &error {
            FailoverError::ConnectionMismatch { field: got, .. } => assert_eq!(*got, field),
            other => panic!("{field}: unexpected {other}"),
        }
        assert_eq!(error.status(), Status::InvalidParam);
        assert!(error.to_string().contains(field), "{error}");
    }
}

/// The error deriving an RX token from `tx_bytes()` gives when the
/// responder's QP is connected as `responder` says (into `out`).
fn refusal_by(responder: ConnectionId, out: &mut [u8; RX_TOKEN_LENGTH]) -> FailoverError {
    derive_rx_token(
        &tx_bytes(),
        |_| {
            Ok(ResponderState {
                connection: responder,
                next_rcv_psn: 7,
            })
        },
        out,
    )
    .unwrap_err()
}

#[test]
fn receiver_refuses_a_token_for_a_recreated_qp() {
    // The responder's QP 0xb07 was destroyed and recreated: same number, a
    // new generation, now connected to the same requester again.
    let mut recreated = connection();
    recreated.responder.generation = 0x00_0001;
    let mut out = [0xaa; RX_TOKEN_LENGTH];
    let error = refusal_by(recreated, &mut out);
    assert!(matches!(
        error,
        FailoverError::ConnectionMismatch {
            field: "responder generation",
            ..
        }
    ));
    assert_eq!(out, [0xaa; RX_TOKEN_LENGTH], "nothing written on refusal");
}

#[test]
fn receiver_refuses_a_qp_connected_elsewhere() {
    // The QP number exists on the receiver but serves another requester.
    let mut elsewhere = connection();
    elsewhere.requester.qpn = 0x00_0c00;
    let mut out = [0u8; RX_TOKEN_LENGTH];
    let error = refusal_by(elsewhere, &mut out);
    assert!(matches!(
        error,
        FailoverError::ConnectionMismatch {
            field: "requester QPN",
            ..
        }
    ));
}

#[test]
fn receiver_passes_on_unknown_connection_and_refuses_bad_input_before_lookup() {
    let mut out = [0u8; RX_TOKEN_LENGTH];
    let error = derive_rx_token(
        &tx_bytes(),
        |claimed| {
            Err(FailoverError::UnknownConnection {
                responder_qpn: claimed.responder.qpn,
            })
        },
        &mut out,
    )
    .unwrap_err();
    assert_eq!(
        error,
        FailoverError::UnknownConnection {
            responder_qpn: 0x00_0b07
        }
    );
    assert_eq!(error.status(), Status::InvalidParam);

    let mut looked_up = false;
    let error = derive_rx_token(
        &rx_bytes(1),
        |_| {
            looked_up = true;
            Err(FailoverError::UnknownConnection { responder_qpn: 0 })
        },
        &mut out,
    )
    .unwrap_err();
    assert!(!looked_up);
    assert!(matches!(error, FailoverError::WrongKind { .. }));

    let mut short = [0u8; RX_TOKEN_LENGTH - 1];
    assert!(matches!(
        derive_rx_token(&tx_bytes(), |_| unreachable!(), &mut short),
        Err(FailoverError::OutputTooSmall { .. })
    ));
}

#[test]
fn every_single_bit_flip_anywhere_is_refused() {
    for (original, is_rx) in [(tx_bytes().to_vec(), false), (rx_bytes(77).to_vec(), true)] {
        for byte in 0..original.len() {
            for bit in 0..8 {
                let mut token = original.clone();
                token[byte] ^= 1 << bit;
                let refused = if is_rx {
                    RxToken::decode(&token).is_err()
                } else {
                    TxToken::decode(&token).is_err()
                };
                assert!(refused, "rx={is_rx} byte {byte} bit {bit} accepted");
            }
        }
    }
}

/// Seeded random buffers of every length up to past the token size: never a
/// panic, always a refusal.
#[test]
fn random_input_never_panics_and_is_refused() {
    let mut seed: u64 = 0x0123_4567_89ab_cdef;
    let mut byte = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed as u8
    };
    for round in 0..20_000 {
        let length = round % (RX_TOKEN_LENGTH + 8);
        let mut buffer: Vec<u8> = (0..length).map(|_| byte()).collect();
        // Half the rounds start with a valid header, so the deeper checks
        // (length, checksum, ranges, identity) see random input too.
        if round % 2 == 0 && length >= 8 {
            let (magic, token_length) = if round % 4 == 0 {
                (b"rcTX", TX_TOKEN_LENGTH as u16)
            } else {
                (b"rcRX", RX_TOKEN_LENGTH as u16)
            };
            buffer[..4].copy_from_slice(magic);
            buffer[4] = 1;
            buffer[5] = 0;
            buffer[6..8].copy_from_slice(&token_length.to_be_bytes());
        }
        assert!(TxToken::decode(&buffer).is_err(), "round {round}");
        assert!(RxToken::decode(&buffer).is_err(), "round {round}");
        assert!(RxToken::decode_for(&buffer, &connection()).is_err());
    }
}

#[test]
fn both_ends_name_the_same_connection() {
    let sender_qp = connection().requester;
    let receiver_qp = connection().responder;
    let seen_by_sender = ConnectionId::as_requester(sender_qp, receiver_qp);
    let seen_by_receiver = ConnectionId::as_responder(receiver_qp, sender_qp);
    assert_eq!(seen_by_sender, seen_by_receiver);
    assert_eq!(seen_by_sender, connection());
    // Swapping the roles is another connection (the other direction).
    assert!(ConnectionId::as_requester(receiver_qp, sender_qp)
        .check_matches(&connection())
        .is_err());
}
