//! Reads of resources and gets of prompts: calls of another kind through the same guard.
//!
//! A host that offers more than tools (`toolgate serve` offers its upstream MCP servers'
//! resources and prompts) runs each read and each get through the engine with
//! [`Engine::access`](crate::Engine::access), so the policy governs them with the code that
//! governs tool calls: the rules (G1), the before and after hooks (G1, G7), the timeout (G2),
//! the result cap (G3) and offload (R1), the events (E1). What differs by kind (A1):
//!
//! * the host resolves the target itself and hands it over as a [`Tool`]: the engine keeps no
//!   registry of resources or prompts (their names are URIs and templates, the host's to route),
//!   only the policy's aliases of them ([`Engine::alias_target`](crate::Engine::alias_target));
//! * the rules that judge a call are those that name its kind (`tools`, `resources`, `prompts`)
//!   and those that name none (A2);
//! * a resource is named by its URI, judged in normal form ([`normalize_uri`]), and its
//!   arguments are `{"uri": <that form>}`; a prompt is named `<server>.<prompt>` and its
//!   arguments are the prompt's arguments;
//! * argument aliases, search gating and the rewrite script are for tools only;
//! * the settings are the `dispatch` defaults: `tools:` overrides name tools only.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Serialize;
use toolgate_policy::{AccessAlias, Policy};

use crate::error::{At, BuildError};
use crate::tool::Tool;

/// What a call reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    /// A tool: the model's function call (`tools/call`).
    #[default]
    Tool,
    /// A read of a resource, named by its URI (`resources/read`).
    Resource,
    /// A get of a prompt, named `<server>.<prompt>` (`prompts/get`).
    Prompt,
}

impl CallKind {
    /// The kind as scripts and events name it: `tool`, `resource`, `prompt`.
    pub const fn as_str(self) -> &'static str {
        match self {
            CallKind::Tool => "tool",
            CallKind::Resource => "resource",
            CallKind::Prompt => "prompt",
        }
    }

    /// What the model is told was offloaded: `tool result`, `resource`, `prompt`.
    pub(crate) const fn result_noun(self) -> &'static str {
        match self {
            CallKind::Tool => "tool result",
            CallKind::Resource => "resource",
            CallKind::Prompt => "prompt",
        }
    }
}

impl std::fmt::Display for CallKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One read of a resource or get of a prompt, for [`Engine::access`](crate::Engine::access).
///
/// ```
/// use toolgate::access::Access;
///
/// let read = Access::resource("r-1", "file:///docs/./a%2Dnote.md", None);
/// assert_eq!(read.name(), "file:///docs/a-note.md");
/// ```
pub struct Access {
    pub(crate) kind: CallKind,
    pub(crate) call_id: String,
    /// The name the client used (a URI as it was sent, a prompt alias).
    pub(crate) asked: String,
    /// The real name: the URI in normal form, or `<server>.<prompt>`.
    pub(crate) name: String,
    /// The arguments as JSON text.
    pub(crate) arguments: String,
    pub(crate) target: Option<Arc<dyn Tool>>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("kind", &self.kind)
            .field("call_id", &self.call_id)
            .field("asked", &self.asked)
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .field("target", &self.target.is_some())
            .finish()
    }
}

impl Access {
    /// A read of the resource `uri`, as the client sent it. `target` reads it (it receives
    /// `{"uri": <normal form>}`); `None` when no source has it, which fails the read with
    /// `unknown_resource`. A URI that has no normal form fails with `invalid_arguments`.
    pub fn resource(
        call_id: impl Into<String>,
        uri: impl Into<String>,
        target: Option<Arc<dyn Tool>>,
    ) -> Self {
        let uri = uri.into();
        let name = normalize_uri(&uri).unwrap_or_else(|_| uri.clone());
        Access {
            kind: CallKind::Resource,
            call_id: call_id.into(),
            arguments: serde_json::json!({ "uri": uri }).to_string(),
            asked: uri,
            name,
            target,
        }
    }

    /// A get of the prompt `name` (`<server>.<prompt>`) with its `arguments`. `target` gets it;
    /// `None` when no source has it, which fails the get with `unknown_prompt`.
    pub fn prompt(
        call_id: impl Into<String>,
        name: impl Into<String>,
        arguments: serde_json::Map<String, serde_json::Value>,
        target: Option<Arc<dyn Tool>>,
    ) -> Self {
        let name = name.into();
        Access {
            kind: CallKind::Prompt,
            call_id: call_id.into(),
            asked: name.clone(),
            name,
            arguments: serde_json::Value::Object(arguments).to_string(),
            target,
        }
    }

    /// The name the client used, when it is not the real one (an alias).
    pub fn asked_as(mut self, asked: impl Into<String>) -> Self {
        self.asked = asked.into();
        self
    }

    /// What the call reaches.
    pub fn kind(&self) -> CallKind {
        self.kind
    }

    /// The real name: a URI in normal form, or a prompt's `<server>.<prompt>`.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The policy's aliases of resources and prompts (`resources.aliases`, `prompts.aliases`),
/// alias -> real name; a resource alias is kept in normal form.
#[derive(Debug, Default)]
pub(crate) struct AccessAliases {
    resources: HashMap<String, String>,
    prompts: HashMap<String, String>,
}

impl AccessAliases {
    /// The aliases of `policy`, checked: a resource alias and its target must be URIs with a
    /// normal form, a prompt alias must be a name without control characters, and no alias
    /// may name two targets or itself.
    pub(crate) fn of(policy: &Policy) -> Result<Self, BuildError> {
        Ok(AccessAliases {
            resources: table(&policy.resources.aliases, "resources", |name| {
                normalize_uri(name)
                    .map_err(|e| format!("{name:?} is not a URI toolgate can judge: {e}"))
            })?,
            prompts: table(&policy.prompts.aliases, "prompts", |name| {
                if name.chars().any(char::is_control) {
                    Err(format!("{name:?} holds a control character"))
                } else {
                    Ok(name.to_owned())
                }
            })?,
        })
    }

    /// The real name the alias `name` of `kind` stands for (a resource alias in any spelling).
    pub(crate) fn target(&self, kind: CallKind, name: &str) -> Option<&str> {
        match kind {
            CallKind::Tool => None,
            CallKind::Resource => self
                .resources
                .get(&normalize_uri(name).ok()?)
                .map(String::as_str),
            CallKind::Prompt => self.prompts.get(name).map(String::as_str),
        }
    }
}

/// alias -> target of one section, each name checked (and put in its form) by `check`.
fn table(
    aliases: &BTreeMap<String, AccessAlias>,
    section: &str,
    check: impl Fn(&str) -> Result<String, String>,
) -> Result<HashMap<String, String>, BuildError> {
    let mut out: HashMap<String, String> = HashMap::new();
    for (target, spec) in aliases {
        let wrong = |message: String| BuildError::Alias {
            message: format!("{section}.aliases: {message}"),
            at: At(spec.position.clone()),
        };
        let key = check(target).map_err(wrong)?;
        for alias in &spec.names {
            let name = check(alias).map_err(wrong)?;
            if name == key {
                return Err(wrong(format!("{alias:?} is an alias of itself")));
            }
            if let Some(other) = out.insert(name, target.clone()) {
                return Err(wrong(format!(
                    "{alias:?} is an alias of both {other:?} and {target:?}"
                )));
            }
        }
    }
    Ok(out)
}

/// The longest URI a resource read may name, in bytes.
pub const MAX_URI_BYTES: usize = 8 * 1024;

/// Why a URI has no normal form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UriError {
    /// It does not start with a scheme (`file:`, `https:`, `demo:`).
    #[error("it does not start with a scheme such as file: or https:")]
    NoScheme,
    /// It is longer than [`MAX_URI_BYTES`].
    #[error("it is {0} bytes long; at most {MAX_URI_BYTES} are judged")]
    TooLong(usize),
    /// It holds a control character, a space or a NUL byte.
    #[error("it holds a control character or a space at byte {0}")]
    Control(usize),
    /// A `%` that is not followed by two hex digits.
    #[error("the % at byte {0} is not followed by two hex digits")]
    BadEscape(usize),
}

/// The normal form of `uri` that rules and hooks judge (RFC 3986, section 6.2.2): the scheme
/// and the host in lower case, percent escapes in upper case, escapes of unreserved characters
/// (letters, digits, `-`, `.`, `_`, `~`) decoded, and the dot segments of the path (`.`, `..`)
/// removed. So `file:///public/%2E%2E/secret/key` is judged as `file:///secret/key`, and a
/// deny rule on `file:///secret/*` holds whichever way the URI is spelled.
///
/// ```
/// use toolgate::access::normalize_uri;
///
/// assert_eq!(normalize_uri("FILE:///a/b/../%7Euser/./x").unwrap(), "file:///a/~user/x");
/// assert_eq!(normalize_uri("demo://Host.Example/%2fkeep").unwrap(), "demo://host.example/%2Fkeep");
/// assert!(normalize_uri("no scheme here").is_err());
/// ```
///
/// # Errors
///
/// [`UriError`] for a URI without a scheme, over [`MAX_URI_BYTES`], with a control character
/// or a space, or with a `%` not followed by two hex digits.
pub fn normalize_uri(uri: &str) -> Result<String, UriError> {
    if uri.len() > MAX_URI_BYTES {
        return Err(UriError::TooLong(uri.len()));
    }
    if let Some(at) = uri.bytes().position(|b| b <= b' ' || b == 0x7f) {
        return Err(UriError::Control(at));
    }
    let colon = uri.find(':').ok_or(UriError::NoScheme)?;
    let scheme = &uri[..colon];
    let valid_scheme = scheme
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !valid_scheme {
        return Err(UriError::NoScheme);
    }
    let decoded = decode_unreserved(uri, colon + 1)?;
    let rest = &decoded[colon + 1..];
    let (before_fragment, fragment) = match rest.find('#') {
        Some(i) => (&rest[..i], Some(&rest[i..])),
        None => (rest, None),
    };
    let (hier, query) = match before_fragment.find('?') {
        Some(i) => (&before_fragment[..i], Some(&before_fragment[i..])),
        None => (before_fragment, None),
    };
    let mut out = scheme.to_ascii_lowercase();
    out.push(':');
    let path = match hier.strip_prefix("//") {
        Some(after) => {
            let end = after.find('/').unwrap_or(after.len());
            let authority = &after[..end];
            out.push_str("//");
            match authority.rfind('@') {
                Some(at) => {
                    out.push_str(&authority[..=at]);
                    out.push_str(&authority[at + 1..].to_ascii_lowercase());
                }
                None => out.push_str(&authority.to_ascii_lowercase()),
            }
            &after[end..]
        }
        None => hier,
    };
    out.push_str(&remove_dot_segments(path));
    out.push_str(query.unwrap_or(""));
    out.push_str(fragment.unwrap_or(""));
    Ok(out)
}

/// `uri` with the escapes from byte `from` on checked, their hex digits in upper case, and
/// those of unreserved characters decoded.
fn decode_unreserved(uri: &str, from: usize) -> Result<String, UriError> {
    let bytes = uri.as_bytes();
    let mut out = String::with_capacity(uri.len());
    out.push_str(&uri[..from]);
    let mut i = from;
    let mut copied = from;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            i += 1;
            continue;
        }
        let hex = |b: u8| (b as char).to_digit(16);
        let (Some(hi), Some(lo)) = (
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) else {
            return Err(UriError::BadEscape(i));
        };
        out.push_str(&uri[copied..i]);
        // Two hex digits: at most 255.
        let byte = (hi * 16 + lo) as u8;
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
        i += 3;
        copied = i;
    }
    out.push_str(&uri[copied..]);
    Ok(out)
}

/// RFC 3986, section 5.2.4: `.` and `..` segments resolved (`..` never climbs above the root).
fn remove_dot_segments(path: &str) -> String {
    if !path.contains('.') {
        return path.to_owned();
    }
    let absolute = path.starts_with('/');
    let mut kept: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').collect();
    let last = segments.len() - 1;
    // A path that ends in `.` or `..` keeps its trailing slash, as it names a directory.
    let mut trailing = false;
    for (i, segment) in segments.iter().enumerate() {
        if absolute && i == 0 {
            continue;
        }
        match *segment {
            "." => trailing = i == last,
            ".." => {
                kept.pop();
                trailing = i == last;
            }
            other => {
                kept.push(other);
                trailing = false;
            }
        }
    }
    let mut out = String::with_capacity(path.len());
    if absolute {
        out.push('/');
    }
    out.push_str(&kept.join("/"));
    if trailing && !out.ends_with('/') {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_segments_and_escaped_dots_are_resolved() {
        assert_eq!(
            normalize_uri("file:///public/%2E%2E/secret/key").unwrap(),
            "file:///secret/key"
        );
        assert_eq!(
            normalize_uri("file:///a/./b/../../../c").unwrap(),
            "file:///c"
        );
        assert_eq!(normalize_uri("file:///a/b/..").unwrap(), "file:///a/");
    }

    #[test]
    fn reserved_escapes_stay_escaped_in_upper_case() {
        assert_eq!(
            normalize_uri("demo://x/a%2fb%3F").unwrap(),
            "demo://x/a%2Fb%3F"
        );
    }

    #[test]
    fn the_query_and_fragment_keep_their_case_and_dots() {
        assert_eq!(
            normalize_uri("HTTPS://Example.COM/A/../B?Q=../X#Frag").unwrap(),
            "https://example.com/B?Q=../X#Frag"
        );
    }

    #[test]
    fn user_information_keeps_its_case() {
        assert_eq!(
            normalize_uri("ftp://Ann@Host/x").unwrap(),
            "ftp://Ann@host/x"
        );
    }

    #[test]
    fn bad_uris_are_refused_with_a_reason() {
        assert_eq!(normalize_uri("a b:c"), Err(UriError::Control(1)));
        assert_eq!(normalize_uri("/etc/passwd"), Err(UriError::NoScheme));
        assert_eq!(normalize_uri("file:///%zz"), Err(UriError::BadEscape(8)));
        assert_eq!(normalize_uri("file:///%4"), Err(UriError::BadEscape(8)));
        let long = format!("file:///{}", "a".repeat(MAX_URI_BYTES));
        assert!(matches!(normalize_uri(&long), Err(UriError::TooLong(_))));
    }

    #[test]
    fn a_uri_without_dots_is_kept_as_it_is() {
        let uri = "demo://resource/static/document/architecture.md";
        assert_eq!(normalize_uri(uri).unwrap(), uri);
    }
}
