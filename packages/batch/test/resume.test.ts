import { describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck as fc, Layer, Option } from "effect"
import { truncateSync, writeFileSync } from "node:fs"
import { ArtifactStore, Fingerprint, Resume } from "../src/index.js"
import { bytes, identityFingerprint, inputOf, nodeStore, record, tempFile } from "./artifact-helpers.js"
import { identity, otherPrompt } from "./fixtures/artifact-identity.js"
import type { Item } from "./fixtures/artifact-run.js"
import { runItems, scriptedProvider } from "./fixtures/artifact-run.js"

const lookup = (records: ReadonlyArray<ArtifactStore.ItemRecord>, policy: Resume.Policy, itemId: string) =>
  Resume.index(records, { policy, identityFingerprint }).lookup(itemId, inputOf(itemId))

const filtered = record("f", {
  outcome: "failure",
  category: "content_filtered",
  usage: "unknown",
  cost: "unknown",
  result: undefined
})
const audits = ["batch_deadline_exceeded", "batch_aborted", "batch_budget_exceeded", "refused", "artifact_error"].map((
  category
) => record(`audit-${category}`, { outcome: "failure", category, usage: "unknown", cost: 0, attempts: 0 }))

describe("Resume: records", () => {
  it("whether a record may be reused is decided when it is made", () => {
    expect(record("s").reusable).toBe(true)
    expect(filtered.reusable).toBe(true)
    for (const a of audits) expect(a.reusable).toBe(false)
    expect(record("x", { reusable: false }).reusable).toBe(false)
    // `true` cannot make an audit record reusable.
    expect(Resume.makeRecord({ ...audits[0]!, reusable: true }).reusable).toBe(false)
  })
})

describe("Resume: policies", () => {
  const records = [record("s"), filtered, ...audits]

  it("none reuses nothing (checkpoint only)", () => {
    for (const r of records) expect(lookup(records, "none", r.itemId)).toEqual(Option.none())
  })

  it("reuse-successes gives back successes only", () => {
    expect(lookup(records, "reuse-successes", "s")).toEqual(Option.some(record("s")))
    expect(lookup(records, "reuse-successes", "f")).toEqual(Option.none())
    for (const a of audits) expect(lookup(records, "reuse-successes", a.itemId)).toEqual(Option.none())
  })

  it("reuse-all gives back reusable failures too, never guardrail audit records or configuration failures", () => {
    expect(lookup(records, "reuse-all", "s")).toEqual(Option.some(record("s")))
    expect(lookup(records, "reuse-all", "f")).toEqual(Option.some(filtered))
    for (const a of audits) expect(lookup(records, "reuse-all", a.itemId)).toEqual(Option.none())
  })

  it("a match needs the item id, the input fingerprint and the identity fingerprint", () => {
    const index = Resume.index([record("a")], { policy: "reuse-all", identityFingerprint })
    expect(Option.isSome(index.lookup("a", inputOf("a")))).toBe(true)
    expect(Option.isNone(index.lookup("b", inputOf("a")))).toBe(true)
    expect(Option.isNone(index.lookup("a", inputOf("a", { id: "a", changed: true })))).toBe(true)
    const other = Resume.index([record("a")], {
      policy: "reuse-all",
      identityFingerprint: Fingerprint.identity(otherPrompt)
    })
    expect(Option.isNone(other.lookup("a", inputOf("a")))).toBe(true)
  })

  it("the newest matching record wins; audit records never hide an older answer", () => {
    const older = record("a", { result: "first" })
    const newer = record("a", { result: "second" })
    const aborted = record("a", { outcome: "failure", category: "batch_aborted", result: undefined })
    expect(lookup([older, newer], "reuse-successes", "a")).toEqual(Option.some(newer))
    expect(lookup([older, aborted], "reuse-successes", "a")).toEqual(Option.some(older))
    const failedLater = record("a", { outcome: "failure", category: "content_filtered", result: undefined })
    expect(lookup([older, failedLater], "reuse-all", "a")).toEqual(Option.some(failedLater))
    expect(lookup([older, failedLater], "reuse-successes", "a")).toEqual(Option.some(older))
  })
})

const items = (n: number, fail: (i: number) => boolean = () => false): Array<Item> =>
  Array.from({ length: n }, (_, i) => ({ id: `item-${i}`, text: `prompt ${i}${fail(i) ? " FAIL" : ""}` }))

/** Runs the minimal checkpointed run on a file, returning what it did and which items called the provider. */
const run = (
  path: string,
  list: ReadonlyArray<Item>,
  options: { readonly policy: Resume.Policy; readonly identity?: typeof identity; readonly concurrency?: number }
) =>
  Effect.gen(function*() {
    const calls: Array<string> = []
    const report = yield* Effect.scoped(
      runItems(list, {
        identity: options.identity ?? identity,
        policy: options.policy,
        concurrency: options.concurrency ?? 4
      })
    ).pipe(Effect.provide(Layer.merge(nodeStore({ path }), scriptedProvider({ calls }))))
    return { ...report, calls: [...calls].sort() }
  })

const read = (path: string) =>
  Effect.flatMap(ArtifactStore.ArtifactStore, (s) => s.read).pipe(Effect.provide(nodeStore({ path })))

const sorted = (xs: ReadonlyArray<string>) => [...xs].sort()

describe("Resume: a checkpointed run", () => {
  it.scoped("resume makes no calls when everything succeeded, and appends nothing", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const list = items(20)
      const first = yield* run(path, list, { policy: "reuse-successes" })
      expect(first.calls).toHaveLength(20)
      const before = bytes(path)
      for (const policy of ["reuse-successes", "reuse-all"] as const) {
        const again = yield* run(path, list, { policy })
        expect(again.calls).toEqual([])
        expect(again.reused).toHaveLength(20)
        expect(bytes(path)).toEqual(before)
      }
    }))

  it.scoped("none runs every item again and records it again (checkpoint only)", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const list = items(5)
      yield* run(path, list, { policy: "none" })
      const again = yield* run(path, list, { policy: "none" })
      expect(again.calls).toHaveLength(5)
      expect((yield* read(path)).records).toHaveLength(10)
    }))

  it.scoped("reuse-successes runs the failures again; reuse-all gives back the reusable ones", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const list = items(10, (i) => i % 3 === 0) // items 0, 3, 6, 9 are refused by the provider
      yield* run(path, list, { policy: "reuse-successes" })
      const successes = yield* run(path, list, { policy: "reuse-successes" })
      expect(successes.calls).toEqual(["item-0", "item-3", "item-6", "item-9"])
      const all = yield* run(path, list, { policy: "reuse-all" })
      expect(all.calls).toEqual([])
    }))

  it.scoped("a changed identity forces every item to run again; a changed input only that item", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const list = items(6)
      yield* run(path, list, { policy: "reuse-successes" })
      const newPrompt = yield* run(path, list, { policy: "reuse-successes", identity: otherPrompt })
      expect(newPrompt.calls).toHaveLength(6)
      const changed = list.map((it, i) => i === 2 ? { ...it, text: `${it.text} (edited)` } : it)
      const one = yield* run(path, changed, { policy: "reuse-successes" })
      expect(one.calls).toEqual(["item-2"])
      // Both identities' records are now in the file; each run reuses only its own.
      expect((yield* run(path, list, { policy: "reuse-successes", identity: otherPrompt })).calls).toEqual([])
    }))

  it.scoped("guardrail audit records are never reused: those items run again", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const list = items(3)
      yield* Effect.scoped(Effect.gen(function*() {
        const session = yield* Resume.open({ identity, policy: "none" })
        for (const [i, category] of ["batch_aborted", "batch_deadline_exceeded", "batch_budget_exceeded"].entries()) {
          yield* session.append(Resume.makeRecord({
            itemId: `item-${i}`,
            index: i,
            promptFingerprint: Fingerprint.prompt(list[i]!.text),
            inputFingerprint: inputOf(`item-${i}`, list[i]),
            identityFingerprint,
            outcome: "failure",
            category,
            usage: "unknown",
            cost: 0,
            attempts: 0,
            durationMillis: 0
          }))
        }
      })).pipe(Effect.provide(nodeStore({ path })))
      expect((yield* run(path, list, { policy: "reuse-all" })).calls).toEqual(["item-0", "item-1", "item-2"])
    }))

  it.effect.prop(
    "for random interleavings of completions and a cut at a random byte, resume loses no completed item and duplicates none",
    [
      fc.array(fc.record({ fail: fc.boolean(), yields: fc.nat({ max: 20 }) }), { minLength: 1, maxLength: 25 }),
      fc.double({ min: 0, max: 1, noNaN: true }),
      fc.constantFrom<Resume.Policy>("reuse-successes", "reuse-all")
    ],
    ([spec, cutAt, policy]) =>
      Effect.scoped(Effect.gen(function*() {
        const path = yield* tempFile
        // The first run's outcomes come from `spec`; in the resumed run the provider answers every item.
        const list = spec.map((_, i) => ({ id: `item-${i}`, text: `prompt ${i}` }))
        // The first run: items complete in an order decided by how often each fiber yields first.
        yield* Effect.scoped(Effect.gen(function*() {
          const session = yield* Resume.open({ identity, policy: "none" })
          yield* Effect.forEach(list, (item, i) =>
            Effect.gen(function*() {
              for (let k = 0; k < spec[i]!.yields; k++) yield* Effect.yieldNow()
              yield* session.append(Resume.makeRecord({
                itemId: item.id,
                index: i,
                promptFingerprint: Fingerprint.prompt(item.text),
                inputFingerprint: inputOf(item.id, item),
                identityFingerprint,
                outcome: spec[i]!.fail ? "failure" : "success",
                category: spec[i]!.fail ? "content_filtered" : "ok",
                usage: "unknown",
                cost: "unknown",
                attempts: 1,
                durationMillis: 0
              }))
            }), { concurrency: "unbounded", discard: true })
        })).pipe(Effect.provide(nodeStore({ path })))
        // The crash: the file is cut at a random byte.
        const full = bytes(path)
        const cut = Math.floor(cutAt * full.length)
        truncateSync(path, cut)
        // (A negative fromIndex would count from the end: a cut at 0 keeps nothing.)
        const kept = full.subarray(0, cut === 0 ? 0 : full.lastIndexOf(0x0a, cut - 1) + 1)
        const survivors = kept.length === 0 ?
          [] :
          kept.toString("utf8").split("\n").slice(1, -1).map((l) => JSON.parse(l) as ArtifactStore.ItemRecord)
        const reusable = new Set(
          survivors.filter((r) => policy === "reuse-all" || r.outcome === "success").map((r) => r.itemId)
        )

        // The resumed run calls the provider exactly for the items without a reusable record.
        const resumed = yield* run(path, list, { policy })
        expect(resumed.calls).toEqual(sorted(list.map((i) => i.id).filter((id) => !reusable.has(id))))
        // Nothing completed was lost: the surviving prefix is intact, and every item now has exactly one
        // record that the policy would reuse.
        if (kept.length > 0) expect(bytes(path).subarray(0, kept.length)).toEqual(kept)
        const after = (yield* read(path)).records
        for (const item of list) {
          const accepted = after.filter((r) =>
            r.itemId === item.id && r.reusable && (policy === "reuse-all" || r.outcome === "success")
          )
          expect(accepted).toHaveLength(1)
        }
        // And a second resume has nothing left to do.
        expect((yield* run(path, list, { policy })).calls).toEqual([])
      })),
    { fastCheck: { numRuns: 60 } }
  )
})

describe("Resume.open", () => {
  it.scoped("the first run creates the artifact; a later one resumes it and indexes what it may reuse", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const first = yield* Effect.scoped(Effect.gen(function*() {
        const session = yield* Resume.open({ identity, policy: "reuse-successes" })
        yield* session.append(record("a"))
        return session.index.size
      })).pipe(Effect.provide(nodeStore({ path })))
      expect(first).toBe(0)
      writeFileSync(path, Buffer.concat([bytes(path), Buffer.from("{\"kind\":\"item\"")]))
      const second = yield* Effect.scoped(Effect.map(
        Resume.open({ identity, policy: "reuse-successes" }),
        (session) => ({ size: session.index.size, truncated: session.opened.truncatedBytes })
      )).pipe(Effect.provide(nodeStore({ path })))
      expect(second).toEqual({ size: 1, truncated: 14 })
      const inspected = yield* Resume.inspect({ identity: otherPrompt, policy: "reuse-all" }).pipe(
        Effect.provide(nodeStore({ path }))
      )
      expect(inspected.size).toBe(0)
    }))
})
