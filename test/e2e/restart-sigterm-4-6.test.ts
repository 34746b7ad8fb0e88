/**
 * A 10-rack run on a local stack with a data directory, the stack killed by SIGTERM mid-flash,
 * after a BMC finished flashing but before the stack stored it, and right after an outcome (kill
 * points 4-6), started again each time: it completes, every component flashed once. The lives and
 * kill points: test/support/restart-lives.ts (kill points 1-3 are in restart-sigterm-1-3.test.ts,
 * the other signal in restart-sigkill-*.test.ts).
 */
import { describeKilledAt } from "../support/restart-lives.js";

describeKilledAt("SIGTERM", "4-6");
