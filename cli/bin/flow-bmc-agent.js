#!/usr/bin/env node
// The `flow-bmc-agent` command (package.json "bin"): the BMC agent, a deployable of its own
// (src/service/bmc-agent/main.ts), run through tsx's loader API in this process so signals and
// exit codes behave as if it were plain JavaScript. `npx flow-bmc-agent --config FILE`.
//
// Node's compile cache and tsx registered for the whole process, as in flowctl.js (which says why,
// and docs/cli.md "Start-up" where the cache lives).
import module from "node:module";

module.enableCompileCache?.();
const { register } = await import("tsx/esm/api");
register();
await import("../../src/service/bmc-agent/main.ts");
