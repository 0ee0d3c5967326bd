// A/B helper (not part of the bench): preloaded with `node --import ./bench/ab/count-modules.mjs …`, counts
// the modules the process loads (ES modules through a loader hook, CommonJS through Module._load's cache) and
// prints them on exit: `rein-modules <total> esm=<n> cjs=<n> fast-check=<n> pg=<n> postgres=<n>`; set
// REIN_MODULES_LIST=1 to print every URL.
import { register } from "node:module"
import Module from "node:module"
import { MessageChannel } from "node:worker_threads"

const esm = new Set()
const { port1, port2 } = new MessageChannel()
port1.on("message", (url) => esm.add(url))
port1.unref()
register(
  "data:text/javascript," + encodeURIComponent(`
let port
export const initialize = (data) => { port = data.port }
export const load = async (url, context, next) => { port.postMessage(url); return next(url, context) }
`),
  { parentURL: import.meta.url, data: { port: port2 }, transferList: [port2] }
)
const cjsBefore = new Set(Object.keys(Module._cache))
process.on("exit", () => {
  const cjs = Object.keys(Module._cache).filter((k) => !cjsBefore.has(k))
  const all = [...esm, ...cjs]
  const count = (re) => all.filter((u) => re.test(u)).length
  if (process.env.REIN_MODULES_LIST === "1") for (const u of all) process.stderr.write(`${u}\n`)
  process.stderr.write(
    `\nrein-modules ${all.length} esm=${esm.size} cjs=${cjs.length} fast-check=${count(/fast-check/)} pg=${
      count(/node_modules\/(\.pnpm\/)?pg[@/-]/)} postgres=${count(/packages\/postgres\//)}\n`
  )
})
