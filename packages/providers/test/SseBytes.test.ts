import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Either, FastCheck as fc, Stream } from "effect"
import * as Internal from "../src/internal/http.js"

/** SSE-ish text: lines from a small alphabet (so `retry:` prefixes and near misses are common), any line ending. */
const line = fc.tuple(
  fc.constantFrom("retry:", "retry: 3600000", "retr", "retryx", "data: ", "data: retry:", "", " retry:", "r"),
  fc.stringMatching(/^[a-z0-9 :]{0,6}$/),
  fc.constantFrom("\n", "\r\n", "\r")
).map(([head, tail, end]) => head + tail + end)
const text = fc.array(line, { maxLength: 12 }).map((lines) => lines.join(""))
const cuts = fc.array(fc.integer({ min: 0, max: 200 }), { maxLength: 8 })

/** The bytes of `s` cut at `at` (any positions, sorted and clamped). */
const chunked = (s: string, at: ReadonlyArray<number>): Stream.Stream<Uint8Array> => {
  const bytes = new TextEncoder().encode(s)
  const points = [...new Set(at.map((n) => Math.min(n, bytes.length)))].sort((a, b) => a - b)
  const parts: Array<Uint8Array> = []
  let from = 0
  for (const p of [...points, bytes.length]) {
    parts.push(bytes.subarray(from, p))
    from = p
  }
  return Stream.fromIterable(parts)
}

const collect = <E>(stream: Stream.Stream<Uint8Array, E>) =>
  Effect.map(Stream.runCollect(stream), (chunks) => {
    const all = Chunk.toReadonlyArray(chunks)
    const out = new Uint8Array(all.reduce((n, c) => n + c.length, 0))
    let at = 0
    for (const c of all) {
      out.set(c, at)
      at += c.length
    }
    return new TextDecoder().decode(out)
  })

/** The lines of `s`, each with its ending (`\r\n`, `\r` or `\n`; the last may have none). */
const lines = (s: string): Array<string> => (s.match(/[^\r\n]*(\r\n|\r|\n|$)/g) ?? []).filter((l) => l !== "")

/** The reference: the lines of `s`, those starting with `retry:` removed. */
const withoutRetryLines = (s: string): string => lines(s).filter((l) => !l.startsWith("retry:")).join("")

describe("SSE byte transforms are independent of how the bytes are chunked", () => {
  it.effect.prop(
    "dropSseRetry removes exactly the retry: lines, wherever the chunks are cut",
    [text, cuts],
    ([s, at]) =>
      Effect.map(collect(Internal.dropSseRetry(chunked(s, at))), (out) => {
        expect(out).toBe(withoutRetryLines(s))
      })
  )

  it.effect.prop(
    "boundEvents fails exactly when an event (bytes since the last blank line) exceeds the bound",
    [text, cuts, fc.integer({ min: 1, max: 12 })],
    ([s, at, limit]) =>
      Effect.map(
        Effect.either(collect(Internal.boundEvents(limit, () => "too large" as const)(chunked(s, at)))),
        (result) => {
          let size = 0
          let longest = 0
          for (const l of lines(s)) {
            const content = l.replace(/[\r\n]/g, "")
            size = content === "" ? 0 : size + content.length
            longest = Math.max(longest, size)
          }
          expect(Either.isLeft(result)).toBe(longest > limit)
          if (Either.isRight(result)) expect(result.right).toBe(s)
        }
      )
  )

  it.effect.prop(
    "wholeLines passes the bytes unchanged, each piece but the last ending at a line end",
    [text, cuts],
    ([s, at]) =>
      Effect.map(Stream.runCollect(Internal.wholeLines(chunked(s, at))), (chunks) => {
        const pieces = Chunk.toReadonlyArray(chunks).map((c) => new TextDecoder().decode(c))
        expect(pieces.join("")).toBe(s)
        // A line end: `\n`, or `\r` not followed by `\n` (a `\r` ending the text ends the last piece).
        for (const piece of pieces.slice(0, -1)) expect(piece).toMatch(/(\n|\r)$/)
        expect(pieces.every((p) => !/(\n|\r(?!\n))./.test(p))).toBe(true)
        expect(pieces.slice(0, -1).every((p, i) => !(p.endsWith("\r") && pieces[i + 1]!.startsWith("\n")))).toBe(true)
      })
  )
})
