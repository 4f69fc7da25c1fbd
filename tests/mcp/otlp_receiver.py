"""A small OTLP receiver for the tests: over HTTP it answers `POST /v1/traces` and
`POST /v1/metrics` with protobuf bodies (`ExportTraceServiceRequest`,
`ExportMetricsServiceRequest`); over gRPC (`GrpcReceiver`, PyPI `grpcio`) it serves the
collector's `TraceService` and `MetricsService`. Everything is decoded with the official
definitions and service stubs (PyPI `opentelemetry-proto`), and every span and data point it was
sent is kept.

    receiver = Receiver.start()          # on 127.0.0.1, a free port
    receiver.endpoint                    # http://127.0.0.1:PORT (what OTEL_EXPORTER_OTLP_ENDPOINT takes)
    receiver.spans()                     # list of Span records, in arrival order
    receiver.points()                    # list of Point records (metrics), in arrival order
    receiver.stop()

    grpc = GrpcReceiver.start()          # the same, over gRPC; grpc.endpoint is http://127.0.0.1:PORT
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

# Spans kept at most: a test that sends more has a loop.
MAX_SPANS = 10_000
# Metric data points kept at most (each export of cumulative metrics sends them all again).
MAX_POINTS = 100_000
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


@dataclass
class Point:
    """One data point of one metric, as an export carried it."""

    service: str
    scope: str
    name: str
    unit: str
    # "sum", "gauge", "histogram" (what the metric's `data` oneof holds)
    kind: str
    # sums: whether monotonic; and the aggregation temporality (1 delta, 2 cumulative)
    monotonic: bool
    temporality: int
    attributes: dict[str, Any]
    # a sum's or gauge's value; a histogram's count
    value: float
    # histograms: sum, explicit bounds and per-bucket counts
    total: float = 0.0
    bounds: list[float] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    # which export (request) it came in, counting from 1
    export: int = 0


def _number(p: Any) -> float:
    kind = p.WhichOneof("value")
    return float(getattr(p, kind)) if kind else 0.0


class _Store:
    """What the HTTP and the gRPC receivers keep, and how they decode it."""

    def __init__(self) -> None:
        self._spans: list[Span] = []
        self._points: list[Point] = []
        self._exports = 0
        self._lock = threading.Lock()

    def _keep_metrics(self, request: ExportMetricsServiceRequest) -> None:
        with self._lock:
            self._exports += 1
            export = self._exports
        points = []
        for resource_metrics in request.resource_metrics:
            service = ""
            for attr in resource_metrics.resource.attributes:
                if attr.key == "service.name":
                    service = _value(attr.value)
            for scope_metrics in resource_metrics.scope_metrics:
                for m in scope_metrics.metrics:
                    kind = m.WhichOneof("data")
                    base = dict(service=service, scope=scope_metrics.scope.name, name=m.name, unit=m.unit, kind=kind or "", export=export)
                    if kind == "sum":
                        for p in m.sum.data_points:
                            points.append(Point(**base, monotonic=m.sum.is_monotonic, temporality=m.sum.aggregation_temporality,
                                                attributes={a.key: _value(a.value) for a in p.attributes}, value=_number(p)))
                    elif kind == "gauge":
                        for p in m.gauge.data_points:
                            points.append(Point(**base, monotonic=False, temporality=0,
                                                attributes={a.key: _value(a.value) for a in p.attributes}, value=_number(p)))
                    elif kind == "histogram":
                        for p in m.histogram.data_points:
                            points.append(Point(**base, monotonic=True, temporality=m.histogram.aggregation_temporality,
                                                attributes={a.key: _value(a.value) for a in p.attributes}, value=float(p.count),
                                                total=p.sum, bounds=list(p.explicit_bounds), counts=list(p.bucket_counts)))
        with self._lock:
            room = MAX_POINTS - len(self._points)
            self._points.extend(points[: max(room, 0)])

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

    def points(self) -> list[Point]:
        with self._lock:
            return list(self._points)

    def exports(self) -> int:
        """How many metric exports arrived."""
        with self._lock:
            return self._exports


class Receiver(_Store):
    def __init__(self) -> None:
        super().__init__()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server convention)
                length = int(self.headers.get("Content-Length") or 0)
                if self.path not in ("/v1/traces", "/v1/metrics") or length > MAX_BODY:
                    self.send_error(413 if length > MAX_BODY else 404)
                    return
                body = self.rfile.read(length)
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path == "/v1/metrics":
                    metrics = ExportMetricsServiceRequest()
                    metrics.ParseFromString(body)
                    receiver._keep_metrics(metrics)
                    answer = ExportMetricsServiceResponse().SerializeToString()
                else:
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

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class GrpcReceiver(_Store):
    """The collector's gRPC services (`TraceService/Export`, `MetricsService/Export`) on
    127.0.0.1, on the stubs `opentelemetry-proto` generates, served by `grpcio`."""

    def __init__(self) -> None:
        super().__init__()
        try:
            import grpc
            from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
            from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
        except ImportError as e:
            raise RuntimeError(f"no grpcio ({e}): install the test packages with `bash scripts/venv.sh`") from e
        from concurrent import futures

        store = self

        class Traces(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:  # noqa: N802
                store._keep(request)
                return ExportTraceServiceResponse()

        class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
            def Export(self, request: ExportMetricsServiceRequest, context: Any) -> ExportMetricsServiceResponse:  # noqa: N802
                store._keep_metrics(request)
                return ExportMetricsServiceResponse()

        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), self._server)
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), self._server)
        self._port = self._server.add_insecure_port("127.0.0.1:0")

    @classmethod
    def start(cls) -> "GrpcReceiver":
        receiver = cls()
        receiver._server.start()
        return receiver

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def stop(self) -> None:
        self._server.stop(grace=None)
