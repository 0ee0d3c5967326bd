/**
 * The input of `rein batch`: a JSONL file, one item per line — a JSON string (the prompt), or an object
 * `{ "id", "prompt", "system"?, "inputTokens"?, "maxOutputTokens"? }`. Ids default to the line number and
 * must be unique (a resumed run matches records by id).
 *
 * @internal
 */
import type { FileSystem } from "@effect/platform"
import { Effect, Either, Schema } from "effect"
import { InputError } from "../InputError.js"
import { parseJson, readText } from "./files.js"
import { decodeWith, describe, PositiveInt } from "./schema.js"

/** @internal */
export interface PromptItem {
  readonly id: string
  readonly prompt: string
  readonly system?: string | undefined
  readonly inputTokens?: number | undefined
  readonly maxOutputTokens?: number | undefined
}

const Item = Schema.Struct({
  id: Schema.optional(Schema.NonEmptyTrimmedString),
  prompt: Schema.String,
  system: Schema.optional(Schema.String),
  inputTokens: Schema.optional(PositiveInt),
  maxOutputTokens: Schema.optional(PositiveInt)
})

const decodeItem = decodeWith(Item)

/** One parsed input line: a prompt string, or an item object; the error names the field. @internal */
export const decodeLine = (json: unknown): Either.Either<string | typeof Item.Type, string> =>
  typeof json === "string"
    ? Either.right(json)
    : typeof json === "object" && json !== null && !Array.isArray(json)
    ? decodeItem(json)
    : Either.left(`Expected a prompt string or an object with a "prompt", actual ${describe(json)}`)

/** @internal */
export const readPrompts = (
  path: string
): Effect.Effect<ReadonlyArray<PromptItem>, InputError, FileSystem.FileSystem> =>
  Effect.flatMap(readText(path, "input"), (text) => {
    const items: Array<PromptItem> = []
    const seen = new Map<string, number>()
    for (const [i, raw] of text.split("\n").entries()) {
      if (raw.trim() === "") continue
      const where = `${path}:${i + 1}`
      const json = parseJson(raw, where)
      if (Either.isLeft(json)) return Effect.fail(json.left)
      const line = decodeLine(json.right)
      if (Either.isLeft(line)) {
        return Effect.fail(new InputError({ message: `${where}: ${line.left.split("\n").join("; ")}` }))
      }
      const item: PromptItem = typeof line.right === "string"
        ? { id: `line-${i + 1}`, prompt: line.right }
        : { ...line.right, id: line.right.id ?? `line-${i + 1}` }
      const earlier = seen.get(item.id)
      if (earlier !== undefined) {
        return Effect.fail(
          new InputError({ message: `${where}: id ${JSON.stringify(item.id)} already used on line ${earlier}` })
        )
      }
      seen.set(item.id, i + 1)
      items.push(item)
    }
    return items.length === 0
      ? Effect.fail(new InputError({ message: `${path}: no items (one JSON prompt or object per line)` }))
      : Effect.succeed(items)
  })
