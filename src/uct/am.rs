//! The active-message handler table of an iface and its dispatch, with the
//! rules of `uct_iface_set_am_handler`:
//!
//! - an id at or above `UCT_AM_ID_MAX` is refused (`UCS_ERR_INVALID_PARAM`);
//! - a NULL callback puts back the default handler, which drops the message
//!   with a warning and answers `UCS_OK` (so the transport releases its
//!   buffer);
//! - the reserved flag `UCT_CB_FLAG_RESERVED` is refused, and so is a
//!   synchronous handler (no `UCT_CB_FLAG_ASYNC`) on an iface that does not
//!   advertise `UCT_IFACE_FLAG_CB_SYNC`: it could be called from another
//!   thread than the one that asked;
//! - the AM tracer (`uct_iface_set_am_tracer`) is kept beside the handlers.

use std::ffi::{c_uint, c_void};

use crate::abi::*;

/// One active-message handler slot.
#[derive(Clone, Copy, Debug)]
pub struct AmHandler {
    pub cb: uct_am_callback_t,
    pub arg: *mut c_void,
    /// `UCT_CB_FLAG_*` given at registration.
    pub flags: u32,
}

/// The handler of an id nobody registered: the message is dropped with a
/// warning (its argument is the id), `UCS_OK` so that the transport
/// releases the buffer.
unsafe extern "C" fn default_am_handler(
    arg: *mut c_void,
    _data: *mut c_void,
    length: usize,
    _flags: c_uint,
) -> ucs_status_t {
    let id = arg as usize;
    tracing::warn!("active message id {id} ({length} bytes) dropped: no handler is set");
    UCS_OK
}

impl AmHandler {
    fn default_for(id: u8) -> AmHandler {
        AmHandler {
            cb: Some(default_am_handler),
            arg: usize::from(id) as *mut c_void,
            flags: UCT_CB_FLAG_ASYNC,
        }
    }

    /// Delivers an active message to this handler and returns its answer
    /// (`UCS_INPROGRESS`: the handler keeps the descriptor). A copy of the
    /// table's entry, so that no borrow of the iface is held while the
    /// user's code runs.
    ///
    /// # Safety
    /// `data` must be valid for `length` bytes for the duration of the call
    /// (and beyond, if the handler keeps it with `UCT_CB_PARAM_FLAG_DESC`).
    pub unsafe fn call(self, data: *mut c_void, length: usize, flags: c_uint) -> ucs_status_t {
        match self.cb {
            // SAFETY: a handler the user registered with this argument, or
            // the default one; `data` is valid per the contract.
            Some(cb) => unsafe { cb(self.arg, data, length, flags) },
            None => UCS_OK,
        }
    }
}

/// The handlers of every AM id, and the tracer.
pub struct AmTable {
    handlers: [AmHandler; UCT_AM_ID_MAX as usize],
    tracer: uct_am_tracer_t,
    tracer_arg: *mut c_void,
    /// `UCT_IFACE_FLAG_CB_SYNC` and `_ASYNC` as the iface advertises them.
    callback_caps: u64,
}

impl AmTable {
    /// A table of default handlers for an iface whose capability flags
    /// include `callback_caps` (its `UCT_IFACE_FLAG_CB_*` bits).
    pub fn new(callback_caps: u64) -> AmTable {
        AmTable {
            handlers: std::array::from_fn(|id| AmHandler::default_for(id as u8)),
            tracer: None,
            tracer_arg: std::ptr::null_mut(),
            callback_caps: callback_caps & (UCT_IFACE_FLAG_CB_SYNC | UCT_IFACE_FLAG_CB_ASYNC),
        }
    }

    /// Sets (with `cb == None`, resets to the default) the handler of AM
    /// `id`, as the module docs say.
    pub fn set_handler(
        &mut self,
        id: u8,
        cb: uct_am_callback_t,
        arg: *mut c_void,
        flags: u32,
    ) -> Result<(), Status> {
        const F: &str = "uct_iface_set_am_handler";
        let Some(slot) = self.handlers.get_mut(usize::from(id)) else {
            tracing::error!("{F}: active message id {id} is not below {UCT_AM_ID_MAX}");
            return Err(Status::InvalidParam);
        };
        if cb.is_none() {
            *slot = AmHandler::default_for(id);
            return Ok(());
        }
        if flags & UCT_CB_FLAG_RESERVED != 0 {
            tracing::error!("{F}: callback flag 0x{UCT_CB_FLAG_RESERVED:x} is reserved");
            return Err(Status::InvalidParam);
        }
        if flags & UCT_CB_FLAG_ASYNC == 0 && self.callback_caps & UCT_IFACE_FLAG_CB_SYNC == 0 {
            tracing::error!("{F}: a synchronous callback is not supported by this iface");
            return Err(Status::InvalidParam);
        }
        *slot = AmHandler { cb, arg, flags };
        Ok(())
    }

    /// The handler of AM `id` (the default one where none is set or the id
    /// is out of range).
    pub fn handler(&self, id: u8) -> AmHandler {
        self.handlers
            .get(usize::from(id))
            .copied()
            .unwrap_or_else(|| AmHandler::default_for(id))
    }

    pub fn set_tracer(&mut self, tracer: uct_am_tracer_t, arg: *mut c_void) {
        self.tracer = tracer;
        self.tracer_arg = arg;
    }

    pub fn tracer(&self) -> (uct_am_tracer_t, *mut c_void) {
        (self.tracer, self.tracer_arg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn adds_length(
        arg: *mut c_void,
        _data: *mut c_void,
        length: usize,
        _flags: c_uint,
    ) -> ucs_status_t {
        // SAFETY: the test registers a live counter.
        unsafe { *(arg as *mut usize) += length };
        UCS_OK
    }

    #[test]
    fn handlers_follow_set_am_handler_rules() {
        let mut count = 0usize;
        let arg = (&mut count as *mut usize).cast();
        let mut table = AmTable::new(UCT_IFACE_FLAG_CB_SYNC);
        assert_eq!(table.set_handler(5, Some(adds_length), arg, 0), Ok(()));
        assert_eq!(
            table.set_handler(UCT_AM_ID_MAX as u8, Some(adds_length), arg, 0),
            Err(Status::InvalidParam)
        );
        assert_eq!(
            table.set_handler(6, Some(adds_length), arg, UCT_CB_FLAG_RESERVED),
            Err(Status::InvalidParam)
        );
        let mut payload = [0u8; 7];
        let data = payload.as_mut_ptr().cast();
        // SAFETY: `data` holds the 7 bytes the handler is told of.
        let invoke = |table: &AmTable, id| unsafe { table.handler(id).call(data, 7, 0) };
        assert_eq!(invoke(&table, 5), UCS_OK);
        // No handler for 6: the default drops it, UCS_OK.
        assert_eq!(invoke(&table, 6), UCS_OK);
        assert_eq!(count, 7);
        // NULL puts the default back.
        assert_eq!(table.set_handler(5, None, std::ptr::null_mut(), 0), Ok(()));
        assert_eq!(invoke(&table, 5), UCS_OK);
        assert_eq!(count, 7);
    }

    #[test]
    fn a_synchronous_handler_needs_cb_sync() {
        let mut table = AmTable::new(UCT_IFACE_FLAG_CB_ASYNC);
        let arg = std::ptr::null_mut();
        assert_eq!(
            table.set_handler(1, Some(adds_length), arg, 0),
            Err(Status::InvalidParam)
        );
        assert_eq!(
            table.set_handler(1, Some(adds_length), arg, UCT_CB_FLAG_ASYNC),
            Ok(())
        );
        assert_eq!(table.handler(1).flags, UCT_CB_FLAG_ASYNC);
    }
}
