"""A small OTLP/HTTP trace receiver for the tests: it answers `POST /v1/traces` with protobuf
bodies (`ExportTraceServiceRequest`), decoded with the official definitions (PyPI
`opentelemetry-proto`), and keeps every span it was sent.

    receiver = Receiver.start()          # on 127.0.0.1, a free port
    receiver.endpoint                    # http://127.0.0.1:PORT (what OTEL_EXPORTER_OTLP_ENDPOINT takes)
    receiver.spans()                     # list of Span records, in arrival order
    receiver.stop()
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

# Spans kept at most: a test that sends more has a loop.
MAX_SPANS = 10_000
# The largest request body read.
MAX_BODY = 16 * 1024 * 1024

KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    return None if kind is None else getattr(v, kind)


@dataclass
class Span:
    service: str
    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_span_id: str
    status: int
    attributes: dict[str, Any] = field(default_factory=dict)


class Receiver:
    def __init__(self) -> None:
        self._spans: list[Span] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server convention)
                length = int(self.headers.get("Content-Length") or 0)
                if self.path != "/v1/traces" or length > MAX_BODY:
                    self.send_error(404 if self.path != "/v1/traces" else 413)
                    return
                body = self.rfile.read(length)
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver._keep(request)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @classmethod
    def start(cls) -> "Receiver":
        receiver = cls()
        receiver._thread.start()
        return receiver

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def _keep(self, request: ExportTraceServiceRequest) -> None:
        spans = []
        for resource_spans in request.resource_spans:
            service = ""
            for attr in resource_spans.resource.attributes:
                if attr.key == "service.name":
                    service = _value(attr.value)
            for scope_spans in resource_spans.scope_spans:
                for s in scope_spans.spans:
                    spans.append(
                        Span(
                            service=service,
                            name=s.name,
                            kind=KINDS.get(s.kind, str(s.kind)),
                            trace_id=s.trace_id.hex(),
                            span_id=s.span_id.hex(),
                            parent_span_id=s.parent_span_id.hex(),
                            status=s.status.code,
                            attributes={a.key: _value(a.value) for a in s.attributes},
                        )
                    )
        with self._lock:
            room = MAX_SPANS - len(self._spans)
            self._spans.extend(spans[: max(room, 0)])

    def spans(self) -> list[Span]:
        with self._lock:
            return list(self._spans)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
