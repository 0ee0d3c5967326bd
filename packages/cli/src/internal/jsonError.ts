/**
 * Why a text is not JSON, said without quoting the text: V8's messages echo a piece of the input
 * (`Unexpected token 'a', "a: b…" is not valid JSON`), which may be a prompt, a secret in a file passed by
 * mistake, or terminal escape sequences. Here the problem is named by its place (line and column) and, for
 * an unexpected character, that one character, shown only when it is printable ASCII (else its code point).
 *
 * @internal
 */

// Above this size the place of an unexpected character is not searched for (it parses prefixes).
const SEARCH_LIMIT = 1024 * 1024

/** One character, shown safely: printable ASCII quoted, anything else as its code point. @internal */
export const showChar = (c: string): string => {
  const code = c.codePointAt(0) ?? 0
  return code >= 0x21 && code <= 0x7e
    ? `'${c}'`
    : `U+${code.toString(16).toUpperCase().padStart(4, "0")}`
}

/** Line and column (1-based, in UTF-16 units) of an offset in a text. @internal */
export const lineColumn = (text: string, offset: number): { readonly line: number; readonly column: number } => {
  let line = 1
  let start = 0
  for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) {
    line++
    start = i + 1
  }
  return { line, column: offset - start + 1 }
}

const failsBeforeEnd = (prefix: string): boolean => {
  try {
    JSON.parse(prefix)
    return false
  } catch (e) {
    const message = e instanceof Error ? e.message : ""
    const position = /at position (\d+)/.exec(message)
    // V8 says "Unexpected end", or names a position at the end (`{` → "Expected property name … position 1").
    return !/Unexpected end of JSON input/.test(message) && (position === null || Number(position[1]) < prefix.length)
  }
}

/**
 * Where an unexpected character is, when V8 does not say: the shortest prefix that fails other than by
 * ending early ends just after it (every shorter prefix is valid JSON or a valid start of it).
 */
const findUnexpected = (text: string): number | undefined => {
  if (text.length > SEARCH_LIMIT || !failsBeforeEnd(text)) return undefined
  let lo = 1
  let hi = text.length
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2)
    if (failsBeforeEnd(text.slice(0, mid))) hi = mid
    else lo = mid + 1
  }
  return lo - 1
}

const at = (text: string, offset: number, multiline: boolean): string => {
  const { column, line } = lineColumn(text, offset)
  return multiline ? `line ${line}, column ${column}` : `column ${column}`
}

/**
 * The reason `JSON.parse(text)` failed with `message`, naming the line and column (only the column when
 * `multiline` is false, for one line of a JSONL file) and never quoting the text.
 *
 * @internal
 */
export const describeJsonError = (text: string, message: string, multiline: boolean): string => {
  if (/Unexpected end of JSON input/.test(message)) return "the text ends before the JSON value does"
  const positioned = /^(.*?) in JSON at position (\d+)/.exec(message)
    ?? /^(Unexpected non-whitespace character after JSON) at position (\d+)/.exec(message)
  if (positioned !== null && !positioned[1]!.includes("\"")) {
    return `${positioned[1]} at ${at(text, Number(positioned[2]), multiline)}`
  }
  const offset = positioned !== null ? Number(positioned[2]) : findUnexpected(text)
  if (offset === undefined || offset >= text.length) return "not valid JSON"
  return `unexpected character ${showChar(String.fromCodePoint(text.codePointAt(offset)!))} at ${
    at(text, offset, multiline)
  }`
}
