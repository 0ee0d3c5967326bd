/**
 * Internals of `Refine`: schema feedback that never quotes the decoded input, a budget that reserves
 * against two budgets in one transaction, and totals over a refinement's attempts.
 *
 * @internal
 */
import type { SchemaAST as AST } from "effect"
import { Either, ParseResult, Schema } from "effect"
import type { AttemptRecord } from "../Outcome.js"

/** @internal */
export interface Feedback {
  readonly path: string
  readonly message: string
}

/** At most this many feedback items are kept from one decode failure, so a revised prompt stays bounded. */
export const MAX_FEEDBACK = 20

const pathOf = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((p) => (typeof p === "number" ? `[${p}]` : String(p))).join(".").replace(/\.\[/g, "[")

// The expected side comes from the schema (authored), never from `actual` (the provider's text). Custom
// `message` annotations are not used either: they may interpolate the actual value.
const expected = (ast: AST.AST): string => `Expected ${String(ast)}`

// A key of an object the schema names (a struct's field, a tuple's index, a union's tag) is authored; any other
// (a record's key, an excess property) is the provider's text and is written `<key>`.
const keyOf = (parent: AST.AST | undefined, key: PropertyKey): PropertyKey =>
  parent?._tag === "TypeLiteral" && !parent.propertySignatures.some((p) => p.name === key) ? "<key>" : key

const walk = (
  issue: ParseResult.ParseIssue,
  path: ReadonlyArray<PropertyKey>,
  out: Array<Feedback>,
  parent?: AST.AST
): void => {
  if (out.length >= MAX_FEEDBACK) return
  switch (issue._tag) {
    case "Type":
    case "Forbidden":
      out.push({ path: pathOf(path), message: expected(issue.ast) })
      return
    case "Missing":
      out.push({ path: pathOf(path), message: "is missing" })
      return
    case "Unexpected":
      out.push({ path: pathOf(path), message: "is unexpected" })
      return
    case "Pointer": {
      const keys = Array.isArray(issue.path) ? issue.path : [issue.path]
      walk(issue.issue, [...path, ...keys.map((k) => keyOf(parent, k))], out)
      return
    }
    case "Composite": {
      const issues: ReadonlyArray<ParseResult.ParseIssue> = Array.isArray(issue.issues)
        ? issue.issues
        : [issue.issues as ParseResult.ParseIssue]
      for (const i of issues) walk(i, path, out, issue.ast)
      return
    }
    case "Refinement":
      if (issue.kind === "From") walk(issue.issue, path, out)
      else out.push({ path: pathOf(path), message: expected(issue.ast) })
      return
    case "Transformation":
      walk(issue.issue, path, out)
      return
  }
}

/**
 * The paths and expectations of a parse error, deduplicated, never its actual values.
 *
 * @internal
 */
export const feedbackOf = (error: ParseResult.ParseError): ReadonlyArray<Feedback> => {
  const out: Array<Feedback> = []
  walk(error.issue, [], out)
  const seen = new Set<string>()
  return out.filter((f) => {
    const key = `${f.path}\u0000${f.message}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

const FENCE = /^```[A-Za-z0-9_-]*\s*\n([\s\S]*?)\n?```$/

/**
 * Decodes a completion's text as JSON against a schema. A single surrounding Markdown code fence is
 * tolerated. A JSON syntax error is reported without the parser's message (it quotes the text).
 *
 * @internal
 */
export const decodeJson = <A, I>(schema: Schema.Schema<A, I, never>) => {
  const decode = Schema.decodeUnknownEither(schema, { errors: "all" })
  return (text: string): Either.Either<A, ReadonlyArray<Feedback>> => {
    const trimmed = text.trim()
    const body = FENCE.exec(trimmed)?.[1] ?? trimmed
    let parsed: unknown
    try {
      parsed = JSON.parse(body)
    } catch {
      return Either.left([{ path: "", message: "Expected a single valid JSON value" }])
    }
    return Either.mapLeft(decode(parsed), feedbackOf)
  }
}

/**
 * Total cost of attempts: unknown as soon as one dispatched attempt's usage is unknown (never 0).
 *
 * @internal
 */
export const totalCost = (attempts: Iterable<AttemptRecord>): number | "unknown" => {
  let total = 0
  for (const a of attempts) {
    if (a.usage === "unknown" && a.dispatched) return "unknown"
    total += a.charged.cost
  }
  return total
}

/**
 * An upper bound on the tokens of a text: its UTF-8 length (a token covers at least one byte).
 *
 * @internal
 */
export const tokenBound = (text: string): number => new TextEncoder().encode(text).length
