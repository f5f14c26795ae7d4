import { z } from "zod"

// Podcode's own recordChange pattern ("Asking for permission") and `truncation`, as a
// plugin. The runtime is sandboxed, without a file system: the document's helpers
// (readIfExists, writeFile, basename) keep the files in memory here, so the document's
// execute body runs unchanged.
const files = new Map()
const rewritten = new Set()
async function readIfExists(path) {
  return files.has(path) ? files.get(path) : null
}
async function writeFile(path, body) {
  files.set(path, body)
}
function basename(path) {
  return path.split("/").pop()
}

/** A build log of `kb` KiB: 64-byte lines numbered from 0, so each end is recognisable. */
function log(kb) {
  const lines = []
  for (let i = 0; i < (kb * 1024) / 64; i++) lines.push(`line ${String(i).padStart(6, "0")} `.padEnd(63, ".") + "\n")
  return lines.join("")
}

export default {
  id: "notes",

  server() {
    return {
      tool: () => [
        {
          id: "write_note",
          description: "Write a note file, asking first.",
          parameters: z.object({
            path: z.string().describe("The note's path."),
            body: z.string().describe("Its text."),
          }),
          async execute({ path, body }, ctx) {
            await ctx.ask({
              permission: "write",
              patterns: [path],
              metadata: { preview: body.slice(0, 200) },
            })

            const previous = await readIfExists(path)
            await writeFile(path, body)

            ctx.recordChange({
              file: path,
              op: previous === null ? "create" : "modify",
              oldContent: previous,
              newContent: body,
            })

            return { title: `wrote ${basename(path)}`, output: `Wrote ${body.length} bytes to ${path}.` }
          },
        },
        {
          id: "build_log",
          description: "The build log, newest lines last.",
          parameters: z.object({ kb: z.number().describe("How many KiB of log.") }),
          truncation: "tail",
          async execute({ kb }) {
            return { output: log(kb) }
          },
        },
        {
          id: "build_log_head",
          description: "The build log, oldest lines first.",
          parameters: z.object({ kb: z.number().describe("How many KiB of log.") }),
          async execute({ kb }) {
            return { output: log(kb) }
          },
        },
        {
          id: "rewrite",
          description: "Rewrite `count` files named `name` + their number with `bytes` of text each; with `fail`, throw once they are written.",
          parameters: z.object({
            name: z.string().describe("The files' name, numbered."),
            bytes: z.number().describe("Each file's new length."),
            count: z.number().default(1).describe("How many files."),
            fail: z.boolean().default(false).describe("Throw after writing."),
          }),
          async execute({ name, bytes, count, fail }, ctx) {
            // Only the names are kept here (the bodies could fill the plugin's memory).
            for (let i = 0; i < count; i++) {
              const path = `${name}${i}`
              const body = "x".repeat(bytes)
              const op = rewritten.has(path) ? "modify" : "create"
              rewritten.add(path)
              ctx.recordChange({ file: path, op, oldContent: null, newContent: body })
            }
            if (fail) throw new Error(`the index could not be updated after writing ${count} files`)
            return { output: `rewrote ${count} files` }
          },
        },
      ],
    }
  },
}
