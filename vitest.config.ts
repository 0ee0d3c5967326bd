import { availableParallelism } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const root = path.dirname(fileURLToPath(import.meta.url))

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@rein\/(core|batch|providers|cli|ledger|postgres)$/, replacement: `${root}/packages/$1/src/index.ts` },
      {
        find: /^@rein\/(core|batch|providers|cli|ledger|postgres)\/(.*)$/,
        replacement: `${root}/packages/$1/src/$2.ts`
      }
    ]
  },
  test: {
    include: ["packages/*/test/**/*.test.ts", "test/**/*.test.ts"],
    // Names the run (REIN_TEST_RUN) for what the suites share within one run: the binary's build and PostgreSQL's
    // data directory (test/support/run.ts).
    globalSetup: ["test/support/run.ts"],
    // Two test files at a time on any machine (vitest's default is one less than the cores: one on CI's two),
    // as much of a file's time is spent waiting on processes it started (PostgreSQL, the binary, loopback peers).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    minWorkers: 1,
    pool: "forks",
    testTimeout: 30_000,
    sequence: { concurrent: false }
  }
})
