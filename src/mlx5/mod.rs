//! mlx5 formats shared by the datapath and the soft HCA (pure, no I/O).

pub(crate) mod endian;
