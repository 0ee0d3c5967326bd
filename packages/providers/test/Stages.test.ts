import { describe, expect, it } from "@effect/vitest"
import { Cause, Chunk, Context, Effect, Exit, FastCheck as fc, Stream } from "effect"
import * as Stages from "../src/internal/stages.js"

// Guards: each stage of `internal/stages.ts` against the Effect stage it replaces, on random streams (chunks,
// empty ones included; a clean end, a failure or a defect; a consumer that stops early): the same chunks, the
// same exit, and the same log of when each chunk was produced, each function called and each finalizer ran.

class Offset extends Context.Tag("test/Offset")<Offset, number>() {}

type End = "done" | "fail" | "die"
interface Spec {
  readonly chunks: ReadonlyArray<ReadonlyArray<number>>
  readonly end: End
  readonly take: number | undefined
  readonly setupFails: boolean
}

const spec = fc.record({
  chunks: fc.array(fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 3 }), { maxLength: 6 }),
  end: fc.constantFrom<End>("done", "fail", "die"),
  take: fc.option(fc.integer({ min: 0, max: 8 }), { nil: undefined }),
  setupFails: fc.boolean()
})

/** The spec's stream: its chunks as they are (each logged when produced, read through `Offset` if `offset`). */
const inner = (s: Spec, log: Array<string>, offset: boolean): Stream.Stream<number, string, Offset> =>
  Stream.fromChunks(...s.chunks.map((c) => Chunk.fromIterable(c))).pipe(
    Stream.mapChunksEffect((chunk) =>
      Effect.map(offset ? Offset : Effect.succeed(0), (o) => {
        log.push(`chunk ${Chunk.join(Chunk.map(chunk, String), ",")} +${o}`)
        return Chunk.map(chunk, (x) => x + o)
      })
    ),
    Stream.concat(s.end === "done" ? Stream.empty : s.end === "fail" ? Stream.fail("boom") : Stream.die("bang")),
    Stream.ensuring(Effect.sync(() => log.push("inner finalizer")))
  )

const shown = (exit: Exit.Exit<Chunk.Chunk<Chunk.Chunk<number>>, string>) =>
  Exit.isSuccess(exit)
    ? { chunks: Chunk.toReadonlyArray(exit.value).map((c) => Chunk.toReadonlyArray(c)) }
    : {
      failures: Chunk.toReadonlyArray(Cause.failures(exit.cause)),
      defects: Chunk.toReadonlyArray(Cause.defects(exit.cause)).map(String),
      interrupted: Cause.isInterrupted(exit.cause)
    }

/** The chunks a consumer sees (taking `take` chunks, if given), the exit, and the log. */
const observe = (s: Spec, make: (log: Array<string>) => Stream.Stream<number, string>) =>
  Effect.gen(function*() {
    const log: Array<string> = []
    const chunks = Stream.chunks(make(log))
    const exit = yield* Effect.exit(Stream.runCollect(s.take === undefined ? chunks : Stream.take(chunks, s.take)))
    return { ...shown(exit), log }
  })

const same = (s: Spec, ours: (log: Array<string>) => Stream.Stream<number, string>, effects: typeof ours) =>
  Effect.gen(function*() {
    expect(yield* observe(s, ours)).toEqual(yield* observe(s, effects))
  })

describe("stages without a per-chunk cost", () => {
  it.effect.prop("unwrap is Stream.unwrap", [spec], ([s]) => {
    const made = (log: Array<string>) =>
      Effect.suspend(() => {
        log.push("made")
        return s.setupFails
          ? Effect.fail("setup failed")
          : Effect.succeed(Stream.provideService(inner(s, log, false), Offset, 0))
      })
    return same(s, (log) => Stages.unwrap(made(log)), (log) => Stream.unwrap(made(log)))
  })

  it.effect.prop("provideService and provideSomeContext are Effect's", [spec], ([s]) =>
    Effect.zipRight(
      same(
        s,
        (log) => Stages.provideService(inner(s, log, true), Offset, 100),
        (log) => Stream.provideService(inner(s, log, true), Offset, 100)
      ),
      same(
        s,
        (log) => Stages.provideSomeContext(inner(s, log, true), Context.make(Offset, 7)),
        (log) => Stream.provideSomeContext(inner(s, log, true), Context.make(Offset, 7))
      )
    ))

  it.effect.prop("mapParts is Stream.mapEffect (every element its own chunk, the ones before a failure first)", [
    spec,
    fc.integer({ min: 2, max: 9 })
  ], ([s, bad]) =>
    same(
      s,
      (log) =>
        Stages.mapParts(Stream.provideService(inner(s, log, false), Offset, 0), (x) => {
          log.push(`f ${x}`)
          return x % bad === 1 ? Effect.fail(`bad ${x}`) : x * 2
        }),
      (log) =>
        Stream.mapEffect(Stream.provideService(inner(s, log, false), Offset, 0), (x) => {
          log.push(`f ${x}`)
          return x % bad === 1 ? Effect.fail(`bad ${x}`) : Effect.succeed(x * 2)
        })
    ))
})
