import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { writeFileSync } from "node:fs"
import { ArtifactStore } from "../src/index.js"
import { nodeStore, tempFile } from "./artifact-helpers.js"

// `stream` of a file with no manifest fails as `read` does (the mutation run of 2026-12-04 found no test of it).
describe("JsonlStore: stream", () => {
  it.scoped("stream of a missing or empty file fails with missing: the file, and what is not there", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const streamed = Effect.flatMap(ArtifactStore.ArtifactStore, (s) => s.stream).pipe(
        Effect.provide(nodeStore({ path }))
      )
      const failure = Effect.map(Effect.exit(streamed), (exit) => Exit.isFailure(exit) ? exit.cause : exit)
      expect(yield* Effect.flip(streamed)).toMatchObject({ reason: "missing", message: `${path}: no artifact` })
      writeFileSync(path, "")
      expect(yield* failure).toMatchObject({
        _tag: "Fail",
        error: { reason: "missing", message: `${path}: no manifest line (an empty or unfinished file)` }
      })
    }))
})
