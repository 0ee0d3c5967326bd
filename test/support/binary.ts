/**
 * The built `rein` binary for test suites that run it as a user does: where it is, and the set-up each such
 * suite needs (the CLI built fresh, so no suite runs a stale dist, and a temporary directory for its files).
 */
import { execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/** The repository's root. */
export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")

/** Runs `node args…` from the root; its output passes through, a failure rejects. */
const run = (args: ReadonlyArray<string>): Promise<void> =>
  new Promise((resolve, reject) => {
    spawn(process.execPath, args, { cwd: root, stdio: "inherit" })
      .on("error", reject)
      .on("exit", (code) => code === 0 ? resolve() : reject(new Error(`node ${args.join(" ")}: exit ${code}`)))
  })

/** The binary the tests run (`node bin …`). */
export const bin = path.join(root, "packages/cli/dist/bin.js")

/**
 * Builds the CLI and what it references and bundles it, as `pnpm build` does, then makes the suite's
 * temporary directory (`prefix…`). The suites test the binary a user runs: its bundle. Asynchronous: on a
 * fresh clone the build takes minutes, and a test worker blocked that long loses its connection to vitest.
 */
export const prepare = async (prefix: string): Promise<string> => {
  await run([path.join(root, "node_modules/typescript/bin/tsc"), "-b", "packages/cli/tsconfig.src.json"])
  await run([path.join(root, "scripts/bundle-cli.mjs")])
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix))
}

/** Removes what `prepare` made (nothing, when it never ran). */
export const cleanUp = (dir: string): void => {
  if (dir !== "") fs.rmSync(dir, { recursive: true, force: true })
}

/** What a run of the binary gave: its exit code (`null` when killed), stdout and stderr. */
export interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs `rein args…` from the root, asynchronously (the test worker stays responsive), killed after `timeout`
 * milliseconds (60 s unless given), keeping up to `maxBuffer` bytes of each output (16 MiB unless given).
 */
export const rein = (
  args: ReadonlyArray<string>,
  options: { readonly timeout?: number; readonly maxBuffer?: number } = {}
): Promise<Result> =>
  new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      {
        cwd: root,
        encoding: "utf8",
        timeout: options.timeout ?? 60_000,
        maxBuffer: options.maxBuffer ?? 16 * 1024 * 1024
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : null
        resolve({ code, stdout, stderr })
      }
    )
  })
