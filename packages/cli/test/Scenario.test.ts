import { describe, expect, it } from "@effect/vitest"
import { Scenario } from "@rein/cli"
import { Either } from "effect"

describe("Scenario.behaviourAt", () => {
  it.each(["constructor", "__proto__", "toString", "hasOwnProperty"])(
    "an endpoint called %s that the scenario does not name gets the default behaviour",
    (id) => {
      const scenario = Either.getOrThrow(
        Scenario.decode({ endpoints: { "fake/a": [{ behaviour: { kind: "fail", failure: "server_error" } }] } })
      )
      expect(Scenario.behaviourAt(scenario, id, 0)).toEqual(scenario.default)
      expect(Scenario.behaviourAt(scenario, "fake/a", 0)).toMatchObject({ kind: "fail" })
    }
  )
})
