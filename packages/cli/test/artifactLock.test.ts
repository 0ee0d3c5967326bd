/**
 * Two `rein batch` runs on one JSONL artifact, as real processes of the built binary: the second fails at once
 * (usage exit code, naming the file and the holder), the lock goes when a run ends or is interrupted, and a
 * run killed with `kill -9` leaves a stale lock that the next run takes over.
 */
import { describe, expect, it } from "@effect/vitest"
import type { ChildProcess } from "node:child_process"
import { execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import * as Binary from "../../../test/support/binary.js"

const { bin, root } = Binary
let tmp = ""

beforeAll(async () => {
  tmp = await Binary.prepare("rein-lock-")
}, 600_000)

afterAll(() => Binary.cleanUp(tmp))

interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const rein = (args: ReadonlyArray<string>): Promise<Result> =>
  new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { cwd: root, encoding: "utf8", timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : null
        resolve({ code, stdout, stderr })
      }
    )
  })

// Every call answers after 1 s: 48 prompts one at a time take ~48 s, long enough to meet the run while it runs.
const slow = () => {
  const file = path.join(tmp, "slow.json")
  fs.writeFileSync(
    file,
    JSON.stringify({ default: { kind: "ok", latency: "1 second", outputTokens: 10 }, endpoints: {} })
  )
  return file
}

// The examples' batch (48 prompts), plain progress on stderr.
const batchArgs = (out: string, again: "--overwrite" | "--resume"): Array<string> => [
  "batch",
  "--input",
  "examples/prompts.jsonl",
  "--catalog",
  "examples/catalog.json",
  "--contract",
  "examples/contract.json",
  "--scenario",
  slow(),
  "--concurrency",
  "1",
  "--out",
  out,
  again
]

/** Starts a run; resolves once it reported `done` items (it then holds the lock), with its exit. */
const started = async (out: string, again: "--overwrite" | "--resume", done = 1) => {
  const child: ChildProcess = spawn(process.execPath, [bin, ...batchArgs(out, again)], { cwd: root })
  let stderr = ""
  child.stderr!.setEncoding("utf8")
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on("data", (chunk: string) => {
      stderr += chunk
      if (new RegExp(`\\[ *${done}/48\\]`).test(stderr)) resolve()
    })
    void exited.then((code) => reject(new Error(`the run ended (${code}) before ${done} items: ${stderr}`)))
  })
  return { child, exited }
}

describe("two rein batch runs on one artifact", () => {
  it(
    "the second fails at once naming the file and the holder; kill -9 leaves a stale lock the next run takes",
    async () => {
      const out = path.join(tmp, "shared", "run.jsonl")
      const lock = `${out}.lock`
      const first = await started(out, "--overwrite")
      const second = await rein(batchArgs(out, "--resume"))
      expect(second.code).toBe(2)
      expect(second.stderr).toContain(`${out}: another rein batch run holds it (pid ${first.child.pid}`)
      expect(second.stderr).not.toMatch(/\n\s+at /)
      expect(fs.existsSync(lock)).toBe(true)
      // With --overwrite too: the file the first run writes is not truncated under it.
      expect((await rein(batchArgs(out, "--overwrite"))).code).toBe(2)

      first.child.kill("SIGKILL")
      await first.exited
      // The killed run's lock stays behind, stale: its pid is gone.
      expect(fs.existsSync(lock)).toBe(true)
      const third = await rein([...batchArgs(out, "--resume"), "--json"])
      expect(third.stderr).not.toMatch(/holds it/)
      expect(third.code).toBe(0)
      expect(JSON.parse(third.stdout).stats.reused).toBeGreaterThan(0)
      // Ended: the lock is gone.
      expect(fs.existsSync(lock)).toBe(false)
    },
    240_000
  )

  it("an interrupted run (Ctrl-C) releases the lock", async () => {
    const out = path.join(tmp, "interrupted", "run.jsonl")
    const run = await started(out, "--overwrite")
    expect(fs.existsSync(`${out}.lock`)).toBe(true)
    run.child.kill("SIGINT")
    expect(await run.exited).toBe(130)
    expect(fs.existsSync(`${out}.lock`)).toBe(false)
  }, 240_000)
})
