/**
 * The `rein` binary as a user runs it: each test spawns `node packages/cli/dist/bin.js …` (built fresh
 * before the suite) and checks its output and exit code. Outputs go to a temporary directory.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFile, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import * as Binary from "../../../test/support/binary.js"
import * as Terminal from "../../../test/support/terminal.js"

const { bin, root } = Binary
const catalog = "examples/catalog.json"
const contract = "examples/contract.json"
const scenarios = "examples/scenarios"
let tmp = ""

interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

// Asynchronous, so that the test worker stays responsive while the binary runs.
const rein = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}): Promise<Result> =>
  new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { cwd: root, encoding: "utf8", env: { ...process.env, ...env }, timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : null
        resolve({ code, stdout, stderr })
      }
    )
  })

const file = (name: string, content: string): string => {
  const p = path.join(tmp, name)
  fs.writeFileSync(p, content)
  return p
}

/** Bad input: a message, a usage exit code, and no stack trace. */
const expectBadInput = (r: Result, mentions: RegExp) => {
  expect(r.code).toBe(2)
  expect(r.stderr).toMatch(mentions)
  expect(r.stderr).not.toMatch(/\n\s+at /)
  expect(r.stderr.split("\n").length).toBeLessThan(12)
}

// A contract and scenario that make fake/a fail every time, so a request retries and falls back.
const failingA = () =>
  file(
    "a-down.json",
    JSON.stringify({
      endpoints: { "fake/a": [{ behaviour: { kind: "fail", failure: "server_error", latency: "10 millis" } }] }
    })
  )

// The tests run the built binary: built fresh before the suite.
beforeAll(async () => {
  tmp = await Binary.prepare("rein-cli-")
}, 600_000)

afterAll(() => Binary.cleanUp(tmp))

describe("rein", () => {
  it("prints help with the exit codes, and its version", async () => {
    const help = await rein(["--help"])
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/plan/)
    expect(help.stdout).toMatch(/simulate/)
    // Help is wrapped at the terminal's width (80 columns when piped): read it with line breaks as spaces.
    expect(help.stdout.replace(/\s+/g, " ")).toMatch(
      /Exit codes: 0 ok; 1 request or run failed; 2 usage or bad input; 3 replay mismatch/
    )
    const version = await rein(["--version"])
    expect(version.code).toBe(0)
    expect(version.stdout).toMatch(/0\.1\.0/)
  }, 120_000)

  it("without a command says what to do and exits 2", async () => {
    const r = await rein([])
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/choose a command/)
  }, 60_000)
})

describe("rein plan", () => {
  it("shows every predicate of every candidate with its numbers, and the order of trial", async () => {
    const request = file("request.json", JSON.stringify({ inputTokens: 900, maxOutputTokens: 400 }))
    const r = await rein(["plan", "--catalog", catalog, "--contract", contract, "--request", request])
    expect(r.code).toBe(0)
    for (
      const p of ["listed", "capable", "mode", "simulation", "deadline", "budget", "calls", "retryBudget", "health"]
    ) {
      expect(r.stdout.split("\n").filter((l) => new RegExp(`^  [✓✗]  ${p} `).test(l)).length).toBe(3)
    }
    expect(r.stdout).toMatch(/window 32000 ≥ 900 input \+ 400 output/)
    expect(r.stdout).toMatch(/worst-case cost 0\.001 ≤ 0\.1 left/)
    expect(r.stdout).toMatch(/✗ +capable +no structured output/)
    expect(r.stdout).toMatch(/order of trial: fake\/a → fake\/b/)
    expect(r.stdout).toMatch(/first decision: attempt fake\/a with a 4000 ms timeout/)
  }, 60_000)

  it("without --request plans the default request, with numbers, and says where to give one", async () => {
    const r = await rein(["plan", "--catalog", catalog, "--contract", contract])
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(
      /^request: 900 input tokens, 400 max output tokens \(the default: give yours with --request, e\.g\. examples\/request\.json\)/
    )
    expect(r.stdout).toMatch(/#1 fake\/a: legal — reserves cost 0\.001 \/ 1300 tokens per attempt/)
    expect(r.stdout).toMatch(/✓ +budget +worst-case cost 0\.001 ≤ 0\.1 left/)
    expect(r.stdout).not.toMatch(/no reservation|unchecked/)
    // The shipped example request gives the same plan.
    const given = await rein([
      "plan",
      "--catalog",
      catalog,
      "--contract",
      contract,
      "--request",
      "examples/request.json"
    ])
    expect(given.stdout.split("\n").slice(1)).toEqual(r.stdout.split("\n").slice(1))
  }, 60_000)

  it("--json gives each candidate's eleven verdicts", async () => {
    const r = await rein(["plan", "--catalog", catalog, "--contract", contract, "--json"])
    expect(r.code).toBe(0)
    const report = JSON.parse(r.stdout)
    expect(report.order).toEqual(["fake/a", "fake/b"])
    expect(report.candidates).toHaveLength(3)
    for (const c of report.candidates) expect(c.predicates).toHaveLength(11)
    const tiny = report.candidates.find((c: { endpoint: string }) => c.endpoint === "fake/tiny")
    expect(tiny.legal).toBe(false)
    expect(tiny.order).toBeNull()
  }, 60_000)
})

describe("rein run, replay, explain", () => {
  it("creates the directory of a record file that does not exist yet (as on a fresh clone: --record .tmp/run.jsonl)", async () => {
    const record = path.join(tmp, "not-yet", "there", "rec.jsonl")
    const r = await rein(["run", "--catalog", catalog, "--contract", contract, "--prompt", "Hello", "--record", record])
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    expect(fs.readFileSync(record, "utf8").split("\n").filter((l) => l !== "")).toHaveLength(1)
  })

  it.skipIf(!fs.existsSync("/dev/full"))("rein batch --out /dev/full --overwrite says why in plain words", async () => {
    // The store truncates the file it overwrites: ftruncate on a device fails EINVAL. (files.test.ts checks
    // the same message without /dev/full.)
    const r = await rein([...batchArgs("/dev/full"), "--overwrite"])
    expectBadInput(
      r,
      /^rein: \/dev\/full: cannot truncate \/dev\/full: not a regular file \(the operation is invalid on it\)\n$/
    )
  }, 60_000)

  it.skipIf(!fs.existsSync("/dev/full"))(
    "a record that cannot be written (a full disk) is said, never 'recorded to', and rein run and rein batch exit 1",
    async () => {
      // /dev/full: the file opens, every write fails ENOSPC. The journal's append failure used to be a log line
      // followed by "recorded to /dev/full as request …" and exit 0.
      const run = await rein([
        "run",
        "--catalog",
        catalog,
        "--contract",
        contract,
        "--prompt",
        "Hello",
        "--record",
        "/dev/full"
      ])
      expect(run.stdout).toMatch(/^outcome: success on fake\/a/)
      expect(run.stdout).toContain(
        "not recorded: a record could not be written to /dev/full: no space left on the device"
      )
      expect(run.stdout).not.toMatch(/recorded to \/dev\/full/)
      expect(run.code).toBe(1)
      const out = path.join(tmp, "full-disk-journal.jsonl")
      const batch = await rein([...batchArgs(out), "--record", "/dev/full", "--json"])
      const report = JSON.parse(batch.stdout)
      expect(report).toMatchObject({
        ok: false,
        record: null,
        recordError: "48 records could not be written to /dev/full: no space left on the device"
      })
      expect(report.stats.succeeded).toBe(48)
      expect(batch.code).toBe(1)
    },
    120_000
  )

  it("runs one request on the fake provider, records it, and the record replays and explains", async () => {
    const record = path.join(tmp, "rec.jsonl")
    const r = await rein([
      "run",
      "--catalog",
      catalog,
      "--contract",
      contract,
      "--prompt",
      "Hello",
      "--record",
      record,
      "--file-mode",
      "640"
    ])
    expect(r.code).toBe(0)
    expect(fs.statSync(record).mode & 0o777).toBe(0o640 & ~process.umask())
    expect(r.stdout).toMatch(/outcome: success on fake\/a \(simulated\)/)
    expect(r.stdout).toMatch(/1 +fake\/a +first +success/)
    // The outcome names its journal record: the id `rein explain` shows.
    const id = /recorded to .* as request (req-[0-9a-z]+) \(rein replay/.exec(r.stdout)?.[1]
    expect(id).toBeDefined()
    const replay = await rein(["replay", record])
    expect(replay.code).toBe(0)
    expect(replay.stdout).toMatch(/every decision reproduces byte for byte/)
    const explain = await rein(["explain", record])
    expect(explain.code).toBe(0)
    expect(explain.stdout).toMatch(/attempt 1 on fake\/a \(first\): all 11 predicates hold/)
    expect(explain.stdout).toMatch(/outcome: success on fake\/a/)
    expect(explain.stdout).toContain(`request ${id}: candidates`)
    const json = await rein(["explain", record, "--json"])
    expect(json.code).toBe(0)
    expect(JSON.parse(json.stdout)[0].steps[0].chosen).toBe("fake/a")
    // The prompt is never recorded.
    expect(fs.readFileSync(record, "utf8")).not.toMatch(/Hello/)
  }, 120_000)

  it("logs go to stderr: with --log-level debug, --json's stdout is still the JSON alone", async () => {
    // The executor logs each failed attempt at debug level; Effect's default logger wrote it to stdout, before
    // the JSON (as it did a journal's append warning).
    const r = await rein([
      "--log-level",
      "debug",
      "run",
      "--catalog",
      catalog,
      "--contract",
      contract,
      "--prompt",
      "Hello",
      "--scenario",
      failingA(),
      "--json"
    ])
    expect(r.code).toBe(0)
    expect(JSON.parse(r.stdout).endpoint).toBe("fake/b")
    expect(r.stderr).toMatch(/DEBUG .*rein: attempt failed/)
  }, 60_000)

  it("retries and falls back when the scenario takes fake/a down; --json lists the attempts", async () => {
    const r = await rein([
      "run",
      "--catalog",
      catalog,
      "--contract",
      contract,
      "--prompt",
      "Hello",
      "--scenario",
      failingA(),
      "--json"
    ])
    expect(r.code).toBe(0)
    const report = JSON.parse(r.stdout)
    expect(report.endpoint).toBe("fake/b")
    // Nothing recorded, no id given: the report says so.
    expect(report.requestId).toBeNull()
    expect(report.attempts.map((a: { role: string }) => a.role)).toEqual(["first", "retry", "fallback"])
  }, 60_000)

  it("exits 1 when the request fails", async () => {
    const only = file(
      "only-a.json",
      JSON.stringify({ deadline: "5 seconds", candidates: ["fake/a"], allowSimulated: true })
    )
    const r = await rein(["run", "--catalog", catalog, "--contract", only, "--prompt", "Hi", "--scenario", failingA()])
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/outcome: (PlanExhausted|FailedSafe|DeadlineExceeded)/)
  }, 60_000)

  it("a request the only candidate's open breaker ends says so: which endpoint, when it may half-open", async () => {
    const only = file(
      "only-a-retry.json",
      JSON.stringify({
        deadline: "20 seconds",
        candidates: ["fake/a"],
        allowSimulated: true,
        retry: { perEndpoint: 2, base: "10 millis", factor: 2, max: "1 second", jitter: 0 }
      })
    )
    // One 500 opens fake/a's breaker for 60 s: its retry is refused by the breaker, not by the failure.
    const scenario = file(
      "a-trips.json",
      JSON.stringify({
        endpoints: { "fake/a": [{ behaviour: { kind: "fail", failure: "server_error", latency: "10 millis" } }] },
        health: { consecutiveFailures: 1, cooldown: "60 seconds" }
      })
    )
    const args = ["run", "--catalog", catalog, "--contract", only, "--prompt", "Hi", "--scenario", scenario]
    const r = await rein(args)
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/outcome: PlanExhausted: fake\/a: breaker open/)
    expect(r.stdout).toMatch(/refused by the breaker of fake\/a: open, may half-open in \d+ ms/)
    const json = await rein([...args, "--json"])
    expect(json.code).toBe(1)
    const breakers = JSON.parse(json.stdout).breakers
    expect(breakers).toEqual([{ endpoint: "fake/a", state: "open", halfOpensInMillis: expect.any(Number) }])
    expect(breakers[0].halfOpensInMillis).toBeGreaterThan(50_000)
    expect(breakers[0].halfOpensInMillis).toBeLessThanOrEqual(60_000)
  }, 60_000)

  it("a tampered record makes replay exit 3 naming the first differing decision", async () => {
    const record = path.join(tmp, "fallback.jsonl")
    const r = await rein([
      "run",
      "--catalog",
      catalog,
      "--contract",
      contract,
      "--prompt",
      "Hello",
      "--scenario",
      failingA(),
      "--record",
      record
    ])
    expect(r.code).toBe(0)
    expect((await rein(["replay", record])).code).toBe(0)
    const line = JSON.parse(fs.readFileSync(record, "utf8").trim())
    expect(line.decisions.length).toBeGreaterThanOrEqual(3)
    line.decisions[1].decision.waitMillis += 1
    const tampered = file("tampered.jsonl", `${JSON.stringify(line)}\n`)
    const replay = await rein(["replay", tampered])
    expect(replay.code).toBe(3)
    expect(replay.stderr).toMatch(/decision 2, field waitMillis/)
    expect(replay.stderr).toMatch(/recorded: \d+/)
    const json = await rein(["replay", tampered, "--json"])
    expect(json.code).toBe(3)
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, decision: 2, field: "waitMillis" })
  }, 120_000)

  it("a record whose contract was edited makes replay exit 3 naming the contract field", async () => {
    const record = path.join(tmp, "edited.jsonl")
    const r = await rein([
      "run",
      "--catalog",
      catalog,
      "--contract",
      contract,
      "--prompt",
      "Hello",
      "--scenario",
      failingA(),
      "--record",
      record
    ])
    expect(r.code).toBe(0)
    const original = fs.readFileSync(record, "utf8").trim()
    const edit = (name: string, change: (line: { contract: Record<string, unknown> }) => void) => {
      const line = JSON.parse(original)
      change(line)
      return file(name, `${JSON.stringify(line)}\n`)
    }
    const retry = await rein([
      "replay",
      edit("edited-retry.jsonl", (l) => void (l.contract.retry = { ...(l.contract.retry as object), max: 3000 }))
    ])
    expect(retry.code).toBe(3)
    expect(retry.stderr).toMatch(/its spec is not what its contract gives, field contract\.retry\.max/)
    const deadline = await rein([
      "replay",
      edit("edited-deadline.jsonl", (l) => void (l.contract.deadline = 10_000)),
      "--json"
    ])
    expect(deadline.code).toBe(3)
    expect(JSON.parse(deadline.stdout)).toMatchObject({
      ok: false,
      decision: 0,
      field: "contract.deadline (spec.contract.deadlineMillis)"
    })
  }, 120_000)

  it("never prints or records the API key of the real adapter", async () => {
    const realCatalog = file(
      "real-catalog.json",
      JSON.stringify({
        endpoints: [{
          id: "local/llm",
          provider: "openai-compatible",
          model: "m",
          capabilities: { contextWindow: 4096, maxOutputTokens: 256 },
          prices: { inputTokens: 0, outputTokens: 0 }
        }]
      })
    )
    const realContract = file(
      "real-contract.json",
      JSON.stringify({ deadline: "2 seconds", candidates: ["local/llm"] })
    )
    const record = path.join(tmp, "real.jsonl")
    const canary = "sk-canary-5f1d2e"
    const realRun = (baseUrl: string, ...more: ReadonlyArray<string>) =>
      rein(
        ["run", "--catalog", realCatalog, "--contract", realContract, "--prompt", "Hi", "--base-url", baseUrl, ...more],
        { REIN_API_KEY: canary }
      )
    const r = await realRun("http://127.0.0.1:9/v1", "--record", record)
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/transport/)
    expect(r.stdout + r.stderr).not.toContain(canary)
    expect(fs.readFileSync(record, "utf8")).not.toContain(canary)
    const missing = await rein(["run", "--catalog", realCatalog, "--contract", realContract, "--prompt", "Hi"], {
      REIN_BASE_URL: ""
    })
    expectBadInput(missing, /--base-url or REIN_BASE_URL/)
    // A key over plain http:// to another host is refused, in words the user can act on (no library option).
    const insecure = await realRun("http://10.0.0.5/v1")
    expectBadInput(insecure, /--base-url http:\/\/10\.0\.0\.5\/v1: .*https:\/\/.*unset REIN_API_KEY/)
    expect(insecure.stderr).not.toMatch(/allowInsecureHttp/)
    expect(insecure.stdout + insecure.stderr).not.toContain(canary)
  }, 120_000)
})

describe("the shipped retry-and-fallback scenario", () => {
  it("rein run retries fake/a after its 503, falls back to fake/b, and the record replays", async () => {
    const record = path.join(tmp, "retry-fallback.jsonl")
    const r = await rein([
      "run",
      "--catalog",
      catalog,
      "--contract",
      contract,
      "--prompt",
      "Summarise the water cycle",
      "--scenario",
      `${scenarios}/retry-and-fallback.json`,
      "--record",
      record
    ])
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^outcome: success on fake\/b \(simulated\)/)
    expect(r.stdout).toMatch(/attempts: 3\n/)
    expect(r.stdout).toMatch(/1 +1 +fake\/a +first +failure +overloaded \(http_503\)/)
    expect(r.stdout).toMatch(/2 +2 +fake\/a +retry +failure +overloaded \(http_503\)/)
    expect(r.stdout).toMatch(/3 +3 +fake\/b +fallback +success/)
    const replay = await rein(["replay", record])
    expect(replay.code).toBe(0)
    expect(replay.stdout).toMatch(/replayed 3 decisions of 1 request/)
  }, 60_000)
})

describe("rein simulate", () => {
  it("the same seed gives the same report; virtual time makes ten minutes take seconds", async () => {
    const args = ["simulate", "--catalog", catalog, "--contract", contract, "--scenario", `${scenarios}/outage.json`]
    const started = performance.now()
    const a = await rein([...args, "--seed", "7"])
    const elapsed = performance.now() - started
    const b = await rein([...args, "--seed", "7"])
    expect(a.code).toBe(0)
    expect(b.code).toBe(0)
    expect(a.stdout).toBe(b.stdout)
    expect(a.stdout).toMatch(/simulated 10 min/)
    expect(a.stdout).toMatch(/fake\/a +closed → open/)
    expect(elapsed).toBeLessThan(60_000)
    const c = await rein([...args, "--seed", "8"])
    expect(c.stdout).not.toBe(a.stdout)
  }, 240_000)

  it(
    "--json reports outcomes, attempts, fallbacks, breaker transitions, retry tokens, budget and latency",
    async () => {
      const r = await rein([
        "simulate",
        "--catalog",
        catalog,
        "--contract",
        contract,
        "--scenario",
        `${scenarios}/stalling-endpoint.json`,
        "--seed",
        "3",
        "--json"
      ])
      expect(r.code).toBe(0)
      const report = JSON.parse(r.stdout)
      expect(report.trafficMillis).toBeGreaterThanOrEqual(20 * 60_000)
      expect(report.requests).toBeGreaterThan(1000)
      expect(report.endpoints["fake/a"].failures.timeout).toBeGreaterThan(0)
      // Timeouts are not the endpoint's fault: its breaker never opens.
      expect(report.breakerTransitions).toEqual([])
      expect(report.retryTokens.drawn).toBe(report.retries + report.fallbacks)
      for (const key of ["p50", "p90", "p99", "max"]) expect(typeof report.latency[key]).toBe("number")
      expect(report.budget.calls).toBe(report.attempts)
    },
    120_000
  )
})

const batchArgs = (out: string): Array<string> => [
  "batch",
  "--input",
  "examples/prompts.jsonl",
  "--catalog",
  catalog,
  "--contract",
  contract,
  "--out",
  out
]

describe("rein batch", () => {
  it("a run its token cap stops prints the reason as recorded, then what to change", async () => {
    const out = path.join(tmp, "capped", "batch.jsonl")
    const r = await rein([...batchArgs(out), "--concurrency", "1", "--max-total-tokens", "10"])
    const text = r.stdout.replace(/\s+/g, " ")
    expect(text).toMatch(
      /termination budget_exceeded: token cap reached: \d+ of 10 tokens; if this spend is expected, raise/
    )
    expect(text).toMatch(/--max-total-tokens\); else lower what an item may use/)
    // The artifact keeps each item's request id (the CLI names requests by item id).
    const records = fs.readFileSync(out, "utf8").trim().split("\n").slice(1).map((l) => JSON.parse(l))
    expect(records.length).toBeGreaterThan(0)
    for (const record of records.filter((x) => x.outcome === "success")) expect(record.requestId).toBe(record.itemId)
  }, 120_000)

  it(
    "--record journals every item's decisions, as rein run --record does: replayable, explainable, no prompt",
    async () => {
      const out = path.join(tmp, "recorded", "batch.jsonl")
      const record = path.join(tmp, "recorded", "journal.jsonl")
      const r = await rein([
        ...batchArgs(out),
        "--scenario",
        `${scenarios}/outage.json`,
        "--concurrency",
        "4",
        "--record",
        record
      ])
      expect(r.code).toBe(0)
      expect(r.stdout).toMatch(/^ {2}journal {2,}\S/m)
      expect(r.stdout.replace(/\s+/g, " ")).toMatch(/\(one record per request: rein replay \/ rein explain\)/)
      const lines = fs.readFileSync(record, "utf8").trim().split("\n")
      expect(lines).toHaveLength(48)
      // One record per item, named by the item's id; the journal file is its owner's alone.
      expect(lines.map((l) => JSON.parse(l).requestId).sort()).toEqual(
        Array.from({ length: 48 }, (_, i) => `q${String(i + 1).padStart(2, "0")}`)
      )
      expect(fs.statSync(record).mode & 0o777).toBe(0o600)
      const replay = await rein(["replay", record])
      expect(replay.code).toBe(0)
      expect(replay.stdout).toMatch(/of 48 requests: every decision reproduces byte for byte/)
      expect((await rein(["explain", record])).code).toBe(0)
      // --request explains one item's record, named by the item's id; an id the journal lacks is bad input.
      const one = await rein(["explain", record, "--request", "q07"])
      expect(one.code).toBe(0)
      expect(one.stdout.match(/^request \S+: candidates/gm)).toEqual(["request q07: candidates"])
      expectBadInput(await rein(["explain", record, "--request", "q99"]), /journal\.jsonl: no record of request "q99"/)
      const prompts = fs.readFileSync("examples/prompts.jsonl", "utf8").trim().split("\n").map((l) => JSON.parse(l))
      const journal = fs.readFileSync(record, "utf8")
      for (const p of prompts) expect(journal).not.toContain(typeof p === "string" ? p : p.prompt)
      // A shared run (--store) journals nowhere: said, not ignored.
      expectBadInput(
        await rein([...batchArgs(out), "--store", "postgres://localhost/x", "--run", "r", "--record", record]),
        /--record journals a run of this process/
      )
    },
    120_000
  )

  it("runs the prompts through the outage with plain progress, a summary and a resumable artifact", async () => {
    const out = path.join(tmp, "run", "batch.jsonl")
    const args = [
      "batch",
      "--input",
      "examples/prompts.jsonl",
      "--catalog",
      catalog,
      "--contract",
      contract,
      "--scenario",
      `${scenarios}/outage.json`,
      "--concurrency",
      "4",
      "--out",
      out
    ]
    const r = await rein(args)
    expect(r.code).toBe(0)
    expect(r.stderr).toMatch(/\[48\/48\] q\d\d ok/)
    expect(r.stdout).toMatch(/batch completed/)
    expect(r.stdout).toMatch(/results +48 succeeded, 0 failed, 0 reused/)
    const lines = fs.readFileSync(out, "utf8").trim().split("\n")
    expect(lines).toHaveLength(49)
    // The artifact holds model answers: only its owner may read it.
    expect(fs.statSync(out).mode & 0o777).toBe(0o600)
    expect(lines.slice(1).every((l) => JSON.parse(l).kind === "item")).toBe(true)

    const again = await rein(args)
    expectBadInput(again, /already exists: pass --resume/)

    const resumed = await rein([...args, "--resume", "--json"])
    expect(resumed.code).toBe(0)
    const report = JSON.parse(resumed.stdout)
    expect(report.stats.reused).toBe(48)
    expect(report.stats.attempts).toBe(0)
  }, 180_000)

  it("says why a failed item ended: its category, the error's tag in words, its failed attempts", async () => {
    const input = file(
      "two.jsonl",
      fs.readFileSync("examples/prompts.jsonl", "utf8").split("\n").slice(0, 2).join("\n")
    )
    const down = { behaviour: { kind: "fail", failure: "server_error", latency: "10 millis" } }
    const allDown = file("all-down.json", JSON.stringify({ endpoints: { "fake/a": [down], "fake/b": [down] } }))
    const out = path.join(tmp, "failed.jsonl")
    const r = await rein([
      ...batchArgs(out).map((a) => a === "examples/prompts.jsonl" ? input : a),
      "--scenario",
      allDown
    ])
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(/\[1\/2\] q\d\d failed: server_error, no candidate left \(500( ×\d)?(, 500( ×\d)?)*\)/)
    expect(r.stderr).not.toMatch(/PlanExhausted/)
  }, 120_000)

  it("a breaker's line names the item that opened it; an item it refused says which breaker and when", async () => {
    const input = file(
      "three.jsonl",
      fs.readFileSync("examples/prompts.jsonl", "utf8").split("\n").slice(0, 3).join("\n")
    )
    const only = file(
      "only-a-batch.json",
      JSON.stringify({
        deadline: "20 seconds",
        candidates: ["fake/a"],
        allowSimulated: true,
        retry: { perEndpoint: 0 }
      })
    )
    const scenario = file(
      "a-trips-batch.json",
      JSON.stringify({
        endpoints: { "fake/a": [{ behaviour: { kind: "fail", failure: "server_error", latency: "10 millis" } }] },
        health: { consecutiveFailures: 1, cooldown: "60 seconds" }
      })
    )
    const out = path.join(tmp, "breaker.jsonl")
    const r = await rein([
      "batch",
      "--input",
      input,
      "--catalog",
      catalog,
      "--contract",
      only,
      "--scenario",
      scenario,
      "--concurrency",
      "1",
      "--out",
      out
    ])
    expect(r.code).toBe(1)
    // One at a time: q01's 500 opens the breaker; q02 and q03 find it open.
    expect(r.stderr).toContain("breaker of fake/a open (item q01 failed): later items skip it")
    expect(r.stderr).toMatch(
      /\[2\/3\] q02 failed: plan_exhausted, no candidate left: breaker of fake\/a open, may half-open in \d+ ms/
    )
    // The artifact's record of q02 keeps the refusal, typed.
    const q02 = fs.readFileSync(out, "utf8").split("\n").filter((l) => l.includes("\"q02\""))
    expect(q02).toHaveLength(1)
    expect(q02[0]).toMatch(/"breakers":\[\{"endpoint":"fake\/a","state":"open","halfOpensInMillis":[\d.]+\}\]/)
  }, 120_000)

  it("names the flag of a bad guardrail", async () => {
    const r = await rein([
      "batch",
      "--input",
      "examples/prompts.jsonl",
      "--catalog",
      catalog,
      "--contract",
      contract,
      "--out",
      path.join(tmp, "never.jsonl"),
      "--concurrency",
      "0"
    ])
    expectBadInput(r, /--concurrency: Expected a positive integer, actual 0/)
    const mode = await rein([
      "batch",
      "--input",
      "examples/prompts.jsonl",
      "--catalog",
      catalog,
      "--contract",
      contract,
      "--out",
      path.join(tmp, "never.jsonl"),
      "--file-mode",
      "999"
    ])
    expectBadInput(
      mode,
      /--file-mode: Expected octal permissions like 600 or 640: the owner reads and writes, no execute, setuid, setgid or sticky bit; actual "999"/
    )
  }, 60_000)

  it("refuses --resume with --overwrite, saying why", async () => {
    const r = await rein([...batchArgs(path.join(tmp, "both.jsonl")), "--resume", "--overwrite"])
    expectBadInput(r, /--resume and --overwrite together: .*pass one of them/)
  }, 60_000)

  it("names the artifact's file and line when a record is not valid JSON", async () => {
    const out = path.join(tmp, "corrupt", "run.jsonl")
    expect((await rein([...batchArgs(out), "--json"])).code).toBe(0)
    const lines = fs.readFileSync(out, "utf8").split("\n")
    lines[9] = "garbage{"
    fs.writeFileSync(out, lines.join("\n"))
    const r = await rein([...batchArgs(out), "--resume"])
    expectBadInput(r, new RegExp(`${out.replaceAll("/", "\\/").replaceAll(".", "\\.")}:10: not valid JSON`))
  }, 60_000)

  it("resuming under a changed contract says what changed and how many records are not reusable", async () => {
    const out = path.join(tmp, "drift", "run.jsonl")
    expect((await rein([...batchArgs(out), "--json"])).code).toBe(0)
    const swapped = file(
      "contract-swapped.json",
      JSON.stringify({ ...JSON.parse(fs.readFileSync(path.join(root, contract), "utf8")), candidates: ["fake/b"] })
    )
    const args = batchArgs(out).map((a) => (a === contract ? swapped : a))
    const r = await rein([...args, "--resume", "--json"])
    expect(r.code).toBe(0)
    expect(r.stderr).toMatch(/run\.jsonl was written under another contract or version than this run's/)
    expect(r.stderr).toMatch(/changed: model: "fast-small" → "steady-large"/)
    expect(r.stderr).toMatch(/changed: extra\.rein\.candidates: /)
    expect(r.stderr).toMatch(/48 of its 48 items have records only under another contract or version: they run/)
    expect(r.stderr).toMatch(/give another --out; to start again, pass --overwrite instead of --resume/)
    expect(JSON.parse(r.stdout).stats.reused).toBe(0)
    // Resumed under the contract it was written with, nothing is said.
    const same = await rein([...batchArgs(out), "--resume", "--json"])
    expect(same.stderr).not.toMatch(/another contract/)
  }, 120_000)

  it("resuming a file without a complete manifest line is bad input, and leaves the file as it was", async () => {
    const files: ReadonlyArray<readonly [string, string]> = [["torn.jsonl", "{\"kind\":\"manif"], [
      "other.jsonl",
      "hello"
    ]]
    for (const [name, content] of files) {
      const out = file(name, content)
      const r = await rein([...batchArgs(out), "--resume"])
      expectBadInput(r, /: no manifest line \(an empty or unfinished file\)/)
      // The file is named once (it was `rein: other.jsonl: other.jsonl: no manifest line …`).
      expect(r.stderr).toContain(`rein: ${out}: no manifest line`)
      expect(fs.readFileSync(out, "utf8")).toBe(content)
    }
  }, 60_000)

  it("names the line of a bad prompt", async () => {
    const input = file("prompts.jsonl", "{\"id\":\"a\",\"prompt\":\"x\"}\n{\"id\":\"b\"}\n")
    const r = await rein([
      "batch",
      "--input",
      input,
      "--catalog",
      catalog,
      "--contract",
      contract,
      "--out",
      path.join(tmp, "n.jsonl")
    ])
    expectBadInput(r, /prompts\.jsonl:2: prompt: is missing/)
  }, 60_000)
})

describe("bad input", () => {
  it("a missing file", async () => {
    expectBadInput(
      await rein(["plan", "--catalog", "nope/catalog.json", "--contract", contract]),
      /catalog nope\/catalog\.json: no such file/
    )
  }, 60_000)

  it("invalid JSON", async () => {
    const bad = file("bad.json", "{ \"endpoints\": [")
    expectBadInput(await rein(["plan", "--catalog", bad, "--contract", contract]), /bad\.json: invalid JSON/)
  }, 60_000)

  it("a schema violation names the file and the field", async () => {
    const k = file("contract-bad.json", JSON.stringify({ deadline: -1, candidates: ["fake/a"] }))
    expectBadInput(
      await rein(["plan", "--catalog", catalog, "--contract", k]),
      /contract-bad\.json: deadline: Expected a positive finite duration/
    )
    const s = file(
      "scenario-bad.json",
      JSON.stringify({ rate: 0, endpoints: { "fake/a": [{ behaviour: { kind: "fail" } }] } })
    )
    expectBadInput(
      await rein(["simulate", "--catalog", catalog, "--contract", contract, "--scenario", s]),
      /scenario-bad\.json: rate: Expected a rate > 0, actual 0/
    )
  }, 60_000)

  it(
    "deep nesting in a number, a duration or a prompt line is bad input naming the file and field (not exit 4)",
    async () => {
      // Deeper than 256 levels, the text is refused unparsed, naming the file (and line): see depth.test.ts.
      const tooDeep = `${"[".repeat(100_000)}1${"]".repeat(100_000)}`
      expectBadInput(
        await rein([
          "plan",
          "--catalog",
          catalog,
          "--contract",
          file("contract-too-deep.json", `{"deadline": ${tooDeep}}`)
        ]),
        /contract-too-deep\.json: nested deeper than 256 levels of arrays and objects/
      )
      const deep = `${"[".repeat(250)}1${"]".repeat(250)}`
      const k = file("contract-deep.json", `{"deadline": ${deep}, "candidates": ["fake/a"]}`)
      expectBadInput(
        await rein(["plan", "--catalog", catalog, "--contract", k]),
        /contract-deep\.json: deadline: Expected a positive finite duration .*, actual \[\[\[…\]\]\]/
      )
      const s = file("scenario-deep.json", `{"health": {"capacity": ${deep}}}`)
      expectBadInput(
        await rein(["simulate", "--catalog", catalog, "--contract", contract, "--scenario", s]),
        /scenario-deep\.json: health\.capacity: Expected a non-negative finite number/
      )
      const input = file("prompts-deep.jsonl", `"fine"\n{"prompt": "p", "inputTokens": ${deep}}\n`)
      const out = path.join(tmp, "deep-run.jsonl")
      expectBadInput(
        await rein(["batch", "--input", input, "--catalog", catalog, "--contract", contract, "--out", out]),
        /prompts-deep\.jsonl:2: inputTokens: Expected a positive integer/
      )
    },
    60_000
  )

  it("a candidate that is not in the catalog is bad input (exit 2) naming the id", async () => {
    const k = file("contract-typo.json", JSON.stringify({ deadline: "5 seconds", candidates: ["fake/a", "fake/typo"] }))
    for (const command of [["plan"], ["run", "--prompt", "hi"]]) {
      expectBadInput(
        await rein([...command, "--catalog", catalog, "--contract", k]),
        /contract-typo\.json: candidates\.1: "fake\/typo" is not in the catalog/
      )
    }
  }, 60_000)

  it("an unknown flag", async () => {
    const r = await rein(["plan", "--catalog", catalog, "--contract", contract, "--bogus"])
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/--bogus/)
    expect(r.stderr).not.toMatch(/\n\s+at /)
  }, 60_000)

  it("each command's --help shows its usage as typed: $ rein <command> …", async () => {
    for (const command of ["plan", "run", "replay", "explain", "simulate", "batch", "worker", "status"]) {
      const help = await rein([command, "--help"])
      expect(help.code).toBe(0)
      expect(help.stdout).toMatch(new RegExp(`\\n\\$ rein ${command} `))
    }
    expect((await rein(["--help"])).stdout).toMatch(/\n\$ rein\n/)
  }, 120_000)

  it("a required option left out is named, with the command's help", async () => {
    // @effect/cli alone said "Expected to find option: '--catalog'", once per option, without the command.
    expectBadInput(
      await rein(["run"]),
      /^rein run: missing required options --catalog, --contract, --prompt \(see rein run --help\)\n$/
    )
    expectBadInput(
      await rein(["batch", "--catalog", catalog, "--input=x.jsonl"]),
      /^rein batch: missing required option --contract \(see rein batch --help\)\n$/
    )
    // Asking for help asks for no option.
    const help = await rein(["run", "--help"])
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/--catalog/)
  }, 60_000)

  it("a mistyped flag or command gets a did-you-mean", async () => {
    const out = path.join(tmp, "never.jsonl")
    expectBadInput(
      await rein([...batchArgs(out), "--overwirte"]),
      /^rein batch: unknown flag --overwirte; did you mean --overwrite\? \(see rein batch --help\)\n$/
    )
    expectBadInput(await rein([...batchArgs(out), "--concurency", "4"]), /did you mean --concurrency\?/)
    expectBadInput(await rein(["run", "--promt", "hi"]), /rein run: unknown flag --promt; did you mean --prompt\?/)
    expectBadInput(await rein(["pln"]), /^rein: unknown command "pln"; did you mean plan\? \(the commands: plan, run,/)
    expectBadInput(await rein(["simulte"]), /did you mean simulate\?/)
    expectBadInput(await rein(["--verison"]), /rein: unknown flag --verison; did you mean --version\?/)
    // Nothing close: no guess, the list.
    expectBadInput(await rein(["frobnicate"]), /^rein: unknown command "frobnicate" \(the commands: /)
    // A value that looks like a flag is the value of the flag before it.
    const r = await rein(["run", "--catalog", catalog, "--contract", contract, "--prompt", "--not-a-flag", "--json"])
    expect(r.code).toBe(0)
  }, 120_000)

  it(
    "a bad flag value names the flag and what it takes, on one line prefixed rein: as other input errors",
    async () => {
      const out = path.join(tmp, "never.jsonl")
      for (
        const [flag, value, expected] of [
          ["--concurrency", "x", /^rein: --concurrency: Expected a positive integer, actual "x"\n$/],
          ["--rate-limit-retries", "-1", /^rein: --rate-limit-retries: Expected a non-negative integer, actual -1\n$/],
          ["--max-total-cost", "abc", /^rein: --max-total-cost: Expected a number, actual "abc"\n$/],
          // Only decimal numbers: `Number` would read 0x10 as 16 and "1 " as 1.
          ["--concurrency", "0x10", /^rein: --concurrency: Expected a positive integer, actual "0x10"\n$/],
          ["--max-total-cost", "1 ", /^rein: --max-total-cost: Expected a number, actual "1 "\n$/],
          ["--max-total-cost", "Infinity", /^rein: --max-total-cost: Expected a number, actual "Infinity"\n$/],
          // One line for the flag, not a second "Expected undefined" from its optional field.
          ["--budget-cost", "-1", /^rein: --budget-cost: Expected a non-negative number, actual -1\n$/],
          ["--order", "random", /^rein: --order: Expected one of completion, submission, actual "random"\n$/],
          [
            "--resume-policy",
            "some",
            /^rein: --resume-policy: Expected one of reuse-successes, reuse-all, none, actual "some"\n$/
          ],
          [
            "--file-mode",
            "999",
            /^rein: --file-mode: Expected octal permissions like 600 or 640: the owner reads and writes, no execute, setuid, setgid or sticky bit; actual "999"\n$/
          ]
        ] as const
      ) {
        const r = await rein([...batchArgs(out), flag, value])
        expectBadInput(r, expected)
        expect(r.stderr).not.toMatch(/is not a|Expected one of the following cases/)
      }
      expectBadInput(
        await rein(["run", "--catalog", catalog, "--contract", contract, "--prompt", "hi", "--input-tokens", "1.5"]),
        /^rein: --input-tokens: Expected a positive integer, actual 1\.5\n$/
      )
      const simulate = [
        "simulate",
        "--catalog",
        catalog,
        "--contract",
        contract,
        "--scenario",
        `${scenarios}/outage.json`
      ]
      for (const [seed, shown] of [["1e30", "\"1e30\""], ["1.5", "1.5"], ["x", "\"x\""]] as const) {
        const r = await rein([...simulate, "--seed", seed])
        expect(r.code).toBe(2)
        expect(r.stderr).toBe(`rein: --seed: Expected an integer, actual ${shown}\n`)
      }
    },
    120_000
  )

  it("an unreadable record: garbage, a future version, an empty file", async () => {
    expectBadInput(
      await rein(["replay", file("garbage.jsonl", "not json\n")]),
      /garbage\.jsonl:1: not a readable record \(json\)/
    )
    expectBadInput(
      await rein(["explain", file("future.jsonl", "{\"version\":99}\n")]),
      /future\.jsonl:1: not a readable record \(version\)/
    )
    expectBadInput(await rein(["replay", file("empty.jsonl", "")]), /empty\.jsonl: no records/)
    const artifact = file("run.jsonl", "{\"kind\":\"manifest\",\"schemaVersion\":1}\n{\"kind\":\"item\"}\n")
    for (const command of ["explain", "replay"]) {
      const r = await rein([command, artifact])
      expectBadInput(r, /run\.jsonl is a batch artifact \(rein batch --out\), not a journal/)
      expect(r.stderr).toContain("error.attempts")
      expect(r.stderr).not.toContain("is unexpected")
    }
    expectBadInput(await rein(["replay", path.join(tmp, "absent.jsonl")]), /absent\.jsonl: no such file/)
  }, 120_000)
})

// ---- what a newcomer meets: the demo on a terminal, Ctrl-C, `pnpm rein`, `--help` piped ----------------

const demoArgs = (out: string): Array<string> => [
  "batch",
  "--input",
  "examples/prompts.jsonl",
  "--catalog",
  catalog,
  "--contract",
  contract,
  "--scenario",
  `${scenarios}/brief-outage.json`,
  "--concurrency",
  "4",
  "--out",
  out,
  "--overwrite"
]

/** Runs the binary in a pseudo-terminal of `columns` columns (util-linux `script`); its raw output. */
const inTerminal = (args: ReadonlyArray<string>, columns: number): Promise<Result> =>
  Terminal.inTerminal([process.execPath, bin, ...args], columns, root)

const screen = Terminal.screen

const BAR = /^\[[█░]+\] \d+\/48/

describe("the demo on a terminal", () => {
  it("at 80 columns shows the breaker open, half-open and closed, the items that fell back, and one bar", async () => {
    const out = path.join(tmp, "pty", "demo.jsonl")
    const r = await inTerminal(demoArgs(out), 80)
    expect(r.code).toBe(0)
    // Every row of progress fits: nothing wrapped, so every redraw erased the whole bar. (The summary after
    // it names the artifact's path, which may be as long as it is.)
    const progress = r.stdout.slice(0, r.stdout.indexOf("batch completed"))
    const long = progress.replaceAll("\x1b[2K", "").split(/\r|\n/).filter((segment) => [...segment].length > 80)
    expect(long).toEqual([])
    const shown = screen(r.stdout, 80)
    expect(shown.filter((line) => BAR.test(line))).toHaveLength(1)
    const text = shown.join("\n")
    // Each transition names the item whose attempt made it.
    expect(text).toMatch(/breaker of fake\/a open \(item q\d\d failed\): later items skip it/)
    expect(text).toMatch(/breaker of fake\/a half-open \(item q\d\d probes it\)/)
    expect(text).toMatch(/breaker of fake\/a closed \(item q\d\d succeeded\): the probe succeeded/)
    expect(text).toMatch(/q\d\d ok on fake\/b after 503( ×2)?\n/)
    expect(text).toMatch(/breakers +fake\/a opened \d+, half-open \d+, closed 1/)
    expect(text).toMatch(/unknown usage +\d+ calls reported no tokens: not in the totals above/)
    expect(text).toMatch(/answered by +fake\/a \d+, fake\/b \d+/)
    // Before any item finished, the bar shows no tokens or cost.
    const first = r.stdout.split("\r\x1b[2K").find((s) => / 0\/48 /.test(s))
    if (first !== undefined) expect(first).not.toMatch(/tokens|cost/)
    // The artifact says which endpoint answered each success.
    const records = fs.readFileSync(out, "utf8").trim().split("\n").slice(1).map((l) => JSON.parse(l))
    expect(records.every((rec) => rec.endpoint === "fake/a" || rec.endpoint === "fake/b")).toBe(true)
    expect(records.some((rec) => rec.endpoint === "fake/b")).toBe(true)
  }, 120_000)

  it("at 70 columns the bar still fits on one row", async () => {
    const r = await inTerminal(demoArgs(path.join(tmp, "pty", "demo70.jsonl")), 70)
    expect(r.code).toBe(0)
    const bars = r.stdout.replaceAll("\x1b[2K", "").split(/\r|\n/).filter((s) => BAR.test(s))
    expect(bars.length).toBeGreaterThan(0)
    for (const bar of bars) expect([...bar].length).toBeLessThanOrEqual(70)
    expect(screen(r.stdout, 70).filter((line) => BAR.test(line))).toHaveLength(1)
    // The summary fits too: its long values wrap under their column (the raw lines, not the terminal's rows,
    // which the terminal would wrap anyway).
    const summary = r.stdout.slice(r.stdout.indexOf("batch completed")).split(/\r?\n/)
    expect(summary.length).toBeGreaterThan(10)
    for (const line of summary) expect([...line].length).toBeLessThanOrEqual(70)
    expect(summary.join("\n")).toMatch(/unknown usage +\d+ calls? reported no tokens: not in the totals/)
  }, 120_000)
})

describe("Ctrl-C during rein batch", () => {
  it(
    "says what was saved and the command that resumes, exits 130, and that command reuses the saved items",
    async () => {
      const out = path.join(tmp, "interrupted", "run.jsonl")
      const child = spawn(process.execPath, [bin, ...demoArgs(out)], { cwd: root })
      let stderr = ""
      child.stderr.setEncoding("utf8")
      const someDone = new Promise<void>((resolve) => {
        child.stderr.on("data", (chunk: string) => {
          stderr += chunk
          if (/\[ 5\/48\]/.test(stderr)) resolve()
        })
      })
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      await someDone
      child.kill("SIGINT")
      expect(await exited).toBe(130)
      const saved = /interrupted: (\d+) of 48 items are saved in (.+) \(--resume reuses them\)\n/.exec(stderr)
      expect(saved).not.toBeNull()
      expect(saved![2]).toBe(out)
      const command = /resume with: (.+)\n/.exec(stderr)![1]!
      expect(command).toMatch(/^node packages\/cli\/dist\/bin\.js batch .* --resume$/)
      expect(command).not.toMatch(/--overwrite/)
      const words = command.split(" ").slice(1)
      const resumed = await rein([...words.slice(1), "--json"])
      expect(resumed.code).toBe(0)
      expect(JSON.parse(resumed.stdout).stats.reused).toBe(Number(saved![1]))
    },
    120_000
  )
})

describe("the command as a newcomer finds it", () => {
  it("pnpm rein --version works from the root, and the package's bin is rein", async () => {
    const r = await new Promise<Result>((resolve) =>
      execFile(
        "pnpm",
        ["-s", "rein", "--version"],
        { cwd: root, encoding: "utf8", timeout: 120_000 },
        (e, stdout, stderr) =>
          resolve({ code: e === null ? 0 : typeof e.code === "number" ? e.code : null, stdout, stderr })
      )
    )
    expect(r.code).toBe(0)
    expect(r.stdout.trim()).toBe("0.1.0")
    const pkg = JSON.parse(fs.readFileSync(path.join(root, "packages/cli/package.json"), "utf8"))
    // The bin is a committed shim that runs the built binary, so that a fresh install can link it.
    expect(pkg.bin).toEqual({ rein: "bin/rein.mjs" })
    const shim = fs.readFileSync(path.join(root, "packages/cli/bin/rein.mjs"), "utf8")
    expect(shim.startsWith("#!/usr/bin/env node\n")).toBe(true)
    expect(shim).toContain(`import "../dist/bin.js"`)
    expect(fs.readFileSync(bin, "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true)
  }, 120_000)

  it("--help piped has no ANSI escapes and no line past 80 columns", async () => {
    for (const args of [["--help"], ["batch", "--help"]]) {
      const r = await rein(args)
      expect(r.code).toBe(0)
      expect(r.stdout).not.toContain("\x1b")
      for (const line of r.stdout.split("\n")) expect([...line].length).toBeLessThanOrEqual(80)
      expect(r.stdout).toMatch(/batch --input file/)
    }
  }, 120_000)

  it("the usage line shows optional flags in brackets, --abort-on too, with the kind of value each takes", async () => {
    const r = await rein(["batch", "--help"])
    const usage = r.stdout.slice(r.stdout.indexOf("$ rein batch"), r.stdout.indexOf("DESCRIPTION")).replaceAll(
      /\s+/g,
      " "
    )
    expect(usage).toContain("[--abort-on CATEGORY...]")
    expect(usage).toContain("[--concurrency N]")
    expect(usage).toContain("[--order completion|submission]")
    // Every flag outside brackets is one the command requires. `--out FILE` or `--store URL --run ID` is
    // required, one of the two (a usage line cannot say "one of"): both are bracketed, and the command says
    // which to pass when neither is given.
    const required = usage.replaceAll(/\[[^\]]*\]/g, "").match(/--[a-z-]+/g)
    expect(required).toEqual(["--input", "--catalog", "--contract"])
    expect(usage).toContain("[--out")
    expect(usage).toContain("[--store")
    const neither = await rein([
      "batch",
      "--input",
      "examples/prompts.jsonl",
      "--catalog",
      "examples/catalog.json",
      "--contract",
      "examples/contract.json"
    ])
    expect(neither.code).toBe(2)
    expect(neither.stderr).toContain("pass --out FILE (or --store URL --run ID)")
  }, 60_000)

  it("--version prints the version alone, loading nothing but the binary and its version", async () => {
    const r = await rein(["--version"])
    expect(r).toEqual({ code: 0, stdout: "0.1.0\n", stderr: "" })
    // The binary and its version module alone, where no package resolves: --version still answers, so it
    // loads neither the command tree nor Effect (start-up is what --version costs).
    const alone = fs.mkdtempSync(path.join(os.tmpdir(), "rein-version-"))
    fs.mkdirSync(path.join(alone, "internal"))
    fs.copyFileSync(bin, path.join(alone, "bin.js"))
    fs.copyFileSync(path.join(root, "packages/cli/dist/internal/version.js"), path.join(alone, "internal/version.js"))
    fs.writeFileSync(path.join(alone, "package.json"), JSON.stringify({ type: "module" }))
    const isolated = execFileSync(process.execPath, [path.join(alone, "bin.js"), "--version"], { encoding: "utf8" })
    expect(isolated).toBe("0.1.0\n")
    fs.rmSync(alone, { recursive: true, force: true })
  }, 60_000)
})
