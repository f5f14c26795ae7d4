// Runs PROGRAM on every system, one program at a time, and prints a Markdown table of
// p50/p95 per system with the ratios of the p50s to codemode's and quickjs-emscripten's.
// Started by scripts/compare.sh, which installs the peers; see there for the options.
//
//   node scripts/compare/run.mjs --n N --codemode BIN --deno BIN --bwrap BIN
//        --node-modules DIR [--deno-dir DIR] [--warmup 20] [--block 20] [--only name,name]

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import os from "node:os";
import { performance } from "node:perf_hooks";

import { EXPECTED, PROGRAM } from "./program.mjs";
import { bwrapDenoPeer, codemodePeer, denoPeer, isolatedVmPeer, nodeVmPeer, quickjsPeer } from "./peers.mjs";

function parseArgs(argv) {
  const opts = { n: 300, warmup: 20, block: 20 };
  for (let i = 0; i < argv.length; i++) {
    const [key, inline] = argv[i].replace(/^--/, "").split(/=(.*)/s);
    const value = inline ?? argv[++i];
    opts[key.replace(/-(.)/g, (_, c) => c.toUpperCase())] = value;
  }
  opts.n = Number(opts.n);
  opts.warmup = Number(opts.warmup);
  opts.block = Number(opts.block);
  if (!Number.isInteger(opts.block) || opts.block < 1) throw new Error(`--block must be a positive integer, not ${opts.block}`);
  if (!Number.isInteger(opts.n) || opts.n < 1) throw new Error(`--n must be a positive integer, not ${opts.n}`);
  return opts;
}

// Nearest-rank percentile of sorted values.
function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

const ms = (v) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v >= 1 ? v.toFixed(2) : v.toFixed(3)) + " ms";
const ratio = (v, base) => (base ? (v / base >= 10 ? (v / base).toFixed(0) : (v / base).toFixed(2)) + "×" : "n/a");

function cpuModel() {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"));
    if (m) return m[1].trim();
  } catch {}
  return os.cpus()[0]?.model ?? "unknown";
}

function sh(cmd, args) {
  try {
    return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "?";
  }
}

function pkgVersion(nodeModules, name) {
  try {
    return JSON.parse(readFileSync(`${nodeModules}/${name}/package.json`, "utf8")).version;
  } catch {
    return "?";
  }
}

// One timed program: a wrong answer is a failure, not a figure.
async function timeOne(peer) {
  const t0 = performance.now();
  const got = await peer.runOne();
  const t = performance.now() - t0;
  if (got !== EXPECTED) throw new Error(`returned ${JSON.stringify(got)}, expected ${EXPECTED}`);
  return t;
}

// Starts every system, checks its first answer and runs its warm-up, then runs the timed
// programs in blocks taking turns (block programs of one system, then of the next), so that
// a change in the machine's load lands on every system rather than on whichever ran then.
async function measureAll(peers, { n, warmup, block }) {
  const state = [];
  for (const peer of peers) {
    const s = { peer, times: [], error: null, busy: 0 };
    state.push(s);
    process.stderr.write(`compare: ${peer.name}: start, check, ${warmup} warm-up... `);
    try {
      await peer.start();
      const first = await peer.runOne();
      if (first !== EXPECTED) throw new Error(`returned ${JSON.stringify(first)}, expected ${EXPECTED}`);
      for (let i = 0; i < warmup; i++) await timeOne(peer);
      process.stderr.write("ok\n");
    } catch (e) {
      s.error = e.message;
      process.stderr.write(`FAILED: ${e.message}\n`);
      await peer.stop().catch(() => {});
    }
  }
  process.stderr.write(`compare: ${n} timed programs per system, in turns of ${block}...\n`);
  for (let done = 0; done < n; done += block) {
    for (const s of state) {
      if (s.error) continue;
      try {
        const t0 = performance.now();
        for (let i = done; i < Math.min(n, done + block); i++) s.times.push(await timeOne(s.peer));
        s.busy += performance.now() - t0;
      } catch (e) {
        s.error = `program ${s.times.length + 1}: ${e.message}`;
        process.stderr.write(`compare: ${s.peer.name} FAILED: ${s.error}\n`);
        await s.peer.stop().catch(() => {});
      }
    }
  }
  const results = [];
  for (const s of state) {
    if (!s.error) await s.peer.stop().catch(() => {});
    if (s.error) {
      results.push({ peer: s.peer, error: s.error });
      continue;
    }
    const sorted = [...s.times].sort((a, b) => a - b);
    const r = { peer: s.peer, p50: percentile(sorted, 50), p95: percentile(sorted, 95), wall: s.busy / 1000 };
    process.stderr.write(`compare: ${s.peer.name}: p50 ${ms(r.p50)}, p95 ${ms(r.p95)} (${r.wall.toFixed(1)} s timed)\n`);
    results.push(r);
  }
  return results;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const denoDir = opts.denoDir ?? process.env.DENO_DIR;
  const peers = [
    codemodePeer(opts.codemode),
    bwrapDenoPeer(opts.bwrap, opts.deno, denoDir),
    denoPeer(opts.deno, denoDir),
    isolatedVmPeer(opts.nodeModules),
    quickjsPeer(opts.nodeModules),
    nodeVmPeer(),
  ].filter((p) => !opts.only || opts.only.split(",").includes(p.name));

  const header = [
    `date: ${new Date().toISOString().replace(/\.\d+Z$/, "Z")}`,
    `machine: Linux ${os.release()} (uname -r), ${cpuModel()}, ${os.availableParallelism?.() ?? os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB`,
    `versions: codemode ${sh(opts.codemode, ["--version"]).replace(/^codemode\s*/, "")}, node ${process.versions.node}, ` +
      `${sh(opts.deno, ["--version"]).split("\n")[0].replace(/ \(.*\)$/, "")}, ${sh(opts.bwrap, ["--version"])}, ` +
      `isolated-vm ${pkgVersion(opts.nodeModules, "isolated-vm")}, quickjs-emscripten ${pkgVersion(opts.nodeModules, "quickjs-emscripten")}`,
    `load average at start: ${os.loadavg().map((l) => l.toFixed(2)).join(", ")} (anything else running on the machine shows up in the figures)`,
    `program: ${PROGRAM}`,
    `runs: ${opts.n} programs per system, one at a time, after ${opts.warmup} warm-up programs (dropped), the systems taking turns in blocks of ${opts.block}; each program a fresh isolate/runtime/context/process, timed from request to result as the client sees it`,
  ];
  console.log(header.join("\n"));
  console.log();

  const results = await measureAll(peers, opts);

  const base = results.find((r) => r.peer.name === "codemode" && !r.error)?.p50;
  const qjs = results.find((r) => r.peer.name === "quickjs-emscripten" && !r.error)?.p50;
  const rows = [
    ["system", "isolation", "p50", "p95", "p50 / codemode", "p50 / quickjs-emscripten"],
    ["---", "---", "---:", "---:", "---:", "---:"],
  ];
  for (const r of results) {
    if (r.error) rows.push([r.peer.name, r.peer.isolation, "failed", "failed", "", ""]);
    else rows.push([r.peer.name, r.peer.isolation, ms(r.p50), ms(r.p95), ratio(r.p50, base), ratio(r.p50, qjs)]);
  }
  console.log(rows.map((cells) => `| ${cells.join(" | ")} |`).join("\n"));
  const failed = results.filter((r) => r.error);
  if (failed.length) {
    console.log();
    for (const r of failed) console.log(`${r.peer.name} failed: ${r.error}`);
    process.exitCode = 1;
  }
}

main().catch((e) => {
  console.error(`compare: ${e.stack ?? e}`);
  process.exit(1);
});
