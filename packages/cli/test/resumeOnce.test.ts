/**
 * `rein batch --resume` reads its artifact once: the run's own open (`Resume.open`) also tells which items
 * have records only under another identity, so the drift warning costs no second reading of the file. Run in
 * process over a file system that counts the bytes read from the artifact, and a console that keeps what is
 * said on stderr.
 */
import { NodeFileSystem } from "@effect/platform-node"
import * as FileSystem from "@effect/platform/FileSystem"
import { describe, expect, it } from "@effect/vitest"
import { Console, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { BatchCommand } from "../src/index.js"

const options = (out: string, resume: BatchCommand.BatchOptions["resume"]): BatchCommand.BatchOptions => ({
  input: "examples/prompts.jsonl",
  catalog: "examples/catalog.json",
  contract: "examples/contract.json",
  out,
  resume,
  overwrite: resume === undefined,
  guardrails: {},
  progress: "off"
})

// The node file system, counting the bytes read from `file` through every handle opened on it.
const counting = (file: string, read: { bytes: number }) =>
  Layer.effect(
    FileSystem.FileSystem,
    Effect.map(FileSystem.FileSystem, (inner) => ({
      ...inner,
      open: (p: string, o?: FileSystem.OpenFileOptions) =>
        Effect.map(inner.open(p, o), (handle) => {
          if (p !== file) return handle
          const original = handle.read.bind(handle)
          return Object.assign(handle, {
            read: (buffer: Uint8Array) =>
              Effect.tap(original(buffer), (n) => {
                read.bytes += Number(n)
              })
          })
        })
    }))
  ).pipe(Layer.provide(NodeFileSystem.layer))

// The console, but what Console.error says is kept in `said`.
const said: Array<string> = []
const keepingErrors = (console: Console.Console): Console.Console => ({
  ...console,
  error: (...args) => Effect.sync(() => void said.push(args.join(" ")))
})

describe("rein batch --resume", () => {
  it.effect(
    "reads the artifact once, and says how many items ran under another identity",
    () =>
      Effect.gen(function*() {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rein-resume-once-"))
        const out = path.join(dir, "run.jsonl")
        yield* BatchCommand.execute(options(out, undefined)).pipe(Effect.provide(NodeFileSystem.layer))
        // 6,000 records of other items under another identity after the run's 48: about 4 MiB, four chunks.
        const [manifest, record] = fs.readFileSync(out, "utf8").split("\n")
        const fingerprint = JSON.parse(manifest!).identityFingerprint as string
        const other = JSON.stringify({ ...JSON.parse(record!), identityFingerprint: `sha256:${"ab".repeat(32)}` })
        const lines: Array<string> = []
        for (let i = 0; i < 6000; i++) lines.push(other.replace(/"itemId":"[^"]*"/, `"itemId":"old-${i}"`))
        fs.appendFileSync(out, lines.join("\n") + "\n")
        const size = fs.statSync(out).size
        expect(size).toBeGreaterThan(3 * 2 ** 20)

        said.length = 0
        const read = { bytes: 0 }
        const report = yield* BatchCommand.execute(options(out, "reuse-successes")).pipe(
          Effect.provide(counting(out, read)),
          Effect.withConsole(keepingErrors(yield* Effect.console))
        )
        expect(report.stats.reused).toBe(48)
        expect(said).toHaveLength(1)
        expect(said[0]).toMatch(/run\.jsonl was written under another contract or version than this run's/)
        expect(said[0]).toMatch(/6000 of its 6048 items have records only under another contract or version/)
        expect(said[0]).not.toMatch(/changed:/) // the manifest is this run's identity's
        expect(said[0]).not.toContain(fingerprint)
        // One reading of the file, and the reused records read back from one window near its start.
        expect(read.bytes).toBeLessThan(size + 1.5 * 2 ** 20)
        fs.rmSync(dir, { recursive: true, force: true })
      }),
    60_000
  )
})
