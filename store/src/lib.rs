//! Large tool results, kept whole in any `object_store` backend and read back a page at a time.
//!
//! When a tool answers with more text than a model should see at once, toolgate saves the whole answer
//! here under a fresh, unguessable [`ResultId`], shows the model a preview, and lets it page through the
//! rest with `read_tool_result` (SPEC R1-R4, R7-R9). This crate is that storage, and knows nothing of
//! tools or models.
//!
//! - [`ResultStore`] is the small trait the engine talks to.
//! - [`ObjectResultStore`] implements it over memory, local disk, S3 or any other
//!   [`object_store::ObjectStore`], chosen by URL; see its docs for the layout that makes saves
//!   all-or-nothing across crashes and pages cheap in 100 MB results.
//!
//! # Cargo features
//!
//! - `s3` (off by default): the `s3://` backend. It brings about 190 crates (an HTTP client, and a
//!   TLS library built from C); without it an `s3://` URL fails with [`ConfigError::S3NotBuilt`].
//! - [`Validated`] wraps any store, custom ones included, and checks its answers.
//! - [`read_scoped`] enforces who may read what (SPEC R4).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use toolgate_store::{NewResult, ObjectResultStore, ResultStore, SessionId};
//!
//! let store = ObjectResultStore::from_url("memory://")?;
//! let session = SessionId::parse("chat-1")?;
//! let meta = store.save(NewResult::new(Some(session)), "Grüße aus Köln").await?;
//! assert_eq!((meta.bytes, meta.chars), (17, 14));
//!
//! let page = store.read_chars(&meta.id, 6, 3).await?;
//! assert_eq!(page.text, "aus");
//! assert_eq!(page.next_offset(), Some(9));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod error;
mod id;
mod object;
mod session;
mod staging;
mod store;
mod types;
mod validated;

pub use error::{BoxError, ConfigError, Corruption, StoreError};
pub use id::{IdError, IdKind, MAX_RESULT_ID_BYTES, MAX_SESSION_ID_BYTES, ResultId, SessionId};
pub use object::{INDEX_STRIDE_CHARS, ObjectResultStore};
pub use session::{MCP_SESSIONS, ObjectSessionStore, SessionState, SessionStore};
pub use store::{ForeignResult, ResultStore, read_scoped};
pub use types::{
    DEFAULT_CONTENT_TYPE, ListFilter, Listing, NewResult, Page, PruneReport, ResultMeta, Scope,
    Unreadable,
};
pub use validated::Validated;
