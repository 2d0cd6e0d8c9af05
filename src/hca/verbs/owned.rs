//! The owners of rdma-core objects: [`Owned`] holds one object this process
//! made and destroys it once, on drop; [`DeviceList`] holds rdma-core's
//! device list and frees it. They are what hands out [`Live`] references,
//! so a typed entry point of [`ffi`] only ever sees objects that are alive.

use std::ffi::{c_int, CStr};
use std::ptr::NonNull;

use super::ffi::{self, Created, Live, Verbs};

/// A kind of rdma-core object and the call that destroys it.
pub trait Destroy {
    /// The libibverbs call, for the log line of a failed destroy.
    const CALL: &'static str;
    fn destroy_fn(verbs: &Verbs) -> unsafe extern "C" fn(*mut Self) -> c_int;
}

/// Pairs an object type with its destroy call.
macro_rules! destroyed_by {
    ($($object:ident: $field:ident = $call:literal;)+) => {$(
        impl Destroy for ffi::$object {
            const CALL: &'static str = $call;
            fn destroy_fn(verbs: &Verbs) -> unsafe extern "C" fn(*mut Self) -> c_int {
                verbs.ibv.$field
            }
        }
    )+};
}

destroyed_by! {
    ibv_context: close_device = "ibv_close_device";
    ibv_pd: dealloc_pd = "ibv_dealloc_pd";
    ibv_mr: dereg_mr = "ibv_dereg_mr";
    ibv_comp_channel: destroy_comp_channel = "ibv_destroy_comp_channel";
    ibv_cq: destroy_cq = "ibv_destroy_cq";
    ibv_srq: destroy_srq = "ibv_destroy_srq";
    ibv_qp: destroy_qp = "ibv_destroy_qp";
}

/// A libibverbs object this process made and owns, destroyed once, when
/// this is dropped. Its holder declares it as its first field, so it goes
/// before the `Arc`s of the objects it was made from, and every object
/// made from it holds an `Arc` of that holder, so none is alive any more by
/// then.
pub struct Owned<T: Destroy> {
    raw: NonNull<T>,
    /// `T`'s destroy call (the libraries are never unloaded).
    destroy: unsafe extern "C" fn(*mut T) -> c_int,
    /// What the object is (device name, QP number), for the log line of a
    /// failed destroy.
    label: String,
}

// SAFETY: verbs contexts and the objects made from them may be used from
// any thread (libibverbs locks internally on the control path, and its
// completion-channel calls are thread-safe); the pointer is only handed to
// libibverbs.
unsafe impl<T: Destroy> Send for Owned<T> {}
// SAFETY: as above; no Rust-side state is mutated through a shared owner.
unsafe impl<T: Destroy> Sync for Owned<T> {}

impl<T: Destroy> Owned<T> {
    /// Takes over a fresh object.
    pub fn new(verbs: &Verbs, created: Created<T>, label: impl Into<String>) -> Self {
        Owned {
            raw: created.into_raw(),
            destroy: T::destroy_fn(verbs),
            label: label.into(),
        }
    }

    /// The object, for the typed entry points; alive while `self` is.
    pub fn live(&self) -> &Live<T> {
        // SAFETY: `raw` is non-NULL and the object stays alive until `self`
        // is dropped, which the borrow outlasts; `Live` is zero-sized and
        // has alignment 1, so the reference claims no bytes of the object.
        unsafe { self.raw.cast::<Live<T>>().as_ref() }
    }
}

impl<T: Destroy> Drop for Owned<T> {
    fn drop(&mut self) {
        // SAFETY: `raw` is a live object of type `T` that this owner took
        // fresh (`Created`) and destroys only here, with its type's destroy
        // call; nothing made from it is left (see the type's doc).
        let rc = unsafe { (self.destroy)(self.raw.as_ptr()) };
        if rc != 0 {
            tracing::warn!(
                "verbs: {}({}) failed: {}",
                T::CALL,
                self.label,
                std::io::Error::last_os_error()
            );
        }
    }
}

/// rdma-core's list of RDMA devices, freed on drop (devices opened from it
/// stay usable: rdma-core keeps them referenced).
pub struct DeviceList<'v> {
    verbs: &'v Verbs,
    list: NonNull<*mut ffi::ibv_device>,
    count: usize,
}

impl<'v> DeviceList<'v> {
    /// The list, or the error of `ibv_get_device_list` (no devices, no
    /// kernel support).
    pub fn get(verbs: &'v Verbs) -> Result<DeviceList<'v>, std::io::Error> {
        let mut count: c_int = 0;
        let list = (verbs.ibv.get_device_list)(&mut count);
        let list = NonNull::new(list).ok_or_else(std::io::Error::last_os_error)?;
        Ok(DeviceList {
            verbs,
            list,
            count: usize::try_from(count).unwrap_or(0),
        })
    }

    /// Entries of the list (it may end early with a NULL).
    pub fn count(&self) -> usize {
        self.count
    }

    /// The devices, alive while the list is.
    pub fn devices(&self) -> impl Iterator<Item = &Live<ffi::ibv_device>> {
        // SAFETY: the list holds `count` device pointers followed by a
        // NULL, and stays allocated until `self` is dropped; a nullable
        // device pointer has the layout of `Option<&Live<_>>` (`Live` is
        // zero-sized with alignment 1), and each device lives while the list
        // does.
        let entries = unsafe {
            std::slice::from_raw_parts(
                self.list.as_ptr().cast::<Option<&Live<ffi::ibv_device>>>(),
                self.count,
            )
        };
        entries.iter().map_while(|device| *device)
    }

    /// The kernel name of `device` (`None` if the library gives none).
    pub fn name(&self, device: &Live<ffi::ibv_device>) -> Option<String> {
        let name = (self.verbs.ibv.get_device_name)(device);
        // SAFETY: a non-NULL device name is a NUL-terminated string owned
        // by the device, alive while the list is; it is copied here.
        (!name.is_null()).then(|| {
            unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned()
        })
    }
}

impl Drop for DeviceList<'_> {
    fn drop(&mut self) {
        // SAFETY: `list` came from ibv_get_device_list and is freed once;
        // the `Live` device references handed out borrow `self`, so none is
        // left.
        unsafe { (self.verbs.ibv.free_device_list)(self.list.as_ptr()) };
    }
}
