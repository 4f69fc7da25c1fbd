//! The error type of the store crate, and the configuration errors it wraps.

use std::path::PathBuf;

use crate::id::{IdError, IdKind, ResultId, SessionId};

/// A boxed error from a backend, kept as the cause in [`StoreError::Backend`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong when saving or reading a result.
///
/// Each variant has a stable snake_case name, [`StoreError::kind`], for logs, events and the command line.
/// The texts are written for the model that called `read_tool_result`: what failed and what to do
/// next. A cause is either in the message or in `source()`, never both. A variant with a typed cause
/// of this workspace or a plain one ([`IdError`], [`ConfigError`], [`Corruption`], a JSON, URL or
/// I/O error) says only what its own layer knows and returns the cause from `source()`: show such
/// an error with its chain of sources (`toolgate::error::Chain`), which reads as one sentence
/// (`invalid result id: the result id is empty`). A variant whose cause is an `object_store` error
/// ([`StoreError::Backend`], and some [`ConfigError`]s) says the cause in its text and returns no
/// source, because `object_store`'s errors repeat their own sources in their texts.
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
    #[error("invalid result id")]
    InvalidId(#[source] IdError),
    /// A session id failed its checks.
    #[error("invalid session id")]
    InvalidSession(#[source] IdError),
    /// The store answered something that breaks its own rules: a record that does not parse, a page that
    /// does not match the request, a listing that ignores its filter.
    #[error("the result store is inconsistent{}", id.as_ref().map(|i| format!(" about \"{i}\"")).unwrap_or_default())]
    Corrupt {
        /// The result concerned, when there is one.
        id: Option<ResultId>,
        /// What was wrong.
        #[source]
        what: Corruption,
    },
    /// The backend failed: unreachable, timed out, refused the credentials, ...
    #[error(
        "the result store failed to {op}: {error}; the result store may be unreachable, try again later"
    )]
    Backend {
        /// What the store was doing, e.g. `"save the result data"`.
        op: &'static str,
        /// The backend's own error, in the text and not returned by `source()` (an
        /// `object_store` error repeats its own causes in its text).
        error: BoxError,
    },
    /// A store URL or option is wrong.
    #[error("bad result store configuration")]
    Config(#[source] ConfigError),
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

    pub(crate) fn corrupt(id: &ResultId, what: Corruption) -> Self {
        StoreError::Corrupt {
            id: Some(id.clone()),
            what,
        }
    }
}

/// What was wrong in a [`StoreError::Corrupt`]: the store's own rules that an answer broke.
///
/// The backend's files were changed behind the store's back (by hand, by another program, by a
/// disk fault), or a [`crate::ResultStore`] implementation answered something impossible, which
/// [`crate::Validated`] catches. Each variant says which rule; its text completes the sentence
/// "the result store is inconsistent: ...".
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Corruption {
    /// A result's record is not the JSON the store writes.
    #[error("the record does not parse")]
    RecordUnparsable {
        /// The parser's error.
        #[source]
        error: serde_json::Error,
    },
    /// A result's record has a version this build does not read.
    #[error("unknown record version {found}")]
    RecordVersion {
        /// The version found.
        found: u32,
    },
    /// The record stored under one id describes another.
    #[error("the record is for {:?}", found.as_str())]
    RecordForAnother {
        /// The id the record names.
        found: ResultId,
    },
    /// The record's sizes cannot be true (more characters than bytes, a zero index stride).
    #[error("the record's sizes are impossible")]
    ImpossibleSizes,
    /// The character index ends before the entry a page needs.
    #[error("the character index is short")]
    IndexShort,
    /// The character index points past the data, or backwards.
    #[error("the character index points outside the data")]
    IndexOutsideData,
    /// The character index cuts a UTF-8 character in two.
    #[error("the character index does not fall on character boundaries")]
    IndexOffBoundary,
    /// The data ends before the characters its record counts.
    #[error("the data holds fewer characters than the record says")]
    DataShort,
    /// The data object is not as long as its record says (cut short, or the record's sizes
    /// are wrong): a read past its end was refused.
    #[error("the data is {found} bytes, and its record says {expected}")]
    DataSize {
        /// The length the record implies: the result's bytes and its character index.
        expected: u64,
        /// The data object's length.
        found: u64,
    },
    /// The record names its data with a name the store never writes.
    #[error("the record names its data {name:?}, not a name the store writes")]
    DataName {
        /// The name in the record.
        name: String,
    },
    /// On local disk, the record or the data is a link (or lies under one) to a file outside
    /// the store's directory.
    #[error("{} leads outside the store's directory, to {}", .object.display(), .target.display())]
    OutsideStore {
        /// The file in the store.
        object: std::path::PathBuf,
        /// Where it leads.
        target: std::path::PathBuf,
    },
    /// The store answered with the metadata of another result.
    #[error("the store answered with the metadata of {:?}", found.as_str())]
    MetaForAnother {
        /// The id of the metadata received.
        found: ResultId,
    },
    /// Metadata counting more characters than bytes.
    #[error("{chars} characters cannot fit in {bytes} bytes")]
    MoreCharsThanBytes {
        /// The characters counted.
        chars: u64,
        /// The bytes counted.
        bytes: u64,
    },
    /// A save answered with metadata that differs from what was saved.
    #[error("the saved result reports another {field}")]
    SavedMetaDiffers {
        /// Which field differs: `session`, `tool`, `content type` or `size`.
        field: &'static str,
    },
    /// A page was returned for an offset past the end, which must be refused.
    #[error("a page at offset {offset} of {total} characters should have been refused")]
    PageShouldBeRefused {
        /// The offset asked for.
        offset: u64,
        /// The result's length in characters.
        total: u64,
    },
    /// A page covers other characters than those asked for.
    #[error("asked for characters {offset}..{end} of {total}, got {got_offset}..{got_end}")]
    PageOutOfPlace {
        /// The first character asked for.
        offset: u64,
        /// The end the page should have.
        end: u64,
        /// The result's length in characters.
        total: u64,
        /// The page's first character.
        got_offset: u64,
        /// The page's end.
        got_end: u64,
    },
    /// A page's text does not hold as many characters as its bounds say.
    #[error("the page {offset}..{end} holds {got} characters")]
    PageLength {
        /// The page's first character.
        offset: u64,
        /// The page's end.
        end: u64,
        /// The characters it holds.
        got: u64,
    },
    /// A listing holds a result its filter excludes.
    #[error("the listing holds a result its filter excludes")]
    ListingOutsideFilter,
    /// A listing holds the same result twice.
    #[error("the listing holds this result twice")]
    ListingDuplicate,
    /// A listing is not sorted newest first.
    #[error("the listing is not newest first")]
    ListingOrder,
    /// A session's saved state is not the JSON the store writes.
    #[error("the state of session {:?} does not parse", session.as_str())]
    SessionUnparsable {
        /// The session.
        session: SessionId,
        /// The parser's error.
        #[source]
        error: serde_json::Error,
    },
    /// The state stored under one session is of another version or another session.
    #[error(
        "the state stored for session {:?} is a version {version} record of session {:?}",
        session.as_str(),
        found.as_str()
    )]
    SessionRecordMismatch {
        /// The session asked for.
        session: SessionId,
        /// The record's version.
        version: u32,
        /// The session the record names.
        found: SessionId,
    },
}

/// A bad id becomes [`StoreError::InvalidId`], a bad session id [`StoreError::InvalidSession`].
impl From<IdError> for StoreError {
    fn from(e: IdError) -> Self {
        match e.id_kind() {
            IdKind::Result => StoreError::InvalidId(e),
            IdKind::Session => StoreError::InvalidSession(e),
        }
    }
}

/// A bad store URL or option becomes [`StoreError::Config`].
impl From<ConfigError> for StoreError {
    fn from(e: ConfigError) -> Self {
        StoreError::Config(e)
    }
}

/// Why a store URL or option cannot be used: the cause in [`StoreError::Config`].
///
/// Each text names the URL, option or directory at fault. A URL parser's or file system's error
/// is the `source()`; an `object_store` error is said in the text instead (it repeats its own
/// causes in its text), and not returned as the source.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The URL does not parse.
    #[error("bad store URL {url:?}")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// What the URL parser said.
        #[source]
        error: url::ParseError,
    },
    /// The URL's scheme names no backend.
    #[error(
        "unsupported store URL scheme {scheme:?} in {url:?}; use memory://, file:///dir or s3://bucket/prefix"
    )]
    UnsupportedScheme {
        /// The scheme, such as `ftp`.
        scheme: String,
        /// The URL as given.
        url: String,
    },
    /// An `s3://` URL in a program built without the `s3` cargo feature (of `toolgate-store`, or of
    /// `toolgate`, which passes it on).
    #[error(
        "the store URL {url:?} needs S3 support, but this program was built without the s3 feature; \
         use memory:// or file:///dir, or rebuild with the cargo feature `s3`"
    )]
    S3NotBuilt {
        /// The URL as given.
        url: String,
    },
    /// Options given for a scheme that takes none.
    #[error("a {scheme}:// store takes no options, got {key:?}")]
    NoOptions {
        /// `memory` or `file`.
        scheme: &'static str,
        /// The first option given.
        key: String,
    },
    /// A `file://` URL that is not an absolute local path.
    #[error("{url:?} is not an absolute local path (use file:///abs/dir)")]
    NotAbsolutePath {
        /// The URL as given.
        url: String,
    },
    /// The directory of a `file://` store does not exist and cannot be created.
    #[error("cannot create the store directory {}", dir.display())]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// What the file system said.
        #[source]
        error: std::io::Error,
    },
    /// The directory of a `file://` store cannot be used.
    #[error("cannot use {} as a store: {error}", dir.display())]
    LocalDir {
        /// The directory.
        dir: PathBuf,
        /// What the local backend said.
        error: object_store::Error,
    },
    /// The key prefix is not a valid object path.
    #[error("bad key prefix {prefix:?}: {error}")]
    BadPrefix {
        /// The prefix as given.
        prefix: String,
        /// Why it is not a valid path.
        error: object_store::path::Error,
    },
    /// An `s3://` URL without a bucket.
    #[error("{url:?} names no bucket (use s3://bucket/prefix)")]
    NoBucket {
        /// The URL as given.
        url: String,
    },
    /// An S3 option that neither S3 nor this store knows.
    #[error("unknown S3 store option {key:?}")]
    UnknownOption {
        /// The option's key.
        key: String,
    },
    /// An option that takes a count (`max_retries`) got something else.
    #[error("option {key:?}: {value:?} is not a whole number")]
    NotAWholeNumber {
        /// The option's key.
        key: String,
        /// The value given.
        value: String,
    },
    /// An option that takes a duration (`retry_timeout`) got something else.
    #[error("option {key:?}: {value:?} is not a duration like \"500ms\" or \"15s\"")]
    NotADuration {
        /// The option's key.
        key: String,
        /// The value given.
        value: String,
    },
    /// The S3 client refused the settings.
    #[error("cannot configure S3 bucket {bucket:?}: {error}")]
    S3Client {
        /// The bucket.
        bucket: String,
        /// What the S3 client builder said.
        error: object_store::Error,
    },
}
