//! The `uct_config_*` C entry points, called as a C program would: NULL and
//! foreign pointers, unknown names, bad values, buffer sizes, printing to a
//! `FILE *`, and environment precedence (in a child process, so that no test
//! changes this process's environment).

use std::ffi::{c_char, c_void, CStr, CString};
use std::process::Command;
use std::ptr::null_mut;
use std::time::Duration;

use uct::abi::ucs_config::{UCS_CONFIG_PRINT_CONFIG, UCS_CONFIG_PRINT_HEADER};
use uct::abi::ucs_status::{
    ucs_status_t, Status, UCS_ERR_INVALID_PARAM, UCS_ERR_NO_DEVICE, UCS_ERR_NO_ELEM, UCS_OK,
};
use uct::abi::uct_def::{uct_component_h, uct_iface_config_t, uct_md_config_t, uct_md_h};
use uct::api::config::*;
use uct::ib::component::IB_COMPONENT;
use uct::ib::config::md_config_from_handle;
use uct::rc::config::iface_config_from_handle;

/// Environment variable telling a re-executed test binary to run the child
/// half of a test.
const CHILD_MARKER: &str = "UCT_CONFIG_CAPI_CHILD";

fn c(text: &str) -> CString {
    CString::new(text).expect("no NUL in test strings")
}

/// A non-NULL md handle: `uct_md_iface_config_read` only checks it for NULL
/// (the transport list does not depend on the md), so no md is opened.
fn some_md() -> uct_md_h {
    std::ptr::NonNull::<u8>::dangling().as_ptr().cast()
}

fn read_md_config(prefix: Option<&str>) -> *mut uct_md_config_t {
    let prefix = prefix.map(c);
    let mut config: *mut uct_md_config_t = null_mut();
    // SAFETY: valid component handle, NUL-terminated strings, valid out pointer.
    let status = unsafe {
        uct_md_config_read(
            IB_COMPONENT.handle(),
            prefix.as_ref().map_or(std::ptr::null(), |p| p.as_ptr()),
            std::ptr::null(),
            &mut config,
        )
    };
    assert_eq!(status, UCS_OK);
    assert!(!config.is_null());
    config
}

fn read_iface_config(prefix: Option<&str>) -> *mut uct_iface_config_t {
    let prefix = prefix.map(c);
    let tl = c("rc_mlx5");
    let mut config: *mut uct_iface_config_t = null_mut();
    // SAFETY: non-NULL md (never dereferenced), valid strings and out pointer.
    let status = unsafe {
        uct_md_iface_config_read(
            some_md(),
            tl.as_ptr(),
            prefix.as_ref().map_or(std::ptr::null(), |p| p.as_ptr()),
            std::ptr::null(),
            &mut config,
        )
    };
    assert_eq!(status, UCS_OK);
    config
}

fn get(config: *mut c_void, name: &str) -> Result<String, ucs_status_t> {
    let name = c(name);
    let mut buffer = [0 as c_char; 128];
    // SAFETY: valid strings; buffer valid for its length.
    let status =
        unsafe { uct_config_get(config, name.as_ptr(), buffer.as_mut_ptr(), buffer.len()) };
    if status != UCS_OK {
        return Err(status);
    }
    // SAFETY: uct_config_get NUL-terminates within the buffer.
    Ok(unsafe { CStr::from_ptr(buffer.as_ptr()) }
        .to_string_lossy()
        .into_owned())
}

fn modify(config: *mut c_void, name: &str, value: &str) -> ucs_status_t {
    let (name, value) = (c(name), c(value));
    // SAFETY: valid strings.
    unsafe { uct_config_modify(config, name.as_ptr(), value.as_ptr()) }
}

fn release(config: *mut c_void) {
    // SAFETY: any pointer is accepted.
    unsafe { uct_config_release(config) };
}

#[test]
fn md_config_read_checks_its_arguments() {
    let mut config: *mut uct_md_config_t = null_mut();
    // SAFETY: deliberately bad arguments; none is dereferenced.
    unsafe {
        assert_eq!(
            uct_md_config_read(null_mut(), std::ptr::null(), std::ptr::null(), &mut config),
            UCS_ERR_INVALID_PARAM
        );
        let foreign = 0x1000usize as uct_component_h;
        assert_eq!(
            uct_md_config_read(foreign, std::ptr::null(), std::ptr::null(), &mut config),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_md_config_read(
                IB_COMPONENT.handle(),
                std::ptr::null(),
                std::ptr::null(),
                null_mut()
            ),
            UCS_ERR_INVALID_PARAM
        );
    }
    assert!(config.is_null(), "nothing written on failure");
}

#[test]
fn iface_config_read_checks_md_and_transport_name() {
    let mut config: *mut uct_iface_config_t = null_mut();
    let rc = c("rc_mlx5");
    let ud = c("ud_mlx5");
    // SAFETY: deliberately bad arguments; md is never dereferenced.
    unsafe {
        let read = |md, tl: *const c_char, out| {
            uct_md_iface_config_read(md, tl, std::ptr::null(), std::ptr::null(), out)
        };
        assert_eq!(
            read(null_mut(), rc.as_ptr(), &mut config),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            read(some_md(), rc.as_ptr(), null_mut()),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(read(some_md(), ud.as_ptr(), &mut config), UCS_ERR_NO_DEVICE);
        assert_eq!(
            read(some_md(), std::ptr::null(), &mut config),
            UCS_ERR_NO_DEVICE
        );
    }
    assert!(config.is_null());
}

#[test]
fn md_config_get_modify_round_trip() {
    let config = read_md_config(None).cast::<c_void>();
    assert_eq!(get(config, "GID_INDEX").as_deref(), Ok("auto"));
    assert_eq!(modify(config, "IB_GID_INDEX", "2"), UCS_OK);
    assert_eq!(get(config, "GID_INDEX").as_deref(), Ok("2"));
    assert_eq!(get(config, "IB_GID_INDEX").as_deref(), Ok("2"));
    // UCX's name of a field of the md table itself is bare (UCX's gtest
    // sets "GID_INDEX"); with the table prefix is ours too.
    assert_eq!(modify(config, "GID_INDEX", "3"), UCS_OK);
    assert_eq!(get(config, "IB_GID_INDEX").as_deref(), Ok("3"));
    assert_eq!(modify(config, "IB_GID_INDEX", "2"), UCS_OK);
    assert_eq!(modify(config, "UNKNOWN_FIELD", "2"), UCS_ERR_NO_ELEM);
    assert_eq!(
        modify(config, "IB_GID_INDEX", "three"),
        UCS_ERR_INVALID_PARAM
    );
    assert_eq!(get(config, "GID_INDEX").as_deref(), Ok("2"));
    let typed = md_config_from_handle(config.cast()).expect("md config");
    assert_eq!(typed.gid_index, uct::core::config::Ulunits::Value(2));
    // An md handle is not an iface configuration.
    assert_eq!(
        iface_config_from_handle(config.cast()).err(),
        Some(Status::InvalidParam)
    );
    release(config);
}

#[test]
fn iface_config_get_modify_and_typed_view() {
    let config = read_iface_config(None).cast::<c_void>();
    assert_eq!(get(config, "RC_RC_IB_TX_QUEUE_LEN").as_deref(), Ok("256"));
    assert_eq!(modify(config, "RC_MLX5_TIMEOUT", "100ms"), UCS_OK);
    assert_eq!(modify(config, "RC_RETRY_COUNT", "4"), UCS_OK);
    assert_eq!(modify(config, "IB_TX_QUEUE_LEN", "512"), UCS_OK);
    assert_eq!(get(config, "RC_RC_TIMEOUT").as_deref(), Ok("100000.00us"));
    assert_eq!(modify(config, "NO_SUCH_VARIABLE", "1"), UCS_ERR_NO_ELEM);
    assert_eq!(modify(config, "RC_TIMEOUT", "never"), UCS_ERR_INVALID_PARAM);
    assert_eq!(get(config, "NO_SUCH_VARIABLE"), Err(UCS_ERR_NO_ELEM));

    let typed = iface_config_from_handle(config.cast()).expect("iface config");
    assert_eq!(typed.timeout, Duration::from_millis(100));
    assert_eq!(typed.retry_count, 4);
    assert_eq!(typed.tx_queue_len, 512);
    assert_eq!(
        md_config_from_handle(config.cast()).err(),
        Some(Status::InvalidParam)
    );
    release(config);
}

#[test]
fn get_respects_the_buffer_size() {
    let config = read_iface_config(None).cast::<c_void>();
    let name = c("RC_RC_IB_TX_QUEUE_LEN");
    let mut buffer = [0x55 as c_char; 8];
    // SAFETY: buffer valid for 3 bytes (we pass max = 3).
    let status = unsafe { uct_config_get(config, name.as_ptr(), buffer.as_mut_ptr(), 3) };
    assert_eq!(status, UCS_OK);
    // SAFETY: NUL-terminated within the first 3 bytes.
    assert_eq!(unsafe { CStr::from_ptr(buffer.as_ptr()) }.to_bytes(), b"25");
    assert_eq!(buffer[3], 0x55, "nothing written past max");
    // SAFETY: max 0 with a NULL buffer is an existence check.
    unsafe {
        assert_eq!(uct_config_get(config, name.as_ptr(), null_mut(), 0), UCS_OK);
        let missing = c("MISSING");
        assert_eq!(
            uct_config_get(config, missing.as_ptr(), null_mut(), 0),
            UCS_ERR_NO_ELEM
        );
        assert_eq!(
            uct_config_get(config, name.as_ptr(), null_mut(), 5),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_config_get(config, std::ptr::null(), buffer.as_mut_ptr(), 8),
            UCS_ERR_INVALID_PARAM
        );
    }
    release(config);
}

#[test]
fn null_and_released_handles_are_rejected() {
    let name = c("IB_GID_INDEX");
    let value = c("1");
    let mut buffer = [0 as c_char; 16];
    // SAFETY: bad handles are only compared, never dereferenced.
    unsafe {
        assert_eq!(
            uct_config_modify(null_mut(), name.as_ptr(), value.as_ptr()),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_config_get(null_mut(), name.as_ptr(), buffer.as_mut_ptr(), 16),
            UCS_ERR_INVALID_PARAM
        );
        let config = read_md_config(None).cast::<c_void>();
        assert_eq!(
            uct_config_modify(config, std::ptr::null(), value.as_ptr()),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_config_modify(config, name.as_ptr(), std::ptr::null()),
            UCS_ERR_INVALID_PARAM
        );
        uct_config_release(config);
        // Released: a second release and any use are refused, not crashes.
        uct_config_release(config);
        uct_config_release(null_mut());
        assert_eq!(
            uct_config_modify(config, name.as_ptr(), value.as_ptr()),
            UCS_ERR_INVALID_PARAM
        );
        let foreign = buffer.as_mut_ptr().cast::<c_void>();
        assert_eq!(
            uct_config_modify(foreign, name.as_ptr(), value.as_ptr()),
            UCS_ERR_INVALID_PARAM
        );
    }
}

#[test]
fn print_writes_ucx_layout_to_the_stream() {
    let config = read_iface_config(None).cast::<c_void>();
    let title = c("rc_mlx5 configuration");
    // SAFETY: tmpfile returns an open FILE* or NULL (checked); all reads stay
    // within `text`'s buffer.
    let text = unsafe {
        let stream = libc::tmpfile();
        assert!(!stream.is_null());
        uct_config_print(
            config,
            stream,
            title.as_ptr(),
            UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_HEADER,
        );
        // NULL arguments are logged and ignored.
        uct_config_print(null_mut(), stream, title.as_ptr(), UCS_CONFIG_PRINT_CONFIG);
        uct_config_print(config, null_mut(), title.as_ptr(), UCS_CONFIG_PRINT_CONFIG);
        let length = libc::ftell(stream);
        assert!(length > 0);
        libc::rewind(stream);
        let mut text = vec![0u8; usize::try_from(length).unwrap()];
        let read = libc::fread(text.as_mut_ptr().cast(), 1, text.len(), stream);
        assert_eq!(read, text.len());
        libc::fclose(stream);
        String::from_utf8(text).unwrap()
    };
    assert!(
        text.starts_with("#\n# rc_mlx5 configuration\n#\n\nUCX_RC_MLX5_"),
        "{text}"
    );
    assert!(text.contains("\nUCX_RC_MLX5_RETRY_COUNT=7\n"));
    release(config);
}

/// Runs the named test of this binary in a child process with `env` added.
fn run_child(test: &str, env: &[(&str, &str)]) -> std::process::Output {
    let exe = std::env::current_exe().expect("test binary path");
    let mut command = Command::new(exe);
    command.args([test, "--exact", "--nocapture", "--test-threads=1"]);
    command.env(CHILD_MARKER, "1");
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().expect("child test runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("1 passed"),
        "the child must have run exactly {test}: {stdout}"
    );
    output
}

#[test]
fn environment_precedence_through_the_c_api() {
    if std::env::var_os(CHILD_MARKER).is_none() {
        let output = run_child(
            "environment_precedence_through_the_c_api",
            &[
                ("UCX_IB_TX_QUEUE_LEN", "100"),
                ("UCX_RC_TX_QUEUE_LEN", "200"),
                ("UCX_RC_TIMEOUT", "10ms"),
                ("UCX_RC_MLX5_TIMEOUT", "20ms"),
                ("MYAPP_UCX_RC_RETRY_COUNT", "2"),
                ("UCX_IB_GID_INDEX", "1"),
                ("MYAPP_UCX_IB_GID_INDEX", "5"),
            ],
        );
        assert!(
            output.status.success(),
            "child failed: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        return;
    }
    let config = read_iface_config(None).cast::<c_void>();
    let typed = iface_config_from_handle(config.cast()).unwrap();
    assert_eq!(typed.tx_queue_len, 200);
    assert_eq!(typed.timeout, Duration::from_millis(20));
    assert_eq!(
        typed.retry_count, 7,
        "MYAPP_ variables need the MYAPP prefix"
    );
    release(config);

    let config = read_iface_config(Some("MYAPP")).cast::<c_void>();
    let typed = iface_config_from_handle(config.cast()).unwrap();
    assert_eq!(typed.retry_count, 2);
    assert_eq!(typed.timeout, Duration::from_millis(20));
    release(config);

    let md = read_md_config(None).cast::<c_void>();
    assert_eq!(get(md, "GID_INDEX").as_deref(), Ok("1"));
    release(md);
    let md = read_md_config(Some("MYAPP")).cast::<c_void>();
    assert_eq!(get(md, "GID_INDEX").as_deref(), Ok("5"));
    release(md);
}

#[test]
fn bad_environment_value_fails_the_c_read() {
    if std::env::var_os(CHILD_MARKER).is_none() {
        let output = run_child(
            "bad_environment_value_fails_the_c_read",
            &[("UCX_RC_MLX5_TIMEOUT", "soon"), ("UCX_IB_GID_INDEX", "x")],
        );
        assert!(
            output.status.success(),
            "child failed: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        let log = String::from_utf8_lossy(&output.stderr);
        assert!(
            log.contains("Invalid value for UCX_RC_MLX5_TIMEOUT: 'soon'. Expected: time value"),
            "{log}"
        );
        return;
    }
    let tl = c("rc_mlx5");
    let mut iface: *mut uct_iface_config_t = null_mut();
    let mut md: *mut uct_md_config_t = null_mut();
    // SAFETY: valid arguments; md is never dereferenced.
    unsafe {
        let status = uct_md_iface_config_read(
            some_md(),
            tl.as_ptr(),
            std::ptr::null(),
            std::ptr::null(),
            &mut iface,
        );
        assert_eq!(status, UCS_ERR_INVALID_PARAM);
        let status = uct_md_config_read(
            IB_COMPONENT.handle(),
            std::ptr::null(),
            std::ptr::null(),
            &mut md,
        );
        assert_eq!(status, UCS_ERR_INVALID_PARAM);
    }
    assert!(iface.is_null() && md.is_null());
}
