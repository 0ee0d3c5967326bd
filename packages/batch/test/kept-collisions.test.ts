import { describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck as fc, Option } from "effect"
import { vi } from "vitest"
import type { ArtifactStore } from "../src/index.js"
import { Resume } from "../src/index.js"
import { identityFingerprint, inputOf, nodeStore, record, tempFile } from "./artifact-helpers.js"
import { identity } from "./fixtures/artifact-identity.js"

// Every key hashes alike: each (item id, input) pair collides with every other in `Kept`'s 64-bit table,
// the worst case of what its header calls one chance in 10^7. A collision may make an item run again; it
// must never make another key's record be reused.
vi.mock("../src/internal/kept.js", async (importOriginal) => {
  const kept = await importOriginal<typeof import("../src/internal/kept.js")>()
  // (`make` hashes through its module's own `hashKey`: every key is handed to it as the same one.)
  return {
    ...kept,
    make: () => {
      const table = kept.make()
      return { ...table, slotOf: () => table.slotOf("x", "y"), find: () => table.find("x", "y") }
    }
  }
})

// Records of a few items under a few inputs, successes and failures, in any order.
const records = fc.array(
  fc.record({ item: fc.constantFrom("a", "b", "c"), input: fc.nat({ max: 2 }), fail: fc.boolean() }),
  { maxLength: 12 }
).map((specs) =>
  specs.map(({ fail, input, item }, index) =>
    record(item, {
      index,
      input: { id: item, v: input },
      ...(fail ? { outcome: "failure", category: "rate_limited", result: undefined } : {})
    })
  )
)
const keys = ["a", "b", "c"].flatMap((item) => [0, 1, 2].map((v) => [item, inputOf(item, { id: item, v })] as const))

// What a lookup may give: none, or the newest record of that very key that the policy reuses.
const allowed = (all: ReadonlyArray<ArtifactStore.ItemRecord>, policy: Resume.Policy, itemId: string, input: string) =>
  all.filter((r) =>
    r.itemId === itemId && r.inputFingerprint === input && r.reusable &&
    (policy === "reuse-all" || r.outcome === "success")
  ).at(-1)

describe("Kept: colliding keys", () => {
  it("an index never gives one key's record for another", () => {
    fc.assert(
      fc.property(records, fc.constantFrom<Resume.Policy>("reuse-successes", "reuse-all"), (all, policy) => {
        const index = Resume.index(all, { policy, identityFingerprint })
        expect(index.size).toBeLessThanOrEqual(1) // (the mock is in force: every key shares one slot)
        for (const [itemId, input] of keys) {
          const found = index.lookup(itemId, input)
          if (Option.isSome(found)) expect(found.value).toEqual(allowed(all, policy, itemId, input))
        }
        // Every key collides: one slot, holding the newest record the policy reuses.
        const newest = all.filter((r) => r.reusable && (policy === "reuse-all" || r.outcome === "success")).at(-1)
        if (newest !== undefined) {
          expect(index.lookup(newest.itemId, newest.inputFingerprint)).toEqual(Option.some(newest))
        }
      }),
      { numRuns: 300, seed: 47 }
    )
  })

  it.effect.prop(
    "a resumed session (positions, records read back) never gives one key's record for another",
    [records, fc.constantFrom<Resume.Policy>("reuse-successes", "reuse-all")],
    ([all, policy]) =>
      Effect.scoped(Effect.gen(function*() {
        const path = yield* tempFile
        yield* Effect.scoped(Effect.gen(function*() {
          const session = yield* Resume.open({ identity, policy: "none" })
          for (const r of all) yield* session.append(r)
        })).pipe(Effect.provide(nodeStore({ path })))
        yield* Effect.scoped(Effect.gen(function*() {
          const session = yield* Resume.open({ identity, policy })
          for (const [itemId, input] of keys) {
            const found = yield* session.lookup(itemId, input)
            if (Option.isSome(found)) expect(found.value).toEqual(allowed(all, policy, itemId, input))
          }
        })).pipe(Effect.provide(nodeStore({ path })))
      })),
    { fastCheck: { numRuns: 40, seed: 53 } }
  )
})
