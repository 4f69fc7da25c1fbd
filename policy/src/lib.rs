//! toolgate policy files.

pub mod model;
pub use model::*;
