//! The console's gate and routes.
//!
//! | path | auth | answers |
//! |---|---|---|
//! | `/ui`, `/ui/console.js`, `/ui/console.css` | none (no data) | the page, its script, its style |
//! | `/ui/api/calls` | bearer | the ring's rows |
//! | `/ui/api/calls/<call id>` | bearer | a call's detail: arguments masked, result preview |
//! | `/ui/api/results/<id>?offset=&limit=` | bearer | a page of an offloaded result of a call in the ring |
//! | `/ui/api/events` | bearer | the event stream (`stream`) |
//! | `/ui/api/policy` | bearer | the policy in force |
//! | `/ui/api/explain?tool=` | bearer | what `toolgate explain --json` prints |
//! | `/ui/api/tools` | bearer | the tools and the upstream servers with their health |
//! | `/ui/api/search?q=&max=` | bearer | `tool_search`'s ranking, with why each tool ranked |
//!
//! Before any of that: the console must be on (`serve.console`; else 404, as for any path
//! that is not the MCP endpoint), the method GET (405), the `Host` one the server answers to
//! (403: DNS rebinding), and an `Origin`, when a browser sends one, the server's own or an
//! allowed one (403). Every answer says `Cache-Control: no-store`, and the page forbids
//! framing and any script or style not its own (`Content-Security-Policy`).

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::hub::Hub;
use super::stream::Body;
use super::{stream, views};
use crate::serve::shared::Shared;

const PAGE: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/console.js");
const STYLE: &str = include_str!("assets/console.css");

/// The console's part of one HTTP server.
pub(crate) struct Console {
    pub(crate) shared: Arc<Shared>,
    pub(crate) hub: Arc<Hub>,
    /// The `Host` values answered (`None`: any, when listening on every interface with a
    /// token and no allowed hosts, as the MCP endpoint does).
    pub(crate) hosts: Option<Vec<String>>,
    /// Browser origins allowed besides the server's own.
    pub(crate) origins: Vec<String>,
    pub(crate) shutdown: CancellationToken,
}

/// Whether `path` is the console's.
pub(crate) fn is_console_path(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/")
}

impl Console {
    /// Answers `request`; `authorized` says whether it carries the server's bearer token (or
    /// the server asks for none): the front checks it as for MCP.
    pub(crate) async fn handle(
        &self,
        request: Request<Incoming>,
        authorized: bool,
    ) -> Response<Body> {
        if !self.shared.engines.current().engine.policy().serve.console {
            return text(
                StatusCode::NOT_FOUND,
                "Not Found: the console is off (serve.console: true turns it on)",
            );
        }
        if request.method() != http::Method::GET && request.method() != http::Method::HEAD {
            let mut response = text(StatusCode::METHOD_NOT_ALLOWED, "the console reads only");
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return response;
        }
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if !self.host_allowed(host) {
            return text(StatusCode::FORBIDDEN, "Forbidden: this Host is not served");
        }
        if let Some(origin) = request.headers().get(header::ORIGIN)
            && !self.origin_allowed(origin.to_str().unwrap_or(""), host)
        {
            return text(
                StatusCode::FORBIDDEN,
                "Forbidden: this Origin is not allowed",
            );
        }
        let path = request.uri().path().to_owned();
        match path.as_str() {
            "/ui" | "/ui/" => return page(PAGE, "text/html; charset=utf-8"),
            "/ui/console.js" => return page(SCRIPT, "text/javascript; charset=utf-8"),
            "/ui/console.css" => return page(STYLE, "text/css; charset=utf-8"),
            _ => {}
        }
        let Some(api) = path.strip_prefix("/ui/api/") else {
            return text(StatusCode::NOT_FOUND, "Not Found: no such console page");
        };
        if !authorized {
            let mut response = text(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: send Authorization: Bearer <token>",
            );
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
        let query = Query::of(request.uri().query());
        let loaded = self.shared.engines.current();
        let answer = match api {
            "events" => return self.events(),
            "calls" => Ok(views::calls(&self.hub)),
            "policy" => Ok(views::policy(&loaded)),
            "tools" => Ok(views::tools(&loaded)),
            "explain" => match query.get("tool") {
                Some(tool) if !tool.is_empty() => Ok(views::explain(&loaded, tool)),
                _ => Err((
                    StatusCode::BAD_REQUEST,
                    "give the tool: ?tool=NAME".to_owned(),
                )),
            },
            "search" => views::search(
                &loaded,
                query.get("q").unwrap_or(""),
                query.get("max").unwrap_or(""),
            ),
            _ => {
                if let Some(id) = api.strip_prefix("calls/") {
                    views::call(&self.hub, &loaded, id)
                } else if let Some(id) = api.strip_prefix("results/") {
                    views::result_page(
                        &self.hub,
                        &loaded,
                        id,
                        query.get("offset").unwrap_or(""),
                        query.get("limit").unwrap_or(""),
                    )
                    .await
                } else {
                    Err((StatusCode::NOT_FOUND, format!("no such view: {api}")))
                }
            }
        };
        match answer {
            Ok(value) => json_response(StatusCode::OK, &value),
            Err((status, message)) => json_response(status, &json!({"error": message})),
        }
    }

    fn events(&self) -> Response<Body> {
        let Ok(permit) = Arc::clone(&self.hub.streams).try_acquire_owned() else {
            return json_response(
                StatusCode::SERVICE_UNAVAILABLE,
                &json!({"error": format!(
                    "too many console streams: at most {} are open at once; close one",
                    super::hub::MAX_STREAMS
                )}),
            );
        };
        let mut response = Response::new(stream::body(&self.hub, permit, self.shutdown.clone()));
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }

    fn host_allowed(&self, host: &str) -> bool {
        let Some(hosts) = &self.hosts else {
            return true;
        };
        let name = host_name(host);
        hosts.iter().any(|h| h.eq_ignore_ascii_case(name))
    }

    /// The page's own origin (`http://` and the `Host` it was asked under), or an allowed one.
    fn origin_allowed(&self, origin: &str, host: &str) -> bool {
        origin.eq_ignore_ascii_case(&format!("http://{host}"))
            || self.origins.iter().any(|o| o == origin)
    }
}

/// The name part of a `Host` value: `127.0.0.1:8080` -> `127.0.0.1`, `[::1]:80` -> `::1`.
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

/// The query's parameters, decoded.
struct Query(Vec<(String, String)>);

impl Query {
    fn of(query: Option<&str>) -> Query {
        Query(
            url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

fn with_headers(mut response: Response<Body>, content_type: &'static str) -> Response<Body> {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// A static part of the console, embedded in the binary.
fn page(body: &'static str, content_type: &'static str) -> Response<Body> {
    let mut response = with_headers(
        Response::new(Full::new(Bytes::from_static(body.as_bytes())).boxed()),
        content_type,
    );
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
             img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let mut response = with_headers(
        Response::new(Full::new(Bytes::from(value.to_string())).boxed()),
        "application/json",
    );
    *response.status_mut() = status;
    response
}

fn text(status: StatusCode, message: &'static str) -> Response<Body> {
    let mut response = with_headers(
        Response::new(Full::new(Bytes::from_static(message.as_bytes())).boxed()),
        "text/plain; charset=utf-8",
    );
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_name_drops_the_port() {
        assert_eq!(host_name("127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(host_name("localhost"), "localhost");
        assert_eq!(host_name("[::1]:80"), "::1");
    }

    #[test]
    fn query_values_are_decoded() {
        let query = Query::of(Some("tool=fs.read&q=read+a%20file"));
        assert_eq!(query.get("tool"), Some("fs.read"));
        assert_eq!(query.get("q"), Some("read a file"));
        assert_eq!(query.get("max"), None);
    }
}
