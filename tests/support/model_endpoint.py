#!/usr/bin/env python3
"""A scripted model endpoint standing in for the agents' model APIs in tests (issues 14 and 15).

Serves, on HOST:PORT (default 127.0.0.1, an ephemeral port), streaming replies in the shapes the
agent CLIs of the agent image use (REFERENCE.md section 4):
  - Anthropic Messages:      POST /v1/messages            (claude; pi with the anthropic API)
  - OpenAI Chat Completions: POST .../chat/completions    (opencode, pi)
  - OpenAI Responses:        POST .../responses           (codex)
  - Gemini:                  POST .../models/M:generateContent (JSON; gemini's model router gets an
                             instance of the response schema it asks for) and
                             POST .../models/M:streamGenerateContent?alt=sse (gemini)
Every reply is one assistant text turn whose text is $REPLY (default "ags-scripted-reply"). With
--tool-command CMD, a request that offers a shell tool and carries no tool result yet gets one call
of that tool running CMD instead (the tool is found by name among the request's tools; its
arguments follow the tool's parameter schema), and the request after it the text turn. With
--tool-call NAME=JSON, such a request that offers the tool NAME gets one call of it with the
arguments JSON instead (claude's `Skill {"skill": "x"}`, say). Other
requests get 404. Prints the port on stdout once listening, and appends one
JSON line per request (method, path, proxy-visible headers only: no bodies) to --log FILE.
With --tls-cert/--tls-key it speaks HTTPS. With --require-header NAME=VALUE a request without
that exact header gets 401 (the real API's answer to a wrong key); the log then says whether it
matched and whether VALUE appeared in any other header or the path.

usage: model_endpoint.py [--host H] [--port P] [--reply TEXT] [--tool-command CMD]
                         [--tool-call NAME=JSON] [--log FILE] [--tls-cert PEM --tls-key PEM]
                         [--require-header NAME=VALUE]
"""
import argparse
import http.server
import json
import socketserver
import sys
import time


SHELL_TOOLS = ("Bash", "bash", "shell", "exec_command", "shell_command", "run_shell_command")


def tool_list(req):
    """(name, JSON schema of the parameters) of every tool the request offers, in any API shape."""
    out = []
    for t in req.get("tools") or []:
        if not isinstance(t, dict):
            continue
        if "function" in t and isinstance(t["function"], dict):
            out.append((t["function"].get("name"), t["function"].get("parameters") or {}))
        elif "functionDeclarations" in t:
            for f in t["functionDeclarations"]:
                out.append((f.get("name"), f.get("parametersJsonSchema") or f.get("parameters") or {}))
        elif "name" in t:
            out.append((t["name"], t.get("input_schema") or t.get("parameters") or {}))
    return out


def has_tool_result(req):
    text = json.dumps(req)
    return any(k in text for k in ('"tool_result"', '"role": "tool"', '"function_call_output"', '"functionResponse"'))


def shell_call(req, command):
    """(tool name, arguments) calling the request's shell tool with COMMAND, or None."""
    if not command or has_tool_result(req):
        return None
    tools = dict(tool_list(req))
    name = next((n for n in SHELL_TOOLS if n in tools), None)
    if name is None:
        return None
    props = (tools[name] or {}).get("properties") or {}
    args = {}
    if "cmd" in props and "command" not in props:
        args["cmd"] = command
    elif (props.get("command") or {}).get("type") == "array":
        args["command"] = ["bash", "-lc", command]
    else:
        args["command"] = command
    if "description" in props:
        args["description"] = "run the scripted command"
    return name, args


def sse(events):
    return "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()


def anthropic(reply, model, call=None):
    if call:
        name, args = call
        msg = {"id": "msg_ags", "type": "message", "role": "assistant", "model": model, "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
        return sse([
            ("message_start", {"type": "message_start", "message": msg}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "tool_use", "id": "toolu_ags1", "name": name, "input": {}}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "input_json_delta", "partial_json": json.dumps(args)}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                               "usage": {"output_tokens": 1}}),
            ("message_stop", {"type": "message_stop"}),
        ])
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


def chat(reply, model, call=None):
    chunk = lambda delta, finish: {"id": "c", "object": "chat.completion.chunk", "created": int(time.time()),
                                   "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if call:
        name, args = call
        tc = {"index": 0, "id": "call_ags1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        body = "".join(f"data: {json.dumps(c)}\n\n" for c in [
            chunk({"role": "assistant", "content": None, "tool_calls": [tc]}, None), chunk({}, "tool_calls")])
        return (body + "data: [DONE]\n\n").encode()
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in [
        chunk({"role": "assistant", "content": reply}, None), chunk({}, "stop")])
    return (body + "data: [DONE]\n\n").encode()


def responses(reply, model, call=None):
    if call:
        name, args = call
        item = {"type": "function_call", "id": "fc_ags1", "call_id": "call_ags1", "name": name,
                "arguments": json.dumps(args), "status": "completed"}
    else:
        item = None
    item = item or {"type": "message", "id": "m", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": reply, "annotations": []}]}
    resp = {"id": "r", "object": "response", "model": model, "status": "completed", "output": [item],
            "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}
    return sse([
        ("response.created", {"type": "response.created", "response": dict(resp, status="in_progress", output=[])}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": resp}),
    ])


def instance(schema):
    """A value valid against a (simple) JSON schema: what gemini's model router asks for."""
    if not isinstance(schema, dict):
        return "scripted"
    if schema.get("enum"):
        return schema["enum"][0]
    t = schema.get("type")
    t = t.lower() if isinstance(t, str) else t
    if t == "object" or "properties" in schema:
        return {k: instance(v) for k, v in (schema.get("properties") or {}).items()}
    if t == "array":
        return []
    if t in ("integer", "number"):
        return schema.get("minimum", 1)
    if t == "boolean":
        return False
    return "scripted"


def gemini(reply, req, call=None, stream=True):
    gen = req.get("generationConfig") or {}
    schema = gen.get("responseJsonSchema") or gen.get("responseSchema")
    if call:
        part = {"functionCall": {"name": call[0], "args": call[1]}}
    elif schema and not stream:
        part = {"text": json.dumps(instance(schema))}
    else:
        part = {"text": reply}
    resp = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
            "modelVersion": req.get("model", "scripted")}
    if stream:
        return f"data: {json.dumps(resp)}\n\n".encode(), "text/event-stream"
    return json.dumps(resp).encode(), "application/json"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--reply", default="ags-scripted-reply")
    ap.add_argument("--tool-command")
    ap.add_argument("--tool-call")
    ap.add_argument("--log")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--require-header")
    args = ap.parse_args()
    required = args.require_header.split("=", 1) if args.require_header else None

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                req = json.loads(raw or b"{}")
            except ValueError:
                req = {}
            model = req.get("model", "scripted") if isinstance(req, dict) else "scripted"
            call = shell_call(req, args.tool_command) if isinstance(req, dict) else None
            if args.tool_call and isinstance(req, dict) and not has_tool_result(req):
                name, arguments = args.tool_call.split("=", 1)
                if name in dict(tool_list(req)):
                    call = (name, json.loads(arguments))
            path = self.path.split("?")[0]
            key_ok = None
            if required:
                key_ok = self.headers.get(required[0]) == required[1]
                elsewhere = required[1] in self.path or any(
                    required[1] in v for k, v in self.headers.items() if k.lower() != required[0].lower())
            if args.log:
                with open(args.log, "a") as f:
                    offered = [n for n, _ in tool_list(req)] if isinstance(req, dict) else []
                    entry = {"method": "POST", "path": path, "host": self.headers.get("Host"),
                             "tool_call": call[0] if call else None, "tools": offered}
                    if required:
                        entry.update(key_ok=key_ok, real_elsewhere=elsewhere)
                    f.write(json.dumps(entry) + "\n")
            if key_ok is False:
                body = b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}'
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            ctype = "text/event-stream"
            if path.endswith(":streamGenerateContent") or path.endswith(":generateContent"):
                stream = path.endswith(":streamGenerateContent")
                body, ctype = gemini(args.reply, req if isinstance(req, dict) else {}, call if stream else None, stream)
            elif path.endswith("/messages"):
                body = anthropic(args.reply, model, call)
            elif path.endswith("/chat/completions"):
                body = chat(args.reply, model, call)
            elif path.endswith("/responses"):
                body = responses(args.reply, model, call)
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", ctype)
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
    if args.tls_cert:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
