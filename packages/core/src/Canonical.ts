/**
 * Canonical JSON: the one encoding Rein uses wherever bytes are compared, hashed or signed (journal replay,
 * batch fingerprints, ledger digests). Object keys are sorted by UTF-16 code units, there is no whitespace,
 * and numbers and strings are written as `JSON.stringify` writes them — the scheme of RFC 8785 (JCS). Two
 * equal values always encode to the same bytes, whatever order their keys were written in.
 *
 * Where plain JSON is silently lossy the value is refused instead, with a typed error naming where: `NaN`
 * and `±Infinity` (JSON writes `null`), `undefined` inside an array or as the whole value, `Map` and `Set`
 * (JSON writes `{}`), bigint, symbols, functions and cycles. An object field set to `undefined` counts as
 * absent, as in JSON; an object with a `toJSON` method (a `Date`) is encoded by its result.
 *
 * The encoder walks the value with its own stack, so input nested 100,000 deep encodes (or is refused)
 * without overflowing the call stack.
 *
 * @since 0.1.0
 */
import { Either, Schema } from "effect"

/**
 * A value with no faithful JSON form. `path` says where (`$.items[3].price`), `message` what it is.
 *
 * @example
 * ```ts
 * import { Either } from "effect"
 * import { Canonical } from "@rein/core"
 *
 * const result = Canonical.encode({ price: Number.NaN })
 * if (Either.isLeft(result)) console.error(`${result.left.path}: ${result.left.message}`)
 * // "$.price: Expected a finite number, actual NaN"
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class CanonicalError extends Schema.TaggedError<CanonicalError>()("CanonicalError", {
  path: Schema.String,
  message: Schema.String
}) {}

/** One array or object being written: its children are taken in order, their texts collected. */
interface Frame {
  readonly source: object
  readonly keys: ReadonlyArray<string> | undefined
  readonly length: number
  readonly parts: Array<string>
  /** The next child to take; the child being written is `next - 1`. */
  next: number
}

const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/

const segment = (frame: Frame): string => {
  const i = frame.next - 1
  if (frame.keys === undefined) return `[${i}]`
  const key = frame.keys[i] ?? ""
  return identifier.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`
}

/** Where the child being written sits, computed only when something is refused. */
const pathOf = (stack: ReadonlyArray<Frame>): string => `$${stack.map(segment).join("")}`

/** A leaf's text, a frame to descend into, or the reason the value has no JSON form. */
type Step =
  | { readonly _tag: "Leaf"; readonly text: string }
  | { readonly _tag: "Frame"; readonly frame: Frame }
  | { readonly _tag: "Refused"; readonly message: string }

const leaf = (text: string): Step => ({ _tag: "Leaf", text })
const refused = (message: string): Step => ({ _tag: "Refused", message })

const open = (value: unknown, opened: ReadonlySet<object>, replaced = false): Step => {
  if (value === null) return leaf("null")
  switch (typeof value) {
    case "string":
      return leaf(JSON.stringify(value))
    case "boolean":
      return leaf(value ? "true" : "false")
    case "number":
      return Number.isFinite(value) ? leaf(JSON.stringify(value)) : refused(
        `Expected a finite number, actual ${String(value)}`
      )
    case "bigint":
      return refused("A bigint has no JSON form")
    case "undefined":
      return refused("undefined has no JSON form")
    case "symbol":
    case "function":
      return refused(`A ${typeof value} has no JSON form`)
  }
  const source = value as object
  if (opened.has(source)) return refused("A cycle has no JSON form")
  if (source instanceof Map || source instanceof Set) return refused(`A ${source.constructor.name} has no JSON form`)
  const toJSON = (source as { readonly toJSON?: unknown }).toJSON
  // As JSON.stringify does: the result is written in the value's place, its own `toJSON` not called again.
  if (!replaced && typeof toJSON === "function") return open((toJSON as () => unknown).call(source), opened, true)
  return frameOf(source)
}

const frameOf = (source: object): Step => {
  if (Array.isArray(source)) {
    return { _tag: "Frame", frame: { source, keys: undefined, length: source.length, parts: [], next: 0 } }
  }
  const record = source as Record<string, unknown>
  // An absent optional field and one set to undefined mean the same thing, as in JSON.
  const keys = Object.keys(record).filter((key) => record[key] !== undefined).sort()
  return { _tag: "Frame", frame: { source, keys, length: keys.length, parts: [], next: 0 } }
}

const close = (frame: Frame): string =>
  frame.keys === undefined ? `[${frame.parts.join(",")}]` : `{${frame.parts.join(",")}}`

const childOf = (frame: Frame): unknown => {
  const i = frame.next
  frame.next = i + 1
  return frame.keys === undefined
    ? (frame.source as ReadonlyArray<unknown>)[i]
    : (frame.source as Record<string, unknown>)[frame.keys[i] ?? ""]
}

const collect = (frame: Frame, text: string): void => {
  if (frame.keys === undefined) frame.parts.push(text)
  else frame.parts.push(`${JSON.stringify(frame.keys[frame.next - 1])}:${text}`)
}

/**
 * The canonical JSON text of a value, or where it has no faithful JSON form.
 *
 * @example
 * ```ts
 * import { Canonical } from "@rein/core"
 *
 * Canonical.encode({ b: [1, "x"], a: null })
 * // Right('{"a":null,"b":[1,"x"]}')
 * ```
 *
 * @category encoding
 * @since 0.1.0
 */
export const encode = (value: unknown): Either.Either<string, CanonicalError> => {
  const stack: Array<Frame> = []
  const opened = new Set<object>()
  let step = open(value, opened)
  for (;;) {
    if (step._tag === "Refused") return Either.left(new CanonicalError({ path: pathOf(stack), message: step.message }))
    let text: string
    if (step._tag === "Frame") {
      stack.push(step.frame)
      opened.add(step.frame.source)
      text = ""
    } else {
      text = step.text
      const top = stack[stack.length - 1]
      if (top === undefined) return Either.right(text)
      collect(top, text)
    }
    // Close every finished frame, handing its text to its parent, then take the next child.
    let top = stack[stack.length - 1]
    while (top !== undefined && top.next >= top.length) {
      stack.pop()
      opened.delete(top.source)
      const closed = close(top)
      const parent = stack[stack.length - 1]
      if (parent === undefined) return Either.right(closed)
      collect(parent, closed)
      top = parent
    }
    if (top === undefined) return Either.right(text)
    step = open(childOf(top), opened)
  }
}

/**
 * The canonical JSON text of a value that must have one (a record Rein built from its own Schemas); throws
 * the `CanonicalError` otherwise, which inside an Effect is a defect.
 *
 * @example
 * ```ts
 * import { Canonical } from "@rein/core"
 *
 * Canonical.unsafeEncode({ b: 1, a: [true] }) // '{"a":[true],"b":1}'
 * ```
 *
 * @category encoding
 * @since 0.1.0
 */
export const unsafeEncode = (value: unknown): string => Either.getOrThrowWith(encode(value), (error) => error)

/** A plain object to compare field by field (one with `toJSON`, a `Date`, is compared by its text). */
const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value) &&
  typeof (value as { readonly toJSON?: unknown }).toJSON !== "function"

/** Two leaves (or mismatched shapes) are the same when they encode to the same text. */
const sameLeaf = (a: unknown, b: unknown): boolean => {
  if (Object.is(a, b)) return true
  const ea = encode(a)
  const eb = encode(b)
  return Either.isRight(ea) && Either.isRight(eb) && ea.right === eb.right
}

/**
 * The first path (depth first, keys in canonical order) at which two JSON values differ, `"(root)"` when
 * the values themselves differ in kind, `undefined` when they encode alike. An absent field and one set to
 * `undefined` are alike. Walks with its own stack, as `encode` does.
 *
 * @example
 * ```ts
 * import { Canonical } from "@rein/core"
 *
 * Canonical.firstDifference({ a: 1, b: [1, 2] }, { a: 1, b: [1, 3] }) // "b[1]"
 * ```
 *
 * @category comparison
 * @since 0.1.0
 */
export const firstDifference = (a: unknown, b: unknown): string | undefined => {
  const pending: Array<readonly [unknown, unknown, string]> = [[a, b, ""]]
  for (let item = pending.pop(); item !== undefined; item = pending.pop()) {
    const [x, y, path] = item
    if (x === y) continue
    const children: Array<readonly [unknown, unknown, string]> = []
    if (Array.isArray(x) && Array.isArray(y)) {
      for (let i = 0; i < Math.max(x.length, y.length); i++) children.push([x[i], y[i], `${path}[${i}]`])
    } else if (isRecord(x) && isRecord(y)) {
      for (const k of [...new Set([...Object.keys(x), ...Object.keys(y)])].sort()) {
        children.push([x[k], y[k], path === "" ? k : `${path}.${k}`])
      }
    } else if (!sameLeaf(x, y)) {
      return path === "" ? "(root)" : path
    }
    for (const child of children.reverse()) pending.push(child)
  }
  return undefined
}
