#!/usr/bin/env python3
"""A minimal stdio MCP server for the gateway benchmark (bench/gateway_ab.sh): newline-delimited
JSON-RPC on stdin/stdout, two tools: `echo {text}`, answered with the text, and `notify {count}`,
which sends count log messages before its answer (what a stream resumed with Last-Event-ID
replays: mcpbench resume --resume-via post). The same program runs
behind mcpactord --upstream and behind supergateway, so the figures differ by the gateway only.
Python with no imports beyond the standard library, run with -S: it starts in about 50 ms, so a handshake
(which starts a process) measures the gateway's spawn path as much as Python's start."""
import json
import sys

TOOLS = [{"name": "echo", "description": "Echoes text",
          "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
         {"name": "notify", "description": "Sends count log messages, then answers",
          "inputSchema": {"type": "object", "properties": {"count": {"type": "integer"}}}}]


def send(m):
    sys.stdout.write(json.dumps(m, separators=(",", ":")) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    method, mid = m.get("method"), m.get("id")
    if mid is None or method is None:
        continue  # a notification, or an answer to a request this server never sends
    if method == "initialize":
        result = {"protocolVersion": m["params"].get("protocolVersion", "2025-11-25"),
                  "capabilities": {"tools": {}, "logging": {}}, "serverInfo": {"name": "stdio-echo", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call" and m["params"].get("name") == "echo":
        text = (m["params"].get("arguments") or {}).get("text", "")
        result = {"content": [{"type": "text", "text": text}]}
    elif method == "tools/call" and m["params"].get("name") == "notify":
        count = int((m["params"].get("arguments") or {}).get("count", 1))
        for i in range(min(count, 100000)):
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": f"event {i}"}})
        result = {"content": [{"type": "text", "text": f"sent {count}"}]}
    elif method == "ping":
        result = {}
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "not found"}})
        continue
    send({"jsonrpc": "2.0", "id": mid, "result": result})
