#!/usr/bin/env python3
"""A scripted model endpoint standing in for the agents' model APIs in tests (issues 14 and 15).

Serves, on HOST:PORT (default 127.0.0.1, an ephemeral port), streaming replies in the shapes the
agent CLIs of the agent image use (REFERENCE.md section 4):
  - Anthropic Messages:      POST /v1/messages            (claude; pi with the anthropic API)
  - OpenAI Chat Completions: POST .../chat/completions    (opencode, pi)
  - OpenAI Responses:        POST .../responses           (codex)
Every reply is one assistant text turn whose text is $REPLY (default "ags-scripted-reply"); no
tool calls. Other requests get 404. Prints the port on stdout once listening, and appends one
JSON line per request (method, path, proxy-visible headers only: no bodies) to --log FILE.

usage: model_endpoint.py [--host H] [--port P] [--reply TEXT] [--log FILE]
"""
import argparse
import http.server
import json
import socketserver
import sys
import time


def sse(events):
    return "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()


def anthropic(reply, model):
    msg = {"id": "msg_ags", "type": "message", "role": "assistant", "model": model, "content": [],
           "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
    return sse([
        ("message_start", {"type": "message_start", "message": msg}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": reply}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": 1}}),
        ("message_stop", {"type": "message_stop"}),
    ])


def chat(reply, model):
    chunk = lambda delta, finish: {"id": "c", "object": "chat.completion.chunk", "created": int(time.time()),
                                   "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in [
        chunk({"role": "assistant", "content": reply}, None), chunk({}, "stop")])
    return (body + "data: [DONE]\n\n").encode()


def responses(reply, model):
    item = {"type": "message", "id": "m", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": reply, "annotations": []}]}
    resp = {"id": "r", "object": "response", "model": model, "status": "completed", "output": [item],
            "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}
    return sse([
        ("response.created", {"type": "response.created", "response": dict(resp, status="in_progress", output=[])}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": resp}),
    ])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--reply", default="ags-scripted-reply")
    ap.add_argument("--log")
    args = ap.parse_args()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                model = json.loads(raw or b"{}").get("model", "scripted")
            except ValueError:
                model = "scripted"
            path = self.path.split("?")[0]
            if args.log:
                with open(args.log, "a") as f:
                    f.write(json.dumps({"method": "POST", "path": path, "host": self.headers.get("Host")}) + "\n")
            if path.endswith("/messages"):
                body = anthropic(args.reply, model)
            elif path.endswith("/chat/completions"):
                body = chat(args.reply, model)
            elif path.endswith("/responses"):
                body = responses(args.reply, model)
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            self.send_error(404)

        def log_message(self, *a):
            pass

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    server = Server((args.host, args.port), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
