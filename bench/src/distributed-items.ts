/** The items of benchmark 12, the same in the parent (which submits them) and in its children. */
import { Identity } from "@rein/batch"

export const identity = Identity.make({
  provider: "fake",
  model: "a",
  promptVersion: "bench",
  parserVersion: "bench",
  applicationVersion: "bench"
})
export const itemsOf = (n: number) => Array.from({ length: n }, (_, i) => `Summarise document ${i}`)
export const request = (prompt: string) => ({ prompt, inputTokens: 100, maxOutputTokens: 50 })
export const itemId = (_: string, index: number) => `item-${index}`
