import { SystemError } from "@effect/platform/Error"
import { describe, expect, it } from "@effect/vitest"
import { ArtifactStore } from "@rein/batch"
import { artifactMessage } from "../src/internal/drift.js"
import { plainSystemError } from "../src/internal/files.js"

// The platform's own error, as the batch artifact store embeds it (`${what} ${file}: ${e.message}`).
const platform = (method: string, description: string) =>
  new SystemError({ reason: "Unknown", module: "FileSystem", method, pathOrDescriptor: 18, description }).message

describe("a platform error inside an artifact error is said in plain words", () => {
  it("rein batch --out /dev/full --overwrite: EINVAL from ftruncate is 'not a regular file', once named", () => {
    const e = new ArtifactStore.ArtifactError({
      reason: "io",
      message: `cannot truncate /dev/full: ${platform("truncate", "EINVAL: invalid argument, ftruncate")}`
    })
    expect(artifactMessage("/dev/full", e)).toBe(
      "/dev/full: cannot truncate /dev/full: not a regular file (the operation is invalid on it)"
    )
  })

  it("the errnos files.ts knows (ENOSPC, EROFS, …) read the same; an unknown errno keeps the platform's text", () => {
    expect(plainSystemError(`cannot write run.jsonl: ${platform("write", "ENOSPC: no space left on device, write")}`))
      .toBe("cannot write run.jsonl: no space left on the device")
    expect(plainSystemError(`cannot sync run.jsonl: ${platform("sync", "EROFS: read-only file system, fsync")}`))
      .toBe("cannot sync run.jsonl: a read-only file system")
    const odd = `cannot write run.jsonl: ${platform("write", "EFBIG: file too large, write")}`
    expect(plainSystemError(odd)).toBe(odd)
    expect(plainSystemError("run.jsonl: no manifest line")).toBe("run.jsonl: no manifest line")
  })
})
