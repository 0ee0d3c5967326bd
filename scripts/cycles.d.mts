/** Every import cycle among `root`'s `packages/*\/src` TypeScript sources, each as `a.ts -> b.ts -> a.ts`, sorted. */
export declare const importCycles: (root: string) => ReadonlyArray<string>
