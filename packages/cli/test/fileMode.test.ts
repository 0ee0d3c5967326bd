import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc, Option } from "effect"
import { decodeFileMode } from "../src/internal/options.js"

const decoded = (typed: string) => Effect.either(decodeFileMode(Option.some(typed)))

describe("--file-mode", () => {
  it.effect("takes the permissions of a data file its owner can read and write (600, 640, 644, 660, 666)", () =>
    Effect.gen(function*() {
      for (const [typed, mode] of [["600", 0o600], ["640", 0o640], ["0644", 0o644], ["660", 0o660], ["666", 0o666]]) {
        expect(yield* decoded(typed as string)).toStrictEqual(Either.right(mode))
      }
    }))

  it.effect(
    "refuses a mode its owner could not resume from (no read or no write) and execute, setuid, setgid or sticky bits",
    () =>
      Effect.gen(function*() {
        for (const typed of ["0", "200", "400", "000", "7777", "4600", "1600", "700", "755", "611", "0601"]) {
          const result = yield* decoded(typed)
          expect(Either.isLeft(result), typed).toBe(true)
          if (Either.isLeft(result)) {
            expect(result.left.message).toBe(
              `--file-mode: Expected octal permissions like 600 or 640: the owner reads and writes, no execute, ` +
                `setuid, setgid or sticky bit; actual "${typed}"`
            )
          }
        }
      })
  )

  it.effect.prop(
    "a mode is taken exactly when it holds the owner's read and write and nothing beyond read and write",
    [fc.integer({ min: 0, max: 0o7777 })],
    ([mode]) =>
      Effect.gen(function*() {
        const result = yield* decoded(mode.toString(8))
        const usable = (mode & 0o600) === 0o600 && (mode & ~0o666) === 0
        expect(result).toStrictEqual(usable ? Either.right(mode) : Either.left(expect.anything()))
      })
  )
})
