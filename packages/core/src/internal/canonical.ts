/**
 * Canonical JSON: object keys sorted, no whitespace, `undefined` fields dropped. Two equal values always
 * encode to the same bytes, which is what replay compares.
 *
 * @internal
 */
export const canonical = (value: unknown): string => {
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) return "null"
    return value === undefined ? "null" : JSON.stringify(value)
  }
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`
  const keys = Object.keys(value).filter((k) => (value as Record<string, unknown>)[k] !== undefined).sort()
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(",")}}`
}

/**
 * The first path at which two JSON values differ (`""` when equal).
 *
 * @internal
 */
export const firstDifference = (a: unknown, b: unknown, path = ""): string | undefined => {
  if (canonical(a) === canonical(b)) return undefined
  if (
    a === null || b === null || typeof a !== "object" || typeof b !== "object" || Array.isArray(a) !== Array.isArray(b)
  ) {
    return path === "" ? "(root)" : path
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const d = firstDifference(a[i], b[i], `${path}[${i}]`)
      if (d !== undefined) return d
    }
    return path
  }
  const ra = a as Record<string, unknown>
  const rb = b as Record<string, unknown>
  for (const k of [...new Set([...Object.keys(ra), ...Object.keys(rb)])].sort()) {
    const d = firstDifference(ra[k], rb[k], path === "" ? k : `${path}.${k}`)
    if (d !== undefined) return d
  }
  return path
}
