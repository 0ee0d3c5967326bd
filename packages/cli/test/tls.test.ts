/**
 * `--store` over TLS as a user meets it: the built `rein` binary against a real PostgreSQL on loopback that
 * takes only SSL connections (`hostssl`), with certificates made at test time by `openssl`. One server for the
 * file: self-signed first, then (the last test) a certificate signed by a CA. Every store string carries a
 * password (the server trusts loopback: it is sent and ignored), and no output holds it.
 */
import { describe, expect, it } from "@effect/vitest"
import { TestServer } from "@rein/postgres/testing"
import { Effect, Exit, Scope } from "effect"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import * as Binary from "../../../test/support/binary.js"
import * as Certificates from "../../../test/support/certificates.js"

const available = TestServer.binaries() !== undefined && Certificates.available()
if (!available && process.env["CI"] !== undefined) {
  throw new Error("the TLS tests need PostgreSQL's server binaries and openssl in CI (.ci/run installs both)")
}

const scope = Effect.runSync(Scope.make())
let server: TestServer.Server | undefined
let tmp = ""
/** The server's own (self-signed) certificate; another one; a CA and a server certificate it signs. */
let self = ""
let other = ""
let ca = ""
let signed: Certificates.Pem | undefined

const PASSWORD = "hunter2"

/** The store string: `query` on the server, by `host` (127.0.0.1, the name its certificates hold). */
const store = (query: string, host = "127.0.0.1") =>
  `postgres://rein:${PASSWORD}@${host}:${server?.port}/postgres${query === "" ? "" : `?${query}`}`

/** `rein status` on the store: it connects (and then finds no run `x`) or says why it cannot. */
const status = async (query: string, host?: string) => {
  const r = await Binary.rein(["status", "--store", store(query, host), "--run", "x"], { timeout: 120_000 })
  expect(r.code).toBe(2)
  expect(r.stderr).not.toContain(PASSWORD)
  expect(r.stderr).not.toMatch(/WARNING|\n\s+at /)
  expect(r.stderr.split("\n")).toHaveLength(2)
  return r.stderr
}

const CONNECTED =
  "rein: --store: no run \"x\" (rein batch --store URL --run ID --input … starts a run; then workers join it)\n"
const REFUSED = "rein: --store: cannot connect: PgClient: Failed to connect"

beforeAll(async () => {
  if (!available) return
  tmp = await Binary.prepare("rein-tls-")
  const certificate = Certificates.selfSigned(tmp, "server", "IP:127.0.0.1")
  self = join(tmp, "server.crt")
  Certificates.selfSigned(tmp, "other", "IP:127.0.0.1")
  other = join(tmp, "other.crt")
  Certificates.authority(tmp, "ca")
  ca = join(tmp, "ca.crt")
  signed = Certificates.signedBy(tmp, "ca", "signed", "IP:127.0.0.1")
  server = await Effect.runPromise(Scope.extend(TestServer.startWith({ ssl: certificate, sslOnly: true }), scope))
}, 300_000)

afterAll(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
  Binary.cleanUp(tmp)
})

describe.skipIf(!available)("rein --store against a PostgreSQL that takes only SSL", () => {
  it("sslmode=require, prefer, verify-ca on a self-signed server: one line saying so and what to change", async () => {
    for (const query of ["sslmode=require", "sslmode=prefer", "sslmode=verify-ca", "sslmode=verify-full"]) {
      expect(await status(query)).toBe(
        `${REFUSED}: the server's certificate is self-signed, and not trusted here (DEPTH_ZERO_SELF_SIGNED_CERT): ` +
          "name it, or its CA, with sslrootcert=FILE (or uselibpqcompat=true&sslmode=require: encrypted, the " +
          "certificate not checked)\n"
      )
    }
    // libpq's meaning: encrypted, the certificate not checked: it connects.
    expect(await status("uselibpqcompat=true&sslmode=require")).toBe(CONNECTED)
    expect(await status("uselibpqcompat=true&sslmode=prefer")).toBe(CONNECTED)
  }, 240_000)

  it(
    "verify-full with the server's certificate as sslrootcert connects; another CA, or another host name, is refused naming why",
    async () => {
      expect(await status(`sslmode=verify-full&sslrootcert=${self}`)).toBe(CONNECTED)
      expect(await status(`sslmode=require&sslrootcert=${self}`)).toBe(CONNECTED)
      expect(await status(`sslmode=verify-full&sslrootcert=${other}`)).toMatch(
        /: the server's certificate is self-signed, and not trusted here \(DEPTH_ZERO_SELF_SIGNED_CERT\)/
      )
      // The certificate holds 127.0.0.1, not `localhost`.
      expect(await status(`sslmode=verify-full&sslrootcert=${self}`, "localhost")).toBe(
        `${REFUSED}: the server's certificate is not for the host localhost (it names IP Address:127.0.0.1) ` +
          "(ERR_TLS_CERT_ALTNAME_INVALID): connect by a name it holds\n"
      )
      // verify-ca with libpq's meaning checks the CA only: `localhost` is then fine.
      expect(await status(`uselibpqcompat=true&sslmode=verify-ca&sslrootcert=${self}`, "localhost")).toBe(CONNECTED)
    },
    240_000
  )

  it(
    "verify-ca with libpq's meaning and no CA, or a sslrootcert that is not there: a reason, not only 'Failed to connect'",
    async () => {
      expect(await status("uselibpqcompat=true&sslmode=verify-ca")).toBe(
        `${REFUSED}: sslmode=verify-ca (uselibpqcompat=true) checks the server's certificate against a CA you name: ` +
          "add sslrootcert=FILE\n"
      )
      const missing = join(tmp, "missing.crt")
      expect(await status(`sslmode=verify-full&sslrootcert=${missing}`)).toBe(
        `${REFUSED}: cannot read sslrootcert=${missing} (ENOENT)\n`
      )
    },
    240_000
  )

  it("sslmode=disable, or none, against a server that takes only SSL: its refusal and how to ask for SSL", async () => {
    for (const query of ["sslmode=disable", ""]) {
      expect(await status(query)).toBe(
        `${REFUSED}: no pg_hba.conf entry for host "127.0.0.1", user "rein", database "postgres", no encryption ` +
          "(SQLSTATE 28000): the server takes only SSL connections: add sslmode=verify-full&sslrootcert=FILE " +
          "(or uselibpqcompat=true&sslmode=require: encrypted, the certificate not checked)\n"
      )
    }
  }, 240_000)

  // Last: the server presents another certificate from here on.
  it(
    "a certificate signed by a CA not given: one line naming an unknown CA; with the CA as sslrootcert it connects",
    async () => {
      if (server === undefined || signed === undefined) throw new Error("no server")
      await Effect.runPromise(TestServer.setCertificate(server, signed))
      // The server reloads asynchronously: a few tries at most until it presents the new certificate.
      let first = ""
      for (let i = 0; i < 20 && first !== CONNECTED; i++) first = await status(`sslmode=verify-full&sslrootcert=${ca}`)
      expect(first).toBe(CONNECTED)
      const unknown = `${REFUSED}: the server's certificate is signed by a CA not trusted here ` +
        "(UNABLE_TO_VERIFY_LEAF_SIGNATURE): name that CA with sslrootcert=FILE\n"
      expect(await status("sslmode=require")).toBe(unknown)
      expect(await status(`sslmode=verify-full&sslrootcert=${self}`)).toBe(unknown)
      expect(await status("uselibpqcompat=true&sslmode=require")).toBe(CONNECTED)
    },
    240_000
  )
})
