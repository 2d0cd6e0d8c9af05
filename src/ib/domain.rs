//! The HCA behind a memory domain: one opened [`Device`] and one [`Pd`] per
//! device name, shared by every md and iface of the process, so that a
//! memory handle registered through `uct_md_mem_reg` carries keys the iface's
//! QPs accept. Also the memory handle (`uct_mem_h`); its packed form is
//! [`crate::ib::rkey`]'s.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use crate::abi::*;
use crate::core::c_boundary::{non_null, ByHandle};
use crate::hca::{Access, Device, Mr, Pd};

/// A device with its protection domain.
pub struct Domain {
    pub device: Device,
    pub pd: Pd,
}

impl Domain {
    /// The domain of device `name`, opening it on first use; it stays open
    /// while any md registration, iface or ep holds it.
    pub fn get(name: &str) -> Result<Arc<Domain>, Status> {
        static DOMAINS: OnceLock<Mutex<HashMap<String, Weak<Domain>>>> = OnceLock::new();
        let mut domains = DOMAINS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(domain) = domains.get(name).and_then(Weak::upgrade) {
            return Ok(domain);
        }
        let device = Device::open(name)?;
        let pd = device.alloc_pd()?;
        let domain = Arc::new(Domain { device, pd });
        domains.insert(name.to_string(), Arc::downgrade(&domain));
        Ok(domain)
    }
}

/// Tag of a live [`MemHandle`].
const MEMH_MAGIC: u64 = 0x7263_5f6d_656d_6821; // "rc_memh!"

/// What a `uct_mem_h` of ours points at: one registration.
pub struct MemHandle {
    magic: u64,
    pub address: usize,
    pub length: usize,
    pub mr: Mr,
    /// Keeps the device and PD alive as long as the registration.
    _domain: Arc<Domain>,
}

impl MemHandle {
    /// Registers `length` bytes at `address` with every access right (UCX
    /// registers for local and remote access alike unless told otherwise).
    pub fn register(
        domain: Arc<Domain>,
        address: *mut u8,
        length: usize,
    ) -> Result<Box<MemHandle>, Status> {
        let mr = domain.pd.reg_mr(address, length, Access::ALL)?;
        Ok(Box::new(MemHandle {
            magic: MEMH_MAGIC,
            address: address as usize,
            length,
            mr,
            _domain: domain,
        }))
    }

    /// Our handle behind `memh`, or `InvalidParam` (NULL, foreign, released).
    ///
    /// # Safety
    /// `memh` must be NULL or a handle from `uct_md_mem_reg` (released ones
    /// are caught as long as their memory was not reused).
    pub unsafe fn from_handle<'a>(memh: uct_mem_h) -> Result<&'a MemHandle, Status> {
        if memh.is_null() {
            return Err(Status::InvalidParam);
        }
        // SAFETY: non-NULL, and by the contract a MemHandle we boxed.
        let handle = unsafe { &*(memh as *const MemHandle) };
        if handle.magic != MEMH_MAGIC {
            return Err(Status::InvalidParam);
        }
        Ok(handle)
    }

    /// Whether `[address, address + length)` lies inside the registration.
    pub fn covers(&self, address: usize, length: usize) -> bool {
        address >= self.address
            && address
                .checked_add(length)
                .is_some_and(|end| end <= self.address + self.length)
    }

    pub fn into_handle(self: Box<Self>) -> uct_mem_h {
        Box::into_raw(self) as uct_mem_h
    }

    /// Deregisters and frees a handle from [`MemHandle::into_handle`].
    ///
    /// # Safety
    /// `memh` must be a live handle from `into_handle`, released only once.
    pub unsafe fn release(memh: uct_mem_h) -> Result<(), Status> {
        // SAFETY: validated like any handle first (the contract), then, a
        // live boxed MemHandle, taken back and freed once.
        let mut owned = unsafe {
            Self::from_handle(memh)?;
            Box::from_raw(memh as *mut MemHandle)
        };
        owned.magic = 0;
        drop(owned);
        Ok(())
    }
}

impl ByHandle for MemHandle {
    type Raw = uct_mem_h;
    /// Relies on: NULL or a handle from `uct_md_mem_reg` (released ones are
    /// caught as long as their memory was not reused).
    unsafe fn lookup<'a>(memh: uct_mem_h, function: &str) -> Result<&'a MemHandle, Status> {
        non_null(memh, function, "memh")?;
        // SAFETY: forwarded contract.
        unsafe { MemHandle::from_handle(memh) }
            .inspect_err(|_| tracing::warn!("{function}: {memh:p} is not a live memory handle"))
    }
}
