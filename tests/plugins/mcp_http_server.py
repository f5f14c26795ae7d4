"""A remote MCP server for codemode's tests, built with the official MCP Python SDK
(streamable HTTP), behind an API key and a bearer token as hosted servers are.

    python mcp_http_server.py PORT      # needs REMOTE_KEY and REMOTE_TOKEN in its environment

Every request must carry `X-Api-Key: $REMOTE_KEY` and `Authorization: Bearer
$REMOTE_TOKEN`, else HTTP 401 (with a `WWW-Authenticate: Bearer` challenge). Tools:

- `whoami`: which credentials reached it (never their values);
- `long_job(steps)`: reports progress once per step and logs each step, then answers;
- `ask_profile`: asks the person a form (elicitation): a name with a default, an age
  without one; answers with what came back;
- `confirm_settings`: asks a form whose every field has a default;
- `open_page`: sends the person to a page (URL elicitation);
- `grow(name)`: adds a tool of that name and tells the client its tools changed.
"""

import json
import os
import sys

import uvicorn
from pydantic import BaseModel, Field

from mcp.server.mcpserver import Context, MCPServer

KEY = os.environ["REMOTE_KEY"]
TOKEN = os.environ["REMOTE_TOKEN"]

server = MCPServer("remote-test")


@server.tool(description="Says which credentials reached the server.", structured_output=False)
def whoami(ctx: Context) -> str:
    headers = ctx.headers or {}
    return json.dumps({"api_key": headers.get("x-api-key") == KEY, "bearer": headers.get("authorization") == f"Bearer {TOKEN}"})


@server.tool(description="Works through `steps` steps, reporting progress and logging each.", structured_output=False)
async def long_job(steps: int, ctx: Context) -> str:
    for step in range(1, steps + 1):
        await ctx.info(f"working on step {step}", logger_name="jobs")
        await ctx.report_progress(step, steps, f"step {step}")
    return f"done after {steps} steps"


class Profile(BaseModel):
    name: str = Field(default="Ann", description="Your name")
    age: int = Field(description="Your age")


@server.tool(description="Asks the person for their profile.", structured_output=False)
async def ask_profile(ctx: Context) -> str:
    answer = await ctx.elicit("Who are you?", Profile)
    if answer.action != "accept":
        return f"not given: {answer.action}"
    return json.dumps(answer.data.model_dump())


class Settings(BaseModel):
    color: str = Field(default="blue", description="A color")
    count: int = Field(default=3, description="How many")


@server.tool(description="Asks the person to confirm settings that all have defaults.", structured_output=False)
async def confirm_settings(ctx: Context) -> str:
    answer = await ctx.elicit("Use these settings?", Settings)
    if answer.action != "accept":
        return f"not given: {answer.action}"
    return json.dumps(answer.data.model_dump())


@server.tool(description="Sends the person to a page (URL elicitation).", structured_output=False)
async def open_page(ctx: Context) -> str:
    answer = await ctx.elicit_url("Sign in at the example service to continue.", "https://example.com/sign-in", "sign-in-1")
    return f"page: {answer.action}"


@server.tool(description="Adds a tool named `name`.", structured_output=False)
async def grow(name: str, ctx: Context) -> str:
    def grown() -> str:
        return f"{name} says hi"

    server.add_tool(grown, name=name, description="Grown at run time.", structured_output=False)
    await ctx.request_context.session.send_tool_list_changed()
    return "grown"


def guarded(app):
    """The app behind the API key and the bearer token."""

    async def asgi(scope, receive, send):
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            if headers.get("x-api-key") != KEY or headers.get("authorization") != f"Bearer {TOKEN}":
                await send({"type": "http.response.start", "status": 401, "headers": [(b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"credentials required"})
                return
        await app(scope, receive, send)

    return asgi


if __name__ == "__main__":
    port = int(sys.argv[1])
    app = guarded(server.streamable_http_app(host="127.0.0.1"))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
