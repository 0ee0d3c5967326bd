/**
 * The child process of benchmark 4: one untimed run of a row, then one timed run of it; prints the timed
 * run's lateness samples (ms) as one JSON line. Every sample of the section is taken this way, so none
 * depends on what ran before it in the same process (V8's heap limits, the JIT's state).
 *
 *   node --expose-gc bench/dist/deadline-child.js <row index>
 */
import { allRows } from "./deadline.js"

const rows = await allRows()
const row = rows[Number(process.argv[2])]
if (row === undefined) throw new Error(`deadline-child: no row ${process.argv[2]} (of ${rows.length})`)
await row.measure()
await row.settle?.()
const samples = await row.measure()
process.stdout.write(`${JSON.stringify(samples)}\n`)
process.exit(0)
