/**
 * The password of a `--store` string (internal/password.ts): the one reader behind the Ctrl-C line's masked
 * command line and the masked server messages. The password is checked against node-postgres's own reading of
 * the string (pg-connection-string, the parser `rein` connects with).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import { realpathSync } from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as Interrupt from "../src/internal/interrupt.js"
import * as Password from "../src/internal/password.js"

// pg-connection-string, as node-postgres (a dependency of @effect/sql-pg) loads it.
const sqlPg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../node_modules/@effect/sql-pg/package.json")
const pg = createRequire(realpathSync(sqlPg)).resolve("pg")
const { parse } = createRequire(pg)("pg-connection-string") as {
  readonly parse: (store: string) => { readonly password?: string | null }
}

/** The password node-postgres sends; none when it cannot read the string (a raw space beside `%E2%80…`). */
const sentBy = (store: string): string => {
  try {
    return parse(store).password ?? ""
  } catch {
    return ""
  }
}

/** One character of a password: the ones a URL gives a meaning to, escapes, and any Unicode grapheme but `*`. */
const character = fc.oneof(
  fc.constantFrom("@", ":", "%", "/", "?", "#", "&", "+", "=", " ", "'", "\"", "%zz", "%4", "ä", "€", "😀", "\\"),
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 1 }).filter((c) => !c.includes("*"))
)

/**
 * A password and how it is written: each character percent-encoded or as it is, where it may stand raw (a raw
 * `/`, `?` or `#` would end the authority; a raw `&` or `#` the parameter).
 */
const written = (forbidden: RegExp) =>
  fc.array(fc.tuple(character, fc.boolean()), { minLength: 1, maxLength: 12 }).map((cs) => ({
    password: cs.map(([c]) => c).join(""),
    written: cs.map(([c, raw]) => (raw && !forbidden.test(c) ? c : encodeURIComponent(c))).join("")
  }))

const inUserInfo = written(/[/?#]/).map((p) => ({
  ...p,
  store: `postgres://rein:${p.written}@127.0.0.1:5432/db?sslmode=require`,
  shown: "postgres://rein:***@127.0.0.1:5432/db?sslmode=require"
}))
const inParameter = written(/[&#]/).map((p) => ({
  ...p,
  store: `postgres://rein@127.0.0.1:5432/db?password=${p.written}&sslmode=require`,
  shown: "postgres://rein@127.0.0.1:5432/db?password=***&sslmode=require"
}))

describe("the password of a --store string", () => {
  it.effect.prop(
    "masked: the string shows *** exactly where it is written; a message holds none of its forms",
    [fc.oneof(inUserInfo, inParameter)],
    ([p]) =>
      Effect.sync(() => {
        expect(URL.canParse(p.store)).toBe(true)
        expect(Password.maskStore(p.store)).toBe(p.shown)
        // What node-postgres sends the server, the password as written, and as meant (unless a raw `%` starts
        // an escape: `%` `4` `1` written raw is an `A` to every reader).
        const sent = sentBy(p.store)
        const meant = /%[0-9a-f]{2}/i.test(p.written.replace(/%(?:[0-9A-F]{2})/g, "")) ? "" : p.password
        const forms = [sent, meant, p.written].filter((f) => f !== "")
        const message = `FATAL: invalid value "${sent}" for "${p.password}" (${p.written})`
        const masked = Password.maskIn(message, p.store)
        for (const form of forms) expect(masked).not.toContain(form)
        if (sent !== "") expect(Password.passwordsOf(p.store)).toContain(sent)
        // The Ctrl-C line: the same mask, as a shell word.
        const line = Interrupt.rejoinMessage("r", ["node", "/bin/rein", "worker", "--store", p.store], "/", {})
        expect(line).toContain(`'${p.shown}'`)
        expect(line).toMatch(/\(with the password for \*\*\*\)$/)
      }),
    { fastCheck: { numRuns: 200, seed: 18 } }
  )

  it("a string without a password is shown as given; an empty password is none", () => {
    for (
      const store of [
        "postgres://rein@127.0.0.1:5432/db",
        "postgres://127.0.0.1/db?user=a@b:c",
        "postgres://rein:@127.0.0.1/db?password=",
        "not a url: rein:x"
      ]
    ) {
      expect(Password.maskStore(store)).toBe(store)
      expect(Password.passwordsOf(store)).toEqual([])
      expect(Password.maskIn("rein:x@b:c", store)).toBe("rein:x@b:c")
    }
  })

  it("both places at once; --store= and a string that is no URL (a raw / in the password) are masked too", () => {
    expect(Password.maskStore("postgres://u:a%40b@h/db?Password=c+d&x=1")).toBe(
      "postgres://u:***@h/db?Password=***&x=1"
    )
    expect(Password.maskIn("a@b, a%40b, c d, c+d", "postgres://u:a%40b@h/db?password=c+d")).toBe("***, ***, ***, ***")
    // Not a URL (the authority ends at the raw `/`): the user info runs to the last `@`.
    expect(Password.maskStore("postgres://u:pa/ss@h/db")).toBe("postgres://u:***@h/db")
    const line = Interrupt.rejoinMessage("r", ["node", "rein", "worker", "--store=postgres://u:pä@h/d"], "/", {})
    expect(line).toContain("'--store=postgres://u:***@h/d'")
  })
})
