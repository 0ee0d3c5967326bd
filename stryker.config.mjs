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
  jsonReporter: { fileName: ".tmp/mutation/mutation.json" },
  tempDirName: ".stryker-tmp",
  cleanTempDir: true,
  ignorePatterns: ["/.tmp", "/bench/dist", "/packages/*/dist", "/reports"]
}
