/**
 * The service's advance messages in flowctl's phase numbering.
 *
 * flowctl names phases counted from 1 ("phase 2/3", `--expect 2`), and so does every message the
 * service writes for people ("phase 2 opened: 5 targets"), with four exceptions: the advance
 * messages of the published reference behaviour, which name phases by their zero-based index and
 * which the service therefore keeps word for word on the wire:
 *
 *   run status message   advanced to phase 1                      (now in the second phase)
 *   advance refused      phase 0 is not complete / phase 1 is the final phase /
 *                        expected phase 2, next phase is 1        (`--expect 3` sent as index 2)
 *
 * Printed as they come they would contradict the line beside them ("phase 2/3 — advanced to phase
 * 1"), so the tables, the watch and error output show them counted from 1 ("advanced to phase 2",
 * "expected phase 3, next phase is 2"). Only these exact texts are rewritten (a cancel reason that
 * merely contains one is left alone); JSON and YAML output carry the service's text unchanged.
 */

/** The prefix of every refused control (FAILED_PRECONDITION), as the service words it. */
const REFUSED = "operation run is not in a valid state for the requested operation: ";

const next = (index: string): string => String(Number(index) + 1);

/** A run's status message as flowctl prints it in tables and the watch. */
export function statusMessageForPeople(message: string): string {
  const advanced = /^advanced to phase (\d+)$/.exec(message);
  return advanced === null ? message : `advanced to phase ${next(advanced[1] as string)}`;
}

/** A service error's details as flowctl prints them. */
export function errorDetailsForPeople(details: string): string {
  if (!details.startsWith(REFUSED)) return details;
  const reason = details.slice(REFUSED.length);
  const phase = /^phase (\d+) (is not complete|is the final phase)$/.exec(reason);
  if (phase !== null) return `${REFUSED}phase ${next(phase[1] as string)} ${phase[2]}`;
  const expected = /^expected phase (\d+), next phase is (\d+)$/.exec(reason);
  if (expected !== null) {
    return `${REFUSED}expected phase ${next(expected[1] as string)}, next phase is ${next(expected[2] as string)}`;
  }
  return details;
}
