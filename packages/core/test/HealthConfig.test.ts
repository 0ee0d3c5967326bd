import { describe, expect, it } from "@effect/vitest"
import { Fake, Health, Rein } from "@rein/core"
import { Duration, Effect, Either, FastCheck as fc } from "effect"
import { catalog, contract, endpoint } from "./fixtures.js"

// Health settings decoded at the edge (`Health.decodeConfig`, which `Rein.layer` applies): each field's bounds,
// exactly, and the message that names the field. Small and fast, so that the mutation run of the health module
// (issue #23) lists it: `Health.test.ts`, with the traffic simulations, is left out of that run.

const messageOf = (input: unknown): string | undefined =>
  Either.match(Health.decodeConfig(input), { onLeft: (e) => e.message, onRight: () => undefined })

const accepts = (input: unknown) => Either.isRight(Health.decodeConfig(input))

describe("Health.decodeConfig", () => {
  it("accepts no settings at all, and gives back exactly the settings given", () => {
    expect(Health.decodeConfig({})).toEqual(Either.right({}))
    const all = {
      consecutiveFailures: 3,
      windowSize: 30,
      minimumVolume: 1,
      failureRatio: 1,
      cooldown: 2_000,
      cooldownGrowth: 1,
      maxCooldown: "1 minute",
      probes: 1,
      capacity: 0,
      depositRatio: 0
    }
    const decoded = Health.decodeConfig(all)
    expect(Either.isRight(decoded)).toBe(true)
    if (Either.isRight(decoded)) {
      expect({ ...decoded.right, cooldown: undefined, maxCooldown: undefined }).toEqual({
        ...all,
        cooldown: undefined,
        maxCooldown: undefined
      })
      expect(Duration.toMillis(decoded.right.cooldown!)).toBe(2_000)
      expect(Duration.toMillis(decoded.right.maxCooldown!)).toBe(60_000)
    }
  })

  it("refuses a bad setting with a ConfigError whose message names the field, what was expected and what was given", () => {
    const decoded = Health.decodeConfig({ probes: 0 })
    expect(Either.isLeft(decoded)).toBe(true)
    if (Either.isLeft(decoded)) {
      expect(decoded.left).toBeInstanceOf(Health.ConfigError)
      expect(decoded.left._tag).toBe("HealthConfigError")
      expect(decoded.left.message).toBe("probes: Expected a positive integer, actual 0")
    }
  })

  it("refuses a field it does not know, naming it, and a field given as undefined", () => {
    expect(messageOf({ probe: 2 })).toMatch(/^probe: is unexpected/)
    expect(messageOf({ probes: undefined })).toMatch(/^probes: /)
    expect(messageOf(null)).toBe("Expected an object, actual null")
  })

  it("counts are whole and at least 1: consecutiveFailures, minimumVolume, probes", () => {
    for (const field of ["consecutiveFailures", "minimumVolume", "probes"]) {
      expect(accepts({ [field]: 1 }), field).toBe(true)
      expect(accepts({ [field]: 1_000 }), field).toBe(true)
      for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
        expect(messageOf({ [field]: bad }), `${field} ${bad}`).toBe(
          `${field}: Expected a positive integer, actual ${bad}`
        )
      }
    }
  })

  it("windowSize is an integer from 1 to 30, both ends included", () => {
    for (const ok of [1, 2, 29, 30]) expect(accepts({ windowSize: ok }), String(ok)).toBe(true)
    for (const bad of [0, 31, 2.5, -1, Number.NaN]) {
      expect(messageOf({ windowSize: bad }), String(bad)).toBe(
        `windowSize: Expected an integer from 1 to 30, actual ${bad}`
      )
    }
  })

  it("failureRatio is above 0 and at most 1", () => {
    for (const ok of [Number.MIN_VALUE, 0.5, 1]) expect(accepts({ failureRatio: ok }), String(ok)).toBe(true)
    for (const bad of [0, -0.5, 1 + Number.EPSILON, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(messageOf({ failureRatio: bad }), String(bad)).toBe(
        `failureRatio: Expected a number above 0, at most 1, actual ${bad}`
      )
    }
  })

  it("cooldownGrowth is finite and at least 1", () => {
    for (const ok of [1, 2.5, 1e9]) expect(accepts({ cooldownGrowth: ok }), String(ok)).toBe(true)
    for (const bad of [1 - Number.EPSILON, 0, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(messageOf({ cooldownGrowth: bad }), String(bad)).toBe(
        `cooldownGrowth: Expected a finite number of at least 1, actual ${bad}`
      )
    }
  })

  it("capacity and depositRatio: every finite number ≥ 0 is accepted, every other number refused naming the field", () => {
    fc.assert(
      fc.property(fc.constantFrom("capacity", "depositRatio"), fc.double(), (field, n) => {
        const ok = Number.isFinite(n) && n >= 0
        expect(messageOf({ [field]: n })).toBe(
          ok ? undefined : `${field}: Expected a non-negative finite number, actual ${n}`
        )
      }),
      { numRuns: 300, seed: 23 }
    )
  })

  it("capacity and depositRatio: 0 is allowed, and so is no bucket limit short of infinity", () => {
    for (const field of ["capacity", "depositRatio"]) {
      expect(accepts({ [field]: 0 }), field).toBe(true)
      expect(accepts({ [field]: Number.MAX_VALUE }), field).toBe(true)
      expect(messageOf({ [field]: -Number.MIN_VALUE }), field).toMatch(new RegExp(`^${field}: `))
      expect(messageOf({ [field]: Number.POSITIVE_INFINITY }), field).toMatch(new RegExp(`^${field}: `))
      expect(messageOf({ [field]: Number.NaN }), field).toMatch(new RegExp(`^${field}: `))
    }
  })

  it("accepts every DurationInput form its type allows, positive, and refuses the rest naming the field", () => {
    for (const cooldown of [Duration.seconds(2), 2_000, "2 seconds", 2_000_000_000n, [2, 0] as const]) {
      const decoded = Health.decodeConfig({ cooldown })
      expect(Either.isRight(decoded), String(cooldown)).toBe(true)
      if (Either.isRight(decoded)) expect(Duration.toMillis(decoded.right.cooldown!)).toBe(2_000)
    }
    for (const maxCooldown of [0n, -1n, [0, 0] as const, [-1, 0] as const, [Number.NaN, 0] as const, Duration.zero]) {
      const decoded = Health.decodeConfig({ maxCooldown })
      expect(Either.isLeft(decoded), String(maxCooldown)).toBe(true)
      if (Either.isLeft(decoded)) expect(decoded.left.message).toContain("maxCooldown")
    }
  })

  it("the shortest duration of each form is positive: 1 nanosecond, 1 millisecond", () => {
    for (const field of ["cooldown", "maxCooldown"]) {
      for (const ok of [1n, [0, 1] as const, Duration.nanos(1n), Duration.millis(1), 1, "1 millis"]) {
        expect(accepts({ [field]: ok }), `${field} ${String(ok)}`).toBe(true)
      }
    }
  })

  it("a duration that is not positive says so for the forms that are durations", () => {
    for (const zero of [Duration.zero, 0n, [0, 0] as const]) {
      expect(messageOf({ cooldown: zero })!.split("\n")).toContain("cooldown: Expected a positive duration")
    }
    for (const bad of [0, -5, "0 seconds", "soon", true]) {
      expect(messageOf({ cooldown: bad }), String(bad)).toMatch(/^cooldown: /)
    }
  })
})

describe("Health.Config given to Rein.layer", () => {
  const cat = catalog(endpoint("a"))
  const request = { prompt: "p", inputTokens: 10, maxOutputTokens: 10 }

  it.effect("is decoded at the edge: a bad setting fails the layer with a typed error naming the field", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed({ text: "ok" })] })
      const run = (health: Partial<Health.Config>) =>
        Effect.flip(
          Rein.execute(request, contract({ candidates: ["a"] })).pipe(
            Effect.provide(Rein.layer({ catalog: cat, providers: { fake: fake.provider }, health }))
          )
        )
      const cases: ReadonlyArray<readonly [Partial<Health.Config>, string]> = [
        [{ probes: 0 }, "probes: "],
        [{ failureRatio: Number.NaN }, "failureRatio: "],
        [{ cooldown: -5 }, "cooldown: "],
        [{ windowSize: 31 }, "windowSize: "],
        [{ depositRatio: -1 }, "depositRatio: "]
      ]
      for (const [health, field] of cases) {
        const error = yield* run(health)
        expect(error._tag).toBe("HealthConfigError")
        expect(error.message.startsWith(field), error.message).toBe(true)
      }
      expect((yield* fake.calls).length).toBe(0)
    }))
})

describe("Health.make and Health.layer called directly", () => {
  const cases: ReadonlyArray<readonly [Partial<Health.Config>, string]> = [
    [{ probes: 0 }, "probes: "],
    [{ consecutiveFailures: 1.5 }, "consecutiveFailures: "],
    [{ failureRatio: 2 }, "failureRatio: "],
    [{ cooldown: Duration.zero }, "cooldown: "],
    [{ capacity: Number.POSITIVE_INFINITY }, "capacity: "]
  ]

  it.effect("check the settings too: one out of range fails with a ConfigError naming the field", () =>
    Effect.gen(function*() {
      for (const [config, field] of cases) {
        const made = yield* Effect.flip(Health.make(config))
        expect(made).toBeInstanceOf(Health.ConfigError)
        expect(made.message.startsWith(field), made.message).toBe(true)
        const layered = yield* Effect.flip(Effect.provide(Health.Health, Health.layer(config)))
        expect(layered.message).toBe(made.message)
      }
    }))

  it.effect("build a service from settings in range, their values kept", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ probes: 3, cooldown: "2 seconds", failureRatio: 1 })
      expect(health.config.probes).toBe(3)
      expect(health.config.failureRatio).toBe(1)
      expect(Duration.toMillis(health.config.cooldown)).toBe(2_000)
      expect(yield* health.breaker("a")).toBe("closed")
    }))
})
