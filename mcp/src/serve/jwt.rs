//! JWT bearer tokens (`auth.jwt`, C3): the signature against a key of the issuer's JWKS, then
//! the issuer, the audience, the expiry and "not before" (each with the leeway for clock skew),
//! and the claims that name the principal and its groups.
//!
//! The JWKS comes from a file (read with the policy) or a URL. A URL is fetched when a token
//! first needs it, with a bound on the time (`jwks_timeout`) and the size ([`MAX_JWKS_BYTES`]),
//! and used for `jwks_refresh`; a token that names a key id the set does not hold (the issuer
//! rotated its keys) makes it fetched again, but at most once per `jwks_min_refetch`, so a
//! stream of made-up key ids cannot turn toolgate against the issuer. One fetch at a time: the
//! requests that need the set meanwhile wait for that fetch. A set that cannot be fetched again
//! is used while it lasts; with none at all, tokens get a 401 that says why, and everything
//! else (API keys, other sessions) goes on.

use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};
use toolgate::Caller;
use toolgate_policy::JwtSettings;

use super::error::ServeError;

/// The largest JWKS document read, in bytes.
pub(crate) const MAX_JWKS_BYTES: usize = 1 << 20;

/// Why a token was refused; each message says what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TokenError {
    /// Not a JWT, or one that cannot be read.
    #[error("the token is not a well-formed JWT: {0}")]
    Malformed(String),
    /// Signed with an algorithm the policy does not accept.
    #[error("the token is signed with {0}, which auth.jwt.algorithms does not accept")]
    Algorithm(String),
    /// No key of the JWKS has the token's key id.
    #[error(
        "no key of the issuer's JWKS has the token's key id {kid:?}{}",
        .fetch.as_deref().map(|e| format!(" (and the JWKS could not be fetched again: {e})")).unwrap_or_default()
    )]
    UnknownKey {
        /// The token's `kid`.
        kid: Option<String>,
        /// Why the last fetch failed, if it did.
        fetch: Option<String>,
    },
    /// The JWKS could not be had at all.
    #[error("the issuer's signing keys (JWKS) cannot be fetched: {0}")]
    JwksUnavailable(String),
    /// The signature does not verify with the issuer's key.
    #[error("the token's signature does not verify with the issuer's key (forged, or altered)")]
    Signature,
    /// Past `exp` (plus the leeway).
    #[error("the token has expired (its exp, plus {0} s allowed for clock skew, is past)")]
    Expired(u64),
    /// Before `nbf` (minus the leeway).
    #[error("the token is not valid yet (its nbf, less {0} s allowed for clock skew, is ahead)")]
    NotYetValid(u64),
    /// `iss` is not the configured issuer.
    #[error("the token was issued by another issuer than {0}")]
    Issuer(String),
    /// `aud` does not contain the configured audience.
    #[error("the token is not meant for this server: its aud does not contain {0}")]
    Audience(String),
    /// A claim the checks need is missing.
    #[error("the token has no {0} claim")]
    MissingClaim(String),
}

/// The checks of `auth.jwt`.
pub(crate) struct JwtCheck {
    issuer: String,
    /// `jwt.audience`, else `auth.resource`; `None`: the server's own MCP URL.
    audience: Option<String>,
    algorithms: Vec<Algorithm>,
    leeway: Duration,
    principal_claim: String,
    groups_claim: String,
    keys: Keys,
}

enum Keys {
    File(JwkSet),
    Url(Arc<JwksCache>),
}

impl JwtCheck {
    /// The checks of `settings`; `resource` is the audience when `jwt.audience` is not given
    /// (without either, the server's own MCP URL, given to [`JwtCheck::verify`]).
    /// A JWKS URL cache of `kept` is reused when it fetches the same URL the same way.
    pub(crate) fn new(
        settings: &JwtSettings,
        resource: Option<&str>,
        kept: Option<&JwtCheck>,
    ) -> Result<Self, ServeError> {
        let bad = |message: String| ServeError::Auth { message };
        if settings.issuer.is_empty() {
            return Err(bad("auth.jwt.issuer is required".into()));
        }
        let audience = settings.audience.as_deref().or(resource).map(str::to_owned);
        let mut algorithms = Vec::new();
        for name in &settings.algorithms {
            let alg: Algorithm = name.parse().map_err(|_| {
                bad(format!(
                    "auth.jwt.algorithms: {name} is not a JWS algorithm"
                ))
            })?;
            if matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) {
                return Err(bad(format!(
                    "auth.jwt.algorithms: {name} needs a shared secret; only public-key \
                     algorithms (RS*, PS*, ES*, EdDSA) are accepted"
                )));
            }
            algorithms.push(alg);
        }
        if algorithms.is_empty() {
            return Err(bad("auth.jwt.algorithms is empty".into()));
        }
        let keys = match (&settings.jwks_url, &settings.jwks_file) {
            (Some(url), None) => {
                let cache = JwksCache::new(url, settings)?;
                let kept = kept.and_then(|k| match &k.keys {
                    Keys::Url(c) if c.same_as(&cache) => Some(Arc::clone(c)),
                    _ => None,
                });
                Keys::Url(kept.unwrap_or_else(|| Arc::new(cache)))
            }
            (None, Some(path)) => {
                let text = std::fs::read(path)
                    .map_err(|e| bad(format!("auth.jwt.jwks_file {}: {e}", path.display())))?;
                Keys::File(
                    parse_jwks(&text)
                        .map_err(|e| bad(format!("auth.jwt.jwks_file {}: {e}", path.display())))?,
                )
            }
            _ => {
                return Err(bad(
                    "auth.jwt needs exactly one of jwks_url and jwks_file".into()
                ));
            }
        };
        Ok(JwtCheck {
            issuer: settings.issuer.clone(),
            audience,
            algorithms,
            leeway: settings.leeway,
            principal_claim: settings.principal_claim.clone(),
            groups_claim: settings.groups_claim.clone(),
            keys,
        })
    }

    /// The caller `token` proves, or why it proves nothing; `own_url` is the audience when the
    /// policy names none.
    pub(crate) async fn verify(&self, token: &str, own_url: &str) -> Result<Caller, TokenError> {
        let audience = self.audience.as_deref().unwrap_or(own_url);
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| TokenError::Malformed(e.to_string()))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(TokenError::Algorithm(format!("{:?}", header.alg)));
        }
        let kid = header.kid.as_deref();
        let jwk = match &self.keys {
            Keys::File(set) => find(set, kid).cloned().ok_or(TokenError::UnknownKey {
                kid: header.kid.clone(),
                fetch: None,
            })?,
            Keys::Url(cache) => cache.key(kid).await?,
        };
        let key = DecodingKey::from_jwk(&jwk).map_err(|e| {
            TokenError::Malformed(format!("the issuer's key {kid:?} cannot be used: {e}"))
        })?;
        let leeway = self.leeway.as_secs();
        let mut validation = Validation::new(header.alg);
        validation.leeway = leeway;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data =
            jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation).map_err(|e| {
                match e.kind() {
                    ErrorKind::InvalidSignature => TokenError::Signature,
                    ErrorKind::ExpiredSignature => TokenError::Expired(leeway),
                    ErrorKind::ImmatureSignature => TokenError::NotYetValid(leeway),
                    ErrorKind::InvalidIssuer => TokenError::Issuer(self.issuer.clone()),
                    ErrorKind::InvalidAudience => TokenError::Audience(audience.to_owned()),
                    ErrorKind::MissingRequiredClaim(claim) => {
                        TokenError::MissingClaim(claim.clone())
                    }
                    _ => TokenError::Malformed(e.to_string()),
                }
            })?;
        let claims = data.claims;
        let name = claims
            .get(&self.principal_claim)
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
            .ok_or_else(|| TokenError::MissingClaim(self.principal_claim.clone()))?
            .to_owned();
        let groups = match claims.get(&self.groups_claim) {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            Some(Value::String(list)) => list.split_whitespace().map(str::to_owned).collect(),
            _ => Vec::new(),
        };
        Ok(Caller::new(name, groups).with_claims(claims))
    }
}

/// The key a token names: the one with its `kid`, or without a `kid` the set's only key.
fn find<'a>(set: &'a JwkSet, kid: Option<&str>) -> Option<&'a Jwk> {
    match kid {
        Some(kid) => set.find(kid),
        None if set.keys.len() == 1 => set.keys.first(),
        None => None,
    }
}

/// A JWKS document: its keys that this server can use (an issuer may publish others, such as
/// encryption keys of types it does not know; those are skipped).
fn parse_jwks(bytes: &[u8]) -> Result<JwkSet, String> {
    #[derive(serde::Deserialize)]
    struct Raw {
        keys: Vec<Value>,
    }
    let raw: Raw = serde_json::from_slice(bytes).map_err(|e| format!("not a JWKS: {e}"))?;
    let keys: Vec<Jwk> = raw
        .keys
        .into_iter()
        .filter_map(|k| serde_json::from_value(k).ok())
        .collect();
    if keys.is_empty() {
        return Err("the JWKS holds no usable key".into());
    }
    Ok(JwkSet { keys })
}

/// A JWKS fetched from a URL, kept for a while (see the module).
pub(crate) struct JwksCache {
    url: String,
    client: reqwest::Client,
    timeout: Duration,
    refresh: Duration,
    min_refetch: Duration,
    state: tokio::sync::Mutex<CacheState>,
}

#[derive(Default)]
struct CacheState {
    set: Option<Arc<JwkSet>>,
    fetched: Option<Instant>,
    attempted: Option<Instant>,
    error: Option<String>,
}

impl JwksCache {
    fn new(url: &str, settings: &JwtSettings) -> Result<Self, ServeError> {
        let client = reqwest::Client::builder()
            .timeout(settings.jwks_timeout)
            .build()
            .map_err(|e| ServeError::Auth {
                message: format!(
                    "auth.jwt.jwks_url: no HTTP client: {}",
                    toolgate::error::Chain(&e)
                ),
            })?;
        Ok(JwksCache {
            url: url.to_owned(),
            client,
            timeout: settings.jwks_timeout,
            refresh: settings.jwks_refresh,
            min_refetch: settings.jwks_min_refetch,
            state: tokio::sync::Mutex::default(),
        })
    }

    /// Whether `other` fetches the same URL the same way (a reload keeps this cache then).
    fn same_as(&self, other: &JwksCache) -> bool {
        (&self.url, self.timeout, self.refresh, self.min_refetch)
            == (&other.url, other.timeout, other.refresh, other.min_refetch)
    }

    /// The key `kid` names, fetching the set when it is stale, absent, or lacks the key (at
    /// most once per `min_refetch`).
    async fn key(&self, kid: Option<&str>) -> Result<Jwk, TokenError> {
        let mut state = self.state.lock().await;
        let now = Instant::now();
        let stale = state
            .fetched
            .is_none_or(|at| now.duration_since(at) >= self.refresh);
        let known = state.set.as_deref().is_some_and(|s| find(s, kid).is_some());
        let may_fetch = state
            .attempted
            .is_none_or(|at| now.duration_since(at) >= self.min_refetch);
        if (stale || !known) && may_fetch {
            state.attempted = Some(now);
            match self.fetch().await {
                Ok(set) => {
                    state.set = Some(Arc::new(set));
                    state.fetched = Some(Instant::now());
                    state.error = None;
                }
                Err(e) => {
                    tracing::warn!(url = %self.url, "cannot fetch the JWKS: {e}");
                    state.error = Some(e);
                }
            }
        }
        match state.set.as_deref() {
            Some(set) => find(set, kid)
                .cloned()
                .ok_or_else(|| TokenError::UnknownKey {
                    kid: kid.map(str::to_owned),
                    fetch: state.error.clone(),
                }),
            None => Err(TokenError::JwksUnavailable(format!(
                "{} ({})",
                state.error.as_deref().unwrap_or("not fetched yet"),
                self.url
            ))),
        }
    }

    /// One fetch, bounded in time and size.
    async fn fetch(&self) -> Result<JwkSet, String> {
        let read = async {
            let mut response = self
                .client
                .get(&self.url)
                .header("accept", "application/json")
                .send()
                .await
                .map_err(|e| toolgate::error::Chain(&e).to_string())?;
            if !response.status().is_success() {
                return Err(format!("HTTP {}", response.status()));
            }
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| toolgate::error::Chain(&e).to_string())?
            {
                body.extend_from_slice(&chunk);
                if body.len() > MAX_JWKS_BYTES {
                    return Err(format!("the JWKS is larger than {MAX_JWKS_BYTES} bytes"));
                }
            }
            parse_jwks(&body)
        };
        match tokio::time::timeout(self.timeout, read).await {
            Ok(read) => read,
            Err(_) => Err(format!("no answer within {} ms", self.timeout.as_millis())),
        }
    }
}
