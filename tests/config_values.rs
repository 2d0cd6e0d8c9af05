//! Parsers and printers of configuration values: every spelling UCX accepts,
//! the garbage it must reject, and UCX's printed forms.

use std::net::Ipv4Addr;
use std::time::Duration;

use uct::core::config::value::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn time_accepts_every_unit() {
    let cases = [
        ("10ms", 0.010),
        ("1.5s", 1.5),
        ("100us", 100e-6),
        ("20ns", 20e-9),
        ("2m", 120.0),
        ("3", 3.0),
        ("0", 0.0),
        ("1e-3s", 1e-3),
        (".5s", 0.5),
        (" 7ms ", 0.007),
        ("0.06ns", 0.06e-9),
    ];
    for (text, seconds) in cases {
        let parsed = parse_time_seconds(text);
        assert!(
            parsed.is_some_and(|p| close(p, seconds)),
            "{text:?} parsed as {parsed:?}, expected {seconds}"
        );
    }
}

#[test]
fn time_rejects_garbage() {
    for text in [
        "", "abc", "10x", "-1s", "-5", "10msx", "ms", "inf", "auto", "1e", "nan", "1..2s", "10 ms",
        "s10", "1e30s", "1e300",
    ] {
        assert_eq!(parse_time_seconds(text), None, "{text:?} must be rejected");
    }
}

#[test]
fn time_units_add_inf_and_auto() {
    assert_eq!(parse_time_units("inf"), Some(TimeUnits::Inf));
    assert_eq!(parse_time_units("auto"), Some(TimeUnits::Auto));
    assert_eq!(
        parse_time_units("10ms"),
        Some(TimeUnits::Time(Duration::from_millis(10)))
    );
    // UCX compares these two case-sensitively.
    assert_eq!(parse_time_units("INF"), None);
    assert_eq!(parse_time_units("-1ms"), None);
    assert_eq!(format_time_units(TimeUnits::Inf), "inf");
    assert_eq!(format_time_units(TimeUnits::Auto), "auto");
}

#[test]
fn time_prints_in_microseconds_like_ucx() {
    assert_eq!(format_time_seconds(1.0), "1000000.00us");
    assert_eq!(format_time_seconds(0.001), "1000.00us");
    assert_eq!(format_time_seconds(16e-6), "16.00us");
    assert_eq!(format_time_seconds(0.0), "0.00us");
    assert_eq!(
        format_time_units(TimeUnits::Time(Duration::from_millis(10))),
        "10000.00us"
    );
}

#[test]
fn memunits_accept_suffixes_in_any_case() {
    let cases = [
        ("8k", 8 << 10),
        ("8K", 8 << 10),
        ("8kb", 8 << 10),
        ("8KB", 8 << 10),
        ("1m", 1 << 20),
        ("1M", 1 << 20),
        ("1g", 1 << 30),
        ("4G", 4 << 30),
        ("1t", 1 << 40),
        ("8b", 8),
        ("8192", 8192),
        ("0", 0),
    ];
    for (text, bytes) in cases {
        assert_eq!(
            parse_memunits(text),
            Some(MemUnits::Bytes(bytes)),
            "{text:?}"
        );
    }
    assert_eq!(parse_memunits("inf"), Some(MemUnits::Inf));
    assert_eq!(parse_memunits("INF"), Some(MemUnits::Inf));
    assert_eq!(parse_memunits("auto"), Some(MemUnits::Auto));
    assert_eq!(parse_memunits("Auto"), Some(MemUnits::Auto));
}

#[test]
fn memunits_reject_garbage_and_overflow() {
    for text in [
        "",
        "k",
        "-8k",
        "8x",
        "1.5k",
        "8kk",
        "8kbb",
        "99999999999999999999",
        "20000000t",
        "18446744073709551615k",
        "eight",
    ] {
        assert_eq!(parse_memunits(text), None, "{text:?} must be rejected");
    }
}

#[test]
fn memunits_print_in_the_largest_exact_unit() {
    assert_eq!(format_memunits(MemUnits::Bytes(8192)), "8K");
    assert_eq!(format_memunits(MemUnits::Bytes(8256)), "8256");
    assert_eq!(format_memunits(MemUnits::Bytes(0)), "0");
    assert_eq!(format_memunits(MemUnits::Bytes(1 << 30)), "1G");
    assert_eq!(format_memunits(MemUnits::Bytes(3 << 40)), "3T");
    assert_eq!(format_memunits(MemUnits::Bytes(1025)), "1025");
    assert_eq!(format_memunits(MemUnits::Inf), "inf");
    assert_eq!(format_memunits(MemUnits::Auto), "auto");
}

#[test]
fn uint_limits_and_inf() {
    assert_eq!(parse_uint("0"), Some(0));
    assert_eq!(parse_uint(" 7 "), Some(7));
    assert_eq!(parse_uint("4294967294"), Some(u32::MAX - 1));
    assert_eq!(parse_uint("4294967295"), Some(u32::MAX));
    assert_eq!(parse_uint("inf"), Some(u32::MAX));
    assert_eq!(parse_uint("-1"), Some(u32::MAX));
    for text in ["4294967296", "-2", "", "12a", "0x10", "1.0", "+", "- 1"] {
        assert_eq!(parse_uint(text), None, "{text:?} must be rejected");
    }
    assert_eq!(format_uint(u32::MAX), "inf");
    assert_eq!(format_uint(256), "256");
}

#[test]
fn ulunits_take_inf_auto_and_64_bit_numbers() {
    assert_eq!(parse_ulunits("auto"), Some(Ulunits::Auto));
    assert_eq!(parse_ulunits("AUTO"), Some(Ulunits::Auto));
    assert_eq!(parse_ulunits("inf"), Some(Ulunits::Inf));
    assert_eq!(
        parse_ulunits("18446744073709551615"),
        Some(Ulunits::Value(u64::MAX))
    );
    for text in ["18446744073709551616", "-1", "", "3x"] {
        assert_eq!(parse_ulunits(text), None, "{text:?} must be rejected");
    }
    assert_eq!(format_ulunits(Ulunits::Value(3)), "3");
    assert_eq!(format_ulunits(Ulunits::Inf), "inf");
    assert_eq!(format_ulunits(Ulunits::Auto), "auto");
}

#[test]
fn bool_spellings_match_ucx() {
    for text in ["y", "Y", "yes", "YES", "on", "1"] {
        assert_eq!(parse_bool(text), Some(true), "{text:?}");
    }
    for text in ["n", "N", "no", "No", "off", "0"] {
        assert_eq!(parse_bool(text), Some(false), "{text:?}");
    }
    // UCX compares on/off/1/0 exactly.
    for text in ["ON", "Off", "", "maybe", "true", "2", "yess"] {
        assert_eq!(parse_bool(text), None, "{text:?} must be rejected");
    }
    assert_eq!(format_bool(true), "y");
    assert_eq!(format_bool(false), "n");
}

#[test]
fn ternary_and_ternary_auto() {
    assert_eq!(parse_ternary("try"), Some(Ternary::Try));
    assert_eq!(parse_ternary("MAYBE"), Some(Ternary::Try));
    assert_eq!(parse_ternary("yes"), Some(Ternary::Yes));
    assert_eq!(parse_ternary("n"), Some(Ternary::No));
    assert_eq!(parse_ternary("auto"), None);
    assert_eq!(parse_ternary_auto("auto"), Some(Ternary::Auto));
    assert_eq!(parse_ternary_auto("try"), Some(Ternary::Try));
    assert_eq!(parse_ternary_auto("bogus"), None);
    assert_eq!(format_ternary(Ternary::Auto), "auto");
    assert_eq!(format_ternary(Ternary::Try), "try");
    assert_eq!(format_ternary(Ternary::Yes), "y");
    assert_eq!(format_ternary(Ternary::No), "n");
}

#[test]
fn enums_match_without_case_and_print_the_table_name() {
    let names = &["none", "weak", "auto"];
    assert_eq!(parse_enum("weak", names), Some(1));
    assert_eq!(parse_enum("WEAK", names), Some(1));
    assert_eq!(parse_enum("strong", names), None);
    assert_eq!(parse_enum("", names), None);
    let kind = Kind::Enum(names);
    assert_eq!(kind.format(&Value::Enum(2)), "auto");
    assert_eq!(kind.syntax(), "[none|weak|auto]");
    assert_eq!(
        Kind::Enum(LOG_LEVEL_NAMES).parse("diag"),
        Some(Value::Enum(3))
    );
}

#[test]
fn doubles_are_finite_numbers() {
    assert_eq!(parse_double("0.25"), Some(0.25));
    assert_eq!(parse_double("-1"), Some(-1.0));
    assert_eq!(parse_double("1e3"), Some(1000.0));
    for text in ["nan", "inf", "", "1.2.3", "0x10", "one", "1e999"] {
        assert_eq!(parse_double(text), None, "{text:?} must be rejected");
    }
    assert_eq!(Kind::Double.format(&Value::Double(0.25)), "0.250");
    assert_eq!(parse_pos_double("auto"), Some(None));
    assert_eq!(parse_pos_double("0"), None);
    assert_eq!(parse_pos_double("2.5"), Some(Some(2.5)));
    assert_eq!(Kind::Fraction.parse("0.5"), Some(Value::Double(0.5)));
    assert_eq!(Kind::Fraction.parse("1"), Some(Value::Double(1.0)));
    assert_eq!(Kind::Fraction.parse("1.5"), None);
    assert_eq!(Kind::Fraction.parse("-0.1"), None);
}

#[test]
fn hex_needs_the_0x_prefix() {
    assert_eq!(parse_hex("0x7fff"), Some(Some(0x7fff)));
    assert_eq!(parse_hex("0XFF"), Some(Some(0xff)));
    assert_eq!(parse_hex("auto"), Some(None));
    for text in ["7fff", "0x", "0xg", "", "0x100000000"] {
        assert_eq!(parse_hex(text), None, "{text:?} must be rejected");
    }
    assert_eq!(Kind::Hex.format(&Value::Hex(Some(0x7fff))), "0x7fff");
    assert_eq!(Kind::Hex.format(&Value::Hex(None)), "auto");
}

#[test]
fn lists_skip_empty_items_and_check_each_element() {
    assert_eq!(
        Kind::StringArray.parse("a,,b,"),
        Some(Value::StrList(vec!["a".into(), "b".into()]))
    );
    assert_eq!(Kind::StringArray.parse(""), Some(Value::StrList(vec![])));
    let alloc = Kind::EnumArray(&["thp", "md", "heap", "mmap", "huge"]);
    let parsed = alloc.parse("thp,MMAP,heap");
    assert_eq!(parsed, Some(Value::EnumList(vec![0, 3, 2])));
    assert_eq!(
        alloc.format(&Value::EnumList(vec![0, 3, 2])),
        "thp,mmap,heap"
    );
    assert_eq!(alloc.parse("thp,bogus"), None);
    assert_eq!(
        alloc.syntax(),
        "comma-separated list of: [thp|md|heap|mmap|huge]"
    );
}

#[test]
fn soft_devices_parse_and_name_the_bad_entry() {
    let devices = parse_soft_devices("mlx5_0@127.0.0.1").expect("default list");
    assert_eq!(
        devices,
        vec![SoftDeviceSpec {
            name: "mlx5_0".into(),
            ipv4: Ipv4Addr::LOCALHOST
        }]
    );
    let devices = parse_soft_devices("mlx5_0@10.0.0.1,mlx5_1@10.0.0.2").expect("two devices");
    assert_eq!(devices.len(), 2);
    assert_eq!(devices[1].ipv4, Ipv4Addr::new(10, 0, 0, 2));

    let bad = [
        ("mlx5_0@127.0.0.1,mlx5_1", "mlx5_1"),
        ("mlx5_0@1.2.3", "1.2.3"),
        ("mlx5_0@256.1.1.1", "256.1.1.1"),
        ("a_very_long_device_name@1.1.1.1", "a_very_long_device_name"),
        ("bad/name@1.1.1.1", "bad/name"),
        ("@1.1.1.1", "@1.1.1.1"),
        ("x@1.1.1.1,x@2.2.2.2", "'x'"),
        ("x@::1", "::1"),
    ];
    for (text, culprit) in bad {
        let error = parse_soft_devices(text).expect_err(text);
        assert!(
            error.contains(culprit),
            "{text:?}: message {error:?} should name {culprit:?}"
        );
    }
    assert!(parse_soft_devices("").is_err());
    assert!(parse_soft_devices(",").is_err());
    let kind = Kind::SoftDevices;
    let value = kind.parse("a@1.2.3.4,b@5.6.7.8").expect("valid list");
    assert_eq!(kind.format(&value), "a@1.2.3.4,b@5.6.7.8");
}

#[test]
fn every_kind_round_trips_through_its_printed_form() {
    let cases: [(Kind, &str); 12] = [
        (Kind::Time, "1.5s"),
        (Kind::TimeUnits, "20ns"),
        (Kind::MemUnits, "8256"),
        (Kind::MemUnits, "4G"),
        (Kind::Uint, "inf"),
        (Kind::Ulunits, "auto"),
        (Kind::Double, "0.25"),
        (Kind::Bool, "yes"),
        (Kind::TernaryAuto, "try"),
        (Kind::Hex, "0x1f"),
        (Kind::StringArray, "a,b"),
        (Kind::SoftDevices, "m@1.2.3.4"),
    ];
    for (kind, text) in cases {
        let value = kind
            .parse(text)
            .unwrap_or_else(|| panic!("{kind:?} {text:?}"));
        let printed = kind.format(&value);
        let reparsed = kind.parse(&printed);
        assert_eq!(
            reparsed.as_ref(),
            Some(&value),
            "{kind:?}: {text:?} printed as {printed:?}"
        );
    }
}

const KEYS: &[(&str, &str)] = &[("bcopy", "b"), ("cqe", "c"), ("db", "d")];

#[test]
fn keyed_times_take_defaults_and_per_key_values() {
    let kind = Kind::KeyedTimes(KEYS);
    let all = kind.parse("bcopy:5ns,cqe:20ns,db:40ns").expect("every key");
    let Value::KeyedTimes(times) = &all else {
        panic!("{all:?}")
    };
    assert!(close(times[0], 5e-9) && close(times[1], 20e-9) && close(times[2], 40e-9));
    assert_eq!(kind.format(&all), "bcopy:0.01us,cqe:0.02us,db:0.04us");

    let mixed = kind.parse("1us,db:40e-9").expect("default plus one key");
    let Value::KeyedTimes(times) = &mixed else {
        panic!("{mixed:?}")
    };
    assert!(close(times[0], 1e-6) && close(times[1], 1e-6) && close(times[2], 40e-9));

    assert_eq!(kind.parse("db:1us"), None, "bcopy and cqe have no value");
    assert_eq!(kind.parse("1us,dma:2us"), None, "unknown key");
    assert_eq!(kind.parse("1us,db:fast"), None, "bad time");
    assert_eq!(kind.parse(""), None);
    assert_eq!(
        kind.syntax(),
        "comma-separated list of value or key:value pairs, where key is one of [bcopy,cqe,db] \
         and value is: time value: <number>[m|s|ms|us|ns]. A value without a key is the default."
    );
    assert_eq!(
        kind.extra_doc(),
        " bcopy     - b\n cqe       - c\n db        - d"
    );
}

#[test]
fn signed_integers_ranges_bitmaps_and_bandwidths() {
    let round_trip = |kind: Kind, text: &str| kind.parse(text).map(|value| kind.format(&value));
    assert_eq!(round_trip(Kind::Int, "-1").as_deref(), Some("-1"));
    assert_eq!(round_trip(Kind::Int, "1024").as_deref(), Some("1024"));
    assert_eq!(round_trip(Kind::Int, "inf"), None);
    assert_eq!(round_trip(Kind::Int, "1k"), None);

    assert_eq!(round_trip(Kind::RangeArray, "0").as_deref(), Some("0"));
    assert_eq!(
        round_trip(Kind::RangeArray, "1,3-5").as_deref(),
        Some("1,3-5")
    );
    assert_eq!(round_trip(Kind::RangeArray, "4-4").as_deref(), Some("4"));
    assert_eq!(round_trip(Kind::RangeArray, "5-3"), None);
    assert_eq!(round_trip(Kind::RangeArray, "a-b"), None);

    const OBJECTS: &[&str] = &["rcqp", "rcsrq", "dct"];
    assert_eq!(
        round_trip(Kind::Bitmap(OBJECTS), "dct,rcqp,dct").as_deref(),
        Some("rcqp,dct"),
        "a set, printed in the names' order"
    );
    assert_eq!(round_trip(Kind::Bitmap(OBJECTS), "dci"), None);

    assert_eq!(parse_bandwidth("auto"), Some(None));
    assert_eq!(
        parse_bandwidth("100MBs"),
        Some(Some(100.0 * 1024.0 * 1024.0))
    );
    assert_eq!(parse_bandwidth("8bps"), Some(Some(1.0)));
    assert_eq!(
        parse_bandwidth("2GB/s"),
        Some(Some(2.0 * 1024.0 * 1024.0 * 1024.0))
    );
    assert_eq!(parse_bandwidth("10Gb"), None, "UCX wants s, ps or /s");
    assert_eq!(parse_bandwidth("fast"), None);
    assert_eq!(
        round_trip(Kind::BandwidthArray, "mlx5_0:10Gbps,mlx5_1:auto").as_deref(),
        Some("mlx5_0:10Gbps,mlx5_1:auto")
    );
    assert_eq!(round_trip(Kind::BandwidthArray, "mlx5_0").as_deref(), None);
    assert_eq!(round_trip(Kind::BandwidthArray, "").as_deref(), Some(""));
}
