/**
 * A 10-rack run on a local stack with a data directory, the stack killed by SIGKILL at every point
 * (right after the create was answered, a claim, a submission, mid-flash, a flash not yet stored,
 * an outcome) and started again each time: it completes, every component flashed once. The lives
 * and kill points: test/support/restart-lives.ts (the SIGTERM half is in restart-sigterm.test.ts,
 * a file of its own so that the two run at once).
 */
import { describeKilledAtEveryPoint } from "../support/restart-lives.js";

describeKilledAtEveryPoint("SIGKILL");
