// One contender for an artifact's lock, as a separate process (a test starts several at once): waits until the
// wall clock reaches `startAt` (so that all start together), takes the lock of `out` with the built CLI's
// `ArtifactLock.acquire`, then prints `held <from> <to>` (wall-clock milliseconds: when it took the lock and when
// it let it go) after keeping it for `holdMillis`, or prints `refused: <message>`.
// Usage: node lockRace.mjs <out> <startAt epoch ms> <holdMillis>
import { NodeFileSystem } from "@effect/platform-node"
import { Effect } from "effect"
import { acquire } from "../../dist/internal/artifactLock.js"

const [out, startAt, holdMillis] = process.argv.slice(2)
while (Date.now() < Number(startAt)) {
  // Spin: a timer's resolution would spread the start.
}
const program = Effect.scoped(
  Effect.matchEffect(acquire(out), {
    onFailure: (e) => Effect.sync(() => console.log(`refused: ${e.message}`)),
    onSuccess: () => {
      const from = Date.now()
      return Effect.zipRight(Effect.sleep(Number(holdMillis)), Effect.sync(() => console.log(`held ${from} ${Date.now()}`)))
    }
  })
).pipe(Effect.provide(NodeFileSystem.layer))
Effect.runPromise(program).then(
  () => process.exit(0),
  (e) => {
    console.log(`defect: ${e}`)
    process.exit(1)
  }
)
