import { NodeCommandExecutor, NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Input, Journal, Rein, Telemetry } from "@rein/core"
import { Clocks } from "@rein/core/testing"
import { Subprocess } from "@rein/providers"
import { Duration, Effect, Either, Fiber, Layer, Option, Schedule, TestClock } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { attemptContext, catalog, contract, endpoint, recordingTracer, request } from "./fixtures.js"

const executorLayer = NodeCommandExecutor.layer.pipe(Layer.provide(NodeFileSystem.layer))
const node = process.execPath
const cat = catalog(endpoint("a", "local", "local-model"))
const ctx = attemptContext(cat.byId.get("a")!)

/** A temporary directory with the test programs, removed afterwards. */
const programs = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "rein-subprocess-"))
    const write = (name: string, source: string) => {
      const file = Path.join(dir, name)
      Fs.writeFileSync(file, source)
      return file
    }
    return {
      dir,
      echo: write(
        "echo.cjs",
        `let s = ""; process.stdin.on("data", (d) => s += d).on("end", () => {
          const input = JSON.parse(s)
          process.stdout.write(JSON.stringify({ text: "echo: " + input.prompt + " / " + input.model,
            usage: { inputTokens: 3, outputTokens: input.maxOutputTokens } }))
        })`
      ),
      env: write(
        "env.cjs",
        `process.stdin.resume(); process.stdin.on("end", () =>
          process.stdout.write(JSON.stringify({ text: JSON.stringify(process.env) })))`
      ),
      garbage: write("garbage.cjs", `process.stdout.write("this is not json")`),
      noUsage: write("nousage.cjs", `process.stdout.write(JSON.stringify({ text: "x" }))`),
      error: write(
        "error.cjs",
        `process.stdout.write(JSON.stringify({ error: { code: "context_length_exceeded", status: 400 } }))`
      ),
      // Answers `{ error: { code: argv[2], status?: argv[3] } }`: a program passing a provider's code through.
      errorCode: write(
        "errorcode.cjs",
        `process.stdin.resume(); process.stdin.on("end", () => process.stdout.write(JSON.stringify({ error: {
          code: process.argv[2], ...(process.argv[3] === undefined ? {} : { status: Number(process.argv[3]) }) } })))`
      ),
      crash: write("crash.cjs", `process.stderr.write("secret stderr text"); process.exit(3)`),
      // Spawns a grandchild in the same process group; both ignore SIGTERM; the grandchild's pid is written
      // to the file named in argv, then the child hangs.
      family: write(
        "family.cjs",
        `const { spawn } = require("node:child_process"); const fs = require("node:fs")
        process.on("SIGTERM", () => {})
        const g = spawn(process.execPath, ["-e", "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)"],
          { stdio: "ignore" })
        fs.writeFileSync(process.argv[2], String(g.pid))
        setInterval(() => {}, 1000)`
      )
    }
  }),
  ({ dir }) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
)

/** Whether `pid` is alive (a zombie awaiting its reaper counts as dead). */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z"
  } catch {
    return false
  }
}

/** Polls (bounded) until `f` returns a value. */
const poll = <A>(f: () => A | undefined, within: Duration.DurationInput = "3 seconds") =>
  Effect.suspend(() => {
    const value = f()
    return value === undefined ? Effect.fail("not yet" as const) : Effect.succeed(value)
  }).pipe(Effect.retry(Schedule.spaced("10 millis").pipe(Schedule.upTo(within))))

const make = (options: Subprocess.Options) => Effect.provide(Subprocess.make(options), executorLayer)

describe("Subprocess", () => {
  it.scoped("its own 30-day timeout fires at 30 days on a clock like the live one (not never)", () =>
    Effect.gen(function*() {
      const day = 86_400_000
      const provider = yield* make({
        executable: node,
        args: ["-e", "setInterval(() => {}, 1000)"],
        timeout: "30 days"
      })
      const clock = Clocks.liveLike(yield* TestClock.testClock())
      const fiber = yield* Effect.fork(Effect.flip(provider.call(request, ctx)).pipe(Effect.withClock(clock)))
      yield* TestClock.adjust(Duration.millis(Input.MAX_TIMER_MILLIS))
      yield* TestClock.adjust("1 hour")
      expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
      yield* TestClock.adjust(Duration.millis(30 * day - Input.MAX_TIMER_MILLIS - 3_600_000))
      const failure = yield* Fiber.join(fiber)
      expect([failure.kind, failure.code]).toEqual(["timeout", "subprocess_timeout"])
    }))

  it.scopedLive("sends the request as JSON on stdin and decodes stdout", () =>
    Effect.gen(function*() {
      const p = yield* programs
      const provider = yield* make({ executable: node, args: [p.echo] })
      const response = yield* provider.call(request, ctx)
      expect(response).toEqual({ text: "echo: hello / local-model", usage: { inputTokens: 3, outputTokens: 64 } })
    }))

  it.scopedLive("never passes the parent's environment", () =>
    Effect.gen(function*() {
      const p = yield* programs
      process.env.REIN_CANARY_ENV = "canary-value-31337"
      try {
        const bare = yield* make({ executable: node, args: [p.env] })
        const given = yield* make({ executable: node, args: [p.env], env: { ONLY_THIS: "1" } })
        const a = JSON.parse((yield* bare.call(request, ctx)).text) as Record<string, string>
        const b = JSON.parse((yield* given.call(request, ctx)).text) as Record<string, string>
        expect(JSON.stringify(a)).not.toContain("canary-value-31337")
        expect(a.PATH).toBeUndefined()
        expect(b).toEqual({ ONLY_THIS: "1" })
      } finally {
        delete process.env.REIN_CANARY_ENV
      }
    }))

  it.scopedLive("a relative executable is refused with a clear typed error, before anything runs", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(make({ executable: "node", args: ["-e", "1"] }))
      expect(error._tag).toBe("ProviderConfigError")
      expect(error.message).toContain("executable")
      expect(error.message).toContain("absolute path")
    }))

  it.scopedLive("a program that cannot start is transport, never dispatched", () =>
    Effect.gen(function*() {
      const p = yield* programs
      const provider = yield* make({ executable: Path.join(p.dir, "does-not-exist") })
      const failure = yield* Effect.flip(provider.call(request, ctx))
      expect([failure.kind, failure.dispatched, failure.code]).toEqual(["transport", false, "spawn_NotFound"])
    }))

  it.scopedLive("stdout that does not decode is malformed_response; missing usage stays unknown", () =>
    Effect.gen(function*() {
      const p = yield* programs
      const garbage = yield* make({ executable: node, args: [p.garbage] })
      expect((yield* Effect.flip(garbage.call(request, ctx))).kind).toBe("malformed_response")
      const noUsage = yield* make({ executable: node, args: [p.noUsage] })
      expect((yield* noUsage.call(request, ctx)).usage).toBe("unknown")
    }))

  it.scopedLive("a structured error is classified; a crash is server_error and stderr is never kept", () =>
    Effect.gen(function*() {
      const p = yield* programs
      const error = yield* make({ executable: node, args: [p.error] })
      expect((yield* Effect.flip(error.call(request, ctx))).kind).toBe("context_length")
      const crash = yield* make({ executable: node, args: [p.crash] })
      const failure = yield* Effect.flip(crash.call(request, ctx))
      expect([failure.kind, failure.code]).toEqual(["server_error", "subprocess_exit_3"])
      expect(JSON.stringify(failure)).not.toContain("secret")
    }))

  it.scopedLive("its own timeout kills the whole process group, grandchildren included (TERM, then KILL)", () =>
    Effect.gen(function*() {
      const p = yield* programs
      const pidFile = Path.join(p.dir, "grandchild-own-timeout.pid")
      const provider = yield* make({
        executable: node,
        args: [p.family, pidFile],
        timeout: "500 millis",
        killGrace: "50 millis"
      })
      const failure = yield* Effect.flip(provider.call(request, ctx))
      expect([failure.kind, failure.code]).toEqual(["timeout", "subprocess_timeout"])
      const pid = Number(Fs.readFileSync(pidFile, "utf8"))
      expect(pid).toBeGreaterThan(0)
      yield* poll(() => alive(pid) ? undefined : true)
    }))

  it.scopedLive("Rein's attempt timeout kills the grandchild too", () =>
    Effect.gen(function*() {
      const p = yield* programs
      const pidFile = Path.join(p.dir, "grandchild-rein.pid")
      const provider = yield* make({ executable: node, args: [p.family, pidFile], killGrace: "50 millis" })
      const result = yield* Effect.either(
        Rein.execute(request, contract({ attemptTimeout: "500 millis", retry: { perEndpoint: 0 } })).pipe(
          Effect.provide(Rein.layer({ catalog: cat, providers: { local: provider } }))
        )
      )
      expect(Either.isLeft(result) && result.left.attempts.map((a) => [a.status, a.teardownUnconfirmed])).toEqual([
        ["timeout", false]
      ])
      const pid = yield* poll(() => Fs.existsSync(pidFile) ? Number(Fs.readFileSync(pidFile, "utf8")) : undefined)
      yield* poll(() => alive(pid) ? undefined : true)
    }))

  describe("a code the program passes through is recorded only when it is a documented one", () => {
    // What a program may pass through from its provider as `error.code`: short, no spaces, it matches the
    // machine-code pattern, and is a fragment of the API key.
    const SECRET = "sk_live_abc123secret"

    /** One call under Rein (one attempt): the attempts' kind and code in the journal and the outcome, and all of it. */
    const underRein = (args: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const p = yield* programs
        const provider = yield* make({ executable: node, args: [p.errorCode, ...args] })
        const { spans, tracer } = recordingTracer()
        const result = yield* Effect.either(
          Rein.execute(request, contract({ retry: { perEndpoint: 0 } })).pipe(
            Effect.provide(Rein.layer({ catalog: cat, providers: { local: provider } })),
            Effect.provide(Telemetry.layer),
            Effect.withTracer(tracer)
          )
        )
        const records = yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
        expect(Either.isLeft(result)).toBe(true)
        const outcome = Either.isLeft(result) ? result.left : null
        return {
          journal: records.flatMap((r) => r.attempts.map((a) => [a.failure, a.code])),
          outcome: outcome !== null && "attempts" in outcome ? outcome.attempts.map((a) => [a.failure, a.code]) : [],
          spans: JSON.stringify(spans),
          kept: JSON.stringify([records, outcome, String(outcome), spans])
        }
      }).pipe(Effect.provide(Journal.layerMemory))

    it.scopedLive("an API key fragment is `other` in the journal, the outcome and the spans", () =>
      Effect.gen(function*() {
        const r = yield* underRein([SECRET])
        expect(r.journal).toEqual([["unknown", "other"]])
        expect(r.outcome).toEqual([["unknown", "other"]])
        expect(r.kept).toContain("other")
        // The spans carry the attempt's code (in the span's attributes and the failed span's cause).
        expect(r.spans).toContain("other")
        expect(r.kept).not.toContain("abc123secret")
        expect(r.kept).not.toContain("sk_live")
      }))

    it.scopedLive("the kind is decided on the code as sent; documented codes are recorded as themselves", () =>
      Effect.gen(function*() {
        // Classified case-insensitively on the raw text, recorded as `other` (it is not the documented spelling).
        expect((yield* underRein(["Insufficient_Quota"])).journal).toEqual([["quota_exhausted", "other"]])
        // With a status: the status decides, the undocumented code is still not kept.
        expect((yield* underRein([SECRET, "429"])).journal).toEqual([["rate_limited", "other"]])
        const context = yield* underRein(["context_length_exceeded", "400"])
        expect(context.journal).toEqual([["context_length", "context_length_exceeded"]])
        expect(context.outcome).toEqual([["context_length", "context_length_exceeded"]])
        expect(context.spans).toContain("context_length_exceeded")
        expect((yield* underRein(["rate_limit_exceeded"])).journal).toEqual([["rate_limited", "rate_limit_exceeded"]])
        // Azure's spelling, a vendor-only documented code: kept, although it decides no kind.
        expect((yield* underRein(["DeploymentNotFound", "404"])).journal).toEqual([
          ["invalid_request", "DeploymentNotFound"]
        ])
      }))
  })
})
