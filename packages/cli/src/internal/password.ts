/**
 * The password in a `--store` connection string, the one reader of it in the CLI: where it is written (the
 * URL's user info, `postgres://user:PASSWORD@host/…`, and a `password=` parameter), every form it may take
 * where the CLI prints (as written, percent-decoded, decoded as node-postgres decodes it), and the masks
 * built on them: the string shown with `***` in its place (a command line echoed on Ctrl-C), and any text
 * with every form replaced by `***` (a server's error message).
 *
 * The same reader masks every other value on a command line that may carry a secret (`--base-url`, `--otlp`,
 * a stray word): a URL's user info, and a query parameter naming a password, key, token, secret or signature
 * (`?key=…`, `&access_token=…`). A command line is only ever echoed through `maskWord`/`maskerOf`.
 *
 * @internal
 */

/** The mask. */
const MASK = "***"

/** `scheme://`: a string without it has no user info. */
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//

/**
 * A secret parameter's value: `password=` (any case: pg reads `password`, and a `PASSWORD` is a secret all the
 * same), and the names URLs carry keys and tokens under (`key`, `api_key`, `access_token`, `secret`, `sig`…).
 */
const PARAMETER =
  /[?&](?:(?:ssl)?password|passwd|pwd|secret|client[-_]?secret|key|api[-_]?key|(?:access[-_]?|auth[-_]?)?token|auth|sig|signature)=([^&#]*)/gi

/**
 * Where the password is written: [start, end) of the user info's password and of each `password=` value,
 * non-empty, sorted and merged. The user info ends at the authority's last `@` (as URL parsers read it): in a string that
 * is not a URL, at the string's last `@` (a password with a raw `/`, `?` or `#` cuts the authority short).
 */
const spans = (store: string): ReadonlyArray<readonly [number, number]> => {
  const found: Array<readonly [number, number]> = []
  const scheme = SCHEME.exec(store)
  if (scheme !== null) {
    const from = scheme[0].length
    const rest = store.slice(from)
    const delimiter = rest.search(/[/?#]/)
    const authority = URL.canParse(store) && delimiter >= 0 ? rest.slice(0, delimiter) : rest
    const at = authority.lastIndexOf("@")
    const colon = at < 0 ? -1 : authority.slice(0, at).indexOf(":")
    if (colon >= 0 && colon + 1 < at) found.push([from + colon + 1, from + at])
  }
  for (const match of store.matchAll(PARAMETER)) {
    const end = match.index + match[0].length
    if (match[1] !== undefined && match[1] !== "") found.push([end - match[1].length, end])
  }
  const merged: Array<readonly [number, number]> = []
  for (const span of found.sort((a, b) => a[0] - b[0])) {
    const last = merged[merged.length - 1]
    if (last !== undefined && span[0] <= last[1]) merged[merged.length - 1] = [last[0], Math.max(last[1], span[1])]
    else merged.push(span)
  }
  return merged
}

/** `decode(text)`, or `undefined` where it throws (a malformed escape, `%ZZ`). */
const attempt = (decode: (text: string) => string, text: string): string | undefined => {
  try {
    return decode(text)
  } catch {
    return undefined
  }
}

/** Each run of valid escapes decoded, a malformed one (`%zz`) left as written. */
const lenient = (text: string): string =>
  text.replace(/(?:%[0-9a-f]{2})+/gi, (run) => attempt(decodeURIComponent, run) ?? run)

/** A parameter's value as `URLSearchParams` reads it (`+` is a space). */
const searchDecoded = (text: string): string => new URLSearchParams(`p=${text}`).get("p") ?? ""

/**
 * node-postgres (pg-connection-string) first re-encodes a string holding a space or a `%` that starts no
 * escape (`encodeURI`, then `%25` before two digits back to `%`): the forms a password then decodes to.
 */
const asPgRewrites = (text: string): string => encodeURI(text).replace(/%25(\d\d)/g, "%$1")

/**
 * Every form the string's password may take where the CLI prints: as written, percent-decoded (as
 * node-postgres sends it to the server; a malformed escape left as written), as the URL parser normalizes it and as node-postgres decodes a string
 * it re-encoded first; for a `password=` parameter, also with `+` as a space. Non-empty, distinct, longest first
 * (so a form inside a longer one is masked within it). None when the string has no password.
 *
 * @internal
 */
export const passwordsOf = (store: string): ReadonlyArray<string> => {
  const forms = new Set<string>()
  for (const [start, end] of spans(store)) {
    const written = store.slice(start, end)
    forms.add(written)
    for (const text of [written, attempt(asPgRewrites, written)]) {
      if (text === undefined) continue
      forms.add(attempt(decodeURIComponent, text) ?? lenient(text))
      forms.add(attempt(searchDecoded, text) ?? text)
      forms.add(lenient(text.replaceAll("+", " ")))
    }
  }
  if (URL.canParse(store)) {
    const normalized = new URL(store).password
    forms.add(normalized)
    forms.add(attempt(decodeURIComponent, normalized) ?? normalized)
  }
  forms.delete("")
  return [...forms].sort((a, b) => b.length - a.length)
}

/**
 * The connection string with its password shown as `***` (in the user info and in `password=`); a string with
 * none is returned as given.
 *
 * @internal
 */
export const maskStore = (store: string): string => {
  let shown = ""
  let at = 0
  for (const [start, end] of spans(store)) {
    shown += `${store.slice(at, start)}${MASK}`
    at = end
  }
  return shown + store.slice(at)
}

/**
 * `text` (a server's error message) with every form of the store's password replaced by `***`.
 *
 * @internal
 */
export const maskIn = (text: string, store: string): string =>
  passwordsOf(store).reduce((masked, password) => masked.replaceAll(password, MASK), text)

/** `--flag=` at the start of a command-line word. */
const FLAG_EQUALS = /^--[\w-]+=/

/**
 * A command-line word with any secret it carries shown as `***`: the value of a `--flag=value` word, or
 * the word itself (the value after `--store`, `--base-url`, `--otlp`, or a stray one). A word with none is
 * returned as given.
 *
 * @internal
 */
export const maskWord = (word: string): string => {
  const flag = FLAG_EQUALS.exec(word)
  return flag === null ? maskStore(word) : `${flag[0]}${maskStore(word.slice(flag[0].length))}`
}

/**
 * A mask for any text printed while `words` (a command line's arguments) are in hand: each word carrying a
 * secret replaced by its masked form, then every form of each secret by `***` (a message quoting a value
 * in part or decoded). The identity when no word carries one.
 *
 * @internal
 */
export const maskerOf = (words: ReadonlyArray<string>): (text: string) => string => {
  const carrying = words.filter((w) => maskWord(w) !== w).sort((a, b) => b.length - a.length)
  if (carrying.length === 0) return (text) => text
  const secrets = [...new Set(carrying.flatMap((w) => passwordsOf(w.replace(FLAG_EQUALS, ""))))]
    .sort((a, b) => b.length - a.length)
  return (text) =>
    secrets.reduce(
      (masked, secret) => masked.replaceAll(secret, MASK),
      carrying.reduce((masked, word) => masked.replaceAll(word, maskWord(word)), text)
    )
}
