/**
 * `@rein/batch`, loaded when a command first needs it (`rein batch`, `rein worker`) instead of at start-up:
 * the top levels of its modules (their `Schema` classes, ≈ 11 ms of CPU in the binary's bundle) would
 * otherwise run for every command, `simulate` and `plan` included (bench/PROFILE.md, #22). Each module is
 * imported by its own path, not from the package's index, which the binary's bundle would otherwise carry
 * whole and initialize whole (`scripts/bundle-cli.mjs`).
 *
 * @internal
 */
import { Effect } from "effect"

/** The modules of `@rein/batch` the commands use, imported on first use. @internal */
export const load = Effect.promise(async () => {
  const [ArtifactStore, Checkpoint, Fingerprint, Guardrails, Identity, JsonlStore, Termination] = await Promise.all([
    import("@rein/batch/ArtifactStore"),
    import("@rein/batch/Checkpoint"),
    import("@rein/batch/Fingerprint"),
    import("@rein/batch/Guardrails"),
    import("@rein/batch/Identity"),
    import("@rein/batch/JsonlStore"),
    import("@rein/batch/Termination")
  ])
  return { ArtifactStore, Checkpoint, Fingerprint, Guardrails, Identity, JsonlStore, Termination }
})
