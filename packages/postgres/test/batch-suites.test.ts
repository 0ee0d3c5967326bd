// The single-process batch's own checkpoint and resume tests (packages/batch/test/resume-batch.test.ts and
// resume.test.ts), unchanged, with the PostgreSQL artifact store in place of the JSONL file: their helper
// `nodeStore({ path })` gives `PgArtifactStore` for the run named by the path, on a real PostgreSQL.
//
// What the helpers of those files do on a file becomes, on this store:
// - `wrappedStore(options, wrap)`: the wrapped `writeAll` is asked before the manifest is created and before
//   each append (the JSONL store writes once for each), and a failure there fails that append;
// - `bytes(path)`: the artifact as the store last wrote or read it: its manifest, then its records in
//   canonical JSON, sorted (concurrent appends commit in any order; an append changes it).
// Tests that cut or rewrite the file's bytes (the torn-line property and the torn-final-line resume) test the
// JSONL format itself and are not run here; they are listed in JSONL_ONLY and counted by the last test.
import type { FileSystem } from "@effect/platform"
import { PgClient } from "@effect/sql-pg"
import { ArtifactStore, Fingerprint } from "@rein/batch"
import { Effect, Either, Exit, Layer, Redacted, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it as vitestIt, vi } from "vitest"
import { Migrations, PgArtifactStore } from "../src/index.js"
import { TestServer } from "../src/testing.js"
import { available } from "./pg.js"

const JSONL_ONLY = vi.hoisted(() =>
  new Set([
    "for random interleavings of completions and a cut at a random byte, resume loses no completed item and duplicates none",
    "the first run creates the artifact; a later one resumes it and indexes what it may reuse"
  ])
)
const state = vi.hoisted(() => ({ url: "", mirrors: new Map<string, string>(), skipped: [] as Array<string> }))

vi.mock("@effect/vitest", async (importOriginal) => {
  const mod = await importOriginal<typeof import("@effect/vitest")>()
  const only = <F extends (name: string, ...rest: Array<never>) => unknown>(register: F): F =>
    ((name: string, ...rest: Array<never>) => {
      if (JSONL_ONLY.has(name)) {
        state.skipped.push(name)
        return mod.it.skip(`${name} (the JSONL file's bytes: not for this store)`, () => {})
      }
      return register(name, ...rest)
    }) as F
  const effect = Object.assign(only(mod.it.effect), mod.it.effect, { prop: only(mod.it.effect.prop) })
  const it = Object.assign((...args: Parameters<typeof mod.it>) => mod.it(...args), mod.it, {
    scoped: only(mod.it.scoped),
    effect
  })
  return { ...mod, it }
})

vi.mock("../../batch/test/artifact-helpers.js", async (importOriginal) => {
  const mod = await importOriginal<typeof import("../../batch/test/artifact-helpers.js")>()
  // The PG store for the run named by the path, its appends gated by `gate` (the wrapped writeAll).
  const pgStore = (path: string, gate: (buffer: Uint8Array) => Effect.Effect<void, unknown>) =>
    Layer.effect(
      ArtifactStore.ArtifactStore,
      Effect.map(PgArtifactStore.make({ runId: path }), (store): ArtifactStore.Service => {
        const mirror = (contents: ArtifactStore.Contents) =>
          state.mirrors.set(
            path,
            [contents.manifest, ...contents.records.map((l) => Either.getOrThrow(Fingerprint.canonical(l))).sort()]
              .map((l) => typeof l === "string" ? l : Either.getOrThrow(Fingerprint.canonical(l))).join("\n")
          )
        const failed = (e: unknown) =>
          new ArtifactStore.ArtifactError({ reason: "io", message: `write failed: ${String(e)}` })
        const watch = (
          opened: ArtifactStore.Opened,
          records: Array<ArtifactStore.ItemRecord> = []
        ): ArtifactStore.Opened => {
          let refused = false
          mirror({ manifest: opened.manifest, records })
          return {
            ...opened,
            append: (record) =>
              Effect.suspend(() =>
                refused
                  ? Effect.fail(
                    new ArtifactStore.ArtifactError({ reason: "closed", message: "an earlier append failed" })
                  )
                  : Effect.zipRight(
                    Effect.mapError(gate(new TextEncoder().encode(JSON.stringify(record))), (e) => {
                      refused = true
                      return failed(e)
                    }),
                    Effect.tap(opened.append(record), () =>
                      Effect.sync(() =>
                        mirror({ manifest: opened.manifest, records: (records.push(record), records) })
                      ))
                  )
              )
          }
        }
        const create = (manifest: ArtifactStore.Manifest) =>
          Effect.zipRight(Effect.mapError(gate(new Uint8Array()), failed), Effect.map(store.create(manifest), watch))
        // The records read on opening are kept for the mirror, and handed on.
        const resume = (onRecord?: ArtifactStore.OnRecord) => {
          const records: Array<ArtifactStore.ItemRecord> = []
          return Effect.map(
            store.resume((record) => {
              records.push(record)
              onRecord?.(record)
            }),
            (opened) => watch(opened, records)
          )
        }
        return {
          create,
          resume,
          open: (manifest, onRecord) =>
            Effect.flatMap(Effect.either(store.read), (r) => r._tag === "Right" ? resume(onRecord) : create(manifest)),
          stream: store.stream,
          read: Effect.tap(store.read, (contents) => Effect.sync(() => mirror(contents)))
        }
      })
    ).pipe(Layer.provide(PgClient.layer({ url: Redacted.make(state.url), maxConnections: 2 })))
  const ok = () => Effect.void
  return {
    ...mod,
    nodeStore: (options: { readonly path: string }) => pgStore(options.path, ok),
    wrappedStore: (
      options: { readonly path: string },
      wrap: (file: FileSystem.File) => Partial<Pick<FileSystem.File, "writeAll" | "sync">>
    ) => {
      const file = { writeAll: () => Effect.void } as unknown as FileSystem.File
      const writeAll = wrap(file).writeAll
      return pgStore(options.path, writeAll === undefined ? ok : writeAll)
    },
    bytes: (path: string) => Buffer.from(state.mirrors.get(path) ?? "")
  }
})

const scope = Effect.runSync(Scope.make())

beforeAll(async () => {
  if (!available) return
  const server = await Effect.runPromise(Scope.extend(TestServer.start, scope))
  state.url = server.url
  await Effect.runPromise(
    Migrations.run.pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(server.url), maxConnections: 1 })),
      Effect.scoped
    )
  )
}, 60_000)

afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

if (available) {
  await import("../../batch/test/resume-batch.test.js")
  await import("../../batch/test/resume.test.js")
}

describe.skipIf(!available)("the batch suites on the PostgreSQL store", () => {
  vitestIt("leaves out only the tests of the JSONL file's bytes", () => {
    expect(state.skipped.sort()).toEqual([...JSONL_ONLY].sort())
  })
})
