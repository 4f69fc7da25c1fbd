"""An upstream MCP server on the official Python SDK (PyPI `mcp`) that takes part in traces:
the SDK wraps each request in a server span whose parent is the W3C `traceparent` of the
request's `_meta` (SEP-414), and this script exports those spans over OTLP/HTTP to
$OTEL_EXPORTER_OTLP_ENDPOINT (service.name `upstream`). Each `tools/call` also appends the
`_meta.traceparent` it received to the file $TRACED_SERVER_RECORD, one line a call.

    python tests/mcp/traced_server.py     # stdio

Tools:
  echo {text}   -> text
"""

from __future__ import annotations

import os

from mcp.server.mcpserver import Context, MCPServer
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

provider = TracerProvider(resource=Resource.create({"service.name": "upstream"}))
endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
if endpoint:
    # Each span is sent as it ends: the test reads them while the server still runs.
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
trace.set_tracer_provider(provider)

server = MCPServer("toolgate-test-traced-server")


@server.tool()
def echo(text: str, ctx: Context) -> str:
    """Answers with the text it was given."""
    meta = ctx.request_context.meta or {}
    record = os.environ.get("TRACED_SERVER_RECORD")
    if record:
        with open(record, "a") as f:
            f.write(f"{meta.get('traceparent', '')}\n")
    return text


if __name__ == "__main__":
    server.run("stdio")
