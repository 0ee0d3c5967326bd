// StrykerJS for the decision core (issue #23). Run through `pnpm mutation [module]`, which sets
// REIN_MUTATE to one module's files; see mutation/modules.mjs and MUTATION.md.
const mutate = (process.env.REIN_MUTATE ?? "").split(",").filter((file) => file.length > 0)

/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  packageManager: "pnpm",
  testRunner: "vitest",
  vitest: { configFile: "mutation/vitest.config.ts", related: false },
  plugins: ["@stryker-mutator/vitest-runner"],
  mutate,
  coverageAnalysis: "perTest",
  ignoreStatic: process.env.REIN_IGNORE_STATIC !== "false",
  concurrency: 2,
  timeoutMS: 15_000,
  timeoutFactor: 2,
  reporters: ["json", "clear-text", "progress-append-only"],
  // Per module (set by scripts/mutation.mjs), so that two modules can run side by side.
  jsonReporter: { fileName: process.env.REIN_MUTATION_REPORT ?? ".tmp/mutation/mutation.json" },
  tempDirName: process.env.REIN_MUTATION_TMP ?? ".stryker-tmp",
  cleanTempDir: true,
  ignorePatterns: ["/.tmp", "/.stryker-tmp*", "/bench/dist", "/packages/*/dist", "/reports"]
}
