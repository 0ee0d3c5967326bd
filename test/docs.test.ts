import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as ts from "typescript"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

const sourcesUnder = (dir: string): ReadonlyArray<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name)
    return e.isDirectory() ? sourcesUnder(p) : e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [p] : []
  })

/** `packages/*\/src/*.ts` (but `bin.ts`) and `packages/*\/src/testing/**\/*.ts`: never `internal/`. */
const publicSources = (): ReadonlyArray<string> =>
  fs.readdirSync(path.join(root, "packages")).flatMap((pkg) => {
    const src = path.join(root, "packages", pkg, "src")
    if (!fs.existsSync(src)) return []
    const top = fs.readdirSync(src, { withFileTypes: true })
      .filter((e) => e.isFile() && e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") && e.name !== "bin.ts")
      .map((e) => path.join(src, e.name))
    const testing = path.join(src, "testing")
    return [...top, ...(fs.existsSync(testing) ? sourcesUnder(testing) : [])]
  })

const isExported = (node: ts.Statement): boolean =>
  ts.canHaveModifiers(node) &&
  (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword)

const isDeclaration = (node: ts.Statement): boolean =>
  ts.isVariableStatement(node) || ts.isClassDeclaration(node) || ts.isInterfaceDeclaration(node) ||
  ts.isTypeAliasDeclaration(node) || ts.isFunctionDeclaration(node) || ts.isModuleDeclaration(node) ||
  ts.isEnumDeclaration(node)

/** The name a declaration statement introduces, to recognise a function's later overload signatures. */
const nameOf = (node: ts.Statement): string | undefined =>
  ts.isFunctionDeclaration(node) && node.name !== undefined ? node.name.text : undefined

/** The doc comment (`/** ... *\/`) that immediately precedes a statement, if any. */
const docOf = (text: string, node: ts.Statement): string | undefined => {
  const last = (ts.getLeadingCommentRanges(text, node.pos) ?? []).at(-1)
  if (last === undefined || last.kind !== ts.SyntaxKind.MultiLineCommentTrivia) return undefined
  const comment = text.slice(last.pos, last.end)
  return comment.startsWith("/**") ? comment : undefined
}

/**
 * `file:line (missing tags)` for each top-level exported declaration of a source whose doc comment lacks
 * `@since` or `@category` (no doc comment lacks both). A doc comment marked `@internal` is exempt; the later
 * overload signatures of a function share its first signature's doc comment.
 */
export const undocumented = (file: string, text: string): ReadonlyArray<string> => {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const missing: Array<string> = []
  let previous: string | undefined
  for (const node of source.statements) {
    const name = nameOf(node)
    const overload = name !== undefined && name === previous
    previous = name
    if (!isExported(node) || !isDeclaration(node) || overload) continue
    const doc = docOf(text, node) ?? ""
    if (/@internal\b/.test(doc)) continue
    const lacks = ["@since", "@category"].filter((tag) => !new RegExp(`${tag}\\b`).test(doc))
    if (lacks.length === 0) continue
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1
    missing.push(`${path.relative(root, file)}:${line} (${lacks.join(", ")})`)
  }
  return missing
}

describe("doc comments of the public exports", () => {
  it("lists an export without @since or @category, skips @internal and overloads, sees every kind", () => {
    const text = [
      "/**",
      " * Documented.",
      " *",
      " * @since 0.1.0",
      " * @category models",
      " */",
      "export interface A {}",
      "/** @since 0.1.0 */",
      "export const b = 1",
      "export type C = string",
      "/** @internal */",
      "export const d = 2",
      "/**",
      " * @since 0.1.0",
      " * @category constructors",
      " */",
      "export function e(a: string): string",
      "export function e(a: number): number",
      "export function e(a: unknown): unknown { return a }",
      "// a line comment is no doc comment",
      "export class F {}",
      "const g = 3",
      "export { g }",
      "export declare const h: number"
    ].join("\n")
    expect(undocumented(path.join(root, "x.ts"), text)).toEqual([
      "x.ts:9 (@category)",
      "x.ts:10 (@since, @category)",
      "x.ts:21 (@since, @category)",
      "x.ts:24 (@since, @category)"
    ])
  })

  it("every top-level export of every package's public modules has @since and @category", () => {
    const files = publicSources()
    expect(files.length).toBeGreaterThan(50)
    const missing = files.flatMap((file) => undocumented(file, fs.readFileSync(file, "utf8")))
    expect(missing).toEqual([])
  })
})
