import { describe, expect, it } from "@effect/vitest"
import * as Kept from "../src/internal/kept.js"
import { record } from "./artifact-helpers.js"

// A key is its 64-bit hash: two keys that agree in one 32-bit half only are still two keys, each with its own
// slot (one slot for both would count one reusable record where there are two, and run the older key's item
// again). The pairs were found by hashing random ids under the input "in"; the test checks they still agree
// in exactly one half, so that it cannot pass vacuously after a change of the hash.

const halves = (itemId: string): [number, number] => {
  const hashes = new Int32Array(2)
  Kept.hashKey(itemId, "in", hashes)
  return [hashes[0]!, hashes[1]!]
}

const pairs = {
  "the first half": ["ybydtt7f", "45ygkc60"],
  "the second half": ["gaj8e16h", "v28qm0oa"]
} as const

describe("the kept records' table: keys that share one half of their hash", () => {
  for (const [half, [one, other]] of Object.entries(pairs)) {
    it(`two keys with ${half} the same have a slot each, found again, each holding its own record`, () => {
      const [a, b] = [halves(one), halves(other)]
      const shared = half === "the first half" ? 0 : 1
      expect(a[shared]).toBe(b[shared])
      expect(a[1 - shared]).not.toBe(b[1 - shared])
      const kept = Kept.make()
      // Other keys around them, so that the two also meet in a probe chain after the table grows.
      for (let i = 0; i < 700; i++) kept.slotOf(`filler-${i}`, "in")
      const first = kept.slotOf(one, "in")
      const second = kept.slotOf(other, "in")
      expect(second).not.toBe(first)
      expect(kept.size()).toBe(702)
      expect([kept.find(one, "in"), kept.find(other, "in")]).toEqual([first, second])
      kept.put(first, record(one), undefined)
      kept.put(second, record(other), undefined)
      expect(kept.at(kept.find(one, "in"))).toEqual(record(one))
      expect(kept.at(kept.find(other, "in"))).toEqual(record(other))
      // Asked in the other order, in a fresh table: the same.
      const fresh = Kept.make()
      expect([fresh.slotOf(other, "in"), fresh.slotOf(one, "in"), fresh.size()]).toEqual([0, 1, 2])
    })
  }
})

// Keys that agree in the second half and have the same home place in the first table (found by hashing the ids
// item-0, item-1, ... under "in": a pair with the same 32-bit second half is expected in about 80,000 ids, one
// whose first halves also agree in their low 10 bits in about 2.7 million). The second key's probe meets the first
// key at once: a probe that compared the second half alone would take it for the first key.
describe("the kept records' table: keys that share the second half and their home place", () => {
  it("two such keys have a slot each, in either order, each found again holding its own record", () => {
    const [one, other] = ["item-2279882", "item-2667801"]
    const [a, b] = [halves(one), halves(other)]
    expect(a[1]).toBe(b[1])
    expect(a[0]).not.toBe(b[0])
    expect(a[0] & 1023).toBe(b[0] & 1023)
    for (const [older, newer] of [[one, other], [other, one]] as const) {
      const kept = Kept.make()
      expect([kept.slotOf(older, "in"), kept.slotOf(newer, "in"), kept.size()]).toEqual([0, 1, 2])
      expect([kept.find(older, "in"), kept.find(newer, "in")]).toEqual([0, 1])
      kept.put(0, record(older), undefined)
      kept.put(1, record(newer), undefined)
      expect([kept.at(kept.find(older, "in")), kept.at(kept.find(newer, "in"))]).toEqual([record(older), record(newer)])
    }
  })
})

// The table starts with 1,024 places; the keys whose home is one of the last two are found again, before and
// after the table grows (a table whose arrays of hashes were shorter than its places would lose them).
describe("the kept records' table: keys at the last places of the first table", () => {
  it("keys whose home is place 1022 or 1023 are found again, before and after the table grows", () => {
    const ends = ["item-86", "item-763"]
    expect(ends.map((id) => halves(id)[0] & 1023)).toEqual([1022, 1023])
    const kept = Kept.make()
    const slots = ends.map((id) => kept.slotOf(id, "in"))
    expect(slots).toEqual([0, 1])
    expect(ends.map((id) => [kept.slotOf(id, "in"), kept.find(id, "in")])).toEqual([[0, 0], [1, 1]])
    // Past half of 1,024 places: the table grows and every key is placed again.
    for (let i = 0; i < 1_000; i++) kept.slotOf(`filler-${i}`, "in")
    expect(ends.map((id) => kept.find(id, "in"))).toEqual([0, 1])
    expect(ends.map((id) => kept.slotOf(id, "in"))).toEqual([0, 1])
    expect(kept.size()).toBe(1_002)
  })
})
