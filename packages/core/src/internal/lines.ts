/**
 * Splitting a byte stream into its complete lines with a bound on each line's length, so that reading a
 * file holds at most one line (plus one read chunk), never the file: a line longer than the bound fails
 * as soon as its bytes pass the bound, without reading the rest of it. A final line without a newline (a
 * write cut short) is not a line and is never emitted.
 *
 * @internal
 */
import { Effect, Stream } from "effect"

const NEWLINE = 0x0a

/** A complete line (without its newline) and its 1-based number. @internal */
export interface Line {
  readonly text: string
  readonly number: number
}

/**
 * The complete lines of `bytes`; `tooLong(number)` is the error for line `number` once it is longer than
 * `maxBytes` (counted in bytes, without the newline). Bytes are decoded as UTF-8, invalid sequences as
 * U+FFFD (as `readFileString` did).
 *
 * @internal
 */
export const splitLines = <E, E2, R>(
  bytes: Stream.Stream<Uint8Array, E, R>,
  maxBytes: number,
  tooLong: (number: number) => E2
): Stream.Stream<Line, E | E2, R> =>
  Stream.suspend(() => {
    const decoder = new TextDecoder("utf-8")
    let pending: Array<Uint8Array> = []
    let pendingBytes = 0
    let number = 1
    const take = (last: Uint8Array): string => {
      if (pending.length === 0) return decoder.decode(last)
      const all = new Uint8Array(pendingBytes + last.length)
      let at = 0
      for (const part of pending) {
        all.set(part, at)
        at += part.length
      }
      all.set(last, at)
      pending = []
      pendingBytes = 0
      return decoder.decode(all)
    }
    return bytes.pipe(
      Stream.mapEffect((chunk) => {
        const lines: Array<Line> = []
        let start = 0
        for (let nl = chunk.indexOf(NEWLINE); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
          if (pendingBytes + nl - start > maxBytes) return Effect.fail(tooLong(number))
          lines.push({ text: take(chunk.subarray(start, nl)), number })
          number += 1
          start = nl + 1
        }
        if (start < chunk.length) {
          pendingBytes += chunk.length - start
          if (pendingBytes > maxBytes) return Effect.fail(tooLong(number))
          // A copy: the reader may reuse the chunk's buffer.
          pending.push(chunk.slice(start))
        }
        return Effect.succeed(lines)
      }),
      Stream.flattenIterables
    )
  })
