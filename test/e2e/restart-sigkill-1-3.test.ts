/**
 * A 10-rack run on a local stack with a data directory, the stack killed by SIGKILL right after
 * the create was answered, a claim and a submission (kill points 1-3), started again each time: it
 * completes, every component flashed once. The lives and kill points: test/support/restart-
 * lives.ts (kill points 4-6 are in restart-sigkill-4-6.test.ts, the other signal in restart-
 * sigterm-*.test.ts).
 */
import { describeKilledAt } from "../support/restart-lives.js";

describeKilledAt("SIGKILL", "1-3");
