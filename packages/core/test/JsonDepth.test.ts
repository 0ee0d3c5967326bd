/**
 * JSON nested too deep is refused before it is parsed (`Input.tooDeep`): V8 parses a line of nested arrays at
 * ~50 times its size in memory. The journal's reader refuses such a line naming it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc } from "effect"
import { Input, Journal } from "../src/index.js"

/** The nesting depth of a JSON value: arrays and objects only. */
const depthOf = (value: unknown): number =>
  Array.isArray(value)
    ? 1 + Math.max(0, ...value.map(depthOf))
    : typeof value === "object" && value !== null
    ? 1 + Math.max(0, ...Object.values(value).map(depthOf))
    : 0

/** A JSON value nested `n` deep, strings holding brackets and quotes that do not nest. */
const nested = (n: number, leaf: unknown): unknown => {
  let value = leaf
  for (let i = 0; i < n; i++) value = i % 2 === 0 ? [value, "]}[{\\\""] : { "[": value, "}\"": "{{[" }
  return value
}

describe("Input.tooDeep", () => {
  it.effect.prop(
    "is exactly: the value nests deeper than the limit (brackets in strings and keys do not count)",
    [
      fc.integer({ min: 0, max: 40 }),
      fc.integer({ min: 0, max: 40 }),
      fc.jsonValue({ maxDepth: 4 }),
      fc.string({ unit: fc.constantFrom("[", "]", "{", "}", "\"", "\\", "x") })
    ],
    ([n, max, leaf, text]) =>
      Effect.sync(() => {
        const json = JSON.stringify(nested(n, [leaf, text]))
        expect(Input.tooDeep(json, max)).toBe(depthOf(JSON.parse(json)) > max)
      }),
    { fastCheck: { numRuns: 200, seed: 19 } }
  )

  it("refuses a 10 MB line of nested arrays at the default limit (256), accepts one at it", () => {
    expect(Input.MAX_JSON_DEPTH).toBe(256)
    const deep = 5 * 1024 * 1024
    expect(Input.tooDeep(`${"[".repeat(deep)}${"]".repeat(deep)}`)).toBe(true)
    expect(Input.tooDeep(`${"[".repeat(256)}${"]".repeat(256)}`)).toBe(false)
    expect(Input.tooDeep(`${"{\"a\":".repeat(257)}1${"}".repeat(257)}`)).toBe(true)
  })
})

describe("Journal.decodeLine", () => {
  it("refuses a line nested deeper than 256 levels unparsed, naming the line", () => {
    const deep = 5 * 1024 * 1024
    const result = Journal.decodeLine(`${"[".repeat(deep)}${"]".repeat(deep)}`, 7)
    expect(Either.flip(result)).toMatchObject(Either.right({ _tag: "JournalError", reason: "json", line: 7 }))
    expect(Either.isLeft(result) && result.left.message).toMatch(/nested deeper than 256 levels/)
  })
})
