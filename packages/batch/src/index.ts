export * as ArtifactStore from "./ArtifactStore.js"
