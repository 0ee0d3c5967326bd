import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as Kept from "../src/internal/kept.js"
import { record } from "./artifact-helpers.js"

// The kept records of a resume: one slot per (item id, input fingerprint), found again by the pair, through
// the table's growth.

describe("the kept records' table", () => {
  it.prop(
    "a key's slot is found again, distinct keys have distinct slots, and the size counts the keys",
    [fc.array(fc.tuple(fc.string({ maxLength: 6 }), fc.constantFrom("a", "b", "ab", "")), { maxLength: 3_000 })],
    ([keys]) => {
      const kept = Kept.make()
      const model = new Map<string, number>()
      for (const [id, input] of keys) {
        const slot = kept.slotOf(id, input)
        const key = JSON.stringify([id, input])
        expect(slot).toBe(model.get(key) ?? model.size)
        model.set(key, slot)
      }
      expect(kept.size()).toBe(model.size)
      for (const [key, slot] of model) {
        const [id, input] = JSON.parse(key) as [string, string]
        expect(kept.find(id, input)).toBe(slot)
      }
      expect(kept.find("never added", "x")).toBe(-1)
    },
    { fastCheck: { numRuns: 30, seed: 7 } }
  )

  it("the pair is unambiguous: an item id's end and an input's start do not run together", () => {
    const kept = Kept.make()
    expect(kept.slotOf("ab", "c")).toBe(0)
    expect(kept.slotOf("a", "bc")).toBe(1)
    expect(kept.find("abc", "")).toBe(-1)
  })

  it("a slot holds a position (its digest read when it is put) or, without one, the record", () => {
    const kept = Kept.make()
    const slots = Array.from({ length: 5_000 }, (_, i) => kept.slotOf(`item-${i}`, "in"))
    let reads = 0
    const at = {
      offset: 2 ** 40,
      length: 17,
      get digest() {
        reads += 1
        return -5
      }
    }
    kept.put(slots[4_321]!, record("item-4321"), at)
    kept.put(slots[7]!, record("item-7"), undefined)
    kept.put(slots[8]!, record("item-8"), { offset: 3, length: 4 })
    expect(reads).toBe(1)
    expect(kept.at(slots[4_321]!)).toEqual({ offset: 2 ** 40, length: 17, digest: -5, exact: false })
    expect(kept.at(slots[7]!)).toEqual(record("item-7"))
    expect(kept.at(slots[8]!)).toEqual({ offset: 3, length: 4, digest: undefined, exact: false })
    kept.put(slots[7]!, record("item-7"), { offset: 9, length: 1, digest: 0, exact: true })
    expect(kept.at(slots[7]!)).toEqual({ offset: 9, length: 1, digest: 0, exact: true })
    kept.put(slots[7]!, record("item-7"), { offset: 9, length: 1, digest: 0, exact: false })
    expect(kept.at(slots[7]!)).toEqual({ offset: 9, length: 1, digest: 0, exact: false })
  })
})
