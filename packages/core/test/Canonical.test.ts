import { describe, expect, it } from "@effect/vitest"
import { Canonical } from "@rein/core"
import { Effect, Either, FastCheck as fc } from "effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

interface Fixture {
  readonly name: string
  readonly value: unknown
  readonly sha256: string
}

// Recorded with the three encoders this module replaced (core's journal, batch's fingerprints, ledger's
// digests agreed on every one): journals, artifacts and ledgers written before must still replay and resume.
const fixtures: ReadonlyArray<Fixture> = JSON.parse(
  fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures", "canonical.json"), "utf8")
)

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")

const nested = (depth: number, leaf: unknown, wrap: (v: unknown) => unknown): unknown => {
  let v = leaf
  for (let i = 0; i < depth; i++) v = wrap(v)
  return v
}

describe("Canonical.encode", () => {
  it("writes every recorded fixture to the bytes recorded before", () => {
    expect(fixtures.length).toBeGreaterThan(90)
    for (const f of fixtures) expect([f.name, sha256(Canonical.unsafeEncode(f.value))]).toEqual([f.name, f.sha256])
  })

  it("sorts keys by UTF-16 code units, keeps array order, writes numbers and strings as JSON does", () => {
    expect(Canonical.unsafeEncode({ b: [3, 1, "x\n"], a: { d: null, c: -0, e: 1e21 }, "é": 1, E: 2 })).toBe(
      "{\"E\":2,\"a\":{\"c\":0,\"d\":null,\"e\":1e+21},\"b\":[3,1,\"x\\n\"],\"é\":1}"
    )
  })

  it("an absent field and one set to undefined are the same; a Date is its ISO string", () => {
    expect(Canonical.encode({ a: 1, b: undefined })).toEqual(Canonical.encode({ a: 1 }))
    expect(Canonical.encode({ at: new Date(0) })).toEqual(Either.right("{\"at\":\"1970-01-01T00:00:00.000Z\"}"))
  })

  it("refuses non-finite numbers and other lossy values with a typed error naming where", () => {
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    const cases: ReadonlyArray<readonly [unknown, string, string]> = [
      [{ price: Number.NaN }, "$.price", "Expected a finite number, actual NaN"],
      [{ items: [1, Infinity] }, "$.items[1]", "Expected a finite number, actual Infinity"],
      [-Infinity, "$", "Expected a finite number, actual -Infinity"],
      [[undefined], "$[0]", "undefined has no JSON form"],
      [{ tags: new Set(["a"]) }, "$.tags", "A Set has no JSON form"],
      [{ "odd key": new Map() }, "$[\"odd key\"]", "A Map has no JSON form"],
      [{ n: 10n }, "$.n", "A bigint has no JSON form"],
      [{ f: () => 1 }, "$.f", "A function has no JSON form"],
      [{ s: Symbol("s") }, "$.s", "A symbol has no JSON form"],
      [cyclic, "$.self", "A cycle has no JSON form"],
      [undefined, "$", "undefined has no JSON form"]
    ]
    for (const [value, at, message] of cases) {
      expect(Canonical.encode(value)).toEqual(Either.left(new Canonical.CanonicalError({ path: at, message })))
    }
    expect(() => Canonical.unsafeEncode({ x: Number.NaN })).toThrow(Canonical.CanonicalError)
  })

  it("a value shared by two fields is not a cycle", () => {
    const shared = { x: 1 }
    expect(Canonical.unsafeEncode({ a: shared, b: [shared, shared] })).toBe(
      "{\"a\":{\"x\":1},\"b\":[{\"x\":1},{\"x\":1}]}"
    )
  })

  it("encodes input nested 100,000 deep without overflowing the stack, and names a NaN at the bottom", () => {
    const depth = 100_000
    const arrays = nested(depth, 1, (v) => [v])
    expect(Canonical.unsafeEncode(arrays)).toBe(`${"[".repeat(depth)}1${"]".repeat(depth)}`)
    const objects = nested(depth, null, (v) => ({ a: v }))
    expect(Canonical.unsafeEncode(objects)).toBe(`${"{\"a\":".repeat(depth)}null${"}".repeat(depth)}`)
    const bad = Canonical.encode(nested(depth, Number.NaN, (v) => [v]))
    expect(Either.isLeft(bad) && bad.left.path).toBe(`$${"[0]".repeat(depth)}`)
  })

  it.effect.prop(
    "key order never changes the text, and the text round-trips through JSON.parse",
    [fc.jsonValue(), fc.integer()],
    ([value, seed]) =>
      Effect.sync(() => {
        let s = seed
        const rand = () => ((s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff)
        const shuffled = (v: unknown): unknown =>
          Array.isArray(v)
            ? v.map(shuffled)
            : typeof v === "object" && v !== null
            ? Object.fromEntries(Object.entries(v).sort(() => rand() - 0.5).map(([k, x]) => [k, shuffled(x)]))
            : v
        const text = Canonical.unsafeEncode(value)
        expect(Canonical.unsafeEncode(shuffled(value))).toBe(text)
        expect(Canonical.unsafeEncode(JSON.parse(text))).toBe(text)
      })
  )
})

describe("Canonical.firstDifference", () => {
  it("names the first differing path depth first, in key order", () => {
    expect(Canonical.firstDifference({ a: 1, b: [1, 2] }, { a: 1, b: [1, 3] })).toBe("b[1]")
    expect(Canonical.firstDifference({ z: 1, a: { y: 2 } }, { z: 2, a: { y: 3 } })).toBe("a.y")
    expect(Canonical.firstDifference({ a: 1 }, { a: 1, b: 2 })).toBe("b")
    expect(Canonical.firstDifference([1], "x")).toBe("(root)")
    expect(Canonical.firstDifference({ a: 1, b: undefined }, { a: 1 })).toBeUndefined()
    expect(Canonical.firstDifference({ n: -0 }, { n: 0 })).toBeUndefined()
  })

  it("walks input nested 100,000 deep without overflowing the stack", () => {
    const depth = 100_000
    expect(Canonical.firstDifference(nested(depth, 1, (v) => [v]), nested(depth, 2, (v) => [v]))).toBe(
      "[0]".repeat(depth)
    )
  })

  it.effect.prop(
    "two JSON values differ somewhere exactly when their canonical texts differ",
    [fc.jsonValue(), fc.jsonValue()],
    ([a, b]) =>
      Effect.sync(() => {
        const same = Canonical.unsafeEncode(a) === Canonical.unsafeEncode(b)
        expect(Canonical.firstDifference(a, b) === undefined).toBe(same)
        expect(Canonical.firstDifference(a, a)).toBeUndefined()
      })
  )
})
