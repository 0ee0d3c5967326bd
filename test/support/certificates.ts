/**
 * Certificates made at test time with the machine's `openssl` (Debian's `openssl`, which `postgresql` brings in
 * through `ssl-cert`; .ci/run installs it): a self-signed server certificate, a CA and a server certificate it
 * signs. Node's `crypto` makes keys but no X.509 certificate. Elliptic-curve keys: made in milliseconds.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

/** PEM text of a certificate and its private key. */
export interface Pem {
  readonly cert: string
  readonly key: string
}

/** Whether this machine has `openssl`. */
export const available = (): boolean => {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

const openssl = (args: ReadonlyArray<string>): void => {
  execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] })
}

const KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

const read = (dir: string, name: string): Pem => ({
  cert: fs.readFileSync(path.join(dir, `${name}.crt`), "utf8"),
  key: fs.readFileSync(path.join(dir, `${name}.key`), "utf8")
})

/**
 * A self-signed certificate for `subjectAltName` (`IP:127.0.0.1`), valid for two days, written in `dir` as
 * `name.crt` and `name.key`.
 */
export const selfSigned = (dir: string, name: string, subjectAltName: string): Pem =>
  withExtensions(dir, name, [`subjectAltName=${subjectAltName}`])

/** A CA (`name.crt`, `name.key` in `dir`). */
export const authority = (dir: string, name: string): Pem =>
  withExtensions(dir, name, ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign"])

/** A self-signed certificate (`name.crt`, `name.key` in `dir`) with these extensions. */
const withExtensions = (dir: string, name: string, extensions: ReadonlyArray<string>): Pem => {
  openssl([
    "req",
    "-x509",
    ...KEY,
    "-keyout",
    path.join(dir, `${name}.key`),
    "-out",
    path.join(dir, `${name}.crt`),
    "-days",
    "2",
    "-subj",
    `/CN=${name}`,
    ...extensions.flatMap((extension) => ["-addext", extension])
  ])
  return read(dir, name)
}

/** A server certificate for `subjectAltName` signed by the CA `ca` (made by `authority` in `dir`). */
export const signedBy = (dir: string, ca: string, name: string, subjectAltName: string): Pem => {
  const csr = path.join(dir, `${name}.csr`)
  const ext = path.join(dir, `${name}.ext`)
  openssl(["req", "-new", ...KEY, "-keyout", path.join(dir, `${name}.key`), "-out", csr, "-subj", `/CN=${name}`])
  fs.writeFileSync(ext, `subjectAltName=${subjectAltName}\nbasicConstraints=CA:FALSE\n`)
  openssl([
    "x509",
    "-req",
    "-in",
    csr,
    "-CA",
    path.join(dir, `${ca}.crt`),
    "-CAkey",
    path.join(dir, `${ca}.key`),
    "-CAcreateserial",
    "-days",
    "2",
    "-extfile",
    ext,
    "-out",
    path.join(dir, `${name}.crt`)
  ])
  return read(dir, name)
}
