export * as ArtifactStore from "./ArtifactStore.js"

/**
 * What makes two runs' results interchangeable: provider, model, prompt, parser and application
 * versions, extras; given explicitly or derived from a contract and its catalog.
 *
 * @since 0.1.0
 */
export * as Identity from "./Identity.js"

/**
 * SHA-256 fingerprints of canonical JSON: of an identity, a prompt, a whole input item.
 *
 * @since 0.1.0
 */
export * as Fingerprint from "./Fingerprint.js"

/**
 * The embedded artifact store: a crash-safe JSONL file on `@effect/platform`'s `FileSystem`.
 *
 * @since 0.1.0
 */
export * as JsonlStore from "./JsonlStore.js"

/**
 * Resume policies (`none`, `reuse-successes`, `reuse-all`) and the lookup of records to reuse.
 *
 * @since 0.1.0
 */
export * as Resume from "./Resume.js"
