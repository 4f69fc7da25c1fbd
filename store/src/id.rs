//! The two kinds of identifiers the store deals in, parsed once and valid forever after.
//!
//! SPEC R7 asks that ids and session ids be non-blank, have no surrounding whitespace, and be checked "at
//! every boundary". The cheapest way to check at every boundary is to make an invalid value impossible to
//! hold: [`ResultId`] and [`SessionId`] can only be built through [`ResultId::parse`],
//! [`SessionId::parse`], [`ResultId::generate`] or `serde` deserialization, and all of those run the same
//! checks. A function that takes a `&ResultId` therefore never has to wonder whether it is `"../etc"`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The longest accepted [`ResultId`], in bytes.
pub const MAX_RESULT_ID_BYTES: usize = 128;
/// The longest accepted [`SessionId`], in bytes.
pub const MAX_SESSION_ID_BYTES: usize = 256;

/// Why a piece of text is not a valid [`ResultId`] or [`SessionId`].
///
/// The messages are written for whoever typed the id (often a model): they say what is wrong and, by
/// implication, what a valid id looks like.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// The text is empty.
    #[error("the {what} is empty")]
    Empty {
        /// Which kind of id it is.
        what: IdKind,
    },
    /// The text is nothing but whitespace.
    #[error("the {what} is blank (only whitespace)")]
    Blank {
        /// Which kind of id it is.
        what: IdKind,
    },
    /// The text starts or ends with whitespace; ids are exact keys, so `" a"` and `"a"` must not both exist.
    #[error("the {what} {shown} has leading or trailing whitespace")]
    SurroundingWhitespace {
        /// Which kind of id it is.
        what: IdKind,
        /// The offending text, quoted and shortened.
        shown: String,
    },
    /// The text is longer than allowed.
    #[error("the {what} is {len} bytes long; at most {max} are allowed")]
    TooLong {
        /// Which kind of id it is.
        what: IdKind,
        /// Its length in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// A result id holds a character outside `[A-Za-z0-9_-]`.
    #[error(
        "the result id {shown} has the character {ch:?} at byte {at}; result ids use only A-Z, a-z, 0-9, '_' and '-'"
    )]
    BadChar {
        /// The offending id, quoted and shortened.
        shown: String,
        /// The first character that is not allowed.
        ch: char,
        /// Its byte position.
        at: usize,
    },
}

/// Which of the two kinds of id an [`IdError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdKind {
    /// A [`ResultId`].
    Result,
    /// A [`SessionId`].
    Session,
}

impl fmt::Display for IdKind {
    /// `result id` or `session id`, as the error texts say it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IdKind::Result => "result id",
            IdKind::Session => "session id",
        })
    }
}

impl IdError {
    /// Which kind of id failed its checks.
    ///
    /// ```
    /// use toolgate_store::{IdKind, ResultId, SessionId};
    /// assert_eq!(SessionId::parse(" s").unwrap_err().id_kind(), IdKind::Session);
    /// assert_eq!(ResultId::parse("a/b").unwrap_err().id_kind(), IdKind::Result);
    /// ```
    pub fn id_kind(&self) -> IdKind {
        match self {
            IdError::Empty { what }
            | IdError::Blank { what }
            | IdError::SurroundingWhitespace { what, .. }
            | IdError::TooLong { what, .. } => *what,
            IdError::BadChar { .. } => IdKind::Result,
        }
    }
}

/// Quotes `s` for an error message, cut to a readable length on a character boundary.
fn shown(s: &str) -> String {
    const MAX: usize = 40;
    match s.char_indices().nth(MAX) {
        None => format!("{s:?}"),
        Some((cut, _)) => format!("{:?}...", &s[..cut]),
    }
}

/// The rules ids and session ids share: non-empty, non-blank, no surrounding whitespace, bounded length.
fn check_common(s: &str, what: IdKind, max: usize) -> Result<(), IdError> {
    if s.is_empty() {
        return Err(IdError::Empty { what });
    }
    if s.trim().is_empty() {
        return Err(IdError::Blank { what });
    }
    if s.trim() != s {
        return Err(IdError::SurroundingWhitespace {
            what,
            shown: shown(s),
        });
    }
    if s.len() > max {
        return Err(IdError::TooLong {
            what,
            len: s.len(),
            max,
        });
    }
    Ok(())
}

/// The id of one stored result: 1 to 128 bytes of `[A-Za-z0-9_-]`.
///
/// The alphabet makes an id safe to use verbatim as an object key segment on every backend: no `/`, no
/// `.`, so no path traversal and no hidden files. Ids handed to a model come from
/// [`ResultId::generate`]: 128 random bits, so they cannot be guessed.
///
/// ```
/// use toolgate_store::ResultId;
///
/// let id = ResultId::parse("r_0123abcd").unwrap();
/// assert_eq!(id.as_str(), "r_0123abcd");
/// assert!(ResultId::parse("../secret").is_err());
/// assert!(ResultId::parse(" r_1").is_err());
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ResultId(String);

impl ResultId {
    /// Checks `s` and returns it as an id.
    pub fn parse(s: &str) -> Result<Self, IdError> {
        check_common(s, IdKind::Result, MAX_RESULT_ID_BYTES)?;
        if let Some((at, ch)) = s
            .char_indices()
            .find(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        {
            return Err(IdError::BadChar {
                shown: shown(s),
                ch,
                at,
            });
        }
        Ok(ResultId(s.to_owned()))
    }

    /// A fresh, unguessable id: `"r_"` followed by 128 random bits in lowercase hex.
    ///
    /// # Panics
    ///
    /// If the operating system has no source of randomness, which `getrandom` reports as an error only on
    /// broken or exotic platforms; an id that could be guessed would be worse than stopping.
    pub fn generate() -> Self {
        let mut bits = [0u8; 16];
        #[allow(clippy::expect_used)]
        getrandom::fill(&mut bits).expect("the operating system's random number generator failed");
        ResultId(format!("r_{}", hex(&bits)))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The id of the session that owns a result.
///
/// Any text of 1 to 256 bytes that is not blank and has no leading or trailing whitespace. Sessions come
/// from the application, so their alphabet is not restricted; the store encodes them before using them
/// in object keys (see [`SessionId::key_segments`]).
///
/// ```
/// use toolgate_store::SessionId;
///
/// assert!(SessionId::parse("user 42 / chat 7").is_ok());
/// assert!(SessionId::parse("chat-7 ").is_err());
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

impl SessionId {
    /// Checks `s` and returns it as a session id.
    pub fn parse(s: &str) -> Result<Self, IdError> {
        check_common(s, IdKind::Session, MAX_SESSION_ID_BYTES)?;
        Ok(SessionId(s.to_owned()))
    }

    /// The session id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The session id encoded as object key segments: lowercase hex of its UTF-8 bytes, cut into pieces
    /// of at most 128 characters so that no segment exceeds the 255-byte file name limit of common file
    /// systems. Hex cannot spell `/`, `.` or `..`, so a session id can never escape its directory.
    pub fn key_segments(&self) -> Vec<String> {
        let encoded = hex(self.0.as_bytes());
        encoded
            .as_bytes()
            .chunks(128)
            .map(|chunk| chunk.iter().map(|&b| char::from(b)).collect())
            .collect()
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

macro_rules! text_id_impls {
    ($ty:ident) => {
        impl TryFrom<String> for $ty {
            type Error = IdError;
            fn try_from(s: String) -> Result<Self, IdError> {
                $ty::parse(&s)
            }
        }
        impl From<$ty> for String {
            fn from(id: $ty) -> String {
                id.0
            }
        }
        impl std::str::FromStr for $ty {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                $ty::parse(s)
            }
        }
        impl AsRef<str> for $ty {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl fmt::Debug for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($ty), self.0)
            }
        }
    };
}
text_id_impls!(ResultId);
text_id_impls!(SessionId);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn generated_ids_are_valid_distinct_and_carry_128_bits() {
        let a = ResultId::generate();
        let b = ResultId::generate();
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), 2 + 32);
        assert_eq!(ResultId::parse(a.as_str()), Ok(a));
    }

    #[test]
    fn deserializing_an_invalid_session_id_fails() {
        let err = serde_json::from_str::<SessionId>("\" padded\"").unwrap_err();
        assert!(err.to_string().contains("whitespace"), "{err}");
    }

    #[test]
    fn session_key_segments_are_short_hex_for_the_longest_session() {
        let s = SessionId::parse(&"é".repeat(128)).unwrap();
        let segs = s.key_segments();
        assert_eq!(segs.len(), 4);
        assert!(
            segs.iter()
                .all(|g| g.len() <= 128 && g.bytes().all(|b| b.is_ascii_hexdigit()))
        );
    }

    proptest! {
        #[test]
        fn any_text_outside_the_id_alphabet_is_rejected(s in ".*[^A-Za-z0-9_-].*") {
            prop_assert!(ResultId::parse(&s).is_err());
        }

        #[test]
        fn any_text_in_the_id_alphabet_up_to_128_bytes_is_accepted(s in "[A-Za-z0-9_-]{1,128}") {
            prop_assert_eq!(ResultId::parse(&s).map(String::from), Ok(s));
        }

        #[test]
        fn session_ids_round_trip_through_their_key_segments(s in "\\PC{1,60}") {
            let trimmed = s.trim();
            prop_assume!(!trimmed.is_empty());
            let id = SessionId::parse(trimmed).unwrap();
            let hex: String = id.key_segments().concat();
            let bytes: Vec<u8> = (0..hex.len()).step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
            prop_assert_eq!(String::from_utf8(bytes).unwrap(), trimmed);
        }
    }
}
