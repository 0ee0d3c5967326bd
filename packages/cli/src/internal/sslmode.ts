/**
 * `sslmode` in a `--store` connection string, as node-postgres 8 applies it. `prefer`, `require` and
 * `verify-ca` are verified as `verify-full` (the server's certificate must be valid for its host name: a
 * stricter reading than libpq's), and `pg-connection-string` says so in a multi-line `SECURITY WARNING` on
 * stderr for every such string. The CLI asks for that same behaviour by its own name, `verify-full`, so
 * nothing changes but the warning; `uselibpqcompat=true` in the string keeps libpq's meaning (`require`:
 * encrypted, the certificate not checked) and is passed through untouched.
 *
 * @internal
 */

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
