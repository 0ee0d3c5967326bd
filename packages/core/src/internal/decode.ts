/**
 * Decoding at the edge: one formatter that turns a Schema parse error into lines naming each field, and
 * one way to show the offending value in them.
 *
 * Input at the edge is hostile by assumption: arrays nested 100,000 deep, null-prototype objects (no
 * `toString`), megabyte strings, symbols, proxies. Effect's default messages print the whole value
 * (recursively, so deep nesting overflows the stack) and `String(value)` throws on a null-prototype
 * object. Every message Rein writes shows a value through `describe`, which never throws and never prints
 * more than a few hundred characters, and the formatter writes its own default messages with it.
 *
 * @internal
 */
import { Array as Arr, Either, Option, ParseResult, Schema, SchemaAST } from "effect"

const MAX_STRING = 40
const MAX_ITEMS = 3
const MAX_DEPTH = 2
const MAX_ISSUES = 10

const excerpt = (s: string): string =>
  s.length <= MAX_STRING ? JSON.stringify(s) : `${JSON.stringify(s.slice(0, MAX_STRING))}… (${s.length} characters)`

const SIMPLE_KEY = /^[A-Za-z_$][\w$-]*$/

const showKey = (key: string): string => key.length <= MAX_STRING && SIMPLE_KEY.test(key) ? key : excerpt(key)

const more = (shown: number, total: number): Array<string> => total > shown ? [`… ${total - shown} more`] : []

const showArray = (items: ReadonlyArray<unknown>, depth: number): string => {
  if (items.length === 0) return "[]"
  if (depth >= MAX_DEPTH) return "[…]"
  const shown: Array<string> = []
  for (let i = 0; i < Math.min(items.length, MAX_ITEMS); i++) shown.push(show(items[i], depth + 1))
  return `[${[...shown, ...more(shown.length, items.length)].join(", ")}]`
}

const showObject = (o: object, depth: number): string => {
  const proto = Object.getPrototypeOf(o) as unknown
  if (proto !== null && proto !== Object.prototype) {
    // A class instance (Date, Map, a user's class): its kind, never its own rendering (which may throw).
    return `a ${Object.prototype.toString.call(o).slice(8, -1)}`
  }
  const keys = Object.keys(o)
  if (keys.length === 0) return "{}"
  if (depth >= MAX_DEPTH) return "{…}"
  const shown: Array<string> = []
  for (const key of keys.slice(0, MAX_ITEMS)) {
    // Only data properties are read: a getter may throw or be expensive.
    const property = Object.getOwnPropertyDescriptor(o, key)
    shown.push(
      `${showKey(key)}: ${property !== undefined && "value" in property ? show(property.value, depth + 1) : "…"}`
    )
  }
  return `{ ${[...shown, ...more(shown.length, keys.length)].join(", ")} }`
}

const show = (u: unknown, depth: number): string => {
  switch (typeof u) {
    case "string":
      return excerpt(u)
    case "number":
      return Object.is(u, -0) ? "-0" : String(u)
    case "bigint": {
      const digits = String(u)
      return digits.length <= MAX_STRING ? `${digits}n` : `${digits.slice(0, MAX_STRING)}…n`
    }
    case "boolean":
    case "undefined":
      return String(u)
    case "symbol":
      return "a symbol"
    case "function":
      return "a function"
  }
  if (u === null) return "null"
  return Array.isArray(u) ? showArray(u, depth) : showObject(u as object, depth)
}

/**
 * A short, safe rendering of any value for an error message: strings quoted and cut at 40 characters,
 * at most 3 items or keys per level, 2 levels deep. Never throws (a revoked proxy is "an unreadable value").
 *
 * @internal
 */
export const describe = (u: unknown): string => {
  try {
    return show(u, 0)
  } catch {
    return "an unreadable value"
  }
}

/**
 * A message annotation: `Expected <what>, actual <the value, shown safely>`.
 *
 * @internal
 */
export const expected = (what: string) => (issue: { readonly actual: unknown }): string =>
  `Expected ${what}, actual ${describe(issue.actual)}`

/**
 * A number with a condition, and one message for every way to miss it: a value that is not a number at
 * all (a string, a deeply nested array, a null-prototype object) reads the same as one out of range.
 *
 * @internal
 */
export const numberWhere = (what: string, ok: (n: number) => boolean): Schema.Schema<number> =>
  Schema.Number.pipe(Schema.filter(ok, { message: (issue) => ({ message: expected(what)(issue), override: true }) }))

/** A finite number ≥ 0. @internal */
export const NonNegativeNumber = numberWhere("a non-negative finite number", (n) => Number.isFinite(n) && n >= 0)
/** A finite number > 0. @internal */
export const PositiveNumber = numberWhere("a positive finite number", (n) => Number.isFinite(n) && n > 0)
/** An integer ≥ 0. @internal */
export const NonNegativeInt = numberWhere("a non-negative integer", (n) => Number.isSafeInteger(n) && n >= 0)
/** An integer ≥ 1. @internal */
export const PositiveInt = numberWhere("a positive integer", (n) => Number.isSafeInteger(n) && n >= 1)
/** A number in [0, 1]. @internal */
export const Fraction = numberWhere("a number between 0 and 1", (n) => n >= 0 && n <= 1)

/**
 * A non-empty array whose errors say so in words: an empty one reads `Expected at least one <noun>, actual
 * []` (Effect's default is "0: is missing"), anything else than an array `Expected an array of at least one
 * <noun>, actual …`, and a bad item keeps its own message and path.
 *
 * @internal
 */
export const nonEmptyArray = <A, I>(item: Schema.Schema<A, I>, noun: string) =>
  Schema.NonEmptyArray(item).annotations({
    message: (issue) =>
      Array.isArray(issue.actual) && issue.actual.length > 0
        // A bad item: its own message (a non-override message on a composite defers to the inner ones).
        ? { message: "", override: false }
        : {
          message: expected(`${Array.isArray(issue.actual) ? "" : "an array of "}at least one ${noun}`)(issue),
          override: true
        }
  })

const isRecordLike = (u: unknown): u is object => typeof u === "object" && u !== null && !Array.isArray(u)

const entries = <A>(
  input: unknown,
  ast: SchemaAST.AST,
  each: (value: unknown) => Either.Either<A, ParseResult.ParseIssue>
): Either.Either<{ readonly [key: string]: A }, ParseResult.ParseIssue> => {
  if (!isRecordLike(input)) return Either.left(new ParseResult.Type(ast, input))
  const out: Record<string, A> = Object.create(null)
  const issues: Array<ParseResult.ParseIssue> = []
  for (const key of Object.keys(input)) {
    const property = Object.getOwnPropertyDescriptor(input, key)
    const result = each(property !== undefined && "value" in property ? property.value : undefined)
    if (Either.isLeft(result)) issues.push(new ParseResult.Pointer(key, input, result.left))
    else out[key] = result.right
  }
  return Arr.isNonEmptyArray(issues) ? Either.left(new ParseResult.Composite(ast, input, issues)) : Either.right(out)
}

/**
 * A record keyed by strings, every key kept as data: `Schema.Record` assigns each key to a plain object, so
 * a `"__proto__"` key silently replaces the result's prototype (its entry is lost) and a lookup of an
 * absent `"constructor"` finds `Object.prototype`'s. This one decodes into a null-prototype object.
 *
 * @internal
 */
export const OwnRecord = <A, I>(
  value: Schema.Schema<A, I>
): Schema.Schema<{ readonly [key: string]: A }, { readonly [key: string]: I }> =>
  Schema.declare([value], {
    decode: (item) => {
      const decode = ParseResult.decodeUnknownEither(item)
      return (input, options, ast) => entries(input, ast, (v) => decode(v, options))
    },
    encode: (item) => {
      const encode = ParseResult.encodeUnknownEither(item)
      return (input, options, ast) => entries(input, ast, (v) => encode(v, options))
    }
  }, { description: "an object" })

/** What a schema expects, in a person's words (Effect's default prints the schema's internals). */
const expectation = (ast: SchemaAST.AST): string => {
  // A description is written for people (Effect's keywords carry one: "a number"); a refinement's title or
  // identifier names its condition ("EndpointId"), a class's would name our type, not the input's shape.
  const description = SchemaAST.getDescriptionAnnotation(ast)
  if (Option.isSome(description)) return description.value
  const annotated = SchemaAST.getTitleAnnotation(ast).pipe(Option.orElse(() => SchemaAST.getIdentifierAnnotation(ast)))
  if (Option.isSome(annotated) && ast._tag === "Refinement") return annotated.value
  switch (ast._tag) {
    case "StringKeyword":
      return "a string"
    case "NumberKeyword":
      return "a number"
    case "BooleanKeyword":
      return "a boolean"
    case "UndefinedKeyword":
      return "undefined"
    case "Literal":
      return describe(ast.literal)
    case "TupleType":
      return "an array"
    case "TypeLiteral":
    case "Declaration":
    case "ObjectKeyword":
      return "an object"
    case "Refinement":
      return expectation(ast.from)
    case "Transformation":
      return expectation(ast.from)
    case "Suspend":
      return expectation(ast.f())
    case "Union":
      return [...new Set(ast.types.map(expectation))].join(" or ")
    default:
      return Option.getOrElse(annotated, () => "a different value")
  }
}

const isSingle = (
  issues: ParseResult.SingleOrNonEmpty<ParseResult.ParseIssue>
): issues is ParseResult.ParseIssue => !Array.isArray(issues)

/** The issue tree with every default message written safely (the rest of the tree as it was). */
const safe = (issue: ParseResult.ParseIssue): ParseResult.ParseIssue => {
  switch (issue._tag) {
    case "Type":
      return issue.message !== undefined ? issue : new ParseResult.Type(
        issue.ast,
        issue.actual,
        `Expected ${expectation(issue.ast)}, actual ${describe(issue.actual)}`
      )
    case "Pointer":
      return new ParseResult.Pointer(issue.path, issue.actual, safe(issue.issue))
    case "Refinement":
      return new ParseResult.Refinement(issue.ast, issue.actual, issue.kind, safe(issue.issue))
    case "Transformation":
      return new ParseResult.Transformation(issue.ast, issue.actual, issue.kind, safe(issue.issue))
    case "Composite": {
      if (isSingle(issue.issues)) return new ParseResult.Composite(issue.ast, issue.actual, safe(issue.issues))
      // A wide bad value (10,000 bad items) is reported by its first problems and a count of the rest.
      const [head, ...tail] = issue.issues
      const shown: Arr.NonEmptyArray<ParseResult.ParseIssue> = [safe(head), ...tail.slice(0, MAX_ISSUES - 1).map(safe)]
      const left = issue.issues.length - shown.length
      return new ParseResult.Composite(
        issue.ast,
        issue.actual,
        left === 0 ? shown : [...shown, new ParseResult.Type(issue.ast, issue.actual, `… and ${left} more problems`)],
        issue.output
      )
    }
    default:
      return issue
  }
}

const showSegment = (p: PropertyKey): string => typeof p === "string" ? showKey(p) : String(p)

/**
 * Formats a parse error as lines of `path: message`, e.g. `deadline: Expected a positive finite duration…`.
 * The one formatter of every decoder at the edge: it never throws, whatever the input was.
 *
 * @internal
 */
export const formatParseError = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatIssueSync(safe(error.issue))
    // An optional field's union with `undefined` adds a second, useless line ("Expected undefined").
    .filter((issue, _, all) => all.length === 1 || !issue.message.startsWith("Expected undefined, actual"))
    .map((issue) =>
      issue.path.length === 0 ? issue.message : `${issue.path.map(showSegment).join(".")}: ${issue.message}`
    )
    .join("\n")

/**
 * `make()` on the first call, its result kept for every later one: for a parser (`Schema.decodeUnknownEither`
 * and the like compile theirs when called) that a module needs only on some paths, so that loading the
 * module does not compile it.
 *
 * @internal
 */
export const onFirstUse = <A>(make: () => A): () => A => {
  let made: { readonly value: A } | undefined
  return () => (made ??= { value: make() }).value
}

/**
 * A decoder refusing unknown fields, with every problem named. Its parser is compiled on the first input,
 * not when the decoder is made: modules make their decoders at load, and a command that never reads one of
 * those inputs should not compile it (start-up of the `rein` binary, bench/PROFILE.md).
 *
 * @internal
 */
export const decodeWith = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = onFirstUse(() => Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" }))
  return (input: unknown): Either.Either<A, string> => Either.mapLeft(decode()(input), formatParseError)
}
