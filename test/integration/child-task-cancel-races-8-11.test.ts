/**
 * Cancel, pause, resume and BMC results in any order, the cancel landing at steps 8-11 of the
 * task: the property and its harness are in test/integration/child-task-cancel-races.ts (each
 * slice of steps is a file of its own, so that the slices run at once).
 */
import { CANCEL_SLICES, describeCancelRaces } from "./child-task-cancel-races.js";

describeCancelRaces(CANCEL_SLICES[2]!);
