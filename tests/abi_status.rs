//! `Status` <-> `ucs_status_t` conversions.

use ::uct::abi::ucs_status::{result_of, status_of, Status};
use ::uct::abi::{
    UCS_ERR_FIRST_LINK_FAILURE, UCS_ERR_NO_ELEM, UCS_ERR_UNSUPPORTED, UCS_INPROGRESS, UCS_OK,
};

#[test]
fn every_status_round_trips_through_its_c_value() {
    for status in Status::ALL {
        assert_eq!(Status::from_raw(status.raw()), Some(status), "{status}");
    }
}

#[test]
fn ok_and_unnamed_codes_have_no_variant() {
    assert_eq!(Status::from_raw(UCS_OK), None);
    // Inside the reserved link-failure range, but not a named code.
    assert_eq!(Status::from_raw(UCS_ERR_FIRST_LINK_FAILURE), None);
    assert_eq!(Status::from_raw(100), None);
}

#[test]
fn result_conversions_keep_the_code() {
    assert_eq!(result_of(UCS_OK), Ok(()));
    assert_eq!(result_of(UCS_ERR_NO_ELEM), Err(Status::NoElem));
    assert_eq!(result_of(UCS_INPROGRESS), Err(Status::InProgress));
    // An unnamed failure must never read as success.
    assert_eq!(result_of(-45), Err(Status::IoError));
    assert_eq!(status_of(Ok::<u8, Status>(1)), UCS_OK);
    assert_eq!(
        status_of(Err::<u8, Status>(Status::Unsupported)),
        UCS_ERR_UNSUPPORTED
    );
    assert!(Status::NoDevice.is_error());
    assert!(!Status::InProgress.is_error());
}
