"""The official Python MCP client (PyPI `mcp`) against strad's /mcp, for the browser suite.

    python_client.py <url> <login token> <tool to call> <tool to be refused>

Connects as the SDK connects by default (`mode="auto"`: it asks `server/discover` of the
stateless revision first, then falls back to a session), lists the tools and resources,
calls one tool, reads the app resource of every tool that names one, tries a tool it must
be refused, and closes (the SDK ends its session with a DELETE). Prints one JSON object:
what each step gave, and the session id strad issued, so the test can check the session is
gone. Nothing here decides whether strad is right; the test does.
"""

import asyncio
import hashlib
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


async def main(url: str, token: str, tool: str, refused_tool: str) -> dict:
    seen: dict = {"session_ids": set(), "statuses": []}

    async def on_response(response: httpx2.Response) -> None:
        seen["statuses"].append([response.request.method, response.status_code])
        if session_id := response.headers.get("mcp-session-id"):
            seen["session_ids"].add(session_id)

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    http.event_hooks["response"].append(on_response)
    out: dict = {}
    async with http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            out["protocol_version"] = client.protocol_version
            listed = await client.list_tools()
            out["tools"] = sorted(t.name for t in listed.tools)
            called = await client.call_tool(tool, {})
            out["called"] = {
                "is_error": bool(called.is_error),
                "text": [c.text for c in called.content if getattr(c, "type", None) == "text"],
            }
            resources = await client.list_resources()
            out["resources"] = sorted(str(r.uri) for r in resources.resources)
            out["app_digests"] = {}
            for t in listed.tools:
                uri = ((t.meta or {}).get("ui") or {}).get("resourceUri")
                if uri:
                    read = await client.read_resource(uri)
                    text = read.contents[0].text
                    out["app_digests"][uri] = hashlib.sha256(text.encode()).hexdigest()
            try:
                result = await client.call_tool(refused_tool, {})
                out["refused"] = {"raised": False, "is_error": bool(result.is_error)}
            except MCPError as error:
                out["refused"] = {"raised": True, "message": str(error)}
    out["session_ids"] = sorted(seen["session_ids"])
    out["statuses"] = seen["statuses"]
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(*sys.argv[1:5]))))
