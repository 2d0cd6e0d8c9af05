//! Links the stand-in through `link/ld.bfd` (GNU ld behind a wrapper that
//! gives the exported rdma-core symbols their rdma-core versions: the
//! backend resolves them with `dlvsym`). `-B` makes the C compiler driver
//! find the wrapper; `-fuse-ld=bfd` (last one wins) picks it over the
//! `ld.lld` rustc selects by default.
fn main() {
    let link_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("link");
    println!("cargo:rustc-link-arg-cdylib=-B{}/", link_dir.display());
    println!("cargo:rustc-link-arg-cdylib=-fuse-ld=bfd");
    println!("cargo:rerun-if-changed=link/ld.bfd");
}
