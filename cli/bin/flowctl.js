#!/usr/bin/env node
// The `flowctl` command (package.json "bin"): runs the TypeScript CLI through tsx's loader API, in
// this process, so signals, exit codes and the terminal behave as if it were plain JavaScript.
// Works as `npx flowctl …` from the repository and as `node cli/bin/flowctl.js …`.
import { tsImport } from "tsx/esm/api";

await tsImport("../main.ts", import.meta.url);
