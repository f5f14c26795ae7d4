// The systems compared. Each one is { name, isolation, start(), runOne(), stop() }:
// runOne() runs PROGRAM once in a fresh isolate/runtime/context/process that it creates and
// tears down itself, and returns the program's result as JSON text. The runner times
// runOne() as a whole, so creation, the two tool calls, the result and teardown all count.

import { spawn, execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { createInterface } from "node:readline";
import { realpathSync } from "node:fs";
import path from "node:path";
import vm from "node:vm";

import { PROGRAM, mathAdd, wrapped } from "./program.mjs";

// The heap limit given to engines that take one: codemode's default (256 MiB).
const HEAP_MIB = 256;

// codemode as an agent reaches it: `codemode mcp --example-tools` over stdio,
// newline-delimited JSON-RPC, one `tools/call` of `execute` in flight at a time.
export function codemodePeer(bin) {
  let child;
  let nextId = 1;
  const pending = new Map();
  let stderr = "";
  const send = (msg) => child.stdin.write(JSON.stringify(msg) + "\n");
  const request = (method, params) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      send({ jsonrpc: "2.0", id, method, params });
    });
  let engine = "?";
  try {
    const check = execFileSync(bin, ["sandbox-check"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    engine = /engine (\S+?),/.exec(check)?.[1] ?? "?";
  } catch {
    // sandbox-check failing shows up again, more clearly, when the server starts
  }
  const engineName = { quickjs: "QuickJS", v8: "V8" }[engine] ?? engine;
  return {
    name: "codemode",
    isolation: `OS sandbox (user/pid/net/mount ns, seccomp, Landlock, rlimits, cgroup) + ${engineName}; process per program (forked ahead of demand into a warm pool); tools on the host, over a socket`,
    async start() {
      child = spawn(bin, ["mcp", "--example-tools"], { stdio: ["pipe", "pipe", "pipe"] });
      child.stderr.on("data", (d) => (stderr += d));
      const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
      exited.then(({ code, signal }) => {
        for (const { reject } of pending.values()) reject(new Error(`codemode mcp exited (${code ?? signal}): ${stderr.trim()}`));
        pending.clear();
      });
      createInterface({ input: child.stdout }).on("line", (line) => {
        let msg;
        try {
          msg = JSON.parse(line);
        } catch {
          return;
        }
        const p = pending.get(msg.id);
        if (!p) return;
        pending.delete(msg.id);
        if (msg.error) p.reject(new Error(`JSON-RPC error ${msg.error.code}: ${msg.error.message}`));
        else p.resolve(msg.result);
      });
      await request("initialize", {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "codemode-compare", version: "1" },
      });
      send({ jsonrpc: "2.0", method: "notifications/initialized" });
    },
    async runOne() {
      const result = await request("tools/call", { name: "execute", arguments: { code: PROGRAM } });
      const text = result?.content?.find((c) => c.type === "text")?.text;
      if (result?.isError) throw new Error(`execute failed: ${text}`);
      return text;
    },
    async stop() {
      child.stdin.end();
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.on("exit", resolve)));
    },
  };
}

// Runs one program in a fresh `deno run` process (under bwrap when `bwrapArgs` is given),
// the program on standard input, its tools defined inside it, its JSON on standard output.
// The cycle ends when the process has exited.
function denoProcess(cmd, args, env) {
  const source =
    `const tools = Object.freeze({ math: Object.freeze({ add: ${mathAdd.toString()} }) });\n` +
    `console.log(await ${wrapped()});\n`;
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"], env });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (d) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d) => (err += d));
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (code === 0) resolve(out.trim());
      else reject(new Error(`${path.basename(cmd)} exited (${code ?? signal}): ${err.trim().slice(0, 2000)}`));
    });
    child.stdin.end(source);
  });
}

const DENO_RUN = ["run", "--no-prompt", "--quiet", "--ext=js", "-"];

// `deno run` with no permissions, a new process per program.
export function denoPeer(denoBin, denoDir) {
  const env = { PATH: process.env.PATH, HOME: process.env.HOME ?? "/tmp", DENO_DIR: denoDir, DENO_NO_UPDATE_CHECK: "1" };
  return {
    name: "deno run",
    isolation: "V8, no Deno permissions granted; process per program; tools inside the program's process",
    async start() {},
    runOne: () => denoProcess(denoBin, DENO_RUN, env),
    async stop() {},
  };
}

// bubblewrap around `deno run`: every namespace unshared (no network), only the deno binary,
// its shared libraries and Deno's cache bound read-only, a fresh /proc, /dev and /tmp,
// an empty environment; a new process per program.
export function bwrapDenoPeer(bwrapBin, denoBin, denoDir) {
  const args = ["--unshare-all", "--die-with-parent", "--new-session", "--clearenv"];
  const libs = execFileSync("ldd", [denoBin], { encoding: "utf8" })
    .split("\n")
    .map((l) => /(\/\S+)\s+\(0x/.exec(l)?.[1])
    .filter(Boolean);
  for (const lib of libs) args.push("--ro-bind", realpathSync(lib), lib);
  args.push("--ro-bind", realpathSync(denoBin), "/deno");
  args.push("--ro-bind", realpathSync(denoDir), "/deno-dir");
  args.push("--setenv", "DENO_DIR", "/deno-dir", "--setenv", "DENO_NO_UPDATE_CHECK", "1", "--setenv", "HOME", "/tmp");
  args.push("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp");
  args.push("/deno", ...DENO_RUN);
  return {
    name: "bwrap + deno run",
    isolation: "OS sandbox (bwrap --unshare-all, no network, read-only binds) + V8, no Deno permissions; process per program; tools inside the program's process",
    bwrapArgs: args,
    async start() {},
    runOne: () => denoProcess(bwrapBin, args, {}),
    async stop() {},
  };
}

// isolated-vm: a new V8 isolate and context per program; math.add is a host function
// behind an ivm.Reference, called asynchronously (its promise crosses back into the isolate).
export function isolatedVmPeer(nodeModules) {
  const require = createRequire(path.join(nodeModules, "noop.js"));
  let ivm;
  const guestTools =
    "globalThis.tools = Object.freeze({ math: Object.freeze({ add: (input) => " +
    "$0.apply(undefined, [input], { arguments: { copy: true }, result: { promise: true, copy: true } }) }) });";
  return {
    name: "isolated-vm",
    isolation: "V8 isolate (own heap) in the host process; tools on the host via ivm.Reference",
    async start() {
      ivm = require("isolated-vm");
    },
    async runOne() {
      const isolate = new ivm.Isolate({ memoryLimit: HEAP_MIB });
      try {
        // The synchronous set-up calls: no thread-pool round trip for two quick steps.
        const context = isolate.createContextSync();
        const add = new ivm.Reference(mathAdd);
        context.evalClosureSync(guestTools, [add]);
        const json = await context.eval(wrapped(), { promise: true, copy: true });
        add.release();
        context.release();
        return json;
      } finally {
        isolate.dispose();
      }
    },
    async stop() {},
  };
}

// quickjs-emscripten: a new QuickJS runtime and context per program inside the one loaded
// WebAssembly module; math.add is a host function (newFunction) that answers a guest
// promise (newPromise) settled when the host's promise does, driven by executePendingJobs.
export function quickjsPeer(nodeModules) {
  const require = createRequire(path.join(nodeModules, "noop.js"));
  let QuickJS;
  return {
    name: "quickjs-emscripten",
    isolation: "QuickJS runtime in WebAssembly, in the host process; tools on the host via newFunction + newPromise",
    async start() {
      QuickJS = await require("quickjs-emscripten").getQuickJS();
    },
    async runOne() {
      const runtime = QuickJS.newRuntime();
      runtime.setMemoryLimit(HEAP_MIB * 1024 * 1024);
      const ctx = runtime.newContext();
      try {
        const add = ctx.newFunction("add", (inputHandle) => {
          const deferred = ctx.newPromise();
          let input;
          try {
            input = ctx.dump(inputHandle);
          } catch (e) {
            input = undefined;
          }
          mathAdd(input).then(
            (value) => {
              const h = ctx.newString(value);
              deferred.resolve(h);
              h.dispose();
            },
            (error) => {
              const h = ctx.newError(String(error?.message ?? error));
              deferred.reject(h);
              h.dispose();
            },
          );
          deferred.settled.then(() => {
            deferred.dispose();
            if (ctx.alive) runtime.executePendingJobs();
          });
          return deferred.handle;
        });
        const math = ctx.newObject();
        ctx.setProp(math, "add", add);
        const tools = ctx.newObject();
        ctx.setProp(tools, "math", math);
        ctx.setProp(ctx.global, "tools", tools);
        add.dispose();
        math.dispose();
        tools.dispose();
        const promise = ctx.unwrapResult(ctx.evalCode(wrapped()));
        const settled = ctx.resolvePromise(promise);
        promise.dispose();
        runtime.executePendingJobs();
        const outcome = await settled;
        const value = ctx.unwrapResult(outcome);
        const json = ctx.getString(value);
        value.dispose();
        return json;
      } finally {
        ctx.dispose();
        runtime.dispose();
      }
    },
    async stop() {},
  };
}

// Node's vm: a new context per program in the host's own isolate; math.add is the host's
// async function, passed in.
export function nodeVmPeer() {
  return {
    name: "node:vm",
    isolation: "none: a context in the host's own V8 isolate and heap (not a security boundary); tools are host functions",
    async start() {},
    async runOne() {
      const context = vm.createContext({ tools: Object.freeze({ math: Object.freeze({ add: mathAdd }) }) });
      return await new vm.Script(wrapped()).runInContext(context);
    },
    async stop() {},
  };
}
