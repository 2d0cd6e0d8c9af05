//! `ucs/datastruct/linear_func.h`: a cost model `c + m * x`.

/// A linear function of a size: constant part `c`, slope `m`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ucs_linear_func {
    pub c: f64,
    pub m: f64,
}
pub type ucs_linear_func_t = ucs_linear_func;
