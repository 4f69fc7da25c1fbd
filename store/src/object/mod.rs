//! [`ObjectResultStore`]: the [`ResultStore`](crate::ResultStore) over any `object_store` backend.
//!
//! # Layout
//!
//! Under the store's prefix `P`, one result `ID` is made of three objects:
//!
//! | key | content | written |
//! |---|---|---|
//! | `P/data/ID/NONCE` | the UTF-8 bytes of the result, byte for byte, followed by the character index | first |
//! | `P/owner/none/ID` or `P/owner/s/HEX.../ids/ID` | nothing: a marker that lists the result under its owner | second |
//! | `P/meta/ID` | the JSON record: [`ResultMeta`](crate::ResultMeta) plus `NONCE` and the index stride | last, create-only |
//!
//! The record is the *commit point*. It is written with [`PutMode::Create`](object_store::PutMode::Create), so two saves of one id
//! cannot both win, and only after everything it points to is in place, so a reader that finds a record
//! finds a whole result, and a reader that finds none reports [`StoreError::NotFound`](crate::StoreError::NotFound). A save that dies
//! half-way leaves a data object or a marker with no record: garbage that [`ResultStore::prune`](crate::ResultStore::prune) removes.
//! On local disk (`file://`), a save killed while the backend writes an object leaves the file the backend
//! stages it in, `KEY#N`, which the backend's listing never shows; `prune` looks for those in the store's
//! directory and removes the ones last written before its cutoff. The random `NONCE` means a losing
//! duplicate save never overwrites the winner's data.
//!
//! A record that cannot be read (it does not parse, describes another id or impossible sizes, names
//! its data with a name the store never draws, or, on local disk, is a link leading outside the
//! store's directory) makes
//! its result unreadable, but never the store: listings skip it and report it ([`ResultStore::listing`](crate::ResultStore::listing)),
//! and `delete` of its id, `delete_session` of the session whose marker lists it, and `prune` (by the age
//! of the record object) remove the record, the data and the marker. A data object shorter than its
//! record says is [`Corruption::DataSize`](crate::Corruption::DataSize) when a page is read, not a backend failure.
//!
//! Markers let a session's results be listed and deleted without looking at any other session's
//! objects; the session id is hex-encoded into the key ([`SessionId::key_segments`](crate::SessionId::key_segments)), so no session id
//! can reach outside its directory.
//!
//! # Paging in time proportional to the page
//!
//! The character index is a list of little-endian `u64`: entry `j` is the byte offset of character
//! `j * stride` (for every `j * stride <= chars`). To read characters `a..b`, the store reads the index
//! entries around `a` and `b` (one small range read) and then only the bytes between them (a second range
//! read): at most `(b - a + 2 * stride) * 4` bytes, whatever the size of the result.
//!
//! # Files
//!
//! - `layout.rs`: [`ObjectResultStore`] itself, the keys above, and reading records and markers;
//! - `open.rs`: building a store from a backend or a URL; `s3.rs` the `s3://` options (feature `s3`);
//! - `index.rs`: the character index;
//! - `result_store.rs`: the [`ResultStore`](crate::ResultStore) operations, with `delete.rs` and `prune.rs` for removal.

mod delete;
mod index;
mod layout;
mod open;
mod prune;
mod result_store;
#[cfg(feature = "s3")]
mod s3;

pub use index::INDEX_STRIDE_CHARS;
pub use layout::ObjectResultStore;
