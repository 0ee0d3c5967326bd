// `pnpm examples`: type-checks every ```ts block under an `@example` tag in the doc comments of
// packages/*/src/**/*.ts. Each block becomes a module of its own (in memory, beside its package, so it resolves
// the package's dependencies), `@rein/*` imports resolve to the sources of the entry points each package's
// `exports` publishes (an example that imports an unpublished module fails), and only the examples'
// diagnostics are reported, at the line of the source file they came from. Exits 1 if any example fails.
import fs from "node:fs"
import path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import ts from "typescript"

const sourcesOf = (dir) =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name)
    return e.isDirectory() ? sourcesOf(p) : /\.ts$/.test(e.name) && !/\.d\.ts$/.test(e.name) ? [p] : []
  })

/**
 * The ```ts blocks under `@example` tags of one source file, each with the source line of its first code
 * line. A doc comment's lines lose their leading ` * `.
 */
export const extract = (text) => {
  const examples = []
  const lines = text.split("\n")
  let inExample = false
  let block
  for (let i = 0; i < lines.length; i++) {
    const m = /^\s*\/?\*+\s?(.*)$/.exec(lines[i])
    const line = m === null ? undefined : m[1]
    if (line === undefined || /\*\/\s*$/.test(lines[i]) && block === undefined) {
      inExample = false
      if (line === undefined) continue
    }
    if (block !== undefined) {
      if (/^```\s*$/.test(line.trimEnd())) {
        examples.push(block)
        block = undefined
      } else {
        block.code.push(line)
      }
      continue
    }
    if (/^@example\b/.test(line)) inExample = true
    else if (/^@\w/.test(line)) inExample = false
    else if (inExample && /^```(ts|typescript)\s*$/.test(line.trim())) block = { line: i + 2, code: [] }
  }
  return examples
}

/** `paths` that resolve each published entry point of each package (its `exports`) to its source file. */
const publishedPaths = (root) => {
  const paths = {}
  for (const pkg of fs.readdirSync(path.join(root, "packages"))) {
    const manifest = path.join(root, "packages", pkg, "package.json")
    if (!fs.existsSync(manifest)) continue
    const { name, exports } = JSON.parse(fs.readFileSync(manifest, "utf8"))
    for (const [key, target] of Object.entries(exports ?? {})) {
      const types = typeof target === "string" ? target : target.types
      const source = types.replace(/^\.\/dist\//, "./src/").replace(/\.d\.ts$/, ".ts")
      paths[path.posix.join(name, key)] = [path.join(root, "packages", pkg, source)]
    }
  }
  return paths
}

/** Every example of every package, type-checked; returns one entry per failing example. */
export const checkExamples = (root) => {
  const virtual = new Map()
  for (const pkg of fs.readdirSync(path.join(root, "packages"))) {
    const src = path.join(root, "packages", pkg, "src")
    if (!fs.existsSync(src)) continue
    for (const file of sourcesOf(src)) {
      extract(fs.readFileSync(file, "utf8")).forEach((example, n) => {
        const relative = path.relative(root, file)
        const name = path.join(root, "packages", pkg, "__examples__", `${relative.replace(/[/\\.]/g, "_")}_${n + 1}.ts`)
        // `export {}` makes a block without imports a module, so examples never share a scope.
        virtual.set(name, { source: relative, line: example.line, text: `${example.code.join("\n")}\nexport {}\n` })
      })
    }
  }
  const base = ts.getParsedCommandLineOfConfigFile(path.join(root, "tsconfig.base.json"), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: () => undefined
  })
  const options = {
    ...base.options,
    noEmit: true,
    composite: false,
    incremental: false,
    declaration: false,
    declarationMap: false,
    sourceMap: false,
    // An example shows a call; the value it names need not be used again.
    noUnusedLocals: false,
    noUnusedParameters: false,
    paths: publishedPaths(root)
  }
  const host = ts.createCompilerHost(options)
  const { fileExists, readFile, getSourceFile } = host
  host.fileExists = (f) => virtual.has(f) || fileExists.call(host, f)
  host.readFile = (f) => virtual.get(f)?.text ?? readFile.call(host, f)
  host.getSourceFile = (f, language, ...rest) =>
    virtual.has(f)
      ? ts.createSourceFile(f, virtual.get(f).text, language)
      : getSourceFile.call(host, f, language, ...rest)
  const program = ts.createProgram({ rootNames: [...virtual.keys()], options, host })
  const failures = []
  for (const [name, example] of virtual) {
    const file = program.getSourceFile(name)
    const diagnostics = [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)]
    if (diagnostics.length === 0) continue
    failures.push({
      source: example.source,
      line: example.line,
      messages: diagnostics.map((d) => {
        const at = d.start === undefined ? 0 : file.getLineAndCharacterOfPosition(d.start).line
        return `${example.source}:${example.line + at}: ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`
      })
    })
  }
  return { examples: virtual.size, failures }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
  const { examples, failures } = checkExamples(root)
  for (const f of failures) for (const m of f.messages) console.log(m)
  console.log(`${failures.length} of ${examples} examples fail to type-check`)
  process.exit(failures.length > 0 ? 1 : 0)
}
