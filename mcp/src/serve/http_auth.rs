//! The authentication of `serve --http` (C3, C6, C7): who a request comes from, the RFC 9728
//! Protected Resource Metadata that points OAuth clients at their authorization server, and
//! which principal each MCP session belongs to.
//!
//! A request is let in with
//! - the shared token of `--token-file`/`--token-env` (its holders are one principal,
//!   `bearer:<hex>`), or
//! - a credential the current policy's `auth:` accepts (an API key, a JWT), or
//! - nothing, when neither asks for one (loopback only): the local caller.
//!
//! Otherwise it gets 401 with `WWW-Authenticate: Bearer resource_metadata="..."` (and, for a
//! credential that was refused, `error="invalid_token"` with the reason), so an MCP client
//! that does OAuth finds the metadata, then the authorization server, then comes back with a
//! token. The policy is read per request: a reload that drops a key refuses it on the next one.
//!
//! An MCP session (`Mcp-Session-Id`) belongs to the principal whose `initialize` opened it:
//! another principal that presents its id gets 403 (C7), so it can neither call in it, nor
//! read the results it offloaded, nor listen to its stream. The owners are kept per process,
//! bounded like the sessions, and, with a session store, beside the session's record
//! (`http_sessions`), so that an instance that brings back a session another one opened
//! knows its owner too. A session with no owner anywhere (no store, or a record written
//! before owners were stored) belongs to the first principal that presents it here.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use toolgate::Caller;

use super::auth::{AuthError, Authenticator};
use super::stateless::Principal;

/// The body of every answer of the HTTP front.
pub(crate) type Body = http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>;

/// The well-known path of RFC 9728's metadata.
pub(crate) const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// What the front knows to authenticate requests.
pub(crate) struct Gate {
    /// The shared token, with the caller its holders are.
    token: Option<(String, Arc<Caller>)>,
    /// `http://<listen address>`, the resource's origin when the policy names none.
    origin: String,
    /// The MCP path.
    path: String,
    /// MCP session id -> the principal that owns it.
    owners: Mutex<HashMap<String, Arc<str>>>,
    /// The most owners kept (twice the session bound: closed sessions are pruned lazily).
    max_owners: usize,
}

/// Who a request comes from.
pub(crate) struct Admitted {
    pub(crate) caller: Arc<Caller>,
    pub(crate) principal: Principal,
}

impl Gate {
    pub(crate) fn new(
        token: Option<String>,
        addr: SocketAddr,
        path: &str,
        max_sessions: usize,
    ) -> Self {
        let token = token.map(|token| {
            let principal = Principal::bearer(&token);
            let caller = Arc::new(Caller::new(principal.name(), Vec::new()));
            (token, caller)
        });
        Gate {
            token,
            origin: format!("http://{addr}"),
            path: path.to_owned(),
            owners: Mutex::default(),
            max_owners: max_sessions.saturating_mul(2).max(16),
        }
    }

    /// The resource identifier: the policy's `auth.resource`, else this server's MCP URL.
    fn resource(&self, auth: &Authenticator) -> String {
        match &auth.settings().resource {
            Some(resource) => resource.clone(),
            None => format!("{}{}", self.origin, self.path),
        }
    }

    /// Where the metadata of `resource` is (RFC 9728, section 3.1: the well-known path goes
    /// between the origin and the resource's path).
    fn metadata_url(&self, auth: &Authenticator) -> String {
        let resource = self.resource(auth);
        match url_split(&resource) {
            Some((origin, path)) => format!("{origin}{METADATA_PATH}{path}"),
            None => format!("{}{METADATA_PATH}{}", self.origin, self.path),
        }
    }

    /// The answer to a request for the metadata (`GET /.well-known/oauth-protected-resource`,
    /// with or without the MCP path after it); `None` for any other path.
    pub(crate) fn metadata(&self, path: &str, auth: &Authenticator) -> Option<Response<Body>> {
        let rest = path.strip_prefix(METADATA_PATH)?;
        if !(rest.is_empty() || rest == self.path) {
            return None;
        }
        if !auth.is_on() {
            return Some(text(
                StatusCode::NOT_FOUND,
                "Not Found: this server's policy asks for no credentials (auth:)",
            ));
        }
        let settings = auth.settings();
        let mut servers = settings.authorization_servers.clone();
        if servers.is_empty()
            && let Some(jwt) = &settings.jwt
        {
            servers.push(jwt.issuer.clone());
        }
        let mut body = serde_json::json!({
            "resource": self.resource(auth),
            "authorization_servers": servers,
            "bearer_methods_supported": ["header"],
            "resource_name": "toolgate",
        });
        if !settings.scopes.is_empty() {
            body["scopes_supported"] = serde_json::json!(settings.scopes);
        }
        let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        );
        Some(response)
    }

    /// Who sends a request with `headers`, or the 401 that says why it is not let in.
    pub(crate) async fn admit(
        &self,
        headers: &HeaderMap,
        auth: &Authenticator,
    ) -> Result<Admitted, Response<Body>> {
        if let Some((token, caller)) = &self.token
            && bearer_matches(headers, token)
        {
            return Ok(Admitted {
                principal: Principal::bearer(token),
                caller: Arc::clone(caller),
            });
        }
        let credential = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| bearer_credentials(v.as_bytes()));
        if auth.is_on() {
            let refused = match credential {
                None => AuthError::Missing,
                Some(credential) => match auth.authenticate(credential, &self.resource(auth)).await
                {
                    Ok(caller) => {
                        return Ok(Admitted {
                            principal: Principal::named(caller.name()),
                            caller,
                        });
                    }
                    Err(e) => e,
                },
            };
            tracing::info!(reason = %refused, "an HTTP request was refused: unauthorized");
            return Err(self.unauthorized(&refused, Some(auth)));
        }
        if self.token.is_some() {
            let refused = match credential {
                None => AuthError::Missing,
                Some(_) => AuthError::UnknownKey,
            };
            return Err(self.unauthorized(&refused, None));
        }
        Ok(Admitted {
            caller: Caller::local(),
            principal: Principal::local(),
        })
    }

    /// Whether a request with `headers` may see the console, which shows every principal's
    /// calls: the shared token's holders; without a shared token, anyone while the policy asks
    /// for no credentials (loopback), and nobody once it does.
    pub(crate) fn is_operator(&self, headers: &HeaderMap, auth: &Authenticator) -> bool {
        match &self.token {
            Some((token, _)) => bearer_matches(headers, token),
            None => !auth.is_on(),
        }
    }

    /// 401 with the reason, and with the policy's authentication the metadata's URL.
    fn unauthorized(&self, refused: &AuthError, auth: Option<&Authenticator>) -> Response<Body> {
        let mut challenge = "Bearer".to_owned();
        let mut params = Vec::new();
        if let Some(auth) = auth {
            params.push(format!(
                "resource_metadata=\"{}\"",
                quoted(&self.metadata_url(auth))
            ));
        }
        if let Some(code) = refused.code() {
            params.push(format!("error=\"{code}\""));
            params.push(format!(
                "error_description=\"{}\"",
                quoted(&refused.to_string())
            ));
        }
        if !params.is_empty() {
            challenge.push(' ');
            challenge.push_str(&params.join(", "));
        }
        let body = serde_json::json!({
            "error": refused.code().unwrap_or("unauthorized"),
            "error_description": format!("Unauthorized: {refused}"),
        });
        let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
        *response.status_mut() = StatusCode::UNAUTHORIZED;
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        );
        if let Ok(value) = header::HeaderValue::from_str(&challenge) {
            headers.insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }

    /// Whether `principal` owns the MCP session `id`, when this process knows its owner.
    pub(crate) fn owned_by(&self, id: &str, principal: &Principal) -> Option<bool> {
        let owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        owners.get(id).map(|owner| **owner == *principal.name())
    }

    /// `owner` owns the session `id`, as the session store says (opened by another instance).
    pub(crate) fn adopt(&self, id: &str, owner: &str) {
        let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        if owners.len() < self.max_owners {
            owners.insert(id.to_owned(), Arc::from(owner));
        }
    }

    /// Whether `principal` may use the MCP session `id` (C7): yes when it owns it, or when
    /// nobody here does yet (it then does).
    pub(crate) fn may_use(&self, id: &str, principal: &Principal) -> bool {
        let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        match owners.get(id) {
            Some(owner) => **owner == *principal.name(),
            None => {
                if owners.len() < self.max_owners {
                    owners.insert(id.to_owned(), Arc::from(principal.name()));
                }
                true
            }
        }
    }

    /// The session `id` was opened by `principal`; `open` lists the sessions still open, to
    /// prune the owners of closed ones when the table is full.
    pub(crate) fn opened(&self, id: &str, principal: &Principal, open: impl Fn(&str) -> bool) {
        let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        if owners.len() >= self.max_owners {
            owners.retain(|id, _| open(id));
        }
        owners.insert(id.to_owned(), Arc::from(principal.name()));
    }

    /// The session `id` was closed.
    pub(crate) fn closed(&self, id: &str) {
        let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        owners.remove(id);
    }
}

/// Whether the request carries `Authorization: Bearer <token>`, compared in time that does not
/// depend on where the first difference is. The scheme is matched without regard to case
/// (`bearer`, `BEARER`: RFC 9110, section 11.1) and may be followed by more than one space.
pub(crate) fn bearer_matches(headers: &http::HeaderMap, token: &str) -> bool {
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| bearer_credentials(v.as_bytes()))
    else {
        return false;
    };
    let want = token.as_bytes();
    if given.len() != want.len() {
        return false;
    }
    given
        .iter()
        .zip(want)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

/// The credentials of a `Bearer` authorization value, whatever the case of the scheme.
pub(crate) fn bearer_credentials(value: &[u8]) -> Option<&[u8]> {
    const SCHEME: &[u8] = b"bearer";
    let (scheme, rest) = value.split_at_checked(SCHEME.len())?;
    if !scheme.eq_ignore_ascii_case(SCHEME) || rest.first() != Some(&b' ') {
        return None;
    }
    let start = rest.iter().position(|b| *b != b' ')?;
    Some(&rest[start..])
}

/// `scheme://authority` and the path (with its leading `/`, or empty) of an absolute URL.
fn url_split(url: &str) -> Option<(&str, &str)> {
    let after_scheme = url.find("://")? + 3;
    match url[after_scheme..].find('/') {
        Some(slash) => Some(url.split_at(after_scheme + slash)),
        None => Some((url, "")),
    }
}

/// `text` fit for a quoted-string of a header: no quotes, backslashes or controls.
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

fn text(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c6_the_metadata_of_a_resource_with_a_path_is_under_the_well_known_path_then_the_path() {
        assert_eq!(
            url_split("https://gw.example.com/mcp"),
            Some(("https://gw.example.com", "/mcp"))
        );
        assert_eq!(
            url_split("http://127.0.0.1:8080"),
            Some(("http://127.0.0.1:8080", ""))
        );
        assert_eq!(url_split("no-scheme"), None);
    }

    #[test]
    fn a_session_belongs_to_the_principal_that_opened_it() {
        let gate = Gate::new(None, "127.0.0.1:1".parse().unwrap(), "/mcp", 4);
        let (alice, bob) = (Principal::named("alice"), Principal::named("bob"));
        gate.opened("s1", &alice, |_| true);
        assert!(gate.may_use("s1", &alice));
        assert!(!gate.may_use("s1", &bob));
        // A session nobody here owns belongs to the first that presents it.
        assert!(gate.may_use("s2", &bob));
        assert!(!gate.may_use("s2", &alice));
        gate.closed("s1");
        assert!(gate.may_use("s1", &bob));
    }
}
