import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as Jsonl from "../src/internal/jsonl.js"

// A kept record's line is reused only if its bytes still hash to the digest taken at open: the digest must
// change whenever one byte of the line does (each step of a lane is a bijection), wherever the byte is (in an
// 8-byte pair's first or second word, or in the tail after the last whole pair), and must not depend on where
// the line sits in the buffer it is a view of (the scanner's chunk at open, the reader's window later).

describe("a record line's digest", () => {
  it.prop(
    "changes when any one byte changes, at any place and length (property)",
    [
      fc.uint8Array({ minLength: 1, maxLength: 80 }).chain((bytes) =>
        fc.tuple(fc.constant(bytes), fc.nat({ max: bytes.length - 1 }), fc.integer({ min: 1, max: 255 }))
      )
    ],
    ([[bytes, at, delta]]) => {
      const changed = Uint8Array.from(bytes)
      changed[at] = (changed[at]! + delta) & 0xff
      expect(Jsonl.digest(changed)).not.toBe(Jsonl.digest(bytes))
    },
    { fastCheck: { numRuns: 2_000, seed: 14 } }
  )

  it.prop(
    "is the same for a view of a larger buffer at any offset as for a copy of its bytes (property)",
    [fc.uint8Array({ maxLength: 80 }), fc.uint8Array({ maxLength: 11 }), fc.uint8Array({ maxLength: 5 })],
    ([bytes, before, after]) => {
      const buffer = Uint8Array.from([...before, ...bytes, ...after])
      const view = buffer.subarray(before.length, before.length + bytes.length)
      expect(Jsonl.digest(view)).toBe(Jsonl.digest(Uint8Array.from(bytes)))
    },
    { fastCheck: { numRuns: 500, seed: 15 } }
  )

  it("lines of every length up to 17 bytes, all zeros but one byte, have distinct digests per place", () => {
    for (let length = 1; length <= 17; length++) {
      const seen = new Set<number>([Jsonl.digest(new Uint8Array(length))])
      for (let at = 0; at < length; at++) {
        const one = new Uint8Array(length)
        one[at] = 1
        seen.add(Jsonl.digest(one))
      }
      expect(seen.size).toBe(length + 1)
    }
  })
})
