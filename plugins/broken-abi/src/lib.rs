//! A library that looks like a toolgate plugin from a future toolgate: it exports
//! `toolgate_plugin_entry`, but its table declares ABI version 999. A host must refuse it after
//! reading the version, without touching anything else (which is why this table is nothing but
//! the header: reading further would be a bug the tests would catch).
//!
//! It deliberately does not depend on `toolgate-plugin-api`: it spells the header out the way
//! another toolgate's plugin would.

#![warn(missing_docs)]

/// The first fields of every toolgate plugin table.
#[repr(C)]
pub struct Header {
    /// The ABI version the plugin claims.
    pub abi_version: u32,
    /// The size of the table it claims.
    pub struct_size: u32,
}

/// The ABI version this library claims: one no toolgate speaks.
pub const BROKEN_ABI_VERSION: u32 = 999;

static HEADER: Header = Header {
    abi_version: BROKEN_ABI_VERSION,
    struct_size: core::mem::size_of::<Header>() as u32,
};

/// The toolgate plugin entry point, returning a table of the wrong ABI version.
#[unsafe(no_mangle)]
pub extern "C" fn toolgate_plugin_entry() -> *const Header {
    &raw const HEADER
}
