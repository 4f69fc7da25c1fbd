//! Who an HTTP request comes from (C3): the credential in its `Authorization: Bearer`, checked
//! against the policy's `auth:` (API keys, JWT bearer tokens), becomes the engine's
//! [`Caller`]. Built with each policy, so a reload that drops a key revokes it for the next
//! request; the JWKS cache of a URL that stays the same is kept across reloads.
//!
//! API keys are random, 256 bits (`toolgate key new`), and the policy keeps only their SHA-256.
//! A slow, salted password hash (Argon2, bcrypt) exists to make guessing a *low-entropy*
//! secret from its hash expensive; a 256-bit random key cannot be guessed from its SHA-256 at
//! any speed, and one fast hash per request keeps authentication in microseconds. The lookup is
//! by digest, and the digest found is compared again in constant time, so nothing about a stored
//! key leaks through the time a wrong key takes.

use std::collections::HashMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use toolgate::{Caller, Policy};
use toolgate_policy::AuthSettings;

use super::error::ServeError;
use super::jwt::{JwtCheck, TokenError};

/// The prefix of the API keys `toolgate key new` makes, so that a key is recognisable in a
/// leak scanner and cannot be mistaken for a JWT.
pub const API_KEY_PREFIX: &str = "tgk_";

/// A fresh API key and the hex SHA-256 the policy keeps of it.
///
/// # Errors
///
/// The system's random source failed.
pub fn new_api_key() -> Result<(String, String), getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    let key = format!("{API_KEY_PREFIX}{}", hex(&bytes));
    let digest = hex(&Sha256::digest(key.as_bytes()));
    Ok((key, digest))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The credentials one policy accepts.
pub(crate) struct Authenticator {
    /// SHA-256 of each key -> who it proves.
    keys: HashMap<[u8; 32], Arc<Caller>>,
    jwt: Option<Arc<JwtCheck>>,
    settings: AuthSettings,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("keys", &self.keys.len())
            .field("jwt", &self.jwt.is_some())
            .finish()
    }
}

/// Why a request was not let in: the reason goes into the 401's body and its
/// `WWW-Authenticate` (RFC 6750), so a client's operator reads what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AuthError {
    /// No `Authorization: Bearer` at all.
    #[error("send Authorization: Bearer <API key or access token>")]
    Missing,
    /// An API key that no entry of `auth.api_keys` holds (revoked, or never issued).
    #[error("the API key is not known (revoked, or never issued)")]
    UnknownKey,
    /// A token that does not pass the JWT checks.
    #[error("{0}")]
    Token(#[from] TokenError),
}

impl AuthError {
    /// The RFC 6750 error code: none when no credential was sent, `invalid_token` otherwise.
    pub(crate) fn code(&self) -> Option<&'static str> {
        match self {
            AuthError::Missing => None,
            _ => Some("invalid_token"),
        }
    }
}

impl Authenticator {
    /// The credentials `policy` accepts; `previous` lends its JWKS cache when the policy
    /// still names the same JWKS URL.
    pub(crate) fn for_policy(
        policy: &Policy,
        previous: Option<&Authenticator>,
    ) -> Result<Self, ServeError> {
        let settings = policy.auth.clone();
        let mut keys = HashMap::new();
        for entry in &settings.api_keys {
            let digest = parse_digest(&entry.sha256).ok_or_else(|| ServeError::Auth {
                message: format!(
                    "auth.api_keys: the sha256 of {} is not 64 hex digits",
                    entry.principal
                ),
            })?;
            let caller = Caller::new(entry.principal.clone(), entry.groups.clone());
            if keys.insert(digest, Arc::new(caller)).is_some() {
                return Err(ServeError::Auth {
                    message: format!(
                        "auth.api_keys: two entries hold the same key (the second names {})",
                        entry.principal
                    ),
                });
            }
        }
        let jwt = match &settings.jwt {
            None => None,
            Some(jwt) => {
                let kept = previous.and_then(|p| p.jwt.as_deref());
                Some(Arc::new(JwtCheck::new(
                    jwt,
                    settings.resource.as_deref(),
                    kept,
                )?))
            }
        };
        Ok(Authenticator {
            keys,
            jwt,
            settings,
        })
    }

    /// Whether the policy asks for credentials at all.
    pub(crate) fn is_on(&self) -> bool {
        self.settings.is_on()
    }

    /// The policy's `auth:` section.
    pub(crate) fn settings(&self) -> &AuthSettings {
        &self.settings
    }

    /// Who presents `credential` (the text after `Bearer `): an API key's principal, or a
    /// token's; `own_url` is the server's MCP URL (a token's audience when the policy names
    /// none).
    pub(crate) async fn authenticate(
        &self,
        credential: &[u8],
        own_url: &str,
    ) -> Result<Arc<Caller>, AuthError> {
        let digest: [u8; 32] = Sha256::digest(credential).into();
        if let Some((stored, caller)) = self.keys.get_key_value(&digest)
            && constant_time_eq(stored, &digest)
        {
            return Ok(Arc::clone(caller));
        }
        match &self.jwt {
            // A key of ours is never a JWT: say what is wrong with it as a key.
            Some(jwt) if !credential.starts_with(API_KEY_PREFIX.as_bytes()) => {
                let token = std::str::from_utf8(credential).map_err(|_| {
                    AuthError::Token(TokenError::Malformed("it is not text".into()))
                })?;
                Ok(Arc::new(jwt.verify(token, own_url).await?))
            }
            _ => Err(AuthError::UnknownKey),
        }
    }
}

fn parse_digest(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Equality of two digests in time that does not depend on where they differ.
fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(yaml: &str) -> Policy {
        toolgate_policy::load_str(yaml, std::path::Path::new("p.yaml")).unwrap()
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_new_key_is_prefixed_random_and_hashed_with_sha256() {
        let (key, digest) = new_api_key().unwrap();
        let (other, _) = new_api_key().unwrap();
        assert!(
            key.starts_with(API_KEY_PREFIX) && key.len() == 4 + 64,
            "{key}"
        );
        assert_ne!(key, other);
        assert_eq!(digest, hex(&Sha256::digest(key.as_bytes())));
    }

    #[test]
    fn c3_a_key_in_the_policy_proves_its_principal_and_groups() {
        let (key, digest) = new_api_key().unwrap();
        let auth = Authenticator::for_policy(
            &policy(&format!(
                "version: 1\nauth:\n  api_keys:\n    - {{principal: alice, groups: [dev], sha256: {digest}}}\n"
            )),
            None,
        )
        .unwrap();
        rt().block_on(async {
            let alice = auth
                .authenticate(key.as_bytes(), "http://x/mcp")
                .await
                .unwrap();
            assert_eq!(alice.name(), "alice");
            assert_eq!(alice.groups(), ["dev".to_owned()]);
            let (unknown, _) = new_api_key().unwrap();
            assert_eq!(
                auth.authenticate(unknown.as_bytes(), "http://x/mcp")
                    .await
                    .unwrap_err(),
                AuthError::UnknownKey
            );
        });
    }

    #[test]
    fn two_entries_with_one_key_are_an_error() {
        let (_, digest) = new_api_key().unwrap();
        let err = Authenticator::for_policy(
            &policy(&format!(
                "version: 1\nauth:\n  api_keys:\n    - {{principal: a, sha256: {digest}}}\n    - {{principal: b, sha256: {digest}}}\n"
            )),
            None,
        )
        .unwrap_err();
        assert!(err.to_string().contains("same key"), "{err}");
    }
}
