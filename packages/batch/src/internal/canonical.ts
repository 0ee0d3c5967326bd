/**
 * Canonical JSON: the same value always serialises to the same bytes, whatever the order its keys were
 * written in. Object keys are sorted by UTF-16 code units and numbers and strings are written as
 * `JSON.stringify` writes them — the scheme of RFC 8785 (JCS).
 *
 * Where plain JSON is silently lossy it is refused here instead, because two different inputs must not
 * share a fingerprint: `NaN` and `±Infinity` (JSON writes `null`), `undefined` inside an array (JSON writes
 * `null`), `Map` and `Set` (JSON writes `{}`), bigint, symbols, functions and cycles.
 *
 * @internal
 */
import { Either } from "effect"

/** Where in the value the problem sits (`$.items[3].price`) and what it is. @internal */
export interface CanonicalProblem {
  readonly path: string
  readonly message: string
}

const keyPath = (path: string, key: string) =>
  /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`

const compareUtf16 = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/** @internal */
export const canonicalJson = (value: unknown): Either.Either<string, CanonicalProblem> => {
  const stack = new Set<object>()
  let problem: CanonicalProblem | undefined
  const fail = (path: string, message: string): undefined => {
    problem ??= { path, message }
    return undefined
  }
  const go = (v: unknown, path: string): string | undefined => {
    if (v === null) return "null"
    switch (typeof v) {
      case "string":
        return JSON.stringify(v)
      case "boolean":
        return v ? "true" : "false"
      case "number":
        return Number.isFinite(v) ? JSON.stringify(v) : fail(path, `Expected a finite number, actual ${String(v)}`)
      case "bigint":
        return fail(path, "A bigint has no JSON form")
      case "undefined":
        return fail(path, "undefined has no JSON form")
      case "symbol":
      case "function":
        return fail(path, `A ${typeof v} has no JSON form`)
    }
    const obj = v as object
    if (stack.has(obj)) return fail(path, "A cycle has no JSON form")
    if (obj instanceof Map || obj instanceof Set) return fail(path, `A ${obj.constructor.name} has no JSON form`)
    const toJSON = (obj as { readonly toJSON?: unknown }).toJSON
    if (typeof toJSON === "function") {
      stack.add(obj)
      const out = go((toJSON as () => unknown).call(obj), path)
      stack.delete(obj)
      return out
    }
    stack.add(obj)
    let out: string | undefined
    if (Array.isArray(obj)) {
      const parts: Array<string> = []
      for (let i = 0; i < obj.length; i++) {
        const part = go(obj[i], `${path}[${i}]`)
        if (part === undefined) break
        parts.push(part)
      }
      out = problem === undefined ? `[${parts.join(",")}]` : undefined
    } else {
      const record = obj as Record<string, unknown>
      const parts: Array<string> = []
      for (const key of Object.keys(record).sort(compareUtf16)) {
        const field = record[key]
        // An absent optional field and one set to undefined mean the same thing, as in JSON.
        if (field === undefined) continue
        const part = go(field, keyPath(path, key))
        if (part === undefined) break
        parts.push(`${JSON.stringify(key)}:${part}`)
      }
      out = problem === undefined ? `{${parts.join(",")}}` : undefined
    }
    stack.delete(obj)
    return out
  }
  const out = go(value, "$")
  return out === undefined || problem !== undefined
    ? Either.left(problem ?? { path: "$", message: "No JSON form" })
    : Either.right(out)
}
