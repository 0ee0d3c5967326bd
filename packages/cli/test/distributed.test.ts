/**
 * `rein batch --store`, `rein worker` and `rein status` as a user runs them: the built binary against a real
 * PostgreSQL on loopback (TestServer), two processes on one run.
 */
import { describe, expect, it } from "@effect/vitest"
import { TestServer } from "@rein/postgres/testing"
import { Effect, Exit, Scope } from "effect"
import { spawn } from "node:child_process"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import * as Binary from "../../../test/support/binary.js"

const available = TestServer.binaries() !== undefined
const scope = Effect.runSync(Scope.make())
let url = ""
let tmp = ""

const rein = (args: ReadonlyArray<string>) => Binary.rein(args, { timeout: 120_000, maxBuffer: 64 * 1024 * 1024 })

const files = [
  "--input",
  "examples/prompts.jsonl",
  "--catalog",
  "examples/catalog.json",
  "--contract",
  "examples/contract.json"
]

beforeAll(async () => {
  if (!available) return
  tmp = await Binary.prepare("rein-distributed-")
  url = (await Effect.runPromise(Scope.extend(TestServer.start, scope))).url
}, 300_000)

afterAll(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
  Binary.cleanUp(tmp)
})

describe.skipIf(!available)("rein batch --store, rein worker, rein status", () => {
  it(
    "a run started by one process and joined by another: every prompt done once, the status from a third",
    async () => {
      const [started, joined] = await Promise.all([
        rein(["batch", "--store", url, "--run", "demo", ...files, "--concurrency", "4", "--json"]),
        // The worker may come before the run exists: it then fails cleanly; it is started again below.
        rein(["worker", "--store", url, "--run", "demo", ...files, "--concurrency", "4", "--json"])
      ])
      expect(started.stderr).not.toMatch(/\n\s+at /)
      expect([0, 1]).toContain(started.code)
      const report = JSON.parse(started.stdout)
      expect(report.started).toMatchObject({ runId: "demo", session: "created", items: 48 })
      expect(report.status.items).toEqual({ total: 48, pending: 0, leased: 0, done: 48 })
      expect(report.status.status).toBe("finished")
      if (joined.code === 2) expect(joined.stderr).toMatch(/--store: no run "demo"/)
      else expect(JSON.parse(joined.stdout).status.items.done).toBe(48)

      // Joined again after the end: nothing to lease, no call.
      const again = await rein(["worker", "--store", url, "--run", "demo", ...files, "--json"])
      expect(JSON.parse(again.stdout).worker.leased).toBe(0)

      const status = await rein(["status", "--store", url, "--run", "demo", "--json"])
      expect(status.code).toBe(0)
      const s = JSON.parse(status.stdout)
      expect(s.items.total).toBe(48)
      expect(Object.values(s.byCategory as Record<string, number>).reduce((a, b) => a + b, 0)).toBe(48)
      const text = await rein(["status", "--store", url, "--run", "demo"])
      expect(text.stdout).toMatch(/run demo\n/)
      expect(text.stdout).toMatch(/48: 48 done/)
    },
    240_000
  )

  it(
    "an input with two items of one id: the database finds it, the error names the id and both lines, no run",
    async () => {
      const input = join(tmp, "dup.jsonl")
      writeFileSync(
        input,
        ["\"first\"", "", "{\"id\":\"a\",\"prompt\":\"x\"}", "\"third\"", "{\"id\":\"a\",\"prompt\":\"y\"}", ""].join(
          "\n"
        )
      )
      const r = await rein(["batch", "--store", url, "--run", "dup", ...files.slice(2), "--input", input])
      expect(r.code).toBe(2)
      expect(r.stderr).toContain(`${input}: two items have the id "a": line 3 and line 5`)
      expect(r.stderr).not.toMatch(/\n\s+at /)
      const status = await rein(["status", "--store", url, "--run", "dup"])
      expect(status.stderr).toMatch(/no run "dup"/)
    },
    120_000
  )

  it(
    "an unknown run and an unreachable store are one line each, exit code 2, no stack trace, no password",
    async () => {
      const unknown = await rein(["status", "--store", url, "--run", "nope"])
      expect(unknown.code).toBe(2)
      expect(unknown.stderr).toMatch(/no run "nope"/)
      expect(unknown.stderr).toContain("rein batch --store URL --run ID --input … starts a run")
      const down = await rein(["status", "--store", "postgres://rein:s3cret@127.0.0.1:1/rein", "--run", "x"])
      expect(down.code).toBe(2)
      expect(down.stderr).not.toMatch(/s3cret/)
      expect(down.stderr).not.toMatch(/\n\s+at /)
    },
    120_000
  )

  it(
    "an item id or a run id longer than the store's keys hold is bad input naming the line or --run, not a store error",
    async () => {
      // Letters no compression shortens (a seeded generator): the database's index rows hold ~2.7 KB.
      let seed = 7
      const letters = Array.from({ length: 3000 }, () => {
        seed = (seed * 1103515245 + 12345) % 2147483648
        return String.fromCharCode(97 + (seed % 26))
      })
      const input = join(tmp, "long-id.jsonl")
      writeFileSync(input, `{"id":"ok","prompt":"x"}\n${JSON.stringify({ id: letters.join(""), prompt: "y" })}\n`)
      const r = await rein(["batch", "--store", url, "--run", "long-id", ...files.slice(2), "--input", input])
      expect(r.code).toBe(2)
      expect(r.stderr).toBe(
        `rein: ${input}: the id of item 1 (line 2) is 3000 bytes: an item id in a shared run holds at most 1024\n`
      )
      const run = await rein(["batch", "--store", url, "--run", letters.slice(0, 300).join(""), ...files])
      expect(run.code).toBe(2)
      expect(run.stderr).toBe("rein: --run: the run id is 300 bytes: a run id holds at most 256\n")
    },
    120_000
  )

  it(
    "a store that refuses the connection says why (the server's reason, its SQLSTATE), never the password",
    async () => {
      const withPassword = (u: string) => u.replace("postgres://rein@", "postgres://rein:hunter2@")
      // (the test server trusts loopback: the password is sent, and ignored)
      const noDb = await rein(["status", "--store", withPassword(url.replace(/\/postgres$/, "/nodb")), "--run", "x"])
      expect(noDb.code).toBe(2)
      expect(noDb.stderr).toBe(
        "rein: --store: cannot connect: PgClient: Failed to connect: database \"nodb\" does not exist (SQLSTATE 3D000)\n"
      )
      // A server message that would quote the password (here an option set to it) has it masked.
      const option = await rein([
        "status",
        "--store",
        `${withPassword(url)}?options=-c%20statement_timeout%3Dhunter2`,
        "--run",
        "x"
      ])
      expect(option.code).toBe(2)
      expect(option.stderr).toMatch(/invalid value for parameter "statement_timeout": "\*\*\*" \(SQLSTATE 22023\)/)
      expect(option.stderr).not.toContain("hunter2")
      // Not a URL (a port out of range): Node's error holds the whole string; only its kind is said.
      const bad = await rein(["status", "--store", "postgres://rein:hunter2@127.0.0.1:99999/rein", "--run", "x"])
      expect(bad.stderr).toBe("rein: --store: cannot connect: PgClient: Failed to connect (not a valid URL)\n")
    },
    120_000
  )

  it(
    "sslmode=require in --store: no SECURITY WARNING from pg on stderr, one line saying the server has no SSL",
    async () => {
      for (
        const query of [
          "sslmode=require",
          "sslmode=prefer",
          "sslmode=verify-ca",
          "uselibpqcompat=true&sslmode=require",
          // libpq's prefer would fall back to no SSL; node-postgres's never does.
          "uselibpqcompat=true&sslmode=prefer"
        ]
      ) {
        const r = await rein(["status", "--store", `${url}?${query}`, "--run", "x"])
        expect(r.code).toBe(2)
        expect(r.stderr).not.toMatch(/WARNING|uselibpqcompat|verify-full/)
        expect(r.stderr).toBe(
          "rein: --store: cannot connect: PgClient: Failed to connect: the server does not support SSL connections " +
            "(sslmode=disable, or leave sslmode out)\n"
        )
      }
      // verify-ca with libpq's meaning and no CA is node-postgres's own refusal: still one line, no warning.
      const noCa = await rein(["status", "--store", `${url}?uselibpqcompat=true&sslmode=verify-ca`, "--run", "x"])
      expect(noCa.code).toBe(2)
      expect(noCa.stderr.split("\n")).toHaveLength(2)
      const off = await rein(["status", "--store", `${url}?sslmode=disable`, "--run", "x"])
      expect(off.stderr).toMatch(/no run "x"/)
    },
    120_000
  )

  it(
    "Ctrl-C during rein batch --store: one line names the run and the command that rejoins it, which finishes it",
    async () => {
      // Half a second a call, two at a time: the run takes ~12 s, time to interrupt it after its first item.
      const slow = join(tmp, "slow.json")
      writeFileSync(slow, JSON.stringify({ default: { kind: "ok", latency: "500 millis", outputTokens: 20 } }))
      // The server trusts any password: this one is in the command line, never in what the binary prints.
      const store = url.replace("postgres://rein@", "postgres://rein:hunter2@")
      const args = ["batch", "--store", store, "--run", "ctrl-c", ...files, "--scenario", slow, "--concurrency", "2"]
      const child = spawn(process.execPath, [Binary.bin, ...args], { cwd: Binary.root })
      let stderr = ""
      child.stderr.setEncoding("utf8")
      child.stderr.on("data", (chunk: string) => (stderr += chunk))
      let exitCode: number | null | undefined = undefined
      const exited = new Promise<number | null>((resolve) =>
        child.on("exit", (code) => {
          exitCode = code
          resolve(code)
        })
      )
      // Interrupted once an item is done: the run is in the store.
      for (;;) {
        const s = await rein(["status", "--store", url, "--run", "ctrl-c", "--json"])
        if (exitCode !== undefined || (s.code === 0 && JSON.parse(s.stdout).items.done > 0)) break
      }
      child.kill("SIGINT")
      expect(await exited).toBe(130)
      expect(stderr).not.toContain("hunter2")
      const lines = stderr.split("\n").filter((line) => line !== "")
      expect(lines).toHaveLength(1)
      const said = /^interrupted: run ctrl-c stays in the store; rejoin it with: (.+) \(with the password for \*\*\*\)$/
        .exec(lines[0]!)
      expect(said).not.toBeNull()
      const words = said![1]!.split(" ")
      expect(words.slice(0, 2)).toEqual(["node", "packages/cli/dist/bin.js"])
      expect(words.slice(2)).toEqual(args.map((a) => a === store ? `'${a.replace("hunter2", "***")}'` : a))
      // The command, with the password put back, joins the run and finishes it: every item done once.
      const rejoined = await rein([...args, "--json"])
      expect(rejoined.code).toBe(0)
      const report = JSON.parse(rejoined.stdout)
      expect(report.started.session).toBe("joined")
      expect(report.status.status).toBe("finished")
      expect(report.status.items).toEqual({ total: 48, pending: 0, leased: 0, done: 48 })
    },
    240_000
  )
})
