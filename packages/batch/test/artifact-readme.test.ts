// The docs/artifacts.md example, compiled and run twice over the same file: the second run calls nothing.
// `catalog`, `contract`, `invoices`, `render` and `reinLayer` are stand-ins for the reader's own.
import { NodeFileSystem } from "@effect/platform-node"
import { it } from "@effect/vitest"
import { Catalog, Contract, Fake, Rein } from "@rein/core"
import { Effect, Either, Layer } from "effect"
import { readFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect } from "vitest"
import { Checkpoint, Guardrails, Identity, JsonlStore } from "../src/index.js"
import { tempDir } from "./artifact-helpers.js"

const catalog = Catalog.make({
  endpoints: [{
    id: "openai/mini",
    provider: "openai",
    model: "gpt-4.1-mini",
    capabilities: { contextWindow: 128_000, maxOutputTokens: 16_384 },
    prices: { inputTokens: 0.4e-6, outputTokens: 1.6e-6 }
  }]
})
const contract = Contract.make({ deadline: "30 seconds", candidates: ["openai/mini"], allowSimulated: true })
const invoices = Array.from({ length: 25 }, (_, i) => ({ id: `inv-${i}`, total: i * 10 }))
const render = (invoice: { readonly id: string; readonly total: number }) => `Check invoice ${invoice.id}`
const fake = Fake.make({ "openai/mini": [Fake.succeed({ text: "{\"ok\":true}" })] })
const reinLayer = Rein.layer({ catalog, providers: { openai: fake.provider } })

const example = (file: string) => {
  // --- docs/artifacts.md example starts here ---
  const identity = Either.getOrThrow(Identity.fromContract(contract, catalog, {
    promptVersion: "invoice-v4",
    parserVersion: "invoice-schema-v2",
    applicationVersion: "billing-v7"
  }))

  const summary = Checkpoint.run(invoices, {
    contract,
    request: (invoice) => ({ id: invoice.id, prompt: render(invoice), inputTokens: 900, maxOutputTokens: 400 }),
    guardrails: Guardrails.make({ concurrency: 20, batchDeadline: "1 hour", abortOn: ["authentication"] }),
    checkpoint: { identity, resume: "reuse-successes" } // or "none" (checkpoint only), "reuse-all"
  }).pipe(
    Effect.provide(Layer.merge(JsonlStore.layer({ path: file, fsync: true }), reinLayer)),
    Effect.provide(NodeFileSystem.layer)
  )
  // --- example ends here ---
  return summary
}

describe("docs/artifacts.md", () => {
  it.scoped("the example checkpoints a run; run again, it is answered from the artifact", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "run.jsonl")
      const first = yield* example(file)
      expect(first.stats.succeeded).toBe(25)
      expect((yield* fake.calls).length).toBe(25)
      const second = yield* example(file)
      expect(second.stats.reused).toBe(25)
      expect((yield* fake.calls).length).toBe(25)
      expect(readFileSync(file, "utf8")).not.toContain("Check invoice")
    }))

  it("the docs show the same code as this test", () => {
    const here = path.dirname(fileURLToPath(import.meta.url))
    const doc = readFileSync(path.join(here, "..", "docs", "artifacts.md"), "utf8")
    for (
      const fragment of [
        "Identity.fromContract(contract, catalog",
        "checkpoint: { identity, resume: \"reuse-successes\" }"
      ]
    ) {
      expect(doc).toContain(fragment)
    }
  })
})
