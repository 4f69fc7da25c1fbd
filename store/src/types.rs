//! The plain data that goes in and out of a [`crate::ResultStore`].

use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::id::{ResultId, SessionId};

/// What the caller says about a result it is about to save.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewResult {
    /// The id to save under, usually [`ResultId::generate`].
    pub id: ResultId,
    /// The owning session, or `None` for a result saved outside any session (see SPEC R4, R8).
    pub session: Option<SessionId>,
    /// The tool that produced the result, for listings and audits.
    pub tool: Option<String>,
    /// A MIME type, `text/plain; charset=utf-8` unless the tool said otherwise.
    pub content_type: String,
}

impl NewResult {
    /// A `text/plain` result with a fresh id and no tool name.
    pub fn new(session: Option<SessionId>) -> Self {
        NewResult {
            id: ResultId::generate(),
            session,
            tool: None,
            content_type: DEFAULT_CONTENT_TYPE.to_owned(),
        }
    }

    /// Replaces the id.
    pub fn with_id(mut self, id: ResultId) -> Self {
        self.id = id;
        self
    }

    /// Sets the tool name.
    pub fn with_tool(mut self, tool: impl Into<String>) -> Self {
        self.tool = Some(tool.into());
        self
    }
}

/// The content type of a result whose tool did not name one.
pub const DEFAULT_CONTENT_TYPE: &str = "text/plain; charset=utf-8";

/// What the store knows about a saved result, without its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultMeta {
    /// Its id.
    pub id: ResultId,
    /// The session that owns it, if any.
    pub session: Option<SessionId>,
    /// The tool that produced it, if known.
    pub tool: Option<String>,
    /// Its MIME type.
    pub content_type: String,
    /// Its size in bytes of UTF-8.
    pub bytes: u64,
    /// Its size in Unicode scalar values (Rust `char`s), the unit of [`Page`] offsets.
    pub chars: u64,
    /// When it was saved, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
}

/// Characters `offset..end` of a result that has `total_chars` characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The characters themselves.
    pub text: String,
    /// The index of the first character, as requested.
    pub offset: u64,
    /// One past the index of the last character: `min(offset + limit, total_chars)`.
    pub end: u64,
    /// The length of the whole result in characters.
    pub total_chars: u64,
}

impl Page {
    /// Where the next page starts, or `None` when this page reaches the end.
    pub fn next_offset(&self) -> Option<u64> {
        (self.end < self.total_chars).then_some(self.end)
    }
}

/// Which results a listing or a pruning looks at, by owner.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Scope {
    /// Every result.
    #[default]
    All,
    /// Only results saved without a session.
    Unscoped,
    /// Only the results of this session.
    Session(SessionId),
}

impl Scope {
    /// Whether a result owned by `session` is in this scope.
    pub fn contains(&self, session: Option<&SessionId>) -> bool {
        match self {
            Scope::All => true,
            Scope::Unscoped => session.is_none(),
            Scope::Session(s) => session == Some(s),
        }
    }
}

/// Which results [`crate::ResultStore::list`] returns.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListFilter {
    /// By owner.
    pub scope: Scope,
    /// Only results saved strictly before this time (milliseconds since the Unix epoch).
    pub created_before_ms: Option<u64>,
}

impl ListFilter {
    /// Every result.
    pub fn all() -> Self {
        ListFilter::default()
    }

    /// Only results in `scope`.
    pub fn scope(scope: Scope) -> Self {
        ListFilter {
            scope,
            created_before_ms: None,
        }
    }

    /// Keeps only results saved strictly before `ms`.
    pub fn created_before(mut self, ms: u64) -> Self {
        self.created_before_ms = Some(ms);
        self
    }

    /// Whether `meta` passes this filter.
    pub fn matches(&self, meta: &ResultMeta) -> bool {
        self.scope.contains(meta.session.as_ref())
            && self
                .created_before_ms
                .is_none_or(|t| meta.created_at_ms < t)
    }
}

/// What [`crate::ResultStore::prune`] removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PruneReport {
    /// Whole results (committed records) removed.
    pub results: u64,
    /// Leftovers of interrupted saves removed: data without a record, markers without a record, and
    /// the partly written files a local-disk store stages a save in.
    pub garbage: u64,
    /// Results whose record could not be read ([`Unreadable`]) removed, with their data and marker.
    pub unreadable: u64,
}

/// A result whose record is there but cannot be read: it does not parse, has an unknown version, or
/// describes another id or impossible sizes. Nothing of it can be read back, so listings skip it and
/// report it here; [`crate::ResultStore::delete`] and [`crate::ResultStore::prune`] remove it.
#[derive(Debug)]
pub struct Unreadable {
    /// The id the record is stored under.
    pub id: ResultId,
    /// Why it cannot be read, usually [`StoreError::Corrupt`].
    pub error: StoreError,
}

/// What [`crate::ResultStore::listing`] returns: the results that pass the filter, newest first, and
/// the results under the filter's owner whose record could not be read (their age and owner are
/// unknown, so the rest of the filter cannot apply to them).
#[derive(Debug, Default)]
pub struct Listing {
    /// The readable results, as [`crate::ResultStore::list`] returns them.
    pub results: Vec<ResultMeta>,
    /// The results skipped because their record could not be read.
    pub unreadable: Vec<Unreadable>,
}
