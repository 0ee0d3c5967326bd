/**
 * A throwaway PostgreSQL for tests and benchmarks: `initdb` in a temporary directory, `postgres` on a free
 * loopback port, stopped and removed when the scope closes. It uses the server binaries of the machine
 * (Debian's `postgresql` package: `/usr/lib/postgresql/<version>/bin`, or `REIN_PG_BIN`). The server refuses
 * to run as root, so as root both run as the unprivileged `postgres` user the package creates. `startWith`
 * starts one with TLS (a certificate the test makes), optionally refusing unencrypted connections. With
 * `REIN_PG_TEMPLATE` naming a directory that does not exist yet (this repository's test runs name one per run),
 * `initdb` runs once, into it, and each server starts on a copy of that data directory.
 *
 * @since 0.1.0
 */
import type { Scope } from "effect"
import { Effect, Exit, Schema } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync
} from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import * as path from "node:path"

/**
 * The test server could not be started.
 *
 * @example
 * ```ts
 * import { TestServer } from "@rein/postgres/testing"
 *
 * const error = new TestServer.TestServerError({ message: "initdb failed" })
 * ```
 * @category errors
 * @since 0.1.0
 */
export class TestServerError extends Schema.TaggedError<TestServerError>()("TestServerError", {
  message: Schema.String
}) {}

/**
 * A running server: connect with `url` (user `rein`, database `postgres`, no password, loopback only).
 *
 * @category models
 * @since 0.1.0
 */
export interface Server {
  readonly url: string
  readonly port: number
  readonly dataDir: string
}

/**
 * A server certificate: PEM text of the certificate (a chain: the server's first) and of its private key.
 *
 * @category models
 * @since 0.1.0
 */
export interface Certificate {
  readonly cert: string
  readonly key: string
}

/**
 * How to start a server: with TLS (`ssl=on` with `ssl.cert`), and then, when `sslOnly`, refusing every
 * connection that is not encrypted (`hostssl` only in `pg_hba.conf`).
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  readonly ssl?: Certificate | undefined
  readonly sslOnly?: boolean | undefined
}

/**
 * Where the server binaries are, or `undefined` when this machine has none.
 *
 * @example
 * ```ts
 * import { TestServer } from "@rein/postgres/testing"
 *
 * const available = TestServer.binaries() !== undefined
 * ```
 * @category utils
 * @since 0.1.0
 */
export const binaries = (): string | undefined => {
  const fromEnv = process.env["REIN_PG_BIN"]
  if (fromEnv !== undefined && existsSync(path.join(fromEnv, "initdb"))) return fromEnv
  const root = "/usr/lib/postgresql"
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a))
  return versions[0] === undefined ? undefined : path.join(root, versions[0], "bin")
}

interface RunAs {
  readonly uid: number
  readonly gid: number
}

const runAs = (): Effect.Effect<RunAs | undefined, TestServerError> =>
  Effect.suspend(() => {
    if (process.getuid?.() !== 0) return Effect.succeed(undefined)
    const line = readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith("postgres:"))
    const fields = line?.split(":")
    if (fields === undefined || fields.length < 4) {
      return Effect.fail(
        new TestServerError({
          message: "running as root needs the unprivileged user `postgres` (apt-get install postgresql)"
        })
      )
    }
    return Effect.succeed({ uid: Number(fields[2]), gid: Number(fields[3]) })
  })

const exitOf = (child: ChildProcess) =>
  Effect.async<number | null>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.succeed(child.exitCode))
    child.once("exit", (code) => resume(Effect.succeed(code)))
  })

const run = (file: string, args: ReadonlyArray<string>, as: RunAs | undefined) =>
  Effect.gen(function*() {
    const child = spawn(file, args, { stdio: ["ignore", "pipe", "pipe"], ...(as ?? {}) })
    let output = ""
    child.stdout.on("data", (c: Buffer) => (output += c.toString()))
    child.stderr.on("data", (c: Buffer) => (output += c.toString()))
    const code = yield* exitOf(child)
    return { code, output }
  })

const freePort = Effect.async<number, TestServerError>((resume) => {
  const server = createServer()
  server.once("error", (e) => resume(Effect.fail(new TestServerError({ message: `no free port: ${e.message}` }))))
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

const waitReady = (bin: string, port: number, server: ChildProcess, log: () => string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 400; i++) {
      if (server.exitCode !== null) break
      const probe = yield* run(path.join(bin, "pg_isready"), ["-q", "-h", "127.0.0.1", "-p", String(port)], undefined)
      if (probe.code === 0) return
      yield* Effect.sleep("25 millis")
    }
    return yield* new TestServerError({ message: `postgres did not become ready on port ${port}: ${log()}` })
  })

/** The certificate's files beside the data directory, owned by the server's user (it refuses a key others read). */
const writeCertificate = (dir: string, certificate: Certificate, as: RunAs | undefined) => {
  const files = { cert: path.join(dir, "server.crt"), key: path.join(dir, "server.key") }
  for (const [file, text] of [[files.cert, certificate.cert], [files.key, certificate.key]] as const) {
    writeFileSync(file, text, { mode: 0o600 })
    chmodSync(file, 0o600)
    if (as !== undefined) chownSync(file, as.uid, as.gid)
  }
  return files
}

/** Only encrypted TCP connections (and the Unix socket, for the server's own tools). */
const SSL_ONLY_HBA = ["local all all trust", "hostssl all all 127.0.0.1/32 trust", "hostssl all all ::1/128 trust", ""]
  .join("\n")

const initdb = (bin: string, dataDir: string, as: RunAs | undefined) =>
  Effect.gen(function*() {
    const init = yield* run(
      path.join(bin, "initdb"),
      ["-D", dataDir, "-U", "rein", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"],
      as
    )
    if (init.code !== 0) return yield* new TestServerError({ message: `initdb failed: ${init.output}` })
  })

// The template's data directory, made by the first start that creates the template's directory (creating it is
// the lock: one process wins); `ready` or `failed` beside it says when that start is done.
const templateMade = (bin: string, template: string, as: RunAs | undefined) =>
  Effect.gen(function*() {
    const ready = path.join(template, "ready")
    const failed = path.join(template, "failed")
    const mine = yield* Effect.sync(() => {
      try {
        mkdirSync(template)
        if (as !== undefined) chownSync(template, as.uid, as.gid)
        return true
      } catch {
        return false
      }
    })
    if (mine) {
      return yield* initdb(bin, path.join(template, "data"), as).pipe(
        Effect.onExit((exit) => Effect.sync(() => writeFileSync(Exit.isSuccess(exit) ? ready : failed, ""))),
        Effect.as(true)
      )
    }
    for (let i = 0; i < 2400; i++) {
      if (existsSync(ready)) return true
      if (existsSync(failed)) return false
      yield* Effect.sleep("25 millis")
    }
    return false
  })

// `initdb` into `dataDir`; or, with REIN_PG_TEMPLATE (a directory that does not exist yet, which test suites name
// once per run), a copy (`cp -a`, as the server's user) of the data directory initdb made there once for the first
// start, the same files made in a fraction of initdb's time. When that template could not be made, initdb.
const initialise = (bin: string, dataDir: string, as: RunAs | undefined) =>
  Effect.gen(function*() {
    const template = process.env["REIN_PG_TEMPLATE"]
    if (template === undefined || !(yield* templateMade(bin, template, as))) return yield* initdb(bin, dataDir, as)
    const copy = yield* run("cp", ["-a", path.join(template, "data"), dataDir], as)
    if (copy.code !== 0) {
      return yield* new TestServerError({ message: `copying the template's data directory failed: ${copy.output}` })
    }
  })

/**
 * Starts a server for the current scope.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestServer } from "@rein/postgres/testing"
 *
 * const url = Effect.scoped(Effect.map(TestServer.start, (server) => server.url))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const start: Effect.Effect<Server, TestServerError, Scope.Scope> = Effect.suspend(() => startWith({}))

/**
 * Starts a server for the current scope with `options`: with TLS, the server takes `sslmode=…` connections
 * and presents `options.ssl.cert` (made by the test, e.g. with `openssl req -x509`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestServer } from "@rein/postgres/testing"
 *
 * declare const certificate: TestServer.Certificate
 * const url = Effect.scoped(
 *   Effect.map(TestServer.startWith({ ssl: certificate, sslOnly: true }), (server) => `${server.url}?sslmode=require`)
 * )
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const startWith = (options: Options): Effect.Effect<Server, TestServerError, Scope.Scope> =>
  Effect.gen(function*() {
    const bin = binaries()
    if (bin === undefined) {
      return yield* new TestServerError({ message: "no PostgreSQL server binaries (apt-get install postgresql)" })
    }
    if (options.sslOnly === true && options.ssl === undefined) {
      return yield* new TestServerError({ message: "sslOnly needs a certificate (ssl)" })
    }
    const as = yield* runAs()
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(path.join(tmpdir(), "rein-pg-"))),
      (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
    )
    if (as !== undefined) chownSync(dir, as.uid, as.gid)
    const dataDir = path.join(dir, "data")
    yield* initialise(bin, dataDir, as)
    if (options.sslOnly === true) writeFileSync(path.join(dataDir, "pg_hba.conf"), SSL_ONLY_HBA)
    const ssl = options.ssl === undefined ? [] : (() => {
      const files = writeCertificate(dir, options.ssl, as)
      return ["-c", "ssl=on", "-c", `ssl_cert_file=${files.cert}`, "-c", `ssl_key_file=${files.key}`]
    })()
    const port = yield* freePort
    let log = ""
    const server = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const child = spawn(path.join(bin, "postgres"), [
          "-D",
          dataDir,
          "-p",
          String(port),
          "-k",
          dir,
          "-c",
          "listen_addresses=127.0.0.1",
          "-c",
          "fsync=off",
          "-c",
          "synchronous_commit=off",
          "-c",
          "full_page_writes=off",
          "-c",
          "max_connections=200",
          ...ssl
        ], { stdio: ["ignore", "ignore", "pipe"], ...(as ?? {}) })
        child.stderr.on("data", (c: Buffer) => (log = (log + c.toString()).slice(-4000)))
        return child
      }),
      (child) => Effect.zipRight(Effect.sync(() => child.kill("SIGQUIT")), exitOf(child))
    )
    yield* waitReady(bin, port, server, () => log)
    return { url: `postgres://rein@127.0.0.1:${port}/postgres`, port, dataDir }
  })

/**
 * Makes a server started with `ssl` present another certificate from its next connection on: the files are
 * rewritten and the server reloads its configuration (SIGHUP). The reload is asynchronous: a connection made
 * at once may still see the old certificate.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestServer } from "@rein/postgres/testing"
 *
 * declare const server: TestServer.Server
 * declare const certificate: TestServer.Certificate
 * const swapped: Effect.Effect<void, TestServer.TestServerError> = TestServer.setCertificate(server, certificate)
 * ```
 * @category utils
 * @since 0.1.0
 */
export const setCertificate = (server: Server, certificate: Certificate): Effect.Effect<void, TestServerError> =>
  Effect.gen(function*() {
    const dir = path.dirname(server.dataDir)
    if (!existsSync(path.join(dir, "server.crt"))) {
      return yield* new TestServerError({ message: "setCertificate: the server was not started with ssl" })
    }
    writeCertificate(dir, certificate, yield* runAs())
    const pid = Number(readFileSync(path.join(server.dataDir, "postmaster.pid"), "utf8").split("\n")[0])
    yield* Effect.try({
      try: () => process.kill(pid, "SIGHUP"),
      catch: (e) => new TestServerError({ message: `setCertificate: cannot signal the server: ${String(e)}` })
    })
  })
