//! The checks the fuzz target and the seeded property test run on arbitrary
//! input, kept here so both run exactly the same thing. Not for production
//! use: it asserts (panics) when an invariant of the parser breaks, which is
//! what a fuzzer looks for.

use std::net::{Ipv4Addr, SocketAddrV4};

use super::{IcrcContext, Packet, PacketRepr, ICRC_LEN};

/// The addresses the fuzz inputs are checked against.
pub fn context() -> IcrcContext {
    IcrcContext::new(
        SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 49152),
        SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 2), 4791),
    )
}

/// Feeds `input` to the parser. If the first byte is odd, the rest gets a
/// correct ICRC first, so that random input reaches past the ICRC check.
/// Returns whether the datagram parsed.
pub fn exercise(input: &[u8]) -> bool {
    let ctx = context();
    let Some((&mode, rest)) = input.split_first() else {
        return false;
    };
    let mut datagram = rest.to_vec();
    if mode & 1 == 1 && datagram.len() >= ICRC_LEN {
        let n = datagram.len();
        let icrc = ctx.compute(&datagram[..n - ICRC_LEN]);
        datagram[n - ICRC_LEN..].copy_from_slice(&icrc.to_le_bytes());
    }

    // Every accessor of a checked view must be callable (none can fail),
    // and they agree with each other.
    if let Ok(view) = Packet::new_checked(&datagram[..]) {
        let _ = (
            view.opcode(),
            view.solicited(),
            view.migreq(),
            view.pad_count(),
            view.tver(),
            view.pkey(),
            view.fecn(),
            view.becn(),
            view.dest_qp(),
            view.ack_req(),
            view.psn(),
            view.layout(),
            view.header_len(),
            view.ext_headers(),
            view.payload(),
            view.icrc(),
            view.verify_icrc(&ctx),
        );
        assert_eq!(view.ext_headers().len(), view.layout().ext_len());
        assert_eq!(
            view.header_len() + view.payload().len() + usize::from(view.pad_count()) + ICRC_LEN,
            datagram.len()
        );
        let _ = PacketRepr::parse_unverified(&view);
    }

    let Ok(repr) = PacketRepr::parse(&datagram, &ctx) else {
        return false;
    };
    // What parses re-emits to a datagram of the same length that parses to
    // the same meaning (reserved bits and pad contents are not kept).
    assert!(repr.headers_match_opcode());
    assert_eq!(repr.buffer_len(), datagram.len());
    let mut out = vec![0u8; repr.buffer_len()];
    let written = repr.emit(&mut out, &ctx);
    assert_eq!(written, Ok(datagram.len()));
    let again = PacketRepr::parse(&out, &ctx);
    assert_eq!(again, Ok(repr));
    true
}
