"""An MCP server built with the official Python SDK (2.x) that asks its questions the
2026-07-28 way, for codemode's tests of its client side.

    python mcp2026_py_server.py PORT      (streamable HTTP at /mcp, stateless)

The SDK serves both revisions; codemode, asking with `server/discover`, speaks
2026-07-28 to it, so its question (a resolver returning `Elicit`) comes back as an
"input required" answer to the call, and codemode asks the person behind the program
and calls again with the answer.

Tools:
- `pick_color`: asks the person for a color (a form), answers "picked <color>";
- `era`: says which protocol revision and client the request came with;
- `echo(text)`: returns the text;
- `haiku(topic)`: asks the client's model for a haiku (a resolver returning `Sample`),
  answers "<model>: <text>".
Every `tools/list` it answers is appended to $COUNT_FILE when that is set.
"""

import json
import os
import sys
from typing import Annotated

import uvicorn
from pydantic import BaseModel, Field

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve, Sample
from mcp_types import CreateMessageResult, SamplingMessage, TextContent

server = MCPServer("mcp2026-py")


class Color(BaseModel):
    color: str = Field(description="Your favourite color")


def ask_color() -> Elicit[Color]:
    return Elicit("Which color should it be?", Color)


@server.tool(description="Asks the person for a color and says which one was picked.", structured_output=False)
def pick_color(color: Annotated[Color, Resolve(ask_color)]) -> str:
    return f"picked {color.color}"


@server.tool(description="Says which protocol revision and client the request came with.", structured_output=False)
def era(ctx: Context) -> str:
    meta = getattr(ctx.request_context, "meta", None)
    version = getattr(ctx.request_context, "protocol_version", None)
    return json.dumps({"protocol": str(version) if version else None, "meta": str(meta)[:200]})


def ask_haiku(topic: str) -> Sample:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=f"A haiku about {topic}"))
    return Sample([message], max_tokens=40, system_prompt="You write haiku.")


@server.tool(description="Asks the client's model for a haiku about the topic.", structured_output=False)
def haiku(topic: str, poem: Annotated[CreateMessageResult, Resolve(ask_haiku)]) -> str:
    return f"{poem.model}: {poem.content.text}"


@server.tool(description="Returns the text it was given.", structured_output=False)
def echo(text: str) -> str:
    return text


count_file = os.environ.get("COUNT_FILE")
if count_file:
    original = server.list_tools

    async def counted(*args, **kwargs):
        with open(count_file, "a") as f:
            f.write("list\n")
        return await original(*args, **kwargs)

    server.list_tools = counted

app = server.streamable_http_app(stateless_http=True, json_response=True)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
