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

/** Builds the CLI and what it references and bundles it, as `pnpm build` does. */
const build = async (): Promise<void> => {
  await run([path.join(root, "node_modules/typescript/bin/tsc"), "-b", "packages/cli/tsconfig.src.json"])
  await run([path.join(root, "scripts/bundle-cli.mjs")])
}

const pause = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis))

/**
 * The build, once per vitest run: the run's global set-up (test/support/run.ts) names it in REIN_TEST_RUN, the
 * first suite to get here builds (holding a lock directory, as suites run in parallel worker processes) and
 * leaves a stamp, and the run's other suites use that build (nothing rebuilds the CLI during a run). A build
 * that fails leaves no stamp: the next suite builds again, as each did before. Outside such a run (no name),
 * every call builds.
 */
const builtOnce = async (): Promise<void> => {
  const name = process.env["REIN_TEST_RUN"]
  if (name === undefined) return build()
  const stamp = path.join(os.tmpdir(), `rein-test-run-${name}-cli-built`)
  const lock = `${stamp}.lock`
  for (;;) {
    if (fs.existsSync(stamp)) return
    try {
      fs.mkdirSync(lock)
    } catch {
      await pause(200)
      continue
    }
    try {
      if (!fs.existsSync(stamp)) {
        await build()
        fs.writeFileSync(stamp, "")
      }
      return
    } finally {
      fs.rmSync(lock, { recursive: true, force: true })
    }
  }
}

/**
 * Builds the CLI and what it references and bundles it, as `pnpm build` does (once per vitest run: see
 * `builtOnce`), then makes the suite's temporary directory (`prefix…`). The suites test the binary a user runs:
 * its bundle. Asynchronous: on a fresh clone the build takes minutes, and a test worker blocked that long loses
 * its connection to vitest.
 */
export const prepare = async (prefix: string): Promise<string> => {
  await builtOnce()
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
