/**
 * Admission control of the gRPC front: overload is shed, not absorbed. Two counters bound the
 * work in progress: every call, and the calls that plan runs against the inventory (CreateOperationRun,
 * PlanOperationRun, UpgradeFirmware: the expensive ones, a few DynamoDB reads and up to two
 * 100-item transactions each). A call that finds its limit reached is answered RESOURCE_EXHAUSTED
 * at once, before it is decoded, and the message says what is full and that it was not started,
 * so a client may retry it (with backoff; flowctl does).
 *
 * Why refuse instead of queue: a queued call waits for work that may outlast its deadline, and
 * everything behind it waits longer; the trial had 200 creates queued behind each other
 * and the DynamoDB client's 50 sockets, every one of them ending DEADLINE_EXCEEDED after doing
 * its writes anyway, and reads timing out for minutes. With the limits, admitted calls finish at
 * the speed of the store, and the rest hear "busy" in microseconds.
 *
 * A slot is held until the handler's work settles, not until the answer is sent: a call whose
 * client went away still occupies the store until its work ends.
 *
 * Shedding is logged once when it starts and once when it ends (a call admitted with the counters
 * back under half their limits), with the number of calls refused meanwhile, not once per call.
 */
import type { Logger } from "../../app/observability.js";
import { OverloadedError } from "../../domain/errors.js";

export interface AdmissionLimits {
  /** Calls in progress at once, every method counted. */
  maxInFlightCalls: number;
  /** Calls that plan runs (create, plan, UpgradeFirmware) in progress at once; at most maxInFlightCalls. */
  maxConcurrentCreates: number;
}

/**
 * For one front task (0.5 vCPU on Fargate, one Node event loop) on DynamoDB: a create takes a few
 * tens of milliseconds of store time, so 8 at once is ~100 creates a second, more than operators
 * start; 64 calls in flight keeps a read's wait for the event loop and the socket pool short.
 */
export const DEFAULT_ADMISSION_LIMITS: Readonly<AdmissionLimits> = {
  maxInFlightCalls: 64,
  maxConcurrentCreates: 8,
};

export type Admitted =
  | { admitted: true; release: () => void }
  | { admitted: false; refusal: OverloadedError };

export interface Admission {
  /** A slot for one call of `method` (its full path), or the refusal to answer with. */
  admit(method: string, plansRuns: boolean): Admitted;
  /** Calls in progress now (for tests and the load benchmark's report). */
  inProgress(): { calls: number; creates: number };
}

export function createAdmission(limits: AdmissionLimits, logger: Pick<Logger, "info" | "warn">): Admission {
  let calls = 0;
  let creates = 0;
  let shedding = false;
  let refused = 0;

  const refuse = (what: string, method: string): Admitted => {
    refused++;
    if (!shedding) {
      shedding = true;
      logger.warn("gRPC admission: busy, refusing calls until load drops", {
        method,
        calls,
        creates,
        ...limits,
      });
    }
    return {
      admitted: false,
      refusal: new OverloadedError(
        `server busy: ${what} in progress, the most it admits at once; the call was not started and may be retried with backoff`,
      ),
    };
  };

  return {
    admit(method, plansRuns) {
      if (calls >= limits.maxInFlightCalls) return refuse(`${limits.maxInFlightCalls} calls`, method);
      if (plansRuns && creates >= limits.maxConcurrentCreates) {
        return refuse(`${limits.maxConcurrentCreates} calls that create or plan runs`, method);
      }
      if (shedding && calls < limits.maxInFlightCalls / 2 && creates < limits.maxConcurrentCreates / 2) {
        shedding = false;
        logger.info("gRPC admission: admitting again", { refused });
        refused = 0;
      }
      calls++;
      if (plansRuns) creates++;
      let released = false;
      return {
        admitted: true,
        release: () => {
          if (released) return;
          released = true;
          calls--;
          if (plansRuns) creates--;
        },
      };
    },
    inProgress: () => ({ calls, creates }),
  };
}
