/**
 * How deep JSON text nests, read before `JSON.parse`: V8 parses a line of nested arrays (`[[[[…]]]]`) at
 * ~50 times its size in memory (a 10 MB line: ~550 MB), so every reader of JSON that a user or an artifact
 * gives refuses text nested deeper than `MAX_JSON_DEPTH` without parsing it.
 *
 * @internal
 */

/**
 * The deepest nesting of arrays and objects a reader accepts: far above any record, request or config Rein
 * reads (a journal record nests ~6 levels, an artifact record ~8 plus its `result`).
 *
 * @internal
 */
export const MAX_JSON_DEPTH = 256

const QUOTE = 34
const BACKSLASH = 92
const OPEN_ARRAY = 91
const OPEN_OBJECT = 123
const CLOSE_ARRAY = 93
const CLOSE_OBJECT = 125

/**
 * Whether `text` opens more than `max` arrays or objects inside one another, outside strings. A linear scan,
 * no allocation; text shorter than `max + 1` characters cannot, and is not scanned. Malformed text is left for
 * `JSON.parse` to refuse.
 *
 * @internal
 */
export const tooDeep = (text: string, max: number = MAX_JSON_DEPTH): boolean => {
  if (text.length <= max) return false
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === BACKSLASH) i++
      else if (c === QUOTE) inString = false
    } else if (c === QUOTE) {
      inString = true
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max) return true
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--
    }
  }
  return false
}

/** The message of text nested too deep, after its place (`file:line: `). @internal */
export const TOO_DEEP = `nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects (refused unparsed)`
