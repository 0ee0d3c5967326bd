import { describe, expect, it } from "@effect/vitest"
import { Outcome } from "@rein/core"
import { Arbitrary, Equal, FastCheck as fc, Schema } from "effect"
import { inspect } from "node:util"
import { construct, stackless } from "../src/internal/stackless.js"

// Guards: `construct` (how the executor builds its outcomes: an expiry builds one per request) against
// `new Class(props, true)`, for every outcome class, on random fields: the same error in every way a caller can
// see it, and built without Schema's constructor once the class was checked.

const PLAIN_ARGS = Symbol.for("effect/Data/Error/plainArgs")

const classes = [
  Outcome.DeadlineExceeded,
  Outcome.BudgetExhausted,
  Outcome.PlanExhausted,
  Outcome.FailedSafe,
  Outcome.Refused,
  Outcome.Halted
] as const

type AnyClass = new(props: object, options: true) => Error

/** The fields an instance was built with, as a fresh object (what the executor hands `construct`). */
const fieldsOf = (error: object): Record<PropertyKey, unknown> => {
  const { _tag: _, ...fields } = (error as unknown as Record<PropertyKey, Record<PropertyKey, unknown>>)[PLAIN_ARGS]!
  return fields
}

const descriptors = (error: object) =>
  Reflect.ownKeys(error).map((key) => {
    const { value, ...flags } = Object.getOwnPropertyDescriptor(error, key)!
    return [key, flags, key === PLAIN_ARGS ? { ...(value as object) } : value]
  })

const same = (Class: AnyClass, props: Record<PropertyKey, unknown>) => {
  const built = stackless(() => new Class({ ...props }, true))
  const quick = construct(Class, { ...props })
  expect(Object.getPrototypeOf(quick)).toBe(Class.prototype)
  expect(quick).toBeInstanceOf(Error)
  expect(descriptors(quick)).toEqual(descriptors(built))
  expect(Equal.equals(quick, built)).toBe(true)
  expect(quick.message).toBe(built.message)
  expect(quick.stack).toBe(built.stack)
  expect(JSON.stringify(quick)).toBe(JSON.stringify(built))
  expect(inspect(quick)).toBe(inspect(built))
  expect(Schema.encodeUnknownSync(Outcome.Terminal)(quick)).toEqual(Schema.encodeUnknownSync(Outcome.Terminal)(built))
  expect(Schema.is(Class as unknown as Schema.Schema<Error>)(quick)).toBe(true)
  return quick
}

describe("Stackless.construct", () => {
  for (const Class of classes) {
    it.prop(
      `${Class._tag}: the same error as its constructor builds, fields and all (property)`,
      [Arbitrary.make(Class as unknown as Schema.Schema<Error>)],
      ([sample]) => {
        same(Class as unknown as AnyClass, fieldsOf(sample))
      },
      { fastCheck: { numRuns: 60 } }
    )
  }

  it("an outcome is built without Schema's constructor once its class was checked: it keeps the fields it was given", () => {
    for (const Class of classes) {
      const fields = fieldsOf(fc.sample(Arbitrary.make(Class as unknown as Schema.Schema<Error>), 1)[0]!)
      construct(Class as unknown as AnyClass, { ...fields })
      const props = { ...fields }
      const error = construct(Class as unknown as AnyClass, props)
      // The constructor keeps a copy of its props; `construct` keeps the caller's fresh object.
      expect((error as unknown as Record<PropertyKey, unknown>)[PLAIN_ARGS]).toBe(props)
      expect(descriptors(error)).toEqual(
        descriptors(stackless(() => new (Class as unknown as AnyClass)({ ...fields }, true)))
      )
    }
  })

  it("a class with another default, or a field of its own, is built by its constructor every time", () => {
    class WithDefault extends Schema.TaggedError<WithDefault>()("WithDefault", {
      reason: Schema.String,
      tries: Schema.optionalWith(Schema.Number, { default: () => 1 })
    }) {}
    class WithField extends Schema.TaggedError<WithField>()("WithField", { reason: Schema.String }) {
      readonly extra = 1
    }
    for (let i = 0; i < 3; i++) {
      const d = construct(WithDefault, { reason: "r" })
      expect(d.tries).toBe(1)
      expect(Object.keys(d)).toEqual(Object.keys(new WithDefault({ reason: "r" }, true)))
      expect(construct(WithDefault, { reason: "r", tries: 4 }).tries).toBe(4)
      const f = construct(WithField, { reason: "r" })
      expect(f.extra).toBe(1)
      expect(Object.keys(f)).toEqual(Object.keys(new WithField({ reason: "r" }, true)))
    }
  })

  it("builds without a stack trace, and leaves the limit as it was", () => {
    const limit = Error.stackTraceLimit
    const error = construct(Outcome.Halted, { reason: "stopped", lastFailure: null, attempts: [] })
    construct(Outcome.Halted, { reason: "stopped", lastFailure: null, attempts: [] })
    expect(Error.stackTraceLimit).toBe(limit)
    expect(error.stack?.split("\n")).toHaveLength(1)
  })
})
