import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc, Schema } from "effect"
import { ItemRecord, type Position } from "../src/ArtifactStore.js"
import * as Jsonl from "../src/internal/jsonl.js"

// The artifact reader's line rules at each branch (issue #23): which error, on which line, with which words.

const manifest = {
  kind: "manifest",
  schemaVersion: 1,
  identity: { provider: "p", model: "m", promptVersion: "1", parserVersion: "1", applicationVersion: "1", extra: {} },
  identityFingerprint: "sha256:0",
  createdAt: "2026-01-01T00:00:00.000Z",
  packageVersion: "0.1.0"
}
const record = {
  kind: "item",
  itemId: "i-1",
  index: 0,
  promptFingerprint: "sha256:1",
  inputFingerprint: "sha256:2",
  identityFingerprint: "sha256:0",
  outcome: "success",
  category: "ok",
  reusable: true,
  usage: { inputTokens: 10, outputTokens: 5 },
  cost: 0.001,
  attempts: 1,
  durationMillis: 12,
  result: "an answer"
}
const encoder = new TextEncoder()
const utf8 = (text: string) => encoder.encode(text)
const M = JSON.stringify(manifest)
const R = JSON.stringify(record)

const errorOf = (bytes: Uint8Array) => {
  const parsed = Jsonl.parse(bytes)
  if (Either.isRight(parsed)) throw new Error("expected an error")
  return parsed.left
}

describe("artifact lines: what each bad line is called", () => {
  it("a record line that is not UTF-8, empty, or not JSON: a format error saying which, naming the line", () => {
    const bad = new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])
    const notUtf8 = errorOf(new Uint8Array([...utf8(`${M}\n${R}\n`), ...bad, 0x0a]))
    expect(notUtf8).toMatchObject({
      reason: "format",
      line: 3,
      message: "line 3: not valid UTF-8; nothing was truncated"
    })
    expect(errorOf(utf8(`${M}\n\n`)).message).toBe("line 2: an empty line; nothing was truncated")
    expect(errorOf(utf8(`${M}\n{"kind":\n`)).message).toBe("line 2: not valid JSON; nothing was truncated")
    expect(errorOf(utf8(`${M}\n${M}\n`)).message).toBe("line 2: a second manifest; nothing was truncated")
    expect(errorOf(utf8(`${M}\n{"kind":"item"}\n`)).message).toMatch(/^line 2: bad item record: /)
  })

  it("a record line that is JSON null, an array or a number is a bad item record, not a crash", () => {
    for (const line of ["null", "[]", "[{\"kind\":\"manifest\"}]", "7", "\"manifest\""]) {
      const error = errorOf(utf8(`${M}\n${line}\n`))
      expect(error.line).toBe(2)
      expect(error.message).toMatch(/^line 2: bad item record: /)
    }
  })

  it("a first line that is not a manifest (not UTF-8, not JSON, null, an array, another kind) is not a Rein artifact", () => {
    const notArtifact = "line 1: not a Rein artifact: the first line is not a manifest; nothing was truncated"
    for (
      const first of [
        new Uint8Array([0xff, 0xfe]),
        utf8(""),
        utf8("{"),
        utf8("null"),
        utf8("[]"),
        utf8(`[${M}]`),
        utf8(R),
        utf8(JSON.stringify({ ...manifest, kind: "Manifest" }))
      ]
    ) {
      expect(errorOf(new Uint8Array([...first, 0x0a]))).toMatchObject({
        reason: "format",
        line: 1,
        message: notArtifact
      })
    }
  })

  it("only a numeric schema version above the reader's is a version error; anything else is checked as a field", () => {
    const withVersion = (v: unknown) => utf8(`${JSON.stringify({ ...manifest, schemaVersion: v })}\n`)
    expect(errorOf(withVersion(2))).toMatchObject({
      reason: "version",
      line: 1,
      message: "line 1: artifact schema version 2 is newer than this reader's (1); nothing was truncated"
    })
    for (const v of ["2", 0, null]) {
      const error = errorOf(withVersion(v))
      expect(error.reason).toBe("format")
      expect(error.message).toMatch(/^line 1: bad manifest: /)
    }
    expect(Either.isRight(Jsonl.parse(withVersion(1)))).toBe(true)
  })

  it("a parsed artifact: its records, the bytes up to the last newline, and the torn bytes after it", () => {
    const complete = `${M}\n${R}\n${R}\n`
    const torn = "{\"kind\":\"it"
    const parsed = Either.getOrThrow(Jsonl.parse(utf8(complete + torn)))
    if (parsed._tag !== "Artifact") throw new Error("expected an artifact")
    expect(parsed.records.map((r) => r.itemId)).toEqual(["i-1", "i-1"])
    expect(parsed.manifest.identityFingerprint).toBe("sha256:0")
    expect(parsed.validLength).toBe(utf8(complete).length)
    expect(parsed.tornBytes).toBe(torn.length)
    const manifestOnly = Either.getOrThrow(Jsonl.parse(utf8(`${M}\n`)))
    expect(manifestOnly).toMatchObject({ _tag: "Artifact", records: [], tornBytes: 0 })
  })

  it("no newline at all is empty, with the unterminated bytes as its tail", () => {
    expect(Either.getOrThrow(Jsonl.parse(utf8("")))).toEqual({ _tag: "Empty", tail: utf8("") })
    expect(Either.getOrThrow(Jsonl.parse(utf8(M)))).toEqual({ _tag: "Empty", tail: utf8(M) })
  })
})

describe("artifact lines: a torn first line", () => {
  it("is a torn manifest when it is a prefix of the manifest start, or starts with it", () => {
    const prefix = Jsonl.MANIFEST_PREFIX
    expect(prefix).toBe("{\"kind\":\"manifest\"")
    for (let n = 0; n <= prefix.length; n++) expect(Jsonl.isTornManifest(utf8(prefix.slice(0, n)))).toBe(true)
    expect(Jsonl.isTornManifest(utf8(M.slice(0, 40)))).toBe(true)
    expect(Jsonl.isTornManifest(utf8("{\"kind\":\"manifest\",\"x"))).toBe(true)
    for (const other of ["{\"kind\":\"item\"", "id,answer", " {\"kind\":\"manifest\"", "{\"kind\":\"manifestX"]) {
      expect(Jsonl.isTornManifest(utf8(other)), other).toBe(false)
    }
  })
})

describe("artifact lines: an unfinished first line that cannot be a manifest", () => {
  // A file without a newline (a binary, /dev/zero, gigabytes of anything) was carried whole before it was refused.
  it("is refused at the chunk that shows it, before any more of the file is read", () => {
    const scanner = Jsonl.scanner(() => undefined)
    const refused = scanner.push(new Uint8Array(1024 * 1024))
    expect(Either.isLeft(refused) && refused.left).toMatchObject({
      reason: "format",
      line: 1,
      message: "line 1: not a Rein artifact: the first line is not a manifest; nothing was truncated"
    })
    // In pieces shorter than the manifest's start: refused once enough of it is there.
    const pieces = Jsonl.scanner(() => undefined)
    expect(Either.isRight(pieces.push(utf8("id,answ")))).toBe(true)
    expect(Either.isLeft(pieces.push(utf8("er,cost,more")))).toBe(true)
  })

  it.prop(
    "a first line is refused unfinished exactly when it is not a torn manifest",
    [fc.uint8Array({ minLength: 1, maxLength: 64 }), fc.boolean(), fc.integer({ min: 1, max: 7 })],
    ([tail, asManifest, piece]) => {
      const head = asManifest ? utf8(M.slice(0, 30)) : tail
      const bytes = Uint8Array.from([...head, ...tail].filter((b) => b !== 0x0a))
      const scanner = Jsonl.scanner(() => undefined)
      let result: Either.Either<void, unknown> = Either.void
      for (let i = 0; i < bytes.length && Either.isRight(result); i += piece) {
        result = scanner.push(bytes.subarray(i, i + piece))
      }
      const refused = Either.isLeft(result)
      expect(refused).toBe(bytes.length >= Jsonl.MANIFEST_PREFIX.length && !Jsonl.isTornManifest(bytes))
      return true
    },
    { fastCheck: { numRuns: 300, seed: 41 } }
  )
})

describe("artifact lines: writing", () => {
  it("a manifest and a record are written as one line each, read back as written", () => {
    const parsedManifest = Either.getOrThrow(Jsonl.parse(utf8(`${M}\n`)))
    if (parsedManifest._tag !== "Artifact") throw new Error("expected an artifact")
    const line = Either.getOrThrow(Jsonl.manifestLine(parsedManifest.manifest))
    expect(new TextDecoder().decode(line)).toBe(`${M}\n`)
    const parsed = Either.getOrThrow(Jsonl.parse(utf8(`${M}\n${R}\n`)))
    if (parsed._tag !== "Artifact") throw new Error("expected an artifact")
    const recordBytes = Either.getOrThrow(Jsonl.recordLine(parsed.records[0]!))
    expect(new TextDecoder().decode(recordBytes)).toBe(`${R}\n`)
  })

  it("a record that is not valid, or has no JSON form, is an encode error naming the item and no data", () => {
    const parsed = Either.getOrThrow(Jsonl.parse(utf8(`${M}\n${R}\n`)))
    if (parsed._tag !== "Artifact") throw new Error("expected an artifact")
    const valid = parsed.records[0]!
    const invalid = Jsonl.recordLine({ ...valid, attempts: -1 })
    expect(Either.isLeft(invalid) && invalid.left.reason).toBe("encode")
    expect(Either.isLeft(invalid) && invalid.left.message).toMatch(/^record of item "i-1" cannot be encoded: /)
    const noJson = Jsonl.recordLine({ ...valid, result: { n: 1n } })
    expect(Either.isLeft(noJson) && noJson.left.message).toBe("record of item \"i-1\" has no JSON form: TypeError")
    // A toJSON that throws something other than an Error: the message still names no data.
    const thrower = {
      toJSON: () => {
        throw "secret"
      }
    }
    const strange = Jsonl.recordLine({ ...valid, result: thrower })
    expect(Either.isLeft(strange) && strange.left.message).toBe("record of item \"i-1\" has no JSON form: unknown")
    const badManifest = Jsonl.manifestLine({ ...parsedManifestOf(), packageVersion: 1 as unknown as string })
    expect(Either.isLeft(badManifest) && badManifest.left.message).toMatch(/^manifest cannot be encoded: /)
  })

  it("concat joins any number of chunks in order", () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 8 }), { maxLength: 6 }), (chunks) => {
        const joined = Jsonl.concat(chunks)
        expect(Array.from(joined)).toEqual(chunks.flatMap((c) => Array.from(c)))
      }),
      { numRuns: 200, seed: 23 }
    )
  })
})

const parsedManifestOf = () => {
  const parsed = Either.getOrThrow(Jsonl.parse(utf8(`${M}\n`)))
  if (parsed._tag !== "Artifact") throw new Error("expected an artifact")
  return parsed.manifest
}

describe("record lines taken as they are", () => {
  const decodeRecord = Schema.decodeUnknownEither(ItemRecord, { errors: "all" })
  const fields = Object.keys(ItemRecord.fields) // (the schema's order)
  // A record's fields dropped, reordered, added or given any JSON value (a hostile or hand-edited line).
  const edited = fc.tuple(
    fc.oneof(fc.subarray(fields, { minLength: fields.length - 3 }), fc.shuffledSubarray(fields)),
    fc.oneof(
      fc.constant({}),
      fc.dictionary(fc.constantFrom(...fields, "extra", "__proto__", "0"), fc.jsonValue(), { maxKeys: 3 }),
      fc.dictionary(fc.constantFrom(...fields), fc.oneof(fc.integer(), fc.double(), fc.string()), { maxKeys: 2 })
    ),
    fc.boolean()
  ).map(([keys, changes, usageEdited]) => {
    const base: Record<string, unknown> = { ...record, endpoint: "e/1", error: { _tag: "E" } }
    if (usageEdited) base.usage = { outputTokens: 5, inputTokens: 10 }
    const out: Record<string, unknown> = {}
    for (const key of keys) out[key] = base[key]
    return JSON.parse(JSON.stringify({ ...out, ...changes })) as unknown
  })

  it("a line taken without the schema is what the schema decodes it to, field by field and in order", () => {
    let taken = 0
    fc.assert(
      fc.property(edited, (json) => {
        if (!Jsonl.isExactRecord(json)) return
        taken += 1
        const decoded = decodeRecord(json)
        expect(Either.isRight(decoded)).toBe(true)
        expect(JSON.stringify(Either.getOrThrow(decoded))).toBe(JSON.stringify(json))
        expect(Either.getOrThrow(decoded)).toEqual(json)
      }),
      { numRuns: 2_000, seed: 41 }
    )
    expect(taken).toBeGreaterThan(50) // (the property is not vacuous)
  })

  it("a line the store writes is taken as it is; one with an extra field or in another order is decoded", () => {
    expect(Jsonl.isExactRecord(JSON.parse(R))).toBe(true)
    const { durationMillis, result, ...head } = record
    expect(Jsonl.isExactRecord({ ...head, endpoint: "e/1", durationMillis, result, error: null })).toBe(true)
    expect(Jsonl.isExactRecord({ ...record, endpoint: "e/1" })).toBe(false) // (after `result`: out of order)
    expect(Jsonl.isExactRecord({ ...record, extra: 1 })).toBe(false)
    const { kind, ...rest } = record
    expect(Jsonl.isExactRecord({ ...rest, kind })).toBe(false) // (`kind` last)
    expect(Jsonl.isExactRecord({ ...record, usage: { outputTokens: 5, inputTokens: 10 } })).toBe(false)
    expect(Jsonl.isExactRecord({ ...record, cost: "unknown", usage: "unknown" })).toBe(true)
    expect(Jsonl.isExactRecord({ ...record, index: -1 })).toBe(false)
    expect(Jsonl.isExactRecord({ ...record, index: 1.5 })).toBe(false)
    const parsed = Either.getOrThrow(Jsonl.parse(utf8(`${M}\n${JSON.stringify({ ...record, extra: 1 })}\n`)))
    expect(parsed._tag === "Artifact" && parsed.records).toEqual([record])
  })

  it("a line's digest is worked out only while it is handed over, and is the hash of its bytes", () => {
    const positions: Array<Position> = []
    const during: Array<number | undefined> = []
    const scanner = Jsonl.scanner((_record, at) => {
      positions.push(at!)
      if (positions.length === 1) during.push(at!.digest)
    })
    Either.getOrThrow(scanner.push(utf8(`${M}\n${R}\n${R}\n`)))
    expect(during).toEqual([Jsonl.digest(utf8(R))])
    expect(positions.map((at) => [at.offset, at.length, at.digest])).toEqual([
      [M.length + 1, R.length, Jsonl.digest(utf8(R))],
      [M.length + R.length + 2, R.length, undefined]
    ])
  })
})

describe("record lines read back", () => {
  it("a line exactly as the store writes it is marked so at open, and read back as the same bytes only parsed", () => {
    const X = JSON.stringify({ ...record, extra: 1 })
    const positions: Array<Position> = []
    Either.getOrThrow(
      Jsonl.scanner((_record, at) => void positions.push({ ...at!, digest: at!.digest })).push(
        utf8(`${M}\n${R}\n${X}\n`)
      )
    )
    expect(positions.map((at) => at.exact)).toEqual([true, false])
    const [exact, extra] = positions
    // The same bytes: an exact line is taken as parsed; another is decoded again (its extra field dropped).
    expect(Jsonl.readBack(utf8(R), exact!, "sha256:0")).toEqual(Either.right(record))
    expect(Jsonl.readBack(utf8(X), extra!, "sha256:0")).toEqual(Either.right(record))
    // Marked exact without a digest, a line is checked: nothing says its bytes are the ones checked at open.
    const bad = JSON.stringify({ ...record, attempts: -1 })
    expect(Either.isLeft(Jsonl.readBack(utf8(bad), { digest: undefined, exact: true }, "sha256:0"))).toBe(true)
    // Other bytes than those read at open are never given back, exact or not.
    expect(Jsonl.readBack(utf8(bad), exact!, "sha256:0")).toEqual(Either.left("is not the line read at open"))
  })
})

describe("record lines taken as they are: raw text", () => {
  const decodeRecord = Schema.decodeUnknownEither(ItemRecord, { errors: "all" })
  const fields = Object.keys(ItemRecord.fields) // (the schema's order)
  const base: Record<string, unknown> = { ...record, endpoint: "e/1", error: { _tag: "E" }, requestId: "req-1" }
  // Raw JSON tokens a hand-edited or hostile line may hold where a value goes: ones `JSON.stringify` never
  // writes (`-0`, `1e400`, an unsafe integer, exponents) beside wrong types, nested shapes and literals.
  const token = fc.constantFrom(
    "-0",
    "0",
    "0.0",
    "1e400",
    "-1e400",
    "9007199254740993",
    "9007199254740991",
    "1e2",
    "1E-2",
    "-1",
    "1.5",
    "-0.0",
    "\"unknown\"",
    "\"item\"",
    "\"success\"",
    "\"failure\"",
    "\"Item\"",
    "true",
    "false",
    "null",
    "[]",
    "{}",
    "\"\"",
    "\"\\u0000\"",
    "\"\\ud800\"",
    "{\"inputTokens\":1,\"outputTokens\":-0}",
    "{\"inputTokens\":1e400,\"outputTokens\":0}",
    "{\"inputTokens\":1,\"outputTokens\":2,\"inputTokens\":3}",
    "{\"__proto__\":{\"inputTokens\":1},\"inputTokens\":1,\"outputTokens\":2}",
    "{\"outputTokens\":2}"
  )
  const line = fc.tuple(
    fc.array(fc.tuple(fc.nat({ max: fields.length - 1 }), token), { maxLength: 3 }),
    fc.array(fc.tuple(fc.nat({ max: fields.length }), fc.constantFrom(...fields, "__proto__", "0")), {
      maxLength: 2
    }),
    fc.subarray(fields.filter((f) => f === "endpoint" || f === "result" || f === "error" || f === "requestId"))
  ).map(([values, inserted, dropped]) => {
    const parts = fields.filter((f) => !(dropped as ReadonlyArray<string>).includes(f)).map((f) => {
      const raw = values.find(([i]) => fields[i] === f)
      return `${JSON.stringify(f)}:${raw === undefined ? JSON.stringify(base[f]) : raw[1]}`
    })
    // Duplicate or extra keys, anywhere (JSON.parse keeps a duplicate's first place and its last value).
    for (const [at, key] of inserted) parts.splice(at, 0, `${JSON.stringify(key)}:${JSON.stringify(base[key] ?? 1)}`)
    return `{${parts.join(",")}}`
  })

  it("a line is read as the schema decodes its JSON, whatever its text", () => {
    let taken = 0
    fc.assert(
      fc.property(line, (text) => {
        const read = Jsonl.parseRecord(utf8(text), 2, "sha256:0")
        const decoded = decodeRecord(JSON.parse(text))
        expect(Either.isRight(read)).toBe(Either.isRight(decoded))
        if (Either.isRight(read) && Either.isRight(decoded)) {
          if (Jsonl.isExactRecord(JSON.parse(text))) taken += 1
          expect(read.right).toEqual(decoded.right) // (`toEqual` tells -0 from 0)
          expect(Object.keys(read.right)).toEqual(Object.keys(decoded.right))
          expect(JSON.stringify(read.right)).toBe(JSON.stringify(decoded.right))
        }
      }),
      { numRuns: 5_000, seed: 43 }
    )
    expect(taken).toBeGreaterThan(100) // (lines the hand check took: the property is not vacuous)
  })
})
