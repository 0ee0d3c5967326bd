/**
 * Hostile input for property tests of decoders at the edge: the values that crashed them (arrays nested
 * 100,000 deep, null-prototype objects, `__proto__` and `constructor` keys, megabyte strings, NaN, ±Infinity,
 * `1e400`, symbols) and helpers that plant one of them at one field of a valid document.
 *
 * A test generates a valid document, mutates one field to a value that field's own oracle says is bad, and
 * asserts that the decoder answers `Left` naming that field, without throwing.
 *
 * @since 0.1.0
 */
import { FastCheck as fc } from "effect"

/**
 * A path into a document: keys and indices.
 *
 * @category models
 * @since 0.1.0
 */
export type Path = ReadonlyArray<string | number>

const nested = (depth: number, leaf: unknown): unknown => {
  let v: unknown = leaf
  for (let i = 0; i < depth; i++) v = [v]
  return v
}

const nullProto = (entries: Record<string, unknown>): object => Object.assign(Object.create(null), entries)

const HUGE = "x".repeat(1 << 20)

/**
 * The hostile values, each built once (decoders must not mutate their input).
 *
 * @example
 * ```ts
 * import { Hostile } from "@rein/core/testing"
 *
 * Hostile.values.length > 30 // true
 * ```
 * @category fixtures
 * @since 0.1.0
 */
export const values: ReadonlyArray<unknown> = [
  // Numbers a JSON file or a caller can produce, and the non-finite ones.
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  JSON.parse("1e400") as number,
  JSON.parse("-1e400") as number,
  -0,
  -1,
  0,
  0.5,
  1.5,
  2 ** 60,
  1e-300,
  Number.MIN_VALUE,
  // Strings: empty, blank, huge, number-like, durations below the clock's resolution, prototype names.
  "",
  " ",
  HUGE,
  "1e400",
  "1e400 ms",
  "NaN",
  "Infinity",
  "-1 seconds",
  "0.4 ns",
  "1e-7 ms",
  "10 parsecs",
  "__proto__",
  "constructor",
  // Other types.
  true,
  false,
  null,
  Symbol("hostile"),
  10n ** 400n,
  () => 1,
  // Structures: deep, wide, prototype-less, with prototype-named keys.
  [],
  {},
  nested(3, 1),
  nested(10_000, 1),
  nested(100_000, "x"),
  Array.from({ length: 1_000 }, (_, i) => i),
  nullProto({}),
  nullProto({ x: 1 }),
  nullProto({ toString: 1, valueOf: 2 }),
  JSON.parse("{\"__proto__\": {\"x\": 1}}") as unknown,
  JSON.parse("{\"constructor\": 1}") as unknown,
  { [HUGE]: 1 },
  [nullProto({ a: nested(10_000, 0) })]
]

/**
 * One hostile value (a fast-check arbitrary over `values`), optionally only those `bad` accepts.
 *
 * @example
 * ```ts
 * import { Hostile } from "@rein/core/testing"
 *
 * const notANumber = Hostile.value((v) => typeof v !== "number")
 * ```
 * @category arbitraries
 * @since 0.1.0
 */
export const value = (bad: (v: unknown) => boolean = () => true): fc.Arbitrary<unknown> =>
  fc.constantFrom(...values.filter(bad))

/**
 * Keys that must never be taken for anything but data.
 *
 * @example
 * ```ts
 * import { Hostile } from "@rein/core/testing"
 *
 * Hostile.keys.includes("__proto__") // true
 * ```
 * @category fixtures
 * @since 0.1.0
 */
export const keys: ReadonlyArray<string> = ["__proto__", "constructor", "toString", "hasOwnProperty", HUGE, ""]

const isContainer = (v: unknown): v is Record<string | number, unknown> => typeof v === "object" && v !== null

/**
 * A copy of `doc` with `value` at `path` (the last key set as an own data property, even `"__proto__"`).
 * `value` itself is not copied. Containers on the way are copied, not shared.
 *
 * @example
 * ```ts
 * import { Hostile } from "@rein/core/testing"
 *
 * Hostile.setAt({ retry: { base: 100 } }, ["retry", "base"], Number.NaN) // { retry: { base: NaN } }
 * ```
 * @category utils
 * @since 0.1.0
 */
export const setAt = (doc: unknown, path: Path, value: unknown): unknown => {
  if (path.length === 0) return value
  const [head, ...rest] = path
  const copy = (Array.isArray(doc) ? [...doc] : { ...(isContainer(doc) ? doc : {}) }) as Record<
    string | number,
    unknown
  >
  const next = isContainer(doc) ? doc[head!] : undefined
  Object.defineProperty(copy, head!, {
    value: setAt(next, rest, value),
    enumerable: true,
    writable: true,
    configurable: true
  })
  return copy
}

/**
 * A copy of `doc` without the field at `path`.
 *
 * @example
 * ```ts
 * import { Hostile } from "@rein/core/testing"
 *
 * Hostile.deleteAt({ a: 1, b: 2 }, ["a"]) // { b: 2 }
 * ```
 * @category utils
 * @since 0.1.0
 */
export const deleteAt = (doc: unknown, path: Path): unknown => {
  if (path.length === 0 || !isContainer(doc)) return doc
  const [head, ...rest] = path
  if (rest.length === 0) {
    const { [head!]: _, ...others } = doc
    return others
  }
  return setAt(doc, [head!], deleteAt(doc[head!], rest))
}

/**
 * A copy of a document (objects and arrays of its skeleton, up to 32 levels) whose objects have no
 * prototype, as a caller of the library API may pass. Deeper values are shared.
 *
 * @example
 * ```ts
 * import { Hostile } from "@rein/core/testing"
 *
 * Object.getPrototypeOf(Hostile.withoutPrototypes({ a: {} })) // null
 * ```
 * @category utils
 * @since 0.1.0
 */
export const withoutPrototypes = (doc: unknown, depth = 32): unknown => {
  if (depth === 0 || !isContainer(doc)) return doc
  if (Array.isArray(doc)) return doc.map((v) => withoutPrototypes(v, depth - 1))
  if (Object.getPrototypeOf(doc) !== Object.prototype && Object.getPrototypeOf(doc) !== null) return doc
  const out: Record<string, unknown> = Object.create(null)
  for (const key of Object.keys(doc)) out[key] = withoutPrototypes(doc[key], depth - 1)
  return out
}

/**
 * The path as the decoders print it (`retry.base`, `endpoints.0.prices.inputTokens`).
 *
 * @example
 * ```ts
 * import { Hostile } from "@rein/core/testing"
 *
 * Hostile.printed(["endpoints", 0, "id"]) // "endpoints.0.id"
 * ```
 * @category formatting
 * @since 0.1.0
 */
export const printed = (path: Path): string => path.join(".")

/**
 * Independent oracles of what a field accepts, for picking the hostile values that are bad for it.
 *
 * @example
 * ```ts
 * import { Hostile } from "@rein/core/testing"
 *
 * Hostile.accepts.duration("0.4 ns") // false
 * ```
 * @category predicates
 * @since 0.1.0
 */
export const accepts = {
  /** A positive finite number of milliseconds of at least one nanosecond (no string in `values` is a duration). */
  duration: (v: unknown): boolean => typeof v === "number" && Number.isFinite(v) && Math.round(v * 1e6) >= 1,
  /** A finite duration ≥ 0 (an offset): a moment below a nanosecond is still a moment. */
  offset: (v: unknown): boolean =>
    typeof v === "number" ? Number.isFinite(v) && v >= 0 : v === "0.4 ns" || v === "1e-7 ms",
  nonNegativeNumber: (v: unknown): boolean => typeof v === "number" && Number.isFinite(v) && v >= 0,
  positiveNumber: (v: unknown): boolean => typeof v === "number" && Number.isFinite(v) && v > 0,
  nonNegativeInt: (v: unknown): boolean => Number.isSafeInteger(v) && (v as number) >= 0,
  positiveInt: (v: unknown): boolean => Number.isSafeInteger(v) && (v as number) >= 1,
  fraction: (v: unknown): boolean => typeof v === "number" && v >= 0 && v <= 1,
  boolean: (v: unknown): boolean => typeof v === "boolean",
  string: (v: unknown): boolean => typeof v === "string",
  nonEmptyTrimmed: (v: unknown): boolean => typeof v === "string" && v.length > 0 && v.trim() === v,
  oneOf: (...literals: ReadonlyArray<unknown>) => (v: unknown): boolean => literals.includes(v),
  /** An object without keys: what a struct of optional fields accepts from `values`. */
  emptyObject: (v: unknown): boolean =>
    typeof v === "object" && v !== null && !Array.isArray(v) && Object.keys(v).length === 0,
  /** A record (not an array) whose every own value `item` accepts. */
  recordOf: (item: (v: unknown) => boolean) => (v: unknown): boolean =>
    typeof v === "object" && v !== null && !Array.isArray(v) && Object.values(v).every(item),
  /** An array whose every item `item` accepts (and at least `min` of them). */
  arrayOf: (item: (v: unknown) => boolean, min = 0) => (v: unknown): boolean =>
    Array.isArray(v) && v.length >= min && v.every(item)
}

/**
 * A field of a document under test: where it is, what it accepts, whether it may be left out.
 *
 * @example
 * ```ts
 * import { Hostile } from "@rein/core/testing"
 *
 * const deadline: Hostile.Field = { path: ["deadline"], accepts: Hostile.accepts.duration, required: true }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Field {
  readonly path: Path
  readonly accepts: (v: unknown) => boolean
  readonly required?: boolean | undefined
}

/**
 * A bad document and the path its error must name.
 *
 * @example
 * ```ts
 * import type { Hostile } from "@rein/core/testing"
 *
 * const show = (m: Hostile.Mutation) => `${m.path}: ${m.what}`
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Mutation {
  readonly doc: unknown
  /** The path as printed; the error message must contain it. */
  readonly path: string
  readonly what: "bad value" | "missing" | "unexpected key" | "whole document"
}

/**
 * Bad documents made from a valid one by one change: a field set to a hostile value it does not accept, a
 * required field removed, an unknown key (a prototype name, a huge one) added to a struct, or the whole
 * document replaced by a hostile value that is not one. Half of them have no prototypes (`withoutPrototypes`).
 *
 * @example
 * ```ts
 * import { Hostile } from "@rein/core/testing"
 *
 * const bad = Hostile.mutations({ deadline: 1 }, [{ path: ["deadline"], accepts: Hostile.accepts.duration }], {
 *   structs: [[]],
 *   document: Hostile.accepts.emptyObject
 * })
 * ```
 * @category fixtures
 * @since 0.1.0
 */
export const mutations = (
  base: unknown,
  fields: ReadonlyArray<Field>,
  options: {
    /** Paths of strict structs (unknown keys are errors). */
    readonly structs?: ReadonlyArray<Path> | undefined
    /** What the decoder accepts as a whole document, among `values`. */
    readonly document: (v: unknown) => boolean
  }
): fc.Arbitrary<Mutation> => {
  // One arbitrary per field, built once (a `chain` per run would filter the values again each time).
  const perField = fields.flatMap((field) => {
    const bad = values.filter((v) => !field.accepts(v))
    return bad.length === 0 ? [] : [
      fc.constantFrom(...bad).map((v): Mutation => ({
        doc: setAt(base, field.path, v),
        path: printed(field.path),
        what: "bad value"
      }))
    ]
  })
  const badValue = fc.oneof(...perField)
  const required = fields.filter((f) => f.required === true)
  const structs = options.structs ?? []
  const all: Array<fc.Arbitrary<Mutation>> = [
    badValue,
    badValue,
    badValue,
    value((v) => !options.document(v)).map((v): Mutation => ({ doc: v, path: "", what: "whole document" }))
  ]
  if (required.length > 0) {
    all.push(
      fc.constantFrom(...required).map((f): Mutation => ({
        doc: deleteAt(base, f.path),
        path: printed(f.path),
        what: "missing"
      }))
    )
  }
  if (structs.length > 0) {
    all.push(
      fc.tuple(fc.constantFrom(...structs), fc.constantFrom(...keys)).map(([at, key]): Mutation => ({
        doc: setAt(base, [...at, key], 1),
        // A huge key is printed abbreviated: the message names its parent.
        path: key.length > 40 || key === "" ? printed(at) : printed([...at, key]),
        what: "unexpected key"
      }))
    )
  }
  // Half the documents come without prototypes, as a caller of the library API may build them.
  return fc.tuple(fc.oneof(...all), fc.boolean()).map(([m, bare]) => bare ? { ...m, doc: withoutPrototypes(m.doc) } : m)
}
