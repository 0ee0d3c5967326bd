/**
 * Outcome errors are values: returned to the caller, recorded, counted. A stack captured where the
 * executor builds one points into Rein's internals and tells the caller nothing, while capturing it is
 * among the costliest steps of a cancelled or timed-out request (a thousand of them at a batch stop).
 *
 * @internal
 */

/** Builds an error without capturing a stack trace. @internal */
export const stackless = <A>(make: () => A): A => {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return make()
  } finally {
    Error.stackTraceLimit = limit
  }
}

/** Where `Data.Error` (the base of every `Schema.TaggedError`) keeps the fields it was built with. */
const PLAIN_ARGS = Symbol.for("effect/Data/Error/plainArgs")

/** A `Schema.TaggedError` class, as `construct` sees it: its constructor and its static tag. */
type TaggedClass<P, A> = (new(props: P, options: true) => A) & { readonly _tag?: unknown }

/** Per class: whether `quick` builds what its constructor builds (checked at its first construction). */
const quickFor = new WeakMap<object, boolean>()

/**
 * `stackless(() => new Class(props, true))` (validation off, as Rein builds its outcomes), without the work
 * Schema's class constructor does per field and per call: a copy of the props, every field looked up for a
 * default, the constructors of `Data.Error` and its bases in turn. The error is the native `Error` with the
 * class's prototype, then exactly what those constructors put on it, in their order: the fields, `_tag`, and
 * the fields `Data.Error` keeps for `toJSON` and equality. That is ≈ 5× cheaper, and an expiry builds one per
 * request (`DeadlineExceeded`): the largest of Rein's own costs between a deadline's timer and its outcome.
 *
 * `props` must be a fresh object of the caller's: it becomes the error's kept fields (the constructor copies it).
 *
 * Only for a class whose fields have no default but `_tag` and whose instance gains nothing else in its
 * constructors: the first construction of each class runs the constructor and this both, and compares the
 * two (prototype, every own key in order, every descriptor, the kept fields); on any difference (another
 * Effect version's constructors, a class field) the class is built by its constructor from then on.
 *
 * @internal
 */
export const construct = <P extends object, A extends object>(Class: TaggedClass<P, A>, props: P): A => {
  const ok = quickFor.get(Class)
  if (ok === true) {
    // `stackless`, without a closure per call.
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    try {
      return quick(Class, props)
    } finally {
      Error.stackTraceLimit = limit
    }
  }
  const made = stackless(() => new Class(props, true))
  if (ok === undefined) quickFor.set(Class, eligible(Class) && sameShape(made, stackless(() => quick(Class, props))))
  return made
}

/** What `new Class(props, true)`'s constructors do, in their order (see `construct`). */
const quick = <P extends object, A extends object>(Class: TaggedClass<P, A>, props: P): A => {
  // The props are the caller's fresh object: kept as they are, where the constructor keeps a copy.
  const args = props as Record<PropertyKey, unknown>
  // Schema's constructor drops a `_tag` given and sets the class's own last (its field's default).
  if ("_tag" in args) delete args._tag
  args._tag = Class._tag
  const error = Reflect.construct(
    Error,
    [args.message, args.cause ? { cause: args.cause } : undefined],
    Class
  ) as A
  Object.assign(error, args)
  Object.defineProperty(error, PLAIN_ARGS, { value: args, enumerable: false })
  return error
}

/** A tagged class whose only default is its tag, and whose tag is a string. */
const eligible = (Class: { readonly _tag?: unknown }): boolean => {
  const fields = (Class as { readonly fields?: Record<PropertyKey, unknown> }).fields
  if (typeof Class._tag !== "string" || fields === undefined) return false
  return Reflect.ownKeys(fields).every((key) => key === "_tag" || defaultOf(fields[key]) === undefined)
}

/** A field's default, read as Schema's constructor reads it (`undefined`: none, or not a property signature). */
const defaultOf = (field: unknown): unknown => {
  if (typeof field !== "object" || field === null || !("ast" in field)) return undefined
  const ast =
    (field as { readonly ast: { readonly _tag?: unknown; readonly defaultValue?: unknown; readonly to?: unknown } })
      .ast
  if (ast._tag === "PropertySignatureDeclaration") return ast.defaultValue
  if (ast._tag === "PropertySignatureTransformation") {
    return (ast.to as { readonly defaultValue?: unknown } | undefined)?.defaultValue
  }
  return undefined
}

/** The same prototype, own keys in the same order, the same descriptors and values (the stack's text aside). */
const sameShape = (a: object, b: object): boolean => {
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false
  const keys = Reflect.ownKeys(a)
  const others = Reflect.ownKeys(b)
  if (keys.length !== others.length || keys.some((key, i) => key !== others[i])) return false
  return keys.every((key) => {
    const x = Object.getOwnPropertyDescriptor(a, key)!
    const y = Object.getOwnPropertyDescriptor(b, key)!
    if (
      x.enumerable !== y.enumerable || x.configurable !== y.configurable || x.writable !== y.writable ||
      typeof x.get !== typeof y.get || typeof x.set !== typeof y.set
    ) return false
    if (key === "stack") return typeof x.value === typeof y.value
    if (key === PLAIN_ARGS) return sameFields(x.value, y.value)
    return x.value === y.value
  })
}

/** Two plain records with the same keys in the same order and the same values. */
const sameFields = (a: unknown, b: unknown): boolean => {
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) return a === b
  const keys = Reflect.ownKeys(a)
  const others = Reflect.ownKeys(b)
  return keys.length === others.length &&
    keys.every((key, i) =>
      key === others[i] && (a as Record<PropertyKey, unknown>)[key] === (b as Record<PropertyKey, unknown>)[key]
    )
}
