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
    pool: "forks",
    testTimeout: 30_000,
    sequence: { concurrent: false }
  }
})
