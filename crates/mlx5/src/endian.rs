//! Big-endian field access at byte offsets, shared by the mlx5 formats and
//! the soft HCA wire format.
//!
//! These index the slice directly: callers check the length once (for a whole
//! segment or header) and then read fixed offsets inside it, so a panic here
//! is a bug in that length check, never a property of the input.

#[inline(always)]
pub fn get_u16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// A 24-bit big-endian field.
#[inline(always)]
pub fn get_u24(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([0, b[at], b[at + 1], b[at + 2]])
}

#[inline(always)]
pub fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[inline(always)]
pub fn get_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

#[inline(always)]
pub fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// Writes the low 24 bits of `v`.
#[inline(always)]
pub fn put_u24(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 3].copy_from_slice(&v.to_be_bytes()[1..]);
}

#[inline(always)]
pub fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

#[inline(always)]
pub fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_be_bytes());
}

/// An unsigned integer read and written big-endian at a byte offset, so a
/// field list can name its type once and get both directions from it.
pub trait BigEndianField: Sized {
    fn get_be(b: &[u8], at: usize) -> Self;
    fn put_be(self, b: &mut [u8], at: usize);
}

macro_rules! big_endian_field {
    ($($ty:ident: $get:ident, $put:ident;)+) => {
        $(impl BigEndianField for $ty {
            #[inline(always)]
            fn get_be(b: &[u8], at: usize) -> $ty {
                $get(b, at)
            }
            #[inline(always)]
            fn put_be(self, b: &mut [u8], at: usize) {
                $put(b, at, self)
            }
        })+
    };
}

big_endian_field! {
    u16: get_u16, put_u16;
    u32: get_u32, put_u32;
    u64: get_u64, put_u64;
}

/// Declares a plain value type whose fields are big-endian integers at fixed
/// byte offsets (an mlx5 segment, a wire header), with `LEN` and `read` /
/// `write` generated from the one `field: type @ offset` list, so the two
/// directions cannot disagree. `read` and `write` index the slice directly:
/// the caller checks that it holds `LEN` bytes (a `&Seg` always does).
/// Words listed after `reserved:` are written as zero and never read; other
/// bytes no field covers are left as they are.
#[macro_export]
macro_rules! big_endian_fields {
    (
        $(#[$meta:meta])*
        pub struct $name:ident [$len:expr] {
            $($(#[$field_meta:meta])* pub $field:ident: $ty:ident @ $at:expr,)+
        }
        $(reserved: $($reserved_ty:ident @ $reserved_at:expr),+)?
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
        pub struct $name {
            $($(#[$field_meta])* pub $field: $ty,)+
        }

        impl $name {
            pub const LEN: usize = $len;

            #[inline(always)]
            pub fn read(b: &[u8]) -> $name {
                use $crate::endian::BigEndianField;
                $name {
                    $($field: $ty::get_be(b, $at),)+
                }
            }

            #[inline(always)]
            pub fn write(&self, b: &mut [u8]) {
                use $crate::endian::BigEndianField;
                $(self.$field.put_be(b, $at);)+
                $($((0 as $reserved_ty).put_be(b, $reserved_at);)+)?
            }
        }
    };
}
pub use big_endian_fields;
