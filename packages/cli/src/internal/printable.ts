/**
 * Text the command did not write (a provider's answer, an item id from the input, a request id from a journal)
 * as it may be shown on a terminal: every character a terminal acts on — C0 controls, DEL, C1 controls, the
 * line and paragraph separators, bidirectional overrides and isolates — written as its escape (`\u001b`), so
 * such text cannot move the cursor, clear the screen, retitle the window, ring the bell, reorder what is shown
 * or forge a line of rein's own. `--json` output needs none of this: JSON escapes them itself.
 *
 * @internal
 */

// eslint-disable-next-line no-control-regex
const ACTS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/
const ACTS_ALL = new RegExp(ACTS.source, "g")
/** The same, but line feeds and tabs: an answer's own lines. */
// eslint-disable-next-line no-control-regex
const ACTS_BUT_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/
const ACTS_BUT_LINES_ALL = new RegExp(ACTS_BUT_LINES.source, "g")

const escape = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`

/**
 * `text` with every character a terminal acts on escaped; with `keepLines`, line feeds and tabs are kept.
 * Text without one is returned as it is (no copy).
 *
 * @internal
 */
export const printable = (text: string, keepLines = false): string =>
  keepLines
    ? ACTS_BUT_LINES.test(text) ? text.replace(ACTS_BUT_LINES_ALL, escape) : text
    : ACTS.test(text)
    ? text.replace(ACTS_ALL, escape)
    : text
