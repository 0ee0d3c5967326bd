// How many items a worker leases ahead of its engine (internal/leaseAhead): the engine's recent pace times
// AHEAD_MILLIS, between max(1, ⌈batch/4⌉) and the batch.
import { describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import * as LeaseAhead from "../src/internal/leaseAhead.js"

const Groups = fc.array(fc.record({ gap: fc.integer({ min: 0, max: 5_000 }), size: fc.integer({ min: 1, max: 64 }) }), {
  minLength: 1,
  maxLength: 8
})

// The groups handed over at increasing times from 1,000, as the source records them.
const historyOf = (groups: ReadonlyArray<{ readonly gap: number; readonly size: number }>) => {
  const handed: Array<LeaseAhead.Handed> = []
  let at = 1_000
  for (const g of groups) {
    at += g.gap
    LeaseAhead.record(handed, { at, size: g.size })
  }
  return { handed, last: at }
}

describe("the lease ahead of a worker", () => {
  it.effect.prop(
    "is between max(1, ⌈batch/4⌉) and the batch, and is the items of the last four groups over their time × 250 ms",
    { batch: fc.integer({ min: 1, max: 256 }), groups: Groups, wait: fc.integer({ min: 0, max: 10_000 }) },
    ({ batch, groups, wait }) =>
      Effect.sync(() => {
        const { handed, last } = historyOf(groups)
        expect(handed.length).toBe(Math.min(4, groups.length))
        const now = last + wait
        const size = LeaseAhead.sizeOf(batch, handed, now)
        const minimum = Math.max(1, Math.ceil(batch / 4))
        expect(size).toBeGreaterThanOrEqual(minimum)
        expect(size).toBeLessThanOrEqual(batch)
        const elapsed = now - handed[0]!.at
        const items = handed.reduce((n, h) => n + h.size, 0)
        const expected = elapsed <= 0
          ? minimum
          : Math.max(minimum, Math.min(batch, Math.ceil((items * LeaseAhead.AHEAD_MILLIS) / elapsed)))
        expect(size).toBe(expected)
      }),
    { fastCheck: { numRuns: 300, seed: 20261202 } }
  )

  it.effect.prop(
    "a worker that takes its items more slowly never leases more ahead (once its clock moved)",
    {
      batch: fc.integer({ min: 1, max: 256 }),
      groups: Groups,
      a: fc.integer({ min: 1, max: 20_000 }),
      b: fc.integer({ min: 1, max: 20_000 })
    },
    ({ batch, groups, a, b }) =>
      Effect.sync(() => {
        const { handed, last } = historyOf(groups)
        const [sooner, later] = a <= b ? [a, b] : [b, a]
        expect(LeaseAhead.sizeOf(batch, handed, last + later)).toBeLessThanOrEqual(
          LeaseAhead.sizeOf(batch, handed, last + sooner)
        )
      }),
    { fastCheck: { numRuns: 300, seed: 20261202 } }
  )

  it("without a pace (no group taken yet, or a clock that did not move) leases the minimum", () => {
    expect(LeaseAhead.sizeOf(16, [], 5_000)).toBe(4)
    expect(LeaseAhead.sizeOf(16, [{ at: 5_000, size: 16 }], 5_000)).toBe(4)
    expect(LeaseAhead.sizeOf(3, [], 0)).toBe(1)
  })

  it("bench 12's worker (16 items of 200 ms) leases a whole batch; a slow one (4 of 2 s) one item", () => {
    expect(LeaseAhead.sizeOf(16, [{ at: 0, size: 16 }], 200)).toBe(16)
    expect(LeaseAhead.sizeOf(4, [{ at: 0, size: 4 }], 2_000)).toBe(1)
  })
})
