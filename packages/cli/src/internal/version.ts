/**
 * The version `rein --version` prints, in a module of its own: the binary answers `--version` from it
 * without loading the command tree, Effect's runtime or Node's platform layer.
 *
 * @internal
 */

/** @internal */
export const version = "0.1.0"
