// Real child processes for the tests of shared state across processes. A fixture under test/fixtures/ is
// bundled with esbuild together with the ledger's own src/ modules (Node 20 cannot run TypeScript); packages
// stay external and resolve from packages/ledger/node_modules, which is why bundles go to packages/ledger/build/.
import { Effect } from "effect"
import { build } from "esbuild"
import { type ChildProcess, spawn } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const here = path.dirname(fileURLToPath(import.meta.url))

/** Bundles `test/fixtures/<name>.ts` to a runnable `.mjs` file and returns its path. */
export const bundle = (name: string) =>
  Effect.promise(async () => {
    const outfile = path.join(here, "..", "build", "fixtures", `${name}.mjs`)
    await build({
      entryPoints: [path.join(here, "fixtures", `${name}.ts`)],
      outfile,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      packages: "external",
      logLevel: "silent"
    })
    return outfile
  })

export interface Exited {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

/** A running child: its output so far, a way to wait for a line, to write to its stdin and to signal it. */
export interface Child {
  readonly pid: number
  readonly stdout: () => string
  readonly stderr: () => string
  /** Waits until stdout matches `pattern`; fails if the child exits first. */
  readonly waitFor: (pattern: RegExp) => Effect.Effect<RegExpExecArray, Error>
  readonly send: (line: string) => Effect.Effect<void>
  readonly kill: (signal: NodeJS.Signals) => Effect.Effect<void>
  readonly exited: Effect.Effect<Exited>
}

const make = (process_: ChildProcess): Child => {
  let stdout = ""
  let stderr = ""
  let exited: Exited | undefined
  const listeners = new Set<() => void>()
  const notify = () => listeners.forEach((listener) => listener())
  process_.stdout!.on("data", (chunk: Buffer) => {
    stdout += chunk.toString()
    notify()
  })
  process_.stderr!.on("data", (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  process_.on("exit", (code, signal) => {
    exited = { code, signal }
    notify()
  })
  const when = <A>(ready: () => A | undefined, ended: () => Effect.Effect<A, Error>) =>
    Effect.async<A, Error>((resume) => {
      const check = () => {
        const value = ready()
        if (value !== undefined) {
          listeners.delete(check)
          resume(Effect.succeed(value))
        } else if (exited !== undefined) {
          listeners.delete(check)
          resume(ended())
        }
      }
      listeners.add(check)
      check()
      return Effect.sync(() => listeners.delete(check))
    })
  return {
    pid: process_.pid!,
    stdout: () => stdout,
    stderr: () => stderr,
    waitFor: (pattern) =>
      when(
        () => pattern.exec(stdout) ?? undefined,
        () => Effect.fail(new Error(`child exited (${JSON.stringify(exited)}) before ${pattern}: ${stdout} ${stderr}`))
      ),
    send: (line) => Effect.sync(() => void process_.stdin!.write(`${line}\n`)),
    kill: (signal) => Effect.sync(() => void process_.kill(signal)),
    exited: Effect.orDie(when(() => exited, () => Effect.succeed(exited!)))
  }
}

/** Starts `node <script> <input as JSON>`; the child is killed with SIGKILL when the scope closes. */
export const spawnChild = (script: string, input: unknown) =>
  Effect.acquireRelease(
    Effect.sync(() =>
      make(spawn(process.execPath, [script, JSON.stringify(input)], { stdio: ["pipe", "pipe", "pipe"] }))
    ),
    (child) => child.kill("SIGKILL")
  )
