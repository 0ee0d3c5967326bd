#!/usr/bin/env node
// The `rein` command. This file is committed (the build writes dist/), so that `pnpm install` on a fresh
// clone can link the bin of the workspace package before anything is built.
import "../dist/bin.js"
