#!/usr/bin/env node
// The `flow-bmc-agent` command (package.json "bin"): the BMC agent, a deployable of its own
// (src/service/bmc-agent/main.ts), run through tsx's loader API in this process so signals and
// exit codes behave as if it were plain JavaScript. `npx flow-bmc-agent --config FILE`.
import { tsImport } from "tsx/esm/api";

await tsImport("../../src/service/bmc-agent/main.ts", import.meta.url);
