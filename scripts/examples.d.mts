/** One ```ts block under an `@example` tag: the source line of its first code line, and its code lines. */
export interface Example {
  readonly line: number
  readonly code: ReadonlyArray<string>
}

/** The ```ts blocks under `@example` tags of one source file's doc comments. */
export declare const extract: (text: string) => ReadonlyArray<Example>

/** An example that does not type-check: its source file, its line there, and each diagnostic at its line. */
export interface Failure {
  readonly source: string
  readonly line: number
  readonly messages: ReadonlyArray<string>
}

/** Every example of every package under `root`, type-checked against the sources of the published entry points. */
export declare const checkExamples: (root: string) => {
  readonly examples: number
  readonly failures: ReadonlyArray<Failure>
}
