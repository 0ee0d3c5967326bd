/**
 * Two `rein batch` runs on one JSONL artifact, as real processes of the built binary: the second fails at once
 * (usage exit code, naming the file and the holder), the lock goes when a run ends or is interrupted, and a
 * run killed with `kill -9` leaves a stale lock that the next run takes over. Two names of one file (a symbolic
 * link, a relative path) share one lock; a holder in another PID namespace is not judged stale from here; a lock
 * path that is a FIFO, a link to `/dev/zero` or a 3 GiB file neither hangs nor wedges a run.
 */
import { describe, expect, it } from "@effect/vitest"
import type { ChildProcess } from "node:child_process"
import { execFile, execFileSync, spawn } from "node:child_process"
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

// A run that hangs is killed (SIGKILL: one blocked opening a FIFO ignores SIGTERM) after `timeout`.
const rein = (args: ReadonlyArray<string>, timeout = 120_000): Promise<Result> =>
  new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { cwd: root, encoding: "utf8", timeout, killSignal: "SIGKILL", maxBuffer: 64 * 1024 * 1024 },
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

/**
 * Starts a run (under `prefix`, a command such as `unshare …`, when given); resolves once it reported `done`
 * items (it then holds the lock), with its exit.
 */
const started = async (
  out: string,
  again: "--overwrite" | "--resume",
  done = 1,
  prefix: ReadonlyArray<string> = []
) => {
  const command = [...prefix, process.execPath, bin, ...batchArgs(out, again)]
  const child: ChildProcess = spawn(command[0]!, command.slice(1), { cwd: root })
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

// Whether this machine lets the tests start a process in a new PID namespace (root, or user namespaces).
const unshare = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]
const canUnshare = (() => {
  try {
    execFileSync(unshare[0]!, [...unshare.slice(1), "true"], { stdio: "ignore", timeout: 10_000 })
    return true
  } catch {
    return false
  }
})()

describe("the lock under attack", () => {
  it("two names of one file (a symbolic link, a relative path through it) share one lock", async () => {
    const dir = path.join(tmp, "names")
    const out = path.join(dir, "run.jsonl")
    const first = await started(out, "--overwrite")
    fs.symlinkSync("run.jsonl", path.join(dir, "link.jsonl"))
    for (const name of [path.join(dir, "link.jsonl"), path.relative(root, path.join(dir, ".", "link.jsonl"))]) {
      const second = await rein(batchArgs(name, "--resume"))
      expect(second.code).toBe(2)
      expect(second.stderr).toContain(`${name}: another rein batch run holds it (pid ${first.child.pid}`)
      expect(second.stderr).toContain(`lock ${fs.realpathSync(dir)}/run.jsonl.lock`)
    }
    first.child.kill("SIGINT")
    expect(await first.exited).toBe(130)
    expect(fs.readdirSync(dir).sort()).toEqual(["link.jsonl", "run.jsonl"])
  }, 240_000)

  it(
    "an artifact with a second name (a hard link) or that is a symbolic link to nothing is refused, saying why",
    async () => {
      const dir = path.join(tmp, "names-refused")
      fs.mkdirSync(dir)
      const out = path.join(dir, "run.jsonl")
      fs.writeFileSync(out, "")
      fs.linkSync(out, path.join(dir, "other.jsonl"))
      // Each name would take its own lock: two runs given the two names would both write the one file.
      for (const name of [out, path.join(dir, "other.jsonl")]) {
        const linked = await rein(batchArgs(name, "--overwrite"), 60_000)
        expect(linked.code).toBe(2)
        expect(linked.stderr).toContain(`${name} has 2 names (hard links): a run given another of them would not see`)
      }
      // A link to nothing: it said the artifact "already exists" (the exclusive create refuses a link).
      const dangling = path.join(dir, "dangling.jsonl")
      fs.symlinkSync("missing.jsonl", dangling)
      const r = await rein(batchArgs(dangling, "--overwrite"), 60_000)
      expect(r.code).toBe(2)
      expect(r.stderr).toContain(
        `${dangling} is a symbolic link to missing.jsonl, which does not exist: a new artifact is not created through ` +
          `a link; pass ${path.join(dir, "missing.jsonl")} as --out, or remove the link`
      )
      expect(r.stderr).not.toMatch(/already exists/)
      expect(fs.readdirSync(dir).sort()).toEqual(["dangling.jsonl", "other.jsonl", "run.jsonl"])
    },
    240_000
  )

  it.skipIf(!canUnshare)(
    "a run in another PID namespace holds the lock: not judged stale by a pid of ours",
    async () => {
      const out = path.join(tmp, "namespace", "run.jsonl")
      const first = await started(out, "--overwrite", 1, unshare)
      // Inside its namespace the holder is pid 1 (or near): here that pid is another, live process.
      const second = await rein(batchArgs(out, "--resume"))
      expect(second.code).toBe(2)
      expect(second.stderr).toMatch(/another rein batch run holds it \(pid \d+ in another PID namespace/)
      expect(second.stderr).toContain(`if that run is gone, remove ${out}.lock`)
      first.child.kill("SIGKILL")
      await first.exited
    },
    240_000
  )

  it(
    "a lock path that is a FIFO or a link to /dev/zero is refused, naming it; a 3 GiB lock is read no further",
    async () => {
      const dir = path.join(tmp, "hostile")
      fs.mkdirSync(dir)
      const out = path.join(dir, "run.jsonl")
      const lock = `${out}.lock`
      execFileSync("mkfifo", [lock])
      const fifo = await rein(batchArgs(out, "--overwrite"), 30_000)
      expect(fifo.code).toBe(2)
      expect(fifo.stderr).toContain(`cannot lock ${out}: ${lock} is a FIFO, not a lock file: remove it`)
      fs.rmSync(lock)
      fs.symlinkSync("/dev/zero", lock)
      const zero = await rein(batchArgs(out, "--overwrite"), 30_000)
      expect(zero.code).toBe(2)
      expect(zero.stderr).toContain(`${lock} is a symbolic link, not a lock file`)
      fs.rmSync(lock)
      // Sparse: no disk used. Garbage written long ago is a stale lock, taken over.
      fs.writeFileSync(lock, "")
      fs.truncateSync(lock, 3 * 1024 ** 3)
      const longAgo = new Date("2020-01-01T00:00:00Z")
      fs.utimesSync(lock, longAgo, longAgo)
      const run = await started(out, "--overwrite")
      expect(fs.statSync(lock).size).toBeLessThan(1024)
      run.child.kill("SIGINT")
      expect(await run.exited).toBe(130)
      expect(fs.existsSync(lock)).toBe(false)
    },
    240_000
  )
})
