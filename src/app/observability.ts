/**
 * Logging and metrics as every service of the product sees them: a small Logger (Powertools JSON
 * lines on AWS, src/adapters/observability/; a line sink locally; silence in tests) and a Metrics
 * sink under the names, namespace and dimension the dashboard reads. src/app depends on these
 * interfaces only; the composition roots (src/service/) build one implementation per deployable.
 */

/**
 * `fields` are the entry's own keys beside its level, message and time; name them after what they
 * hold (`statusMessage`, `taskMessage`), never `level`, `message`, `service` or `timestamp`, which
 * the line already has.
 */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

/**
 * A Logger over a line sink (the local stack's `log(line)`): `warn dispatch pass failed runId=… error=…`.
 */
export function lineLogger(log: (line: string) => void): Logger {
  const line = (level: string, message: string, fields?: Record<string, unknown>) => {
    const rest = Object.entries(fields ?? {})
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
      .join(" ");
    log(`${level} ${message}${rest === "" ? "" : ` ${rest}`}`);
  };
  return {
    info: (message, fields) => line("info", message, fields),
    warn: (message, fields) => line("warn", message, fields),
    error: (message, fields) => line("error", message, fields),
  };
}

/** `logger` wins, then a line sink, else silence. */
export function pickLogger(options: {
  logger?: Logger | undefined;
  log?: ((line: string) => void) | undefined;
}): Logger {
  if (options.logger !== undefined) return options.logger;
  return options.log === undefined ? silentLogger : lineLogger(options.log);
}

/**
 * The keys that tie a log line (and, on AWS, an X-Ray trace) to what an operator asks about: the
 * run and the task. A Lambda invocation appends the ones its event names to every line it writes
 * (src/adapters/observability/lambda.ts); lines about one task carry them as fields (`taskKeys`).
 */
export interface CorrelationKeys {
  runId?: string;
  taskId?: string;
}

/** `{ taskId, runId }` of a task (no runId for a plain UpgradeFirmware task). */
export function taskKeys(task: { id: string; runId?: string | undefined }): CorrelationKeys {
  return task.runId === undefined ? { taskId: task.id } : { taskId: task.id, runId: task.runId };
}

/**
 * A warning that can repeat many times in a row (a tick skipped while a slow pass runs, a poll
 * that keeps failing) as one line per streak: the first occurrence is logged at once, the repeats
 * only counted, and when the condition clears one line says how often it repeated and for how
 * long. A streak of one logs its one line only.
 *
 *   const skipped = foldRepeats(log, Date.now);
 *   skipped.occurred("ticker: previous pass still running after 1200 ms; tick skipped");  // logged
 *   skipped.occurred("…");  skipped.occurred("…");                                     // counted
 *   skipped.cleared();  // "ticker: previous pass still running …: repeated 2 more times over 400 ms"
 */
export interface RepeatFold {
  /** One more occurrence; `line` is logged only when it starts a streak. */
  occurred(line: string): void;
  /** The condition is over: closes the streak (one summary line if it repeated), a no-op otherwise. */
  cleared(): void;
}

export function foldRepeats(log: (line: string) => void, now: () => number): RepeatFold {
  let streak: { first: string; startedAt: number; repeats: number } | undefined;
  return {
    occurred(line) {
      if (streak === undefined) {
        streak = { first: line, startedAt: now(), repeats: 0 };
        log(line);
      } else {
        streak.repeats += 1;
      }
    },
    cleared() {
      if (streak === undefined) return;
      const { first, startedAt, repeats } = streak;
      streak = undefined;
      if (repeats > 0) {
        log(
          `${first}: repeated ${repeats} more time${repeats === 1 ? "" : "s"} over ${now() - startedAt} ms`,
        );
      }
    },
  };
}

/** The CloudWatch namespace of every product metric (infra/constructs/observability.ts reads it). */
export const FLOW_METRIC_NAMESPACE = "Flow";

/**
 * The product's metric names (namespace `Flow`, one dimension `Service`): exactly the names the
 * dashboard and alarms read (infra/constructs/observability.ts FLOW_METRICS; a test keeps the two
 * equal), each with an emitter: the dispatcher (TargetsDispatched, RackConflicts, GateTrips,
 * DispatchLatencyMs, TickOverrunMs), the task outcome recorder in src/app/child-task/outcome.ts
 * (Targets…, BmcFailures), and the gRPC front's access control (AccessDenied per refused call,
 * AccessPolicyRejected per policy reload refused, AccessPolicyUnreadable per failed read of the
 * policy's SSM parameter; src/adapters/grpc/authorize.ts, src/adapters/ssm/access-policy-parameter.ts).
 */
export const FLOW_METRIC_NAMES = [
  "TargetsDispatched",
  "RackConflicts",
  "GateTrips",
  "DispatchLatencyMs",
  "TickOverrunMs",
  "TargetsCompleted",
  "TargetsFailed",
  "TargetsTerminated",
  "BmcFailures",
  "AccessDenied",
  "AccessPolicyRejected",
  "AccessPolicyUnreadable",
] as const;

export type DispatchMetricName = (typeof FLOW_METRIC_NAMES)[number];

/** The unit each metric is emitted with: the `…Ms` ones are durations, the rest counts. */
export function metricUnit(name: DispatchMetricName): "Milliseconds" | "Count" {
  return name.endsWith("Ms") ? "Milliseconds" : "Count";
}

export interface Metrics {
  add(name: DispatchMetricName, value: number): void;
  /** Writes what was added since the last flush (EMF: one log line); a no-op when nothing was. */
  flush(): void;
}

export const noopMetrics: Metrics = { add() {}, flush() {} };

export function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
