/**
 * Runs racing for one artifact's stale lock: exactly one takes it, the others fail with the typed `InputError`
 * naming the file and the holder. In one process (the lock's own functions on the real file system, each file
 * operation after a drawn number of scheduler turns, so that the property explores interleavings), then as
 * real processes starting at the same instant.
 */
import { NodeFileSystem } from "@effect/platform-node"
import * as FileSystem from "@effect/platform/FileSystem"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, FastCheck as fc, Fiber, Layer, Scope, TestClock } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { InputError } from "../src/InputError.js"
import * as ArtifactLock from "../src/internal/artifactLock.js"

/** A lock left by a process that is gone (no pid is this large on Linux: `pid_max` ≤ 2^22). */
const STALE = JSON.stringify({ pid: 2 ** 23, start: null, ns: null })

/** Node's file system, each operation of the lock's after `turns()` scheduler turns. */
const shuffled = (turns: () => number) =>
  Layer.effect(
    FileSystem.FileSystem,
    Effect.map(FileSystem.FileSystem, (inner): FileSystem.FileSystem => {
      const later = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        Effect.zipRight(Effect.repeatN(Effect.yieldNow(), turns()), effect)
      return {
        ...inner,
        open: (p, o) => later(inner.open(p, o)),
        stat: (p) => later(inner.stat(p)),
        readLink: (p) => later(inner.readLink(p)),
        realPath: (p) => later(inner.realPath(p)),
        remove: (p, o) => later(inner.remove(p, o)),
        rename: (a, b) => later(inner.rename(a, b)),
        link: (a, b) => later(inner.link(a, b)),
        writeFileString: (p, d, o) => later(inner.writeFileString(p, d, o))
      }
    })
  ).pipe(Layer.provide(NodeFileSystem.layer))

describe("runs racing for one artifact's stale lock", () => {
  it.effect.prop(
    "exactly one of three takes it over; the others get an InputError naming the file",
    [fc.array(fc.nat(12), { minLength: 64, maxLength: 64 })],
    ([draws]) =>
      Effect.gen(function*() {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rein-lock-race-"))
        const out = path.join(dir, "run.jsonl")
        fs.writeFileSync(`${out}.lock`, STALE)
        let i = 0
        const turns = () => draws[i++ % draws.length]!
        const scopes = yield* Effect.all([Scope.make(), Scope.make(), Scope.make()])
        const files = shuffled(turns)
        const fibers = yield* Effect.forEach(scopes, (scope) =>
          Effect.fork(Effect.exit(ArtifactLock.acquire(out).pipe(Scope.extend(scope), Effect.provide(files)))))
        // Runs that find a takeover under way wait (a few milliseconds) on the clock.
        while (
          fibers.some((f) =>
            f.unsafePoll() === null
          )
        ) yield* TestClock.adjust("10 millis")
        const exits = yield* Effect.forEach(fibers, Fiber.join)
        const taken = exits.filter(Exit.isSuccess)
        expect(taken).toHaveLength(1)
        for (const exit of exits.filter(Exit.isFailure)) {
          expect(exit).toMatchObject({ cause: { error: expect.any(InputError) } })
          const message = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error.message : ""
          expect(message).toContain(out)
        }
        // No claim left behind; the lock is this process's, then gone with its run.
        expect(fs.readdirSync(dir)).toEqual(["run.jsonl.lock"])
        expect(JSON.parse(fs.readFileSync(`${out}.lock`, "utf8")).pid).toBe(process.pid)
        yield* Effect.forEach(scopes, (scope) => Scope.close(scope, Exit.void))
        expect(fs.readdirSync(dir)).toEqual([])
        fs.rmSync(dir, { recursive: true })
      }),
    { fastCheck: { numRuns: 40, seed: 22 } }
  )

  it(
    "as real processes starting at one instant: one holds it, the others fail naming the file and the holder",
    async () => {
      const driver = path.join(import.meta.dirname, "support", "lockRace.mjs")
      const cwd = path.join(import.meta.dirname, "..")
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rein-lock-procs-"))
      for (let round = 0; round < 3; round++) {
        const out = path.join(dir, `run-${round}.jsonl`)
        fs.writeFileSync(`${out}.lock`, STALE)
        // Each holder keeps the lock long past the others' start (node's start-up under load takes seconds).
        // A wall-clock instant the processes share (they compare it with their own clocks).
        const startAt = Math.round(performance.timeOrigin + performance.now()) + 2_000
        const outputs = await Promise.all(Array.from({ length: 5 }, () =>
          new Promise<string>((resolve) => {
            const child = spawn(process.execPath, [driver, out, String(startAt), "6000"], { cwd })
            let text = ""
            child.stdout.on("data", (chunk) => (text += chunk))
            child.stderr.on("data", (chunk) => (text += chunk))
            child.on("exit", () => resolve(text.trim()))
          })))
        const held = outputs.filter((o) => o.startsWith("held "))
        expect(held).toHaveLength(1)
        const refused = outputs.filter((o) => o.startsWith("refused: "))
        expect(refused).toHaveLength(4)
        for (const r of refused) expect(r).toMatch(new RegExp(`^refused: ${out}: another rein batch run holds it`))
        expect(fs.readdirSync(dir).filter((f) => f.startsWith(`run-${round}.`))).toEqual([])
      }
      fs.rmSync(dir, { recursive: true })
    },
    240_000
  )
})
