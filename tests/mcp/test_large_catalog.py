"""The large-catalog mode on docs/serving.md's example, driven by the official MCP Python SDK:
the MCP reference "everything" server (from npm) beside 84 recorded servers' tool lists
(plugins/large-catalog/), some 1,800 tools.

Run by scripts/test-mcp-server.sh, which installs the everything server:

    python tests/mcp/test_large_catalog.py path/to/codemode path/to/mcp-server-everything

- past `catalog_budget`, the execute description lists plugins (summary and tool names)
  instead of declaring every tool, and is a small fraction of the declared size;
- one program searches the catalog in its own words, reads the declaration it found,
  and calls the tool it found, on the real reference server and on a recorded one;
- with the search model installed (scripts/test.sh installs it), `tools.$search` ranks
  by meaning and words once the tools are embedded (in the background: BM25 answers
  meanwhile and says so), finds tools whose words the query does not share, merges
  several phrasings, and the description names the ranker; with `search_model = "off"`
  it ranks by words alone and says that too;
- `catalog_budget = "unlimited"` declares every tool again (seed 000's rule).
"""

import json
import os
import subprocess
import sys
import tempfile

import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import harness
from harness import CODEMODE, ROOT, check

EVERYTHING = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.environ["MCP_EVERYTHING_BIN"]
MAKE_CONFIG = os.path.join(ROOT, "plugins/large-catalog/make_config.py")


RANKER = "all-MiniLM-L6-v2 + BM25"


def config(budget=None, search_model=None):
    path = os.path.join(tempfile.mkdtemp(prefix="codemode-large-catalog-"), "codemode.toml")
    extra = [] if budget is None else ["--budget", budget]
    subprocess.run([sys.executable, MAKE_CONFIG, EVERYTHING, path, *extra], check=True)
    if search_model is not None:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        with open(path, "w", encoding="utf-8") as f:
            f.write(f'[server]\nsearch_model = "{search_model}"\n\n{text}')
    return path


def text_of(result):
    return "".join(c.text for c in result.content if c.type == "text")


async def execute(session, code):
    result = await session.call_tool("execute", {"code": code})
    check(not result.is_error, f"{code}: {text_of(result)}")
    return json.loads(text_of(result))


async def description_for(path):
    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", path])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return (await session.list_tools()).tools[0].description


async def large(path):
    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", path])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            check([t.name for t in tools] == ["execute"], f"one execute tool: {[t.name for t in tools]}")
            description = tools[0].description
            # The reference server adds its sampling tool for a client that can sample, and
            # codemode can (it forwards a server's sampling to its own client): 16 tools.
            check("There are 1818 tools in 85 plugins, too many to declare here." in description, "the description counts the catalog")
            check(
                "- tools.everything (16 tools): The MCP reference server: echo, sums, images, annotations, resources, long operations, elicitation\n"
                in description,
                "the reference server is listed with its summary (85 plugins leave no room for tool names)",
            )
            check("- tools.github (" in description and "tools.zoom (" in description, "the recorded servers are listed")
            check("interface Tools" not in description and "a: number" not in description, "no tool is declared in full")
            check(len(description) < 20_000, f"the description stays under 20,000 characters: {len(description)}")

            # By meaning: wait for the background embedding (BM25 answers meanwhile and
            # says so), then find tools that share no word with the query.
            description_ranker = "it ranks by meaning and words together (all-MiniLM-L6-v2 + BM25)."
            check(description_ranker in description, "the description names the fused ranker")
            deadline = time.monotonic() + 300
            while True:
                ranker = (await execute(session, 'return { ranker: (await tools.$search("weather", { limit: 1 }))[0].ranker }'))["ranker"]
                if ranker == RANKER or time.monotonic() > deadline:
                    break
                check(ranker == "BM25 (the search model is still embedding the tools)", f"meanwhile: {ranker}")
                await anyio.sleep(1)
            check(ranker == RANKER, f"the tools were embedded: {ranker}")
            meaning = await execute(
                session,
                """
                const top = async (q) => (await tools.$search(q, { limit: 5 })).map(h => h.call);
                const either = await tools.$search(["open a bug", "report a defect in our repository"], { limit: 5 });
                return { hot: await top("how hot will it be in Paris tomorrow"), meeting: await top("put a meeting in my calendar"),
                         either: either.map(h => h.call), scores: either.map(h => h.score), rankers: [...new Set(either.map(h => h.ranker))] };
                """,
            )
            check(any(c.startswith("tools.openweather.get_") and "forecast" in c for c in meaning["hot"]),
                  f"a forecast for a question about heat: {meaning['hot']}")
            check("tools.google_calendar.create_event" in meaning["meeting"] or "tools.microsoft_365.create_calendar_event" in meaning["meeting"],
                  f"an event for a meeting: {meaning['meeting']}")
            check("tools.github.create_issue" in meaning["either"], f"two phrasings of one need, merged: {meaning['either']}")
            check(meaning["scores"] == sorted(meaning["scores"], reverse=True) and meaning["rankers"] == [RANKER],
                  f"scores best first, one ranker: {meaning['scores']} {meaning['rankers']}")

            # Search in the agent's words, read the declaration, call: one program.
            found = await execute(
                session,
                """
                const [hit] = await tools.$search("sum of two numbers", { limit: 1 });
                return { call: hit.call, declaration: hit.declaration, answer: await tools[hit.plugin][hit.tool]({ a: 2, b: 3 }) };
                """,
            )
            check(found["call"] == "tools.everything.get_sum", f"the search finds the reference server's sum: {found['call']}")
            check("a: number;" in found["declaration"] and "b: number;" in found["declaration"], f"its declaration: {found['declaration']}")
            check(found["answer"] == "The sum of 2 and 3 is 5.", f"the real server answered: {found['answer']}")

            weather = await execute(
                session,
                """
                const hits = await tools.$search("forecast for tomorrow in Paris", { limit: 5 });
                const hit = hits.find(h => h.call === "tools.openweather.get_forecast");
                return { calls: hits.map(h => h.call), answer: await tools[hit.plugin][hit.tool]({ location: "Paris" }) };
                """,
            )
            check("tools.openweather.get_forecast" in weather["calls"], f"a recorded server's tool is found: {weather['calls']}")
            check(weather["answer"].startswith("openweather."), f"and called: {weather['answer']}")

            # One plugin only, more results.
            only = await execute(session, 'return (await tools.$search("image", { plugin: "everything", limit: 20 })).map(h => h.plugin)')
            check(only and set(only) == {"everything"}, f"a search of one plugin stays in it: {only}")
    return description


async def words_alone(path):
    """With the model turned off: BM25, said in the description and in each hit."""
    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", path])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            description = (await session.list_tools()).tools[0].description
            check("it ranks by the query's words (BM25)." in description, "without the model, the description says BM25")
            hits = await execute(session, 'return (await tools.$search("how hot will it be in Paris tomorrow")).map(h => h.ranker)')
            check(hits and set(hits) == {"BM25"}, f"and so does each hit: {hits}")


async def main():
    small = await large(config())
    await words_alone(config(search_model="off"))
    full = await description_for(config("unlimited"))
    check("The 1818 tools, as TypeScript declarations" in full and "There are 1818 tools" not in full, "unlimited declares every tool")
    check(len(full) > 20 * len(small), f"unlimited is far larger: {len(full)} against {len(small)}")
    print(f"large catalog over MCP: {harness.CHECKS} checks passed; execute description {len(small):,} characters "
          f"past the budget, {len(full):,} with every tool declared")


if __name__ == "__main__":
    anyio.run(main)
