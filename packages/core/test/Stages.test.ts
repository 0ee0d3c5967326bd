import { describe, expect, it } from "@effect/vitest"
import { Cause, Chunk, Effect, Exit, FastCheck as fc, Option, Stream } from "effect"
import * as Stages from "../src/internal/stages.js"

// Guards: `internal/stages.ts` against the Effect stages it replaces in `Streaming.executeStream`, on random
// pulls (chunks, empty ones included; an end, a failure or a defect; a set-up that fails; a consumer that
// stops early): the same chunks, the same exit, and the same log of pulls and of the scope's finalizer.

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

/** A pull over the spec's chunks, each pull logged: the end as `undefined` (`Stages.repeat`'s form). */
const pullOf = (s: Spec, log: Array<string>): Effect.Effect<Chunk.Chunk<number> | undefined, string> => {
  let i = 0
  return Effect.suspend(() => {
    log.push(`pull ${i}`)
    if (i < s.chunks.length) return Effect.succeed(Chunk.fromIterable(s.chunks[i++]!))
    return s.end === "done" ? Effect.succeed(undefined) : s.end === "fail" ? Effect.fail("boom") : Effect.die("bang")
  })
}

/** The same pull in `Stream.repeatEffectChunkOption`'s form (the end as `Option.none()`). */
const optionPull = (pull: Effect.Effect<Chunk.Chunk<number> | undefined, string>) =>
  Effect.flatMap(
    Effect.mapError(pull, Option.some),
    (chunk) => chunk === undefined ? Effect.fail(Option.none()) : Effect.succeed(chunk)
  )

const observe = (s: Spec, make: (log: Array<string>) => Stream.Stream<number, string>) =>
  Effect.gen(function*() {
    const log: Array<string> = []
    const chunks = Stream.chunks(make(log))
    const exit = yield* Effect.exit(Stream.runCollect(s.take === undefined ? chunks : Stream.take(chunks, s.take)))
    return Exit.isSuccess(exit)
      ? { chunks: Chunk.toReadonlyArray(exit.value).map((c) => Chunk.toReadonlyArray(c)), log }
      : {
        failures: Chunk.toReadonlyArray(Cause.failures(exit.cause)),
        defects: Chunk.toReadonlyArray(Cause.defects(exit.cause)).map(String),
        log
      }
  })

/** `executeStream`'s shape: a scoped set-up (a finalizer in its scope, logging its exit), then the pulls. */
const setup = (
  s: Spec,
  log: Array<string>,
  stream: (pull: Effect.Effect<Chunk.Chunk<number> | undefined, string>) => Stream.Stream<number, string>
) =>
  Effect.gen(function*() {
    log.push("setup")
    yield* Effect.addFinalizer((exit) => Effect.sync(() => log.push(`scope closed ${exit._tag}`)))
    if (s.setupFails) return yield* Effect.fail("setup failed")
    return stream(pullOf(s, log))
  })

describe("stages without a per-chunk cost", () => {
  it.effect.prop("repeat is Stream.repeatEffectChunkOption", [spec], ([s]) =>
    Effect.gen(function*() {
      expect(yield* observe(s, (log) => Stages.repeat(pullOf(s, log)))).toEqual(
        yield* observe(s, (log) => Stream.repeatEffectChunkOption(optionPull(pullOf(s, log))))
      )
    }))

  it.effect.prop(
    "unwrapScoped over repeat is Stream.unwrapScoped over repeatEffectChunkOption",
    [spec],
    ([s]) =>
      Effect.gen(function*() {
        expect(yield* observe(s, (log) => Stages.unwrapScoped(setup(s, log, Stages.repeat)))).toEqual(
          yield* observe(
            s,
            (log) => Stream.unwrapScoped(setup(s, log, (pull) => Stream.repeatEffectChunkOption(optionPull(pull))))
          )
        )
      })
  )
})
