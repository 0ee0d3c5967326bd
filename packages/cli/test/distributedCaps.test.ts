/**
 * A run's caps hold across every process of the run, from the command line: the built binary, one
 * `rein batch --store` and two `rein worker`s against a real PostgreSQL on loopback (TestServer). The caps are
 * the run's (recorded when `rein batch --store` starts it), counted once for all workers; a worker may repeat
 * them and is refused, naming the flag, when it asks for others.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { TestServer } from "@rein/postgres/testing"
import { Effect, Exit, Redacted, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import * as Binary from "../../../test/support/binary.js"

const available = TestServer.binaries() !== undefined
const scope = Effect.runSync(Scope.make())
let url = ""
let tmp = ""

const rein = (args: ReadonlyArray<string>) => Binary.rein(args, { timeout: 180_000, maxBuffer: 64 * 1024 * 1024 })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// A worker started before the run exists fails cleanly ("no run"): it is started again until it joins.
const worker = async (args: ReadonlyArray<string>): Promise<Binary.Result> => {
  for (let i = 0; i < 40; i++) {
    const r = await rein(["worker", ...args])
    if (!(r.code === 2 && /no run/.test(r.stderr))) return r
    await sleep(250)
  }
  throw new Error("the run never appeared")
}

const query = <A extends object>(text: string): Promise<ReadonlyArray<A>> =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A>(text)).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(url) }))
    )
  )

const ITEMS = 200
const CONCURRENCY = 2

let files: Array<string> = []

beforeAll(async () => {
  if (!available) return
  tmp = await Binary.prepare("rein-distributed-caps-")
  const input = path.join(tmp, "prompts.jsonl")
  fs.writeFileSync(
    input,
    Array.from(
      { length: ITEMS },
      (_, i) =>
        JSON.stringify({
          id: `p${String(i).padStart(3, "0")}`,
          prompt: `Say hello to number ${i}.`,
          maxOutputTokens: 200
        })
    )
      .join("\n") + "\n"
  )
  // Every call answers after 3 s with 100 output tokens: one process alone would reach the caps below, and
  // the run lasts long enough for the workers to join it on a loaded machine.
  const scenario = path.join(tmp, "slow.json")
  fs.writeFileSync(scenario, JSON.stringify({ default: { kind: "ok", latency: "3 seconds", outputTokens: 100 } }))
  files = [
    "--input",
    input,
    "--catalog",
    "examples/catalog.json",
    "--contract",
    "examples/contract.json",
    "--scenario",
    scenario,
    "--concurrency",
    String(CONCURRENCY),
    "--json"
  ]
  url = (await Effect.runPromise(Scope.extend(TestServer.start, scope))).url
}, 300_000)

afterAll(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
  Binary.cleanUp(tmp)
})

interface Report {
  readonly worker: {
    readonly leased: number
    readonly termination: { readonly kind: string }
    readonly stats: { readonly tokensUsed: number; readonly attempts: number }
  }
  readonly status: {
    readonly status: string
    readonly stop: { readonly kind: string; readonly resource?: string } | null
    readonly items: { readonly done: number }
    readonly byCategory: Readonly<Record<string, number>>
  }
}

const parse = (r: Binary.Result): Report => {
  expect(r.stderr).not.toMatch(/\n\s+at /)
  expect([0, 1], r.stderr).toContain(r.code)
  return JSON.parse(r.stdout) as Report
}

describe.skipIf(!available)("a run's caps, shared by every process of the run", () => {
  it(
    "a soft token cap: one rein batch --store and two rein workers stop once, the database total within the cap",
    async () => {
      const CAP = 3_000
      const store = ["--store", url, "--run", "capped"]
      const [started, first, second] = await Promise.all([
        rein(["batch", ...store, ...files, "--max-total-tokens", String(CAP)]),
        // One worker repeats the run's cap (allowed), the other reads it from the run.
        sleep(300).then(() => worker([...store, ...files, "--max-total-tokens", String(CAP)])),
        sleep(300).then(() => worker([...store, ...files]))
      ])
      const reports = [started, first, second].map(parse)
      // Every process ended with the run's one stop; more than one made calls (a worker that joins after the
      // stop makes none).
      for (const r of reports) expect(r.worker.termination.kind).toBe("budget_exceeded")
      expect(reports.filter((r) => r.worker.stats.attempts > 0).length).toBeGreaterThan(1)
      const [run] = await query<{ readonly stop: { readonly kind: string } }>(
        `SELECT stop FROM rein_batch_runs WHERE run_id = 'capped'`
      )
      expect(run!.stop.kind).toBe("budget_exceeded")
      // One shared total for the run: every process's usage, exceeding the cap by at most the calls in flight.
      const limits = await query<
        { readonly tokens: number; readonly max_total_tokens: number; readonly stop_kind: string }
      >(
        `SELECT tokens, max_total_tokens, stop_kind FROM rein_run_limits WHERE name LIKE 'rein-batch/capped/%'`
      )
      expect(limits).toHaveLength(1)
      expect(limits[0]!.max_total_tokens).toBe(CAP)
      expect(limits[0]!.stop_kind).toBe("budget_exceeded")
      const used = reports.reduce((n, r) => n + r.worker.stats.tokensUsed, 0)
      const calls = reports.reduce((n, r) => n + r.worker.stats.attempts, 0)
      expect(limits[0]!.tokens).toBe(used)
      const perCall = used / calls
      expect(used).toBeGreaterThanOrEqual(CAP)
      expect(used).toBeLessThan(CAP + 3 * CONCURRENCY * perCall)
      // Far from the whole input: each process alone would have run up to the cap.
      expect(calls).toBeLessThan(ITEMS / 2)
    },
    240_000
  )

  it(
    "a hard call budget (--budget-calls): the three processes together make at most that many calls",
    async () => {
      const CALLS = 12
      const store = ["--store", url, "--run", "budgeted"]
      const [started, first, second] = await Promise.all([
        rein(["batch", ...store, ...files, "--budget-calls", String(CALLS)]),
        sleep(300).then(() => worker([...store, ...files, "--budget-calls", String(CALLS)])),
        sleep(300).then(() => worker([...store, ...files]))
      ])
      const reports = [started, first, second].map(parse)
      const calls = reports.reduce((n, r) => n + r.worker.stats.attempts, 0)
      process.stdout.write(
        `budget-calls: calls per process ${reports.map((r) => r.worker.stats.attempts).join("/")}, categories ${
          JSON.stringify(reports[0]!.status.byCategory)
        }\n`
      )
      expect(calls).toBeLessThanOrEqual(CALLS)
      // And all of them: a process refused while another still leased calls it had not made is no stop of the
      // run (before the fix, a run once stopped after 8 of the 12).
      expect(calls).toBe(CALLS)
      expect(reports.filter((r) => r.worker.stats.attempts > 0).length).toBeGreaterThan(1)
      const rows = await query<{ readonly calls_cap: string; readonly name: string }>(
        `SELECT name, calls_cap::text AS calls_cap FROM rein_budgets WHERE name LIKE 'rein-batch/budgeted/%'`
      )
      expect(rows.map((r) => r.calls_cap)).toEqual([String(CALLS)])
      // Every item has its one terminal record: the ones past the budget without a call. The budget, spent,
      // stopped the run once for all three (as a soft cap does): the items nobody ran got the stop's record
      // (`batch_budget_exceeded`), the few refused before their worker stopped, `budget_exhausted`.
      // Each process prints the status it read after its own last write; another may still have been writing
      // then (CI saw the submitter's read 199 of 200). The latest read, the one with the most done, follows
      // every process's last write.
      const status = reports.map((r) => r.status).reduce((a, b) => (b.items.done >= a.items.done ? b : a))
      expect(status.items.done).toBe(ITEMS)
      expect(status.status).toBe("stopped")
      expect(status.stop).toMatchObject({ kind: "budget_exceeded", resource: "calls" })
      for (const r of reports) expect(r.worker.termination.kind).toBe("budget_exceeded")
      const refused = status.byCategory["budget_exhausted"] ?? 0
      const swept = status.byCategory["batch_budget_exceeded"] ?? 0
      expect((status.byCategory["ok"] ?? 0) + refused + swept).toBe(ITEMS)
      expect(refused).toBeLessThan(swept)
    },
    240_000
  )

  it(
    "a worker asking for other caps than the run's is refused, naming each flag, with exit code 2",
    async () => {
      const store = ["--store", url, "--run", "capped"]
      const r = await rein(["worker", ...store, ...files, "--max-total-tokens", "5000", "--rpm", "60"])
      expect(r.code).toBe(2)
      expect(r.stderr).toMatch(/--max-total-tokens: 5000 asked, run "capped" has 3000/)
      expect(r.stderr).toMatch(/--rpm: 60 asked, run "capped" has none/)
      expect(r.stderr).not.toMatch(/\n\s+at /)
      const alone = await rein([
        "batch",
        ...files.slice(0, 8),
        "--out",
        path.join(tmp, "x.jsonl"),
        "--budget-cost",
        "1"
      ])
      expect(alone.code).toBe(2)
      expect(alone.stderr).toMatch(/--budget-cost.*need --store/)
    },
    120_000
  )
})
