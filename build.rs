//! Gives the shared object UCX's soname so it can stand in for `libuct.so.0`.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libuct.so.0");
    println!("cargo:rerun-if-changed=build.rs");
}
