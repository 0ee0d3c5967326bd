/**
 * `sslmode` in a `--store` connection string, as node-postgres 8 applies it. `prefer`, `require` and
 * `verify-ca` are verified as `verify-full` (the server's certificate must be valid for its host name: a
 * stricter reading than libpq's), and `pg-connection-string` says so in a multi-line `SECURITY WARNING` on
 * stderr for every such string. The CLI asks for that same behaviour by its own name, `verify-full`, so
 * nothing changes but the warning; `uselibpqcompat=true` in the string keeps libpq's meaning (`require`:
 * encrypted, the certificate not checked) and is passed through untouched. A connection that fails over SSL
 * says why in one line (`reasonOf`, `refusalHint`).
 *
 * @internal
 */
import { Predicate } from "effect"

/** The modes node-postgres 8 verifies as `verify-full` (and warns about). */
const AS_VERIFY_FULL = /([?&]sslmode=)(prefer|require|verify-ca)(?=[&#]|$)/g

/**
 * The connection string with `sslmode=prefer|require|verify-ca` written `verify-full`, unless it asks for
 * libpq's semantics (`uselibpqcompat=`). Any other string is returned as given.
 *
 * @internal
 */
export const asParsed = (store: string): string =>
  /[?&]uselibpqcompat=/.test(store) ? store : store.replace(AS_VERIFY_FULL, "$1verify-full")

/** The TLS refusals of a certificate that chains to no trusted root, by OpenSSL's code. */
const SELF_SIGNED = new Set(["DEPTH_ZERO_SELF_SIGNED_CERT", "SELF_SIGNED_CERT_IN_CHAIN"])
const UNKNOWN_CA = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_GET_ISSUER_CERT"
])

/** The longest list of a certificate's names a reason quotes. */
const NAMES_CHARS = 200

const field = (value: unknown, key: string): unknown => Predicate.hasProperty(value, key) ? value[key] : undefined

const text = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined)

/** The certificate files the string names (`sslrootcert=`, `sslcert=`, `sslkey=`), by their parameter. */
const files = (store: string): ReadonlyArray<readonly [string, string]> => {
  const query = store.indexOf("?")
  if (query < 0) return []
  const params = new URLSearchParams(store.slice(query + 1).split("#")[0])
  return ["sslrootcert", "sslcert", "sslkey"].flatMap((k) => {
    const v = params.get(k)
    return v === null ? [] : [[k, v] as const]
  })
}

/**
 * Why an SSL connection failed, in one line that says what to change, or `undefined` for another failure:
 * a server without SSL; a certificate that is self-signed, signed by an unknown CA, or not for the host
 * connected to (OpenSSL's code in parentheses); a certificate file that cannot be read; `verify-ca` with
 * libpq's meaning and no CA. It quotes no part of the string but a host name and a file name.
 *
 * @internal
 */
export const reasonOf = (cause: unknown, store: string): string | undefined => {
  const message = text(field(cause, "message"))
  const code = text(field(cause, "code"))
  // node-postgres's own words, which quote nothing of the string.
  if (message === "The server does not support SSL connections") {
    return ": the server does not support SSL connections (sslmode=disable, or leave sslmode out)"
  }
  if (message?.startsWith("SECURITY WARNING: Using sslmode=verify-ca requires specifying a CA") === true) {
    return ": sslmode=verify-ca (uselibpqcompat=true) checks the server's certificate against a CA you name: " +
      "add sslrootcert=FILE"
  }
  if (code === undefined) return undefined
  if (SELF_SIGNED.has(code)) {
    return `: the server's certificate is self-signed, and not trusted here (${code}): name it, or its CA, with ` +
      "sslrootcert=FILE (or uselibpqcompat=true&sslmode=require: encrypted, the certificate not checked)"
  }
  if (UNKNOWN_CA.has(code)) {
    return `: the server's certificate is signed by a CA not trusted here (${code}): name that CA with ` +
      "sslrootcert=FILE"
  }
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") {
    const host = text(field(cause, "host")) ?? "connected to"
    const names = text(field(field(cause, "cert"), "subjectaltname"))
    const bounded = names === undefined
      ? "none"
      : names.length > NAMES_CHARS
      ? `${names.slice(0, NAMES_CHARS)}…`
      : names
    return `: the server's certificate is not for the host ${host} (it names ${bounded}) (${code}): connect by a ` +
      "name it holds"
  }
  const file = files(store).find(([, value]) => value === text(field(cause, "path")))
  if (file !== undefined && /^E[A-Z]+$/.test(code)) return `: cannot read ${file[0]}=${file[1]} (${code})`
  return undefined
}

/**
 * What to add to a server's refusal of an unencrypted connection (`pg_hba.conf` has only `hostssl` for it:
 * `… no encryption`, SQLSTATE 28000): how to ask for SSL. Empty for any other refusal.
 *
 * @internal
 */
export const refusalHint = (sqlstate: string, message: string): string =>
  sqlstate === "28000" && message.endsWith(", no encryption")
    ? ": the server takes only SSL connections: add sslmode=verify-full&sslrootcert=FILE " +
      "(or uselibpqcompat=true&sslmode=require: encrypted, the certificate not checked)"
    : ""
