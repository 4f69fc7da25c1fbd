"""The live console of `toolgate serve --http`, used as a person would: Debian's Chromium,
headless, driven by Selenium through Debian's chromedriver, while an agent (the official MCP
Python SDK) makes calls.

Each scenario checks one behaviour and exits 0 when it holds; a failed check raises with what
was expected and what the page showed. tests/tests/console.rs runs one scenario each:

    python tests/mcp/console_browser.py --toolgate target/debug/toolgate calls_appear_live

Chromium and chromedriver come from scripts/chromium.sh (scripts/test.sh runs it). Screenshots
go to --screenshots (default: a temporary folder); with TOOLGATE_BLESS=1 the ones the docs show
are written to docs/img/ too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

REPO = Path(__file__).resolve().parents[2]
CATALOG = REPO / "policies" / "examples" / "catalog.jsonl"
TOKEN = "console-test-token-7f3a"
INSTALL = "bash scripts/chromium.sh"

POLICY = """\
version: 1
dispatch:
  timeout: 2s
plugins:
  - name: testkit
tools:
  echo: {{timeout: 5s}}
rules:
  deny:
    - tools: [echo]
      args: {{text: "secret"}}
      reason: no secrets in echo
reduction:
  max_result_bytes: 20000
search:
  catalogs: [{catalog}]
redact: {{}}
mcp_servers:
  - name: time
    command: [mcp-server-time, --local-timezone, UTC]
serve:
  console: true
"""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def big_text(length: int) -> str:
    """What the testkit's `big_output {bytes: length}` returns (plugins/testkit/src/lib.rs)."""
    fill = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    lines, line = [], 1
    while sum(map(len, lines)) < length:
        prefix = f"line {line:06} "
        lines.append(prefix + fill[: 63 - min(len(prefix), 63)] + "\n")
        line += 1
    return "".join(lines)[:length]


def find_program(names: list[str], env: str) -> str:
    given = os.environ.get(env)
    if given:
        return given
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    raise AssertionError(f"{' or '.join(names)} is not installed: run `{INSTALL}` (scripts/test.sh does)")


class Serve:
    """One `toolgate serve --http` with the console on, behind a bearer token."""

    def __init__(self, toolgate: str, workdir: Path, policy_text: str, token: bool = True):
        self.workdir = workdir
        self.policy = workdir / "console.yaml"
        self.policy.write_text(policy_text)
        self.log = workdir / "serve.log"
        args = [toolgate, "serve", "--policy", str(self.policy), "--http", "127.0.0.1:0"]
        if token:
            (workdir / "token").write_text(TOKEN + "\n")
            args += ["--token-file", str(workdir / "token")]
        self.token = TOKEN if token else None
        env = {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "info"), "TOOLGATE_RESULTS_DIR": str(workdir / "results")}
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(self.log, "wb"), env=env)
        deadline = time.monotonic() + 60
        while True:
            found = re.search(r"listening on (http://\S+)\r?\n", self.log.read_text(errors="replace"))
            if found:
                self.mcp_url = found.group(1)
                self.base = self.mcp_url.rsplit("/", 1)[0]
                return
            check(self.process.poll() is None, f"serve exited early:\n{self.log.read_text()}")
            check(time.monotonic() < deadline, "serve did not say where it listens within 60 s")
            time.sleep(0.02)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError("serve did not stop within 30 s of SIGTERM")
        check(code == 0, f"serve ended with exit code {code}:\n{self.log.read_text(errors='replace')}")

    def client(self) -> tuple[httpx2.AsyncClient, Client]:
        headers = {"authorization": f"Bearer {self.token}"} if self.token else {}
        http = httpx2.AsyncClient(headers=headers, timeout=30)
        return http, Client(streamable_http_client(self.mcp_url, http_client=http), mode="legacy")

    def get(self, path: str, token: str | None = None) -> tuple[int, Any, bytes]:
        request = urllib.request.Request(self.base + path)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()


class Browser:
    """Headless Chromium on a fresh profile, nothing fetched from the network."""

    def __init__(self, workdir: Path):
        chromium = find_program(["chromium", "chromium-browser"], "TOOLGATE_CHROMIUM")
        driver = find_program(["chromedriver"], "TOOLGATE_CHROMEDRIVER")
        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for flag in [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", "--window-size=1500,900", f"--user-data-dir={workdir / 'profile'}",
        ]:
            options.add_argument(flag)
        # Both programs are given: Selenium Manager has nothing to look up or download.
        service = Service(executable_path=driver, log_output=str(workdir / "chromedriver.log"))
        self.driver = webdriver.Chrome(options=options, service=service)

    def open(self, serve: Serve) -> None:
        fragment = f"#token={serve.token}" if serve.token else ""
        self.driver.get(serve.base + "/ui" + fragment)
        self.wait(lambda d: d.find_element(By.ID, "status").text == "live", "the event stream to be live")

    def wait(self, predicate: Callable[[Any], Any], what: str, seconds: float = 10.0) -> Any:
        try:
            return WebDriverWait(self.driver, seconds, poll_frequency=0.01).until(predicate)
        except Exception as e:
            raise AssertionError(f"timed out waiting for {what}: {e!r}\n--- page\n{self.text('body')}") from None

    def text(self, selector: str) -> str:
        with contextlib.suppress(Exception):
            return self.driver.find_element(By.CSS_SELECTOR, selector).text
        return ""

    def rows(self) -> list[dict[str, str]]:
        """The calls the list shows, newest first, each as {class: text}, read in one go."""
        return self.driver.execute_script(
            """return Array.from(document.querySelectorAll('#calls tbody tr')).map(tr => {
                 const r = {call_id: tr.dataset.callId, outcome: tr.dataset.outcome};
                 for (const td of tr.cells) r[td.classList[0]] = td.textContent;
                 return r; });"""
        )

    def row_of(self, predicate: Callable[[dict[str, str]], bool]) -> dict[str, str] | None:
        return next((r for r in self.rows() if predicate(r)), None)

    def screenshot(self, opts: argparse.Namespace, name: str) -> None:
        out = Path(opts.screenshots) / name
        out.parent.mkdir(parents=True, exist_ok=True)
        check(self.driver.save_screenshot(str(out)), f"no screenshot written to {out}")
        if os.environ.get("TOOLGATE_BLESS") == "1":
            shutil.copyfile(out, REPO / "docs" / "img" / name)

    def quit(self) -> None:
        self.driver.quit()


@contextlib.asynccontextmanager
async def console(opts: argparse.Namespace, policy: str = POLICY, token: bool = True, browser: bool = True) -> AsyncIterator[tuple[Serve, Browser | None]]:
    with tempfile.TemporaryDirectory() as tmp:
        serve = Serve(opts.toolgate, Path(tmp), policy.format(catalog=CATALOG), token)
        page = None
        try:
            if browser:
                page = Browser(Path(tmp))
                page.open(serve)
            yield serve, page
        finally:
            if page is not None:
                page.quit()
            serve.stop()


# ---------------------------------------------------------------------------------------------
# scenarios


async def calls_appear_live(opts: argparse.Namespace) -> None:
    """A call shows up in the list as it happens (within a second, waiting on the page, not a
    clock); a denied call shows the rule that denied it; an offloaded result has its id and a
    pager; a secret in the arguments is masked in the call's detail."""
    async with console(opts) as (serve, page):
        assert page is not None
        http, client = serve.client()
        async with http, client:
            latencies = []
            for i in range(5):
                text = f"hello console {i}"
                sent = time.monotonic()
                result = await client.call_tool("echo", {"text": text})
                check(not result.is_error, f"echo failed: {result}")
                page.wait(lambda d: sum(1 for r in page.rows() if r.get("c-tool") == "echo" and r["outcome"] == "ok") == i + 1, f"call {i} in the list", seconds=5)
                latencies.append(time.monotonic() - sent)
            worst = max(latencies)
            print(f"event to page: median {sorted(latencies)[2] * 1000:.0f} ms, worst {worst * 1000:.0f} ms")
            check(worst < 1.0, f"a call took {worst:.3f} s to appear (latencies {latencies})")

            denied = await client.call_tool("echo", {"text": "secret"})
            check(denied.is_error, "the secret echo was not refused")
            row = page.wait(lambda d: page.row_of(lambda r: r.get("outcome") == "denied"), "the denied call in the list")
            check("deny[0]" in row["c-decision"] and "console.yaml:" in row["c-decision"], f"the denied row does not name its rule: {row}")
            check(row["c-outcome"] == "denied", f"the denied row's outcome: {row}")

            key = "ghp_" + "A1b2C3d4" * 5
            await client.call_tool("echo", {"text": f"the key is {key}"})
            await client.call_tool("big_output", {"bytes": 50000})
            big = page.wait(lambda d: page.row_of(lambda r: r.get("c-tool") == "big_output" and r.get("c-offload")), "the offloaded call with its result id")

            shown = str(len("the key is [REDACTED:github_token]"))
            masked = page.wait(lambda d: page.row_of(lambda r: r.get("c-tool") == "echo" and r.get("c-chars") == shown), "the call with a key, its result masked")
            page.driver.find_element(By.CSS_SELECTOR, f'#calls tr[data-call-id="{masked["call_id"]}"]').click()
            args = page.wait(lambda d: d.find_element(By.ID, "d-args").text or None, "the masked arguments")
            check(key not in args and "[REDACTED:github_token]" in args, f"the key is not masked in the arguments: {args}")
            preview = page.text("#d-preview")
            check(key not in preview and "[REDACTED:github_token]" in preview, f"the key is not masked in the preview: {preview}")

            page.driver.find_element(By.CSS_SELECTOR, f'#calls tr[data-call-id="{big["call_id"]}"]').click()
            page.wait(lambda d: d.find_element(By.ID, "d-page-at").text == "characters 0-20000 of 50000", "the first page of the offloaded result")
            check(page.text("#d-result-id") == big["c-offload"], "the pager reads another result")
            page.driver.find_element(By.ID, "d-next").click()
            page.wait(lambda d: d.find_element(By.ID, "d-page-at").text == "characters 20000-40000 of 50000", "the second page")
            second = page.driver.execute_script("return document.getElementById('d-page').textContent")
            check(second == big_text(50000)[20000:40000], f"the second page is not characters 20000-40000: {second[:80]!r}")
            page.driver.find_element(By.CSS_SELECTOR, f'#calls tr[data-call-id="{row["call_id"]}"]').click()
            page.wait(lambda d: "no secrets in echo" in d.find_element(By.ID, "d-facts").text, "the denied call's detail")
            page.screenshot(opts, "console-calls.png")


async def the_filters_narrow_the_list(opts: argparse.Namespace) -> None:
    """Filters by tool, session, principal and outcome show only the calls that match."""
    async with console(opts) as (serve, page):
        assert page is not None
        http_a, first = serve.client()
        http_b, second = serve.client()
        async with http_a, first, http_b, second:
            await first.call_tool("echo", {"text": "from the first agent"})
            await first.call_tool("fail", {"message": "boom"})
            await second.call_tool("echo", {"text": "from the second agent"})
            await second.call_tool("echo", {"text": "secret"})
            page.wait(lambda d: len(page.rows()) == 4 and all(r["outcome"] != "running" for r in page.rows()), "four finished calls")
            rows = page.rows()
            sessions = {r["c-session"] for r in rows}
            check(len(sessions) == 2, f"two agents, two sessions: {sessions}")
            principals = {r["c-principal"] for r in rows}
            check(len(principals) == 1 and principals.pop().startswith("bearer:"), f"one principal, the token's: {rows}")

            first_session = next(r["c-session"] for r in rows if r["c-tool"] == "fail")
            page.driver.find_element(By.ID, "f-session").send_keys(first_session)
            page.wait(lambda d: {r["c-tool"] for r in page.rows()} == {"echo", "fail"} and len(page.rows()) == 2, "the first agent's two calls")
            page.driver.find_element(By.ID, "f-session").clear()
            page.driver.execute_script("document.getElementById('f-session').dispatchEvent(new Event('input'))")

            page.driver.find_element(By.ID, "f-tool").send_keys("fail")
            page.wait(lambda d: [r["c-tool"] for r in page.rows()] == ["fail"], "only the fail call")
            page.driver.find_element(By.ID, "f-tool").clear()
            page.driver.execute_script("document.getElementById('f-tool').dispatchEvent(new Event('input'))")

            Select(page.driver.find_element(By.ID, "f-outcome")).select_by_value("denied")
            page.driver.execute_script("document.getElementById('f-outcome').dispatchEvent(new Event('input'))")
            page.wait(lambda d: [r["outcome"] for r in page.rows()] == ["denied"], "only the denied call")
            Select(page.driver.find_element(By.ID, "f-outcome")).select_by_value("error")
            page.driver.execute_script("document.getElementById('f-outcome').dispatchEvent(new Event('input'))")
            page.wait(lambda d: sorted(r["outcome"] for r in page.rows()) == ["denied", "error"], "the failed and the denied call")

            page.driver.find_element(By.ID, "f-principal").send_keys("nobody")
            page.wait(lambda d: page.rows() == [], "no call of another principal")


async def explain_shows_the_source_of_each_setting(opts: argparse.Namespace) -> None:
    """The policy view's explain says where each setting of a tool comes from, as `toolgate
    explain` does."""
    async with console(opts) as (serve, page):
        assert page is not None
        page.driver.find_element(By.ID, "tab-policy").click()
        page.wait(lambda d: "console.yaml" in d.find_element(By.ID, "p-facts").text, "the policy's facts")
        rules = page.text("#p-rules")
        check("deny[0]" in rules and "no secrets in echo" in rules, f"the rules table: {rules}")

        def explain(tool: str) -> dict[str, tuple[str, str]]:
            page.driver.execute_script("document.getElementById('explain-head').textContent = ''")
            field = page.driver.find_element(By.ID, "explain-tool")
            field.clear()
            field.send_keys(tool)
            page.driver.find_element(By.ID, "explain-go").click()
            page.wait(lambda d: tool in d.find_element(By.ID, "explain-head").text, f"explain {tool}")
            return page.driver.execute_script(
                """const o = {}; for (const tr of document.querySelectorAll('#explain-result tbody tr'))
                     o[tr.dataset.setting] = [tr.cells[1].textContent, tr.cells[2].textContent]; return o;"""
            )

        echo = explain("echo")
        check(echo["timeout"] == ["5s", 'tools."echo".timeout'], f"echo's timeout: {echo}")
        check(echo["max_result_bytes"] == ["20000", "reduction.max_result_bytes"], f"echo's size: {echo}")
        check("rules" in echo["rules"][0], f"echo's rules: {echo}")
        page.screenshot(opts, "console-explain.png")
        fail = explain("fail")
        check(fail["timeout"] == ["2s", "dispatch.timeout"], f"fail's timeout: {fail}")
        cli = subprocess.run([opts.toolgate, "explain", "--policy", str(serve.policy), "echo", "--json"], capture_output=True, text=True, check=True)
        want = json.loads(cli.stdout)
        check(want["timeout_from"] == echo["timeout"][1], f"the CLI says {want['timeout_from']}, the console {echo['timeout'][1]}")


async def tools_upstreams_and_search(opts: argparse.Namespace) -> None:
    """The tools view lists the tools and the upstream server with its health; the search box
    ranks the catalog as tool_search does and says why each tool ranked."""
    async with console(opts) as (serve, page):
        assert page is not None
        page.driver.find_element(By.ID, "tab-tools").click()
        page.wait(lambda d: d.find_elements(By.CSS_SELECTOR, '#t-tools tr[data-tool="echo"]'), "echo in the tools")
        page.wait(lambda d: d.find_element(By.CSS_SELECTOR, '#t-upstreams tr[data-server="time"] td.state').text == "up", "the time server up")
        check(page.driver.find_elements(By.CSS_SELECTOR, '#t-tools tr[data-tool="time.get_current_time"]'), "the upstream's tool is listed")
        page.driver.find_element(By.ID, "tab-search").click()
        page.driver.find_element(By.ID, "search-q").send_keys("weather forecast")
        page.driver.find_element(By.ID, "search-go").click()
        first = page.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#search-results li[data-tool]"), "search results")[0]
        check(first.get_attribute("data-tool") == "weather_lookup", f"the first hit: {first.text}")
        check("why: weather in name" in first.text or "weather in" in first.text, f"no reason for the hit: {first.text}")
        page.screenshot(opts, "console-search.png")
        # Searching from the console found nothing for any session: an agent still does not
        # see the catalog tool.
        http, client = serve.client()
        async with http, client:
            names = [t.name for t in (await client.list_tools()).tools]
        check("weather_lookup" not in names, f"the console's search revealed a tool: {names}")


async def the_api_asks_for_the_token_and_bounds_streams(opts: argparse.Namespace) -> None:
    """The page is public (it holds no data); every view of data asks for the bearer token, a
    foreign Host or Origin is refused, and at most 8 event streams are open at once."""
    async with console(opts, browser=False) as (serve, _):
        status, headers, body = serve.get("/ui")
        check(status == 200 and b"toolgate console" in body, f"the page: {status}")
        check("script-src 'self'" in headers.get("Content-Security-Policy", ""), f"no CSP: {headers}")
        for path in ["/ui/api/calls", "/ui/api/events", "/ui/api/policy", "/ui/api/explain?tool=echo", "/ui/api/tools", "/ui/api/search?q=x"]:
            status, headers, _ = serve.get(path)
            check(status == 401 and headers.get("WWW-Authenticate") == "Bearer", f"{path} without the token: {status}")
            status, _, _ = serve.get(path, token="not-the-token")
            check(status == 401, f"{path} with a wrong token: {status}")
        status, _, body = serve.get("/ui/api/calls", token=TOKEN)
        check(status == 200 and json.loads(body)["calls"] == [], f"with the token: {status} {body!r}")
        rebound = urllib.request.Request(serve.base + "/ui/api/calls", headers={"Host": "evil.example", "Authorization": f"Bearer {TOKEN}"})
        try:
            urllib.request.urlopen(rebound, timeout=10)
            raise AssertionError("a foreign Host was served")
        except urllib.error.HTTPError as e:
            check(e.code == 403, f"a foreign Host got {e.code}")
        foreign = urllib.request.Request(serve.base + "/ui/api/calls", headers={"Origin": "http://evil.example", "Authorization": f"Bearer {TOKEN}"})
        try:
            urllib.request.urlopen(foreign, timeout=10)
            raise AssertionError("a foreign Origin was served")
        except urllib.error.HTTPError as e:
            check(e.code == 403, f"a foreign Origin got {e.code}")

        async with httpx2.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"}, timeout=10) as http:
            async with contextlib.AsyncExitStack() as stack:
                # Each reader is kept: dropping one closes its stream (and frees its place).
                readers = []
                for i in range(8):
                    response = await stack.enter_async_context(http.stream("GET", serve.base + "/ui/api/events"))
                    check(response.status_code == 200, f"stream {i + 1} got {response.status_code}")
                    readers.append(response.aiter_text())
                    first = await readers[-1].__anext__()
                    check(first.startswith("event: snapshot"), f"stream {i + 1} began with {first[:40]!r}")
                refused = await http.get(serve.base + "/ui/api/events")
                check(refused.status_code == 503 and "at most 8" in refused.json()["error"], f"a ninth stream: {refused.status_code} {refused.text}")
            # The eight closed: there is room again as soon as serve sees them gone (it reads
            # each connection's end; the keep-alive comment every 15 s is the bound).
            deadline = time.monotonic() + 20
            while True:
                async with http.stream("GET", serve.base + "/ui/api/events") as again:
                    if again.status_code == 200:
                        break
                    check(again.status_code == 503, f"after closing, a stream got {again.status_code}")
                check(time.monotonic() < deadline, "closed streams did not give their places back within 20 s")
                await asyncio.sleep(0.05)


async def the_console_is_off_by_default(opts: argparse.Namespace) -> None:
    """Without serve.console: true, /ui is not there; a reload that turns it on brings it,
    and the calls made from then on are in it."""
    policy = POLICY.replace("serve:\n  console: true\n", "")
    async with console(opts, policy=policy, token=False, browser=False) as (serve, _):
        for path in ["/ui", "/ui/api/calls"]:
            status, _, _ = serve.get(path)
            check(status == 404, f"{path} with the console off: {status}")
        serve.policy.write_text(POLICY.format(catalog=CATALOG))
        deadline = time.monotonic() + 20
        while serve.get("/ui")[0] != 200:
            check(time.monotonic() < deadline, f"the reload did not turn the console on:\n{serve.log.read_text()}")
            time.sleep(0.05)
        http, client = serve.client()
        async with http, client:
            await client.call_tool("echo", {"text": "after the reload"})
        status, _, body = serve.get("/ui/api/calls")
        rows = json.loads(body)["calls"]
        check(status == 200 and [r["tool"] for r in rows] == ["echo"] and rows[0]["principal"] == "local", f"the call after the reload: {status} {rows}")


# The server's bound on how far a stream may fall behind (BROADCAST in mcp/src/serve/console/hub.rs).
BACKLOG = 256


def sse_events(text: str) -> list[tuple[str, str]]:
    """The (event, data) pairs of server-sent-event text, comments left out."""
    events = []
    for block in text.split("\n\n"):
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[len("event: "):]
            elif line.startswith("data: "):
                data.append(line[len("data: "):])
        if data:
            events.append((name, "\n".join(data)))
    return events


async def a_slow_stream_loses_rows_and_is_told(opts: argparse.Namespace) -> None:
    """A console stream whose reader stops reading (a slow browser) while many calls run: the
    calls all end, a stream that reads keeps up and loses nothing, and the slow one, when it
    reads again, finds a `dropped` event saying how many rows it lost (what it got and what it
    lost add up to every row sent), then at most the server's backlog of rows: the server kept
    no more than that for it."""
    calls = 800
    async with console(opts, browser=False) as (serve, _):
        host, port = serve.base.split("//", 1)[1].split(":")
        # The slow reader: a small receive buffer, HTTP/1.0 so the body is the bare event text.
        slow = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.settimeout(10)
        slow.connect((host, int(port)))
        slow.sendall(
            f"GET /ui/api/events HTTP/1.0\r\nHost: {host}:{port}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode()
        )
        received = b""
        while b"event: snapshot" not in received or not received.endswith(b"\n\n"):
            chunk = slow.recv(65536)
            check(bool(chunk), f"the slow stream closed before its snapshot: {received!r}")
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        check(head.startswith(b"HTTP/1.0 200") or head.startswith(b"HTTP/1.1 200"), f"the slow stream: {head!r}")
        slow_text = body.decode()
        # From here on the slow reader reads nothing until every call has ended.

        fast_rows: list[dict[str, Any]] = []
        fast_dropped: list[int] = []
        fast_ready = asyncio.Event()
        headers = {"authorization": f"Bearer {TOKEN}"}

        async def read_fast() -> None:
            async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
                async with http.stream("GET", serve.base + "/ui/api/events") as response:
                    check(response.status_code == 200, f"the fast stream got {response.status_code}")
                    name = ""
                    async for line in response.aiter_lines():
                        if line.startswith("event: "):
                            name = line[len("event: "):]
                        elif line.startswith("data: "):
                            data = json.loads(line[len("data: "):])
                            if name == "snapshot":
                                fast_ready.set()
                            elif name == "call":
                                fast_rows.append(data)
                            elif name == "dropped":
                                fast_dropped.append(data["dropped"])
                            if len(fast_rows) + sum(fast_dropped) >= 2 * calls:
                                return

        fast = asyncio.create_task(read_fast())
        await asyncio.wait_for(fast_ready.wait(), 30)
        http, client = serve.client()
        started = time.monotonic()
        async with http, client:
            for first in range(0, calls, 20):
                batch = [client.call_tool("echo", {"text": f"call {i} " + "x" * 200}) for i in range(first, first + 20)]
                results = await asyncio.gather(*batch)
                check(all(not r.is_error for r in results), f"a call failed: {[r for r in results if r.is_error][:1]}")
        took = time.monotonic() - started
        await asyncio.wait_for(fast, 60)
        check(fast_dropped == [], f"the stream that reads lost rows: {fast_dropped}")
        check(len(fast_rows) == 2 * calls, f"the stream that reads got {len(fast_rows)} rows, want {2 * calls}")

        # Now the slow reader reads what the server has for it.
        slow.settimeout(2)
        deadline = time.monotonic() + 60
        while True:
            events = sse_events(slow_text)
            rows = sum(1 for name, _ in events if name == "call")
            lost = sum(json.loads(data)["dropped"] for name, data in events if name == "dropped")
            if rows + lost >= 2 * calls:
                break
            check(time.monotonic() < deadline, f"the slow stream has {rows} rows and {lost} lost of {2 * calls} after 60 s")
            try:
                chunk = slow.recv(65536)
            except socket.timeout:
                continue
            check(bool(chunk), "the slow stream was closed")
            slow_text += chunk.decode()
        slow.close()
    check(lost > 0, f"the slow stream lost nothing ({rows} rows): the test did not fill its buffers")
    check(rows + lost == 2 * calls, f"rows {rows} + lost {lost} != {2 * calls} rows sent")
    names = [name for name, _ in events]
    last_drop = len(names) - 1 - names[::-1].index("dropped")
    after = sum(1 for name in names[last_drop + 1:] if name == "call")
    check(after <= BACKLOG, f"{after} rows after the last dropped event: the server kept more than {BACKLOG} for the slow stream")
    print(f"{calls} calls in {took:.1f} s; the slow stream got {rows} rows and was told it lost {lost}; {after} after the gap")


SCENARIOS = {f.__name__: f for f in [
    calls_appear_live,
    the_filters_narrow_the_list,
    explain_shows_the_source_of_each_setting,
    tools_upstreams_and_search,
    the_api_asks_for_the_token_and_bounds_streams,
    the_console_is_off_by_default,
    a_slow_stream_loses_rows_and_is_told,
]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolgate", required=True)
    parser.add_argument("--screenshots", default=str(Path(tempfile.gettempdir()) / "toolgate-console-screenshots"))
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    opts = parser.parse_args()
    asyncio.run(SCENARIOS[opts.scenario](opts))
    print("ok")


if __name__ == "__main__":
    main()
