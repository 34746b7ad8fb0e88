#!/usr/bin/env node
// The `flowctl` command (package.json "bin"): runs the TypeScript CLI through tsx's loader API, in
// this process, so signals, exit codes and the terminal behave as if it were plain JavaScript.
// Works as `npx flowctl …` from the repository and as `node cli/bin/flowctl.js …`.
//
// Node's compile cache (Node 22.1+; absent on older Nodes, then nothing is cached) keeps the code
// V8 compiled for each module and reuses it at the next start while the module's text is unchanged.
// No directory is given, as Node's documentation recommends: NODE_COMPILE_CACHE names one, else it
// is <os temp dir>/node-compile-cache, never the install directory; NODE_DISABLE_COMPILE_CACHE=1
// turns it off. tsx's loader is registered for the whole process rather than through tsImport: a
// tsImport namespace puts a new query on every module's URL at each start, so no start could reuse
// a cache entry and each would write a new one.
import module from "node:module";

module.enableCompileCache?.();
const { register } = await import("tsx/esm/api");
register();
await import("../main.ts");
