import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { bundle, spawnChild } from "../../../test/support/processes.js"
import { ArtifactStore, Checkpoint, Guardrails } from "../src/index.js"
import { nodeStore, tempFile, text } from "./artifact-helpers.js"
import { identity } from "./fixtures/artifact-identity.js"
import type { Item } from "./fixtures/artifact-run.js"
import { contract, runItems, scriptedProvider } from "./fixtures/artifact-run.js"

const here = path.dirname(fileURLToPath(import.meta.url))

/** Runs the child until it has published `after` items, then kills it with SIGKILL. */
const runAndKill = (script: string, input: unknown, after: number) =>
  Effect.scoped(Effect.gen(function*() {
    const child = yield* spawnChild(script, input)
    const { signal } = yield* child.killWhen((out) => (out.match(/PUBLISHED /g) ?? []).length >= after, "SIGKILL")
    const published = [...child.stdout().matchAll(/PUBLISHED (\S+)\n/g)].map((m) => m[1]!)
    return { published, signal }
  }))

const CANARY = "CANARY-PROMPT-TEXT-7f3a"
const ITEMS: ReadonlyArray<Item> = Array.from({ length: 300 }, (_, i) => ({
  id: `item-${i}`,
  // Every 10th item is refused by the provider: a reusable failure.
  text: `${CANARY} invoice ${i}${i % 10 === 7 ? " FAIL" : ""}`
}))

type Runner = "minimal" | "batch"

/** Runs the items to the end in this process, with reuse-all, returning the provider calls and the reused ids. */
const resume = (runner: Runner, store: ReturnType<typeof nodeStore>) =>
  Effect.gen(function*() {
    const calls: Array<string> = []
    const provided = Effect.provide(Layer.merge(store, scriptedProvider({ calls })))
    if (runner === "minimal") {
      const report = yield* provided(Effect.scoped(runItems(ITEMS, { identity, policy: "reuse-all", concurrency: 8 })))
      return { calls: [...calls].sort(), reused: [...report.reused].sort() }
    }
    const summary = yield* provided(Checkpoint.run(ITEMS, {
      contract,
      request: (item) => ({ id: item.id, prompt: item.text, inputTokens: 10, maxOutputTokens: 10 }),
      guardrails: Guardrails.make({ concurrency: 8 }),
      checkpoint: { identity, resume: "reuse-all" }
    }))
    expect(summary.termination.kind).toBe("completed")
    return {
      calls: [...calls].sort(),
      reused: summary.results.filter((r) => r._tag === "Reused").map((r) => r.itemId).sort()
    }
  })

describe("artifacts: a real crash", () => {
  for (
    const [runner, what] of [
      ["minimal", "a minimal checkpointed run (Rein.execute, append, publish)"],
      ["batch", "a batch run (Checkpoint.stream)"]
    ] as const
  ) {
    it.live(
      `${what}: after SIGKILL part-way, the resumed run calls the provider only for items without a reusable record, and every item ends with exactly one`,
      () =>
        Effect.scoped(Effect.gen(function*() {
          const file = yield* tempFile
          const child = yield* bundle(here, "artifact-crash-child")
          const killed = yield* runAndKill(
            child,
            { path: file, items: ITEMS, latencyMillis: 20, concurrency: 8, runner },
            40
          )
          expect(killed.signal).toBe("SIGKILL")

          // What the dead process left. Every item it published has a record (write before publish); records
          // for items whose publication did not reach stdout before the kill may be there too.
          const store = nodeStore({ path: file })
          const read = Effect.flatMap(ArtifactStore.ArtifactStore, (s) => s.read).pipe(Effect.provide(store))
          const left = yield* read
          const recorded = new Set(left.records.map((r) => r.itemId))
          for (const id of killed.published) expect(recorded.has(id)).toBe(true)
          expect(left.records.length).toBeLessThan(ITEMS.length) // it really died part-way
          expect(recorded.size).toBe(left.records.length)
          const reusable = new Set(left.records.filter((r) => r.reusable).map((r) => r.itemId))
          expect(reusable.size).toBeGreaterThan(0)

          // Resume in a new process (here: this one) with reuse-all: recorded successes and recorded reusable
          // failures are given back; everything else runs.
          const resumed = yield* resume(runner, store)
          expect(resumed.calls).toEqual(ITEMS.map((i) => i.id).filter((id) => !reusable.has(id)).sort())
          expect(resumed.reused).toEqual([...reusable].sort())

          // The final file holds exactly one reusable record per item.
          const final = yield* read
          for (const item of ITEMS) {
            const mine = final.records.filter((r) => r.itemId === item.id && r.reusable)
            expect(mine).toHaveLength(1)
            expect(mine[0]!.outcome).toBe(item.text.endsWith("FAIL") ? "failure" : "success")
          }
          // A second resume has nothing left to call.
          expect((yield* resume(runner, store)).calls).toEqual([])
          // Records hold fingerprints, never the prompt.
          expect(text(file)).not.toContain(CANARY)
        })),
      60_000
    )
  }
})
