/**
 * Preloaded into a child process (`node --import <this file> …`) to report the CPU time the whole process
 * used (start-up and module loading included) when it exits: one line on stderr,
 * `rein-bench-cpu <microseconds>`. Bench code, not library code.
 */
process.on("exit", () => {
  const usage = process.cpuUsage()
  process.stderr.write(`\nrein-bench-cpu ${usage.user + usage.system}\n`)
})
