import { describe, expect, it } from "@effect/vitest"
import { Health } from "@rein/core"
import { Either } from "effect"
import * as v8 from "node:v8"

// Every endpoint state has one hidden class (issue #22, the simulation's cold hour): the code that reads states on
// every request is compiled for that class, and a state of another class (an object spread per transition, or a
// fraction first stored where only whole numbers had been) deoptimized it when the first breaker opened.
// V8's own answer, through its natives syntax (allowed for functions compiled after the flag is set).
v8.setFlagsFromString("--allow-natives-syntax")
// Both objects are first moved off a deprecated class (V8 deprecates a class when a field's representation widens,
// and moves each object of it lazily, on its next access): only classes that stay different count.
const sameClass = new Function(
  "a",
  "b",
  "%TryMigrateInstance(a); %TryMigrateInstance(b); return %HaveSameMap(a, b)"
) as (a: object, b: object) => boolean

const failure = (kind: "server_error" | "rate_limited", retryAfterMillis: number | null): Health.Result => ({
  _tag: "failure",
  kind,
  retryAfterMillis
})

const admitted = (
  settings: Health.Settings,
  e: Health.EndpointState,
  now: number,
  role: "first" | "retry" | "fallback"
): Health.EndpointState => Either.getOrThrow(Health.admit(settings, e, now, role, null)).next

describe("Health: one hidden class for every endpoint state", () => {
  it("fresh, admitted, settled, opened, probed, closed again, with fractions and without", () => {
    const settings = Health.settingsOf({ ...Health.defaults, consecutiveFailures: 2, depositRatio: 0.1 })
    const fresh = Health.freshState(settings)
    const states: Array<[string, Health.EndpointState]> = []
    const keep = (name: string, e: Health.EndpointState) => {
      states.push([name, e])
      return e
    }
    let e = keep("retry admitted", admitted(settings, fresh, 1_000, "retry"))
    e = keep("first admitted, a fraction deposited", admitted(settings, e, 1_000.5, "first"))
    e = keep("a success", Health.settle(settings, e, 1_300.25, { probe: false }, { _tag: "success" }))
    e = keep("a failure", Health.settle(settings, e, 1_400, { probe: false }, failure("server_error", null)))
    e = keep("opened", Health.settle(settings, e, 1_500, { probe: false }, failure("server_error", null)))
    e = keep("kept open longer", Health.settle(settings, e, 1_600, { probe: false }, failure("rate_limited", 60_000)))
    expect(Health.current(e, 1_000_000)).toBe("half_open")
    e = keep("probe admitted", admitted(settings, e, 1_000_000, "first"))
    e = keep("closed by the probe", Health.settle(settings, e, 1_000_100, { probe: true }, { _tag: "success" }))
    e = keep(
      "a lone 429 with a Retry-After (one failure, still closed)",
      Health.settle(settings, e, 1_000_200, { probe: false }, failure("rate_limited", 7.5))
    )
    expect(Health.current(e, 1_000_200)).toBe("closed")
    e = keep(
      "opened by a second 429, its Retry-After lengthening the cooldown",
      Health.settle(settings, e, 1_000_250, { probe: false }, failure("rate_limited", 9_000.5))
    )
    expect(e.openUntil).toBe(1_009_250.5)
    keep("neutral", Health.settle(settings, e, 1_000_300, { probe: false }, { _tag: "neutral" }))
    // A state made after all of those, with whole numbers only, is still of the same class.
    keep("fresh again", Health.freshState(settings))
    // Every state, compared with the first that holds a fraction, each moved off a deprecated class first (in a
    // worker shared with other test files a state made before it was once of a deprecated class).
    const [, reference] = states[1]!
    expect(states.filter(([, s]) => !sameClass(reference, s)).map(([name]) => name)).toEqual([])
  })
})
