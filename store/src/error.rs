//! The one error type of the store crate.

use crate::id::{IdError, ResultId};

/// A boxed error from a backend, kept as the `source` of [`StoreError::Backend`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong when saving or reading a result.
///
/// Each variant has a stable snake_case name, [`StoreError::kind`], for logs, events and the command line.
/// The `Display` texts are written for the model that called `read_tool_result`: what failed and what to
/// do next.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No result is stored under this id (or it is hidden from the caller, see [`crate::read_scoped`]).
    #[error("no stored tool result has the id \"{id}\"; use the id exactly as the notice gave it")]
    NotFound {
        /// The id that was asked for.
        id: ResultId,
    },
    /// A result with this id already exists; saving is create-only.
    #[error("a tool result with the id \"{id}\" already exists and is never overwritten")]
    AlreadyExists {
        /// The id that was taken.
        id: ResultId,
    },
    /// The result belongs to another session (or to none while the caller has one, or the reverse).
    #[error("access denied: the tool result \"{id}\" belongs to a different session")]
    AccessDenied {
        /// The id that was asked for.
        id: ResultId,
    },
    /// A page was asked for past the end of the result.
    #[error(
        "offset {offset} is past the end of tool result \"{id}\", which has {total} characters"
    )]
    OffsetOutOfRange {
        /// The result.
        id: ResultId,
        /// The requested start, in characters.
        offset: u64,
        /// The length of the result, in characters.
        total: u64,
    },
    /// A result id failed its checks.
    #[error("invalid result id: {0}")]
    InvalidId(#[source] IdError),
    /// A session id failed its checks.
    #[error("invalid session id: {0}")]
    InvalidSession(#[source] IdError),
    /// The store answered something that breaks its own rules: a record that does not parse, a page that
    /// does not match the request, a listing that ignores its filter.
    #[error("the result store is inconsistent{}: {what}", id.as_ref().map(|i| format!(" about \"{i}\"")).unwrap_or_default())]
    Corrupt {
        /// The result concerned, when there is one.
        id: Option<ResultId>,
        /// What was wrong.
        what: String,
    },
    /// The backend failed: unreachable, timed out, refused the credentials, ...
    #[error(
        "the result store failed to {op}: {source}; the result store may be unreachable, try again later"
    )]
    Backend {
        /// What the store was doing, e.g. `"save the result data"`.
        op: &'static str,
        /// The backend's own error.
        #[source]
        source: BoxError,
    },
    /// A store URL or option is wrong.
    #[error("bad result store configuration: {0}")]
    Config(String),
}

impl StoreError {
    /// The stable snake_case name of this kind of error.
    ///
    /// ```
    /// use toolgate_store::{ResultId, StoreError};
    /// let err = StoreError::NotFound { id: ResultId::parse("r_1").unwrap() };
    /// assert_eq!(err.kind(), "not_found");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            StoreError::NotFound { .. } => "not_found",
            StoreError::AlreadyExists { .. } => "already_exists",
            StoreError::AccessDenied { .. } => "access_denied",
            StoreError::OffsetOutOfRange { .. } => "offset_out_of_range",
            StoreError::InvalidId(_) => "invalid_id",
            StoreError::InvalidSession(_) => "invalid_session",
            StoreError::Corrupt { .. } => "corrupt",
            StoreError::Backend { .. } => "backend",
            StoreError::Config(_) => "config",
        }
    }

    pub(crate) fn corrupt(id: &ResultId, what: impl Into<String>) -> Self {
        StoreError::Corrupt {
            id: Some(id.clone()),
            what: what.into(),
        }
    }
}

/// A bad id becomes [`StoreError::InvalidId`], a bad session id [`StoreError::InvalidSession`].
impl From<IdError> for StoreError {
    fn from(e: IdError) -> Self {
        let what = match &e {
            IdError::Empty { what }
            | IdError::Blank { what }
            | IdError::SurroundingWhitespace { what, .. }
            | IdError::TooLong { what, .. } => *what,
            IdError::BadChar { .. } => "result id",
        };
        if what == "session id" {
            StoreError::InvalidSession(e)
        } else {
            StoreError::InvalidId(e)
        }
    }
}
