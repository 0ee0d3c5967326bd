// Preloaded into a child process (`node --import <this file> …`) by tests of the binary's code cache: records
// every script compiled with `vm.Script` (its file, whether it was given a code cache and whether V8 rejected
// it) and every module loaded through `require` (the bundle's own `require`: Node's built-ins), and writes
// them as JSON to the file named by REIN_CODECACHE_OUT when the process exits.
import { writeFileSync } from "node:fs"
import Module, { syncBuiltinESMExports } from "node:module"
import vm from "node:vm"

const scripts = []
const required = new Set()
const Script = vm.Script
vm.Script = class extends Script {
  constructor(source, options) {
    super(source, options)
    scripts.push({ filename: options?.filename, cached: options?.cachedData !== undefined, rejected: this.cachedDataRejected })
  }
}
syncBuiltinESMExports()
const load = Module._load
Module._load = function(request, ...rest) {
  required.add(request.replace(/^node:/, ""))
  return load.call(this, request, ...rest)
}
process.on("exit", () => {
  writeFileSync(process.env.REIN_CODECACHE_OUT, JSON.stringify({ scripts, required: [...required].sort() }))
})
