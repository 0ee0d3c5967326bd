// Real child processes for the tests that need one — shared state across processes, a crash with SIGKILL part-way,
// a journal written by one process and read by another. Node 20 cannot run TypeScript, so a fixture is bundled with
// esbuild together with the workspace's own sources (`@rein/*` resolve to packages/*/src, the same code the tests
// run, never a build that may be stale); other packages stay external and resolve from the node_modules of the
// package the bundle is written under, which is why it goes to that package's build/ folder.
import { Effect } from "effect"
import type { Plugin } from "esbuild"
import { build } from "esbuild"
import { type ChildProcess, spawn } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const packages = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "packages")

const workspaceSources: Plugin = {
  name: "rein-sources",
  setup(b) {
    b.onResolve({ filter: /^@rein\/[a-z]+(\/.*)?$/ }, (args) => {
      const [, pkg, module] = /^@rein\/([a-z]+)(?:\/(.*))?$/.exec(args.path)!
      return { path: path.join(packages, pkg!, "src", `${module ?? "index"}.ts`) }
    })
  }
}

/**
 * Bundles the fixture `<testDir>/fixtures/<name>.ts` to `<testDir>/../build/fixtures/<name>.mjs` and returns the
 * bundle's path (`testDir`: the calling package's test/ folder).
 */
export const bundle = (testDir: string, name: string): Effect.Effect<string> =>
  Effect.promise(async () => {
    const outfile = path.join(testDir, "..", "build", "fixtures", `${name}.mjs`)
    await build({
      entryPoints: [path.join(testDir, "fixtures", `${name}.ts`)],
      outfile,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      packages: "external",
      plugins: [workspaceSources],
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
  /**
   * Sends `signal` from inside the output handler, the moment `ready(stdout)` holds (no scheduling between what
   * the child wrote and the kill), then waits for the exit; fails if the child exits before.
   */
  readonly killWhen: (ready: (stdout: string) => boolean, signal: NodeJS.Signals) => Effect.Effect<Exited, Error>
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
  const exitedFirst = (what: string) => () =>
    Effect.fail(new Error(`child exited (${JSON.stringify(exited)}) before ${what}: ${stdout} ${stderr}`))
  const exit = Effect.orDie(when(() => exited, () => Effect.succeed(exited!)))
  return {
    pid: process_.pid!,
    stdout: () => stdout,
    stderr: () => stderr,
    waitFor: (pattern) => when(() => pattern.exec(stdout) ?? undefined, exitedFirst(String(pattern))),
    killWhen: (ready, signal) =>
      Effect.zipRight(
        when(() => (ready(stdout) && process_.kill(signal)) || undefined, exitedFirst(`the ${signal}`)),
        exit
      ),
    send: (line) => Effect.sync(() => void process_.stdin!.write(`${line}\n`)),
    kill: (signal) => Effect.sync(() => void process_.kill(signal)),
    exited: exit
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
