/**
 * Canonical JSON: object keys sorted, no whitespace, only JSON values. The same value always gives the same
 * bytes, so its digest can be signed by one party and recomputed by another.
 *
 * @internal
 */
export const canonicalJson = (value: unknown): string => {
  if (value === null) return "null"
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false"
    case "number":
      if (!Number.isFinite(value)) throw new TypeError("canonical JSON: non-finite number")
      return JSON.stringify(value)
    case "string":
      return JSON.stringify(value)
    case "object": {
      if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`
      const record = value as Record<string, unknown>
      const keys = Object.keys(record).filter((key) => record[key] !== undefined).sort()
      return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(",")}}`
    }
    default:
      throw new TypeError(`canonical JSON: unsupported ${typeof value}`)
  }
}
