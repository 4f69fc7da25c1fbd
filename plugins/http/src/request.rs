//! One bounded request to a granted host: [`Client::send`].

use std::collections::BTreeMap;
use std::time::Duration;

use toolgate_plugin_api::ToolError;
use toolgate_plugin_grants::{GrantError, Grants};
use ureq::http::{StatusCode, Uri};

/// Why a request failed. Its message, which starts with the kind (`not_granted:`, ...), is what
/// the model reads: it crosses the plugin ABI as text, so each message is complete and holds
/// its cause, and `source()` returns none (a cause is in the message or in `source()`, never
/// both).
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The URL is not an absolute `http://` or `https://` URL with a host.
    #[error("bad_url: {url:?} is not an absolute http:// or https:// URL ({reason})")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The policy does not grant the URL's host and port.
    #[error("not_granted: {0}")]
    NotGranted(GrantError),
    /// An `https://` URL, and the plugin was built without its `tls` feature.
    #[error(
        "tls_unavailable: this http plugin was built without TLS (feature `tls`), so it cannot fetch {url}"
    )]
    TlsUnavailable {
        /// The URL asked for.
        url: String,
    },
    /// No complete response (headers and body) within the time bound.
    #[error("timeout: no complete response from {url} within {ms} ms")]
    Timeout {
        /// The URL asked for.
        url: String,
        /// The bound, in milliseconds.
        ms: u128,
    },
    /// The body is longer than the size bound.
    #[error(
        "too_large: the response body from {url} is longer than {limit} bytes (max_response_bytes)"
    )]
    TooLarge {
        /// The URL asked for.
        url: String,
        /// The bound, in bytes.
        limit: u64,
    },
    /// The host could not be resolved or reached.
    #[error("connection_failed: {url}: {detail}")]
    ConnectionFailed {
        /// The URL asked for.
        url: String,
        /// What the client said.
        detail: String,
    },
    /// The server answered with a status of 400 or more.
    #[error("status: {response}")]
    Status {
        /// The whole response, as the result text would show it.
        response: String,
    },
    /// A request header name or value that HTTP does not allow.
    #[error("bad_header: {name:?} cannot be sent as a request header")]
    BadHeader {
        /// The header's name.
        name: String,
    },
    /// A request header the plugin sets itself and the model may not: `Host` (it names the
    /// virtual host, which must be the granted host of the URL) and the headers that frame the
    /// message or the connection.
    #[error(
        "bad_header: {name:?} cannot be given: the plugin sets it itself (the Host from the URL, the framing from the body)"
    )]
    ReservedHeader {
        /// The header's name, as given.
        name: String,
    },
    /// Any other failure of the HTTP exchange (a malformed response, say).
    #[error("request_failed: {url}: {error}")]
    Other {
        /// The URL asked for.
        url: String,
        /// The client's error.
        error: ureq::Error,
    },
}

impl From<GrantError> for HttpError {
    fn from(error: GrantError) -> HttpError {
        HttpError::NotGranted(error)
    }
}

impl From<HttpError> for ToolError {
    fn from(error: HttpError) -> ToolError {
        ToolError::new(error.to_string())
    }
}

/// What a request does.
pub(crate) enum Method<'a> {
    Get,
    Post {
        body: &'a [u8],
        content_type: &'a str,
    },
}

/// A response read within the bounds.
#[derive(Debug)]
pub(crate) struct Response {
    status: StatusCode,
    content_type: Option<String>,
    location: Option<String>,
    body: Vec<u8>,
}

impl Response {
    /// The result text: status line, content type, location (for a redirect), a blank line, the
    /// body (invalid UTF-8 replaced by U+FFFD).
    pub(crate) fn to_text(&self) -> String {
        let mut text = format!(
            "HTTP {} {}\n",
            self.status.as_u16(),
            self.status.canonical_reason().unwrap_or("")
        );
        if let Some(content_type) = &self.content_type {
            text.push_str(&format!("content-type: {content_type}\n"));
        }
        if let Some(location) = &self.location {
            text.push_str(&format!("location: {location}\n"));
        }
        text.push('\n');
        text.push_str(&String::from_utf8_lossy(&self.body));
        text
    }
}

/// The plugin's state: the grants, the bounds and one HTTP agent (its connection pool is shared
/// by every call).
pub(crate) struct Client {
    grants: Grants,
    timeout: Duration,
    max_response_bytes: u64,
    agent: ureq::Agent,
}

impl Client {
    pub(crate) fn new(grants: Grants, timeout: Duration, max_response_bytes: u64) -> Client {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .max_redirects(0)
            .http_status_as_error(false)
            .proxy(None)
            .build()
            .into();
        Client {
            grants,
            timeout,
            max_response_bytes,
            agent,
        }
    }

    /// Checks the URL against the grants, sends the request and reads the response within the
    /// time and size bounds.
    pub(crate) fn send(
        &self,
        method: Method<'_>,
        url: &str,
        headers: &BTreeMap<String, String>,
    ) -> Result<Response, HttpError> {
        let uri = self.granted_uri(url)?;
        if let Some(name) = headers.keys().find(|name| reserved_header(name)) {
            return Err(HttpError::ReservedHeader { name: name.clone() });
        }
        let result = match method {
            Method::Get => {
                let mut request = self.agent.get(uri);
                for (name, value) in headers {
                    request = request.header(name, value);
                }
                request.call()
            }
            Method::Post { body, content_type } => {
                let mut request = self.agent.post(uri).content_type(content_type);
                for (name, value) in headers {
                    request = request.header(name, value);
                }
                request.send(body)
            }
        };
        let response = result.map_err(|error| self.classify(url, headers, error))?;
        let status = response.status();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let content_type = header("content-type");
        let location = status
            .is_redirection()
            .then(|| header("location"))
            .flatten();
        let body = response
            .into_body()
            .with_config()
            .limit(self.max_response_bytes)
            .read_to_vec()
            .map_err(|error| self.classify(url, headers, error))?;
        let response = Response {
            status,
            content_type,
            location,
            body,
        };
        if status.as_u16() >= 400 {
            return Err(HttpError::Status {
                response: response.to_text(),
            });
        }
        Ok(response)
    }

    /// The URL parsed, once its scheme is supported and its host and port are granted.
    fn granted_uri(&self, url: &str) -> Result<Uri, HttpError> {
        let bad = |reason: &str| HttpError::BadUrl {
            url: url.to_string(),
            reason: reason.to_string(),
        };
        let uri: Uri = url
            .parse()
            .map_err(|err: ureq::http::uri::InvalidUri| bad(&err.to_string()))?;
        let default_port = match uri.scheme_str() {
            Some("http") => 80,
            Some("https") => {
                if !cfg!(feature = "tls") {
                    return Err(HttpError::TlsUnavailable {
                        url: url.to_string(),
                    });
                }
                443
            }
            Some(other) => return Err(bad(&format!("the scheme {other:?} is not http or https"))),
            None => return Err(bad("it has no scheme")),
        };
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| bad("it has no host"))?;
        // The client connects to `port_u16()` or the default, and `port_u16()` is `None` for a
        // port that is not a number (`:80x`) or past 65535: such a URL would silently go to the
        // default port, so it is refused. An empty port (`host:/`) means the default (RFC 3986,
        // 3.2.3).
        let port = match uri.authority().and_then(|a| written_port(a.as_str())) {
            None | Some("") => default_port,
            Some(written) => written
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| written.parse::<u16>().ok())
                .flatten()
                .filter(|&n| n != 0)
                .ok_or_else(|| {
                    bad(&format!(
                        "its port {written:?} is not a number from 1 to 65535"
                    ))
                })?,
        };
        self.grants.check_net(host, port)?;
        Ok(uri)
    }

    fn classify(
        &self,
        url: &str,
        headers: &BTreeMap<String, String>,
        error: ureq::Error,
    ) -> HttpError {
        let url = url.to_string();
        match error {
            ureq::Error::Timeout(_) => HttpError::Timeout {
                url,
                ms: self.timeout.as_millis(),
            },
            ureq::Error::BodyExceedsLimit(limit) => HttpError::TooLarge { url, limit },
            ureq::Error::HostNotFound | ureq::Error::ConnectionFailed => {
                HttpError::ConnectionFailed {
                    detail: error.to_string(),
                    url,
                }
            }
            ureq::Error::Io(ref io)
                if matches!(
                    io.kind(),
                    std::io::ErrorKind::ConnectionRefused
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::NotConnected
                        | std::io::ErrorKind::AddrNotAvailable
                ) =>
            {
                HttpError::ConnectionFailed {
                    detail: error.to_string(),
                    url,
                }
            }
            ureq::Error::Io(ref io) if io.kind() == std::io::ErrorKind::TimedOut => {
                HttpError::Timeout {
                    url,
                    ms: self.timeout.as_millis(),
                }
            }
            ureq::Error::Http(_) => {
                match headers.keys().find(|name| !valid_header(name, headers)) {
                    Some(name) => HttpError::BadHeader { name: name.clone() },
                    None => HttpError::Other { url, error },
                }
            }
            error => HttpError::Other { url, error },
        }
    }
}

/// The port as written in an authority (`user@host:port`, `[::1]:port`), if there is a `:`
/// after the host.
fn written_port(authority: &str) -> Option<&str> {
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, rest)| rest);
    let after_host = match host_port.strip_prefix('[') {
        Some(bracketed) => bracketed.split_once(']').map_or("", |(_, rest)| rest),
        None => host_port,
    };
    after_host.rsplit_once(':').map(|(_, port)| port)
}

/// The request headers the model may not set: `Host` (the virtual host must be the URL's, the
/// one the grant was checked on) and the headers that frame the message or manage the
/// connection, which the client writes from the body and its own state.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
];

/// Whether `name` is one of [`RESERVED_HEADERS`], in any case and with any surrounding blanks.
fn reserved_header(name: &str) -> bool {
    let name = name.trim();
    RESERVED_HEADERS
        .iter()
        .any(|reserved| name.eq_ignore_ascii_case(reserved))
}

/// Whether `name` and its value in `headers` make a valid HTTP header.
fn valid_header(name: &str, headers: &BTreeMap<String, String>) -> bool {
    ureq::http::HeaderName::from_bytes(name.as_bytes()).is_ok()
        && headers
            .get(name)
            .is_some_and(|value| ureq::http::HeaderValue::from_str(value).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error's messages and its sources' messages, walked without skipping anything.
    fn chain(error: &(dyn std::error::Error + 'static)) -> String {
        let mut out = error.to_string();
        let mut next = error.source();
        while let Some(e) = next {
            out.push_str(": ");
            out.push_str(&e.to_string());
            next = e.source();
        }
        out
    }

    #[test]
    fn an_error_for_the_model_says_its_cause_once_and_returns_no_source() {
        let grant = GrantError::HostNotGranted {
            host: "example.com".into(),
            port: 443,
            granted: "nothing".into(),
        };
        let cause = grant.to_string();
        let error = HttpError::from(grant);
        assert!(std::error::Error::source(&error).is_none(), "{error:?}");
        assert_eq!(chain(&error).matches(&cause).count(), 1, "{error}");
        assert_eq!(error.to_string(), format!("not_granted: {cause}"));
    }
}
