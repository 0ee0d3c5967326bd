/**
 * The built `rein` binary for test suites that run it as a user does: where it is, and the set-up each such
 * suite needs (the CLI built fresh, so no suite runs a stale dist, and a temporary directory for its files).
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/** The repository's root. */
export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")

/** The binary the tests run (`node bin …`). */
export const bin = path.join(root, "packages/cli/dist/bin.js")

/**
 * Builds the CLI and what it references and bundles it, as `pnpm build` does, then makes the suite's
 * temporary directory (`prefix…`). The suites test the binary a user runs: its bundle.
 */
export const prepare = (prefix: string): string => {
  execFileSync(process.execPath, [
    path.join(root, "node_modules/typescript/bin/tsc"),
    "-b",
    "packages/cli/tsconfig.src.json"
  ], { cwd: root, stdio: "inherit" })
  execFileSync(process.execPath, [path.join(root, "scripts/bundle-cli.mjs")], { cwd: root, stdio: "inherit" })
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix))
}

/** Removes what `prepare` made (nothing, when it never ran). */
export const cleanUp = (dir: string): void => {
  if (dir !== "") fs.rmSync(dir, { recursive: true, force: true })
}
