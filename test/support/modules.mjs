// Preloaded into a child process (`node --import <this file> …`) by tests about start-up: appends the URL of
// every ES module the process loads, one a line, to the file named by REIN_MODULES_OUT. Written from the
// loader hook's thread before the module is evaluated, so the list is whole when the process exits.
import { register } from "node:module"

register(
  "data:text/javascript," + encodeURIComponent(`
import { appendFileSync } from "node:fs"
let out
export const initialize = (data) => { out = data.out }
export const load = (url, context, next) => { appendFileSync(out, url + "\\n"); return next(url, context) }
`),
  { parentURL: import.meta.url, data: { out: process.env.REIN_MODULES_OUT } }
)
