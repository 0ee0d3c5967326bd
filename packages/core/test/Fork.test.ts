import { describe, expect, it } from "@effect/vitest"
import { Rein } from "@rein/core"
import type { Provider } from "@rein/core"
import { Context, Effect, FiberRef, HashMap, List, Logger, LogLevel, Option, RuntimeFlags } from "effect"
import * as v8 from "node:v8"
import { runInNewContext } from "node:vm"
import * as Fork from "../src/internal/fork.js"
import { catalog, contract, endpoint } from "./fixtures.js"

const request = { prompt: "p", inputTokens: 10, maxOutputTokens: 10 }
const response = { text: "ok", usage: { inputTokens: 10, outputTokens: 10 } }

/** A reference of the caller's, and one whose `fork` counts the forks between the caller (once it set it) and the reader. */
const tag = FiberRef.unsafeMake("unset")
const depth = FiberRef.unsafeMake(0, { fork: (n) => n + 1 })

/** What an attempt's fiber saw of its caller's references. */
interface Seen {
  readonly tag: string
  readonly depth: number
  readonly level: string
  readonly annotations: Record<string, unknown>
  readonly span: string | undefined
}

/** A provider that records what its attempt's fiber sees, then sets `tag` there (never seen by its caller). */
const recording = (seen: Array<Seen>, suspend: boolean): Provider.Provider => ({
  internalMaxAttempts: 1,
  simulated: true,
  call: () =>
    Effect.gen(function*() {
      if (suspend) yield* Effect.yieldNow()
      const annotations = yield* FiberRef.get(FiberRef.currentLogAnnotations)
      const span = yield* Effect.option(Effect.currentSpan)
      seen.push({
        tag: yield* FiberRef.get(tag),
        depth: yield* FiberRef.get(depth),
        level: (yield* FiberRef.get(FiberRef.currentMinimumLogLevel)).label,
        annotations: Object.fromEntries(HashMap.toEntries(annotations)),
        span: Option.getOrUndefined(Option.map(span, (s) => s.name))
      })
      yield* FiberRef.set(tag, "set by the attempt")
      return response
    })
})

const run = (suspend: boolean) =>
  Effect.gen(function*() {
    const seen: Array<Seen> = []
    const layer = Rein.layer({
      catalog: catalog(endpoint("a")),
      providers: { fake: recording(seen, suspend) },
      health: false
    })
    const execute = Rein.execute(request, contract({ candidates: ["a"] }))
    yield* Effect.gen(function*() {
      // Before anything is set, then the same references again (the forked references reused).
      yield* execute
      yield* FiberRef.set(depth, 10)
      yield* execute
      // A value set in between, a new reference, a value set and restored around one call.
      yield* FiberRef.set(tag, "first")
      yield* execute
      yield* Effect.locally(execute, tag, "inner")
      yield* execute
      yield* Effect.annotateLogs(execute, "item", 7)
      yield* Effect.withSpan(execute, "outer")
      yield* Logger.withMinimumLogLevel(execute, LogLevel.Debug)
      yield* FiberRef.set(tag, "second")
      yield* execute
      // What the attempts set stays theirs.
      expect(yield* FiberRef.get(tag)).toBe("second")
    }).pipe(Effect.provide(layer))
    return seen
  })

describe("an attempt's fiber, forked from its caller's", () => {
  for (const suspend of [false, true]) {
    it.effect(`sees the caller's references as they are at each attempt (${suspend ? "suspending" : "synchronous"})`, () =>
      Effect.gen(function*() {
        const seen = yield* run(suspend)
        const plain = { depth: 11, level: "INFO", annotations: {}, span: undefined }
        expect(seen).toEqual([
          { ...plain, tag: "unset", depth: 0 },
          { ...plain, tag: "unset" },
          { ...plain, tag: "first" },
          { ...plain, tag: "inner" },
          { ...plain, tag: "first" },
          { ...plain, tag: "first", annotations: { item: 7 } },
          { ...plain, tag: "first", span: "outer" },
          { ...plain, tag: "first", level: "DEBUG" },
          { ...plain, tag: "second" }
        ])
      }))
  }

  it.effect("starts from the references forked for the attempt before while the caller's hold the same values", () =>
    Effect.withFiberRuntime((fiber, status) => {
      const flags = RuntimeFlags.enable(status.runtimeFlags, RuntimeFlags.Interruption)
      const first = Fork.siteOf(fiber, flags)
      expect(Fork.siteOf(fiber, flags)).toBe(first)
      return Effect.gen(function*() {
        yield* FiberRef.set(depth, 10)
        yield* FiberRef.set(tag, "changed")
        const changed = Fork.siteOf(fiber, flags)
        expect(changed).not.toBe(first)
        // A value set and restored: a new stack, the same current value.
        yield* Effect.locally(Effect.void, tag, "x")
        expect(Fork.siteOf(fiber, flags)).toBe(changed)
        yield* Effect.locally(Effect.sync(() => expect(Fork.siteOf(fiber, flags)).not.toBe(changed)), tag, "x")
        // A reference the caller had none of before.
        yield* FiberRef.set(FiberRef.unsafeMake(List.empty<number>()), List.of(1))
        const added = Fork.siteOf(fiber, flags)
        expect(added.source.locals.size).toBeGreaterThan(changed.source.locals.size)
        expect(Fork.siteOf(fiber, RuntimeFlags.disable(flags, RuntimeFlags.Interruption)).flags).not.toBe(flags)
        // Each child starts from the caller's values, forked, whatever the child before it set.
        const site = Fork.siteOf(fiber, flags)
        const read = Effect.zip(FiberRef.get(tag), FiberRef.get(depth))
        const a = site.fork(Effect.zipLeft(read, FiberRef.set(tag, "by a child")))
        const b = site.fork(read)
        expect([yield* a.await, yield* b.await].map((exit) => exit._tag === "Success" ? exit.value : exit))
          .toEqual([["changed", 11], ["changed", 11]])
      })
    }))

  it.effect("keeps each caller's site while callers whose references differ alternate", () =>
    Effect.gen(function*() {
      // Workers that each provide a service of their own (as a batch's guardrail workers each provide a `Gate`),
      // taking turns: each finds its own site again at every turn, and one site is made per worker.
      const workers = 64
      const before = Fork.made()
      const sites = yield* Effect.forEach(
        Array.from({ length: workers }, (_, i) => i),
        (i) =>
          Effect.withFiberRuntime<Array<Fork.Site>>((fiber, status) => {
            const flags = RuntimeFlags.enable(status.runtimeFlags, RuntimeFlags.Interruption)
            const turn = Effect.zipRight(Effect.yieldNow(), Effect.sync(() => Fork.siteOf(fiber, flags)))
            return Effect.forEach(Array.from({ length: 5 }), () => turn)
          }).pipe(Effect.provideService(Own, { worker: i })),
        { concurrency: "unbounded" }
      )
      for (const own of sites) expect(new Set(own).size).toBe(1)
      expect(new Set(sites.map((own) => own[0])).size).toBe(workers)
      expect(Fork.made() - before).toBe(workers)
    }))

  it("holds no caller's context once two full collections ran after its fibers ended", async () => {
    // A caller's service, reachable only through its context (and so through any site made for it).
    const held = await (() => {
      const service = { worker: -1 }
      const weak = new WeakRef(service)
      const fork = Effect.withFiberRuntime<void>((fiber, status) => {
        Fork.siteOf(fiber, status.runtimeFlags).fork(Effect.void)
        return Effect.void
      })
      return Effect.runPromise(Effect.provideService(fork, Own, service)).then(() => weak)
    })()
    // The first full collection lets the cached sites go (its callback runs as a task), the second collects them.
    for (let i = 0; i < 2; i++) {
      await new Promise((resolve) => setImmediate(resolve))
      gc()
    }
    await new Promise((resolve) => setImmediate(resolve))
    expect(held.deref()).toBeUndefined()
  })
})

/** A service each worker of the tests above provides its own of. */
class Own extends Context.Tag("test/Own")<Own, { readonly worker: number }>() {}

// A full collection on demand (the flag set now makes `gc` a global of a new context).
v8.setFlagsFromString("--expose-gc")
const gc = runInNewContext("gc") as () => void
