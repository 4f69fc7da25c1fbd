//! The `auth:` and `clients:` sections: who may call `toolgate serve --http` (API keys, JWT
//! bearer tokens, the RFC 9728 metadata that points OAuth clients at their authorization
//! server), and what each principal or group may see (issue 27). Guide: docs/team.md.

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{Position, here};
use crate::glob::Glob;
use crate::shape::values::{self, DurationText, GlobList, Name, PathText};

/// How `toolgate serve --http` authenticates its clients (`auth:`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(inline, deny_unknown_fields)]
pub struct AuthSettings {
    /// API keys, each stored as the SHA-256 of the key (never the key) with the principal it
    /// names and its groups. `toolgate key new PRINCIPAL` makes a key and prints the entry to
    /// paste. A reload that drops an entry revokes its key for the next request.
    pub api_keys: Vec<ApiKey>,
    /// JWT bearer tokens, checked against the keys of a JWKS (a file, or a URL fetched and
    /// cached), the issuer, the audience, the expiry and the clock skew. Absent = no tokens.
    pub jwt: Option<JwtSettings>,
    /// The URL clients use for the MCP endpoint, as the RFC 9728 metadata states it (resource)
    /// and the audience of tokens meant for it. Default: `http://<listen address><path>`.
    pub resource: Option<String>,
    /// The authorization servers the RFC 9728 metadata names (their issuer URLs), where MCP
    /// clients that do OAuth get their tokens. Default: jwt.issuer.
    pub authorization_servers: Vec<String>,
    /// The scopes the RFC 9728 metadata lists (scopes_supported). Default none.
    pub scopes: Vec<String>,
}

impl AuthSettings {
    /// Whether any credential is accepted (keys or tokens): then every HTTP request must carry
    /// one.
    pub fn is_on(&self) -> bool {
        !self.api_keys.is_empty() || self.jwt.is_some()
    }
}

/// One API key (`auth.api_keys[]`).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(inline, deny_unknown_fields)]
pub struct ApiKey {
    /// The principal the key proves: its name in rules, clients, hooks and the audit log.
    #[schemars(with = "Name")]
    pub principal: String,
    /// The groups the principal belongs to when it uses this key. Default none.
    #[serde(default)]
    pub groups: Vec<String>,
    /// The SHA-256 of the key, 64 lower-case hex digits (toolgate key new prints it).
    #[schemars(regex(pattern = r"^[0-9a-f]{64}$"), extend("x-expected" = "64 lower-case hex digits"))]
    pub sha256: String,
    /// Where the entry is in the policy file.
    #[serde(skip_deserializing, default = "here")]
    #[schemars(skip)]
    pub position: Option<Position>,
}

/// JWT bearer tokens (`auth.jwt`).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(inline, deny_unknown_fields)]
pub struct JwtSettings {
    /// The issuer a token's iss must equal (the authorization server's issuer URL).
    pub issuer: String,
    /// The audience a token's aud must contain. Default: auth.resource, else the server's own
    /// MCP URL (`http://<listen address><path>`).
    pub audience: Option<String>,
    /// The URL of the JWKS that holds the signing keys (the authorization server's jwks_uri).
    /// Fetched when first needed, cached for jwks_refresh, fetched again (at most once per
    /// jwks_min_refetch) when a token names a key id it does not hold. Give this or jwks_file.
    pub jwks_url: Option<String>,
    /// A JWKS file, relative to the policy file, read when the policy is loaded. Give this or
    /// jwks_url.
    #[serde(deserialize_with = "values::optional_path")]
    #[schemars(with = "PathText")]
    pub jwks_file: Option<PathBuf>,
    /// The signature algorithms accepted. Default RS256, PS256, ES256, EdDSA.
    pub algorithms: Vec<String>,
    /// How far the clocks of toolgate and the issuer may differ: a token is accepted this long
    /// past its exp and this long before its nbf. Default 60s.
    #[serde(deserialize_with = "values::duration")]
    #[schemars(with = "DurationText")]
    pub leeway: Duration,
    /// The claim that names the principal. Default sub.
    pub principal_claim: String,
    /// The claim that lists the principal's groups (an array of strings, or one string of
    /// names separated by spaces, like scope). Default groups; a token without it has none.
    pub groups_claim: String,
    /// How long a fetched JWKS is used before it is fetched again. Default 10m.
    #[serde(deserialize_with = "values::duration")]
    #[schemars(with = "DurationText")]
    pub jwks_refresh: Duration,
    /// The bound on one JWKS fetch, connection to last byte. Default 5s.
    #[serde(deserialize_with = "values::duration")]
    #[schemars(with = "DurationText")]
    pub jwks_timeout: Duration,
    /// The least time between two fetches of the JWKS, so that tokens naming unknown key ids
    /// cannot make toolgate fetch it on every request. Default 30s.
    #[serde(deserialize_with = "values::duration")]
    #[schemars(with = "DurationText")]
    pub jwks_min_refetch: Duration,
}

impl Default for JwtSettings {
    fn default() -> Self {
        JwtSettings {
            issuer: String::new(),
            audience: None,
            jwks_url: None,
            jwks_file: None,
            algorithms: ["RS256", "PS256", "ES256", "EdDSA"]
                .map(String::from)
                .to_vec(),
            leeway: Duration::from_secs(60),
            principal_claim: "sub".to_owned(),
            groups_claim: "groups".to_owned(),
            jwks_refresh: Duration::from_secs(600),
            jwks_timeout: Duration::from_secs(5),
            jwks_min_refetch: Duration::from_secs(30),
        }
    }
}

/// What some principals may see (`clients[]`): the tools, resources and prompts listed here
/// are visible to every caller the entry matches, and no others (C4).
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(inline, deny_unknown_fields)]
pub struct ClientSpec {
    /// Principal names or globs the entry applies to.
    #[schemars(with = "GlobList")]
    pub principals: Vec<Glob>,
    /// Groups the entry applies to: a caller in any of them.
    pub groups: Vec<String>,
    /// Real tool names or globs the callers see and may call. Default none.
    #[schemars(with = "GlobList")]
    pub tools: Vec<Glob>,
    /// Resource URIs or globs (* crosses /) the callers see and may read. Default none.
    #[schemars(with = "GlobList")]
    pub resources: Vec<Glob>,
    /// Prompt names (`<server>.<prompt>`) or globs the callers see and may get. Default none.
    #[schemars(with = "GlobList")]
    pub prompts: Vec<Glob>,
    /// Where the entry is in the policy file.
    #[serde(skip_deserializing, default = "here")]
    #[schemars(skip)]
    pub position: Option<Position>,
}
