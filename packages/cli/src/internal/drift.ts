/**
 * What `rein batch --resume` says before it runs when the artifact was written under another identity (a
 * changed contract, catalog model or version): a record is reused only under the identity it was written
 * under, so those items run again and their new records are appended to the same file. Said in words, with
 * the count, instead of a silent re-run.
 *
 * @internal
 */
import type { ArtifactStore, Identity } from "@rein/batch"
import { Effect, Layer } from "effect"
import { plainSystemError } from "./files.js"

const shown = (value: string | undefined): string => (value === undefined ? "(none)" : JSON.stringify(value))

/** The fields that differ between two identities (`model: "a" → "b"`), in a stable order. @internal */
export const changes = (before: Identity.Identity, after: Identity.Identity): ReadonlyArray<string> => {
  const fields = ["provider", "model", "promptVersion", "parserVersion", "applicationVersion"] as const
  const out: Array<string> = []
  for (const field of fields) {
    if (before[field] !== after[field]) out.push(`${field}: ${shown(before[field])} → ${shown(after[field])}`)
  }
  const keys = [...new Set([...Object.keys(before.extra), ...Object.keys(after.extra)])].sort()
  for (const key of keys) {
    const was = Object.hasOwn(before.extra, key) ? before.extra[key] : undefined
    const now = Object.hasOwn(after.extra, key) ? after.extra[key] : undefined
    if (was !== now) out.push(`extra.${key}: ${shown(was)} → ${shown(now)}`)
  }
  return out
}

/**
 * The artifact store `store` (the tag `tag`'s), resumed with the warning of `warning` said by `say` once it is
 * open: `Resume.open`'s one reading of the artifact also tells which items have records under `fingerprint`
 * (the run's identity's) and which only under another one, so the file is read once. Its `open` resumes the
 * artifact that is there (it never starts a new one: a file without a manifest is an error, as for `--resume`
 * it is), and the warning is said before the run goes on. Only item ids are held, and only while it is read.
 *
 * @internal
 */
export const resumedWithWarning = (
  tag: typeof ArtifactStore.ArtifactStore,
  store: Layer.Layer<ArtifactStore.ArtifactStore>,
  report: { readonly out: string; readonly identity: Identity.Identity; readonly fingerprint: string },
  say: (warning: string) => Effect.Effect<void>
): Layer.Layer<ArtifactStore.ArtifactStore> =>
  Layer.effect(
    tag,
    Effect.map(tag, (inner) =>
      tag.of({
        ...inner,
        open: (_manifest, onRecord) =>
          Effect.suspend(() => {
            const current = new Set<string>()
            const others = new Set<string>()
            const seen: ArtifactStore.OnRecord = (record, at) => {
              if (record.identityFingerprint === report.fingerprint) current.add(record.itemId)
              else others.add(record.itemId)
              if (onRecord !== undefined) onRecord(record, at)
            }
            return Effect.tap(inner.resume(seen), (opened) => {
              const warning = said(report.out, opened.manifest, report.identity, report.fingerprint, current, others)
              current.clear()
              others.clear()
              return warning === undefined ? Effect.void : say(warning)
            })
          })
      }))
  ).pipe(Layer.provide(store))

// The warning's words, from the item ids with a record under this run's identity and under another one.
const said = (
  out: string,
  manifest: ArtifactStore.Manifest,
  identity: Identity.Identity,
  fingerprint: string,
  current: ReadonlySet<string>,
  others: ReadonlySet<string>
): string | undefined => {
  const stale = [...others].filter((id) => !current.has(id)).length
  if (stale === 0) return undefined
  const items = new Set([...current, ...others]).size
  const what = manifest.identityFingerprint === fingerprint
    ? []
    : changes(manifest.identity, identity)
  return [
    `rein batch: ${out} was written under another contract or version than this run's`,
    ...what.map((line) => `  changed: ${line}`),
    `  ${stale} of its ${items} items have records only under another contract or version: they run again, ` +
    `appended to ${out}.`,
    "  To keep the old results apart, give another --out; to start again, pass --overwrite instead of --resume."
  ].join("\n")
}

/**
 * An artifact error naming the file and line (`run.jsonl:10: not valid JSON …`), once: a message that already
 * starts with the file (the store's `run.jsonl: no manifest line …`) is not prefixed again. @internal
 */
export const artifactMessage = (out: string, e: ArtifactStore.ArtifactError): string => {
  const message = plainSystemError(e.message)
  return e.line === undefined
    ? message.startsWith(`${out}: `) ? message : `${out}: ${message}`
    : `${out}:${e.line}: ${message.replace(new RegExp(`^line ${e.line}: `), "")}`
}
